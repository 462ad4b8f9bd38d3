"""Memory capacity, the third number under the roofs: does the workload fit?

Footprint = weights + KV cache + recurrent state (activations are transient and not counted).
All sizes in bytes; capacities are SI bytes as vendors quote them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .costs import Workload
from .dtypes import bytes_per_element, check_dtype
from .hardware import Part, get_part
from .models import Model, get_model


@dataclass(frozen=True)
class Footprint:
    """Bytes the workload keeps resident in device memory."""

    weight_bytes: float
    kv_cache_bytes: object
    state_bytes: object

    @property
    def total_bytes(self):
        return self.weight_bytes + self.kv_cache_bytes + self.state_bytes


def weight_bytes(model: Model | str, weights_dtype: str = "bf16") -> float:
    """Bytes of all weights (every expert of an MoE) in ``weights_dtype``."""
    m = get_model(model)
    return m.parameter_count() * bytes_per_element(weights_dtype)


def kv_cache_bytes_per_sequence(model: Model | str, cached_tokens, kv_dtype: str = "bf16"):
    """KV cache of one sequence holding ``cached_tokens`` tokens (a sliding window caps it)."""
    m = get_model(model)
    tokens = np.asarray(cached_tokens, dtype=float)
    if m.sliding_window is not None:
        tokens = np.minimum(tokens, m.sliding_window)
    out = tokens * m.kv_bytes_per_token(kv_dtype)
    return float(out) if np.ndim(out) == 0 else out


def state_bytes_per_sequence(model: Model | str, state_dtype: str | None = None,
                             activations_dtype: str = "bf16") -> float:
    """Recurrent state of one sequence: Gated DeltaNet state plus short-conv state (0 if none)."""
    m = get_model(model)
    if not m.is_hybrid:
        return 0.0
    return m.deltanet_state_bytes(state_dtype) + m.conv_state_bytes(activations_dtype)


def footprint(model: Model | str, workload: Workload) -> Footprint:
    """What ``workload`` keeps resident after its step: weights, KV cache, state."""
    m = get_model(model)
    per_seq_kv = kv_cache_bytes_per_sequence(m, workload.cached_tokens_after, workload.kv_dtype)
    per_seq_state = state_bytes_per_sequence(m, workload.state_dtype, workload.activations_dtype)
    return Footprint(
        weight_bytes=weight_bytes(m, workload.weights_dtype),
        kv_cache_bytes=workload.batch * per_seq_kv,
        state_bytes=workload.batch * per_seq_state,
    )


def max_batch_that_fits(model: Model | str, part: Part | str, cached_tokens, *, weights_dtype: str = "bf16",
                        kv_dtype: str = "bf16", state_dtype: str | None = None,
                        activations_dtype: str = "bf16", capacity_fraction: float = 1.0):
    """Largest batch whose weights + KV cache + state fit in the part's memory (0 if none fits).

    ``cached_tokens`` is the context each sequence holds; ``capacity_fraction`` leaves headroom
    (for activations, the runtime, fragmentation) when below 1.
    """
    for dt in (weights_dtype, kv_dtype, activations_dtype):
        check_dtype(dt)
    m, p = get_model(model), get_part(part)
    free = p.memory_capacity_bytes * capacity_fraction - weight_bytes(m, weights_dtype)
    per_seq = kv_cache_bytes_per_sequence(m, cached_tokens, kv_dtype) + state_bytes_per_sequence(
        m, state_dtype, activations_dtype)
    with np.errstate(divide="ignore"):
        batch = np.floor(np.where(free > 0, free / np.maximum(per_seq, 1e-300), 0.0))
    batch = np.maximum(batch, 0).astype(np.int64)
    return int(batch) if batch.ndim == 0 else batch
