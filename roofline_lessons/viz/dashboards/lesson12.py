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

Speed: the axes, the bar's key and the labels are drawn once (:class:`~roofline_lessons.viz.fastfig.CachedFigure`);
the roofs of a part and compute format are drawn over them once and kept as a bitmap
(:class:`~roofline_lessons.viz.fastfig.Layers`); a move draws only the bars, the two points, their
labels and the text.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np

from ...core.dtypes import weight_bytes_per_element
from ...core.errors import RooflineInputError
from ...core.hardware import get_part
from ...core.models import get_model
from ...core.placement import Placement, place
from ...core.units import binary, count, duration, num, percent, si
from ..charts import MIN_FONT_PT, TERA, part_style, set_log_axis
from ..display import html_table
from ..fastfig import CHART_DPI, CachedFigure, Layers, bare_figure, message_png
from ..plots import BOUND_ROOF, BYTES_LOOK, COMPUTE_ROOF_COLOUR, _achieved_flops_per_s, _share, _step_bytes_by_kind
from ..panel import Frame, build_dashboard, model_and_part

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
Y_RANGE_TFLOPS = (0.1, 3e4)
FIGSIZE = (10.5, 5.8)
DPI = CHART_DPI
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
TEXT_RC = {"text.hinting": "no_hinting"}
#: how much worse a label covering text, the legend or a point is than one crossing a roof line, per pixel
SOLID = 25.0


@dataclass(frozen=True)
class Lesson12View:
    """One setting and what it gives. Bytes are per decode step (all sequences, the unfused view)
    unless named per sequence, per token or compulsory; ``step_s`` is the estimate and
    ``step_lower_bound_s`` the lower bound (seconds); ``bound`` is the estimate's binding roof and
    ``lower_bound_roof`` the bound's."""

    model_id: str
    part_id: str
    context_tokens: object
    weights: object
    kv: object
    batch: object
    text: str
    error: str | None = None
    title: str = ""
    heading: str = ""  #: the chart's heading: the title without the batch
    model_name: str = ""
    part_name: str = ""
    placement: Placement | None = None
    baseline: Placement | None = None  #: the same step with BF16 weights, KV cache and matmuls
    bytes_by_kind: dict | None = None  #: weights / KV cache / state / activations -> bytes per step
    baseline_bytes_by_kind: dict | None = None
    total_bytes: float = 0.0
    baseline_total_bytes: float = 0.0
    step_s: float = 0.0  #: the estimate (``time_estimate_s``)
    baseline_step_s: float = 0.0
    step_lower_bound_s: float = 0.0  #: the lower bound (``time_lower_bound_s``)
    baseline_step_lower_bound_s: float = 0.0
    lower_bound_roof: str = ""
    baseline_lower_bound_roof: str = ""
    compute_s: float = 0.0  #: dequant included
    memory_s: float = 0.0
    dequant_s: float = 0.0  #: weight-only formats: dequantising on the vector units, seconds
    dequant_flops: float = 0.0
    vector_flops_per_s: float = 0.0
    weight_only: bool = False
    dequant_hidden: bool | None = None  #: compute (dequant included) ≤ memory time; None without dequant
    bound: str = ""
    baseline_bound: str = ""
    compute_format: str = "bf16"  #: the weight matmuls' format
    peak_flops_per_s: float = 0.0  #: the weight matmuls' dense peak
    effective_peak_flops_per_s: float = 0.0  #: the step's FLOPs ÷ its compute time (dequant included)
    bf16_peak_flops_per_s: float = 0.0
    bandwidth_bytes_per_s: float = 0.0
    intensity: float = 0.0  #: FLOPs per byte of all traffic
    baseline_intensity: float = 0.0
    achieved_flops_per_s: float = 0.0  #: FLOPs ÷ step time
    baseline_achieved_flops_per_s: float = 0.0
    stored_weight_bytes: float = 0.0  #: resident weights in this format (scales and BF16 layers in)
    baseline_stored_weight_bytes: float = 0.0
    memory_required_bytes: float = 0.0  #: weights + KV cache + state, all sequences
    baseline_memory_required_bytes: float = 0.0
    capacity_bytes: float = 0.0
    fits: bool = False
    baseline_fits: bool = False
    kv_bytes_per_token: float = 0.0  #: every caching layer, before window caps, in this KV format
    kv_cache_bytes_per_sequence: float = 0.0  #: resident after the step (windows applied)
    kv_sliding_bytes_per_sequence: float = 0.0  #: the sliding-window layers' share of it
    kv_growing_bytes_per_sequence: float = 0.0  #: the layers that keep every token
    state_bytes_per_sequence: float = 0.0
    kv_note: str = ""  #: what kind of cache the model keeps, in a sentence
    what_if: bool = False  #: the context is past the model's max_context_tokens
    max_context_tokens: int = 0
    warnings: tuple[str, ...] = ()
    table_html: str = ""


