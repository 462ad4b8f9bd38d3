"""Lesson 10 dashboard: batch, prompt, output and two service-level objectives (SLOs) -> where the
batch sits on the throughput–latency frontier, which batches meet both SLOs, and how one request's
end-to-end time splits between prefill (the time to first token) and decode.

The frontier is :func:`roofline_lessons.topics.serving.frontier` over batches 1 to 512: total output
tokens/s (all sequences) against the time per output token (TPOT), both estimates of one static
batch on one chip (the placement's named conventions); the text gives the lower bounds and
continuous batching's upper bound beside them. Batches whose weights, KV cache and state outgrow the
part's memory are drawn dotted; the critical batch (decode at the mid-request context reaching the
ridge) is marked where it lies on the chart. The TPOT SLO is a vertical line with the region that meets
it shaded; the batches that meet both SLOs and fit are marked with squares.

Speed (:class:`~roofline_lessons.viz.dashboard_base.StackedChart`): the panels, the legend and the
timeline's axis are drawn once; the frontier layer (its axes' ranges, the curve, the batch labels, the
notes) once per model, part, prompt and output; a batch or SLO move draws only what moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part
from ...core.models import get_model
from ...core.units import binary, count, duration, num
from ...topics.serving import Frontier, RequestTimeline, frontier, request_timeline
from ..charts import MARKERS, MIN_FONT_PT, PALETTE, padded_log_range, set_log_axis
from ..dashboard_base import ViewTexts
from ..dashboard_base import (StackedChart, dashboard, fit_curve, layer_axes, line_key, look_patches,
                              model_and_part_controls, moving_marker, moving_text, percent_ticks, point_key, positive,
                              slider, view_frame, whole)
from ..fastfig import bare_figure
from ..labels import curve_labels
from ..panel import Frame

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
class Lesson10View(ViewTexts):
    """One setting and what it gives. Seconds, tokens, tokens/s, bytes, one chip; times and rates are
    the static batch's estimates unless named a lower or an upper bound. The request's numbers are
    ``timeline``'s and the frontier's ``frontier``'s, read by the names below; an error view has neither."""

    model_id: str
    part_id: str
    batch: int
    prompt_tokens: int
    output_tokens: int
    ttft_slo_s: float
    tpot_slo_s: float
    timeline: RequestTimeline | None = None  #: this batch's request: estimates, lower bounds, memory
    frontier: Frontier | None = None  #: the frontier at CURVE_BATCHES, the largest batch that fits, the critical point
    meets_ttft: bool | None = None
    meets_tpot: bool | None = None
    curve_meets: np.ndarray | None = None  #: TTFT and TPOT within their SLOs and fits in memory
    best_batch: int | None = None  #: the largest slider batch that meets both SLOs and fits
    best_tokens_per_s: float | None = None

    ttft_s = property(lambda v: float(v.timeline.ttft_s), doc="time to first token (the prefill), seconds")
    tpot_s = property(lambda v: float(v.timeline.tpot_s), doc="time per output token after the first, seconds")
    e2e_s = property(lambda v: float(v.timeline.e2e_s), doc="arrival to last token, seconds")
    tokens_per_s = property(lambda v: float(v.timeline.output_tokens_per_s), doc="all sequences: batch × output / E2E")
    fits = property(lambda v: bool(v.timeline.fits_in_memory), doc="weights + KV + state at prompt + output tokens")
    warnings = property(lambda v: tuple(v.timeline.warnings) if v.timeline is not None else ())
    curve_batch = property(lambda v: v.frontier.pareto.batch)
    curve_tpot_s = property(lambda v: v.frontier.pareto.tpot_s)
    curve_tokens_per_s = property(lambda v: v.frontier.pareto.output_tokens_per_s)
    curve_fits = property(lambda v: v.frontier.pareto.fits_in_memory)
    max_batch_that_fits = property(lambda v: v.frontier.max_batch_that_fits, doc="at prompt + output tokens")
    critical_batch = property(lambda v: v.frontier.pareto.critical_batch,
                              doc="decode at prompt + output // 2 reaches the ridge (None: never)")
    critical_point = property(lambda v: v.frontier.critical_point, doc="(TPOT s, tokens/s) at the critical batch")
    prefill_share = property(lambda v: v.ttft_s / v.e2e_s, doc="TTFT / E2E (a fraction)")


