"""Shrinking the bytes (lesson 12): decode is shopping for bytes, and the field's answer is to move
fewer of them.

Everything here is computed from the catalog and :func:`~roofline_lessons.core.placement.place`,
so it follows the rules of :mod:`roofline_lessons.core.costs` (read its docstring). What a lesson
can quote:

- **KV bytes per sequence** against context, per attention kind: GQA (few KV heads), MQA (one: a
  labelled what-if, no catalog model uses it), MLA (DeepSeek-V3: one compressed latent of
  kv_lora_rank + qk_rope_head_dim elements per token and layer, shared by every head), sliding
  windows (Gemma 3, gpt-oss: local layers stop growing at their window, global ones do not) and
  hybrid linear attention (Qwen3.8-27B: Gated DeltaNet layers keep a constant state instead).
  Past a model's ``max_context_tokens`` a figure is a what-if, and is marked as one.
- **The byte budget of a decode step**: weights / KV cache / recurrent state / activations, and the
  levers that move each part (:func:`byte_levers`).
- **4-bit weights**: the batch-1 speed-up (the BF16 step ÷ the 4-bit step, estimate against
  estimate and lower bound against lower bound), the critical batch (the first batch whose step is
  compute-bound) for BF16, weight-only int4 and W4A4 fp4 through both figures, the dequantisation
  time and the batch at which weight-only int4 stops beating BF16 (the estimate's; the bound has
  none).
- **MLA absorbed against expanded** decode, FLOPs and bytes against context.
- **Paged KV for sliding windows**: sequences that fit when every layer gets full-context pages
  (a uniform allocator) against allocating per layer kind.

Units: bytes (show memory in GiB), seconds, FLOPs, tokens. Every step time says which figure it
is (:mod:`roofline_lessons.core.placement`): the **lower bound** (``time_lower_bound_s``: compulsory
bytes only, a weight-only dequantisation overlapped with the matmuls on separate units) or the
**estimate** (``time_estimate_s``: every operator's activations through HBM, the dequantisation in
series with the matmuls). Weight formats follow the package's default recipe (``quantized_weights``):
the linear layers of the transformer blocks; the embedding, the lm_head and the norms stay BF16.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from ..core.costs import Workload, model_cost, stored_weight_bytes
from ..core.dtypes import check_dtype, weight_bytes_per_element
from ..core.errors import RooflineInputError, whole_number
from ..core.hardware import Part, get_part
from ..core.memory import state_bytes_per_sequence, usable_capacity_bytes, weight_bytes
from ..core.models import Model, get_model
from ..core.placement import Placement, place

#: the lesson's models for the KV comparison: GQA, the MQA what-if, MLA, sliding windows, hybrid linear
MQA_BASE = "llama-3.1-8b"
KV_MODELS = ("llama-3.1-70b", MQA_BASE, "llama-3.1-8b-mqa-what-if", "deepseek-v3", "gemma-3-27b",
             "gpt-oss-120b", "qwen3.8-27b")
#: 1K → 1M tokens, powers of two
DEFAULT_CONTEXTS = tuple(2 ** k for k in range(10, 21))
#: attention kinds, as :func:`attention_kind` names them
KINDS = ("GQA", "MQA", "MLA", "sliding window + global", "hybrid linear + GQA")
#: every kind :func:`attention_kind` names: lesson 12's, and Llama 4's chunked local attention (not in its chart)
ALL_KINDS = KINDS + ("chunked local + global",)
#: the byte budget's parts, in stacking order
BUDGET_PARTS = ("weights", "KV cache", "state", "activations")
#: a lever "moves" a part when that part's bytes per generated token change by more than this fraction
MOVE_THRESHOLD = 0.01
DEFAULT_PAGE_TOKENS = 16  #: vLLM's default KV block size, in tokens


# ---- validation ------------------------------------------------------------------------------




def _contexts(contexts) -> np.ndarray:
    arr = np.asarray(DEFAULT_CONTEXTS if contexts is None else contexts)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf" or not np.all(np.isfinite(arr)) \
            or not np.all(arr == np.floor(arr)) or not np.all(arr >= 1):
        raise RooflineInputError(f"contexts must be a 1-D list of whole numbers of tokens >= 1, got {contexts!r}")
    return np.unique(arr.astype(np.int64))


# ---- the models -------------------------------------------------------------------------------


def mqa_what_if(model: Model | str = MQA_BASE) -> Model:
    """``model`` with one KV head (multi-query attention): a labelled what-if, not a released model.
    Only the K and V projections shrink; everything else is unchanged."""
    m = get_model(model)
    if m.is_mla or m.is_hybrid:
        raise RooflineInputError(f"the MQA what-if needs a plain attention model, got {m.id} "
                                 f"({attention_kind(m)})")
    return replace(m, id=f"{m.id}-mqa-what-if", name=f"{m.name}, MQA what-if (1 KV head)", num_key_value_heads=1,
                   published_total_params=None, published_active_params=None)


def sliding_what_if(model: Model | str, window: int = 1024, pattern: int = 6) -> Model:
    """``model`` with Gemma 3's layout: of every ``pattern`` layers, the first ``pattern`` − 1 attend to
    (and cache) at most ``window`` tokens, the last is global. A what-if; the weights are unchanged."""
    m = get_model(model)
    if m.is_mla or m.is_hybrid or m.sliding_window is not None or m.attention_chunk_size is not None:
        raise RooflineInputError(f"the sliding-window what-if needs a plain full-attention model, got {m.id} "
                                 f"({attention_kind(m)})")
    window, pattern = whole_number("window", window, 1), whole_number("pattern", pattern, 2)
    return replace(m, id=f"{m.id}-sliding-what-if", name=f"{m.name}, sliding-window what-if "
                   f"({pattern - 1} of {pattern} layers slide over {window:,} tokens)",
                   sliding_window=window, sliding_window_pattern=pattern,
                   published_total_params=None, published_active_params=None)


def mla_what_if(model: Model | str, like: Model | str = "deepseek-v3") -> Model:
    """``model`` with ``like``'s multi-head latent attention sizes (query and KV ranks, head widths)
    on its own heads: a what-if. The attention weights change shape too (the latent's projections)."""
    m, src = get_model(model), get_model(like)
    if m.is_mla or m.is_hybrid or m.sliding_window is not None or m.attention_chunk_size is not None or not src.is_mla:
        raise RooflineInputError(f"the MLA what-if needs a plain full-attention model and an MLA model to copy, "
                                 f"got {m.id} and {src.id}")
    return replace(m, id=f"{m.id}-mla-what-if", name=f"{m.name}, MLA what-if ({src.name}'s latent)",
                   q_lora_rank=src.q_lora_rank, kv_lora_rank=src.kv_lora_rank, qk_nope_head_dim=src.qk_nope_head_dim,
                   qk_rope_head_dim=src.qk_rope_head_dim, v_head_dim=src.v_head_dim,
                   published_total_params=None, published_active_params=None)


def hybrid_what_if(model: Model | str, like: Model | str = "qwen3.8-27b") -> Model:
    """``model`` with ``like``'s layout: of every ``full_attention_interval`` layers, all but the last
    are Gated DeltaNet layers with ``like``'s head sizes. A what-if; the attention weights change."""
    m, src = get_model(model), get_model(like)
    if (m.is_mla or m.is_hybrid or m.sliding_window is not None or m.attention_chunk_size is not None
            or not src.is_hybrid):
        raise RooflineInputError(f"the hybrid what-if needs a plain full-attention model and a hybrid model to copy, "
                                 f"got {m.id} and {src.id}")
    return replace(m, id=f"{m.id}-hybrid-what-if",
                   name=f"{m.name}, hybrid what-if ({src.full_attention_interval - 1} of "
                        f"{src.full_attention_interval} layers Gated DeltaNet)",
                   full_attention_interval=src.full_attention_interval, linear_num_key_heads=src.linear_num_key_heads,
                   linear_num_value_heads=src.linear_num_value_heads, linear_key_head_dim=src.linear_key_head_dim,
                   linear_value_head_dim=src.linear_value_head_dim, linear_conv_kernel_dim=src.linear_conv_kernel_dim,
                   state_dtype=src.state_dtype, published_total_params=None, published_active_params=None)


def _resolve(model: Model | str) -> Model:
    """A catalog id, the MQA what-if's id, or a Model."""
    if isinstance(model, str) and model.strip().lower() == f"{MQA_BASE}-mqa-what-if":
        return mqa_what_if(MQA_BASE)
    return get_model(model)


def is_what_if(model: Model | str) -> bool:
    """True for a model built here (not in the catalog)."""
    return _resolve(model).id.endswith("-what-if")


def attention_kind(model: Model | str) -> str:
    """How ``model``'s layers keep their history: one of :data:`ALL_KINDS`."""
    m = _resolve(model) if isinstance(model, str) else model
    if m.is_mla:
        return "MLA"
    if m.is_hybrid:
        return "hybrid linear + GQA"
    if m.num_sliding_attention_layers:
        return "sliding window + global"
    if m.num_chunked_attention_layers:
        return "chunked local + global"
    return "MQA" if m.num_key_value_heads == 1 else "GQA"


# ---- KV bytes against context -------------------------------------------------------------------


@dataclass(frozen=True)
class KvCurve:
    """One model's KV cache per sequence against context (the chart's input).

    ``context_tokens`` (tokens) and ``kv_bytes`` (bytes per sequence, windows applied per layer kind)
    are arrays of the same length; the model's ``max_context_tokens`` is one of the points when the
    range passes it, and ``beyond_limit_from`` is that context (tokens: everything above it is a
    what-if), or None when the whole range is within the model's limit. ``state_bytes`` is the
    constant recurrent state per sequence (Gated DeltaNet + short conv; 0 without one).
    """

    label: str
    context_tokens: np.ndarray
    kv_bytes: np.ndarray
    state_bytes: float
    beyond_limit_from: int | None
    kind: str

    @property
    def within_limit(self) -> np.ndarray:
        """True where the context is one the model supports."""
        if self.beyond_limit_from is None:
            return np.ones(self.context_tokens.shape, dtype=bool)
        return self.context_tokens <= self.beyond_limit_from

    def kv_bytes_at(self, context_tokens: int) -> float:
        """KV bytes per sequence at one of the curve's contexts."""
        hit = np.nonzero(self.context_tokens == context_tokens)[0]
        if hit.size == 0:
            raise RooflineInputError(f"context {context_tokens!r} is not on the curve of {self.label}; it has "
                                     f"{', '.join(f'{int(t):,}' for t in self.context_tokens)}")
        return float(self.kv_bytes[hit[0]])


def kv_curves(models=None, contexts=None, kv_dtype: str = "bf16") -> tuple[KvCurve, ...]:
    """KV cache bytes per sequence against context for each model (default :data:`KV_MODELS`, the
    MQA what-if included), at ``contexts`` tokens (default 1K → 1M, powers of two) in ``kv_dtype``.

    Each curve adds its model's ``max_context_tokens`` as a point when the range passes it and marks
    everything above it as a what-if (``beyond_limit_from``).
    """
    check_dtype(kv_dtype)
    ctx = _contexts(contexts)
    out = []
    for entry in (KV_MODELS if models is None else models):
        m = _resolve(entry)
        limit = m.max_context_tokens
        passes = ctx[-1] > limit
        t = np.unique(np.append(ctx, limit)) if passes and ctx[0] < limit else ctx
        out.append(KvCurve(
            label=m.name,
            context_tokens=t,
            kv_bytes=np.asarray(m.kv_cache_bytes_per_sequence(t, kv_dtype), dtype=float),
            state_bytes=float(state_bytes_per_sequence(m)),
            beyond_limit_from=int(limit) if passes else None,
            kind=attention_kind(m),
        ))
    return tuple(out)


@dataclass(frozen=True)
class KvRow:
    """One model's KV cache, layer kind by layer kind (bytes; layers; tokens)."""

    label: str
    kind: str
    full_layers: int  #: layers that cache every token (full attention or MLA)
    window_layers: int  #: sliding-window layers (cache at most ``window_tokens``)
    window_tokens: int | None
    deltanet_layers: int  #: layers with a constant state instead of a cache
    bytes_per_token_per_layer: float  #: one token in one caching layer (MLA: the latent)
    bytes_per_token: float  #: one token in every caching layer, before any window cap
    context_tokens: int
    kv_bytes: float  #: per sequence at ``context_tokens``, windows applied
    state_bytes: float  #: per sequence, constant
    max_context_tokens: int

    @property
    def beyond_limit(self) -> bool:
        return self.context_tokens > self.max_context_tokens


def kv_table(models=None, context_tokens: int = 32768, kv_dtype: str = "bf16") -> tuple[KvRow, ...]:
    """Per model: the caching layers by kind, bytes per token, and the KV cache and state of one
    sequence of ``context_tokens`` tokens."""
    check_dtype(kv_dtype)
    t = whole_number("context_tokens", context_tokens, 1)
    rows = []
    for entry in (KV_MODELS if models is None else models):
        m = _resolve(entry)
        rows.append(KvRow(
            label=m.name, kind=attention_kind(m),
            full_layers=m.num_full_attention_layers + m.num_mla_layers,
            window_layers=m.num_sliding_attention_layers,
            window_tokens=m.sliding_window if (m.num_sliding_attention_layers or m.full_attention_window) else None,
            deltanet_layers=m.num_deltanet_layers,
            bytes_per_token_per_layer=m.kv_bytes_per_token_per_layer(kv_dtype),
            bytes_per_token=m.kv_bytes_per_token(kv_dtype),
            context_tokens=t,
            kv_bytes=float(m.kv_cache_bytes_per_sequence(t, kv_dtype)),
            state_bytes=float(state_bytes_per_sequence(m)),
            max_context_tokens=m.max_context_tokens,
        ))
    return tuple(rows)


def mla_per_head_kv_elements(model: Model | str = "deepseek-v3") -> int:
    """Elements one token would add to one layer if MLA cached per-head K and V instead of its latent:
    heads × (key width qk_nope + qk_rope, + value width v_head_dim)."""
    m = get_model(model)
    if not m.is_mla:
        raise RooflineInputError(f"{m.id} has no multi-head latent attention")
    return m.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)


