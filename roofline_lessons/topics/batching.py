"""Batching decode: intensity against batch through both lenses, the critical batch, the
throughput–latency trade, memory-capped batch, and how MoE weight traffic falls with batch.

Every function takes numpy arrays of batch sizes and evaluates them at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.costs import expected_experts_touched
from ..core.hardware import Part, get_part
from ..core.memory import max_batch_that_fits
from ..core.models import Model, get_model
from ..core.placement import place

LENSES = ("all traffic", "weights only")


@dataclass(frozen=True)
class DecodeSweep:
    """One decode step at each batch size (arrays of the same shape as ``batch``)."""

    batch: np.ndarray
    context_tokens: int
    flops: np.ndarray
    weight_bytes: np.ndarray
    kv_bytes: np.ndarray
    state_bytes: np.ndarray
    activation_bytes: np.ndarray
    intensity: np.ndarray  #: FLOP per byte of all traffic
    intensity_per_weight_byte: np.ndarray
    step_time_s: np.ndarray  #: the step's lower bound, seconds (``Placement.time_lower_bound_s``: compulsory bytes)
    tokens_per_s: np.ndarray  #: upper bound on tokens/s: batch / the lower bound
    fits_in_memory: np.ndarray
    ridge_point_flop_per_byte: float
    #: the step's estimate, seconds (``Placement.time_estimate_s``: operators unfused, activations through HBM)
    step_time_estimate_s: np.ndarray | None = None
    tokens_per_s_estimate: np.ndarray | None = None  #: batch / the estimate

    @property
    def per_token_latency_s(self) -> np.ndarray:
        """Each sequence gets one token per step: its inter-token latency is at least the step's lower bound."""
        return self.step_time_s


def decode_sweep(model: Model | str, part: Part | str, batch, context_tokens: int = 4096, **workload) -> DecodeSweep:
    """Place decode steps for every batch size in ``batch`` (an array) at one context length."""
    b = np.asarray(batch, dtype=float)
    p = place(model, part, phase="decode", batch=b, context_tokens=context_tokens, **workload)
    c = p.cost
    return DecodeSweep(
        batch=b,
        context_tokens=int(context_tokens),
        flops=np.asarray(c.flops),
        weight_bytes=np.broadcast_to(c.weight_bytes, b.shape).astype(float),
        kv_bytes=np.asarray(c.kv_bytes),
        state_bytes=np.broadcast_to(c.state_bytes, b.shape).astype(float),
        activation_bytes=np.asarray(c.activation_bytes),
        intensity=np.asarray(p.intensity),
        intensity_per_weight_byte=np.asarray(p.intensity_per_weight_byte),
        step_time_s=np.asarray(p.time_lower_bound_s),
        tokens_per_s=np.asarray(p.tokens_per_s_upper_bound),
        fits_in_memory=np.asarray(p.fits_in_memory),
        ridge_point_flop_per_byte=p.ridge_point_flop_per_byte,
        step_time_estimate_s=np.asarray(p.time_estimate_s),
        tokens_per_s_estimate=np.asarray(p.tokens_per_s_estimate),
    )


def critical_batch(model: Model | str, part: Part | str, context_tokens: int = 4096, lens: str = "all traffic",
                   max_batch: int = 1 << 16, **workload) -> int | None:
    """Smallest decode batch whose intensity reaches the ridge (None if none up to ``max_batch``).

    ``lens``: ``"all traffic"`` (weights, KV, state, activations) or ``"weights only"``.
    Memory capacity is ignored here; see :func:`max_batch_that_fits`.
    """
    if lens not in LENSES:
        from ..core.errors import RooflineInputError

        raise RooflineInputError(f"lens must be one of {', '.join(LENSES)}, got {lens!r}")
    batches = np.unique(np.round(np.logspace(0, np.log2(max_batch), 400, base=2)))
    sweep = decode_sweep(model, part, batches, context_tokens, **workload)
    values = sweep.intensity if lens == "all traffic" else sweep.intensity_per_weight_byte
    reached = np.nonzero(values >= sweep.ridge_point_flop_per_byte)[0]
    if reached.size == 0:
        return None
    hi = int(batches[reached[0]])
    lo = int(batches[reached[0] - 1]) if reached[0] > 0 else 0
    # refine between the last batch below the ridge and the first at or above it
    fine = np.arange(lo + 1, hi + 1, dtype=float)
    sweep = decode_sweep(model, part, fine, context_tokens, **workload)
    values = sweep.intensity if lens == "all traffic" else sweep.intensity_per_weight_byte
    return int(fine[np.nonzero(values >= sweep.ridge_point_flop_per_byte)[0][0]])


