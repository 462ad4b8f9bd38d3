"""Checkers for the lesson-2 exercises (the ridge point). Expected values come from the catalog."""

from __future__ import annotations

from ...core.hardware import get_part
from ...core.memory import free_bytes_after_weights, kv_cache_bytes_per_sequence, max_batch_that_fits, weight_bytes
from ...topics.datasheets import best_measurement, headline_kind
from ..checkers import CheckResult, Mistake, check_choice, check_number


def _h200_ridge_mistakes() -> tuple[Mistake, ...]:
    h200, h100 = get_part("h200"), get_part("h100-sxm")
    return (
        Mistake("take the with-sparsity BF16 headline (twice the dense rate)",
                2 * h200.peak_flops_per_s("bf16") / h200.memory_bandwidth_bytes_per_s),
        Mistake("keep the H100's bandwidth (same compute, but the H200 has more bandwidth)",
                h100.ridge_point_flop_per_byte("bf16")),
    )


def h200_ridge(answer) -> CheckResult:
    """2.1 — by hand: the H200's dense BF16 ridge point (FLOP/byte)."""
    return check_number("2.1", answer, get_part("h200").ridge_point_flop_per_byte("bf16"), rel_tol=0.03,
                        mistakes=_h200_ridge_mistakes(),
                        unit="FLOP/byte", hint="same compute as the H100 SXM, more bandwidth: peak ÷ bandwidth.")


def h100_headline(answer) -> CheckResult:
    """2.2 — is the H100 SXM's '1,979 TFLOPS BF16' headline 'dense' or 'sparse'?"""
    kinds = headline_kind("h100-sxm", 1979e12)
    expected = "sparse" if "bf16 with sparsity" in kinds else "dense"
    return check_choice("2.2", answer, expected, ("dense", "sparse"),
                        hint="compare it with the dense BF16 rate in the catalog: a factor of two is the tell.")


def b200_loose_figure(answer) -> CheckResult:
    """2.3 — what B200 rate is the flashcard's '2.2 PFLOPS FP8' really? e.g. 'bf16 dense'."""
    choices = ("bf16 dense", "fp8 dense", "fp8 with sparsity", "fp4 dense")
    kinds = headline_kind("b200", 2.25e15)
    expected = next(k for k in kinds if k in choices)
    return check_choice("2.3", answer, expected, choices,
                        hint="look up 2.25 PFLOPS in the B200's dense and sparse tables.")


def _b200_fp8_mistakes() -> tuple[Mistake, ...]:
    b200 = get_part("b200")
    bw = b200.memory_bandwidth_bytes_per_s
    return (
        Mistake("use the flashcard's '2.2 PFLOPS FP8' (the dense BF16 rate)", b200.peak_flops_per_s("bf16") / bw),
        Mistake("use the with-sparsity FP8 headline", 2 * b200.peak_flops_per_s("fp8") / bw),
    )


def b200_fp8_ridge(answer) -> CheckResult:
    """2.4 — the B200's real dense FP8 ridge point (FLOP/byte)."""
    return check_number("2.4", answer, get_part("b200").ridge_point_flop_per_byte("fp8"), rel_tol=0.03,
                        mistakes=_b200_fp8_mistakes(),
                        unit="FLOP/byte", hint="dense FP8 is twice dense BF16 on this part.")


def _measured_ridge_mistakes() -> tuple[Mistake, ...]:
    return (Mistake("keep the datasheet peak (the question asks for the measured matmul rate)",
                    get_part("h100-sxm").ridge_point_flop_per_byte("bf16")),)


def h100_measured_ridge(answer) -> CheckResult:
    """2.5 — the H100 SXM ridge with the best measured BF16 matmul rate and datasheet bandwidth."""
    m = best_measurement("h100-sxm", "matmul_flops_per_s", "bf16")
    expected = m.value / get_part("h100-sxm").memory_bandwidth_bytes_per_s
    return check_number("2.5", answer, expected, rel_tol=0.03, unit="FLOP/byte", mistakes=_measured_ridge_mistakes(),
                        hint="use the measured matmul rate printed above instead of the datasheet peak.")


