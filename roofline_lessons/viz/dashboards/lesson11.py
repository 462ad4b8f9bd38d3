"""Lesson 11 dashboard: model, part, strategy, chips, batch, phase and overlap -> where one chip's share
of the step sits under three roofs (compute, HBM, the link between chips) and how its time splits
between compute, memory and communication.

Every figure with more than one chip is PER CHIP (the busiest pipeline stage), by the rules of
:mod:`roofline_lessons.core.parallel`. Two figures per step: the **estimate** (``time_estimate_s``:
operators unfused, collectives by the ring with the catalog's assumed latency per call, not
overlapped with compute unless the overlap box is ticked, its best case; pipeline stages one after
another) — what the chart and the bar show — and the **lower bound** (``time_lower_bound_s``: the
least bytes, overlapped, no per-call latency), given beside it in the text, the status and the
table. Tensor parallel splits the weights and heads, pipeline parallel splits the layers into
stages, expert parallel spreads a mixture-of-experts model's experts (and sequences) over the chips.

The chart: a log-log roofline per chip with the compute roof, the HBM roof and the link roof (its
bandwidth per direction), the step drawn twice at the FLOP/s one chip achieves over the step, at its
FLOPs per HBM byte (circle) and at its FLOPs per byte sent (triangle); below, one chip's step as a bar.

Speed: the roofline's axes, compute and HBM roofs and the bar's axis are drawn once per (part, format)
and kept as a bitmap (:class:`~roofline_lessons.viz.fastfig.CachedFigure`); the link roof and the legend
are drawn over that once per link and kept as a bitmap too (:class:`~roofline_lessons.viz.fastfig.Layers`);
a move draws only the two points, their labels, the status and the bar.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part
from ...core.models import get_model
from ...core.parallel import Parallelism
from ...core.placement import Placement, place
from ...core.units import binary, count, duration, num, percent, si
from ..charts import MIN_FONT_PT, TERA, part_style, set_log_axis
from ..display import html_table
from ..fastfig import CHART_DPI, CachedFigure, Layers, bare_figure, message_png
from ..plots import (BOUND_ROOF, COMPUTE_ROOF_COLOUR, HBM_POINT_MARKER, LINK_POINT_MARKER, TIME_LOOK, TimeSegment,
                     _achieved_flops_per_s, _comm_latency_s, _compute_format, _link_intensity, _link_roof_look,
                     _time_segments)
from ..panel import Frame, build_dashboard, model_and_part

STRATEGIES = ("tensor", "pipeline", "expert")
CHIP_CHOICES = (1, 2, 4, 8)
BATCH_CHOICES = tuple(2 ** k for k in range(9))  # 1 … 256
PHASES = ("decode", "prefill")
#: the roofline's fixed intensity range, FLOP/byte: every step the controls reach (HBM intensity from
#: about 1, link intensity up to a few million for pipeline parallel) lies inside it
X_RANGE = (0.3, 1e7)
#: the performance range, TFLOP/s: the same for every part (from the L4's 121 TFLOP/s to the B200's
#: 2.25 PFLOP/s in bf16, and down to a pipeline's batch-1 decode), so parts compare by eye
Y_RANGE_TFLOPS = (0.01, 1e4)
FIGSIZE = (10.5, 6.4)
DPI = CHART_DPI
ROOF_BOX = {"left": 0.085, "right": 0.6, "bottom": 0.315, "top": 0.885}
BAR_BOX = (0.085, 0.075, 0.88, 0.055)  # left, bottom, width, height
RIGHT_X = 0.625
STATUS_Y = ROOF_BOX["bottom"]  #: the status text's bottom, beside the roofline's lower edge
POINT_FACE = "#F0E442"  #: Okabe–Ito yellow, black-edged: unlike every roof's colour
LABEL_GAP_PT = 9
#: how the chart draws text: unhinted (hinting doubles the time of each update's text; at 80 dpi
#: the text reads as well without it)
TEXT_RC = {"text.hinting": "no_hinting"}


@dataclass(frozen=True)
class Lesson11View:
    """One setting and what it gives. Seconds, bytes, FLOP/s and FLOP/byte; with more than one chip
    every figure is one chip's (the busiest stage's). ``step_s`` and the terms are the estimate's;
    ``lower_bound_s`` is the bound (``tokens_per_s`` an estimate, ``tokens_per_s_upper_bound`` a bound)."""

    model_id: str
    part_id: str
    chips: object
    batch: object
    phase: object
    context_tokens: object
    prompt_tokens: object
    strategy: object
    overlap_comm: object
    text: str
    error: str | None = None
    title: str = ""
    heading: str = ""  #: the chart's heading: the title without the batch
    model_name: str = ""
    part_name: str = ""
    label: str = ""  #: the split: "TP 2", "EP 8", "1 chip"
    compute_format: str = "bf16"
    placement: Placement | None = None  #: per chip when chips > 1
    single: Placement | None = None  #: the same step on one chip
    step_s: float | None = None  #: the whole step's estimate (all pipeline stages), seconds
    compute_s: float | None = None  #: one chip's compute time, seconds
    memory_s: float | None = None  #: one chip's HBM time, seconds
    comm_s: float | None = None  #: one chip's collectives per stage, seconds
    wait_s: float = 0.0  #: pipeline: the other stages and the sends, seconds
    exposed_comm_s: float = 0.0  #: what communication (and sends) add to the step, seconds
    comm_share: float = 0.0  #: exposed_comm_s / step_s
    bound: str = ""  #: the estimate's binding roof: "compute", "memory" or "interconnect"
    achieved_flops_per_s: float | None = None  #: per-chip FLOPs ÷ step time
    peak_flops_per_s: float | None = None
    hbm_bandwidth_bytes_per_s: float | None = None
    hbm_intensity: float | None = None  #: FLOPs per HBM byte (per chip)
    hbm_ridge: float | None = None
    link_name: str | None = None
    link_bytes_per_s: float | None = None  #: per direction
    link_intensity: float | None = None  #: FLOPs per byte sent (None: one chip or nothing sent)
    link_ridge: float | None = None
    comm_latency_s: float = 0.0  #: the collectives' per-call latency, seconds
    memory_required_bytes: float | None = None  #: per chip
    capacity_bytes: float | None = None
    fits: bool | None = None
    tokens_per_s: float | None = None  #: all chips together, the estimate's
    lower_bound_s: float | None = None  #: the step's lower bound (least bytes, overlapped, no latency), seconds
    lower_bound_roof: str = ""  #: the bound's binding roof
    tokens_per_s_upper_bound: float | None = None  #: all chips together
    assumed_latency_s: float = 0.0  #: seconds of the estimate that are the assumed per-call latency
    single_step_s: float | None = None
    single_fits: bool | None = None
    single_memory_bytes: float | None = None
    speedup: float | None = None  #: single_step_s / step_s (the estimates')
    single_lower_bound_s: float | None = None
    lower_bound_speedup: float | None = None  #: single_lower_bound_s / lower_bound_s
    segments: tuple[TimeSegment, ...] = ()
    warnings: tuple[str, ...] = ()
    table_html: str = ""


def _whole(name: str, value, allowed: tuple[int, int]) -> int:
    lo, hi = allowed
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating))
            or not math.isfinite(float(value)) or not float(value).is_integer() or not lo <= value <= hi):
        raise RooflineInputError(f"{name} must be a whole number from {count(lo)} to {count(hi)}, got {value!r}")
    return int(value)


def _choice(name: str, value, allowed: tuple) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise RooflineInputError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


def _chips_text(n: int, part_name: str) -> str:
    return f"one {part_name}" if n == 1 else f"{n} × {part_name}"


def lesson11_view(model, part, chips, batch, phase="decode", context_tokens=4096, prompt_tokens=2048,
                  strategy="tensor", overlap_comm=False) -> Lesson11View:
    """One step of ``model`` split over ``chips`` of ``part`` by ``strategy`` (tensor, pipeline or
    expert parallel), ``batch`` sequences in ``phase`` (decode with ``context_tokens`` cached, or a
    prefill of ``prompt_tokens``), communication overlapped with compute or not; and the same step
    on one chip. A setting the model or the part cannot take is an error view with the package's
    message (never an exception)."""
    args = (str(model), str(part), chips, batch, phase, context_tokens, prompt_tokens, strategy, overlap_comm)
    try:
        _choice("strategy", strategy, STRATEGIES)
        _choice("phase", phase, PHASES)
        if not isinstance(overlap_comm, (bool, np.bool_)):
            raise RooflineInputError(f"overlap_comm must be True or False, got {overlap_comm!r}")
        b = _whole("batch", batch, (1, 1 << 20))
        ctx = _whole("context_tokens", context_tokens, (0, 1 << 24))
        prompt = _whole("prompt_tokens", prompt_tokens, (1, 1 << 24))
        m, p = get_model(model), get_part(part)
        if strategy == "expert" and not m.is_moe and chips == 1:
            # the package refuses expert parallel > 1 on a dense model; one chip says the same
            raise RooflineInputError(f"expert parallel needs a mixture-of-experts model; {m.id} is dense "
                                     "(use tensor or pipeline parallel)")
        par = Parallelism(**{strategy: chips}, overlap_comm=bool(overlap_comm))
        n = par.chips
        shape = {"context_tokens": ctx} if phase == "decode" else {"prompt_tokens": prompt}
        pl = place(m, p, parallelism=par, phase=phase, batch=b, **shape)
        one = place(m, p, phase=phase, batch=b, **shape) if n > 1 else pl
        free = (place(m, p, parallelism=replace(par, collective_latency_s=0.0), phase=phase, batch=b, **shape)
                if n > 1 else pl)
    except RooflineInputError as exc:
        return Lesson11View(*args, text=str(exc), error=str(exc))
    c, mem, k = float(pl.compute_time_s), float(pl.memory_time_s), float(pl.comm_time_s)
    step = float(pl.time_estimate_s)
    pipe = par.pipeline
    exposed = max(step - pipe * max(c, mem), 0.0) if n > 1 else 0.0
    wait = step - float(pl.stage_time_s) if pipe > 1 else 0.0
    bound = str(pl.bound)
    link = pl.link
    what = (f"{count(ctx)} tokens cached" if phase == "decode" else f"{count(prompt)}-token prompts")
    split = "" if n == 1 else f"{par.label} on "
    title = f"{m.name} {phase}, batch {count(b)}, {what}: {split}{_chips_text(n, p.name)}"
    heading = f"{m.name} {phase}, {what}: {split}{_chips_text(n, p.name)}"
    view = Lesson11View(
        *args[:2], n, b, phase, ctx, prompt, strategy, bool(overlap_comm), text="", title=title, heading=heading,
        model_name=m.name, part_name=p.name, label=par.label, compute_format=_compute_format(pl), placement=pl,
        single=one,
        step_s=step, compute_s=c, memory_s=mem, comm_s=k, wait_s=wait, exposed_comm_s=exposed,
        comm_share=exposed / step if step > 0 else 0.0, bound=bound, achieved_flops_per_s=_achieved_flops_per_s(pl),
        peak_flops_per_s=float(pl.peak_flops_per_s), hbm_bandwidth_bytes_per_s=float(pl.bandwidth_bytes_per_s),
        hbm_intensity=float(pl.intensity), hbm_ridge=float(pl.ridge_point_flop_per_byte),
        link_name=None if link is None else link.name,
        link_bytes_per_s=None if link is None else float(link.per_direction_bytes_per_s),
        link_intensity=_link_intensity(pl),
        link_ridge=None if link is None else float(pl.interconnect_ridge_point_flop_per_byte),
        comm_latency_s=_comm_latency_s(pl), memory_required_bytes=float(pl.memory_required_bytes),
        capacity_bytes=float(p.memory_capacity_bytes), fits=bool(pl.fits_in_memory),
        tokens_per_s=float(pl.tokens_per_s_estimate), lower_bound_s=float(pl.time_lower_bound_s),
        lower_bound_roof=str(pl.lower_bound_roof), tokens_per_s_upper_bound=float(pl.tokens_per_s_upper_bound),
        assumed_latency_s=step - float(free.time_estimate_s), single_step_s=float(one.time_estimate_s),
        single_fits=bool(one.fits_in_memory), single_memory_bytes=float(one.memory_required_bytes),
        speedup=float(one.time_estimate_s) / step, single_lower_bound_s=float(one.time_lower_bound_s),
        lower_bound_speedup=float(one.time_lower_bound_s) / float(pl.time_lower_bound_s),
        segments=_time_segments(pl), warnings=tuple(pl.warnings))
    return _with_text(view)


def breakdown_text(view: Lesson11View) -> str:
    """How one chip's step is made, in words, with the numbers (matches the bar)."""
    c, m, k = view.compute_s, view.memory_s, view.comm_s
    big, small = (("compute", c), ("memory", m)) if c >= m else (("memory", m), ("compute", c))
    pl = view.placement
    if pl.comm is None:
        return f"{big[0]} {duration(big[1])} ({small[0]} {duration(small[1])} runs during it); no communication"
    if view.overlap_comm:
        text = (f"the longest of compute {duration(c)}, memory {duration(m)} and communication {duration(k)}, "
                "overlapped")
    else:
        comm = f" + communication {duration(k)}" if k > 0 else ""
        text = f"{big[0]} {duration(big[1])}{comm} ({small[0]} {duration(small[1])} runs during the {big[0]} time)"
    p = pl.parallelism.pipeline
    if p > 1:
        text = (f"{p} stages one after another, each {text.replace(' + ', ' plus ')}, and {p - 1} "
                f"send{'s' if p > 2 else ''} of {duration(pl.pipeline_send_s)} between them: this chip waits "
                f"{duration(view.wait_s)} for the others")
    return text