# ---- MLA: absorbed against expanded decode -------------------------------------------------------


@dataclass(frozen=True)
class MlaForms:
    """One decode step's attention (the MLA block, every layer) in both forms, against context.

    ``*_bytes`` are the estimate's unfused bytes (every operator's activations through HBM: the
    expanded form writes and reads back every head's K and V); ``*_compulsory_bytes`` are what no
    implementation avoids (the block's weights, the latents read, the new one written), the same in
    both forms: expanded decode costs FLOPs, not compulsory bytes (:meth:`lower_bound_s`)."""

    model: Model
    batch: int
    context_tokens: np.ndarray  #: tokens cached before the step
    absorbed_flops: np.ndarray
    absorbed_bytes: np.ndarray
    expanded_flops: np.ndarray
    expanded_bytes: np.ndarray
    absorbed_step_flops: np.ndarray  #: the whole step (every operator), absorbed
    expanded_step_flops: np.ndarray
    absorbed_compulsory_bytes: np.ndarray  #: the MLA block's compulsory bytes, absorbed
    expanded_compulsory_bytes: np.ndarray  #: … expanded (the same latents and weights)

    @property
    def flops_ratio(self) -> np.ndarray:
        """Expanded ÷ absorbed attention FLOPs."""
        return self.expanded_flops / self.absorbed_flops

    def compute_time_s(self, part: Part | str, form: str = "absorbed") -> np.ndarray:
        """The MLA block's FLOPs in ``form`` at ``part``'s dense BF16 peak (seconds; the forms run in BF16)."""
        return getattr(self, f"{_mla_form(form)}_flops") / get_part(part).peak_flops_per_s("bf16")

    def memory_lower_bound_s(self, part: Part | str, form: str = "absorbed") -> np.ndarray:
        """The MLA block's compulsory bytes in ``form`` at ``part``'s memory bandwidth (seconds)."""
        return getattr(self, f"{_mla_form(form)}_compulsory_bytes") / get_part(part).memory_bandwidth_bytes_per_s

    def lower_bound_s(self, part: Part | str, form: str = "absorbed") -> np.ndarray:
        """The MLA block's lower bound on ``part`` (seconds): the longer of :meth:`compute_time_s` and
        :meth:`memory_lower_bound_s` (overlapped, no latency). One chip's rates: the block of a model
        that needs several chips is priced as if one held it, a what-if that shows which time binds."""
        return np.maximum(self.compute_time_s(part, form), self.memory_lower_bound_s(part, form))


