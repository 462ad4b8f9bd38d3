"""FLOPs and bytes moved, per operator, for one prefill or one decode step of a model.

Conventions (what a lesson can quote):

- FLOPs count a multiply-add as 2. Matmuls dominate; elementwise work (norms, activations,
  softmax, rotary, gates) is counted at a few FLOPs per element, stated on each operator.
- Bytes are traffic to and from device memory (HBM), split into weights, activations, KV cache
  (read and written) and recurrent state (read and written). Every operator reads its inputs and
  writes its outputs once: fusion between operators is not assumed, except that FlashAttention
  (``flash_attention=True``) fuses QKᵀ, softmax and score×V into one kernel whose score matrix
  never reaches HBM. Without it the scores are written and read back (the N×N matrix in prefill).
- Prefill processes ``prompt_tokens`` new tokens per sequence, with causal attention over the
  prompt; the KV cache and the recurrent state are written. FlashAttention skips the masked
  half of the score square (t(t+1)/2 query–key pairs); an eager (unfused) kernel computes all
  t² scores and then masks them, so without FlashAttention the FLOPs count the full square.
  The final norm runs on every position (the slice to the last position comes after it); the
  lm_head computes logits for the last position of each sequence only (what generation needs).
- Decode processes one new token per sequence against ``context_tokens`` tokens already in the
  cache: attention reads the whole cache (history + the new token) every step — it is never
  dropped — and the Gated DeltaNet state is read **and** written every step.
- Embedding reads only the looked-up rows (at most one row per token, at most the vocabulary).
- MoE: at batch 1 only the routed experts' weights are read; with more tokens in the step the
  expected number of distinct experts touched under uniform routing is E·(1 − (1 − k/E)^tokens).
- Gated DeltaNet recurrence: per token and value head, S ← α·S(I − β·k·kᵀ) + β·v·kᵀ and
  o = S·q cost about 7·d_k·d_v FLOPs (decay, S·k, rank-one update, read-out). In prefill the
  chunked kernels (flash-linear-attention's ``chunk_gated_delta_rule``) split the prompt into
  chunks of ``deltanet_chunk_tokens`` (64 by default): one kernel writes the state at every
  chunk boundary to HBM (in the activations' format) and the output kernel reads each one back;
  the final state is written once in the state's format (read 0: a fresh prompt starts from
  zero). The extra arithmetic of the chunked form is not counted.
- FLOPs are split in two classes for pricing: ``weight_matmul_flops`` are matmuls against weights
  (projections, MLP, experts, router, lm_head), priced at ``compute_dtype``'s tensor-core peak;
  ``other_flops`` is everything else, priced at ``attention_compute_dtype``'s tensor-core peak and
  added to the matmul time (in series, on the same units). For attention's QKᵀ and ×V that is where
  they run. For softmax, norms, the elementwise operators and the recurrence's per-token update it
  is a **convention** of both the lower bound and the estimate: in a real kernel they run on the
  CUDA cores and special-function units, at other rates, and can overlap the tensor cores. It is
  small where it is charged: softmax, norms and elementwise work are about 0.05 % of the FLOPs (and
  so of the tensor time) of an 8,192-token Qwen3.8-27B prefill (a test checks the figure). The
  separate limit of the special-function units on the exponential is not priced here. The weight
  lens of intensity is weight-matmul FLOPs per weight byte.
- Activation memory (a transient) is not part of the footprint; see :mod:`roofline_lessons.core.memory`.
- **Weight formats.** ``weights_dtype`` is the stored format of the weights that ``quantized_weights``
  names: ``"all"`` (every weight, norms and embedding included: the default for 16-bit formats,
  where it changes nothing), ``"linear"`` (every matmul weight in the transformer blocks, but the
  embedding, the lm_head, the norms and an MoE router stay BF16: the default for 8- and 4-bit
  formats, as published FP8 checkpoints (NVIDIA ModelOpt, llm-compressor: linear layers in the
  blocks, lm_head ignored) and GPTQ/AWQ 4-bit ones are made),
  ``"mlp"`` (MLPs and experts only: attention stays BF16) or ``"experts"`` (MoE experts
  only: gpt-oss's MXFP4 release). Under an FP8/FP4 ``compute_dtype`` a matmul whose weights the
  recipe leaves in BF16 runs at the BF16 rate (``unquantized_matmul_flops``). A 4-bit weight costs
  its half byte plus its group's scale (:func:`~roofline_lessons.core.dtypes.weight_bytes_per_element`).
  Weight-only formats (weights narrower than ``compute_dtype``) are dequantised on the fly:
  ``dequant_flops`` = 2 per quantised weight read (convert, scale), run on the vector units and
  priced at the part's FP32 rate by the placement; they are kept out of ``flops`` (not model math).
  The placement's *estimate* ADDS that time to the tensor-core time (dequantisation in series, a
  convention); its *lower bound* overlaps the two (separate units, max). A real kernel takes at
  least the bound's time; the estimate is a convention, not a ceiling, and a real kernel may be
  slower or faster than it (how much of the dequantisation a Marlin-style kernel hides is measured,
  not modelled). The 2 FLOPs per weight at the FP32 rate is itself a convention, so the bound is a
  bound only where the dequantisation does not set it (``dequant_time_s`` below both the tensor time
  and the compulsory memory time): a lesson that quotes the bound checks that.
- **Compulsory traffic.** ``bytes`` is the unfused view: every operator's activations go to HBM and
  back. ``compulsory_bytes`` keeps only what no implementation can avoid (weights used, read once;
  the KV history read and the new entries written; the recurrent state read and its final value
  written; token ids in, logits out); the placement's lower bound uses it.
- **KV formats.** ``kv_dtype`` int8/int4 carry one bf16 scale per token and head (MLA: per latent).
- **Sliding-window layers** (Gemma 3, gpt-oss) attend to and read at most ``sliding_window`` keys;
  they are the ``sliding_attention`` block. A model whose every layer slides (Mistral-7B-v0.1)
  keeps them under ``full_attention`` with the window applied. Of a prompt's new K and V, only the
  last W − 1 tokens' must reach the cache (no later token reads older ones): the others are written
  in the unfused view as scratch, counted in ``activation_bytes``, not in ``kv_write_bytes``.
- **Chunked local attention** (Llama 4's ``chunked_attention`` block, chunks of C =
  ``attention_chunk_size`` tokens) is not a sliding window. In decode the new token at position
  p = ``context_tokens`` attends only to the tokens of its own chunk: p mod C history keys (read:
  compulsory) and itself (p mod C + 1 keys, so right after a chunk boundary a single key). In a
  prefill of t tokens each chunk attends causally within itself: ⌊t/C⌋ · C(C+1)/2 + r(r+1)/2
  query–key pairs (r = t mod C); the eager kernel still computes the t² square and masks it. The
  K and V that must reach the cache are those a later token reads: in prefill the last, unfinished
  chunk's t mod C tokens; in decode the new token's, unless it closes its chunk. The other new
  K and V (earlier chunks of a prompt, a chunk's last token) are still written in the unfused
  view, as scratch: counted in ``activation_bytes`` (at the cache's bytes per element), not in
  ``kv_write_bytes``, so the lower bound does not charge them. The footprint follows the same
  rule (:meth:`~roofline_lessons.core.models.Model.kv_cache_bytes_per_sequence`). Llama 4's
  global layers skip RoPE (NoPE) and its chunked layers L2-normalise q and k without weights:
  both are elementwise work left out (the ``rope`` operator is charged on every layer).
- **MLA** (DeepSeek-V3): the cache holds one latent of kv_lora_rank + qk_rope_head_dim elements per
  token and layer, shared by all heads. ``mla_absorbed`` picks the form: absorbed (W_UK folded into
  the query, W_UV after attention: attention runs in the latent space and reads only the latent) or
  expanded (kv_b_proj turns every key's latent into per-head K and V, then ordinary attention).
  ``None`` = what serving engines do: absorbed in decode, expanded in prefill.

Every count works on numpy arrays of batch, prompt or context as well as on scalars.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .dtypes import bytes_per_element, check_dtype, check_group_size, kv_bytes_per_element, weight_bytes_per_element
from .errors import RooflineInputError
from .models import Model, get_model

PHASES = ("prefill", "decode")

#: formats whose tensor-core rate needs operands in the same format (no weight-only use)
LOW_PRECISION_COMPUTE = ("fp8", "fp4", "int8", "int4")
#: which weights a narrow ``weights_dtype`` applies to (see the module docstring)
QUANTIZED_WEIGHTS = ("all", "linear", "mlp", "experts")
#: bytes of one token id read by the embedding (int32)
TOKEN_ID_BYTES = 4.0
#: FLOPs to dequantise one weight on the fly (integer/FP4 → BF16 convert, multiply by its scale)
DEQUANT_FLOPS_PER_WEIGHT = 2.0

ArrayLike = Any  # a Python number or a numpy array


def _whole(name: str, value: ArrayLike, minimum: int) -> ArrayLike:
    """Validate a token/batch count: a whole number (or array of them) >= ``minimum``."""
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise RooflineInputError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise RooflineInputError(f"{name} must be a whole number >= {minimum}, got {value!r}") from None
    if arr.size == 0 or not np.all(np.isfinite(arr)) or not np.all(arr == np.floor(arr)):
        raise RooflineInputError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if not np.all(arr >= minimum):
        raise RooflineInputError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return arr if arr.ndim else float(arr)


@dataclass(frozen=True)
class Workload:
    """What runs: the phase, the batch and lengths, and the number formats.

    ``prompt_tokens`` is the prompt length of a prefill; ``context_tokens`` the history already in
    the KV cache before a decode step. ``compute_dtype`` is the format of the weight matmuls and
    picks their peak rate. An 8- or 4-bit ``compute_dtype`` (fp8, fp4, int8) needs weights in the
    same format (W8A8, W4A4: low-precision tensor cores take low-precision operands); weight-only
    quantisation keeps ``compute_dtype="bf16"`` and dequantises on the fly.
    ``attention_compute_dtype`` is the rate for every FLOP that is not a weight matmul (attention,
    softmax, norms, the recurrence); ``None`` means ``compute_dtype``, except that a low-precision
    ``compute_dtype`` leaves attention in bf16 (the usual W8A8 recipe), unless stated.
    ``state_dtype=None`` means the model's own (float32 for Qwen3.8-27B).
    ``deltanet_chunk_tokens`` is the chunk length of the chunked Gated DeltaNet prefill kernel.
    """

    phase: str = "decode"
    batch: ArrayLike = 1
    prompt_tokens: ArrayLike = 1
    context_tokens: ArrayLike = 0
    weights_dtype: str = "bf16"
    activations_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    state_dtype: str | None = None
    compute_dtype: str = "bf16"
    flash_attention: bool = True
    attention_compute_dtype: str | None = None
    deltanet_chunk_tokens: int = 64
    weight_group_size: int | None = None  #: elements per scale of a 4-bit weight (None: the format's default)
    quantized_weights: str | None = None  #: which weights take ``weights_dtype`` (see the module docstring)
    mla_absorbed: bool | None = None  #: MLA form; None: absorbed in decode, expanded in prefill

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise RooflineInputError(f"phase must be one of {', '.join(PHASES)}, got {self.phase!r}")
        object.__setattr__(self, "batch", _whole("batch", self.batch, 1))
        object.__setattr__(self, "prompt_tokens", _whole("prompt_tokens", self.prompt_tokens, 1))
        object.__setattr__(self, "context_tokens", _whole("context_tokens", self.context_tokens, 0))
        for name in ("weights_dtype", "activations_dtype", "kv_dtype", "compute_dtype"):
            check_dtype(getattr(self, name))
        if self.state_dtype is not None:
            check_dtype(self.state_dtype)
        if self.attention_compute_dtype is not None:
            check_dtype(self.attention_compute_dtype)
        if self.compute_dtype in LOW_PRECISION_COMPUTE and self.weights_dtype != self.compute_dtype:
            raise RooflineInputError(
                f"compute_dtype {self.compute_dtype!r} with weights_dtype {self.weights_dtype!r} is not a real "
                f"configuration: {self.compute_dtype} tensor cores take {self.compute_dtype} operands. Use "
                f"weights_dtype={self.compute_dtype!r} too (W8A8/W4A4), or keep compute_dtype='bf16' for "
                f"weight-only quantisation (weights dequantised on the fly)")
        if self.weight_group_size is not None:
            check_group_size(self.weight_group_size)
        if self.quantized_weights is not None and self.quantized_weights not in QUANTIZED_WEIGHTS:
            raise RooflineInputError(f"quantized_weights must be one of {', '.join(QUANTIZED_WEIGHTS)}, "
                                     f"got {self.quantized_weights!r}")
        if self.mla_absorbed is not None and not isinstance(self.mla_absorbed, (bool, np.bool_)):
            raise RooflineInputError(f"mla_absorbed must be True, False or None, got {self.mla_absorbed!r}")
        chunk = self.deltanet_chunk_tokens
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
            raise RooflineInputError(f"deltanet_chunk_tokens must be a whole number >= 1, got {chunk!r}")

    @property
    def weight_recipe(self) -> str:
        """Which weights are stored in ``weights_dtype``: ``quantized_weights``, or its default."""
        if self.quantized_weights is not None:
            return self.quantized_weights
        return "all" if bytes_per_element(self.weights_dtype) >= 2 else "linear"

    @property
    def weight_only(self) -> bool:
        """True when stored weights are narrower than the matmul format: dequantised on the fly."""
        return bytes_per_element(self.weights_dtype) < bytes_per_element(self.compute_dtype)

    @property
    def other_compute_dtype(self) -> str:
        """The format whose peak rate runs every FLOP that is not a weight matmul."""
        if self.attention_compute_dtype is not None:
            return self.attention_compute_dtype
        return "bf16" if self.compute_dtype in LOW_PRECISION_COMPUTE else self.compute_dtype

    @property
    def new_tokens_per_sequence(self) -> ArrayLike:
        """Tokens each sequence pushes through the layers in this step."""
        return self.prompt_tokens if self.phase == "prefill" else 1.0

    @property
    def tokens(self) -> ArrayLike:
        """Tokens in the step over the whole batch (batch × new tokens per sequence)."""
        return self.batch * self.new_tokens_per_sequence

    @property
    def cached_tokens_after(self) -> ArrayLike:
        """Tokens per sequence held in the KV cache after the step (before any window cap)."""
        return self.prompt_tokens if self.phase == "prefill" else self.context_tokens + 1.0


class _Traffic:
    """Sums shared by one operator and a whole step: needs flops and the six byte fields."""

    @property
    def kv_bytes(self) -> ArrayLike:
        """KV cache read + written."""
        return self.kv_read_bytes + self.kv_write_bytes

    @property
    def state_bytes(self) -> ArrayLike:
        """Recurrent state read + written."""
        return self.state_read_bytes + self.state_write_bytes

    @property
    def bytes(self) -> ArrayLike:
        """All traffic: weights + activations + KV cache + recurrent state (the unfused view)."""
        return self.weight_bytes + self.activation_bytes + self.kv_bytes + self.state_bytes

    @property
    def compulsory_bytes(self) -> ArrayLike:
        """The traffic no implementation can avoid: each weight the step uses read once, the KV cache
        the step needs read (history, not the new tokens' own K and V) and the new entries written, the
        recurrent state read and its final value written (no chunk-boundary states), the step's token
        ids in and its logits out. Every other activation could stay on chip in a fused kernel."""
        return (self.weight_bytes + self.kv_bytes - self.kv_scratch_bytes + self.state_bytes
                - self.state_scratch_bytes + self.io_bytes)

    @property
    def compulsory_intensity(self) -> ArrayLike:
        """FLOPs per compulsory byte (FLOP/byte): the intensity the lower bound sees."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(self.flops, self.compulsory_bytes)

    @property
    def intensity(self) -> ArrayLike:
        """FLOPs per byte of all traffic (FLOP/byte); inf for an operator that moves no bytes."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(self.flops, self.bytes)

    @property
    def other_flops(self) -> ArrayLike:
        """FLOPs that are not weight matmuls: attention, softmax, norms, elementwise, recurrence."""
        return self.flops - self.weight_matmul_flops

    @property
    def intensity_per_weight_byte(self) -> ArrayLike:
        """The weight lens: weight-matmul FLOPs per weight byte (FLOP/byte).

        A weight matmul of T tokens does 2·T FLOPs per weight, so this is 2·T / bytes per weight:
        ≈ batch in BF16 decode, ≈ batch × prompt in prefill, whatever the context. Attention's FLOPs
        are left out on purpose: they come with their own bytes (the KV cache), not the weights'.
        """
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(self.weight_matmul_flops, self.weight_bytes)


@dataclass(frozen=True)
class OpCost(_Traffic):
    """One operator of one layer (``layers`` layers share it). Counts are per layer."""

    name: str
    block: str  #: embedding, full_attention, gated_deltanet, mlp, moe or head
    layers: int
    flops: ArrayLike = 0.0
    weight_bytes: ArrayLike = 0.0
    activation_bytes: ArrayLike = 0.0
    kv_read_bytes: ArrayLike = 0.0
    kv_write_bytes: ArrayLike = 0.0
    state_read_bytes: ArrayLike = 0.0
    state_write_bytes: ArrayLike = 0.0
    weight_matmul_flops: ArrayLike = 0.0  #: the part of ``flops`` that multiplies by weights
    dequant_flops: ArrayLike = 0.0  #: vector FLOPs dequantising weight-only weights (not in ``flops``)
    #: the part of ``weight_matmul_flops`` whose weights the recipe leaves in BF16 under a low-precision
    #: ``compute_dtype``: they run at the BF16 rate, not the FP8/FP4 one
    unquantized_matmul_flops: ArrayLike = 0.0
    kv_scratch_bytes: ArrayLike = 0.0  #: the part of ``kv_read_bytes`` that is not compulsory (new tokens' K, V read back)
    state_scratch_bytes: ArrayLike = 0.0  #: the part of the state traffic that is not compulsory (chunk-boundary states)
    io_bytes: ArrayLike = 0.0  #: the part of ``activation_bytes`` that is compulsory: token ids in, logits out
    bytes_per_weight: float = 2.0  #: bytes one stored weight of this operator costs (its scale's share in)
    weight_params: int = 0  #: parameters this operator holds (per layer)
    active_weight_params: int = 0  #: parameters one token uses (routed experts only)
    note: str = ""

    def scaled_to_all_layers(self) -> "OpCost":
        """The same operator summed over all ``layers`` layers that have it."""
        k = self.layers
        return replace(
            self,
            layers=1,
            flops=self.flops * k,
            weight_matmul_flops=self.weight_matmul_flops * k,
            dequant_flops=self.dequant_flops * k,
            unquantized_matmul_flops=self.unquantized_matmul_flops * k,
            kv_scratch_bytes=self.kv_scratch_bytes * k,
            state_scratch_bytes=self.state_scratch_bytes * k,
            io_bytes=self.io_bytes * k,
            weight_bytes=self.weight_bytes * k,
            activation_bytes=self.activation_bytes * k,
            kv_read_bytes=self.kv_read_bytes * k,
            kv_write_bytes=self.kv_write_bytes * k,
            state_read_bytes=self.state_read_bytes * k,
            state_write_bytes=self.state_write_bytes * k,
            weight_params=self.weight_params * k,
            active_weight_params=self.active_weight_params * k,
        )


_TOTAL_FIELDS = (
    "flops",
    "weight_matmul_flops",
    "dequant_flops",
    "weight_bytes",
    "activation_bytes",
    "kv_read_bytes",
    "kv_write_bytes",
    "state_read_bytes",
    "state_write_bytes",
    "unquantized_matmul_flops",
    "kv_scratch_bytes",
    "state_scratch_bytes",
    "io_bytes",
)


@dataclass(frozen=True)
class ModelCost(_Traffic):
    """All operators of one step of a model, with totals over every layer."""

    model: Model
    workload: Workload
    ops: tuple[OpCost, ...]
    totals: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        totals = {f: sum(getattr(op, f) * op.layers for op in self.ops) for f in _TOTAL_FIELDS}
        object.__setattr__(self, "totals", totals)

    flops = property(lambda self: self.totals["flops"])
    weight_matmul_flops = property(lambda self: self.totals["weight_matmul_flops"])
    dequant_flops = property(lambda self: self.totals["dequant_flops"])
    weight_bytes = property(lambda self: self.totals["weight_bytes"])
    activation_bytes = property(lambda self: self.totals["activation_bytes"])
    kv_read_bytes = property(lambda self: self.totals["kv_read_bytes"])
    kv_write_bytes = property(lambda self: self.totals["kv_write_bytes"])
    state_read_bytes = property(lambda self: self.totals["state_read_bytes"])
    state_write_bytes = property(lambda self: self.totals["state_write_bytes"])
    unquantized_matmul_flops = property(lambda self: self.totals["unquantized_matmul_flops"])
    kv_scratch_bytes = property(lambda self: self.totals["kv_scratch_bytes"])
    state_scratch_bytes = property(lambda self: self.totals["state_scratch_bytes"])
    io_bytes = property(lambda self: self.totals["io_bytes"])

    def blocks(self) -> tuple[str, ...]:
        """The blocks present, in order (embedding, full_attention, gated_deltanet, mlp/moe, head)."""
        seen: list[str] = []
        for op in self.ops:
            if op.block not in seen:
                seen.append(op.block)
        return tuple(seen)

    def block_total(self, block: str, field_name: str = "bytes") -> ArrayLike:
        """A quantity (``flops``, ``bytes``, ``kv_bytes``…) summed over all layers of ``block``."""
        return sum(getattr(op, field_name) * op.layers for op in self.ops if op.block == block)


# ---- operator builders ---------------------------------------------------------------------


class _Ctx:
    """Sizes shared by every operator of one step."""

    def __init__(self, model: Model, w: Workload) -> None:
        self.m = model
        self.w = w
        self.b = w.batch
        self.n = w.new_tokens_per_sequence
        self.N = w.tokens
        self.wq = weight_bytes_per_element(w.weights_dtype, w.weight_group_size)  # a quantised weight
        self.recipe = w.weight_recipe
        self.wb16 = self.wq if self.recipe == "all" else bytes_per_element("bf16")  # a weight left out
        self.ab = bytes_per_element(w.activations_dtype)
        self.kvb = kv_bytes_per_element(w.kv_dtype, model.head_dim)
        self.sb = bytes_per_element(w.state_dtype or model.state_dtype)

    def quantized(self, block: str, name: str) -> bool:
        """Whether this operator's weights take ``weights_dtype`` under the workload's recipe."""
        r = self.recipe
        if r == "all":
            return True
        if "norm" in name or name in ("short_conv", "gates_and_qk_l2norm", "router") or block in ("embedding", "head"):
            return False  # the MoE router stays BF16 too, as GPTQ/AWQ recipes leave the gate
        expert = block == "moe" and (name.startswith("experts_") or name.startswith("shared_expert"))
        if r == "experts":
            return expert
        if r == "mlp":
            return expert or block == "mlp"
        return True  # linear: every matmul weight

    def wb(self, block: str, name: str) -> float:
        """Bytes per stored weight of this operator."""
        return self.wq if self.quantized(block, name) else self.wb16

    def op(self, name, block, layers, *, flops=0.0, params=0, weight_bytes=None, act_read=0.0,
           act_write=0.0, active_params=None, note="", weight_matmul_flops=0.0, weights_read=None,
           ids_in=0.0, logits_out=0.0, **kv_state) -> OpCost:
        """``weights_read``: weight elements the step reads (default: all ``params``). Compulsory
        traffic in and out of the step: ``ids_in`` token ids (4 bytes each, added to the activations'
        traffic), ``logits_out`` elements of ``act_write`` that are the step's logits."""
        read = params if weights_read is None else weights_read
        wb = self.wb(block, name)
        quantized = self.quantized(block, name)
        dequant = DEQUANT_FLOPS_PER_WEIGHT * read if self.w.weight_only and quantized else 0.0
        # a matmul whose weights stay BF16 under an FP8/FP4 recipe runs at the BF16 rate
        unquantized = weight_matmul_flops if (self.w.compute_dtype in LOW_PRECISION_COMPUTE and not quantized) else 0.0
        if weight_bytes is None:
            weight_bytes = read * wb
        return OpCost(
            name=name,
            block=block,
            layers=layers,
            flops=flops,
            weight_matmul_flops=weight_matmul_flops,
            dequant_flops=dequant,
            unquantized_matmul_flops=unquantized,
            bytes_per_weight=wb,
            weight_bytes=weight_bytes,
            activation_bytes=(act_read + act_write) * self.ab + TOKEN_ID_BYTES * ids_in,
            io_bytes=TOKEN_ID_BYTES * ids_in + logits_out * self.ab,
            weight_params=int(params),
            active_weight_params=int(params if active_params is None else active_params),
            note=note,
            **kv_state,
        )

    def linear(self, name, block, layers, tokens, d_in, d_out, note="") -> OpCost:
        """A matmul of ``tokens`` rows by a d_in × d_out weight: 2·tokens·d_in·d_out FLOPs."""
        flops = 2.0 * tokens * d_in * d_out
        return self.op(name, block, layers, flops=flops, weight_matmul_flops=flops, params=d_in * d_out,
                       act_read=tokens * d_in, act_write=tokens * d_out, note=note)

    def rmsnorm(self, name, block, layers, tokens, width, params) -> OpCost:
        """RMSNorm: square, sum, scale, multiply by weight: 4 FLOPs per element."""
        return self.op(name, block, layers, flops=4.0 * tokens * width, params=params,
                       act_read=tokens * width, act_write=tokens * width, note="4 FLOPs/element")

    def residual(self, name, block, layers) -> OpCost:
        h = self.m.hidden_size
        return self.op(name, block, layers, flops=1.0 * self.N * h, act_read=2.0 * self.N * h,
                       act_write=1.0 * self.N * h, note="1 FLOP/element")


def _attention_pairs(w: Workload, window: int | None, chunk: int | None = None):
    """(query–key pairs per head per sequence, keys read per sequence, score elements if stored).

    ``chunk``: chunked local attention (module docstring): each token sees only its own chunk."""
    if w.phase == "prefill":
        t = w.prompt_tokens
        full = t * (t + 1) / 2.0
        if chunk is not None:
            r = np.mod(t, chunk)
            pairs = np.floor(t / chunk) * chunk * (chunk + 1) / 2.0 + r * (r + 1) / 2.0
        elif window is None:
            pairs = full
        else:
            pairs = np.where(t <= window, full, window * (window + 1) / 2.0 + (t - window) * window)
        return pairs, t, t * t
    keys = w.context_tokens + 1.0
    if chunk is not None:
        keys = np.mod(w.context_tokens, chunk) + 1.0
    elif window is not None:
        keys = np.minimum(keys, window)
    return keys, keys, keys


def _kept_new_tokens(w: Workload, chunk: int | None, window: int | None = None):
    """New tokens per sequence whose K and V a later token reads (the rest are scratch): all of
    them, except in a chunked layer, where only those of the chunk still open after the step
    (prefill: t mod C; decode: the new token unless it closes its chunk), and in a sliding-window
    layer, where only the last W − 1 (a later token reads at most W − 1 keys before its own; an
    engine whose window counts W earlier keys keeps one more, so this is the least)."""
    n = w.new_tokens_per_sequence
    if chunk is None and window is not None:
        return np.minimum(n, max(int(window) - 1, 0))
    if chunk is None:
        return n
    after = np.mod(w.cached_tokens_after, chunk)
    return after if w.phase == "prefill" else np.where(after == 0, 0.0, 1.0)


def _own_share(w: Workload, keys):
    """The share of the keys attention reads that the step itself just wrote (its new tokens' K and
    V): all of them in prefill (no earlier context), the one new token's in decode. That share of
    the KV read is not compulsory (a fused kernel can keep it on chip)."""
    return 1.0 if w.phase == "prefill" else np.divide(1.0, keys)


def _full_attention_ops(c: _Ctx, layers: int, window: int | None = None,
                        blk: str = "full_attention", chunk: int | None = None) -> list[OpCost]:
    m, w, N, b = c.m, c.w, c.N, c.b
    h, nq, nkv, hd = m.hidden_size, m.num_attention_heads, m.num_key_value_heads, m.head_dim
    q_out = nq * hd * (2 if m.attn_output_gate else 1)
    ops = [
        c.rmsnorm("input_norm", blk, layers, N, h, h),
        c.linear("q_proj" + (" (+ output gate)" if m.attn_output_gate else ""), blk, layers, N, h, q_out,
                 note="query and, where the model has one, the output-gate projection" if m.attn_output_gate else ""),
        c.linear("k_proj", blk, layers, N, h, nkv * hd),
        c.linear("v_proj", blk, layers, N, h, nkv * hd),
    ]
    if m.qk_norm:
        ops.append(c.rmsnorm("qk_norm", blk, layers, N * (nq + nkv), hd, m.qk_norm_parameters))
    rot = N * (nq + nkv) * hd * m.partial_rotary_factor
    ops.append(c.op("rope", blk, layers, flops=3.0 * rot, act_read=rot, act_write=rot,
                    note="3 FLOPs per rotated element"))
    kv_new = N * nkv * hd * 2.0  # K and V elements of the new tokens
    if chunk is None and window is None:
        ops.append(c.op("kv_cache_write", blk, layers, act_read=kv_new, kv_write_bytes=kv_new * c.kvb,
                        note="store the new tokens' K and V"))
    elif chunk is None:
        kept = b * _kept_new_tokens(w, None, window) * nkv * hd * 2.0
        scratch = (kv_new - kept) * c.kvb / c.ab  # written in the cache's format, counted as activations
        ops.append(c.op("kv_cache_write", blk, layers, act_read=kv_new, act_write=scratch,
                        kv_write_bytes=kept * c.kvb,
                        note="store the new tokens' K and V; only the last window's are kept (older ones are "
                             "scratch: no later token reads them)"))
    else:
        kept = b * _kept_new_tokens(w, chunk) * nkv * hd * 2.0
        scratch = (kv_new - kept) * c.kvb / c.ab  # written in the cache's format, counted as activations
        ops.append(c.op("kv_cache_write", blk, layers, act_read=kv_new, act_write=scratch,
                        kv_write_bytes=kept * c.kvb,
                        note="store the new tokens' K and V; only the open chunk's are kept (the others are "
                             "scratch: no later token reads them)"))
    pairs, keys, score_elems = _attention_pairs(w, window, chunk)
    own = _own_share(w, keys)
    if not w.flash_attention:
        pairs = score_elems  # an eager kernel computes every score of the square, then masks
    qk_flops = 2.0 * hd * nq * pairs * b
    sm_flops = 5.0 * nq * pairs * b
    kv_read_k = b * keys * nkv * hd * c.kvb
    q_elems = N * nq * hd
    where = "causal over the prompt" if w.phase == "prefill" else "over the whole cache"
    if window is not None:
        where += f", at most {window:,} keys (sliding window)"
    if chunk is not None:
        where += f", within its own {chunk:,}-token chunk (chunked local attention)"
    if w.flash_attention:
        ops.append(c.op("attention (fused: QKᵀ, softmax, ×V)", blk, layers,
                        flops=2.0 * qk_flops + sm_flops, act_read=q_elems, act_write=q_elems,
                        kv_read_bytes=2.0 * kv_read_k, kv_scratch_bytes=2.0 * kv_read_k * own,
                        note=f"FlashAttention, {where}; scores stay on chip; Q, K, V read once"))
    else:
        s = b * nq * score_elems
        ops += [
            c.op("qk_scores (QKᵀ)", blk, layers, flops=qk_flops, act_read=q_elems, act_write=s,
                 kv_read_bytes=kv_read_k, kv_scratch_bytes=kv_read_k * own, note=f"{where}; the score matrix is written to HBM"),
            c.op("softmax", blk, layers, flops=sm_flops, act_read=s, act_write=s,
                 note="5 FLOPs per score (mask included); reads and writes the whole score matrix"),
            c.op("score_v (P×V)", blk, layers, flops=qk_flops, act_read=s, act_write=q_elems,
                 kv_read_bytes=kv_read_k, kv_scratch_bytes=kv_read_k * own, note=f"{where}"),
        ]
    if m.attn_output_gate:
        ops.append(c.op("output_gate", blk, layers, flops=5.0 * q_elems, act_read=2.0 * q_elems,
                        act_write=q_elems, note="attention output × sigmoid(gate), 5 FLOPs/element"))
    ops.append(c.linear("o_proj", blk, layers, N, nq * hd, h))
    ops.append(c.residual("residual", blk, layers))
    return ops


def _mla_ops(c: _Ctx, layers: int) -> list[OpCost]:
    """Multi-head latent attention (DeepSeek-V3), absorbed or expanded (module docstring)."""
    m, w, N, b = c.m, c.w, c.N, c.b
    h, nh = m.hidden_size, m.num_attention_heads
    nope, rope, vd, rkv, rq = m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, m.kv_lora_rank, m.q_lora_rank
    latent = rkv + rope
    kvb = kv_bytes_per_element(w.kv_dtype, latent)
    blk = "mla"
    absorbed = (w.phase == "decode") if w.mla_absorbed is None else bool(w.mla_absorbed)
    ops = [c.rmsnorm("input_norm", blk, layers, N, h, h)]
    if rq:
        ops += [c.linear("q_a_proj", blk, layers, N, h, rq, note="query down-projection (the q bottleneck)"),
                c.rmsnorm("q_a_norm", blk, layers, N, rq, rq),
                c.linear("q_b_proj", blk, layers, N, rq, nh * (nope + rope))]
    else:
        ops.append(c.linear("q_proj", blk, layers, N, h, nh * (nope + rope)))
    ops += [c.linear("kv_a_proj", blk, layers, N, h, latent, note="the latent and the shared rope key"),
            c.rmsnorm("kv_a_norm", blk, layers, N, rkv, rkv)]
    rot = N * (nh + 1) * rope
    ops.append(c.op("rope", blk, layers, flops=3.0 * rot, act_read=rot, act_write=rot,
                    note="3 FLOPs per rotated element"))
    ops.append(c.op("kv_cache_write", blk, layers, act_read=N * latent, kv_write_bytes=N * latent * kvb,
                    note=f"store each new token's latent: {latent} elements, shared by all {nh} heads"))
    pairs, keys, score_elems = _attention_pairs(w, None)
    own = _own_share(w, keys)
    if not w.flash_attention:
        pairs = score_elems
    latent_read = b * keys * latent * kvb
    where = "causal over the prompt" if w.phase == "prefill" else "over the whole cache"
    scores = 0.0 if w.flash_attention else 3.0 * b * nh * score_elems  # eager: scores written, read, re-read
    if absorbed:
        ops += [
            c.op("q_absorb (W_UK of kv_b_proj)", blk, layers, flops=2.0 * N * nh * nope * rkv,
                 weight_matmul_flops=2.0 * N * nh * nope * rkv, params=rkv * nh * nope,
                 act_read=N * nh * nope, act_write=N * nh * rkv,
                 note="each head's no-rope query moved into the latent space"),
            c.op("attention (absorbed, in the latent)", blk, layers,
                 flops=(2.0 * latent + 2.0 * rkv + 5.0) * nh * pairs * b,
                 act_read=N * nh * latent + scores, act_write=N * nh * rkv, kv_read_bytes=latent_read,
                 kv_scratch_bytes=latent_read * own,
                 note=f"absorbed MLA, {where}: every head reads the same {latent}-element latent per key"),
            c.op("v_up (W_UV of kv_b_proj)", blk, layers, flops=2.0 * N * nh * rkv * vd,
                 weight_matmul_flops=2.0 * N * nh * rkv * vd, params=rkv * nh * vd,
                 act_read=N * nh * rkv, act_write=N * nh * vd, note="latent output back to per-head values"),
        ]
    else:
        expand = b * keys
        ops += [
            c.op("kv_b_proj (expand the latent)", blk, layers, flops=2.0 * expand * rkv * nh * (nope + vd),
                 weight_matmul_flops=2.0 * expand * rkv * nh * (nope + vd), params=rkv * nh * (nope + vd),
                 act_write=expand * nh * (nope + vd), kv_read_bytes=latent_read,
                 kv_scratch_bytes=latent_read * own,
                 note="every key's latent expanded to per-head K (no-rope part) and V"),
            c.op("attention (expanded)", blk, layers, flops=(2.0 * (nope + rope) + 2.0 * vd + 5.0) * nh * pairs * b,
                 act_read=N * nh * (nope + rope) + expand * (nh * (nope + vd) + rope) + scores,
                 act_write=N * nh * vd, note=f"ordinary attention with {nh} K/V heads, {where}"),
        ]
    ops.append(c.linear("o_proj", blk, layers, N, nh * vd, h))
    ops.append(c.residual("residual", blk, layers))
    return ops


def _deltanet_ops(c: _Ctx, layers: int) -> list[OpCost]:
    m, w, N, b = c.m, c.w, c.N, c.b
    h = m.hidden_size
    nv, dk, dv, K = m.linear_num_value_heads, m.linear_key_head_dim, m.linear_value_head_dim, m.linear_conv_kernel_dim
    kd, vd, conv = m.deltanet_key_dim, m.deltanet_value_dim, m.deltanet_conv_dim
    blk = "gated_deltanet"
    decode = w.phase == "decode"
    conv_state = b * conv * (K - 1) * c.ab
    state = b * nv * dk * dv * c.sb
    if decode:
        state_read, state_write = state, state
        scratch = 0.0
        state_note = "recurrent state read and written every step"
    else:
        chunk = w.deltanet_chunk_tokens
        chunks = np.ceil(w.prompt_tokens / chunk)
        boundary = b * chunks * nv * dk * dv * c.ab  # one state per chunk, in the activations' format
        state_read, state_write = boundary, boundary + state
        scratch = 2.0 * boundary
        state_note = (f"chunked kernel ({chunk}-token chunks): the state at every chunk boundary is "
                      "written to HBM and read back by the output kernel; the final state written once")
    return [
        c.rmsnorm("input_norm", blk, layers, N, h, h),
        c.linear("in_proj_qkv", blk, layers, N, h, conv, note="queries, keys and values"),
        c.linear("in_proj_z", blk, layers, N, h, vd, note="output gate"),
        c.linear("in_proj_ba", blk, layers, N, h, 2 * nv, note="per-head write strength β and decay α"),
        c.op("short_conv", blk, layers, flops=(2.0 * K + 4.0) * N * conv, params=conv * K,
             act_read=N * conv, act_write=N * conv,
             state_read_bytes=conv_state if decode else 0.0, state_write_bytes=conv_state,
             note=f"causal depthwise conv of width {K} + SiLU; its {K - 1}-token state is read and written"),
        c.op("gates_and_qk_l2norm", blk, layers, flops=10.0 * N * nv + 3.0 * N * 2 * kd, params=2 * nv,
             act_read=N * (2 * kd + 2 * nv), act_write=N * (2 * kd + 2 * nv),
             note="β = sigmoid(b), α = exp(−exp(A)·softplus(a + dt_bias)), L2-normalised q and k"),
        c.op("state_update+readout", blk, layers, flops=7.0 * N * nv * dk * dv,
             act_read=N * (2 * kd + vd + 2 * nv), act_write=N * vd,
             state_read_bytes=state_read, state_write_bytes=state_write, state_scratch_bytes=scratch,
             note=state_note),
        c.op("gated_norm", blk, layers, flops=9.0 * N * vd, params=dv, act_read=2.0 * N * vd, act_write=N * vd,
             note="RMSNorm per head × SiLU(z)"),
        c.linear("out_proj", blk, layers, N, vd, h),
        c.residual("residual", blk, layers),
    ]


def _mlp_ops(c: _Ctx, layers: int) -> list[OpCost]:
    m, N = c.m, c.N
    h, inter = m.hidden_size, m.intermediate_size
    blk = "mlp"
    return [
        c.rmsnorm("post_attention_norm", blk, layers, N, h, h),
        c.linear("gate_proj", blk, layers, N, h, inter),
        c.linear("up_proj", blk, layers, N, h, inter),
        c.op("silu_mul", blk, layers, flops=5.0 * N * inter, act_read=2.0 * N * inter, act_write=N * inter,
             note="SiLU(gate) × up, 5 FLOPs/element"),
        c.linear("down_proj", blk, layers, N, inter, h),
        c.residual("residual", blk, layers),
    ]


def expected_experts_touched(num_experts: int, experts_per_token: int, tokens: ArrayLike) -> ArrayLike:
    """Expected number of distinct experts hit by ``tokens`` tokens under uniform routing.

    E·(1 − (1 − k/E)^tokens): 1 token touches k; many tokens touch nearly all E.
    """
    e, k = float(num_experts), float(experts_per_token)
    return e * (1.0 - (1.0 - k / e) ** np.asarray(tokens, dtype=float))


def _moe_ops(c: _Ctx, layers: int) -> list[OpCost]:
    m, N = c.m, c.N
    h, E, k, ie = m.hidden_size, m.num_experts, m.num_experts_per_tok, m.moe_intermediate_size
    blk = "moe"
    touched = expected_experts_touched(E, k, N)
    routed = N * k
    gu_params, down_params = E * 2 * h * ie, E * ie * h
    g = 1 if m.shared_expert_gate else 0  # the shared expert's gate: one more router output
    return [
        c.rmsnorm("post_attention_norm", blk, layers, N, h, h),
        c.op("router", blk, layers, flops=2.0 * N * h * (E + g) + 5.0 * N * (E + g),
             weight_matmul_flops=2.0 * N * h * (E + g), params=h * (E + g),
             act_read=N * h, act_write=N * (E + g),
             note="logits, softmax and top-k over the experts"
                  + (" (+ the shared expert's sigmoid gate, one more output)" if g else "")),
        c.op("experts_gate_up", blk, layers, flops=2.0 * routed * h * 2 * ie,
             weight_matmul_flops=2.0 * routed * h * 2 * ie, params=gu_params,
             weights_read=touched * 2 * h * ie, active_params=k * 2 * h * ie,
             act_read=routed * h, act_write=routed * 2 * ie,
             note=f"only the experts touched are read: E·(1 − (1 − {k}/{E})^tokens)"),
        c.op("experts_silu_mul", blk, layers, flops=5.0 * routed * ie, act_read=2.0 * routed * ie,
             act_write=routed * ie, note="SiLU(gate) × up"),
        c.op("experts_down", blk, layers, flops=2.0 * routed * ie * h, weight_matmul_flops=2.0 * routed * ie * h,
             params=down_params,
             weights_read=touched * ie * h, active_params=k * ie * h,
             act_read=routed * ie, act_write=routed * h),
        c.op("expert_combine", blk, layers, flops=2.0 * routed * h + (2.0 * N * h if g else 0.0),
             act_read=routed * h, act_write=N * h,
             note="weighted sum of the k expert outputs" + (" (and the gated shared expert's)" if g else "")),
        *_shared_expert_ops(c, layers),
        c.residual("residual", blk, layers),
    ]


def _shared_expert_ops(c: _Ctx, layers: int) -> list[OpCost]:
    """Always-on experts (DeepSeek-V3: one of moe_intermediate_size; Qwen2-MoE: one of its own
    shared_expert_intermediate_size): a small dense SwiGLU on every token."""
    m, N = c.m, c.N
    if not m.shared_expert_width:
        return []
    h, ie = m.hidden_size, m.shared_expert_width
    blk = "moe"
    return [
        c.linear("shared_expert_gate_up", blk, layers, N, h, 2 * ie, note="the always-on expert: every token"),
        c.op("shared_expert_silu_mul", blk, layers, flops=5.0 * N * ie, act_read=2.0 * N * ie, act_write=N * ie,
             note="SiLU(gate) × up"),
        c.linear("shared_expert_down", blk, layers, N, ie, h),
    ]


def model_cost(model: Model | str, workload: Workload | None = None, **workload_fields) -> ModelCost:
    """Every operator's FLOPs and bytes for one step of ``model`` under ``workload``.

    ``model_cost("qwen3.8-27b", phase="decode", batch=32, context_tokens=8192)`` is shorthand for
    building the :class:`Workload` yourself.
    """
    m = get_model(model)
    if workload is None:
        workload = Workload(**workload_fields)
    elif workload_fields:
        workload = replace(workload, **workload_fields)
    c = _Ctx(m, workload)
    h, N, b = m.hidden_size, c.N, c.b
    ops: list[OpCost] = []
    rows = np.minimum(N, m.vocab_size)
    ops.append(c.op("embed_tokens", "embedding", 1, params=m.vocab_size * h, weights_read=rows * h,
                    act_write=N * h, active_params=m.vocab_size * h, ids_in=N,
                    note="gather: reads only the looked-up rows (one per token, at most the vocabulary)"))
    n_full, n_slide, n_dn = m.num_full_attention_layers, m.num_sliding_attention_layers, m.num_deltanet_layers
    n_chunk = m.num_chunked_attention_layers
    if m.is_mla:
        ops += _mla_ops(c, m.num_mla_layers)
    if n_full:
        ops += _full_attention_ops(c, n_full, m.full_attention_window, "full_attention")
    if n_slide:
        ops += _full_attention_ops(c, n_slide, m.sliding_window, "sliding_attention")
    if n_chunk:
        ops += _full_attention_ops(c, n_chunk, None, "chunked_attention", chunk=m.attention_chunk_size)
    if n_dn:
        ops += _deltanet_ops(c, n_dn)
    if m.num_dense_mlp_layers:
        ops += _mlp_ops(c, m.num_dense_mlp_layers)
    if m.num_moe_layers:
        ops += _moe_ops(c, m.num_moe_layers)
    last = "last position of each sequence only" if workload.phase == "prefill" else "one position per sequence"
    ops.append(c.rmsnorm("final_norm", "head", 1, N, h, h))
    head_params = 0 if m.tie_word_embeddings else m.vocab_size * h
    ops.append(c.op("lm_head", "head", 1, flops=2.0 * b * h * m.vocab_size,
                    weight_matmul_flops=2.0 * b * h * m.vocab_size, params=head_params,
                    weights_read=m.vocab_size * h, act_read=b * h, act_write=b * m.vocab_size,
                    logits_out=b * m.vocab_size,
                    note=f"logits for the {last}"))
    return ModelCost(model=m, workload=workload, ops=tuple(ops))


def stored_weight_bytes(cost: ModelCost) -> float:
    """Bytes every weight of the model takes in memory under ``cost``'s formats (all experts, each
    operator's format and scales): the resident weights, not the step's traffic."""
    return float(sum(op.weight_params * op.layers * op.bytes_per_weight for op in cost.ops))


def parameter_counts(model: Model | str) -> tuple[int, int]:
    """(total, active) parameters, summed from the operators' weight shapes.

    :meth:`Model.parameter_count` counts the same weights from the config without the operator list
    (so models need not import costs); the tests hold the two equal, which proves every weight is
    built into exactly one operator.
    """
    cost = model_cost(model, Workload(phase="decode"))
    total = sum(op.weight_params * op.layers for op in cost.ops)
    active = sum(op.active_weight_params * op.layers for op in cost.ops)
    return int(total), int(active)