def _comm_sentence(view: Lesson11View) -> str:
    pl = view.placement
    if pl.comm is None:
        return "One chip: no communication."
    link = pl.link
    rule = ("not overlapped with compute (the default: it is added to the step)" if not view.overlap_comm
            else "overlapped with compute (its best case)")
    head = (f"The chips talk over {link.name} at {si(link.per_direction_bytes_per_s, 'B/s')} per direction; "
            f"in the estimate, communication is {rule}. ")
    if pl.comm.calls:
        lat = view.comm_latency_s
        head += (f"Per chip and stage, by the estimate, {count(pl.comm.calls)} collective calls send "
                 f"{si(pl.comm.bytes, 'B')} in {duration(view.comm_s)}")
        if view.comm_s > 0 and lat / view.comm_s >= 0.5:
            head += (f", {percent(lat / view.comm_s, 1)} of it per-call latency ({duration(link.latency_s)} per call, "
                     "assumed): latency-bound, not bandwidth-bound")
        head += ". "
    if view.overlap_comm:
        hidden = view.comm_s <= max(view.compute_s, view.memory_s)
        head += ("It hides under the compute and memory time" if hidden
                 else f"It is longer than compute and memory: the step waits {duration(view.exposed_comm_s)} for it")
        head += f" ({percent(view.comm_share, 1)} of the step)." if not hidden else "."
    elif pl.comm.calls:
        head += f"Communication is {percent(view.comm_share, 1)} of the step."
    else:
        head += f"The sends between stages are {percent(view.comm_share, 1)} of the step."
    return head


