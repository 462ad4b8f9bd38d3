"""Checkers for the lesson-7 exercises (the FP8 knee shift)."""

from __future__ import annotations

from ...core.hardware import get_part
from ...core.placement import place
from ...topics.datasheets import best_measurement
from ...topics.levers import FP8_GAP_HYPOTHESES, lever_speedup
from ..checkers import CheckResult, Mistake, check_choice, check_number

MODEL = "qwen3.8-27b"
WEIGHT_ONLY, W8A8 = "weight-only 8-bit (W8A16)", "W8A8 FP8"
HYPOTHESES = tuple(h.name for h in FP8_GAP_HYPOTHESES)
EPILOGUE = "fixed per-tile epilogue"


def _speedup(part: str, phase: str, lever: str, tokens: int = 8192, batch: int = 1) -> float:
    """The lever's speed-up of the step's LOWER BOUND (baseline time_lower_bound_s ÷ the lever's): what 7.3–7.5
    ask for. The estimate's speed-up is within the checkers' 1 % of it for these three steps (tested)."""
    return lever_speedup(MODEL, part, phase, lever, tokens, batch).speedup_lower_bound


def _all_weights_speedup(phase: str, tokens: int = 8192, **change) -> float:
    """The bound's speed-up when the embedding and the lm_head are quantised too (``quantized_weights="all"``)."""
    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    base = place(MODEL, "h100-sxm", phase=phase, **fields)
    every = place(MODEL, "h100-sxm", phase=phase, **fields, **change, quantized_weights="all")
    return float(base.time_lower_bound_s / every.time_lower_bound_s)


def _m71():
    p = get_part("h100-sxm")
    return (Mistake("use the BF16 peak", p.ridge_point_flop_per_byte("bf16")),
            Mistake("take the with-sparsity FP8 headline", p.sparse_flops_per_s["fp8"] / p.memory_bandwidth_bytes_per_s))


def h100_fp8_ridge(answer) -> CheckResult:
    """7.1 — by hand: the H100 SXM's dense FP8 ridge point."""
    p = get_part("h100-sxm")
    return check_number("7.1", answer, p.ridge_point_flop_per_byte("fp8"), rel_tol=0.03, unit="FLOP/byte",
                        hint="dense FP8 peak ÷ bandwidth; FP8 runs at twice the BF16 rate.", mistakes=_m71())


def _m72():
    p = get_part("b200")
    return (Mistake("use the FP8 peak", p.ridge_point_flop_per_byte("fp8")),
            Mistake("take the with-sparsity FP4 headline", p.sparse_flops_per_s["fp4"] / p.memory_bandwidth_bytes_per_s))


def b200_fp4_ridge(answer) -> CheckResult:
    """7.2 — by hand: the B200's dense FP4 ridge point."""
    p = get_part("b200")
    return check_number("7.2", answer, p.ridge_point_flop_per_byte("fp4"), rel_tol=0.03, unit="FLOP/byte",
                        hint="the dense FP4 peak ÷ the bandwidth (both in the catalog table above).", mistakes=_m72())


def _m73():
    return (Mistake("halve every byte of the step (the KV cache and the float32 state stay as they are)", 2.0),
            Mistake("quantise the embedding and lm_head too (the recipe keeps them BF16)",
                    _all_weights_speedup("decode", weights_dtype="fp8")),
            Mistake("see that the matmuls stay at the BF16 rate and forget that the weight bytes halve", 1.0))


def decode_fp8_weights_speedup(answer) -> CheckResult:
    """7.3 — speed-up of the lower bound of batch-1 decode (8,192 cached) from weight-only 8-bit (W8A16, the
    default recipe: linear layers of the blocks), Qwen3.8-27B, H100."""
    return check_number("7.3", answer, _speedup("h100-sxm", "decode", WEIGHT_ONLY), rel_tol=0.01, unit="×",
                        hint="the step is memory-bound, so the bound's speed-up is a ratio of compulsory bytes: "
                             "only the blocks' linear weights halve; the embedding, lm_head, KV cache and float32 "
                             "state keep their size.",
                        mistakes=_m73())


def _m74():
    return (Mistake("time every FLOP, attention's included, at the FP8 rate", 2.0),
            Mistake("leave the matmuls at BF16 (that is weight-only quantisation)", 1.0))


def prefill_w8a8_speedup(answer) -> CheckResult:
    """7.4 — speed-up of the lower bound of an 8,192-token prefill from W8A8 FP8 (the default recipe; attention
    BF16), Qwen3.8-27B, H100."""
    return check_number("7.4", answer, _speedup("h100-sxm", "prefill", W8A8), rel_tol=0.01, unit="×",
                        hint="the step is compute-bound; the quantised weight matmuls' roof doubles, but attention, "
                             "softmax, norms, the recurrence and the BF16-kept lm_head keep the BF16 rate.",
                        mistakes=_m74())


def _m75():
    return (Mistake("expect the FP8 arithmetic to double a memory-bound step", 2.0),)


def w8a8_over_weight_only_decode(answer) -> CheckResult:
    """7.5 — batch-1 decode (8,192 cached), H100: W8A8 FP8's speed-up of the lower bound ÷ weight-only 8-bit's."""
    ratio = _speedup("h100-sxm", "decode", W8A8) / _speedup("h100-sxm", "decode", WEIGHT_ONLY)
    return check_number("7.5", answer, ratio, rel_tol=0.01, unit="×",
                        hint="both recipes store the same weight bytes; what else differs, and does decode wait "
                             "for it?",
                        mistakes=_m75())


def _m76():
    return (Mistake("use the datasheet FP8 peak", get_part("h100-sxm").ridge_point_flop_per_byte("fp8")),)


def measured_fp8_ridge(answer) -> CheckResult:
    """7.6 — the H100's ridge with its best measured FP8 matmul rate (datasheet bandwidth)."""
    h100 = get_part("h100-sxm")
    m = best_measurement(h100, "matmul_flops_per_s", "fp8")
    return check_number("7.6", answer, m.value / h100.memory_bandwidth_bytes_per_s, rel_tol=0.03, unit="FLOP/byte",
                        hint="the measured FP8 matmul rate printed above ÷ the H100's datasheet bandwidth.",
                        mistakes=_m76())


def k_sweep_weakens(answer) -> CheckResult:
    """7.7 — a K sweep at fixed M, N leaves the FP8 fraction of peak flat: which hypothesis does that weaken?"""
    return check_choice("7.7", answer, EPILOGUE, HYPOTHESES,
                        hint="which cost is paid once per output tile, so that its share shrinks as K grows?")


EXERCISES = {
    "7.1": h100_fp8_ridge,
    "7.2": b200_fp4_ridge,
    "7.3": decode_fp8_weights_speedup,
    "7.4": prefill_w8a8_speedup,
    "7.5": w8a8_over_weight_only_decode,
    "7.6": measured_fp8_ridge,
    "7.7": k_sweep_weakens,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {"7.1": _m71, "7.2": _m72, "7.3": _m73, "7.4": _m74, "7.5": _m75, "7.6": _m76}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES = {
    "7.7": "a choice among the gap hypotheses: each wrong one is rejected with the hint",
}