def _mla_form(form: str) -> str:
    if form not in ("absorbed", "expanded"):
        raise RooflineInputError(f"form must be 'absorbed' or 'expanded', got {form!r}")
    return form


def mla_forms(model: Model | str = "deepseek-v3", contexts=(1024, 4096, 32768, 131072), batch: int = 1) -> MlaForms:
    """FLOPs and bytes of the MLA block of one decode step, absorbed (attention in the latent space)
    and expanded (kv_b_proj re-expands every cached latent to per-head K and V, every step)."""
    m = get_model(model)
    if not m.is_mla:
        raise RooflineInputError(f"{m.id} has no multi-head latent attention (try deepseek-v3)")
    b = whole_number("batch", batch, 1)
    t = _contexts(contexts).astype(float)
    a = model_cost(m, phase="decode", batch=b, context_tokens=t, mla_absorbed=True)
    e = model_cost(m, phase="decode", batch=b, context_tokens=t, mla_absorbed=False)
    arr = lambda x: np.broadcast_to(np.asarray(x, dtype=float), t.shape).copy()
    return MlaForms(model=m, batch=b, context_tokens=t.astype(np.int64),
                    absorbed_flops=arr(a.block_total("mla", "flops")), absorbed_bytes=arr(a.block_total("mla", "bytes")),
                    expanded_flops=arr(e.block_total("mla", "flops")), expanded_bytes=arr(e.block_total("mla", "bytes")),
                    absorbed_step_flops=arr(a.flops), expanded_step_flops=arr(e.flops),
                    absorbed_compulsory_bytes=arr(a.block_total("mla", "compulsory_bytes")),
                    expanded_compulsory_bytes=arr(e.block_total("mla", "compulsory_bytes")))


# ---- the byte budget of a decode step -----------------------------------------------------------


@dataclass(frozen=True)
class ByteBudget:
    """One decode step's bytes by part, and where it sits (bytes; seconds)."""

    label: str
    placement: Placement
    weight_bytes: float
    kv_bytes: float  #: KV cache read + written
    state_bytes: float  #: recurrent state read + written
    activation_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes + self.state_bytes + self.activation_bytes

    @property
    def batch(self) -> int:
        return int(self.placement.workload.batch)

    def parts(self) -> dict[str, float]:
        """Bytes per step by part, in :data:`BUDGET_PARTS` order."""
        return dict(zip(BUDGET_PARTS, (self.weight_bytes, self.kv_bytes, self.state_bytes, self.activation_bytes)))

    def parts_per_token(self) -> dict[str, float]:
        """Bytes per generated token by part (per step ÷ batch)."""
        return {k: v / self.batch for k, v in self.parts().items()}

    def shares(self) -> dict[str, float]:
        """Each part's fraction of the step's bytes."""
        return {k: v / self.total_bytes for k, v in self.parts().items()}

    @property
    def compulsory_bytes(self) -> float:
        """The bytes no implementation can avoid (weights once, KV and state, ids and logits): what the
        lower bound reads; ``total_bytes`` is the unfused view the estimate reads."""
        return float(self.placement.cost.compulsory_bytes)

    @property
    def step_estimate_s(self) -> float:
        """The step's estimate, seconds (unfused activations, dequantisation in series)."""
        return float(self.placement.time_estimate_s)

    @property
    def step_lower_bound_s(self) -> float:
        """The step's lower bound, seconds (compulsory bytes, dequantisation overlapped)."""
        return float(self.placement.time_lower_bound_s)