def _fit_sentence(fits: bool, needed: float, capacity: float) -> str:
    return (f"{binary(needed)} of {binary(capacity)}: fits" if fits
            else f"{binary(needed)}, more than its {binary(capacity)}: does NOT fit")


def _with_text(view: Lesson11View) -> Lesson11View:
    from dataclasses import replace

    n = view.chips
    unit = "tokens/s" if view.phase == "decode" else "prompt tokens/s"
    if n == 1:
        text = (f"{view.title}. One step: lower bound {duration(view.lower_bound_s)} (no implementation on this "
                f"chip is faster), estimate {duration(view.step_s)} (operators unfused), {view.bound}-bound "
                f"({BOUND_ROOF[view.bound]} binds): {breakdown_text(view)}. Weights, KV cache and state need "
                f"{_fit_sentence(view.fits, view.memory_required_bytes, view.capacity_bytes)}. At most "
                f"{count(view.tokens_per_s_upper_bound)} {unit} (upper bound); about {count(view.tokens_per_s)} "
                "by the estimate. Choose 2, 4 or 8 chips to split the step.")
    else:
        faster = (f"by the estimate {n} chips are {num(view.speedup)}× faster per step" if view.speedup >= 1
                  else f"by the estimate {n} chips are {num(1 / view.speedup)}× SLOWER per step")
        faster += f" (the lower bound: {num(view.lower_bound_speedup)}× one chip's)"
        p = view.placement.parallelism.pipeline
        if view.speedup < 1 and p > 1:
            sends = (p - 1) * float(view.placement.pipeline_send_s)
            faster = (f"by the estimate {n} chips are no faster per step: SLOWER by "
                      f"{percent(1 / view.speedup - 1, 2)} ({duration(view.step_s - view.single_step_s)}), because "
                      f"the {p} stages run one after another, so the step is one chip's work plus the {p - 1} "
                      f"send{'s' if p > 2 else ''} between them ({duration(sends)} in all). The lower bound lets the "
                      "stages overlap, as a prompt cut into chunks could; one token cannot be cut, so for it one "
                      f"chip's lower bound, {duration(view.single_lower_bound_s)}, is the floor")
        lat = view.assumed_latency_s
        # one lead sentence, then a short list (issue 26, item 14: the verdict was a nine-line paragraph)
        items = [
            f"Per chip, the estimate is {duration(view.step_s)} per step (operators unfused, collectives by the "
            f"ring at the assumed per-call latency), {view.bound}-bound ({BOUND_ROOF[view.bound]} binds); "
            f"{duration(lat)} of it, {percent(lat / view.step_s, 1)}, is assumed latency.",
            f"Per chip: {breakdown_text(view)}.",
            _comm_sentence(view),
            f"Per chip, weights, KV cache and state need "
            f"{_fit_sentence(view.fits, view.memory_required_bytes, view.capacity_bytes)}.",
            f"The {n} chips together: at most {count(view.tokens_per_s_upper_bound)} {unit} (upper bound), about "
            f"{count(view.tokens_per_s)} by the estimate ({num(view.tokens_per_s / n)} per chip).",
            f"One chip alone: lower bound {duration(view.single_lower_bound_s)}, estimate "
            f"{duration(view.single_step_s)} per step, and it needs "
            f"{_fit_sentence(view.single_fits, view.single_memory_bytes, view.capacity_bytes)}; {faster}.",
        ]
        text = (f"{view.title}. Per chip, the lower bound is {duration(view.lower_bound_s)} per step (the least "
                f"bytes, overlapped, no per-call latency: no implementation of this split is faster), "
                f"{view.lower_bound_roof}-bound." + "".join(f"\n- {item.strip()}" for item in items))
    return replace(view, text=text, table_html=lesson11_table(view))


