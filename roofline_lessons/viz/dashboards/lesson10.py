"""Lesson 10 dashboard: batch, prompt, output and two service-level objectives (SLOs) -> where the
batch sits on the throughput–latency frontier, which batches meet both SLOs, and how one request's
end-to-end time splits between prefill (the time to first token) and decode.

The frontier is :func:`roofline_lessons.topics.serving.pareto` over batches 1 to 512: total output
tokens/s (all sequences) against the time per output token (TPOT), both estimates of one static
batch on one chip (the placement's named conventions); the text gives the lower bounds and
continuous batching's upper bound beside them. Batches whose weights, KV cache and state outgrow the part's memory are drawn dotted; the
critical batch (decode at the mid-request context reaching the ridge) is marked where it lies on the
chart. The TPOT SLO is a vertical line with the region that meets it shaded; the batches that meet
both SLOs and fit are marked with squares.

Speed: one figure per chart. What no control changes (the panels, the legend, the timeline's axis)
is drawn once and kept as a bitmap; the frontier (its axes' ranges and ticks, the curve, the batch
labels, the notes) depends on the model, the part, the prompt and the output, and is drawn over that
once per such key and kept as a bitmap too (:class:`.lesson04.Layers`). A batch or SLO move draws
only the SLO region, the squares, the operating point, the status text and the timeline bar.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part
from ...core.memory import max_batch_that_fits
from ...core.models import get_model
from ...core.units import binary, count, duration, num
from ...topics.serving import pareto, request_timeline
from ..charts import MARKERS, MIN_FONT_PT, PALETTE, padded_log_range, set_log_axis
from ..fastfig import CachedFigure, Layers, bare_figure, message_png
from ..panel import Frame, build_dashboard, model_and_part
from .lesson04 import label_placement

BATCH_CHOICES = tuple(2 ** k for k in range(10))  # 1 … 512
PROMPT_CHOICES = tuple(2 ** k for k in range(7, 16))  # 128 … 32,768
OUTPUT_CHOICES = tuple(2 ** k for k in range(4, 13))  # 16 … 4,096
#: the SLO sliders' stops, seconds
TTFT_SLO_CHOICES_S = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
TPOT_SLO_CHOICES_S = (0.010, 0.020, 0.030, 0.050, 0.100, 0.200)
#: the frontier's batches: every half power of two from 1 to 512 (the slider's stops among them)
CURVE_BATCHES = tuple(sorted({round(2 ** (k / 2)) for k in range(19)}))
#: batches labelled on the frontier
MARKED_BATCHES = (1, 8, 64, 512)
FIGSIZE = (10.5, 5.9)
PREFILL_LOOK = (PALETTE[1], "//")  #: the timeline's prefill segment: orange, hatched
DECODE_LOOK = (PALETTE[0], "")  #: the decode segment: blue, plain
MEETS_COLOUR = PALETTE[2]  #: SLO region and the squares of the batches that meet both SLOs
POINT_COLOUR = PALETTE[3]  #: the operating point
CRITICAL_COLOUR = PALETTE[4]


@dataclass(frozen=True)
class Lesson10View:
    """One setting and what it gives. Seconds, tokens, tokens/s, bytes, one chip; times and rates are
    the static batch's estimates unless named a lower or an upper bound."""

    model_id: str
    part_id: str
    batch: int
    prompt_tokens: int
    output_tokens: int
    ttft_slo_s: float
    tpot_slo_s: float
    text: str
    error: str | None = None
    title: str = ""
    model_name: str = ""
    part_name: str = ""
    ttft_s: float | None = None  #: time to first token (the prefill), seconds
    tpot_s: float | None = None  #: time per output token after the first, seconds
    e2e_s: float | None = None  #: arrival to last token, seconds
    tokens_per_s_per_sequence: float | None = None  #: output / E2E, tokens/s
    tokens_per_s: float | None = None  #: all sequences: batch × output / E2E, tokens/s
    fits: bool | None = None
    memory_required_bytes: float | None = None  #: weights + KV + state at prompt + output tokens, bytes
    capacity_bytes: float | None = None
    max_batch_that_fits: int | None = None  #: at prompt + output tokens per sequence
    meets_ttft: bool | None = None
    meets_tpot: bool | None = None
    critical_batch: int | None = None  #: decode at prompt + output // 2 reaches the ridge (None: never)
    #: the frontier at CURVE_BATCHES (arrays; seconds, tokens/s, bools)
    curve_batch: np.ndarray | None = None
    curve_ttft_s: np.ndarray | None = None
    curve_tpot_s: np.ndarray | None = None
    curve_tokens_per_s: np.ndarray | None = None
    curve_fits: np.ndarray | None = None
    curve_meets: np.ndarray | None = None  #: TTFT and TPOT within their SLOs and fits in memory
    critical_point: tuple[float, float] | None = None  #: (TPOT s, tokens/s) at the critical batch, if ≤ 512
    best_batch: int | None = None  #: the largest slider batch that meets both SLOs and fits
    best_tokens_per_s: float | None = None
    warnings: tuple[str, ...] = ()
    ttft_lower_bound_s: float | None = None  #: an idle server's TTFT lower bound, seconds
    tpot_lower_bound_s: float | None = None
    e2e_lower_bound_s: float | None = None
    tokens_per_s_upper_bound: float | None = None  #: continuous batching's steady state, all sequences, tokens/s

    @property
    def prefill_share(self) -> float:
        """TTFT / E2E (a fraction)."""
        return self.ttft_s / self.e2e_s