def intensity_ceiling(model: Model | str, context_tokens: int = 4096, compulsory: bool = False, **workload) -> float:
    """The all-traffic intensity decode approaches as batch → ∞ (weights amortised away; what
    remains is each sequence's own FLOPs per byte of its KV cache, state and activations).
    ``compulsory=True``: per byte of compulsory traffic only (the lower bound's count: no activations)."""
    big = place(model, "h100-sxm", phase="decode", batch=np.array([1e6, 2e6]), context_tokens=context_tokens,
                **workload)
    c = big.cost
    moved = c.compulsory_bytes if compulsory else c.bytes
    per_seq_flops = (c.flops[1] - c.flops[0]) / 1e6
    per_seq_bytes = (moved[1] - moved[0]) / 1e6
    return float(per_seq_flops / per_seq_bytes)


def throughput_limit_tokens_per_s(model: Model | str, part: Part | str, context_tokens: int = 4096,
                                  **workload) -> float:
    """The upper bound on decode tokens/s as the batch grows without limit (memory ignored), tokens/s.

    The step's lower bound is weights (shared) plus each sequence's own FLOPs and compulsory bytes; as
    batch → ∞ the shared part vanishes per token and each token costs its sequence's own time on
    whichever roof binds, so throughput levels off at 1 ÷ that time. A batch that fits in memory gets
    at most this (see :func:`largest_batch` for the batch that does fit)."""
    big = np.array([1e6, 2e6])
    p = place(model, part, phase="decode", batch=big, context_tokens=context_tokens, **workload)
    t = np.asarray(p.time_lower_bound_s, dtype=float)
    per_token_s = (t[1] - t[0]) / (big[1] - big[0])
    return float(1.0 / per_token_s)


def moe_weight_bytes_per_token(model: Model | str, batch, weights_dtype: str = "bf16") -> np.ndarray:
    """Decode weight bytes per generated token at each batch size (MoE reads only touched experts)."""
    b = np.asarray(batch, dtype=float)
    sweep = place(model, "h100-sxm", phase="decode", batch=b, weights_dtype=weights_dtype)
    return np.asarray(sweep.cost.weight_bytes) / b


def experts_touched(model: Model | str, batch) -> np.ndarray:
    """Expected distinct experts per MoE layer for a decode step of ``batch`` tokens."""
    m = get_model(model)
    if not m.is_moe:
        raise ValueError(f"{m.id} is not a mixture-of-experts model")
    return expected_experts_touched(m.num_experts, m.num_experts_per_tok, batch)


def largest_batch(model: Model | str, parts, context_tokens, **dtypes) -> dict[str, np.ndarray | int]:
    """The largest batch that fits, per part, at each context length in ``context_tokens``."""
    return {get_part(p).id: max_batch_that_fits(model, p, context_tokens, **dtypes) for p in parts}


# ---- the kinds of bytes and the memory held (appended: the lesson 4 dashboard) -----------------------

#: the kinds of bytes a decode step moves, as the lessons name them
BYTE_KINDS = ("weights", "KV cache", "state", "activations")


def bytes_by_kind(sweep: DecodeSweep) -> dict[str, np.ndarray]:
    """Bytes per step of each of :data:`BYTE_KINDS` at each batch of ``sweep``."""
    return dict(zip(BYTE_KINDS, (sweep.weight_bytes, sweep.kv_bytes, sweep.state_bytes, sweep.activation_bytes)))


def kinds_moved(model: Model | str, part: Part | str, batch, contexts) -> tuple[str, ...]:
    """The kinds of :data:`BYTE_KINDS` a decode step moves (non-zero bytes) at some batch of ``batch`` and
    some context of ``contexts``, in that order."""
    moved = set()
    for ctx in contexts:
        moved |= {k for k, v in bytes_by_kind(decode_sweep(model, part, batch, ctx)).items() if float(np.max(v)) > 0}
    return tuple(k for k in BYTE_KINDS if k in moved)


def resident_bytes(model: Model | str, batch: int, context_tokens: int) -> float:
    """Bytes held in memory by the weights and, for each of ``batch`` sequences of ``context_tokens``
    tokens, its KV cache and its state (no headroom kept)."""
    from ..core.memory import kv_cache_bytes_per_sequence, state_bytes_per_sequence, weight_bytes

    m = get_model(model)
    per_sequence = float(kv_cache_bytes_per_sequence(m, context_tokens)) + float(state_bytes_per_sequence(m))
    return weight_bytes(m) + int(batch) * per_sequence