#: the frontier of one (model, part, prompt, output), kept while the batch and the SLOs move
_frontier = lru_cache(maxsize=32)(frontier)


def slo_status(meets_ttft: bool, meets_tpot: bool, ttft_s: float, tpot_s: float, ttft_slo_s: float,
               tpot_slo_s: float) -> str:
    """Which SLOs this batch meets, in a sentence with the numbers."""
    slos = f"TTFT ≤ {duration(ttft_slo_s)}, TPOT ≤ {duration(tpot_slo_s)}"
    if meets_ttft and meets_tpot:
        return f"It meets both SLOs ({slos})."
    misses = [f"{name} {duration(value)} > {duration(slo)}" for name, ok, value, slo in
              (("TTFT", meets_ttft, ttft_s, ttft_slo_s), ("TPOT", meets_tpot, tpot_s, tpot_slo_s)) if not ok]
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
    where = ("marked on the chart" if crit <= BATCH_CHOICES[-1]
             else f"beyond the chart's batch {count(BATCH_CHOICES[-1])}")
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
        b = whole("batch", batch, 1, 1 << 20)
        prompt = whole("prompt_tokens", prompt_tokens, 1, 1 << 24)
        output = whole("output_tokens", output_tokens, 2, 1 << 24)  # TPOT needs a token after the first
        ttft_slo = positive("ttft_slo_s", ttft_slo_s, "seconds")
        tpot_slo = positive("tpot_slo_s", tpot_slo_s, "seconds")
        model, part = get_model(model_id), get_part(part_id)
        fr = _frontier(model.id, part.id, prompt, output, CURVE_BATCHES)
        t = request_timeline(model.id, part.id, prompt_tokens=prompt, output_tokens=output, batch=b)
    except RooflineInputError as exc:
        return Lesson10View(str(model_id), str(part_id), batch, prompt_tokens, output_tokens, ttft_slo_s, tpot_slo_s,
                            text=str(exc), error=str(exc))
    ttft, tpot, e2e = float(t.ttft_s), float(t.tpot_s), float(t.e2e_s)
    meets_ttft, meets_tpot = bool(ttft <= ttft_slo), bool(tpot <= tpot_slo)
    curve_meets = fr.meets(ttft_slo, tpot_slo)
    best, best_tps = fr.largest_meeting(ttft_slo, tpot_slo, BATCH_CHOICES)
    per_seq, total = float(t.output_tokens_per_s_per_sequence), float(t.output_tokens_per_s)
    share = ttft / e2e
    text = (f"Batch {count(b)}, {count(prompt)} prompt tokens and {count(output)} output tokens per request, "
            f"estimates of one static batch: TTFT {duration(ttft)}, TPOT {duration(tpot)}, E2E {duration(e2e)} "
            f"(prefill {num(share * 100)} % of it, decode {num((1 - share) * 100)} %); lower bounds "
            f"{duration(t.ttft_lower_bound_s)}, {duration(t.tpot_lower_bound_s)}, {duration(t.e2e_lower_bound_s)}. "
            + (f"Each sequence gets {num(per_seq)} tokens/s over its whole request; all {count(b)} together "
               f"{count(total)} tokens/s (estimate). " if b > 1 else
               f"The one sequence gets {num(per_seq)} tokens/s over its whole request (estimate). ")
            + f"Continuous batching with {count(b)} in flight: at most {count(t.output_tokens_per_s_upper_bound)} "
              "tokens/s in all (upper bound without speculative decoding: one token per sequence per step). "
            + slo_status(meets_ttft, meets_tpot, ttft, tpot, ttft_slo, tpot_slo) + " "
            + fit_text(t.fits_in_memory, t.memory_required_bytes, t.memory_capacity_bytes, fr.max_batch_that_fits,
                       prompt + output)
            + " " + best_text(best, best_tps) + " " + critical_text(fr.pareto.critical_batch))
    return Lesson10View(model.id, part.id, b, prompt, output, ttft_slo, tpot_slo, text=text,
                        title=f"{model.name} on {part.name}: {count(prompt)} tokens in, {count(output)} out",
                        timeline=t, frontier=fr, meets_ttft=meets_ttft, meets_tpot=meets_tpot, curve_meets=curve_meets,
                        best_batch=best, best_tokens_per_s=best_tps)