def lesson11_table(view: Lesson11View) -> str:
    """The time breakdown per chip against the same step on one chip (an HTML table)."""
    pl, one = view.placement, view.single
    unit = "tokens/s" if view.phase == "decode" else "prompt tokens/s"

    def column(p: Placement) -> list[str]:
        p_steps = p.parallelism.pipeline
        col = [duration(p.compute_time_s), duration(p.memory_time_s),
               "none" if p.comm is None else duration(p.comm_time_s)]
        if view.placement.parallelism.pipeline > 1:
            col.append(duration(p.time_estimate_s - p.stage_time_s) if p_steps > 1 else "none")
        col += [duration(p.time_estimate_s), f"{p.bound}", duration(p.time_lower_bound_s), f"{p.lower_bound_roof}",
                count(p.tokens_per_s_estimate), count(p.tokens_per_s_upper_bound),
                f"{binary(p.memory_required_bytes)} of {binary(p.part.memory_capacity_bytes)}",
                "yes" if bool(p.fits_in_memory) else "NO"]
        return col

    names = ["compute (estimate)", "memory (HBM, estimate)", "communication (estimate: ring, assumed latency)"]
    if pl.parallelism.pipeline > 1:
        names.append("pipeline wait (other stages, sends)")
    names += ["step time, estimate", "roof that binds, estimate", "step time, lower bound",
              "roof that binds, lower bound", f"{unit}, all chips, estimate", f"{unit}, all chips, upper bound",
              "memory needed per chip", "fits in memory"]
    if view.chips == 1:
        return html_table(["per step", "1 chip"], [[a, b] for a, b in zip(names, column(pl))],
                          caption=f"{view.model_name} {view.phase} on one {view.part_name}")
    return html_table(["per step", f"{view.label}: per chip", "1 chip"],
                      [[a, b, c] for a, b, c in zip(names, column(pl), column(one))],
                      caption=f"Time per step: {view.chips} chips (per chip) against one chip")


def lesson11_alt(view: Lesson11View) -> str:
    """What the chart says, with this setting's numbers, for a reader who cannot see it."""
    hbm_side = "left of" if view.hbm_intensity < view.hbm_ridge else "at or right of"
    roofs = (f"compute roof {si(view.peak_flops_per_s, 'FLOP/s')} ({view.compute_format}), HBM roof "
             f"{si(view.hbm_bandwidth_bytes_per_s, 'B/s')} with its ridge at {num(view.hbm_ridge)} FLOP/byte")
    if view.link_name is not None:
        roofs += (f", and the {view.link_name} link roof at {si(view.link_bytes_per_s, 'B/s')} per direction with its "
                  f"ridge at {num(view.link_ridge)} FLOP/byte")
    else:
        roofs += "; one chip, so no link roof"
    point = (f"By the estimate, the step achieves {si(view.achieved_flops_per_s, 'FLOP/s')} per chip over its "
             f"{duration(view.step_s)}, drawn at {num(view.hbm_intensity)} FLOPs per HBM byte ({hbm_side} the HBM "
             "ridge)")
    if view.link_intensity is not None:
        link_side = "left of" if view.link_intensity < view.link_ridge else "at or right of"
        point += f" and at {num(view.link_intensity)} FLOPs per byte sent ({link_side} the link ridge)"
    point += (f"; it is {view.bound}-bound: {BOUND_ROOF[view.bound]} binds. The lower bound, not drawn, is "
              f"{duration(view.lower_bound_s)}" + (" per chip." if view.chips > 1 else "."))
    bar = f"Below, one chip's estimated step of {duration(view.step_s)}: {breakdown_text(view)}."
    return (f"{view.title}. Above, a log-log roofline per chip of {view.part_name}: {roofs}. {point} {bar}")


def lesson11_frame(view: Lesson11View, chart: Lesson11Chart) -> Frame:
    """The verdict, the chart, its alt text and the table for one setting; an error view shows its
    error once (no chart)."""
    if view.error is not None:
        return Frame(verdict=view.error, png=None, alt="", error=True)
    return Frame(verdict=view.text, png=chart.png(view), alt=lesson11_alt(view), notes=view.warnings,
                 table_html=view.table_html)


# ---- drawing ------------------------------------------------------------------------------------

