"""Lesson 12 dashboard: model, part, context, weight format, KV format and batch -> the bytes one
decode step moves (weights, KV cache, recurrent state, activations) against the same step with BF16
weights and KV cache, and where the step sits on the roofline.

The weight formats (:data:`WEIGHT_FORMATS`) map to :class:`~roofline_lessons.core.costs.Workload`
fields: ``fp8 W8A8`` is W8A8 (FP8 weights and FP8 matmuls: parts without an fp8 rate refuse it);
``int4`` and ``fp4 (MXFP4, weight-only)`` store 4-bit weights with group scales, dequantised to BF16
on the fly (the dequant runs on the vector units and is counted); ``fp4 W4A4`` runs the weight
matmuls on FP4 tensor cores (parts without an fp4 rate refuse it). FP8 and the 4-bit formats leave
the embedding, the lm_head and the norms in BF16 (the package's default recipe, ``linear``: the
linear layers of the transformer blocks).

A step's time is given twice: the **lower bound** (``time_lower_bound_s``: compulsory bytes, the
dequantisation overlapped with the matmuls) and the **estimate** (``time_estimate_s``: every
operator's activations through HBM, the dequantisation in series). The bars and the roofline point
show the estimate's view (the unfused bytes and FLOPs ÷ the estimate).

The chart: left, two stacked bars, the BF16 step's bytes and this step's, both as a share of the
BF16 step's bytes (so the axis never moves); right, a log-log roofline of the part with this step
(filled) and the BF16 step (hollow), each at its FLOPs per byte and the FLOP/s it achieves.

Speed (:class:`~roofline_lessons.viz.dashboard_base.StackedChart`): the axes and the bar's key are drawn once,
the roofs once per part and compute format, the heading once per heading; a move draws only what moves.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace

import numpy as np
from matplotlib.lines import Line2D

from ...core.dtypes import weight_bytes_per_element
from ...core.errors import RooflineInputError
from ...core.hardware import get_part
from ...core.models import get_model
from ...core.units import binary, count, duration, num, percent, share_percent, si
from ...topics.shrinking import FormatStep, format_step
from ..charts import MIN_FONT_PT, TERA, part_style
from ..dashboard_base import ViewTexts
from ..dashboard_base import (UNHINTED, StackedChart, animated_rects, bandwidth_roof, dashboard, dropdown, fit_words,
                              line_key, look_patches, model_and_part_controls, moving_marker, moving_text, one_of,
                              percent_ticks, point_key, roofline_axes, set_piece, slider, view_frame, whole)
from ..display import html_table
from ..fastfig import bare_figure
from ..labels import box_rows, clamp, marker_boxes, place_in_turn, point_label, spots
from ..panel import Frame
from ..plots import BOUND_ROOF, BYTES_LOOK, COMPUTE_ROOF_COLOUR

#: the weight formats a learner picks -> the Workload fields they set (everything else BF16)
WEIGHT_FORMATS: dict[str, dict[str, str]] = {
    "bf16": {"weights_dtype": "bf16"},
    "fp8 W8A8": {"weights_dtype": "fp8", "compute_dtype": "fp8"},
    "int4": {"weights_dtype": "int4"},
    "fp4 (MXFP4, weight-only)": {"weights_dtype": "fp4"},
    "fp4 W4A4": {"weights_dtype": "fp4", "compute_dtype": "fp4"},
    "MXFP4 experts only (gpt-oss release)": {"weights_dtype": "fp4", "quantized_weights": "experts"},
}
#: what each weight format is, in a phrase
WEIGHT_WORDS = {
    "bf16": "BF16 weights",
    "fp8 W8A8": "FP8 weights with FP8 matmuls (W8A8)",
    "int4": "int4 weights with group scales, dequantised to BF16 on the fly (weight-only)",
    "fp4 (MXFP4, weight-only)": "MXFP4 weights (32-element blocks, 8-bit scale), dequantised to BF16 on the fly "
                                "(weight-only)",
    "fp4 W4A4": "FP4 weights with FP4 matmuls on FP4 tensor cores (W4A4)",
    "MXFP4 experts only (gpt-oss release)": "MXFP4 weights for the MoE experts only, dequantised to BF16 on the fly "
                                            "(weight-only; gpt-oss ships this way)",
}
#: the bars' short names for the weight formats
WEIGHT_SHORT = {"bf16": "bf16", "fp8 W8A8": "fp8 W8A8", "int4": "int4", "fp4 (MXFP4, weight-only)": "MXFP4",
                "fp4 W4A4": "fp4 W4A4", "MXFP4 experts only (gpt-oss release)": "MXFP4 experts"}
KV_FORMATS = ("bf16", "fp8", "int8", "int4")
CONTEXT_CHOICES = tuple(2 ** k for k in range(7, 21))  # 128 … 1M tokens
BATCH_CHOICES = tuple(2 ** k for k in range(9))  # 1 … 256
KINDS = tuple(BYTES_LOOK)  # weights, KV cache, state, activations

#: the roofline's fixed ranges (FLOP/byte; TFLOP/s), the same for every part so parts compare by eye:
#: every point the controls reach (about 1 to 900 FLOP/byte, 0.3 to 5,000 TFLOP/s), every ridge (up to
#: 1,250) and every compute roof (up to 10 PFLOP/s, FP4) lies inside, in as few decades as that allows
#: (4 across, 5.5 up) so that the slope-one HBM roof reads as a slope
X_RANGE = (0.5, 5e3)
Y_RANGE_TFLOPS = (0.1, 6e4)
FIGSIZE = (10.5, 5.8)
#: left, bottom, width, height (figure fractions): the roofline axes 391 px tall at 100 dpi, about 71 px
#: a decade up against 138 across
BAR_BOX = (0.08, 0.2, 0.24, 0.675)
ROOF_BOX = (0.45, 0.2, 0.525, 0.675)
BAR_KEY_TOP = 0.12  #: the top of the bar key (figure fraction), under the bars' names
BAR_TOP = 125.0  #: the bar axis runs to this % of the BF16 step, room for the text over the BF16 bar
STATUS_Y = 0.03
STATUS_X = 0.33  #: the status lines start right of the bar key (the longest runs about 600 px)
HEADING_WRAP = 118  #: characters per line of the heading (two lines fit over the axes)
POINT_FACE = "#F0E442"  #: Okabe–Ito yellow, black-edged: unlike every roof's colour
#: how much worse a label covering text, the legend or a point is than one crossing a roof line, per pixel
SOLID = 25.0


@dataclass(frozen=True)
class Lesson12View(ViewTexts):
    """One setting and what it gives: its words, and its numbers, those of ``step`` (a
    :class:`~roofline_lessons.topics.shrinking.FormatStep`: this decode step beside the same step in
    BF16; bytes per step, seconds, FLOP/s, as named there), read as the view's own: ``view.step_s``
    is ``view.step.step_s``, the estimate. An error view has no step."""

    model_id: str
    part_id: str
    context_tokens: object
    weights: object
    kv: object
    batch: object
    part_name: str = ""
    step: FormatStep | None = None
    kv_note: str = ""  #: what kind of cache the model keeps, in a sentence
    table_html: str = ""

    def __getattr__(self, name: str):
        """A name the view lacks is the step's (``placement``, ``step_s``, ``baseline_total_bytes``, ...)."""
        step = self.__dict__.get("step")
        if step is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(step, name)


