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
The step, the same step on one chip and what the split adds come from
:func:`roofline_lessons.topics.many_chips.split_step`.

The chart: a log-log roofline per chip with the compute roof, the HBM roof and the link roof (its
bandwidth per direction), the step drawn twice at the FLOP/s one chip achieves over the step, at its
FLOPs per HBM byte (circle) and at its FLOPs per byte sent (triangle); below, one chip's step as a bar.

Speed (:class:`~roofline_lessons.viz.dashboard_base.StackedChart`): the roofline's and the bar's axes
are drawn once per chart; the compute and HBM roofs and the legend once per (part, format), and the
link roof and the heading over them once per link and heading, each kept as a bitmap; a move draws
only the two points, their labels, the status and the bar.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part
from ...core.models import get_model
from ...core.parallel import Parallelism
from ...core.placement import Placement
from ...core.units import binary, count, duration, num, percent, si
from ...topics.many_chips import SplitStep, split_step
from ..charts import MIN_FONT_PT, TERA, part_style
from ..dashboard_base import ViewTexts
from ..dashboard_base import (UNHINTED, StackedChart, animated_rects, bandwidth_roof, checkbox, dashboard, dropdown,
                              look_patches, model_and_part_controls, one_of, percent_ticks, roofline_axes, set_piece,
                              slider, toggle, view_frame, whole)
from ..display import html_table
from ..fastfig import CHART_DPI, bare_figure
from ..labels import box_rows, clamp, layer_obstacles, marker_boxes, place_label, point_label, spots
from ..plots import (BOUND_ROOF, COMPUTE_ROOF_COLOUR, HBM_POINT_MARKER, LINK_POINT_MARKER, TIME_LOOK, TimeSegment,
                     _compute_format, _link_roof_look, _time_segments)
from ..panel import Frame

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
LINK_TEXT_Y = 0.595  #: where the link's name sits (under the legend)
POINT_FACE = "#F0E442"  #: Okabe–Ito yellow, black-edged: unlike every roof's colour
LABEL_GAP_PT = 9
#: where the point labels go, first choice first: the circle's below it (the HBM roof runs above-left),
#: the triangle's to its right (the link roof runs above-left of it too), else the first free spot around
HBM_SPOTS = spots(LABEL_GAP_PT, "below", "below right", "below left", "right", "left", "above", "above right",
                  "above left")
LINK_SPOTS = spots(LABEL_GAP_PT, "right", "below", "below right", "below left", "above", "above left",
                   "above right", "left")
#: how close (pixels, from the text's extent) a roof line's centre may run past a point's label before
#: it counts as touching it: the label's rounded box pads the text by 0.25 em (about 3 px at 9 pt and
#: 100 dpi), half a 2.4-pt roof is about 2 px, and 1 px of white between them
ROOF_CLEARANCE_PX = 6.0


@dataclass(frozen=True)
class Lesson11View(SplitStep, ViewTexts):
    """One setting and what it gives: the controls' values, the step's numbers (the keyword-only fields
    of :class:`~roofline_lessons.topics.many_chips.SplitStep`: seconds, bytes, FLOP/s and FLOP/byte, one
    chip's with more than one chip; the estimate's unless they say bound), the texts and the bar."""

    model_id: str
    part_id: str
    chips: object
    batch: object
    phase: object
    context_tokens: object
    prompt_tokens: object
    strategy: object
    overlap_comm: object
    model_name: str = ""
    part_name: str = ""
    label: str = ""  #: the split: "TP 2", "EP 8", "1 chip"
    compute_format: str = "bf16"
    segments: tuple[TimeSegment, ...] = ()  #: one chip's step as the bar's pieces
    table_html: str = ""