def _choice(name: str, value, allowed) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise RooflineInputError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


def _whole(name: str, value, lo: int, hi: int) -> int:
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating))
            or not math.isfinite(float(value)) or not float(value).is_integer() or not lo <= value <= hi):
        raise RooflineInputError(f"{name} must be a whole number from {count(lo)} to {count(hi)}, got {value!r}")
    return int(value)


def _kv_note(m, kv: str, ctx: int) -> tuple[str, float, float]:
    """What cache the model keeps, in a sentence; and the sliding layers' and the growing layers'
    bytes per sequence at ``ctx`` cached tokens."""
    per_layer = m.kv_bytes_per_token_per_layer(kv)
    per_token = m.kv_bytes_per_token(kv)
    layers = m.num_hidden_layers
    sliding = m.num_sliding_attention_layers * per_layer * min(ctx, m.sliding_window or 0)
    growing = float(m.kv_cache_bytes_per_sequence(ctx, kv)) - sliding
    if m.is_mla:
        note = (f"{m.name} uses MLA: its cache holds one compressed latent per token and layer, "
                f"{count(m.mla_cache_elements_per_token)} elements (kv_lora_rank {count(m.kv_lora_rank)} + "
                f"qk_rope_head_dim {count(m.qk_rope_head_dim)}) shared by all {count(m.num_attention_heads)} heads, "
                f"not per-head K and V: {binary(per_token)} per token over its {layers} layers in {kv}. Decode runs "
                "absorbed (attention in the latent space, as serving engines run it).")
    elif m.num_sliding_attention_layers:
        note = (f"{m.num_sliding_attention_layers} of its {layers} layers slide over a window of "
                f"{count(m.sliding_window)} tokens: their cache stops growing there ({binary(sliding)} per sequence "
                f"at this context); only the {m.num_full_attention_layers} global layers keep every token "
                f"({binary(growing)}).")
    elif m.full_attention_window is not None:
        note = (f"Every one of its {layers} layers slides over a window of {count(m.full_attention_window)} tokens: "
                f"the cache stops growing there ({binary(growing)} per sequence at this context).")
    elif m.is_hybrid:
        note = (f"{m.num_deltanet_layers} of its {layers} layers are Gated DeltaNet (linear attention): a fixed "
                f"recurrent state instead of a cache; only the {m.num_full_attention_layers} full-attention layers' "
                f"cache grows, {binary(per_token)} per token in {kv}.")
    else:
        heads = m.num_key_value_heads
        kind = "MQA" if heads == 1 else ("GQA" if heads < m.num_attention_heads else "multi-head attention")
        note = (f"{m.name} uses {kind}: K and V of {heads} KV head{'s' if heads > 1 else ''} × {m.head_dim} per "
                f"layer, {binary(per_token)} per token over its {layers} layers in {kv}.")
    return note, sliding, growing