def _kv_note(m, kv: str, step: FormatStep) -> str:
    """What cache the model keeps, in a sentence (with its sizes per sequence after ``step``)."""
    per_token = m.kv_bytes_per_token(kv)
    layers = m.num_hidden_layers
    sliding, growing = step.kv_sliding_bytes_per_sequence, step.kv_growing_bytes_per_sequence
    if m.is_mla:
        return (f"{m.name} uses MLA: its cache holds one compressed latent per token and layer, "
                f"{count(m.mla_cache_elements_per_token)} elements (kv_lora_rank {count(m.kv_lora_rank)} + "
                f"qk_rope_head_dim {count(m.qk_rope_head_dim)}) shared by all {count(m.num_attention_heads)} heads, "
                f"not per-head K and V: {binary(per_token)} per token over its {layers} layers in {kv}. Decode runs "
                "absorbed (attention in the latent space, as serving engines run it).")
    if m.num_sliding_attention_layers:
        return (f"{m.num_sliding_attention_layers} of its {layers} layers slide over a window of "
                f"{count(m.sliding_window)} tokens: their cache stops growing there ({binary(sliding)} per sequence "
                f"at this context); only the {m.num_full_attention_layers} global layers keep every token "
                f"({binary(growing)}).")
    if m.num_chunked_attention_layers:
        return (f"{m.num_chunked_attention_layers} of its {layers} layers attend only within chunks of "
                f"{count(m.attention_chunk_size)} tokens: they hold just the open chunk's tokens (none right at a "
                f"chunk boundary); the {m.num_full_attention_layers} global layers keep every token. All its layers: "
                f"{binary(sliding + growing)} per sequence at this context.")
    if m.full_attention_window is not None:
        return (f"Every one of its {layers} layers slides over a window of {count(m.full_attention_window)} tokens: "
                f"the cache stops growing there ({binary(growing)} per sequence at this context).")
    if m.is_hybrid:
        return (f"{m.num_deltanet_layers} of its {layers} layers are Gated DeltaNet (linear attention): a fixed "
                f"recurrent state instead of a cache; only the {m.num_full_attention_layers} full-attention layers' "
                f"cache grows, {binary(per_token)} per token in {kv}.")
    heads = m.num_key_value_heads
    kind = "MQA" if heads == 1 else ("GQA" if heads < m.num_attention_heads else "multi-head attention")
    return (f"{m.name} uses {kind}: K and V of {heads} KV head{'s' if heads > 1 else ''} × {m.head_dim} per "
            f"layer, {binary(per_token)} per token over its {layers} layers in {kv}.")