def lesson11_view(model, part, chips, batch, phase="decode", context_tokens=4096, prompt_tokens=2048,
                  strategy="tensor", overlap_comm=False) -> Lesson11View:
    """One step of ``model`` split over ``chips`` of ``part`` by ``strategy`` (tensor, pipeline or
    expert parallel), ``batch`` sequences in ``phase`` (decode with ``context_tokens`` cached, or a
    prefill of ``prompt_tokens``), communication overlapped with compute or not; and the same step
    on one chip. A setting the model or the part cannot take is an error view with the package's
    message (never an exception)."""
    args = (str(model), str(part), chips, batch, phase, context_tokens, prompt_tokens, strategy, overlap_comm)
    try:
        one_of("strategy", strategy, STRATEGIES)
        one_of("phase", phase, PHASES)
        if not isinstance(overlap_comm, (bool, np.bool_)):
            raise RooflineInputError(f"overlap_comm must be True or False, got {overlap_comm!r}")
        b = whole("batch", batch, 1, 1 << 20)
        ctx = whole("context_tokens", context_tokens, 0, 1 << 24)
        prompt = whole("prompt_tokens", prompt_tokens, 1, 1 << 24)
        m, p = get_model(model), get_part(part)
        if strategy == "expert" and not m.is_moe and chips == 1:
            # the package refuses expert parallel > 1 on a dense model; one chip says the same
            raise RooflineInputError(f"expert parallel needs a mixture-of-experts model; {m.id} is dense "
                                     "(use tensor or pipeline parallel)")
        par = Parallelism(**{strategy: chips}, overlap_comm=bool(overlap_comm))
        split = split_step(m, p, par, phase=phase, batch=b, context_tokens=ctx, prompt_tokens=prompt)
    except RooflineInputError as exc:
        return Lesson11View(*args, text=str(exc), error=str(exc))
    n = par.chips
    what = (f"{count(ctx)} tokens cached" if phase == "decode" else f"{count(prompt)}-token prompts")
    on = f"one {p.name}" if n == 1 else f"{par.label} on {n} × {p.name}"
    view = Lesson11View(
        *args[:2], n, b, phase, ctx, prompt, strategy, bool(overlap_comm), text="",
        title=f"{m.name} {phase}, batch {count(b)}, {what}: {on}", heading=f"{m.name} {phase}, {what}: {on}",
        model_name=m.name, part_name=p.name, label=par.label, compute_format=_compute_format(split.placement),
        segments=_time_segments(split.placement), **{f.name: getattr(split, f.name) for f in fields(SplitStep)})
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
        col = [duration(p.compute_time_s), duration(p.memory_time_s),
               "none" if p.comm is None else duration(p.comm_time_s)]
        if view.placement.parallelism.pipeline > 1:
            col.append(duration(p.time_estimate_s - p.stage_time_s) if p.parallelism.pipeline > 1 else "none")
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
    return view_frame(view, chart, lesson11_alt)


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


# ---- drawing ------------------------------------------------------------------------------------

def _skeleton() -> dict:
    """The figure with what no control changes: the roofline's axes (one range for every part, so
    parts compare by eye), the bar's axis and its key; and the animated artists."""
    fig = bare_figure(FIGSIZE, DPI)
    ax = roofline_axes(fig, (ROOF_BOX["left"], ROOF_BOX["bottom"], ROOF_BOX["right"] - ROOF_BOX["left"],
                             ROOF_BOX["top"] - ROOF_BOX["bottom"]), X_RANGE, Y_RANGE_TFLOPS,
                       "Intensity (FLOP per byte)", "Performance per chip (TFLOP/s)")
    bar = fig.add_axes(BAR_BOX)
    bar.set_xlim(0, 100)
    bar.set_ylim(0, 1)
    percent_ticks(bar, "x")
    bar.text(0, 2.2, "One step per chip, by the estimate (100 % = its step time):", transform=bar.transAxes,
             fontsize=MIN_FONT_PT + 1, ha="left", va="bottom")
    bar.legend(handles=look_patches(TIME_LOOK), loc="lower right", bbox_to_anchor=(1.0, 1.95), ncol=4,
               fontsize=MIN_FONT_PT, frameon=False, borderaxespad=0, handlelength=2.2, columnspacing=1.2)

    heading = fig.suptitle("", fontsize=MIN_FONT_PT + 3, x=0.5, y=0.975, animated=True)
    title = ax.set_title("", fontsize=MIN_FONT_PT + 1.5)
    title.set_animated(True)
    line, = ax.plot([], [], color="0.25", linestyle=":", linewidth=1.3, animated=True)
    hbm_pt, = ax.plot([], [], marker=HBM_POINT_MARKER, markersize=11, linestyle="none", color="black",
                      markerfacecolor=POINT_FACE, animated=True, zorder=5)
    link_pt, = ax.plot([], [], marker=LINK_POINT_MARKER, markersize=12, linestyle="none", color="black",
                       markerfacecolor=POINT_FACE, animated=True, zorder=5)
    status = fig.text(RIGHT_X, STATUS_Y, "", fontsize=MIN_FONT_PT + 1, ha="left", va="bottom", linespacing=1.4,
                      animated=True)
    bar_line = bar.text(0, 1.15, "", transform=bar.transAxes, fontsize=MIN_FONT_PT, ha="left", va="bottom",
                        animated=True)
    moving = {"rects": animated_rects(bar, 5), "line": line, "hbm_pt": hbm_pt, "link_pt": link_pt,
              "hbm_label": point_label(ax, MIN_FONT_PT), "link_label": point_label(ax, MIN_FONT_PT),
              "status": status, "bar_line": bar_line}
    return {"fig": fig, "ax": ax, "bar": bar, "heading": heading, "title": title, "moving": moving}