def lesson12_view(model, part, context_tokens, weights="bf16", kv="bf16", batch=1) -> Lesson12View:
    """One decode step of ``model`` on ``part``: ``batch`` sequences with ``context_tokens`` cached,
    weights in ``weights`` (a key of :data:`WEIGHT_FORMATS`), KV cache in ``kv`` (one of
    :data:`KV_FORMATS`); and the same step with BF16 weights and KV cache. A context past the model's
    max_context_tokens is computed and called a what-if. A setting the part or the model cannot take
    (W4A4 without an fp4 rate) is an error view with the package's message (never an exception)."""
    args = (str(model), str(part), context_tokens, weights, kv, batch)
    try:
        _choice("weights", weights, tuple(WEIGHT_FORMATS))
        _choice("kv", kv, KV_FORMATS)
        ctx = _whole("context_tokens", context_tokens, 0, 1 << 24)
        b = _whole("batch", batch, 1, 1 << 20)
        m, p = get_model(model), get_part(part)
        fields = WEIGHT_FORMATS[weights]
        if fields.get("quantized_weights") == "experts" and not m.is_moe:
            raise RooflineInputError(f"{weights!r} quantises the MoE experts only, and {m.id} is dense (no experts): "
                                     "nothing would shrink; choose int4 or an fp4 format")
        pl = place(m, p, phase="decode", batch=b, context_tokens=ctx, kv_dtype=kv, **fields)
        base = place(m, p, phase="decode", batch=b, context_tokens=ctx)
        float(pl.compute_time_s)  # a missing rate surfaces here, not in the chart
    except RooflineInputError as exc:
        return Lesson12View(*args, text=str(exc), error=str(exc))
    mine, theirs = _step_bytes_by_kind(pl), _step_bytes_by_kind(base)
    w = pl.workload
    dq = float(pl.dequant_time_s)
    c, mem = float(pl.compute_time_s), float(pl.memory_time_s)
    note, sliding, growing = _kv_note(m, kv, ctx + 1)
    what_if = pl.context_beyond_model
    heading = (f"{m.name} decode on {p.name}, {count(ctx)} tokens cached"
               + (" (past its max context: a what-if)" if what_if else ""))
    view = Lesson12View(
        *args[:2], ctx, weights, kv, b, text="", title=f"{heading}, batch {count(b)}", heading=heading,
        model_name=m.name, part_name=p.name, placement=pl,
        baseline=base, bytes_by_kind=mine, baseline_bytes_by_kind=theirs, total_bytes=sum(mine.values()),
        baseline_total_bytes=sum(theirs.values()), step_s=float(pl.time_estimate_s),
        baseline_step_s=float(base.time_estimate_s), step_lower_bound_s=float(pl.time_lower_bound_s),
        baseline_step_lower_bound_s=float(base.time_lower_bound_s), lower_bound_roof=str(pl.lower_bound_roof),
        baseline_lower_bound_roof=str(base.lower_bound_roof), compute_s=c, memory_s=mem, dequant_s=dq,
        dequant_flops=float(pl.cost.dequant_flops), vector_flops_per_s=float(pl.vector_peak_flops_per_s),
        weight_only=bool(w.weight_only), dequant_hidden=(c <= mem) if dq > 0 else None, bound=str(pl.bound),
        baseline_bound=str(base.bound), compute_format=w.compute_dtype,
        peak_flops_per_s=float(pl.matmul_peak_flops_per_s), effective_peak_flops_per_s=float(pl.peak_flops_per_s),
        bf16_peak_flops_per_s=float(p.peak_flops_per_s("bf16")),
        bandwidth_bytes_per_s=float(p.memory_bandwidth_bytes_per_s), intensity=float(pl.intensity),
        baseline_intensity=float(base.intensity), achieved_flops_per_s=_achieved_flops_per_s(pl),
        baseline_achieved_flops_per_s=_achieved_flops_per_s(base),
        stored_weight_bytes=float(pl.footprint.weight_bytes),
        baseline_stored_weight_bytes=float(base.footprint.weight_bytes),
        memory_required_bytes=float(pl.memory_required_bytes),
        baseline_memory_required_bytes=float(base.memory_required_bytes),
        capacity_bytes=float(p.memory_capacity_bytes), fits=bool(pl.fits_in_memory),
        baseline_fits=bool(base.fits_in_memory), kv_bytes_per_token=float(m.kv_bytes_per_token(kv)),
        kv_cache_bytes_per_sequence=float(m.kv_cache_bytes_per_sequence(ctx + 1, kv)),
        kv_sliding_bytes_per_sequence=float(sliding), kv_growing_bytes_per_sequence=float(growing),
        state_bytes_per_sequence=float(pl.footprint.state_bytes) / b, kv_note=note, what_if=what_if,
        max_context_tokens=int(m.max_context_tokens), warnings=tuple(pl.warnings))
    return replace(view, text=_verdict(view), table_html=lesson12_table(view))


# ---- words ---------------------------------------------------------------------------------------

def _split_text(by_kind: dict, total: float) -> str:
    return ", ".join(f"{k} {si(v, 'B')} ({_share(v / total)})" for k, v in by_kind.items() if v > 0)


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


def _fit_text(fits: bool, need: float, capacity: float) -> str:
    return (f"{binary(need)} of {binary(capacity)}: fits" if fits
            else f"{binary(need)}, more than its {binary(capacity)}: does NOT fit")


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
                 f"formats save {si(saved, 'B')} ({_share(saved / view.baseline_total_bytes)}): weights "
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
    dq = dequant_text(view)
    if dq:
        text += dq + " "
    fit = _fit_text(view.fits, view.memory_required_bytes, view.capacity_bytes)
    text += f"{view.kv_note} Weights, KV cache and state need {fit}"
    base_fit = _fit_text(view.baseline_fits, view.baseline_memory_required_bytes, view.capacity_bytes)
    text += "." if base_case else f" (BF16: {base_fit})."
    return text  # a context past the model's limit is said once, in the note under the verdict