def lesson12_view(model, part, context_tokens, weights="bf16", kv="bf16", batch=1) -> Lesson12View:
    """One decode step of ``model`` on ``part``: ``batch`` sequences with ``context_tokens`` cached,
    weights in ``weights`` (a key of :data:`WEIGHT_FORMATS`), KV cache in ``kv`` (one of
    :data:`KV_FORMATS`); and the same step with BF16 weights and KV cache. A context past the model's
    max_context_tokens is computed and called a what-if. A setting the part or the model cannot take
    (W4A4 without an fp4 rate) is an error view with the package's message (never an exception)."""
    args = (str(model), str(part), context_tokens, weights, kv, batch)
    try:
        one_of("weights", weights, tuple(WEIGHT_FORMATS))
        one_of("kv", kv, KV_FORMATS)
        ctx = whole("context_tokens", context_tokens, 0, 1 << 24)
        b = whole("batch", batch, 1, 1 << 20)
        m, p = get_model(model), get_part(part)
        fields = WEIGHT_FORMATS[weights]
        if fields.get("quantized_weights") == "experts" and not m.is_moe:
            raise RooflineInputError(f"{weights!r} quantises the MoE experts only, and {m.id} is dense (no experts): "
                                     "nothing would shrink; choose int4 or an fp4 format")
        step = format_step(m, p, ctx, b, kv, **fields)
    except RooflineInputError as exc:
        return Lesson12View(*args, text=str(exc), error=str(exc))
    heading = (f"{m.name} decode on {p.name}, {count(ctx)} tokens cached"
               + (" (past its max context: a what-if)" if step.what_if else ""))
    view = Lesson12View(*args[:2], ctx, weights, kv, b, text="", title=f"{heading}, batch {count(b)}", heading=heading,
                        part_name=p.name, step=step, kv_note=_kv_note(m, kv, step))
    return replace(view, text=_verdict(view), table_html=lesson12_table(view))


# ---- words ---------------------------------------------------------------------------------------

def _split_text(by_kind: dict, total: float) -> str:
    return ", ".join(f"{k} {si(v, 'B')} ({share_percent(v / total)})" for k, v in by_kind.items() if v > 0)


def _format_text(view: Lesson12View) -> str:
    w = view.placement.workload
    what = WEIGHT_WORDS[view.weights]
    if view.weights != "bf16":
        per = weight_bytes_per_element(w.weights_dtype, w.weight_group_size)
        bits = "8-bit" if w.weights_dtype == "fp8" else "4-bit"
        kept = {"linear": "the linear layers only: the embedding, the lm_head and the norms stay BF16",
                "mlp": "attention, the embedding, the lm_head and the norms stay BF16",
                "experts": "everything but the experts stays BF16", "all": f"every weight is {bits}"}[w.weight_recipe]
        what += (f", {num(per)} byte{'' if per == 1 else 's'} per weight" + (" with its scale" if per != 1 else "")
                 + f"; {kept}")
    return what


