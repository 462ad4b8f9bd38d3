"""Number formats as levers: FP8 (or FP4) compute, FP8 weights and an FP8 KV cache change
different numbers on the roofline. Each lever's speed-up is the ratio of time lower bounds."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import RooflineInputError
from .hardware import get_part
from .placement import Placement, place

#: lever name -> the workload fields it changes (everything else stays BF16)
LEVERS: dict[str, dict[str, str]] = {
    "baseline (all BF16)": {},
    "FP8 compute": {"compute_dtype": "fp8"},
    "FP8 weights": {"weights_dtype": "fp8"},
    "FP8 KV cache": {"kv_dtype": "fp8"},
    "all three": {"compute_dtype": "fp8", "weights_dtype": "fp8", "kv_dtype": "fp8"},
}


@dataclass(frozen=True)
class LeverResult:
    lever: str
    placement: Placement | None  #: None when the part has no rate for the format
    speedup: float | None  #: baseline time bound ÷ this lever's time bound

    @property
    def bound(self) -> str | None:
        return None if self.placement is None else str(self.placement.bound)


def lever_speedups(model: str, part: str, phase: str, tokens: int = 8192, batch: int = 1) -> list[LeverResult]:
    """Every lever in :data:`LEVERS` for one step; ``tokens`` is the prompt (prefill) or the cache (decode)."""
    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    base = place(model, part, phase=phase, batch=batch, **fields)
    out = []
    for name, change in LEVERS.items():
        try:
            p = place(model, part, phase=phase, batch=batch, **fields, **change)
        except RooflineInputError:
            out.append(LeverResult(name, None, None))
            continue
        out.append(LeverResult(name, p, float(base.time_lower_bound_s / p.time_lower_bound_s)))
    return out


def ridge_shift(part: str, dtypes=("bf16", "fp8", "fp4")) -> dict[str, float]:
    """The part's ridge point (FLOP/byte) for each format it has a rate for."""
    p = get_part(part)
    return {dt: p.ridge_point_flop_per_byte(dt) for dt in dtypes if dt in p.dense_flops_per_s}