def byte_budget(model: Model | str, part: Part | str, batch: int = 1, context_tokens: int = 4096, *,
                label: str | None = None, **formats) -> ByteBudget:
    """The bytes one decode step moves, split weights / KV / state / activations. ``formats``:
    Workload fields (``weights_dtype``, ``kv_dtype``, ``compute_dtype``, ``quantized_weights``,
    ``weight_group_size``…)."""
    b = whole_number("batch", batch, 1)
    t = whole_number("context_tokens", context_tokens, 0)
    p = place(_resolve(model), part, phase="decode", batch=b, context_tokens=t, **formats)
    c = p.cost
    return ByteBudget(label=label or _format_label(p), placement=p, weight_bytes=float(c.weight_bytes),
                      kv_bytes=float(c.kv_bytes), state_bytes=float(c.state_bytes),
                      activation_bytes=float(c.activation_bytes))


def _format_label(p: Placement) -> str:
    w = p.workload
    weights = w.weights_dtype.upper() if w.weights_dtype != "fp4" else "MXFP4"
    return f"{p.model.name}, {weights} weights, {w.kv_dtype.upper()} KV, batch {int(w.batch):,}"


@dataclass(frozen=True)
class LeverEffect:
    """One lever against the baseline: bytes per generated token by part, before and after."""

    lever: str
    what_if: bool  #: the lever changes the architecture: a model nobody released
    before: ByteBudget
    after: ByteBudget

    def change(self) -> dict[str, float]:
        """Per part: bytes per generated token after ÷ before − 1 (nan where the part was 0 and stays 0;
        inf where it appears)."""
        b, a = self.before.parts_per_token(), self.after.parts_per_token()
        out = {}
        for k in BUDGET_PARTS:
            if b[k] == 0:
                out[k] = float("nan") if a[k] == 0 else float("inf")
            else:
                out[k] = a[k] / b[k] - 1.0
        return out

    @property
    def fits_in_memory(self) -> bool:
        """Whether the lever's step (its weights and every sequence's cache and state) fits the part's
        nominal capacity."""
        return bool(np.all(self.after.placement.fits_in_memory))

    @property
    def display_name(self) -> str:
        """The lever's name with its caveats: "what-if" for an architecture nobody released, "what-if
        (does not fit)" for a step that does not fit the part."""
        marks = (["what-if"] if self.what_if else []) + ([] if self.fits_in_memory else ["does not fit"])
        if marks and marks[-1] == "does not fit" and not self.what_if:
            marks = ["what-if (does not fit)"]
        return " — ".join([self.lever] + marks)

    @property
    def moves(self) -> tuple[str, ...]:
        """The parts whose bytes per generated token change by more than :data:`MOVE_THRESHOLD`."""
        return tuple(k for k, v in self.change().items() if not math.isnan(v) and abs(v) > MOVE_THRESHOLD)

    @property
    def main_part(self) -> str:
        """The part whose bytes per generated token fall the most (absolute)."""
        b, a = self.before.parts_per_token(), self.after.parts_per_token()
        return max(BUDGET_PARTS, key=lambda k: b[k] - a[k])

    @property
    def speedup_estimate(self) -> float:
        """Time per generated token, before ÷ after, estimate against estimate (step ÷ batch)."""
        return (self.before.step_estimate_s / self.before.batch) / (self.after.step_estimate_s / self.after.batch)

    @property
    def speedup_of_bounds(self) -> float:
        """Time per generated token, before ÷ after, lower bound against lower bound (a ratio of two
        bounds: what the lever gives when both steps reach their bounds, not itself a bound)."""
        return ((self.before.step_lower_bound_s / self.before.batch)
                / (self.after.step_lower_bound_s / self.after.batch))


def byte_levers(model: Model | str = "llama-3.1-70b", part: Part | str = "h100-sxm", batch: int = 16,
                context_tokens: int = 8192, batch_factor: int = 8) -> tuple[LeverEffect, ...]:
    """Each lever applied alone to one decode step of ``model`` (BF16 weights and KV) and its effect
    on the bytes per generated token, part by part: 4-bit weights (int4 group 128, MXFP4), FP8/INT8/
    INT4 KV, the architecture what-ifs (MQA, MLA, sliding windows, hybrid linear layers) and batching
    (``batch_factor`` × the batch)."""
    m = get_model(model)
    b = whole_number("batch", batch, 1)
    t = whole_number("context_tokens", context_tokens, 1)
    k = whole_number("batch_factor", batch_factor, 2)
    base = byte_budget(m, part, b, t, label="baseline")
    levers = [
        ("int4 weights (group 128, weight-only)", False, m, b, {"weights_dtype": "int4"}),
        ("MXFP4 weights (fp4, blocks of 32, weight-only)", False, m, b, {"weights_dtype": "fp4"}),
        ("FP8 KV cache", False, m, b, {"kv_dtype": "fp8"}),
        ("INT8 KV cache (bf16 scale per token and head)", False, m, b, {"kv_dtype": "int8"}),
        ("INT4 KV cache (bf16 scale per token and head)", False, m, b, {"kv_dtype": "int4"}),
        ("GQA → MQA (one KV head)", True, mqa_what_if(m), b, {}),
        ("MLA (DeepSeek-V3's latent)", True, mla_what_if(m), b, {}),
        ("sliding windows (5 of 6 layers, 1,024 tokens)", True, sliding_what_if(m), b, {}),
        ("hybrid linear layers (3 of 4 Gated DeltaNet)", True, hybrid_what_if(m), b, {}),
        (f"batching (batch {b:,} → {b * k:,})", False, m, b * k, {}),
    ]
    return tuple(LeverEffect(name, wi, base, byte_budget(mm, part, bb, t, label=name, **f))
                 for name, wi, mm, bb, f in levers)


# ---- weight formats --------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredWeights:
    """A model's resident weights in one format (bytes)."""

    label: str
    weights_dtype: str
    recipe: str  #: which weights take the format (``quantized_weights``)
    bytes: float
    bf16_bytes: float

    @property
    def ratio(self) -> float:
        """BF16 bytes ÷ these bytes."""
        return self.bf16_bytes / self.bytes


def stored_weights(model: Model | str, weights_dtype: str = "int4", *, quantized_weights: str | None = None,
                   weight_group_size: int | None = None) -> StoredWeights:
    """Bytes of all of ``model``'s weights in ``weights_dtype`` under its recipe (4-bit: scales
    included, embedding, lm_head and norms BF16 unless ``quantized_weights`` says otherwise)."""
    m = get_model(model)
    w = Workload(phase="decode", weights_dtype=weights_dtype, quantized_weights=quantized_weights,
                 weight_group_size=weight_group_size)
    return StoredWeights(label=m.name, weights_dtype=weights_dtype, recipe=w.weight_recipe,
                         bytes=stored_weight_bytes(model_cost(m, w)), bf16_bytes=weight_bytes(m, "bf16"))