def _whole(name: str, value, allowed: tuple[int, int]) -> int:
    lo, hi = allowed
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating))
            or not math.isfinite(float(value)) or not float(value).is_integer() or not lo <= value <= hi):
        raise RooflineInputError(f"{name} must be a whole number from {count(lo)} to {count(hi)}, got {value!r}")
    return int(value)


def _seconds(name: str, value) -> float:
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating))
            or not math.isfinite(float(value)) or value <= 0):
        raise RooflineInputError(f"{name} must be a number of seconds > 0, got {value!r}")
    return float(value)


@lru_cache(maxsize=32)
def _frontier(model_id: str, part_id: str, prompt_tokens: int, output_tokens: int):
    """The frontier over CURVE_BATCHES, the largest batch that fits, and the critical batch's point."""
    pa = pareto(model_id, part_id, prompt_tokens=prompt_tokens, output_tokens=output_tokens, batches=CURVE_BATCHES)
    cap = int(max_batch_that_fits(model_id, part_id, prompt_tokens + output_tokens))
    crit = pa.critical_batch
    point = None
    if crit is not None and crit <= CURVE_BATCHES[-1]:
        t = request_timeline(model_id, part_id, prompt_tokens=prompt_tokens, output_tokens=output_tokens, batch=crit)
        point = (float(t.tpot_s), float(t.output_tokens_per_s))
    for arr in (pa.ttft_s, pa.tpot_s, pa.output_tokens_per_s, pa.fits_in_memory):
        arr.setflags(write=False)
    return pa, cap, point


def slo_status(meets_ttft: bool, meets_tpot: bool, ttft_s: float, tpot_s: float, ttft_slo_s: float,
               tpot_slo_s: float) -> str:
    """Which SLOs this batch meets, in a sentence with the numbers."""
    slos = f"TTFT ≤ {duration(ttft_slo_s)}, TPOT ≤ {duration(tpot_slo_s)}"
    if meets_ttft and meets_tpot:
        return f"It meets both SLOs ({slos})."
    misses = []
    if not meets_ttft:
        misses.append(f"TTFT {duration(ttft_s)} > {duration(ttft_slo_s)}")
    if not meets_tpot:
        misses.append(f"TPOT {duration(tpot_s)} > {duration(tpot_slo_s)}")
    which = "both SLOs" if len(misses) == 2 else ("the TTFT SLO" if not meets_ttft else "the TPOT SLO")
    return f"It misses {which} ({'; '.join(misses)})."


