"""Checkers for the lesson-1 exercises (the concept). Expected values are computed here, from the
catalog and the cost model, each time a checker runs."""

from __future__ import annotations

from ...core.hardware import get_part
from ...core.placement import place
from ...core.roofline import attainable_flops_per_s as _attainable
from ..checkers import CheckResult, Mistake, check_choice, check_function, check_number

PART = "h100-sxm"
MODEL = "qwen3.8-27b"


def _ridge_mistakes() -> tuple[Mistake, ...]:
    p = get_part(PART)
    return (
        Mistake("take the with-sparsity headline as the peak", p.sparse_flops_per_s["bf16"] / p.memory_bandwidth_bytes_per_s),
        Mistake("divide the bandwidth by the peak (upside down)", p.memory_bandwidth_bytes_per_s / p.dense_flops_per_s["bf16"]),
    )


def ridge_point(answer) -> CheckResult:
    """1.1 — the H100 SXM's BF16 ridge point in FLOP/byte."""
    expected = get_part(PART).ridge_point_flop_per_byte("bf16")
    return check_number("1.1", answer, expected, rel_tol=0.03, unit="FLOP/byte", mistakes=_ridge_mistakes(),
                        hint="divide the dense BF16 peak (FLOP/s) by the bandwidth (bytes/s).")


def _decode_percent_mistakes() -> tuple[Mistake, ...]:
    p = place(MODEL, PART, phase="decode", batch=1, context_tokens=0)
    sparse = get_part(PART).sparse_flops_per_s["bf16"]
    return (
        Mistake("compare with the with-sparsity headline (twice the dense peak)",
                float(p.attainable_flops_per_s) / sparse * 100),
        Mistake("give a fraction where a percentage was asked", float(p.fraction_of_peak)),
    )


def decode_percent_of_peak(answer) -> CheckResult:
    """1.2 — the best batch-1 decode of Qwen3.8-27B can reach, in percent of the BF16 peak."""
    expected = float(place(MODEL, PART, phase="decode", batch=1, context_tokens=0).fraction_of_peak) * 100
    # ±0.05 percentage points: the lesson's rounded "0.3 %" passes, the sparse-peak 0.17 % does not
    return check_number("1.2", answer, expected, abs_tol=0.05, rel_tol=0.0, unit="%", mistakes=_decode_percent_mistakes(),
                        hint="intensity ≈ 1 FLOP per byte, so attainable = bandwidth × 1; compare with the dense "
                             "peak, and give a percentage (0.5 means 0.5 %).")


def _batch32_place():
    return place(MODEL, PART, phase="decode", batch=32, context_tokens=0)


def _batch32_mistakes() -> tuple[Mistake, ...]:
    p = _batch32_place()
    return (
        Mistake("take the compute peak (batch-32 decode is still left of the ridge)", p.peak_flops_per_s / 1e12),
        Mistake("keep batch 1's intensity of ~1 FLOP/byte", p.bandwidth_bytes_per_s / 1e12),
    )


def batch32_attainable_tflops(answer) -> CheckResult:
    """1.3 — attainable TFLOP/s of batch-32 decode, by the weight-byte lens (intensity ≈ batch)."""
    p = _batch32_place()
    expected = float(_attainable(p.intensity_per_weight_byte, p.peak_flops_per_s, p.bandwidth_bytes_per_s)) / 1e12
    return check_number("1.3", answer, expected, rel_tol=0.05, unit="TFLOP/s", mistakes=_batch32_mistakes(),
                        hint="each weight byte now serves 32 tokens: intensity ≈ 32 FLOP/byte; multiply by the "
                             "bandwidth in TB/s.")


def prefill_bound(answer) -> CheckResult:
    """1.4 — which roof binds an 8,192-token prefill: 'memory' or 'compute'."""
    expected = str(place(MODEL, PART, phase="prefill", prompt_tokens=8192).bound)
    return check_choice("1.4", answer, expected, ("memory", "compute"),
                        hint="compare ~8,192 FLOP per weight byte with the ridge point.")


def attainable_function(fn) -> CheckResult:
    """1.5 — a function attainable(intensity, peak, bandwidth) that returns FLOP/s."""
    cases = [
        ((1.0, 989.4e12, 3.35e12), 3.35e12),
        ((0.25, 312e12, 2.039e12), 0.25 * 2.039e12),
        ((8192.0, 989.4e12, 3.35e12), 989.4e12),
        ((295.343, 989.4e12, 3.35e12), float(_attainable(295.343, 989.4e12, 3.35e12))),
        ((1e4, 2250e12, 8e12), 2250e12),
    ]
    return check_function("1.5", fn, cases, rel_tol=1e-9,
                          hint="the smaller of the compute roof and bandwidth × intensity.")


EXERCISES = {
    "1.1": ridge_point,
    "1.2": decode_percent_of_peak,
    "1.3": batch32_attainable_tflops,
    "1.4": prefill_bound,
    "1.5": attainable_function,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "1.1": _ridge_mistakes,
    "1.2": _decode_percent_mistakes,
    "1.3": _batch32_mistakes,
}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES = {
    "1.4": "a choice between two roofs: the wrong one is rejected with the hint",
    "1.5": "a function, checked on five cases on both sides of the ridge",
}