def int4_bytes_per_weight(group_size: int = 128, zero_point: bool = False) -> float:
    """Bytes per int4 weight with one bf16 scale per ``group_size`` weights: 0.5 + 2 / group (the
    course's symmetric minimum). ``zero_point=True`` adds a 4-bit zero point per group (asymmetric, as
    AWQ stores by default): + 0.5 / group."""
    g = whole_number("group_size", group_size, 1)
    return weight_bytes_per_element("int4", g) + (ZERO_POINT_BYTES / g if zero_point else 0.0)


ZERO_POINT_BYTES = 0.5  #: one 4-bit zero point per group (asymmetric int4), bytes
NVFP4_BLOCK = 16  #: NVFP4: E2M1 values in blocks of 16 elements …
NVFP4_SCALE_BYTES = 1  #: … each with one E4M3 (8-bit) scale …
NVFP4_TENSOR_SCALE_BYTES = 4  #: … and one FP32 scale per tensor


def nvfp4_bytes_per_weight(tensor_elements: int | None = None) -> float:
    """Bytes per NVFP4 weight: 0.5 + 1 / 16 (an E4M3 scale per 16-element block), plus the per-tensor
    FP32 scale's share 4 / ``tensor_elements`` (left out when None: negligible for any real matrix).
    Not a course dtype: the placements price MXFP4 (``fp4``)."""
    extra = 0.0 if tensor_elements is None else NVFP4_TENSOR_SCALE_BYTES / whole_number("tensor_elements",
                                                                                  tensor_elements, 1)
    return 0.5 + NVFP4_SCALE_BYTES / NVFP4_BLOCK + extra


# ---- 4-bit weights: batch 1, the critical batch, dequantisation ------------------------------------


@dataclass(frozen=True)
class FormatSpeedup:
    """The batch-1 decode step in BF16 and in a 4-bit format (seconds; bytes)."""

    bf16: Placement
    quantized: Placement

    @property
    def speedup_estimate(self) -> float:
        """BF16 estimate ÷ 4-bit estimate (``time_estimate_s``): the speed-up the roofline predicts
        when both steps are priced by the estimate's conventions."""
        return float(self.bf16.time_estimate_s) / float(self.quantized.time_estimate_s)

    @property
    def speedup_of_bounds(self) -> float:
        """BF16 lower bound ÷ 4-bit lower bound (``time_lower_bound_s``): the speed-up when both
        kernels reach their bounds. A ratio of two bounds is not itself a bound on the speed-up."""
        return float(self.bf16.time_lower_bound_s) / float(self.quantized.time_lower_bound_s)

    @property
    def weight_bytes_ratio(self) -> float:
        """BF16 weight bytes ÷ 4-bit weight bytes read per step (the scales and BF16 layers included)."""
        return float(self.bf16.cost.weight_bytes) / float(self.quantized.cost.weight_bytes)

    @property
    def element_ratio(self) -> float:
        """2 bytes ÷ the 4-bit format's bytes per weight (its scale's share included)."""
        w = self.quantized.workload
        return 2.0 / weight_bytes_per_element(w.weights_dtype, w.weight_group_size)

    def other_bytes(self, which: str = "quantized", compulsory: bool = False) -> float:
        """Bytes of the step that are not weights: the estimate's unfused view (KV, state, every
        activation), or with ``compulsory=True`` the bound's (KV, state, token ids and logits)."""
        p = self.quantized if which == "quantized" else self.bf16
        total = p.cost.compulsory_bytes if compulsory else p.cost.bytes
        return float(total - p.cost.weight_bytes)


def format_speedup(model: Model | str = "llama-3.1-70b", part: Part | str = "h100-sxm", context_tokens: int = 4096,
                   weights_dtype: str = "int4", batch: int = 1, **formats) -> FormatSpeedup:
    """Batch-1 decode (by default) in BF16 and with ``weights_dtype`` weights, both from place()."""
    b = whole_number("batch", batch, 1)
    t = whole_number("context_tokens", context_tokens, 0)
    bf16 = place(model, part, phase="decode", batch=b, context_tokens=t)
    q = place(model, part, phase="decode", batch=b, context_tokens=t, weights_dtype=weights_dtype, **formats)
    return FormatSpeedup(bf16=bf16, quantized=q)


#: the three formats of the critical-batch comparison: label → Workload fields
WEIGHT_FORMATS = {
    "BF16": {},
    "int4 weight-only (W4A16)": {"weights_dtype": "int4"},
    "fp4 W4A4 (MXFP4 weights and matmuls)": {"weights_dtype": "fp4", "compute_dtype": "fp4"},
}


def _first(mask: np.ndarray, batch: np.ndarray) -> int | None:
    hit = np.nonzero(mask)[0]
    return int(batch[hit[0]]) if hit.size else None


