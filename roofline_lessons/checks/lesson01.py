"""Checkers for the lesson-1 exercises (the concept). Expected values are computed here, from the
catalog and the cost model, each time a checker runs."""

from __future__ import annotations

from ..checkers import CheckResult, check_choice, check_function, check_number
from ..placement import place
from ..roofline import attainable_flops_per_s as _attainable

PART = "h100-sxm"
MODEL = "qwen3.8-27b"


def ridge_point(answer) -> CheckResult:
    """1.1 — the H100 SXM's BF16 ridge point in FLOP/byte."""
    from ..hardware import get_part

    expected = get_part(PART).ridge_point_flop_per_byte("bf16")
    return check_number("1.1", answer, expected, rel_tol=0.03, unit="FLOP/byte",
                        hint="divide the dense BF16 peak (FLOP/s) by the bandwidth (bytes/s).")


def decode_percent_of_peak(answer) -> CheckResult:
    """1.2 — the best batch-1 decode of Qwen3.8-27B can reach, in percent of the BF16 peak."""
    expected = float(place(MODEL, PART, phase="decode", batch=1, context_tokens=0).fraction_of_peak) * 100
    return check_number("1.2", answer, expected, rel_tol=0.08, unit="%",
                        hint="intensity ≈ 1 FLOP per byte, so attainable = bandwidth × 1; compare with the peak, "
                             "and give a percentage (0.5 means 0.5 %).")


def batch32_attainable_tflops(answer) -> CheckResult:
    """1.3 — attainable TFLOP/s of batch-32 decode, by the weight-byte lens (intensity ≈ batch)."""
    p = place(MODEL, PART, phase="decode", batch=32, context_tokens=0)
    expected = float(_attainable(p.intensity_per_weight_byte, p.peak_flops_per_s, p.bandwidth_bytes_per_s)) / 1e12
    return check_number("1.3", answer, expected, rel_tol=0.05, unit="TFLOP/s",
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