def fit_text(fits: bool, needed_bytes: float, capacity_bytes: float, cap: int, context_tokens: int) -> str:
    """Whether the batch's weights, KV cache and state at the last token fit, in a sentence."""
    if cap < 1:
        largest = "not even batch 1 fits"
    elif cap > BATCH_CHOICES[-1]:
        largest = f"more than {count(BATCH_CHOICES[-1])} sequences would fit"
    else:
        largest = f"the largest batch that fits is {count(cap)}"
    head = "Fits in" if fits else "Does NOT fit in"
    return (f"{head} {binary(capacity_bytes)}: {binary(needed_bytes)} needed for weights, KV cache and state at "
            f"{count(context_tokens)} tokens per sequence ({largest}).")


def critical_text(crit: int | None) -> str:
    if crit is None:
        return ("Decode never reaches the ridge at this context (all traffic counted, batch up to 65,536): the KV "
                "cache read grows with the batch, so there is no critical batch.")
    where = "marked on the chart" if crit <= BATCH_CHOICES[-1] else f"beyond the chart's batch {count(BATCH_CHOICES[-1])}"
    return (f"Decode at the mid-request context reaches the ridge at batch {count(crit)} (the critical batch, "
            f"{where}).")


def best_text(best: int | None, best_tokens_per_s: float | None) -> str:
    if best is None:
        return "No batch from 1 to 512 meets both SLOs and fits."
    return (f"The largest slider batch that meets both SLOs and fits (by the estimates) is {count(best)}, "
            f"{count(best_tokens_per_s)} tokens/s in all (static batch, estimate).")


def lesson10_view(model_id: str, part_id: str, batch: int, prompt_tokens: int, output_tokens: int,
                  ttft_slo_s: float, tpot_slo_s: float) -> Lesson10View:
    """``batch`` identical requests of ``prompt_tokens`` in, ``output_tokens`` out, on one chip, judged
    against a TTFT and a TPOT SLO (seconds); and the frontier over batches 1 to 512."""
    try:
        b = _whole("batch", batch, (1, 1 << 20))
        prompt = _whole("prompt_tokens", prompt_tokens, (1, 1 << 24))
        output = _whole("output_tokens", output_tokens, (2, 1 << 24))  # TPOT needs a token after the first
        ttft_slo = _seconds("ttft_slo_s", ttft_slo_s)
        tpot_slo = _seconds("tpot_slo_s", tpot_slo_s)
        model, part = get_model(model_id), get_part(part_id)
        pa, cap, crit_point = _frontier(model.id, part.id, prompt, output)
        t = request_timeline(model.id, part.id, prompt_tokens=prompt, output_tokens=output, batch=b)
    except RooflineInputError as exc:
        return Lesson10View(str(model_id), str(part_id), batch, prompt_tokens, output_tokens, ttft_slo_s, tpot_slo_s,
                            text=str(exc), error=str(exc))
    ttft, tpot, e2e = float(t.ttft_s), float(t.tpot_s), float(t.e2e_s)
    meets_ttft, meets_tpot = bool(ttft <= ttft_slo), bool(tpot <= tpot_slo)
    curve_meets = (pa.ttft_s <= ttft_slo) & (pa.tpot_s <= tpot_slo) & pa.fits_in_memory
    on_slider = np.isin(pa.batch, BATCH_CHOICES) & curve_meets
    best = int(pa.batch[on_slider][-1]) if on_slider.any() else None
    best_tps = float(pa.output_tokens_per_s[on_slider][-1]) if on_slider.any() else None
    fits = t.fits_in_memory
    per_seq, total = float(t.output_tokens_per_s_per_sequence), float(t.output_tokens_per_s)
    share = ttft / e2e
    upper = float(t.output_tokens_per_s_upper_bound)
    text = (f"Batch {count(b)}, {count(prompt)} prompt tokens and {count(output)} output tokens per request, "
            f"estimates of one static batch: TTFT {duration(ttft)}, TPOT {duration(tpot)}, E2E {duration(e2e)} "
            f"(prefill {num(share * 100)} % of it, decode {num((1 - share) * 100)} %); lower bounds "
            f"{duration(t.ttft_lower_bound_s)}, {duration(t.tpot_lower_bound_s)}, {duration(t.e2e_lower_bound_s)}. "
            + (f"Each sequence gets {num(per_seq)} tokens/s over its whole request; all {count(b)} together "
               f"{count(total)} tokens/s (estimate). " if b > 1 else
               f"The one sequence gets {num(per_seq)} tokens/s over its whole request (estimate). ")
            + f"Continuous batching with {count(b)} in flight: at most {count(upper)} tokens/s in all (upper bound without speculative decoding: one "
              f"token per sequence per step). "
            + slo_status(meets_ttft, meets_tpot, ttft, tpot, ttft_slo, tpot_slo) + " "
            + fit_text(fits, t.memory_required_bytes, t.memory_capacity_bytes, cap, prompt + output) + " "
            + best_text(best, best_tps) + " " + critical_text(pa.critical_batch))
    return Lesson10View(
        model_id=model.id, part_id=part.id, batch=b, prompt_tokens=prompt, output_tokens=output,
        ttft_slo_s=ttft_slo, tpot_slo_s=tpot_slo, text=text,
        title=f"{model.name} on {part.name}: {count(prompt)} tokens in, {count(output)} out",
        model_name=model.name, part_name=part.name, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
        tokens_per_s_per_sequence=per_seq, tokens_per_s=total, fits=fits,
        memory_required_bytes=float(t.memory_required_bytes), capacity_bytes=float(t.memory_capacity_bytes),
        max_batch_that_fits=cap, meets_ttft=meets_ttft, meets_tpot=meets_tpot, critical_batch=pa.critical_batch,
        curve_batch=pa.batch, curve_ttft_s=pa.ttft_s, curve_tpot_s=pa.tpot_s, curve_tokens_per_s=pa.output_tokens_per_s,
        curve_fits=pa.fits_in_memory, curve_meets=curve_meets, critical_point=crit_point, best_batch=best,
        best_tokens_per_s=best_tps, warnings=tuple(t.warnings), ttft_lower_bound_s=float(t.ttft_lower_bound_s),
        tpot_lower_bound_s=float(t.tpot_lower_bound_s), e2e_lower_bound_s=float(t.e2e_lower_bound_s),
        tokens_per_s_upper_bound=upper)


