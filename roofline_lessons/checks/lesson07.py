"""Checkers for the lesson-7 exercises (the FP8 knee shift)."""

from __future__ import annotations

from ..checkers import CheckResult, check_choice, check_number
from ..datasheets import best_measurement
from ..hardware import get_part
from ..levers import lever_speedups

BYTE_AND_FLOP_LEVERS = ("FP8 compute", "FP8 weights", "FP8 KV cache")


def _speedup(part: str, phase: str, lever: str, tokens: int = 8192, batch: int = 1) -> float:
    return next(r.speedup for r in lever_speedups("qwen3.8-27b", part, phase, tokens, batch) if r.lever == lever)


def h100_fp8_ridge(answer) -> CheckResult:
    """7.1 — by hand: the H100 SXM's dense FP8 ridge point."""
    return check_number("7.1", answer, get_part("h100-sxm").ridge_point_flop_per_byte("fp8"), rel_tol=0.03,
                        unit="FLOP/byte", hint="dense FP8 peak ÷ bandwidth; FP8 runs at twice the BF16 rate.")


def b200_fp4_ridge(answer) -> CheckResult:
    """7.2 — by hand: the B200's dense FP4 ridge point."""
    return check_number("7.2", answer, get_part("b200").ridge_point_flop_per_byte("fp4"), rel_tol=0.03,
                        unit="FLOP/byte", hint="9 PFLOPS dense FP4 ÷ 8 TB/s.")


def decode_fp8_weights_speedup(answer) -> CheckResult:
    """7.3 — speed-up of batch-1 decode (8,192 cached) from FP8 weights alone, Qwen3.8-27B, H100."""
    return check_number("7.3", answer, _speedup("h100-sxm", "decode", "FP8 weights"), rel_tol=0.05, unit="×",
                        hint="the step is memory-bound and nearly all its bytes are weights.")


def prefill_fp8_compute_speedup(answer) -> CheckResult:
    """7.4 — speed-up of an 8,192-token prefill from FP8 compute alone, Qwen3.8-27B, H100."""
    return check_number("7.4", answer, _speedup("h100-sxm", "prefill", "FP8 compute"), rel_tol=0.05, unit="×",
                        hint="the step is compute-bound; how much does the ceiling rise?")


def best_lever_for_decode(answer) -> CheckResult:
    """7.5 — which single lever helps batch-1 decode most: 'FP8 compute', 'FP8 weights' or 'FP8 KV cache'?"""
    best = max(BYTE_AND_FLOP_LEVERS, key=lambda lever: _speedup("h100-sxm", "decode", lever))
    return check_choice("7.5", answer, best, BYTE_AND_FLOP_LEVERS,
                        hint="decode waits for bytes; which bytes are most of the step?")


def measured_fp8_ridge(answer) -> CheckResult:
    """7.6 — the H100's ridge with its best measured FP8 matmul rate (datasheet bandwidth)."""
    h100 = get_part("h100-sxm")
    m = best_measurement(h100, "matmul_flops_per_s", "fp8")
    return check_number("7.6", answer, m.value / h100.memory_bandwidth_bytes_per_s, rel_tol=0.03, unit="FLOP/byte",
                        hint="the measured FP8 matmul rate printed above ÷ 3.35 TB/s.")


EXERCISES = {
    "7.1": h100_fp8_ridge,
    "7.2": b200_fp4_ridge,
    "7.3": decode_fp8_weights_speedup,
    "7.4": prefill_fp8_compute_speedup,
    "7.5": best_lever_for_decode,
    "7.6": measured_fp8_ridge,
}