@dataclass(frozen=True)
class BatchSweep:
    """Decode steps at every batch 1 … ``max_batch`` in one format (arrays indexed by batch − 1;
    seconds). Both figures of each step: the **estimate** (``step_estimate_s``: unfused bytes,
    ``memory_time_s``; the dequantisation in series, ``compute_time_s`` = tensor + dequant) and the
    **lower bound** (``step_lower_bound_s``: compulsory bytes, ``memory_lower_bound_s``; the
    dequantisation overlapped, ``compute_lower_bound_s`` = max(tensor, dequant))."""

    label: str
    batch: np.ndarray
    step_estimate_s: np.ndarray
    step_lower_bound_s: np.ndarray
    tensor_time_s: np.ndarray  #: the FLOPs on the tensor units, no dequantisation
    compute_time_s: np.ndarray  #: the estimate's: tensor + dequant, in series
    compute_lower_bound_s: np.ndarray  #: the bound's: max(tensor, dequant), overlapped
    memory_time_s: np.ndarray  #: the estimate's: every unfused byte
    memory_lower_bound_s: np.ndarray  #: the bound's: compulsory bytes only
    dequant_time_s: np.ndarray
    flops: np.ndarray  #: the step's model FLOPs (the dequantisation is not model math)
    intensity_per_weight_byte: np.ndarray  #: the weight lens: weight-matmul FLOPs per weight byte
    matmul_peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    ridge_point_flop_per_byte: np.ndarray  #: the estimate's: FLOPs ÷ (tensor + dequant time) ÷ bandwidth

    @property
    def ridge_point_lower_bound_flop_per_byte(self) -> np.ndarray:
        """The bound's ridge: FLOPs ÷ max(tensor, dequant time) ÷ bandwidth — the matmuls' own ridge
        wherever the tensor time is the longer (FLOP/byte)."""
        return self.flops / self.compute_lower_bound_s / self.bandwidth_bytes_per_s

    @property
    def compute_bound(self) -> np.ndarray:
        """True where the estimate's compute time reaches its memory time."""
        return self.compute_time_s >= self.memory_time_s

    @property
    def critical_batch_estimate(self) -> int | None:
        """The smallest batch whose **estimate** is compute-bound (None up to ``max_batch``): unfused
        bytes, the dequantisation (weight-only formats) added in series to the matmuls."""
        return _first(self.compute_bound, self.batch)

    @property
    def critical_batch_lower_bound(self) -> int | None:
        """The smallest batch whose **lower bound** is compute-bound (None up to ``max_batch``):
        compulsory bytes, the dequantisation overlapped with the matmuls (``lower_bound_roof``)."""
        return _first(self.compute_lower_bound_s >= self.memory_lower_bound_s, self.batch)

    @property
    def critical_batch_without_dequant(self) -> int | None:
        """The estimate's bytes with the dequantisation overlapped instead of in series: the smallest
        batch where max(tensor, dequant) reaches the unfused memory time (None up to ``max_batch``).
        It isolates the dequant convention from the unfused-activations one."""
        return _first(np.maximum(self.tensor_time_s, self.dequant_time_s) >= self.memory_time_s, self.batch)

    @property
    def weight_lens_critical_batch_estimate(self) -> int | None:
        """The weight lens (weight-matmul FLOPs per weight byte) against the estimate's ridge, the
        dequantisation in series (lesson 4's :func:`~roofline_lessons.topics.batching.critical_batch`
        with ``lens="weights only"``)."""
        return _first(self.intensity_per_weight_byte >= self.ridge_point_flop_per_byte, self.batch)

    @property
    def weight_lens_critical_batch_lower_bound(self) -> int | None:
        """The weight lens against the bound's ridge, the dequantisation overlapped: the matmuls'
        own ridge."""
        return _first(self.intensity_per_weight_byte >= self.ridge_point_lower_bound_flop_per_byte, self.batch)

    def _per_added_sequence(self, values: np.ndarray) -> float:
        """How much ``values`` grows per sequence added to the batch: decode's FLOPs, bytes and times
        are linear in the batch at a fixed context, so the slope between the sweep's ends is exact."""
        span = float(self.batch[-1] - self.batch[0])
        if span <= 0:
            raise RooflineInputError("a per-sequence slope needs a sweep of at least two batches")
        return float(values[-1] - values[0]) / span

    @property
    def added_sequence_intensity_lower_bound(self) -> float:
        """FLOPs each added sequence brings per compulsory byte it adds (its KV cache read and written, its
        token in and logits out; the weights are shared), FLOP/byte. The step's compulsory intensity tends
        to it as the batch grows."""
        return self._per_added_sequence(self.flops) / (
            self._per_added_sequence(self.memory_lower_bound_s) * self.bandwidth_bytes_per_s)

    @property
    def added_sequence_intensity_estimate(self) -> float:
        """As :attr:`added_sequence_intensity_lower_bound`, per unfused byte (its activations too)."""
        return self._per_added_sequence(self.flops) / (
            self._per_added_sequence(self.memory_time_s) * self.bandwidth_bytes_per_s)

    @property
    def added_sequence_ridge_flop_per_byte(self) -> float:
        """The ridge of the FLOPs each added sequence brings: those FLOPs ÷ the tensor time they add ÷
        the bandwidth (the dequantisation does not grow with the batch, so both figures share it). If a
        step is memory-bound at batch 1 and its added-sequence intensity is below this ridge, every
        added sequence adds more memory time than compute time: the step is memory-bound at every batch."""
        return self._per_added_sequence(self.flops) / (
            self._per_added_sequence(self.tensor_time_s) * self.bandwidth_bytes_per_s)

    @property
    def memory_bound_at_every_batch_lower_bound(self) -> bool:
        """True when the lower bound is memory-bound at batch 1 and each added sequence adds more
        compulsory memory time than tensor time (and the dequantisation, constant in the batch, never
        catches the memory time): then no batch, however large, turns the bound compute-bound."""
        first = self.compute_lower_bound_s[0] < self.memory_lower_bound_s[0]
        return bool(first and self.added_sequence_intensity_lower_bound < self.added_sequence_ridge_flop_per_byte)

    @property
    def dequant_sets_lower_bound(self) -> np.ndarray:
        """True at each batch where the dequantisation (a convention: FLOPs per weight at the FP32 rate)
        is the longest of the bound's times; a lesson that quotes the bound asserts this is nowhere
        true, so the bound rests on the tensor-core FLOPs and the compulsory bytes alone."""
        return self.dequant_time_s >= np.maximum(self.tensor_time_s, self.memory_lower_bound_s)

    @property
    def overlapped_step_time_s(self) -> np.ndarray:
        """The estimate with the dequantisation overlapped instead of in series (unfused bytes kept):
        max(tensor, dequant, memory), seconds. Equal to ``step_estimate_s`` without a dequant."""
        return np.maximum(np.maximum(self.tensor_time_s, self.dequant_time_s), self.memory_time_s)


def batch_sweep(model: Model | str, part: Part | str, context_tokens: int, max_batch: int = 4096, label: str = "",
                **formats) -> BatchSweep:
    """Place decode steps at batches 1 … ``max_batch`` (place() on one array)."""
    t = whole_number("context_tokens", context_tokens, 0)
    n = whole_number("max_batch", max_batch, 1)
    b = np.arange(1, n + 1, dtype=float)
    p = place(model, part, phase="decode", batch=b, context_tokens=t, **formats)
    arr = lambda x: np.broadcast_to(np.asarray(x, dtype=float), b.shape).copy()
    return BatchSweep(label=label, batch=b.astype(np.int64), step_estimate_s=arr(p.time_estimate_s),
                      step_lower_bound_s=arr(p.time_lower_bound_s), tensor_time_s=arr(p.tensor_time_s),
                      compute_time_s=arr(p.compute_time_s), compute_lower_bound_s=arr(p.compute_lower_bound_s),
                      memory_time_s=arr(p.memory_time_s), memory_lower_bound_s=arr(p.memory_lower_bound_s),
                      dequant_time_s=arr(p.dequant_time_s),
                      flops=arr(p.cost.flops), intensity_per_weight_byte=arr(p.intensity_per_weight_byte),
                      matmul_peak_flops_per_s=float(p.matmul_peak_flops_per_s),
                      bandwidth_bytes_per_s=float(p.bandwidth_bytes_per_s),
                      ridge_point_flop_per_byte=arr(p.ridge_point_flop_per_byte))