def _draw_part(shared: dict, view: Lesson11View) -> list:
    """The layer a part and a format draw over the skeleton: the axes' title, the compute and HBM
    roofs, the HBM ridge and the legend."""
    from matplotlib.lines import Line2D

    fig, ax, peak, fmt = shared["fig"], shared["ax"], view.peak_flops_per_s, view.compute_format
    p = get_part(view.part_id)
    look = part_style(p)
    link_look = _link_roof_look(look.colour, look.linestyle)
    bw = p.memory_bandwidth_bytes_per_s
    ridge = peak / bw
    shared["title"].set_text(f"Three roofs per chip: {p.name}, {fmt}")
    artists = [ax.axhline(peak / TERA, color=COMPUTE_ROOF_COLOUR, linewidth=2.4, animated=True),
               *bandwidth_roof(ax, bw, peak, X_RANGE[0], Y_RANGE_TFLOPS[0], f"HBM ridge {num(ridge)}", look.colour,
                               look.linestyle)]
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
    artists = [] if link_name is None else bandwidth_roof(
        ax, link_bw, peak, X_RANGE[0], Y_RANGE_TFLOPS[0], f"link ridge {num(peak / link_bw)}", colour, style, "right")
    artists.append(fig.text(RIGHT_X, LINK_TEXT_Y, link_text(link_name, link_bw, peak), fontsize=MIN_FONT_PT,
                            ha="left", va="top", linespacing=1.35, animated=True,
                            color=colour if link_name is not None else "black"))
    for a in [shared["heading"], *artists]:
        fig.draw_artist(a)
    return artists


def _bar(rects: list, view: Lesson11View) -> list:
    """Set the bar's pieces to one chip's step (as % of it); returns those shown, the full-height ones
    first (the thinner, concurrent pieces are drawn over them)."""
    for r in rects[len(view.segments):]:
        r.set_visible(False)
    for r, seg in zip(rects, view.segments):  # a thin piece outlined (and hatched) in black
        set_piece(r, seg.start_s / view.step_s * 100, 0.5 - seg.height / 2, seg.width_s / view.step_s * 100,
                  seg.height, TIME_LOOK[seg.kind], outline=seg.height != 1)
    return sorted(rects[:len(view.segments)], key=lambda r: -r.get_height())