def _slanted(ax, bandwidth: float, peak: float, **style):
    """A bandwidth roof from the left edge up to where it meets the compute roof."""
    ridge = peak / bandwidth
    x = np.array([X_RANGE[0], ridge])
    return ax.plot(x, x * bandwidth / TERA, **style)


RIDGE_BOX = {"boxstyle": "square,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85}
#: where the link's name sits (under the legend)
LINK_TEXT_Y = 0.595


def _skeleton() -> dict:
    """The figure with what no control changes: the roofline's axes (one range for every part, so
    parts compare by eye), the bar's axis and its key; and the animated artists."""
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    fig = bare_figure(FIGSIZE, DPI)
    ax = fig.add_axes((ROOF_BOX["left"], ROOF_BOX["bottom"], ROOF_BOX["right"] - ROOF_BOX["left"],
                       ROOF_BOX["top"] - ROOF_BOX["bottom"]))
    ax.set_xscale("log")
    ax.set_yscale("log")
    set_log_axis(ax.xaxis, *X_RANGE)
    set_log_axis(ax.yaxis, *Y_RANGE_TFLOPS)
    ax.tick_params(labelsize=MIN_FONT_PT)
    ax.set_xlabel("Intensity (FLOP per byte)", fontsize=MIN_FONT_PT + 0.5)
    ax.set_ylabel("Performance per chip (TFLOP/s)", fontsize=MIN_FONT_PT + 0.5)
    ax.grid(True, alpha=0.35)

    bar = fig.add_axes(BAR_BOX)
    bar.set_xlim(0, 100)
    bar.set_ylim(0, 1)
    bar.xaxis.set_major_locator(FixedLocator([0, 25, 50, 75, 100]))
    bar.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.0f} %"))
    bar.yaxis.set_major_locator(NullLocator())
    bar.tick_params(axis="x", labelsize=MIN_FONT_PT)
    bar.text(0, 2.2, "One step per chip, by the estimate (100 % = its step time):", transform=bar.transAxes,
             fontsize=MIN_FONT_PT + 1, ha="left", va="bottom")
    kinds = [Patch(facecolor=col, hatch=hatch, edgecolor=edge, label=kind) for kind, (col, hatch, edge)
             in TIME_LOOK.items()]
    bar.legend(handles=kinds, loc="lower right", bbox_to_anchor=(1.0, 1.95), ncol=4, fontsize=MIN_FONT_PT,
               frameon=False, borderaxespad=0, handlelength=2.2, columnspacing=1.2)

    heading = fig.suptitle("", fontsize=MIN_FONT_PT + 3, x=0.5, y=0.975, animated=True)
    title = ax.set_title("", fontsize=MIN_FONT_PT + 1.5)
    title.set_animated(True)
    rects = []
    for _ in range(5):
        r = Rectangle((0, 0), 0, 1, animated=True, linewidth=0.6)
        bar.add_patch(r)
        rects.append(r)
    line, = ax.plot([], [], color="0.25", linestyle=":", linewidth=1.3, animated=True)
    hbm_pt, = ax.plot([], [], marker=HBM_POINT_MARKER, markersize=11, linestyle="none", color="black",
                      markerfacecolor=POINT_FACE, animated=True, zorder=5)
    link_pt, = ax.plot([], [], marker=LINK_POINT_MARKER, markersize=12, linestyle="none", color="black",
                       markerfacecolor=POINT_FACE, animated=True, zorder=5)
    box = {"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.6", "alpha": 0.9}
    hbm_label = ax.annotate("", (1, 1), textcoords="offset points", xytext=(0, 0), fontsize=MIN_FONT_PT,
                            animated=True, bbox=box, zorder=6)
    link_label = ax.annotate("", (1, 1), textcoords="offset points", xytext=(0, 0), fontsize=MIN_FONT_PT,
                             animated=True, bbox=box, zorder=6)
    status = fig.text(RIGHT_X, STATUS_Y, "", fontsize=MIN_FONT_PT + 1, ha="left", va="bottom", linespacing=1.4,
                      animated=True)
    bar_line = bar.text(0, 1.15, "", transform=bar.transAxes, fontsize=MIN_FONT_PT, ha="left", va="bottom",
                        animated=True)
    moving = {"rects": rects, "line": line, "hbm_pt": hbm_pt, "link_pt": link_pt, "hbm_label": hbm_label,
              "link_label": link_label, "status": status, "bar_line": bar_line}
    return {"fig": fig, "ax": ax, "bar": bar, "heading": heading, "title": title, "moving": moving,
            "part_layers": Layers(8), "link_layers": Layers(16), "artists": OrderedDict(), "obstacles": {},
            "roof_lines": {}}