def critical_batches(model: Model | str = "llama-3.1-70b", part: Part | str = "b200", context_tokens: int = 128,
                     formats: dict | None = None, max_batch: int = 4096, **common) -> tuple[BatchSweep, ...]:
    """One batch sweep per weight format (default :data:`WEIGHT_FORMATS`); each one's
    ``critical_batch_estimate`` and ``critical_batch_lower_bound`` are where its step turns
    compute-bound by each figure. ``common``: fields every format shares (``kv_dtype``…)."""
    fmts = WEIGHT_FORMATS if formats is None else formats
    return tuple(batch_sweep(model, part, context_tokens, max_batch, label=name, **{**common, **f})
                 for name, f in fmts.items())


def weight_only_crossover(model: Model | str = "llama-3.1-70b", part: Part | str = "h100-sxm",
                          context_tokens: int = 128, weights_dtype: str = "int4", max_batch: int = 4096,
                          figure: str = "estimate", **common) -> int | None:
    """The smallest batch at which a weight-only ``weights_dtype`` step is no faster than the BF16 step
    (None up to ``max_batch``), by ``figure``: ``"estimate"`` (the dequantisation in series, on top of
    the BF16 matmuls, eats the gain from reading fewer bytes) or ``"lower bound"`` (overlapped: then
    the step is never slower, only equal once both are compute-bound, so this is where they meet)."""
    if figure not in ("estimate", "lower bound"):
        raise RooflineInputError(f"figure must be 'estimate' or 'lower bound', got {figure!r}")
    bf16 = batch_sweep(model, part, context_tokens, max_batch, **common)
    q = batch_sweep(model, part, context_tokens, max_batch, weights_dtype=weights_dtype, **common)
    if figure == "estimate":
        return _first(q.step_estimate_s >= bf16.step_estimate_s, bf16.batch)
    return _first(q.step_lower_bound_s >= bf16.step_lower_bound_s * (1 - 1e-12), bf16.batch)


# ---- paged KV for sliding-window models ------------------------------------------------------------


@dataclass(frozen=True)
class PagedCapacity:
    """Sequences of ``context_tokens`` that fit the KV pool under two page allocators (bytes; tokens)."""

    model: Model
    part: Part
    context_tokens: int
    page_tokens: int
    pool_bytes: float  #: usable capacity − weights
    uniform_bytes_per_sequence: float  #: every caching layer gets full-context pages
    per_kind_bytes_per_sequence: float  #: local layers' pages capped at the window
    full_pages: int  #: pages per sequence in a layer that keeps every token
    window_pages: int  #: pages per sequence in a sliding-window layer (per kind)

    @property
    def uniform_sequences(self) -> int:
        return max(0, math.floor(self.pool_bytes / self.uniform_bytes_per_sequence))

    @property
    def per_kind_sequences(self) -> int:
        return max(0, math.floor(self.pool_bytes / self.per_kind_bytes_per_sequence))

    @property
    def uniform_loss(self) -> float:
        """The share of the per-kind capacity (in sequences) a uniform allocator loses."""
        return 1.0 - self.uniform_sequences / self.per_kind_sequences if self.per_kind_sequences else 0.0


def window_pages(window_tokens: int, context_tokens: int, page_tokens: int = DEFAULT_PAGE_TOKENS) -> int:
    """Pages a sliding-window layer holds for one sequence of ``context_tokens`` tokens: those that
    hold its last min(context, window) tokens. Positions t − w … t − 1 lie on pages ⌊(t − w)/page⌋ …
    ⌊(t − 1)/page⌋, so a window whose start falls inside a page holds one page more than
    ceil(window / page) (the oldest page is freed only once all its tokens have left the window)."""
    w, t, p = (whole_number("window_tokens", window_tokens, 1), whole_number("context_tokens", context_tokens, 1),
               whole_number("page_tokens", page_tokens, 1))
    if t <= w:
        return math.ceil(t / p)
    return (t - 1) // p - (t - w) // p + 1


def paged_capacity(model: Model | str = "gemma-3-27b", part: Part | str = "h100-sxm", context_tokens: int = 32768,
                   page_tokens: int = DEFAULT_PAGE_TOKENS, *, kv_dtype: str = "bf16", weights_dtype: str = "bf16",
                   memory_utilization: float = 0.9, quantized_weights: str | None = None,
                   weight_group_size: int | None = None) -> PagedCapacity:
    """Sequences of ``context_tokens`` tokens whose KV pages fit what the weights leave of the part's
    usable memory (``memory_utilization``, 0.9 by default, vLLM's long-standing default): a **uniform** allocator gives every
    caching layer ceil(context / page) pages; allocating **per layer kind** gives a sliding-window
    layer only :func:`window_pages`. A page holds ``page_tokens`` tokens of one layer's K and V.
    ``weights_dtype``, ``quantized_weights`` and ``weight_group_size`` set the stored weights (gpt-oss
    as shipped: ``weights_dtype="fp4", quantized_weights="experts"``)."""
    m, p = get_model(model), get_part(part)
    check_dtype(kv_dtype)
    t = whole_number("context_tokens", context_tokens, 1)
    pg = whole_number("page_tokens", page_tokens, 1)
    if not m.num_sliding_attention_layers:
        raise RooflineInputError(f"{m.id} has no sliding-window layers: both allocators give the same pages "
                                 "(try gemma-3-27b or gpt-oss-120b)")
    page_bytes = pg * m.kv_bytes_per_token_per_layer(kv_dtype)
    full = math.ceil(t / pg)
    local = window_pages(m.sliding_window, t, pg)
    caching = m.num_full_attention_layers + m.num_sliding_attention_layers
    uniform = caching * full * page_bytes
    per_kind = (m.num_full_attention_layers * full + m.num_sliding_attention_layers * local) * page_bytes
    pool = usable_capacity_bytes(p, memory_utilization) - weight_bytes(
        m, weights_dtype, quantized_weights=quantized_weights, weight_group_size=weight_group_size)
    return PagedCapacity(model=m, part=p, context_tokens=t, page_tokens=pg, pool_bytes=float(pool),
                         uniform_bytes_per_sequence=float(uniform), per_kind_bytes_per_sequence=float(per_kind),
                         full_pages=full, window_pages=local)


# ---- a cache split by layer kind (appended for lesson 12's dashboard) ------------------------------