def lesson10_alt(view: Lesson10View) -> str:
    """What the chart says, with this setting's numbers, for a reader who cannot see it."""
    n_meet = int(view.curve_meets[np.isin(view.curve_batch, BATCH_CHOICES)].sum())
    if view.max_batch_that_fits < 1:
        dotted = "none of the batches fits in memory, so the whole curve is dotted"
    elif view.max_batch_that_fits >= BATCH_CHOICES[-1]:
        dotted = "every batch shown fits in memory"
    else:
        dotted = f"batches above {count(view.max_batch_that_fits)} do not fit in memory and are drawn dotted"
    where = ("inside" if view.meets_tpot else "outside")
    return (f"{view.title}. Above, the throughput–latency frontier for batch 1 to {count(BATCH_CHOICES[-1])}: "
            f"total output tokens/s against time per output token, static-batch estimates, both on log scales; "
            f"{dotted}. The shaded "
            f"region is TPOT at most {duration(view.tpot_slo_s)}; {n_meet} of the {len(BATCH_CHOICES)} slider "
            f"batches meet both SLOs and fit (squares). The operating point, batch {count(view.batch)}, is at TPOT "
            f"{duration(view.tpot_s)} and {count(view.tokens_per_s)} tokens/s, {where} the shaded region. "
            + slo_status(view.meets_ttft, view.meets_tpot, view.ttft_s, view.tpot_s, view.ttft_slo_s, view.tpot_slo_s)
            + f" Below, the timeline of one request: prefill (TTFT {duration(view.ttft_s)}) is "
            f"{num(view.prefill_share * 100)} % of the E2E {duration(view.e2e_s)}, decode "
            f"{num((1 - view.prefill_share) * 100)} %.")