def dequant_text(view: Lesson12View) -> str:
    """The dequant's cost and whether the memory time hides it, in a sentence ("" without dequant)."""
    if view.dequant_s <= 0:
        return ""
    matmul = view.compute_s - view.dequant_s
    text = (f"Dequantising the weights to BF16 costs {si(view.dequant_flops, 'FLOP')} on the vector units "
            f"({si(view.vector_flops_per_s, 'FLOP/s')}): {duration(view.dequant_s)}, so compute takes "
            f"{duration(view.compute_s)} in all")
    if view.dequant_hidden:
        return text + f", hidden under the {duration(view.memory_s)} of memory time."
    if matmul <= view.memory_s:
        text += (f", longer than the {duration(view.memory_s)} of memory time: added in series (the estimate's "
                 "conservative convention), the dequant makes the step compute-bound and erodes the 4-bit speed-up")
        if view.lower_bound_roof == "memory":
            return text + "; overlapped with the matmuls, as the lower bound takes it, the step stays memory-bound."
        return text + ("; the lower bound, with the dequant overlapped and only compulsory bytes, is compute-bound "
                       "too.")
    return text + f", on top of matmuls that already outlast the {duration(view.memory_s)} of memory time."


def _verdict(view: Lesson12View) -> str:
    mine, theirs = view.bytes_by_kind, view.baseline_bytes_by_kind
    saved = view.baseline_total_bytes - view.total_bytes
    base_case = view.weights == "bf16" and view.kv == "bf16"
    text = (f"{view.title}. Weights: {_format_text(view)}; KV cache in {view.kv}. One step moves "
            f"{si(view.total_bytes, 'B')}: {_split_text(mine, view.total_bytes)}. ")
    if base_case:
        text += "This is the BF16 baseline: pick a narrower weight or KV format to shrink the bytes. "
    else:
        text += (f"Against BF16 weights and KV cache for the same step ({si(view.baseline_total_bytes, 'B')}), the "
                 f"formats save {si(saved, 'B')} ({share_percent(saved / view.baseline_total_bytes)}): weights "
                 f"{si(theirs['weights'] - mine['weights'], 'B')}, KV cache "
                 f"{si(theirs['KV cache'] - mine['KV cache'], 'B')}. ")
    text += (f"The step takes at least {duration(view.step_lower_bound_s)} (the lower bound: compulsory bytes"
             + (", dequantisation overlapped with the matmuls" if view.dequant_s > 0 else "")
             + f"; {view.lower_bound_roof}-bound) and about {duration(view.step_s)} by the estimate (activations "
             "through HBM" + (", dequantisation added to the matmuls: the conservative case" if view.dequant_s > 0
                              else "")
             + f"; {view.bound}-bound, {BOUND_ROOF[view.bound]} binds)")
    if not base_case:
        ratio = view.baseline_step_s / view.step_s
        text += (f"; the BF16 step's estimate is {duration(view.baseline_step_s)}, "
                 + (f"{num(ratio)}× longer" if ratio >= 1.01 else f"{num(1 / ratio)}× shorter" if ratio <= 0.99
                    else "the same" if abs(ratio - 1) < 0.0005
                    else f"{percent(abs(ratio - 1))} {'longer' if ratio > 1 else 'shorter'}"))
    text += ". "
    if view.dequant_s > 0:
        text += dequant_text(view) + " "
    fit = fit_words(view.fits, view.memory_required_bytes, view.capacity_bytes)
    text += f"{view.kv_note} Weights, KV cache and state need {fit}"
    base_fit = fit_words(view.baseline_fits, view.baseline_memory_required_bytes, view.capacity_bytes)
    text += "." if base_case else f" (BF16: {base_fit})."
    return text  # a context past the model's limit is said once, in the note under the verdict