def _draw_part(shared: dict, part_id: str, fmt: str, peak: float) -> list:
    """The layer a part and a format draw over the skeleton: the axes' title, the compute and HBM
    roofs, the HBM ridge and the legend."""
    from matplotlib.lines import Line2D

    fig, ax = shared["fig"], shared["ax"]
    p = get_part(part_id)
    look = part_style(p)
    link_look = _link_roof_look(look.colour, look.linestyle)
    bw = p.memory_bandwidth_bytes_per_s
    ridge = peak / bw
    shared["title"].set_text(f"Three roofs per chip: {p.name}, {fmt}")
    artists = [ax.axhline(peak / TERA, color=COMPUTE_ROOF_COLOUR, linewidth=2.4, animated=True)]
    artists += _slanted(ax, bw, peak, color=look.colour, linestyle=look.linestyle, linewidth=2.4, animated=True)
    artists += ax.plot([ridge, ridge], [Y_RANGE_TFLOPS[0], peak / TERA], color=look.colour, linestyle=":",
                       linewidth=1.2, animated=True)
    label = ax.annotate(f"HBM ridge {num(ridge)}", (ridge, peak / TERA), textcoords="offset points", xytext=(-3, 3),
                        ha="right", va="bottom", fontsize=MIN_FONT_PT, color=look.colour, fontweight="bold",
                        bbox=RIDGE_BOX, animated=True)
    artists.append(label)
    handles = [
        Line2D([], [], color=COMPUTE_ROOF_COLOUR, linewidth=2.4, label=f"compute roof ({fmt}): {si(peak, 'FLOP/s')}"),
        Line2D([], [], color=look.colour, linestyle=look.linestyle, linewidth=2.4,
               label=f"HBM roof: {si(bw, 'B/s')}, ridge {num(ridge)}"),
        Line2D([], [], color=link_look[0], linestyle=link_look[1], linewidth=2.4,
               label="link roof: per-direction bandwidth\n× FLOPs per byte sent"),
        Line2D([], [], marker=HBM_POINT_MARKER, markersize=9, linestyle="none", color="black",
               markerfacecolor=POINT_FACE, label="the step at FLOPs per HBM byte"),
        Line2D([], [], marker=LINK_POINT_MARKER, markersize=10, linestyle="none", color="black",
               markerfacecolor=POINT_FACE, label="the step at FLOPs per byte sent\n(height: FLOP/s one chip achieves)"),
    ]
    legend = fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(RIGHT_X - 0.01, ROOF_BOX["top"] + 0.01),
                        fontsize=MIN_FONT_PT, frameon=False, borderaxespad=0, handlelength=2.4)
    legend.set_animated(True)
    artists.append(legend)
    for a in [shared["title"], *artists]:
        fig.draw_artist(a)
    return artists


def link_text(link_name: str | None, link_bw: float | None, peak: float) -> str:
    """The line under the legend naming the link the chips use."""
    if link_name is None:
        return "One chip: no link roof, no communication"
    return f"Link: {link_name},\n{si(link_bw, 'B/s')} per direction, ridge {num(peak / link_bw)}"


def _draw_link(shared: dict, view: Lesson11View) -> list:
    """The layer a heading and a link draw over the part's: the heading, the link roof, its ridge and
    its name under the legend."""
    fig, ax = shared["fig"], shared["ax"]
    peak, link_name, link_bw = view.peak_flops_per_s, view.link_name, view.link_bytes_per_s
    look = part_style(view.part_id)
    colour, style = _link_roof_look(look.colour, look.linestyle)
    shared["heading"].set_text(view.heading)
    artists = []
    if link_name is not None:
        ridge = peak / link_bw
        artists += _slanted(ax, link_bw, peak, color=colour, linestyle=style, linewidth=2.4, animated=True)
        artists += ax.plot([ridge, ridge], [Y_RANGE_TFLOPS[0], peak / TERA], color=colour, linestyle=":",
                           linewidth=1.2, animated=True)
        artists.append(ax.annotate(f"link ridge {num(ridge)}", (ridge, peak / TERA), textcoords="offset points",
                                   xytext=(3, 3), ha="left", va="bottom", fontsize=MIN_FONT_PT, color=colour,
                                   fontweight="bold", animated=True, bbox=RIDGE_BOX))
    artists.append(fig.text(RIGHT_X, LINK_TEXT_Y, link_text(link_name, link_bw, peak), fontsize=MIN_FONT_PT,
                            ha="left", va="top", linespacing=1.35, animated=True,
                            color=colour if link_name is not None else "black"))
    for a in [shared["heading"], *artists]:
        fig.draw_artist(a)
    return artists


def _clamp(x: float) -> tuple[float, bool]:
    lo, hi = X_RANGE
    if x < lo:
        return lo, True
    if x > hi:
        return hi, True
    return x, False


#: how close (pixels, from the text's extent) a roof line's centre may run past a point's label before
#: it counts as touching it: the label's rounded box pads the text by 0.25 em (about 3 px at 9 pt and
#: 100 dpi), half a 2.4-pt roof is about 2 px, and 1 px of white between them
ROOF_CLEARANCE_PX = 6.0


def _line_samples(lines, renderer) -> np.ndarray:
    """Display points every pixel or so along ``lines`` (matplotlib Line2D), with a weight each: a
    roof counts fully, a dotted guide (a ridge's vertical line) a tenth. Rows: x, y, weight."""
    out = [np.empty((0, 3))]
    for ln in lines:
        if not ln.get_visible() or len(ln.get_xdata()) < 2:
            continue
        pts = ln.get_transform().transform(np.column_stack([ln.get_xdata(), ln.get_ydata()]))
        weight = 0.1 if ln.get_linestyle() == ":" else 1.0
        for (x0, y0), (x1, y1) in zip(pts[:-1], pts[1:]):
            n = int(min(max(abs(x1 - x0), abs(y1 - y0)), 4000)) + 1
            t = np.linspace(0.0, 1.0, n + 1)
            out.append(np.column_stack([x0 + t * (x1 - x0), y0 + t * (y1 - y0), np.full(t.size, weight)]))
    return np.concatenate(out)


def _line_cost(box, samples: np.ndarray) -> float:
    """The weighted pixels of roof and guide lines that run through ``box`` or within
    :data:`ROOF_CLEARANCE_PX` of it."""
    if samples.size == 0:
        return 0.0
    c = ROOF_CLEARANCE_PX
    inside = ((samples[:, 0] >= box.x0 - c) & (samples[:, 0] <= box.x1 + c) & (samples[:, 1] >= box.y0 - c)
              & (samples[:, 1] <= box.y1 + c))
    return float(samples[inside, 2].sum())


