"""Memory capacity, the third number under the roofs: does the workload fit?

Footprint = weights + KV cache + recurrent state (activations are transient and not counted).
All sizes in bytes. Capacities are binary: a vendor's "80 GB" of HBM is 80 GiB (80 × 2^30 bytes),
while a vendor's GB/s of bandwidth is SI. Serving engines do not hand the whole capacity to the
model: vLLM's ``gpu_memory_utilization`` (0.9 for most of its history, 0.92 in current releases) is the fraction of the device's total
memory that one vLLM instance may use (vLLM's ``CacheConfig`` docstring; a per-instance limit).
The other 10 % is not the instance's at all: it is left to other processes on the GPU and to what
vLLM's own profiling does not count, such as the CUDA context. Activations and CUDA graphs are not
in that 10 %: vLLM's worker (``determine_available_memory``) takes ``total × utilization``, then
subtracts the weights, the peak activations of a profiling run and its CUDA-graph estimate, and
gives what is left to the KV cache. ``memory_utilization`` here models the first step only (the
share the engine may fill, less the weights), so at 0.9 a fit computed here is an upper bound on
what vLLM finds room for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .costs import Workload, model_cost, stored_weight_bytes
from .dtypes import bytes_per_element, check_dtype
from .errors import RooflineInputError
from .hardware import Part, get_part
from .models import Model, get_model

#: The memory share the course prices "at a serving engine's utilisation" with: 0.9, vLLM's
#: long-standing default ``gpu_memory_utilization`` (engine arguments, ``CacheConfig``; 0.9 in the
#: v0.6.4 docs and for most of vLLM's history) — the fraction of the device's total memory one vLLM
#: instance may use for weights, activations, CUDA graphs and KV cache together; the rest is left to
#: other processes and the CUDA context. Current vLLM releases default to 0.92
#: (:data:`VLLM_CURRENT_DEFAULT_MEMORY_UTILIZATION`, docs.vllm.ai stable, ``vllm serve``): pass it as
#: ``memory_utilization`` (``--memory-utilization`` on the command line) to price with it.
VLLM_DEFAULT_MEMORY_UTILIZATION = 0.9
#: ``gpu_memory_utilization``'s default in current vLLM releases (its ``CacheConfig``: 0.92)
VLLM_CURRENT_DEFAULT_MEMORY_UTILIZATION = 0.92


def check_memory_utilization(value) -> float:
    """A fraction of device memory in (0, 1]; a clear error otherwise."""
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise RooflineInputError(f"memory_utilization must be a number in (0, 1], got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise RooflineInputError(f"memory_utilization must be a number in (0, 1], got {value!r}") from None
    if not 0.0 < v <= 1.0:
        raise RooflineInputError(f"memory_utilization must be a number in (0, 1], got {value!r} "
                                 f"(vLLM's long-standing default is {VLLM_DEFAULT_MEMORY_UTILIZATION}; current releases use "
                                 f"{VLLM_CURRENT_DEFAULT_MEMORY_UTILIZATION})")
    return v


@dataclass(frozen=True)
class Footprint:
    """Bytes the workload keeps resident in device memory."""

    weight_bytes: float
    kv_cache_bytes: object
    state_bytes: object

    @property
    def total_bytes(self):
        return self.weight_bytes + self.kv_cache_bytes + self.state_bytes


def weight_bytes(model: Model | str, weights_dtype: str = "bf16", *, weight_group_size: int | None = None,
                 quantized_weights: str | None = None) -> float:
    """Bytes of all weights (every expert of an MoE) stored in ``weights_dtype``.

    16-bit formats: parameters × bytes per element. An 8- or 4-bit format by default leaves the
    embedding, the lm_head, the norms and an MoE router in BF16, and a 4-bit one adds its scales
    (``quantized_weights``: see :mod:`roofline_lessons.core.costs`).
    """
    m = get_model(model)
    check_dtype(weights_dtype)
    if quantized_weights is None and weight_group_size is None and bytes_per_element(weights_dtype) >= 2:
        return m.parameter_count() * bytes_per_element(weights_dtype)
    w = Workload(phase="decode", weights_dtype=weights_dtype, weight_group_size=weight_group_size,
                 quantized_weights=quantized_weights)
    return stored_weight_bytes(model_cost(m, w))


def kv_cache_bytes_per_sequence(model: Model | str, cached_tokens, kv_dtype: str = "bf16"):
    """KV cache of one sequence holding ``cached_tokens`` tokens: full-attention and MLA layers keep
    every token, a sliding-window layer at most its window, a chunked layer (Llama 4) only the open
    chunk's ``cached_tokens`` mod ``attention_chunk_size`` (:meth:`Model.kv_cache_bytes_per_sequence`)."""
    check_dtype(kv_dtype)
    return get_model(model).kv_cache_bytes_per_sequence(cached_tokens, kv_dtype)


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
        weight_bytes=weight_bytes(m, workload.weights_dtype, weight_group_size=workload.weight_group_size,
                                  quantized_weights=workload.quantized_weights),
        kv_cache_bytes=workload.batch * per_seq_kv,
        state_bytes=workload.batch * per_seq_state,
    )


def usable_capacity_bytes(part: Part | str, memory_utilization: float = 1.0) -> float:
    """Bytes of device memory the engine may fill: capacity (binary) × ``memory_utilization``."""
    return get_part(part).memory_capacity_bytes * check_memory_utilization(memory_utilization)


def free_bytes_after_weights(model: Model | str, part: Part | str, weights_dtype: str = "bf16",
                             memory_utilization: float = 1.0, **weight_format) -> float:
    """Usable capacity left for KV cache and state once the weights are loaded (negative: no fit)."""
    return usable_capacity_bytes(part, memory_utilization) - weight_bytes(model, weights_dtype, **weight_format)


def max_batch_that_fits(model: Model | str, part: Part | str, cached_tokens, *, weights_dtype: str = "bf16",
                        kv_dtype: str = "bf16", state_dtype: str | None = None,
                        activations_dtype: str = "bf16", memory_utilization: float = 1.0,
                        weight_group_size: int | None = None, quantized_weights: str | None = None):
    """Largest batch whose weights + KV cache + state fit in the part's memory (0 if none fits).

    ``cached_tokens`` is the context each sequence holds. ``memory_utilization`` is the share of
    the capacity the engine may use (1.0: all of it, the optimistic bound; vLLM's default is
    :data:`VLLM_DEFAULT_MEMORY_UTILIZATION`, whose remaining 10 % is left to other processes and the
    CUDA context). Activations and CUDA graphs, which vLLM takes out of its share before the KV
    cache, are not subtracted here: at 0.9 this is still an upper bound on vLLM's batch.
    """
    for dt in (weights_dtype, kv_dtype, activations_dtype):
        check_dtype(dt)
    util = check_memory_utilization(memory_utilization)
    m, p = get_model(model), get_part(part)
    free = usable_capacity_bytes(p, util) - weight_bytes(m, weights_dtype, weight_group_size=weight_group_size,
                                                         quantized_weights=quantized_weights)
    per_seq = kv_cache_bytes_per_sequence(m, cached_tokens, kv_dtype) + state_bytes_per_sequence(
        m, state_dtype, activations_dtype)
    with np.errstate(divide="ignore"):
        batch = np.floor(np.where(free > 0, free / np.maximum(per_seq, 1e-300), 0.0))
    batch = np.maximum(batch, 0).astype(np.int64)
    return int(batch) if batch.ndim == 0 else batch