def _bf16_weights_mistake() -> Mistake:
    """Llama-3.1-70B's BF16 weights on an H200: they fit (131 of 141 GiB), with room for only a few sequences."""
    n = max_batch_that_fits("llama-3.1-70b", "h200", 8192, weights_dtype="bf16", kv_dtype="bf16")
    capacity = get_part("h200").memory_capacity_bytes
    weights = weight_bytes("llama-3.1-70b", "bf16")
    if weights > capacity:
        return Mistake(f"keep the weights in BF16 ({weights / 2**30:.1f} GiB: they do not fit in "
                       f"{capacity / 2**30:.0f} GiB)", 0.0)
    return Mistake(f"keep the weights in BF16 (they fit, {weights / 2**30:.1f} of {capacity / 2**30:.0f} GiB, "
                   f"leaving room for only {n} sequence{'s' if n != 1 else ''})", float(n))


def _fp8_batch_mistakes() -> tuple[Mistake, ...]:
    si_capacity = get_part("h200").memory_capacity_bytes / 2**30 * 1e9  # "141 GB" read as 141e9 bytes
    free_si = si_capacity - (get_part("h200").memory_capacity_bytes - free_bytes_after_weights(
        "llama-3.1-70b", "h200", "fp8"))
    per_seq_bf16 = kv_cache_bytes_per_sequence("llama-3.1-70b", 8192, "bf16")
    return (
        Mistake("read the H200's '141 GB' as 141e9 bytes (device memory is binary: 141 GiB)",
                float(free_si // per_seq_bf16)),
        Mistake("store the KV cache in FP8 too (the exercise keeps it in BF16)",
                float(max_batch_that_fits("llama-3.1-70b", "h200", 8192, weights_dtype="fp8", kv_dtype="fp8"))),
        _bf16_weights_mistake(),
        Mistake("quantise the embedding and lm_head to FP8 too (published FP8 checkpoints keep them in BF16)",
                float(max_batch_that_fits("llama-3.1-70b", "h200", 8192, weights_dtype="fp8", kv_dtype="bf16",
                                          quantized_weights="all"))),
        Mistake("apply vLLM's 0.9 memory utilisation (a fair serving answer, but the question asks for all of "
                "the memory)",
                float(max_batch_that_fits("llama-3.1-70b", "h200", 8192, weights_dtype="fp8", kv_dtype="bf16",
                                          memory_utilization=0.9))),
    )


def llama70b_fp8_batch_on_h200(answer) -> CheckResult:
    """2.6 — largest batch of Llama-3.1-70B (FP8 weights, BF16 KV) at 8,192 tokens on one H200."""
    expected = max_batch_that_fits("llama-3.1-70b", "h200", 8192, weights_dtype="fp8", kv_dtype="bf16")
    return check_number("2.6", answer, expected, abs_tol=0.5, unit="sequences", whole=True,
                        mistakes=_fp8_batch_mistakes(),
                        hint="(capacity in bytes − weight bytes) ÷ (KV bytes per token × 8,192), rounded down; "
                             "capacity is binary (141 GiB).")


EXERCISES = {
    "2.1": h200_ridge,
    "2.2": h100_headline,
    "2.3": b200_loose_figure,
    "2.4": b200_fp8_ridge,
    "2.5": h100_measured_ridge,
    "2.6": llama70b_fp8_batch_on_h200,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "2.1": _h200_ridge_mistakes,
    "2.4": _b200_fp8_mistakes,
    "2.5": _measured_ridge_mistakes,
    "2.6": _fp8_batch_mistakes,
}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES = {
    "2.2": "a choice, dense or sparse: the wrong one is rejected with the hint",
    "2.3": "a choice among four rates: each wrong one is rejected with the hint",
}