def lesson12_table(view: Lesson12View) -> str:
    """The byte budget per step against the BF16 baseline (an HTML table)."""
    rows = []
    for k in KINDS:
        a, b = view.bytes_by_kind[k], view.baseline_bytes_by_kind[k]
        if a == 0 and b == 0:
            continue
        rows.append([f"{k} per step", si(a, "B"), si(b, "B"), si(b - a, "B")])
    rows.append(["all bytes per step", si(view.total_bytes, "B"), si(view.baseline_total_bytes, "B"),
                 si(view.baseline_total_bytes - view.total_bytes, "B")])
    rows.append(["FLOPs per byte", num(view.intensity), num(view.baseline_intensity), ""])
    rows.append(["dequant on the vector units", duration(view.dequant_s) if view.dequant_s > 0 else "none", "none", ""])
    rows.append(["step time: lower bound (compulsory bytes, dequant overlapped)", duration(view.step_lower_bound_s),
                 duration(view.baseline_step_lower_bound_s),
                 duration(view.baseline_step_lower_bound_s - view.step_lower_bound_s)])
    rows.append(["step time: estimate (unfused, dequant in series)", duration(view.step_s),
                 duration(view.baseline_step_s), duration(view.baseline_step_s - view.step_s)])
    rows.append(["binding roof: lower bound / estimate", f"{view.lower_bound_roof} / {view.bound}",
                 f"{view.baseline_lower_bound_roof} / {view.baseline_bound}", ""])
    rows.append(["weights stored", binary(view.stored_weight_bytes), binary(view.baseline_stored_weight_bytes),
                 binary(view.baseline_stored_weight_bytes - view.stored_weight_bytes)])
    rows.append(["memory needed (weights, KV cache, state)", binary(view.memory_required_bytes),
                 binary(view.baseline_memory_required_bytes),
                 binary(view.baseline_memory_required_bytes - view.memory_required_bytes)])
    rows.append([f"fits in {binary(view.capacity_bytes)}", "yes" if view.fits else "NO",
                 "yes" if view.baseline_fits else "NO", ""])
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
            f"({_share(view.total_bytes / view.baseline_total_bytes)} of it): "
            f"{_split_text(view.bytes_by_kind, view.total_bytes)}. Right: a log-log roofline of {view.part_name}, "
            f"compute roof {si(view.peak_flops_per_s, 'FLOP/s')} ({view.compute_format} matmuls), HBM roof "
            f"{si(view.bandwidth_bytes_per_s, 'B/s')}. This step (filled) sits at {num(view.intensity)} FLOP/byte and "
            f"{si(view.achieved_flops_per_s, 'FLOP/s')}, {side} the ridge: {view.bound}-bound, "
            f"{duration(view.step_s)} per step by the estimate (lower bound {duration(view.step_lower_bound_s)}); "
            f"the BF16 step (hollow) at {num(view.baseline_intensity)} FLOP/byte "
            f"and {si(view.baseline_achieved_flops_per_s, 'FLOP/s')}, {duration(view.baseline_step_s)} per step "
            "(points and bars: the estimate's unfused bytes).")


def lesson12_frame(view: Lesson12View, chart: "Lesson12Chart") -> Frame:
    """The verdict, the chart, its alt text and the table for one setting; an error view shows its
    error once (no chart)."""
    if view.error is not None:
        return Frame(verdict=view.error, png=None, alt="", error=True)
    return Frame(verdict=view.text, png=chart.png(view), alt=lesson12_alt(view), notes=view.warnings,
                 table_html=view.table_html)


def status_text(view: Lesson12View) -> str:
    """The two lines under the roofline: the batch, the step's lower bound and estimate and the
    estimate's roof, the dequant; the fit."""
    first = (f"Batch {count(view.batch)}: ≥ {duration(view.step_lower_bound_s)}, estimate {duration(view.step_s)}, "
             f"{view.bound}-bound")
    if view.dequant_s > 0:
        first += f"; dequant {duration(view.dequant_s)}, " + ("hidden" if view.dequant_hidden else "NOT hidden")
    return first + f"\nWeights, KV, state: {_fit_text(view.fits, view.memory_required_bytes, view.capacity_bytes)}"


# ---- drawing -------------------------------------------------------------------------------------