def lesson10_alt(view: Lesson10View) -> str:
    """What the chart says, with this setting's numbers, for a reader who cannot see it."""
    n_meet = int(view.curve_meets[np.isin(view.curve_batch, BATCH_CHOICES)].sum())
    if view.max_batch_that_fits < 1:
        dotted = "none of the batches fits in memory, so the whole curve is dotted"
    elif view.max_batch_that_fits >= BATCH_CHOICES[-1]:
        dotted = "every batch shown fits in memory"
    else:
        dotted = f"batches above {count(view.max_batch_that_fits)} do not fit in memory and are drawn dotted"
    return (f"{view.title}. Above, the throughput–latency frontier for batch 1 to {count(BATCH_CHOICES[-1])}: "
            f"total output tokens/s against time per output token, static-batch estimates, both on log scales; "
            f"{dotted}. The shaded region is TPOT at most {duration(view.tpot_slo_s)}; {n_meet} of the "
            f"{len(BATCH_CHOICES)} slider batches meet both SLOs and fit (squares). The operating point, batch "
            f"{count(view.batch)}, is at TPOT {duration(view.tpot_s)} and {count(view.tokens_per_s)} tokens/s, "
            f"{'inside' if view.meets_tpot else 'outside'} the shaded region. "
            + slo_status(view.meets_ttft, view.meets_tpot, view.ttft_s, view.tpot_s, view.ttft_slo_s, view.tpot_slo_s)
            + f" Below, the timeline of one request: prefill (TTFT {duration(view.ttft_s)}) is "
            f"{num(view.prefill_share * 100)} % of the E2E {duration(view.e2e_s)}, decode "
            f"{num((1 - view.prefill_share) * 100)} %.")


def lesson10_frame(view: Lesson10View, chart: Lesson10Chart) -> Frame:
    """The verdict, the chart and its alt text for one setting; an error view shows its error once."""
    return view_frame(view, chart, lesson10_alt)


# ---- drawing ------------------------------------------------------------------------------------

#: where the panels sit in the figure (fractions)
PARETO_BOX = {"left": 0.095, "right": 0.655, "bottom": 0.33, "top": 0.87}
TIMELINE_BOX = (0.095, 0.07, 0.88, 0.06)  # left, bottom, width, height
RIGHT_COLUMN_X = 0.685
STATUS_TOP = 0.58  #: the right column below the legend: the live SLO status, then the key's notes
NOTE_TOP = 0.37


def frontier_limits(tpot_s: np.ndarray, tokens_per_s: np.ndarray):
    """The frontier panel's x range (ms) and y range (tokens/s): the curve, padded so its batch
    labels stay inside."""
    return (padded_log_range(float(np.min(tpot_s)) * 1e3, float(np.max(tpot_s)) * 1e3, 1.3, 1.8),
            padded_log_range(float(np.min(tokens_per_s)), float(np.max(tokens_per_s)), 1.6, 1.6))


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