def _place_label(label, xy, candidates, obstacles, inside, renderer, lines=None):
    """Put ``label`` at the first candidate (offset points, ha, va) that stays inside ``inside``,
    overlaps no obstacle box and keeps clear of the roof lines (``lines``: samples from
    :func:`_line_samples`). Where none does: of the candidates that leave the least of it outside and
    overlapping other text, the one that the lines cross least (text over text is worse than a line
    through a label). Returns its box."""
    def area(a, b) -> float:
        w = min(a.x1, b.x1) - max(a.x0, b.x0)
        h = min(a.y1, b.y1) - max(a.y0, b.y0)
        return w * h if w > 0 and h > 0 else 0.0

    samples = np.empty((0, 3)) if lines is None else lines
    best, best_cost = None, (float("inf"), float("inf"))
    label.xy = xy
    for dx, dy, ha, va in candidates:
        label.set_position((dx, dy))
        label.set_horizontalalignment(ha)
        label.set_verticalalignment(va)
        box = label.get_window_extent(renderer)
        cost = (4 * (box.width * box.height - area(box, inside)) + sum(area(box, o) for o in obstacles),
                _line_cost(box, samples))
        if cost == (0, 0):
            return box
        if cost < best_cost:
            best, best_cost = (dx, dy, ha, va), cost
    dx, dy, ha, va = best
    label.set_position((dx, dy))
    label.set_horizontalalignment(ha)
    label.set_verticalalignment(va)
    return label.get_window_extent(renderer)


def status_text(view: Lesson11View) -> str:
    """The lines beside the chart: per chip, the step's estimate and roof, its lower bound, the rate and
    the comm share, the fit."""
    per = "Per chip" if view.chips > 1 else "One chip"
    if view.chips == 1:
        comm = "no communication"
    elif view.overlap_comm:
        comm = ("comm overlapped, hidden" if view.exposed_comm_s <= 0
                else f"comm overlapped, adds {percent(view.comm_share, 1)}")
    else:
        comm = f"comm {percent(view.comm_share, 1)} of it"
    latency = ([f"  assumed per-call latency: {percent(view.assumed_latency_s / view.step_s, 1)} of it"]
               if view.chips > 1 else [])
    return "\n".join([
        f"{per}, estimate: {duration(view.step_s)}, {view.bound}-bound",
        f"  {comm}", *latency,
        f"{per}, lower bound: {duration(view.lower_bound_s)}",
        f"{num(view.achieved_flops_per_s / TERA)} TFLOP/s achieved (estimate)",
        f"{binary(view.memory_required_bytes)} of {binary(view.capacity_bytes)}"
        + (" per chip" if view.chips > 1 else "") + (": fits" if view.fits else ": does NOT fit")])


def bar_text(view: Lesson11View) -> str:
    """The line over the bar: how the step is made (the numbers of the pieces)."""
    c, m, k = view.compute_s, view.memory_s, view.comm_s
    big, small = (("compute", c), ("memory", m)) if c >= m else (("memory", m), ("compute", c))
    if view.chips > 1 and view.overlap_comm:
        text = f"overlapped: the longest of compute {duration(c)}, memory {duration(m)}, communication {duration(k)}"
    else:
        text = f"{big[0]} {duration(big[1])}" + (f" + communication {duration(k)}" if view.chips > 1 and k > 0
                                                 else "")
        text += f" ({small[0]} {duration(small[1])} runs during it)"
    if view.wait_s > 0:
        text += f", then {duration(view.wait_s)} waiting for the other stages"
    return text


class Lesson11Chart:
    """The three-roof chart and the time bar on one figure. Three levels, each kept as a bitmap: the
    skeleton (drawn once per chart), a part layer (once per part and format: its roofs and legend), a
    link layer over it (once per heading and link: the link roof), and what a move draws over them.
    ``layer_misses`` counts layers drawn (part and link)."""

    def __init__(self) -> None:
        self._shared: dict | None = None
        self.figures = CachedFigure(self._build, max_cached=1)
        self.last_figure = None
        self.layer_misses = 0

    def _build(self, _key):
        self._shared = _skeleton()
        return self._shared["fig"], self._shared

    def png(self, view: Lesson11View) -> bytes:
        if view.error is not None:
            return message_png(view.text)
        part_key = (view.part_id, view.compute_format, view.peak_flops_per_s)
        link_key = part_key + (view.heading, view.link_name, view.link_bytes_per_s)

        def update(shared):
            from matplotlib.lines import Line2D

            fig = shared["fig"]
            self.last_figure = fig
            kept, obstacles, roof_lines = shared["artists"], shared["obstacles"], shared["roof_lines"]
            renderer = fig.canvas.get_renderer()

            def drawer(key, draw):
                def run():
                    self.layer_misses += 1
                    for a in kept.pop(key, []):
                        a.remove()
                    kept[key] = draw()
                    obstacles[key] = [a.get_window_extent(renderer) for a in kept[key]
                                      if a.axes is shared["ax"] and hasattr(a, "get_text")]
                    roof_lines[key] = _line_samples([a for a in kept[key] if a.axes is shared["ax"]
                                                     and isinstance(a, Line2D)], renderer)
                    while len(kept) > 48:  # more than both caches hold: the oldest can go
                        old, artists = kept.popitem(last=False)
                        obstacles.pop(old, None)
                        roof_lines.pop(old, None)
                        for a in artists:
                            a.remove()
                return run

            shared["part_layers"].show(fig, part_key, drawer(part_key, lambda: _draw_part(shared, *part_key)))
            shared["link_layers"].show(fig, link_key, drawer(link_key, lambda: _draw_link(shared, view)))
            # what the restored bitmaps show, for readers of the figure (tests): only these layers' artists
            shared["heading"].set_text(view.heading)
            shared["title"].set_text(f"Three roofs per chip: {view.part_name}, {view.compute_format}")
            for k, artists in kept.items():
                for a in artists:
                    a.set_visible(k in (part_key, link_key))
            lines = np.concatenate([roof_lines.get(part_key, np.empty((0, 3))),
                                    roof_lines.get(link_key, np.empty((0, 3)))])
            return _moving(shared, view, obstacles.get(part_key, []) + obstacles.get(link_key, []), lines)

        import matplotlib

        # FreeType's hinting roughly doubles the time to draw text; at this size unhinted text reads as well
        with matplotlib.rc_context(TEXT_RC):
            return self.figures.render("skeleton", update)