def lesson12_table(view: Lesson12View) -> str:
    """The byte budget per step against the BF16 baseline (an HTML table)."""
    def row(label: str, mine, bf16, fmt=lambda x: si(x, "B"), saved: bool = True) -> list[str]:
        return [label, fmt(mine), fmt(bf16), fmt(bf16 - mine) if saved else ""]

    rows = [row(f"{k} per step", view.bytes_by_kind[k], view.baseline_bytes_by_kind[k]) for k in KINDS
            if view.bytes_by_kind[k] != 0 or view.baseline_bytes_by_kind[k] != 0]
    rows += [row("all bytes per step", view.total_bytes, view.baseline_total_bytes),
             row("FLOPs per byte", view.intensity, view.baseline_intensity, num, saved=False),
             ["dequant on the vector units", duration(view.dequant_s) if view.dequant_s > 0 else "none", "none", ""],
             row("step time: lower bound (compulsory bytes, dequant overlapped)", view.step_lower_bound_s,
                 view.baseline_step_lower_bound_s, duration),
             row("step time: estimate (unfused, dequant in series)", view.step_s, view.baseline_step_s, duration),
             ["binding roof: lower bound / estimate", f"{view.lower_bound_roof} / {view.bound}",
              f"{view.baseline_lower_bound_roof} / {view.baseline_bound}", ""],
             row("weights stored", view.stored_weight_bytes, view.baseline_stored_weight_bytes, binary),
             row("memory needed (weights, KV cache, state)", view.memory_required_bytes,
                 view.baseline_memory_required_bytes, binary),
             row(f"fits in {binary(view.capacity_bytes)}", view.fits, view.baseline_fits,
                 lambda ok: "yes" if ok else "NO", saved=False)]
    return html_table(["", f"weights {view.weights}, KV {view.kv}", "BF16 weights and KV", "saved"], rows,
                      caption=f"The byte budget of one decode step, batch {count(view.batch)}, "
                              f"{count(view.context_tokens)} tokens cached (bytes SI, memory binary)")


def lesson12_alt(view: Lesson12View) -> str:
    """What the chart says, with this setting's numbers, for a reader who cannot see it."""
    side = "left of" if view.intensity < view.peak_flops_per_s / view.bandwidth_bytes_per_s else "at or right of"
    return (f"{view.title}. Left: two stacked bars of the bytes one step moves, as a share of the BF16 step's "
            f"{si(view.baseline_total_bytes, 'B')}: BF16 weights and KV, "
            f"{_split_text(view.baseline_bytes_by_kind, view.baseline_total_bytes)}; "
            f"weights {view.weights} and KV {view.kv}, {si(view.total_bytes, 'B')} "
            f"({share_percent(view.total_bytes / view.baseline_total_bytes)} of it): "
            f"{_split_text(view.bytes_by_kind, view.total_bytes)}. Right: a log-log roofline of {view.part_name}, "
            f"compute roof {si(view.peak_flops_per_s, 'FLOP/s')} ({view.compute_format} matmuls), HBM roof "
            f"{si(view.bandwidth_bytes_per_s, 'B/s')}. This step (filled) sits at {num(view.intensity)} FLOP/byte and "
            f"{si(view.achieved_flops_per_s, 'FLOP/s')}, {side} the ridge: {view.bound}-bound, "
            f"{duration(view.step_s)} per step by the estimate (lower bound {duration(view.step_lower_bound_s)}); "
            f"the BF16 step (hollow) at {num(view.baseline_intensity)} FLOP/byte "
            f"and {si(view.baseline_achieved_flops_per_s, 'FLOP/s')}, {duration(view.baseline_step_s)} per step "
            "(points and bars: the estimate's unfused bytes).")


def lesson12_frame(view: Lesson12View, chart: Lesson12Chart) -> Frame:
    """The verdict, the chart, its alt text and the table for one setting (an error: its message once)."""
    return view_frame(view, chart, lesson12_alt)




def status_text(view: Lesson12View) -> str:
    """The two lines under the roofline: the batch, the step's lower bound and estimate and the
    estimate's roof, the dequant; the fit."""
    first = (f"Batch {count(view.batch)}: ≥ {duration(view.step_lower_bound_s)}, estimate {duration(view.step_s)}, "
             f"{view.bound}-bound")
    if view.dequant_s > 0:
        first += f"; dequant {duration(view.dequant_s)}, " + ("hidden" if view.dequant_hidden else "NOT hidden")
    return first + f"\nWeights, KV, state: {fit_words(view.fits, view.memory_required_bytes, view.capacity_bytes)}"