def _skeleton() -> dict:
    """The figure with what no control changes: the bar axis (% of the BF16 step) and its key, the
    roofline's axes; and the animated artists."""
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    fig = bare_figure(FIGSIZE, DPI)
    bar = fig.add_axes(BAR_BOX)
    bar.set_xlim(-0.6, 1.6)
    bar.set_ylim(0, BAR_TOP)
    bar.yaxis.set_major_locator(FixedLocator([0, 25, 50, 75, 100]))
    bar.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.0f} %"))
    bar.xaxis.set_major_locator(NullLocator())
    bar.tick_params(labelsize=MIN_FONT_PT)
    bar.set_ylabel("Bytes per step (% of the BF16 step's)", fontsize=MIN_FONT_PT + 0.5)
    bar.set_title("Bytes moved per step", fontsize=MIN_FONT_PT + 1.5)
    bar.grid(True, axis="y", alpha=0.35)
    kinds = [Patch(facecolor=col, hatch=hatch, edgecolor=edge, label=kind) for kind, (col, hatch, edge)
             in BYTES_LOOK.items()]
    fig.legend(handles=kinds, loc="upper left", bbox_to_anchor=(BAR_BOX[0] - 0.06, BAR_KEY_TOP), ncol=2,
               fontsize=MIN_FONT_PT, frameon=False, borderaxespad=0, handlelength=2.2, columnspacing=1.0)

    ax = fig.add_axes(ROOF_BOX)
    ax.set_xscale("log")
    ax.set_yscale("log")
    set_log_axis(ax.xaxis, *X_RANGE)
    set_log_axis(ax.yaxis, *Y_RANGE_TFLOPS)
    ax.tick_params(labelsize=MIN_FONT_PT)
    ax.set_xlabel("Intensity (FLOP per byte of all traffic)", fontsize=MIN_FONT_PT + 0.5)
    ax.set_ylabel("Performance (TFLOP/s)", fontsize=MIN_FONT_PT + 0.5)
    ax.grid(True, alpha=0.35)

    heading = fig.suptitle("", fontsize=MIN_FONT_PT + 2, x=0.5, y=0.984, va="top", animated=True)
    title = ax.set_title("", fontsize=MIN_FONT_PT + 1.5)
    title.set_animated(True)
    rects = []
    for _ in range(2 * len(KINDS)):
        r = Rectangle((0, 0), 0, 0, animated=True, linewidth=0.6)
        bar.add_patch(r)
        rects.append(r)
    tops = [bar.text(i, 0, "", ha="center", va="bottom", fontsize=MIN_FONT_PT, animated=True, linespacing=1.2)
            for i in (0, 1)]
    names = [bar.text(i, -2.5, "", ha="center", va="top", fontsize=MIN_FONT_PT, animated=True, linespacing=1.2)
             for i in (0, 1)]
    line, = ax.plot([], [], color="0.25", linestyle=":", linewidth=1.3, animated=True)
    eff_line, = ax.plot([], [], color="0.35", linestyle=(0, (5, 2, 1, 2)), linewidth=1.3, animated=True)
    eff_text = ax.text(0, 0, "", fontsize=MIN_FONT_PT, color="0.2", ha="left", va="bottom", animated=True)
    base_pt, = ax.plot([], [], marker="o", markersize=11, linestyle="none", color="black", markerfacecolor="none",
                       markeredgewidth=1.6, animated=True, zorder=5)
    pt, = ax.plot([], [], marker="o", markersize=11, linestyle="none", color="black", markerfacecolor=POINT_FACE,
                  animated=True, zorder=6)
    box = {"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.6", "alpha": 0.9}
    label, base_label = (ax.annotate("", (1, 1), textcoords="offset points", xytext=(0, 0), fontsize=MIN_FONT_PT,
                                     animated=True, bbox=box, zorder=7) for _ in range(2))
    status = fig.text(STATUS_X, STATUS_Y, "", fontsize=MIN_FONT_PT + 1, ha="left", va="bottom", linespacing=1.4,
                      animated=True)
    moving = {"rects": rects, "tops": tops, "names": names, "line": line, "base_pt": base_pt, "pt": pt,
              "eff_line": eff_line, "eff_text": eff_text,
              "label": label, "base_label": base_label, "status": status}
    return {"fig": fig, "ax": ax, "bar": bar, "heading": heading, "title": title, "moving": moving,
            "layers": Layers(8), "heading_layers": Layers(16), "artists": OrderedDict(), "obstacles": {}}


