"""Reading datasheets with care: ridge points across the catalog, vendor vs measured roofs,
dense vs with-sparsity headlines, and memory capacity — the third number under the roofs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ..core.dtypes import check_dtype
from ..core.hardware import Measurement, Part, get_part, list_parts
from ..core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION, max_batch_that_fits, usable_capacity_bytes, weight_bytes
from ..core.models import get_model
from ..core.placement import place
from ..core.roofline import Roof


def ridge_table(dtypes: Sequence[str] = ("fp32", "bf16", "fp8", "fp4", "int8"),
                parts: Iterable[str] | None = None) -> list[dict]:
    """One row per part: its ridge point (FLOP/byte) per dtype, None where it has no such rate."""
    rows = []
    for pid in parts or list_parts():
        p = get_part(pid)
        row = {"part": p.id, "name": p.name, "bandwidth_bytes_per_s": p.memory_bandwidth_bytes_per_s}
        for dt in dtypes:
            row[dt] = p.ridge_point_flop_per_byte(dt) if dt in p.dense_flops_per_s else None
        rows.append(row)
    return rows


def best_measurement(part: Part | str, quantity: str, dtype: str | None = None) -> Measurement | None:
    """The highest measured figure of ``quantity`` (and ``dtype``) for the part, if any."""
    found = [m for m in get_part(part).measurements(quantity) if dtype is None or m.dtype == dtype]
    return max(found, key=lambda m: m.value, default=None)


@dataclass(frozen=True)
class MeasuredRoof:
    """A roof built from measured figures where they exist, datasheet figures otherwise."""

    roof: Roof
    peak_is_measured: bool
    bandwidth_is_measured: bool
    sources: tuple[str, ...]


def measured_roof(part: Part | str, dtype: str = "bf16") -> MeasuredRoof:
    """The roof real kernels reach: best measured matmul rate and bandwidth (datasheet if none)."""
    p = get_part(part)
    peak_m = best_measurement(p, "matmul_flops_per_s", dtype)
    bw_m = best_measurement(p, "bandwidth_bytes_per_s")
    peak = peak_m.value if peak_m else p.peak_flops_per_s(dtype)
    bw = bw_m.value if bw_m else p.memory_bandwidth_bytes_per_s
    what = [("measured" if peak_m else "datasheet") + " peak", ("measured" if bw_m else "datasheet") + " bandwidth"]
    return MeasuredRoof(
        roof=Roof(f"{p.id} {dtype}, {' + '.join(what)}", peak, bw),
        peak_is_measured=peak_m is not None,
        bandwidth_is_measured=bw_m is not None,
        sources=tuple(m.source for m in (peak_m, bw_m) if m is not None),
    )


def headline_kind(part: Part | str, flops_per_s: float, rel_tol: float = 0.02) -> list[str]:
    """What a quoted FLOP/s (or INT8 OP/s) figure for ``part`` really is, every match listed, dense ones first:
    the B200's 9 PFLOPS is ``["fp4 dense", "fp8 with sparsity", "int8 with sparsity"]``, the A100's 624
    ``["int8 dense", "bf16 with sparsity", "fp16 with sparsity"]``. A figure that is two things at once
    is both, and the list says so.

    Empty when the figure matches nothing in the catalog (then it needs its own source).
    """
    p = get_part(part)
    found = []
    for kind, table in (("dense", p.dense_flops_per_s), ("with sparsity", p.sparse_flops_per_s)):
        for dt, value in table.items():
            if abs(flops_per_s - value) <= rel_tol * value:
                found.append(f"{dt} {kind}")
    return found


@dataclass(frozen=True)
class CapacityRow:
    part: str
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    capacity_bytes: float
    weight_bytes: float
    weights_fit: bool
    max_batch: int  #: with the whole capacity for weights + KV cache (the optimistic bound)
    decode_step_estimate_s: float | None  #: batch-1 decode step, the estimate; None if the weights do not fit
    decode_step_lower_bound_s: float | None = None  #: batch-1 decode step, the lower bound; None if they do not fit
    memory_utilization: float = 1.0  #: the share an engine may use (vLLM's long-standing default 0.9)
    weights_fit_with_headroom: bool = False  #: the weights fit in capacity × memory_utilization
    max_batch_with_headroom: int = 0  #: largest batch within capacity × memory_utilization


def capacity_side_by_side(model: str, parts: Sequence[str], *, weights_dtype: str = "bf16",
                          kv_dtype: str = "bf16", compute_dtype: str = "bf16", context_tokens: int = 8192,
                          memory_utilization: float = VLLM_DEFAULT_MEMORY_UTILIZATION) -> list[CapacityRow]:
    """Compute roof, bandwidth roof and capacity of several parts for one model and context.

    Each row gives the fit and the largest batch twice: with the whole (binary) capacity, and with
    ``memory_utilization`` of it (vLLM's long-standing default 0.9), the headroom a serving engine keeps.
    """
    check_dtype(weights_dtype)
    m = get_model(model)
    rows = []
    for pid in parts:
        p = get_part(pid)
        w = weight_bytes(m, weights_dtype)
        fits = w <= p.memory_capacity_bytes
        step = place(m, p, phase="decode", context_tokens=context_tokens, weights_dtype=weights_dtype,
                     kv_dtype=kv_dtype, compute_dtype=compute_dtype)
        rows.append(CapacityRow(
            part=p.id,
            peak_flops_per_s=p.peak_flops_per_s(compute_dtype),
            bandwidth_bytes_per_s=p.memory_bandwidth_bytes_per_s,
            capacity_bytes=p.memory_capacity_bytes,
            weight_bytes=w,
            weights_fit=fits,
            max_batch=max_batch_that_fits(m, p, context_tokens, weights_dtype=weights_dtype, kv_dtype=kv_dtype),
            decode_step_estimate_s=float(step.time_estimate_s) if fits else None,
            decode_step_lower_bound_s=float(step.time_lower_bound_s) if fits else None,
            memory_utilization=memory_utilization,
            weights_fit_with_headroom=w <= usable_capacity_bytes(p, memory_utilization),
            max_batch_with_headroom=max_batch_that_fits(m, p, context_tokens, weights_dtype=weights_dtype,
                                                        kv_dtype=kv_dtype, memory_utilization=memory_utilization),
        ))
    return rows


# ---- parts side by side at one intensity (the lesson 2 dashboard) ----------------------------------


@dataclass(frozen=True)
class PartAtIntensity:
    """One part, in one format, at one intensity: its ridge (FLOP/byte), what its roofs allow there
    (FLOP/s), that as a share of its peak, and the roof that binds (``"memory"`` or ``"compute"``); all
    None when the catalog has no rate for the format on the part."""

    part: str
    ridge_point_flop_per_byte: float | None
    attainable_flops_per_s: float | None
    fraction_of_peak: float | None
    bound: str | None

    def regime(self, intensity: float) -> str:
        """``"memory-bound"``, ``"compute-bound"`` or ``"at the ridge"`` (within ``levers.AT_RIDGE_TOLERANCE``)."""
        from .levers import regime

        return regime(intensity, self.ridge_point_flop_per_byte)


def parts_at_intensity(part_ids: Iterable[str], dtype: str, intensity: float,
                       ) -> tuple[tuple[Roof, ...], tuple[PartAtIntensity, ...]]:
    """Each part of ``part_ids`` in ``dtype`` (dense datasheet figures) at ``intensity`` (FLOP/byte),
    in order, and the roofs of those the catalog has a ``dtype`` rate for. An unknown part raises
    RooflineInputError."""
    from ..core.roofline import attainable_flops_per_s, bound

    roofs, found = [], []
    for p in [get_part(i) for i in part_ids]:
        if dtype not in p.dense_flops_per_s:
            found.append(PartAtIntensity(p.id, None, None, None, None))
            continue
        peak, bw = p.peak_flops_per_s(dtype), p.memory_bandwidth_bytes_per_s
        att = float(attainable_flops_per_s(intensity, peak, bw))
        roofs.append(Roof(f"{p.id} {dtype}", peak, bw, p.id))
        found.append(PartAtIntensity(p.id, peak / bw, att, att / peak, bound(intensity, peak, bw)))
    return tuple(roofs), tuple(found)