# ---- drawing -------------------------------------------------------------------------------------

def _skeleton() -> dict:
    """The figure with what no control changes: the bar axis (% of the BF16 step) and its key, the
    roofline's axes; and the animated artists."""
    fig = bare_figure(FIGSIZE)
    bar = fig.add_axes(BAR_BOX, xlim=(-0.6, 1.6), ylim=(0, BAR_TOP))
    percent_ticks(bar, "y")
    bar.set_ylabel("Bytes per step (% of the BF16 step's)", fontsize=MIN_FONT_PT + 0.5)
    bar.set_title("Bytes moved per step", fontsize=MIN_FONT_PT + 1.5)
    bar.grid(True, axis="y", alpha=0.35)
    fig.legend(handles=look_patches(BYTES_LOOK), loc="upper left", bbox_to_anchor=(BAR_BOX[0] - 0.06, BAR_KEY_TOP),
               ncol=2, fontsize=MIN_FONT_PT, frameon=False, borderaxespad=0, handlelength=2.2, columnspacing=1.0)
    ax = roofline_axes(fig, ROOF_BOX, X_RANGE, Y_RANGE_TFLOPS, "Intensity (FLOP per byte of all traffic)",
                       "Performance (TFLOP/s)")
    heading = fig.suptitle("", fontsize=MIN_FONT_PT + 2, x=0.5, y=0.984, va="top", animated=True)
    title = ax.set_title("", fontsize=MIN_FONT_PT + 1.5, animated=True)
    mv = {"rects": animated_rects(bar, 2 * len(KINDS), height=0),
          "tops": [moving_text(bar, i, 0, ha="center", va="bottom", linespacing=1.2) for i in (0, 1)],
          "names": [moving_text(bar, i, -2.5, ha="center", va="top", linespacing=1.2) for i in (0, 1)]}
    mv["names"][0].set_text("all BF16\n(baseline)")
    mv["line"], = ax.plot([], [], color="0.25", linestyle=":", linewidth=1.3, animated=True)
    mv["eff_line"], = ax.plot([], [], color="0.35", linestyle=(0, (5, 2, 1, 2)), linewidth=1.3, animated=True)
    mv["eff_text"] = moving_text(ax, 0, 0, color="0.2", ha="left", va="bottom")
    mv["base_pt"] = moving_marker(ax, "o", "none", 11, markeredgewidth=1.6, zorder=5)
    mv["pt"] = moving_marker(ax, "o", POINT_FACE, 11, zorder=6)
    mv["label"], mv["base_label"] = (point_label(ax, MIN_FONT_PT, zorder=7) for _ in range(2))
    mv["status"] = moving_text(fig, STATUS_X, STATUS_Y, MIN_FONT_PT + 1, ha="left", va="bottom", linespacing=1.4)
    return {"fig": fig, "ax": ax, "bar": bar, "heading": heading, "title": title, "moving": mv}


def _draw_part(shared: dict, view: Lesson12View) -> list:
    """The layer a part and a matmul format draw over the skeleton: the roofline's title, the compute
    roof(s), the HBM roof, the ridge and the legend (the title's text set in ``prepare``). Returns them."""
    fig, ax, fmt = shared["fig"], shared["ax"], view.compute_format
    look = part_style(view.part_id)
    peak, bf16_peak, bw = view.peak_flops_per_s, view.bf16_peak_flops_per_s, view.bandwidth_bytes_per_s
    artists = [ax.axhline(peak / TERA, color=COMPUTE_ROOF_COLOUR, linewidth=2.4, animated=True)]
    handles = [line_key(f"compute roof ({fmt}): {si(peak, 'FLOP/s')}", COMPUTE_ROOF_COLOUR)]
    if bf16_peak != peak:  # an fp8 or fp4 roof, above the bf16 one on every part
        artists.append(ax.axhline(bf16_peak / TERA, color=COMPUTE_ROOF_COLOUR, linewidth=1.3, linestyle="--",
                                  animated=True))
        handles.append(line_key(f"compute roof (bf16): {si(bf16_peak, 'FLOP/s')}", COMPUTE_ROOF_COLOUR, "--", 1.3))
    artists += bandwidth_roof(ax, bw, peak, X_RANGE[0], Y_RANGE_TFLOPS[0], f"ridge {num(peak / bw)}", look.colour,
                              look.linestyle)
    handles += [line_key(f"HBM roof: {si(bw, 'B/s')}, ridge {num(peak / bw)}", look.colour, look.linestyle),
                point_key("o", "this step (formats chosen)", POINT_FACE, 9),
                point_key("o", "the same step in BF16", "none", 9, markeredgewidth=1.6)]
    legend = ax.legend(handles=handles, loc="lower right", fontsize=MIN_FONT_PT, framealpha=0.92,
                       borderaxespad=0.4, handlelength=2.2)
    legend.set_animated(True)
    artists.append(legend)
    for a in [shared["title"], *artists]:
        fig.draw_artist(a)
    return artists


