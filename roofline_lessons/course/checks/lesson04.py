"""Checkers for the lesson-4 exercises (batching)."""

from __future__ import annotations

from ...core.hardware import get_part
from ...core.memory import kv_cache_bytes_per_sequence, max_batch_that_fits, state_bytes_per_sequence, weight_bytes
from ...core.placement import place
from ...topics.batching import critical_batch, decode_sweep, experts_touched
from ..checkers import CheckResult, Mistake, check_number
from .lesson03 import state_accepted_band


def _critical_mistakes() -> tuple[Mistake, ...]:
    p = get_part("h100-sxm")
    ridge = p.ridge_point_flop_per_byte("bf16")
    return (
        Mistake("take the with-sparsity headline as the peak", float(-(-p.sparse_flops_per_s["bf16"]
                                                                       // p.memory_bandwidth_bytes_per_s))),
        Mistake("count a BF16 weight as one byte (intensity 2 × batch)", float(-(-ridge // 2))),
        Mistake(f"round down: batch {int(ridge)} is still below the ridge of {ridge:.1f}, so round up", float(int(ridge))),
    )


def weight_lens_critical_batch(answer) -> CheckResult:
    """4.1 — by hand: the decode batch at which FLOP per weight byte reaches the H100 SXM's ridge."""
    expected = critical_batch("llama-3.1-8b", "h100-sxm", context_tokens=0, lens="weights only")
    return check_number("4.1", answer, expected, abs_tol=0.5, rel_tol=0.0, unit="sequences", whole=True,
                        mistakes=_critical_mistakes(),
                        hint="per weight byte, decode intensity ≈ batch; the ridge is peak ÷ bandwidth; a batch is a "
                             "whole number of sequences, so round up to the first batch that reaches it.")


def _batch64():
    return decode_sweep("llama-3.1-8b", "h100-sxm", [64], 4096)


def _throughput_mistakes() -> tuple[Mistake, ...]:
    sw = _batch64()
    bw = get_part("h100-sxm").memory_bandwidth_bytes_per_s
    # what a learner counts by hand: the weights (one embedding row per sequence) and the KV caches
    one_kv = sw.weight_bytes[0] + sw.kv_bytes[0] / 64
    # the bound's step time plus the rest of the embedding table at full bandwidth
    whole_table = weight_bytes("llama-3.1-8b", "bf16") - sw.weight_bytes[0]
    whole_table_s = 64 / sw.tokens_per_s[0] + whole_table / bw
    return (
        Mistake("forget the KV caches (weights alone)", float(64 / (sw.weight_bytes[0] / bw))),
        Mistake("forget the KV caches and read the whole embedding table (all the weights alone)",
                float(64 / ((sw.weight_bytes[0] + whole_table) / bw))),
        Mistake("read the whole embedding table (a decode step looks up one row per sequence)",
                float(64 / whole_table_s)),
        Mistake("read one KV cache for the whole batch (each sequence has its own)", float(64 / (one_kv / bw))),
        Mistake("give steps per second (each step yields 64 tokens)", float(sw.tokens_per_s[0] / 64)),
    )


_THROUGHPUT_REL_TOL = 0.06  #: 4.2's tolerance before its named mistakes narrow it (the message states the band)


def llama8b_batch64_throughput(answer) -> CheckResult:
    """4.2 — throughput upper bound (tokens/s: batch ÷ the step's lower bound), Llama-3.1-8B, batch 64, 4,096
    tokens cached, H100 SXM. The whole-embedding-table mistake lies a few percent below the answer, so the band
    accepted is narrower than ±6 % on that side; a wrong answer's message states it."""
    expected = float(_batch64().tokens_per_s[0])
    mistakes = _throughput_mistakes()
    result = check_number("4.2", answer, expected, rel_tol=_THROUGHPUT_REL_TOL, unit="tokens/s", mistakes=mistakes,
                          hint="step bytes = the weights read once (one embedding row per sequence, not the "
                               "whole table) + 64 sequences' KV caches; tokens/s = 64 ÷ step time.")
    return state_accepted_band(result, expected, mistakes, rel_tol=_THROUGHPUT_REL_TOL, unit="tokens/s")


QWEN_CONTEXT = 131072


def _fit_mistakes() -> tuple[Mistake, ...]:
    h200 = get_part("h200")
    si_capacity = h200.memory_capacity_bytes / 2**30 * 1e9  # "141 GB" read as 141e9 bytes
    kv = kv_cache_bytes_per_sequence("qwen3.8-27b", QWEN_CONTEXT)
    state = state_bytes_per_sequence("qwen3.8-27b")
    free = h200.memory_capacity_bytes - weight_bytes("qwen3.8-27b")
    return (
        Mistake("read the H200's '141 GB' as 141e9 bytes (device memory is binary: 141 GiB) — or apply a serving "
                "engine's 0.9 memory utilisation, which this question (all of the memory) does not ask for",
                float((si_capacity - weight_bytes("qwen3.8-27b")) // (kv + state))),
        Mistake("count all 64 layers' KV cache (only the 16 full-attention layers keep one)",
                float(free // (4 * kv + state))),
    )


def qwen38_fit_on_h200(answer) -> CheckResult:
    """4.3 — largest batch of Qwen3.8-27B (bf16) at 131,072 tokens that fits on one H200."""
    expected = max_batch_that_fits("qwen3.8-27b", "h200", QWEN_CONTEXT)
    return check_number("4.3", answer, expected, abs_tol=0.5, unit="sequences", whole=True, mistakes=_fit_mistakes(),
                        hint="each sequence needs its KV cache (64 KiB per token) and its recurrent state; the "
                             "capacity is binary (141 GiB).")


def _experts_mistakes() -> tuple[Mistake, ...]:
    return (
        Mistake("add k experts per token with no overlap (tokens share experts)", 16.0 * 8),
        Mistake("keep batch 1's count (k experts)", 8.0),
    )


def experts_at_batch16(answer) -> CheckResult:
    """4.4 — expected distinct experts per layer touched by 16 tokens in Qwen3-30B-A3B."""
    expected = float(experts_touched("qwen3-30b-a3b", 16))
    return check_number("4.4", answer, expected, rel_tol=0.03, unit="experts", mistakes=_experts_mistakes(),
                        hint="E·(1 − (1 − k/E)^B) with E = 128, k = 8.")


def _prefill_gain_mistakes() -> tuple[Mistake, ...]:
    return (Mistake("treat prefill like decode (memory-bound, so eight prompts cost one step)", 8.0),)


def prefill_batching_gain(answer) -> CheckResult:
    """4.5 — factor by which batching 8 prompts of 2,048 tokens raises prefill tokens/s over batch 1."""
    one = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=2048, batch=1)
    eight = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=2048, batch=8)
    expected = float(eight.tokens_per_s_upper_bound / one.tokens_per_s_upper_bound)
    return check_number("4.5", answer, expected, rel_tol=0.05, unit="×", mistakes=_prefill_gain_mistakes(),
                        hint="is a 2,048-token prefill already on the compute roof?")


EXERCISES = {
    "4.1": weight_lens_critical_batch,
    "4.2": llama8b_batch64_throughput,
    "4.3": qwen38_fit_on_h200,
    "4.4": experts_at_batch16,
    "4.5": prefill_batching_gain,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "4.1": _critical_mistakes,
    "4.2": _throughput_mistakes,
    "4.3": _fit_mistakes,
    "4.4": _experts_mistakes,
    "4.5": _prefill_gain_mistakes,
}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES: dict[str, str] = {}