def lesson10_frame(view: Lesson10View, chart: Lesson10Chart) -> Frame:
    """The verdict, the chart and its alt text for one setting; an error view shows its error once."""
    if view.error is not None:
        return Frame(verdict=view.error, png=None, alt="", error=True)
    return Frame(verdict=view.text, png=chart.png(view), alt=lesson10_alt(view), notes=view.warnings)


# ---- drawing ------------------------------------------------------------------------------------

#: where the panels sit in the figure (fractions)
PARETO_BOX = {"left": 0.095, "right": 0.655, "bottom": 0.33, "top": 0.87}
TIMELINE_BOX = (0.095, 0.07, 0.88, 0.06)  # left, bottom, width, height
RIGHT_COLUMN_X = 0.685
STATUS_TOP = 0.58  #: the right column below the legend: the live SLO status, then the key's notes
NOTE_TOP = 0.37


def _skeleton() -> dict:
    """The figure with everything no control changes: the two panels, the timeline's axis, the
    legend; and the animated artists (the frontier layer's and the moving ones), drawn over it."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    fig = bare_figure(FIGSIZE)
    ax = fig.add_axes((PARETO_BOX["left"], PARETO_BOX["bottom"], PARETO_BOX["right"] - PARETO_BOX["left"],
                       PARETO_BOX["top"] - PARETO_BOX["bottom"]))
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):  # their ranges follow the frontier: drawn with its layer
        axis.set_animated(True)
        axis.set_major_locator(NullLocator())  # no ticks to lay out until then
        axis.set_minor_locator(NullLocator())
    ax.set_xlabel("Time per output token, TPOT, estimate (ms)")
    ax.set_ylabel("Total output, static batch estimate (tokens/s)")
    ax.set_title("Throughput vs latency, batch 1 to 512", y=1.0, pad=6)
    ax.grid(True, alpha=0.4)

    tl = fig.add_axes(TIMELINE_BOX)
    tl.set_xlim(0, 100)
    tl.set_ylim(0, 1)
    tl.xaxis.set_major_locator(FixedLocator([0, 25, 50, 75, 100]))
    tl.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.0f} %"))
    tl.yaxis.set_major_locator(NullLocator())
    tl.tick_params(axis="x", labelsize=MIN_FONT_PT)

    heading = fig.suptitle("", fontsize=12, x=0.5, y=0.975, animated=True)
    # moving artists
    region = Rectangle((0, 0), 0, 1, transform=ax.get_xaxis_transform(), facecolor=MEETS_COLOUR, alpha=0.14,
                       edgecolor="none", animated=True, zorder=0.5)
    ax.add_patch(region)
    slo_line = ax.axvline(1, color=MEETS_COLOUR, linewidth=1.8, linestyle="--", animated=True)
    meets, = ax.plot([], [], marker=MARKERS[1], markersize=9, linestyle="none", markerfacecolor="none",
                     markeredgecolor=MEETS_COLOUR, markeredgewidth=2, animated=True)
    point, = ax.plot([], [], marker=MARKERS[0], markersize=11, linestyle="none", color="black",
                     markerfacecolor=POINT_COLOUR, animated=True, zorder=5)
    status = fig.text(RIGHT_COLUMN_X, STATUS_TOP, "", fontsize=MIN_FONT_PT + 1, va="top", ha="left", animated=True,
                      linespacing=1.4)
    prefill = Rectangle((0, 0), 0, 1, facecolor=PREFILL_LOOK[0], hatch=PREFILL_LOOK[1], edgecolor="white",
                        linewidth=0, animated=True)
    decode = Rectangle((0, 0), 0, 1, facecolor=DECODE_LOOK[0], hatch=DECODE_LOOK[1], edgecolor="white",
                       linewidth=0, animated=True)
    tl.add_patch(prefill)
    tl.add_patch(decode)
    # above the bar: the title, then prefill's label over its left end and decode's over its right end
    tl_title = tl.text(0, 1.8, "", transform=tl.transAxes, fontsize=MIN_FONT_PT + 1, ha="left", va="bottom",
                       animated=True)
    tl_left = tl.text(0, 1.12, "", transform=tl.transAxes, fontsize=MIN_FONT_PT, ha="left", va="bottom",
                      animated=True)
    tl_right = tl.text(1, 1.12, "", transform=tl.transAxes, fontsize=MIN_FONT_PT, ha="right", va="bottom",
                       animated=True)

    style_legend = [
        Line2D([], [], color=PALETTE[0], linewidth=2.2, label="fits in memory"),
        Line2D([], [], color="0.45", linewidth=2, linestyle=":", label="does not fit"),
        Patch(facecolor=MEETS_COLOUR, alpha=0.3, edgecolor=MEETS_COLOUR, linestyle="--", label="TPOT within its SLO"),
        Line2D([], [], marker=MARKERS[1], linestyle="none", markerfacecolor="none", markeredgecolor=MEETS_COLOUR,
               markeredgewidth=2, markersize=8, label="meets both SLOs, fits"),
        Line2D([], [], marker=MARKERS[0], linestyle="none", color="black", markerfacecolor=POINT_COLOUR,
               markersize=9, label="this batch (hollow: does not fit)"),
        Line2D([], [], marker=MARKERS[3], linestyle="none", color="black", markerfacecolor=CRITICAL_COLOUR,
               markersize=8, label="critical batch (when it lies on the curve)"),
        Patch(facecolor=PREFILL_LOOK[0], hatch=PREFILL_LOOK[1], edgecolor="white", label="prefill (TTFT)"),
        Patch(facecolor=DECODE_LOOK[0], edgecolor="white", label="decode"),
    ]
    fig.legend(handles=style_legend, loc="upper left", bbox_to_anchor=(RIGHT_COLUMN_X - 0.01, PARETO_BOX["top"]),
               fontsize=MIN_FONT_PT, frameon=False, borderaxespad=0, handlelength=2.2)
    return {"fig": fig, "axes": (ax, tl), "heading": heading,
            "moving": {"region": region, "slo_line": slo_line, "meets": meets, "point": point, "status": status,
                       "prefill": prefill, "decode": decode, "tl_title": tl_title, "tl_left": tl_left,
                       "tl_right": tl_right},
            "layer": []}


def frontier_limits(tpot_s: np.ndarray, tokens_per_s: np.ndarray):
    """The frontier panel's x range (ms) and y range (tokens/s): the curve, padded so its batch
    labels stay inside."""
    xlim = padded_log_range(float(np.min(tpot_s)) * 1e3, float(np.max(tpot_s)) * 1e3, 1.3, 1.8)
    ylim = padded_log_range(float(np.min(tokens_per_s)), float(np.max(tokens_per_s)), 1.6, 1.6)
    return xlim, ylim


def frontier_note(crit: int | None, crit_on_chart: bool, cap: int) -> str:
    """The lines under the status beside the chart: the critical batch and the memory cap."""
    if crit is None:
        note = "Critical batch: none at this context\n(the KV cache keeps decode memory-bound)"
    elif not crit_on_chart:
        note = f"Critical batch: {count(crit)},\nbeyond the chart's {count(BATCH_CHOICES[-1])}"
    else:
        note = f"Critical batch: {count(crit)} (diamond)"
    if cap < 1:
        return note + "\nNot even batch 1 fits in memory"
    if cap < BATCH_CHOICES[-1]:
        return note + f"\nLargest batch that fits: {count(cap)}"
    return note


def _draw_frontier(shared: dict, view: Lesson10View) -> None:
    """The layer one (model, part, prompt, output) draws over the skeleton: the title, the frontier's
    axes, its curve (dotted where it does not fit), batch labels, critical batch and notes."""
    fig = shared["fig"]
    ax, _tl = shared["axes"]
    batch, tpot_ms, tps = view.curve_batch, view.curve_tpot_s * 1e3, view.curve_tokens_per_s
    fits = view.curve_fits
    shared["heading"].set_text(view.title)
    xlim, ylim = frontier_limits(view.curve_tpot_s, tps)
    set_log_axis(ax.xaxis, *xlim)
    set_log_axis(ax.yaxis, *ylim)
    artists = []
    if fits.any():
        last = int(np.nonzero(fits)[0][-1])
        artists += ax.plot(tpot_ms[:last + 1], tps[:last + 1], color=PALETTE[0], linewidth=2.2, marker=".",
                           markersize=5, animated=True)
    if not fits.all():
        start = max(int(fits.sum()) - 1, 0)
        artists += ax.plot(tpot_ms[start:], tps[start:], color="0.45", linewidth=2, linestyle=":", marker=".",
                           markersize=5, animated=True)
    box = ax.bbox.extents
    for b in MARKED_BATCHES:
        i = int(np.nonzero(batch == b)[0][0])
        offset, ha, va = label_placement(ax.transData.transform((tpot_ms[i], tps[i])), box)
        artists.append(ax.annotate(f"B={count(b)}", (tpot_ms[i], tps[i]), textcoords="offset points", xytext=offset,
                                   ha=ha, va=va, fontsize=MIN_FONT_PT, animated=True))
    if view.critical_point is not None:
        artists += ax.plot([view.critical_point[0] * 1e3], [view.critical_point[1]], marker=MARKERS[3], markersize=9,
                           linestyle="none", color="black", markerfacecolor=CRITICAL_COLOUR, zorder=4, animated=True)
    artists.append(fig.text(RIGHT_COLUMN_X, NOTE_TOP, frontier_note(view.critical_batch,
                                                                    view.critical_point is not None,
                                                                    view.max_batch_that_fits),
                            fontsize=MIN_FONT_PT, ha="left", va="top", linespacing=1.35, animated=True))
    for a in shared["layer"]:  # the previous layer's artists live on in its bitmap only
        a.remove()
    shared["layer"] = artists
    for a in [shared["heading"], ax.xaxis, ax.yaxis, *artists, *ax.spines.values()]:
        fig.draw_artist(a)


class Lesson10Chart:
    """The frontier and the timeline bar on one figure. Three levels, each kept as a bitmap: the
    skeleton (drawn once per chart), the frontier layer (once per model, part, prompt and output),
    and what a batch or SLO move draws over them. ``layer_misses`` counts frontier layers drawn."""

    def __init__(self) -> None:
        self._shared: dict | None = None
        self.figures = CachedFigure(self._build, max_cached=1)
        self.last_figure = None
        self.layer_misses = 0

    def _build(self, _key):
        self._shared = _skeleton()
        return self._shared["fig"], {"shared": self._shared, "fig": self._shared["fig"], "layers": Layers(16)}

    def png(self, view: Lesson10View) -> bytes:
        if view.error is not None:
            return message_png(view.text)
        layer_key = (view.title, view.part_id, view.curve_tpot_s.tobytes(), view.curve_tokens_per_s.tobytes(),
                     view.curve_fits.tobytes(), view.max_batch_that_fits, view.critical_batch, view.critical_point)

        def update(state):
            shared = state["shared"]
            ax, _tl = shared["axes"]
            mv = shared["moving"]
            fig = state["fig"]
            self.last_figure = fig
            xlim, ylim = frontier_limits(view.curve_tpot_s, view.curve_tokens_per_s)
            ax.set_xlim(*xlim)  # the axes are shared between layers: this layer's ranges
            ax.set_ylim(*ylim)

            def draw_layer():
                self.layer_misses += 1
                _draw_frontier(shared, view)

            state["layers"].show(fig, layer_key, draw_layer)
            lo = xlim[0] / 10  # left of the axes: the region's left edge never shows
            slo_ms = view.tpot_slo_s * 1e3
            mv["region"].set_x(lo)
            mv["region"].set_width(max(slo_ms - lo, 0.0))
            mv["slo_line"].set_xdata([slo_ms, slo_ms])
            mv["slo_line"].set_visible(xlim[0] < slo_ms < xlim[1])
            meets = view.curve_meets & np.isin(view.curve_batch, BATCH_CHOICES)
            mv["meets"].set_data(view.curve_tpot_s[meets] * 1e3, view.curve_tokens_per_s[meets])
            mv["point"].set_data([view.tpot_s * 1e3], [view.tokens_per_s])
            mv["point"].set_markerfacecolor(POINT_COLOUR if view.fits else "white")
            mv["status"].set_text(status_lines(view, xlim))
            share = view.prefill_share * 100
            mv["prefill"].set_width(share)
            mv["decode"].set_x(share)
            mv["decode"].set_width(100 - share)
            mv["tl_title"].set_text(f"One request at batch {count(view.batch)}: E2E {duration(view.e2e_s)} (estimate)")
            mv["tl_left"].set_text(f"prefill (TTFT) {duration(view.ttft_s)}, {num(share)} % of E2E")
            mv["tl_right"].set_text(f"decode {count(view.output_tokens - 1)} tokens × {duration(view.tpot_s)}, "
                                    f"{num(100 - share)} %")
            return [mv["region"], mv["slo_line"], mv["meets"], mv["point"], mv["status"], mv["prefill"],
                    mv["decode"], mv["tl_title"], mv["tl_left"], mv["tl_right"]]

        return self.figures.render("skeleton", update)


def status_lines(view: Lesson10View, xlim_ms) -> str:
    """The status beside the chart: the SLOs, this batch's verdict against them."""
    slo_ms = view.tpot_slo_s * 1e3
    off = ("right of the chart:\nevery batch meets it" if slo_ms >= xlim_ms[1]
           else "left of the chart:\nno batch meets it" if slo_ms <= xlim_ms[0] else "")
    if view.meets_ttft and view.meets_tpot:
        verdict = f"Batch {count(view.batch)}: meets both SLOs"
    else:
        missed = [n for n, ok in (("TTFT", view.meets_ttft), ("TPOT", view.meets_tpot)) if not ok]
        verdict = f"Batch {count(view.batch)}: misses {' and '.join(missed)}"
    if not view.fits:
        verdict += "\nand does NOT fit in memory"
    return (f"SLOs: TTFT ≤ {duration(view.ttft_slo_s)}, TPOT ≤ {duration(view.tpot_slo_s)}"
            + (f"\nTPOT SLO {off}" if off else "") + "\n" + verdict)


