"""Checkers for the lesson-4 exercises (batching)."""

from __future__ import annotations

from ..batching import critical_batch, decode_sweep, experts_touched
from ..checkers import CheckResult, check_number
from ..memory import max_batch_that_fits
from ..placement import place


def weight_lens_critical_batch(answer) -> CheckResult:
    """4.1 — by hand: the decode batch at which FLOP per weight byte reaches the H100 SXM's ridge."""
    expected = critical_batch("llama-3.1-8b", "h100-sxm", context_tokens=0, lens="weights only")
    return check_number("4.1", answer, expected, rel_tol=0.05, unit="sequences",
                        hint="per weight byte, decode intensity ≈ batch; the ridge is peak ÷ bandwidth.")


def llama8b_batch64_throughput(answer) -> CheckResult:
    """4.2 — throughput upper bound (tokens/s), Llama-3.1-8B, batch 64, 4,096 tokens cached, H100 SXM."""
    expected = float(decode_sweep("llama-3.1-8b", "h100-sxm", [64], 4096).tokens_per_s[0])
    return check_number("4.2", answer, expected, rel_tol=0.06, unit="tokens/s",
                        hint="step bytes = weights once + 64 sequences' KV caches; tokens/s = 64 ÷ step time.")


def qwen38_fit_on_h200(answer) -> CheckResult:
    """4.3 — largest batch of Qwen3.8-27B (bf16) at 131,072 tokens that fits on one H200."""
    expected = max_batch_that_fits("qwen3.8-27b", "h200", 131072)
    return check_number("4.3", answer, expected, abs_tol=0.5, unit="sequences",
                        hint="each sequence needs its KV cache (64 KiB per token) and its recurrent state.")


def experts_at_batch16(answer) -> CheckResult:
    """4.4 — expected distinct experts per layer touched by 16 tokens in Qwen3-30B-A3B."""
    expected = float(experts_touched("qwen3-30b-a3b", 16))
    return check_number("4.4", answer, expected, rel_tol=0.03, unit="experts",
                        hint="E·(1 − (1 − k/E)^B) with E = 128, k = 8.")


def prefill_batching_gain(answer) -> CheckResult:
    """4.5 — factor by which batching 8 prompts of 2,048 tokens raises prefill tokens/s over batch 1."""
    one = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=2048, batch=1)
    eight = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=2048, batch=8)
    expected = float(eight.tokens_per_s_upper_bound / one.tokens_per_s_upper_bound)
    return check_number("4.5", answer, expected, rel_tol=0.05, unit="×",
                        hint="is a 2,048-token prefill already on the compute roof?")


EXERCISES = {
    "4.1": weight_lens_critical_batch,
    "4.2": llama8b_batch64_throughput,
    "4.3": qwen38_fit_on_h200,
    "4.4": experts_at_batch16,
    "4.5": prefill_batching_gain,
}