def _roof(ax, bw: float, peak: float, **style):
    """The HBM roof from the left edge up to where it meets ``peak``."""
    x = np.array([X_RANGE[0], peak / bw])
    return ax.plot(x, x * bw / TERA, **style)


def _draw_part(shared: dict, part_id: str, fmt: str, peak: float, bf16_peak: float) -> tuple[list, list]:
    """The layer a part and a matmul format draw over the skeleton: the roofline's title, the compute
    roof(s), the HBM roof, the ridge and the legend. Returns the artists and the boxes (display
    pixels) the point labels must keep clear of."""
    from matplotlib.lines import Line2D

    fig, ax = shared["fig"], shared["ax"]
    p = get_part(part_id)
    look = part_style(p)
    bw = p.memory_bandwidth_bytes_per_s
    ridge = peak / bw
    shared["title"].set_text(f"Roofline: {p.name}, {fmt} matmuls")
    artists = [ax.axhline(peak / TERA, color=COMPUTE_ROOF_COLOUR, linewidth=2.4, animated=True)]
    handles = [Line2D([], [], color=COMPUTE_ROOF_COLOUR, linewidth=2.4,
                      label=f"compute roof ({fmt}): {si(peak, 'FLOP/s')}")]
    top = peak
    if bf16_peak != peak:
        artists.append(ax.axhline(bf16_peak / TERA, color=COMPUTE_ROOF_COLOUR, linewidth=1.3, linestyle="--",
                                  animated=True))
        handles.append(Line2D([], [], color=COMPUTE_ROOF_COLOUR, linewidth=1.3, linestyle="--",
                              label=f"compute roof (bf16): {si(bf16_peak, 'FLOP/s')}"))
        top = max(peak, bf16_peak)
    artists += _roof(ax, bw, top, color=look.colour, linestyle=look.linestyle, linewidth=2.4, animated=True)
    handles.append(Line2D([], [], color=look.colour, linestyle=look.linestyle, linewidth=2.4,
                          label=f"HBM roof: {si(bw, 'B/s')}, ridge {num(ridge)}"))
    artists += ax.plot([ridge, ridge], [Y_RANGE_TFLOPS[0], peak / TERA], color=look.colour, linestyle=":",
                       linewidth=1.2, animated=True)
    artists.append(ax.annotate(f"ridge {num(ridge)}", (ridge, peak / TERA), textcoords="offset points",
                               xytext=(-3, 3), ha="right", va="bottom", fontsize=MIN_FONT_PT, color=look.colour,
                               fontweight="bold", animated=True,
                               bbox={"boxstyle": "square,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85}))
    handles += [Line2D([], [], marker="o", markersize=9, linestyle="none", color="black", markerfacecolor=POINT_FACE,
                       label="this step (formats chosen)"),
                Line2D([], [], marker="o", markersize=9, linestyle="none", color="black", markerfacecolor="none",
                       markeredgewidth=1.6, label="the same step in BF16")]
    legend = ax.legend(handles=handles, loc="lower right", fontsize=MIN_FONT_PT, framealpha=0.92,
                       borderaxespad=0.4, handlelength=2.2)
    legend.set_animated(True)
    artists.append(legend)
    for a in [shared["title"], *artists]:
        fig.draw_artist(a)
    # what the labels must not cover: the roofs (sampled), the ridge label and the legend
    renderer = fig.canvas.get_renderer()
    boxes = [[*a.get_window_extent(renderer).extents, SOLID] for a in artists if not isinstance(a, Line2D)]
    xs = np.geomspace(X_RANGE[0], X_RANGE[1], 90)
    for y in (np.minimum(xs * bw, peak) / TERA, np.full_like(xs, bf16_peak / TERA)):
        ok = (y >= Y_RANGE_TFLOPS[0]) & (y <= Y_RANGE_TFLOPS[1])
        for cx, cy in ax.transData.transform(np.column_stack([xs[ok], y[ok]])):
            boxes.append([cx - 2, cy - 2, cx + 2, cy + 2, 1.0])
    return artists, np.array(boxes, dtype=float).reshape(-1, 5)


def _heading_text(view: Lesson12View) -> str:
    import textwrap

    return textwrap.fill(view.heading, HEADING_WRAP)


class Lesson12Chart:
    """The byte bars and the roofline on one figure. Kept as bitmaps: the skeleton (drawn once) and
    one layer per (part, matmul format) with its roofs and legend; a move draws the rest.
    ``layer_misses`` counts layers drawn."""

    def __init__(self) -> None:
        self._shared: dict | None = None
        self.figures = CachedFigure(self._build, max_cached=1)
        self.last_figure = None
        self.layer_misses = 0

    def _build(self, _key):
        self._shared = _skeleton()
        return self._shared["fig"], self._shared

    def png(self, view: Lesson12View) -> bytes:
        if view.error is not None:
            return message_png(view.text)
        key = (view.part_id, view.compute_format, view.peak_flops_per_s, view.bf16_peak_flops_per_s)

        def update(shared):
            fig = shared["fig"]
            self.last_figure = fig
            kept, obstacles = shared["artists"], shared["obstacles"]

            def draw():
                self.layer_misses += 1
                for a in kept.pop(key, []):
                    a.remove()
                kept[key], obstacles[key] = _draw_part(shared, *key)
                while len(kept) > 16:  # more than the layer cache holds: the oldest can go
                    old, artists = kept.popitem(last=False)
                    obstacles.pop(old, None)
                    for a in artists:
                        a.remove()

            shared["layers"].show(fig, key, draw)

            def draw_heading():
                self.layer_misses += 1
                shared["heading"].set_text(_heading_text(view))
                fig.draw_artist(shared["heading"])

            shared["heading_layers"].show(fig, key + (view.heading,), draw_heading)
            # what the restored bitmaps show, for readers of the figure (tests)
            shared["heading"].set_text(_heading_text(view))
            shared["title"].set_text(f"Roofline: {view.part_name}, {view.compute_format} matmuls")
            for k, artists in kept.items():
                for a in artists:
                    a.set_visible(k == key)
            return _moving(shared, view, obstacles.get(key, np.zeros((0, 5))))

        import matplotlib

        with matplotlib.rc_context(TEXT_RC):
            return self.figures.render("skeleton", update)


def _place_label(label, xy, candidates, obstacles: np.ndarray, inside, renderer):
    """Put ``label`` at the first candidate (offset points, ha, va) that stays inside ``inside`` and
    overlaps none of ``obstacles`` (an N × 5 array of x0, y0, x1, y1 in display pixels and a weight);
    where none does, at the one that leaves the least of it outside and overlapping (each overlap
    counted at its obstacle's weight). Returns its box as a row of weight :data:`SOLID`."""
    best, best_cost = None, float("inf")
    label.xy = xy
    for dx, dy, ha, va in candidates:
        label.set_position((dx, dy))
        label.set_horizontalalignment(ha)
        label.set_verticalalignment(va)
        b = label.get_window_extent(renderer)
        w = np.clip(np.minimum(obstacles[:, 2], b.x1) - np.maximum(obstacles[:, 0], b.x0), 0, None)
        h = np.clip(np.minimum(obstacles[:, 3], b.y1) - np.maximum(obstacles[:, 1], b.y0), 0, None)
        iw = max(min(inside.x1, b.x1) - max(inside.x0, b.x0), 0.0)
        ih = max(min(inside.y1, b.y1) - max(inside.y0, b.y0), 0.0)
        cost = 4 * SOLID * (b.width * b.height - iw * ih) + float(np.sum(w * h * obstacles[:, 4]))
        if cost == 0:
            best = (dx, dy, ha, va)
            break
        if cost < best_cost:
            best, best_cost = (dx, dy, ha, va), cost
    dx, dy, ha, va = best
    label.set_position((dx, dy))
    label.set_horizontalalignment(ha)
    label.set_verticalalignment(va)
    b = label.get_window_extent(renderer)
    return np.array([[b.x0, b.y0, b.x1, b.y1, SOLID]])


def _clamp(x: float, lo: float, hi: float) -> tuple[float, bool]:
    return (lo, True) if x < lo else ((hi, True) if x > hi else (x, False))


def _moving(state: dict, view: Lesson12View, obstacles: np.ndarray) -> list:
    """Set the moving artists for ``view`` (labels clear of ``obstacles``, display boxes); returns
    them (to be drawn)."""
    fig, ax, mv = state["fig"], state["ax"], state["moving"]
    out = []
    # the bars: the BF16 step (100 %) and this step, each stacked weights → activations
    base_total = view.baseline_total_bytes
    rects = iter(mv["rects"])
    for i, by_kind in enumerate((view.baseline_bytes_by_kind, view.bytes_by_kind)):
        bottom = 0.0
        for kind in KINDS:
            r = next(rects)
            h = by_kind[kind] / base_total * 100
            colour, hatch, edge = BYTES_LOOK[kind]
            r.set_bounds(i - 0.36, bottom, 0.72, h)
            r.set_facecolor(colour)
            r.set_hatch(hatch)
            r.set_edgecolor(edge)
            r.set_visible(h > 0)
            bottom += h
            if h > 0:
                out.append(r)
        total = sum(by_kind.values())
        step = view.baseline_step_s if i == 0 else view.step_s
        mv["tops"][i].set_position((i, bottom + 1.5))
        mv["tops"][i].set_text(f"{si(total, 'B')}\n{duration(step)}")
        out.append(mv["tops"][i])
    mv["names"][0].set_text("all BF16\n(baseline)")
    mv["names"][1].set_text(f"{WEIGHT_SHORT[view.weights]}\nKV {view.kv}")
    out += mv["names"]

    renderer = fig.canvas.get_renderer()
    lo, hi = Y_RANGE_TFLOPS
    y0, _ = _clamp(view.baseline_achieved_flops_per_s / TERA, lo, hi)
    y1, _ = _clamp(view.achieved_flops_per_s / TERA, lo, hi)
    x0, off0 = _clamp(view.baseline_intensity, *X_RANGE)
    x1, off1 = _clamp(view.intensity, *X_RANGE)
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
    half = 11 * DPI / 72 / 2 + 1
    marks = np.array([[cx - half, cy - half, cx + half, cy + half, SOLID]
                      for cx, cy in ax.transData.transform([(x0, y0), (x1, y1)])])
    g = 9
    # below-right first (under a slanted roof is empty), then the other sides
    around = [(g, -g, "left", "top"), (0, -g - 2, "center", "top"), (-g, -g, "right", "top"), (g, 0, "left", "center"),
              (-g, 0, "right", "center"), (-g, g, "right", "bottom"), (0, g, "center", "bottom"),
              (g, g, "left", "bottom")]
    # farther out, for two points too close for the near places: below or above the pair's other label
    farther = [(g, -3 * g, "left", "top"), (-g, -3 * g, "right", "top"), (0, 3 * g, "center", "bottom"),
               (g, 3 * g, "left", "bottom")]
    same = view.weights == "bf16" and view.kv == "bf16"
    mv["label"].set_text(("BF16 = this step: " if same else "")
                         + f"{num(view.intensity)} FLOP/byte" + (" (off the chart)" if off1 else ""))
    taken = np.vstack([obstacles, marks])
    taken = np.vstack([taken, _place_label(mv["label"], (x1, y1), around + farther, taken, inside, renderer)])
    out.append(mv["label"])
    if not same:
        mv["base_label"].set_text(f"BF16: {num(view.baseline_intensity)} FLOP/byte"
                                  + (" (off the chart)" if off0 else ""))
        _place_label(mv["base_label"], (x0, y0), around[2:] + around[:2] + farther, taken, inside, renderer)
        out.append(mv["base_label"])
    mv["status"].set_text(status_text(view))
    out.append(mv["status"])
    return out


def lesson12_dashboard(model: str = "llama-3.1-70b", part: str = "h100-sxm"):
    """Model, part, context, weight format, KV format and batch -> the bytes of one decode step against
    BF16, the step on the roofline, and a table of the byte budget."""
    import ipywidgets as widgets
    from IPython.display import display

    style = {"description_width": "initial"}
    model_w, part_w = model_and_part(model, part, style)
    context_w = widgets.SelectionSlider(options=[(str(c) if c < 1024 else f"{c // 1024:,}K" if c < 2 ** 20 else "1M", c)
                                                 for c in CONTEXT_CHOICES],
                                        value=4096, description="context (tokens)", style=style,
                                        layout=widgets.Layout(width="380px"))
    batch_w = widgets.SelectionSlider(options=BATCH_CHOICES, value=1, description="batch", style=style,
                                      layout=widgets.Layout(width="340px"))
    weights_w = widgets.Dropdown(options=tuple(WEIGHT_FORMATS), value="bf16", description="weights", style=style,
                                 layout=widgets.Layout(width="260px"))
    kv_w = widgets.Dropdown(options=KV_FORMATS, value="bf16", description="KV cache", style=style,
                            layout=widgets.Layout(width="160px"))
    chart = Lesson12Chart()

    def render(model, part, context, weights, kv, batch):
        return lesson12_frame(lesson12_view(model, part, context, weights, kv, batch), chart)

    ui = build_dashboard({"model": model_w, "part": part_w, "context": context_w, "weights": weights_w, "kv": kv_w,
                          "batch": batch_w},
                         [["model", "part"], ["weights", "kv"], ["context", "batch"]], render)
    display(ui)
    return ui
