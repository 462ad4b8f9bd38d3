"""Checkers for the lesson-3 exercises (prefill vs decode)."""

from __future__ import annotations

from ..checkers import CheckResult, check_choice, check_number
from ..hardware import get_part
from ..placement import place

CANDIDATES = ("q_proj (+ output gate)", "input_norm", "gate_proj")


def llama8b_ttft_ms(answer) -> CheckResult:
    """3.1 — estimate: time-to-first-token lower bound, Llama-3.1-8B, 8,192-token prompt, H100 SXM (ms)."""
    expected = float(place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=8192).time_lower_bound_s) * 1e3
    return check_number("3.1", answer, expected, rel_tol=0.15, unit="ms",
                        hint="prefill is compute-bound: about 2 FLOPs per parameter per token, divided by the peak.")


def llama8b_tpot_ms(answer) -> CheckResult:
    """3.2 — time-per-output-token lower bound, Llama-3.1-8B, batch 1, 8,192 tokens cached, H100 SXM (ms)."""
    expected = float(place("llama-3.1-8b", "h100-sxm", phase="decode", context_tokens=8192).time_lower_bound_s) * 1e3
    return check_number("3.2", answer, expected, rel_tol=0.10, unit="ms",
                        hint="decode is memory-bound: (weight bytes + KV bytes) ÷ bandwidth.")


def gpt_fast_percent_of_bound(answer) -> CheckResult:
    """3.3 — the measured gpt-fast decode rate as a percentage of the package's upper bound."""
    measured = next(m for m in get_part("a100-80gb").measured if m.tokens_per_s)
    bound = float(place(measured.model, "a100-80gb", phase="decode", context_tokens=256).tokens_per_s_upper_bound)
    return check_number("3.3", answer, 100 * measured.tokens_per_s / bound, rel_tol=0.05, unit="%",
                        hint="measured tokens/s ÷ bound tokens/s × 100.")


def memory_bound_op_in_prefill(answer) -> CheckResult:
    """3.4 — which operator is memory-bound inside a compute-bound 8,192-token Qwen3.8-27B prefill?"""
    p = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192)
    bounds = {row["name"]: row["bound"] for row in p.op_rows() if row["block"] == "full_attention"}
    memory = [name for name in CANDIDATES if bounds.get(name) == "memory"]
    return check_choice("3.4", answer, memory[0], CANDIDATES,
                        hint="a norm does a handful of FLOPs per element it reads and writes.")


def long_context_decode_intensity(answer) -> CheckResult:
    """3.5 — FLOP per byte of all traffic, Llama-3.1-8B, batch-1 decode, 131,072 tokens cached."""
    expected = float(place("llama-3.1-8b", "h100-sxm", phase="decode", context_tokens=131072).intensity)
    return check_number("3.5", answer, expected, rel_tol=0.10, unit="FLOP/byte",
                        hint="the KV cache now weighs as much as the weights, and attention does about "
                             "(query heads ÷ KV heads) FLOPs per byte of it: add both FLOPs and bytes.")


EXERCISES = {
    "3.1": llama8b_ttft_ms,
    "3.2": llama8b_tpot_ms,
    "3.3": gpt_fast_percent_of_bound,
    "3.4": memory_bound_op_in_prefill,
    "3.5": long_context_decode_intensity,
}