def kv_split_bytes_per_sequence(model: Model | str, context_tokens: int, kv_dtype: str = "bf16") -> tuple[float, float]:
    """One sequence's KV cache at ``context_tokens`` cached tokens, in ``kv_dtype``, split in two
    (bytes): the sliding-window layers' (each capped at its window) and the rest's (the layers that
    keep every token, or a model-wide window; a chunked-attention model's chunked layers, which hold
    only the open chunk, count with the rest)."""
    m = _resolve(model)
    sliding = m.num_sliding_attention_layers * m.kv_bytes_per_token_per_layer(kv_dtype) * min(context_tokens,
                                                                                              m.sliding_window or 0)
    return sliding, float(m.kv_cache_bytes_per_sequence(context_tokens, kv_dtype)) - sliding


# ---- a step in chosen formats beside the same step in BF16 (appended for lesson 12's dashboard) ----


def _pair(read):
    """Two properties, each worked out once: ``read`` of the step (``placement``) and of the same
    step in BF16 (``baseline``)."""
    return cached_property(lambda s: read(s.placement)), cached_property(lambda s: read(s.baseline))


def _bytes_by_part(p: Placement) -> dict[str, float]:
    c = p.cost
    return dict(zip(BUDGET_PARTS, (float(c.weight_bytes), float(c.kv_bytes), float(c.state_bytes),
                                   float(c.activation_bytes))))


@dataclass(frozen=True, eq=False)
class FormatStep:
    """One decode step in chosen number formats (``placement``) beside the same step with BF16
    weights, KV cache and matmuls (``baseline``); a ``baseline_`` name is the BF16 step's figure.
    Bytes are per step (all sequences, the unfused view the estimate reads) unless named per
    sequence, per token or stored; times in seconds, rates in FLOP/s. ``step_s`` is the estimate
    (``time_estimate_s``) and ``step_lower_bound_s`` the lower bound; ``bound`` is the estimate's
    binding roof and ``lower_bound_roof`` the bound's."""

    placement: Placement
    baseline: Placement
    kv_sliding_bytes_per_sequence: float  #: the sliding-window layers' cache after the step
    kv_growing_bytes_per_sequence: float  #: the cache of the layers that keep every token

    #: :data:`BUDGET_PARTS` (weights, KV cache read and written, state read and written, activations) -> bytes
    bytes_by_kind, baseline_bytes_by_kind = _pair(_bytes_by_part)
    total_bytes, baseline_total_bytes = _pair(lambda p: sum(_bytes_by_part(p).values()))
    step_s, baseline_step_s = _pair(lambda p: float(p.time_estimate_s))
    step_lower_bound_s, baseline_step_lower_bound_s = _pair(lambda p: float(p.time_lower_bound_s))
    lower_bound_roof, baseline_lower_bound_roof = _pair(lambda p: str(p.lower_bound_roof))
    bound, baseline_bound = _pair(lambda p: str(p.bound))
    intensity, baseline_intensity = _pair(lambda p: float(p.intensity))  #: FLOPs per byte of all traffic
    #: FLOPs ÷ the estimate
    achieved_flops_per_s, baseline_achieved_flops_per_s = _pair(lambda p: float(p.cost.flops) /
                                                                float(p.time_estimate_s))
    #: resident weights in the format (scales and the layers left in BF16 included)
    stored_weight_bytes, baseline_stored_weight_bytes = _pair(lambda p: float(p.footprint.weight_bytes))
    #: weights + KV cache + state, all sequences
    memory_required_bytes, baseline_memory_required_bytes = _pair(lambda p: float(p.memory_required_bytes))
    fits, baseline_fits = _pair(lambda p: bool(p.fits_in_memory))
    compute_s = cached_property(lambda s: float(s.placement.compute_time_s))  #: dequant included
    memory_s = cached_property(lambda s: float(s.placement.memory_time_s))
    dequant_s = cached_property(lambda s: float(s.placement.dequant_time_s))  #: weight-only formats' dequant
    dequant_flops = cached_property(lambda s: float(s.placement.cost.dequant_flops))
    vector_flops_per_s = cached_property(lambda s: float(s.placement.vector_peak_flops_per_s))
    weight_only = cached_property(lambda s: bool(s.placement.workload.weight_only))
    #: compute (dequant included) ≤ memory time; None without dequant
    dequant_hidden = cached_property(lambda s: (s.compute_s <= s.memory_s) if s.dequant_s > 0 else None)
    compute_format = cached_property(lambda s: s.placement.workload.compute_dtype)  #: the weight matmuls' format
    peak_flops_per_s = cached_property(lambda s: float(s.placement.matmul_peak_flops_per_s))  #: their dense peak
    #: the step's FLOPs ÷ its compute time (dequant included)
    effective_peak_flops_per_s = cached_property(lambda s: float(s.placement.peak_flops_per_s))
    bf16_peak_flops_per_s = cached_property(lambda s: float(s.placement.part.peak_flops_per_s("bf16")))
    bandwidth_bytes_per_s = cached_property(lambda s: float(s.placement.part.memory_bandwidth_bytes_per_s))
    capacity_bytes = cached_property(lambda s: float(s.placement.part.memory_capacity_bytes))
    #: every caching layer, before window caps, in the step's KV format
    kv_bytes_per_token = cached_property(
        lambda s: float(s.placement.model.kv_bytes_per_token(s.placement.workload.kv_dtype)))
    #: resident after the step (windows applied)
    kv_cache_bytes_per_sequence = cached_property(lambda s: float(s.placement.model.kv_cache_bytes_per_sequence(
        int(s.placement.workload.context_tokens) + 1, s.placement.workload.kv_dtype)))
    state_bytes_per_sequence = cached_property(
        lambda s: float(s.placement.footprint.state_bytes) / int(s.placement.workload.batch))
    what_if = cached_property(lambda s: bool(s.placement.context_beyond_model))  #: past the model's max context
    max_context_tokens = cached_property(lambda s: int(s.placement.model.max_context_tokens))
    warnings = cached_property(lambda s: tuple(s.placement.warnings))  #: the step's, a what-if context's among them


def format_step(model: Model | str, part: Part | str, context_tokens: int, batch: int = 1, kv_dtype: str = "bf16",
                **weight_fields) -> FormatStep:
    """One decode step of ``batch`` sequences with ``context_tokens`` cached, the KV cache in
    ``kv_dtype`` and the weights as ``weight_fields`` say (Workload fields: ``weights_dtype``,
    ``compute_dtype``, ``quantized_weights``), beside the same step in BF16 (:class:`FormatStep`).
    A format the part has no rate for raises :class:`RooflineInputError` here, not on first use."""
    pl = place(model, part, phase="decode", batch=batch, context_tokens=context_tokens, kv_dtype=kv_dtype,
               **weight_fields)
    base = place(model, part, phase="decode", batch=batch, context_tokens=context_tokens)
    float(pl.compute_time_s)  # a missing rate surfaces here
    sliding, growing = kv_split_bytes_per_sequence(pl.model, context_tokens + 1, kv_dtype)
    return FormatStep(pl, base, float(sliding), float(growing))