def lesson10_dashboard(model_id: str = "llama-3.1-8b", part_id: str = "h100-sxm"):
    """Model, part, batch, prompt, output and the two SLO sliders -> the frontier, the SLO region,
    the operating point and one request's timeline."""
    import ipywidgets as widgets
    from IPython.display import display

    style = {"description_width": "initial"}
    model_w, part_w = model_and_part(model_id, part_id, style)
    batch_w = widgets.SelectionSlider(options=BATCH_CHOICES, value=32, description="batch", style=style,
                                      layout=widgets.Layout(width="340px"))
    prompt_w = widgets.SelectionSlider(options=[(count(v), v) for v in PROMPT_CHOICES], value=1024,
                                       description="prompt (tokens)", style=style, layout=widgets.Layout(width="400px"))
    output_w = widgets.SelectionSlider(options=[(count(v), v) for v in OUTPUT_CHOICES], value=256,
                                       description="output (tokens)", style=style, layout=widgets.Layout(width="400px"))
    ttft_w = widgets.SelectionSlider(options=[(duration(v), v) for v in TTFT_SLO_CHOICES_S], value=1.0,
                                     description="TTFT SLO", style=style, layout=widgets.Layout(width="340px"))
    tpot_w = widgets.SelectionSlider(options=[(duration(v), v) for v in TPOT_SLO_CHOICES_S], value=0.050,
                                     description="TPOT SLO", style=style, layout=widgets.Layout(width="400px"))
    chart = Lesson10Chart()

    def render(model, part, batch, prompt, output, ttft_slo, tpot_slo):
        return lesson10_frame(lesson10_view(model, part, batch, prompt, output, ttft_slo, tpot_slo), chart)

    ui = build_dashboard({"model": model_w, "part": part_w, "batch": batch_w, "prompt": prompt_w, "output": output_w,
                          "ttft_slo": ttft_w, "tpot_slo": tpot_w},
                         [["model", "part", "batch"], ["prompt", "output"], ["ttft_slo", "tpot_slo"]], render)
    display(ui)
    return ui