class Lesson10Chart(StackedChart):
    """The frontier and the timeline bar on one figure. Three levels, each kept as a bitmap: the
    skeleton (drawn once per chart), the frontier layer (once per model, part, prompt and output),
    and what a batch or SLO move draws over them. ``layer_misses`` counts frontier layers drawn."""

    level_sizes = (16,)

    def skeleton(self) -> dict:
        """The figure with everything no control changes: the two panels, the timeline's axis, the
        legend; and the animated artists (the frontier layer's and the moving ones), drawn over it."""
        from matplotlib.patches import Patch, Rectangle

        fig = bare_figure(FIGSIZE)
        ax = fig.add_axes((PARETO_BOX["left"], PARETO_BOX["bottom"], PARETO_BOX["right"] - PARETO_BOX["left"],
                           PARETO_BOX["top"] - PARETO_BOX["bottom"]))
        ax.set_xscale("log")
        ax.set_yscale("log")
        layer_axes(ax)  # their ranges follow the frontier: drawn with its layer
        ax.set_xlabel("Time per output token, TPOT, estimate (ms)")
        ax.set_ylabel("Total output, static batch estimate (tokens/s)")
        ax.set_title("Throughput vs latency, batch 1 to 512", y=1.0, pad=6)
        ax.grid(True, alpha=0.4)
        tl = fig.add_axes(TIMELINE_BOX, xlim=(0, 100), ylim=(0, 1))
        percent_ticks(tl, "x")
        heading = fig.suptitle("", fontsize=12, x=0.5, y=0.975, animated=True)
        # what moves, in the order it is drawn
        mv = {"region": Rectangle((0, 0), 0, 1, transform=ax.get_xaxis_transform(), facecolor=MEETS_COLOUR,
                                  alpha=0.14, edgecolor="none", animated=True, zorder=0.5)}
        ax.add_patch(mv["region"])
        mv["slo_line"] = ax.axvline(1, color=MEETS_COLOUR, linewidth=1.8, linestyle="--", animated=True)
        mv["meets"], = ax.plot([], [], marker=MARKERS[1], markersize=9, linestyle="none", markerfacecolor="none",
                               markeredgecolor=MEETS_COLOUR, markeredgewidth=2, animated=True)
        mv["point"] = moving_marker(ax, MARKERS[0], POINT_COLOUR, 11, zorder=5)
        mv["status"] = moving_text(fig, RIGHT_COLUMN_X, STATUS_TOP, MIN_FONT_PT + 1, va="top", ha="left",
                                   linespacing=1.4)
        for name, (colour, hatch) in (("prefill", PREFILL_LOOK), ("decode", DECODE_LOOK)):
            mv[name] = tl.add_patch(Rectangle((0, 0), 0, 1, facecolor=colour, hatch=hatch, edgecolor="white",
                                              linewidth=0, animated=True))
        # above the bar: the title, then prefill's label over its left end and decode's over its right end
        mv["tl_title"] = moving_text(tl, 0, 1.8, MIN_FONT_PT + 1, transform=tl.transAxes, ha="left", va="bottom")
        mv["tl_left"] = moving_text(tl, 0, 1.12, transform=tl.transAxes, ha="left", va="bottom")
        mv["tl_right"] = moving_text(tl, 1, 1.12, transform=tl.transAxes, ha="right", va="bottom")
        fig.legend(handles=[
            line_key("fits in memory", PALETTE[0], linewidth=2.2), line_key("does not fit", "0.45", ":", 2),
            Patch(facecolor=MEETS_COLOUR, alpha=0.3, edgecolor=MEETS_COLOUR, linestyle="--",
                  label="TPOT within its SLO"),
            point_key(MARKERS[1], "meets both SLOs, fits", "none", markeredgecolor=MEETS_COLOUR, markeredgewidth=2),
            point_key(MARKERS[0], "this batch (hollow: does not fit)", POINT_COLOUR, 9),
            point_key(MARKERS[3], "critical batch (when it lies on the curve)", CRITICAL_COLOUR),
            *look_patches({"prefill (TTFT)": (*PREFILL_LOOK, "white"), "decode": (*DECODE_LOOK, "white")}),
        ], loc="upper left", bbox_to_anchor=(RIGHT_COLUMN_X - 0.01, PARETO_BOX["top"]), fontsize=MIN_FONT_PT,
            frameon=False, borderaxespad=0, handlelength=2.2)
        return {"fig": fig, "axes": (ax, tl), "heading": heading, "moving": mv}

    def layer_keys(self, view: Lesson10View) -> tuple:
        return ((view.model_id, view.part_id, view.prompt_tokens, view.output_tokens),)  # what the frontier follows

    def prepare(self, shared: dict, view: Lesson10View) -> None:
        """The frontier's ranges (ms, tokens/s) on its axes, which every layer shares, before its bitmap."""
        shared["limits"] = xlim, ylim = frontier_limits(view.curve_tpot_s, view.curve_tokens_per_s)
        shared["axes"][0].set(xlim=xlim, ylim=ylim)

    def draw_level(self, shared: dict, view: Lesson10View, level: int) -> list:
        """The layer one (model, part, prompt, output) draws over the skeleton: the title, the
        frontier's axes, its curve (dotted where it does not fit), batch labels, critical batch and notes."""
        fig, heading = shared["fig"], shared["heading"]
        ax, _tl = shared["axes"]
        batch, tpot_ms, tps = view.curve_batch, view.curve_tpot_s * 1e3, view.curve_tokens_per_s
        heading.set_text(view.title)
        set_log_axis(ax.xaxis, *shared["limits"][0])
        set_log_axis(ax.yaxis, *shared["limits"][1])
        artists = fit_curve(ax, tpot_ms, tps, view.curve_fits, marker=".", markersize=5)
        marked = [int(np.nonzero(batch == b)[0][0]) for b in MARKED_BATCHES]
        artists += curve_labels(ax, zip(tpot_ms[marked], tps[marked]), [f"B={count(b)}" for b in MARKED_BATCHES],
                                MIN_FONT_PT)
        if view.critical_point is not None:
            artists += ax.plot([view.critical_point[0] * 1e3], [view.critical_point[1]], marker=MARKERS[3],
                               markersize=9, linestyle="none", color="black", markerfacecolor=CRITICAL_COLOUR,
                               zorder=4, animated=True)
        note = frontier_note(view.critical_batch, view.critical_point is not None, view.max_batch_that_fits)
        artists.append(fig.text(RIGHT_COLUMN_X, NOTE_TOP, note, fontsize=MIN_FONT_PT, ha="left", va="top",
                                linespacing=1.35, animated=True))
        for a in [heading, ax.xaxis, ax.yaxis, *artists, *ax.spines.values()]:
            fig.draw_artist(a)
        return artists

    def move(self, shared: dict, view: Lesson10View) -> list:
        """The SLO region and line, the squares, the operating point, the status and the timeline."""
        mv, xlim = shared["moving"], shared["limits"][0]
        lo = xlim[0] / 10  # left of the axes: the region's left edge never shows
        slo_ms = view.tpot_slo_s * 1e3
        mv["region"].set_bounds(lo, 0, max(slo_ms - lo, 0.0), 1)
        mv["slo_line"].set_xdata([slo_ms, slo_ms])
        mv["slo_line"].set_visible(xlim[0] < slo_ms < xlim[1])
        meets = view.curve_meets & np.isin(view.curve_batch, BATCH_CHOICES)
        mv["meets"].set_data(view.curve_tpot_s[meets] * 1e3, view.curve_tokens_per_s[meets])
        mv["point"].set_data([view.tpot_s * 1e3], [view.tokens_per_s])
        mv["point"].set_markerfacecolor(POINT_COLOUR if view.fits else "white")
        mv["status"].set_text(status_lines(view, xlim))
        share = view.prefill_share * 100
        mv["prefill"].set_width(share)
        mv["decode"].set_bounds(share, 0, 100 - share, 1)
        mv["tl_title"].set_text(f"One request at batch {count(view.batch)}: E2E {duration(view.e2e_s)} (estimate)")
        mv["tl_left"].set_text(f"prefill (TTFT) {duration(view.ttft_s)}, {num(share)} % of E2E")
        mv["tl_right"].set_text(f"decode {count(view.output_tokens - 1)} tokens × {duration(view.tpot_s)}, "
                                f"{num(100 - share)} %")
        return list(mv.values())


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
    chart = Lesson10Chart()
    controls = {**model_and_part_controls(model_id, part_id), "batch": slider("batch", BATCH_CHOICES, 32, "340px"),
                "prompt": slider("prompt (tokens)", PROMPT_CHOICES, 1024, "400px"),
                "output": slider("output (tokens)", OUTPUT_CHOICES, 256, "400px"),
                "ttft_slo": slider("TTFT SLO", TTFT_SLO_CHOICES_S, 1.0, "340px", fmt=duration),
                "tpot_slo": slider("TPOT SLO", TPOT_SLO_CHOICES_S, 0.050, "400px", fmt=duration)}
    return dashboard(controls, [["model", "part", "batch"], ["prompt", "output"], ["ttft_slo", "tpot_slo"]],
                     lambda model, part, batch, prompt, output, ttft_slo, tpot_slo: lesson10_frame(
                         lesson10_view(model, part, batch, prompt, output, ttft_slo, tpot_slo), chart))