def _moving(state: dict, view: Lesson11View, obstacles: list, lines: np.ndarray | None = None) -> list:
    """Set the moving artists for ``view`` (labels clear of ``obstacles``, display boxes, and of the
    roof lines, ``lines``: samples from :func:`_line_samples`); returns them (to be drawn)."""
    from matplotlib.transforms import Bbox

    fig, ax, mv = state["fig"], state["ax"], state["moving"]
    renderer = fig.canvas.get_renderer()
    lo, hi = Y_RANGE_TFLOPS
    y = min(max(view.achieved_flops_per_s / TERA, lo), hi)
    xh, off_h = _clamp(view.hbm_intensity)
    mv["hbm_pt"].set_data([xh], [y])
    out = []
    has_link = view.link_intensity is not None
    if has_link:
        xl, off_l = _clamp(view.link_intensity)
        mv["link_pt"].set_data([xl], [y])
        mv["line"].set_data([xh, xl], [y, y])
        out += [mv["line"], mv["hbm_pt"], mv["link_pt"]]
    else:
        out.append(mv["hbm_pt"])
    inside = ax.get_window_extent(renderer)
    half = 12 * DPI / 72 / 2 + 1
    centres = [ax.transData.transform((xh, y))] + ([ax.transData.transform((xl, y))] if has_link else [])
    marks = [Bbox.from_extents(cx - half, cy - half, cx + half, cy + half) for cx, cy in centres]
    g = LABEL_GAP_PT
    # the circle's label below it (the HBM roof runs above-left), the triangle's to its right (the
    # link roof runs above-left of it too), else the first free spot around each
    around = [(0, -g, "center", "top"), (g, -g, "left", "top"), (-g, -g, "right", "top"), (g, 0, "left", "center"),
              (-g, 0, "right", "center"), (0, g, "center", "bottom"), (g, g, "left", "bottom"),
              (-g, g, "right", "bottom")]
    taken = obstacles + marks
    if has_link:  # the triangle first: it often sits near the right edge, where it has fewer places
        # two short lines, so that near the right edge the label still fits beside or under its triangle
        mv["link_label"].set_text(f"△ {num(view.link_intensity)}\nFLOP per byte sent" + (" (off the chart)" if off_l
                                                                                        else ""))
        link_around = [(g, 0, "left", "center"), (0, -g, "center", "top"), (g, -g, "left", "top"),
                       (-g, -g, "right", "top"), (0, g, "center", "bottom"), (-g, g, "right", "bottom"),
                       (g, g, "left", "bottom"), (-g, 0, "right", "center")]
        taken = taken + [_place_label(mv["link_label"], (xl, y), link_around, taken, inside, renderer, lines)]
    mv["hbm_label"].set_text(f"○ {num(view.hbm_intensity)} FLOP per HBM byte" + (" (off the chart)" if off_h else ""))
    _place_label(mv["hbm_label"], (xh, y), around, taken, inside, renderer, lines)
    out.append(mv["hbm_label"])
    if has_link:
        out.append(mv["link_label"])
    mv["status"].set_text(status_text(view))
    out.append(mv["status"])
    step = view.step_s
    shown = []
    for r, seg in zip(mv["rects"], list(view.segments) + [None] * (len(mv["rects"]) - len(view.segments))):
        if seg is None:
            r.set_visible(False)
            continue
        colour, hatch, edge = TIME_LOOK[seg.kind]
        r.set_visible(True)
        r.set_xy((seg.start_s / step * 100, 0.5 - seg.height / 2))
        r.set_width(seg.width_s / step * 100)
        r.set_height(seg.height)
        r.set_facecolor(colour)
        r.set_hatch(hatch)
        r.set_edgecolor(edge if seg.height == 1 else "black")  # a thin bar outlined (and hatched) in black
        r.set_linewidth(0.6 if seg.height == 1 else 0.8)
        shown.append(r)
    out += sorted(shown, key=lambda r: -r.get_height())  # thinner (concurrent) pieces over the wide ones
    mv["bar_line"].set_text(bar_text(view))
    out.append(mv["bar_line"])
    return out


def lesson11_dashboard(model: str = "llama-3.1-70b", part: str = "h100-sxm"):
    """Model, part, strategy, chips, batch, phase and overlap -> the step per chip under three roofs,
    its time breakdown, and a table against one chip."""
    import ipywidgets as widgets
    from IPython.display import display

    style = {"description_width": "initial"}
    model_w, part_w = model_and_part(model, part, style)
    strategy_w = widgets.ToggleButtons(options=STRATEGIES, value="tensor", description="split",
                                       style={**style, "button_width": "80px"})
    chips_w = widgets.Dropdown(options=CHIP_CHOICES, value=2, description="chips", style=style,
                               layout=widgets.Layout(width="120px"))
    batch_w = widgets.SelectionSlider(options=BATCH_CHOICES, value=1, description="batch", style=style,
                                      layout=widgets.Layout(width="340px"))
    phase_w = widgets.ToggleButtons(options=PHASES, value="decode", description="phase",
                                    style={**style, "button_width": "80px"})
    overlap_w = widgets.Checkbox(value=False, description="overlap communication (best case)", indent=False,
                                 style=style, layout=widgets.Layout(width="300px"))
    chart = Lesson11Chart()

    def render(model, part, strategy, chips, batch, phase, overlap):
        return lesson11_frame(lesson11_view(model, part, chips, batch, phase, strategy=strategy,
                                            overlap_comm=overlap), chart)

    ui = build_dashboard({"model": model_w, "part": part_w, "strategy": strategy_w, "chips": chips_w,
                          "batch": batch_w, "phase": phase_w, "overlap": overlap_w},
                         [["model", "part", "chips"], ["strategy", "phase"], ["batch", "overlap"]], render)
    display(ui)
    return ui