def _heading_text(view: Lesson12View) -> str:
    return textwrap.fill(view.heading, HEADING_WRAP)


def _draw_heading(shared: dict, view: Lesson12View) -> list:
    """The layer a heading (its text set by :meth:`Lesson12Chart.prepare`) draws over a part's."""
    shared["fig"].draw_artist(shared["heading"])
    return []


def _roof_boxes(ax, view: Lesson12View) -> np.ndarray:
    """Obstacle rows (weight 1) every few pixels along the roofs (the HBM roof up to the compute roof,
    and the bf16 roof): a label may cross a roof, at a cost."""
    xs = np.geomspace(X_RANGE[0], X_RANGE[1], 90)
    rows = []
    for y in (np.minimum(xs * view.bandwidth_bytes_per_s, view.peak_flops_per_s) / TERA,
              np.full_like(xs, view.bf16_peak_flops_per_s / TERA)):
        ok = (y >= Y_RANGE_TFLOPS[0]) & (y <= Y_RANGE_TFLOPS[1])
        centres = ax.transData.transform(np.column_stack([xs[ok], y[ok]]))
        rows.append(np.column_stack([centres - 2, centres + 2, np.ones(len(centres))]))
    return np.vstack(rows)


class Lesson12Chart(StackedChart):
    """The byte bars and the roofline on one figure. Kept as bitmaps: the skeleton (drawn once), a
    layer per part and matmul format (its roofs and legend) and over it one per heading; a move draws
    the rest. ``layer_misses`` counts layers drawn."""

    rc = UNHINTED
    skeleton = staticmethod(_skeleton)
    levels = (_draw_part, _draw_heading)

    def layer_keys(self, view: Lesson12View) -> tuple:
        return (view.part_id, view.compute_format, view.peak_flops_per_s, view.bf16_peak_flops_per_s), view.heading

    def prepare(self, shared: dict, view: Lesson12View) -> None:
        """The heading's and the roofline title's texts, which the layers draw (and a test reads)."""
        shared["heading"].set_text(_heading_text(view))
        shared["title"].set_text(f"Roofline: {view.part_name}, {view.compute_format} matmuls")

    def describe(self, shared: dict, artists: list) -> np.ndarray:
        """A layer's texts and legend: boxes the point labels keep off (weight :data:`SOLID`)."""
        renderer = shared["fig"].canvas.get_renderer()
        return box_rows([a.get_window_extent(renderer) for a in artists if not isinstance(a, Line2D)], SOLID)

    def move(self, shared: dict, view: Lesson12View) -> list:
        """Set the moving artists for ``view`` (the labels clear of the part layer's texts, its roofs
        and the points); returns them, in the order they are drawn."""
        fig, ax, mv = shared["fig"], shared["ax"], shared["moving"]
        out = []
        # the bars: the BF16 step (100 %) and this step, each stacked weights → activations
        rects = iter(mv["rects"])
        for i, by_kind in enumerate((view.baseline_bytes_by_kind, view.bytes_by_kind)):
            bottom = 0.0
            for kind in KINDS:
                r, h = next(rects), by_kind[kind] / view.baseline_total_bytes * 100
                set_piece(r, i - 0.36, bottom, 0.72, h, BYTES_LOOK[kind])
                r.set_visible(h > 0)
                bottom += h
                out += [r] if h > 0 else []
            mv["tops"][i].set_position((i, bottom + 1.5))
            step_s = view.baseline_step_s if i == 0 else view.step_s
            mv["tops"][i].set_text(f"{si(sum(by_kind.values()), 'B')}\n{duration(step_s)}")
            out.append(mv["tops"][i])
        mv["names"][1].set_text(f"{WEIGHT_SHORT[view.weights]}\nKV {view.kv}")
        out += mv["names"]

        renderer = fig.canvas.get_renderer()
        lo, hi = Y_RANGE_TFLOPS
        y0, _ = clamp(view.baseline_achieved_flops_per_s / TERA, lo, hi)
        y1, _ = clamp(view.achieved_flops_per_s / TERA, lo, hi)
        x0, off0 = clamp(view.baseline_intensity, *X_RANGE)
        x1, off1 = clamp(view.intensity, *X_RANGE)
        mv["base_pt"].set_data([x0], [y0])
        mv["pt"].set_data([x1], [y1])
        mv["line"].set_data([x0, x1], [y0, y1])
        out += [mv["line"], mv["base_pt"], mv["pt"]]
        eff = view.effective_peak_flops_per_s / TERA
        if view.dequant_s > 0 and lo < eff < hi:  # the roof this step meets: its FLOPs over matmuls + dequant in series
            mv["eff_line"].set_data(list(X_RANGE), [eff, eff])
            mv["eff_text"].set_position((X_RANGE[0] * 1.3, eff * 1.12))
            mv["eff_text"].set_text(f"roof with dequant in series: {si(view.effective_peak_flops_per_s, 'FLOP/s')}")
            out += [mv["eff_line"], mv["eff_text"]]
        inside = ax.get_window_extent(renderer)
        marks = marker_boxes(ax, [(x0, y0), (x1, y1)], 11)
        marks[:, 4] = SOLID
        g = 9
        # below-right first (under a slanted roof is empty), then the other sides
        around = (spots(g, "below right") + [(0, -g - 2, "center", "top")]
                  + spots(g, "below left", "right", "left", "above left", "above", "above right"))
        # farther out, for two points too close for the near places: below or above the pair's other label
        farther = [(g, -3 * g, "left", "top"), (-g, -3 * g, "right", "top"), (0, 3 * g, "center", "bottom"),
                   (g, 3 * g, "left", "bottom")]
        same = view.weights == "bf16" and view.kv == "bf16"
        mv["label"].set_text(("BF16 = this step: " if same else "")
                             + f"{num(view.intensity)} FLOP/byte" + (" (off the chart)" if off1 else ""))
        mv["base_label"].set_text("" if same else f"BF16: {num(view.baseline_intensity)} FLOP/byte"
                                  + (" (off the chart)" if off0 else ""))
        labels = [(mv["label"], (x1, y1), around + farther)]
        if not same:
            labels.append((mv["base_label"], (x0, y0), around[2:] + around[:2] + farther))
        place_in_turn(labels, np.vstack([self.showing[0], _roof_boxes(ax, view), marks]), inside, renderer, SOLID,
                      outside_weight=4 * SOLID)
        out += [label for label, _xy, _where in labels]
        mv["status"].set_text(status_text(view))
        out.append(mv["status"])
        return out


def lesson12_dashboard(model: str = "llama-3.1-70b", part: str = "h100-sxm"):
    """Model, part, context, weight format, KV format and batch -> the bytes of one decode step against
    BF16, the step on the roofline, and a table of the byte budget."""
    chart = Lesson12Chart()
    context = slider("context (tokens)", CONTEXT_CHOICES, 4096, "380px",
                     fmt=lambda c: str(c) if c < 1024 else f"{c // 1024:,}K" if c < 2 ** 20 else "1M")
    controls = {**model_and_part_controls(model, part), "context_tokens": context,  # named as lesson12_view's arguments
                "weights": dropdown("weights", tuple(WEIGHT_FORMATS), "bf16", "260px"),
                "kv": dropdown("KV cache", KV_FORMATS, "bf16", "160px"),
                "batch": slider("batch", BATCH_CHOICES, 1, "340px")}
    return dashboard(controls, [["model", "part"], ["weights", "kv"], ["context_tokens", "batch"]],
                     lambda **values: lesson12_frame(lesson12_view(**values), chart))