class Lesson11Chart(StackedChart):
    """The three-roof chart and the time bar on one figure. Three levels, each kept as a bitmap: the
    skeleton (drawn once per chart), a part layer (once per part and format: its roofs and legend), a
    link layer over it (once per heading and link: the link roof), and what a move draws over them.
    ``layer_misses`` counts layers drawn (part and link)."""

    rc = UNHINTED
    skeleton = staticmethod(_skeleton)
    levels = (_draw_part, _draw_link)

    def layer_keys(self, view: Lesson11View) -> tuple:
        part = (view.part_id, view.compute_format, view.peak_flops_per_s)
        return part, (view.heading, view.link_name, view.link_bytes_per_s)

    def prepare(self, shared: dict, view: Lesson11View) -> None:
        # what the restored bitmaps show, for readers of the figure (tests)
        shared["heading"].set_text(view.heading)
        shared["title"].set_text(f"Three roofs per chip: {view.part_name}, {view.compute_format}")

    def describe(self, shared: dict, artists: list) -> tuple[np.ndarray, np.ndarray]:
        """A layer's ridge labels (boxes the point labels keep off) and its roofs and ridges (sampled)."""
        return layer_obstacles(artists, shared["ax"], shared["fig"].canvas.get_renderer())

    def move(self, shared: dict, view: Lesson11View) -> list:
        """Set the moving artists for ``view`` (the point labels clear of the shown layers' ridge labels
        and roof lines, and of the points); returns them, in the order they are drawn."""
        fig, ax, mv = shared["fig"], shared["ax"], shared["moving"]
        renderer = fig.canvas.get_renderer()
        y, _ = clamp(view.achieved_flops_per_s / TERA, *Y_RANGE_TFLOPS)
        xh, off_h = clamp(view.hbm_intensity, *X_RANGE)
        mv["hbm_pt"].set_data([xh], [y])
        points, out = [(xh, y)], [mv["hbm_pt"]]
        has_link = view.link_intensity is not None
        if has_link:
            xl, off_l = clamp(view.link_intensity, *X_RANGE)
            mv["link_pt"].set_data([xl], [y])
            mv["line"].set_data([xh, xl], [y, y])
            points.append((xl, y))
            out = [mv["line"], mv["hbm_pt"], mv["link_pt"]]
        inside = ax.get_window_extent(renderer)
        taken = np.vstack([*(boxes for boxes, _lines in self.showing), marker_boxes(ax, points, 12)])
        lines = np.vstack([samples for _boxes, samples in self.showing])
        labels = [(mv["hbm_label"], (xh, y), f"○ {num(view.hbm_intensity)} FLOP per HBM byte", off_h, HBM_SPOTS)]
        if has_link:  # the triangle first: it often sits near the right edge, where it has fewer places
            # two short lines, so that near the right edge the label still fits beside or under its triangle
            labels.insert(0, (mv["link_label"], (xl, y), f"△ {num(view.link_intensity)}\nFLOP per byte sent", off_l,
                              LINK_SPOTS))
        for label, xy, text, off, where in labels:  # each clear of the ones placed before it
            label.set_text(text + (" (off the chart)" if off else ""))
            box = place_label(label, xy, where, taken, inside, renderer, lines, clearance_px=ROOF_CLEARANCE_PX)
            taken = np.vstack([taken, box_rows([box])])
        out += [label for label, *_rest in labels[::-1]]
        mv["status"].set_text(status_text(view))
        mv["bar_line"].set_text(bar_text(view))
        return [*out, mv["status"], *_bar(mv["rects"], view), mv["bar_line"]]


def lesson11_dashboard(model: str = "llama-3.1-70b", part: str = "h100-sxm"):
    """Model, part, strategy, chips, batch, phase and overlap -> the step per chip under three roofs,
    its time breakdown, and a table against one chip."""
    chart = Lesson11Chart()
    controls = {**model_and_part_controls(model, part), "strategy": toggle("split", STRATEGIES, "tensor", "80px"),
                "chips": dropdown("chips", CHIP_CHOICES, 2, "120px"),
                "batch": slider("batch", BATCH_CHOICES, 1, "340px"), "phase": toggle("phase", PHASES, "decode", "80px"),
                "overlap": checkbox("overlap communication (best case)", False, "300px")}

    def render(model, part, strategy, chips, batch, phase, overlap):
        return lesson11_frame(lesson11_view(model, part, chips, batch, phase, strategy=strategy,
                                            overlap_comm=overlap), chart)

    return dashboard(controls, [["model", "part", "chips"], ["strategy", "phase"], ["batch", "overlap"]], render)
