"""Checkers for the lesson-3 exercises (prefill vs decode)."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Sequence

from ...core.hardware import get_part
from ...core.memory import weight_bytes
from ...core.models import get_model
from ...core.placement import place
from ...topics.published import GPT_FAST_CONTEXT_TOKENS, gpt_fast_7b_bound, gpt_fast_7b_measurement
from ..checkers import CheckResult, Mistake, check_choice, check_number
from ...core.units import num


def accepted_band(expected: float, mistakes: Sequence[Mistake], rel_tol: float = 0.0,
                  abs_tol: float = 0.0) -> tuple[float, float]:
    """The answers :func:`~roofline_lessons.course.checkers.check_number` really accepts: within the
    tolerance of ``expected`` (``math.isclose``, as it tests) and not nearer a named mistake within the
    tolerance of it. A mistake close to the answer cuts the stated ± band at the midpoint between them;
    this finds both ends (by bisection on that same rule), so a message can state the band it applies."""
    def accepted(v: float) -> bool:
        if not math.isclose(v, expected, rel_tol=rel_tol, abs_tol=abs_tol):
            return False
        return not any(math.isclose(v, m.value, rel_tol=rel_tol, abs_tol=abs_tol)
                       and abs(v - m.value) < abs(v - expected) for m in mistakes)

    assert accepted(expected), "the answer itself must be accepted"
    span = 2 * max(rel_tol * abs(expected), abs_tol) + 1e-12

    def edge(direction: int) -> float:
        inside, outside = expected, expected + direction * span
        while accepted(outside):  # never more than a step or two: the tolerance bounds the band
            outside += direction * span
        for _ in range(200):
            mid = (inside + outside) / 2
            if mid in (inside, outside):
                break
            inside, outside = (mid, outside) if accepted(mid) else (inside, mid)
        return inside

    return edge(-1), edge(+1)


def _shown_inward(lo: float, hi: float, digits: int = 4) -> tuple[float, float]:
    """Round the band's ends inwards to ``digits`` significant figures, so each shown end is accepted."""
    def round_to(v: float, up: bool) -> float:
        if v == 0:
            return 0.0
        step = 10 ** (math.floor(math.log10(abs(v))) - digits + 1)
        return (math.ceil if up else math.floor)(v / step) * step
    return round_to(lo, True), round_to(hi, False)


def state_accepted_band(result: CheckResult, expected: float, mistakes: Sequence[Mistake], rel_tol: float = 0.0,
                        abs_tol: float = 0.0, unit: str = "") -> CheckResult:
    """Replace a result's stated tolerance, "(allowed ±…)", with the band :func:`accepted_band` computes,
    where a named mistake narrows it (an answer between the mistake and the midpoint is named as that
    mistake, so "±10 %" would overstate what is accepted)."""
    lo, hi = accepted_band(expected, mistakes, rel_tol, abs_tol)
    lo_shown, hi_shown = _shown_inward(lo, hi)
    unit_s = f" {unit}" if unit else ""
    band = f"(accepted: {num(lo_shown, 4)} to {num(hi_shown, 4)}{unit_s}; nearer a named mistake is named as it)"
    return replace(result, message=re.sub(r"\(allowed ±[^)]*\)", band, result.message, count=1))

CANDIDATES = ("q_proj (+ output gate)", "input_norm", "gate_proj")


def _ttft_mistakes() -> tuple[Mistake, ...]:
    p = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=8192)
    sparse = get_part("h100-sxm").sparse_headline_flops_per_s("bf16")
    return (
        Mistake("divide by the with-sparsity headline (twice the dense peak)", float(p.cost.flops) / sparse * 1e3),
        Mistake("treat prefill as memory-bound (bytes ÷ bandwidth)",
                float(p.cost.bytes) / p.bandwidth_bytes_per_s * 1e3),
    )


def llama8b_ttft_ms(answer) -> CheckResult:
    """3.1 — by hand: the time-to-first-token lower bound, Llama-3.1-8B, 8,192-token prompt, H100 SXM (ms)."""
    expected = float(place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=8192).time_lower_bound_s) * 1e3
    return check_number("3.1", answer, expected, rel_tol=0.15, unit="ms", mistakes=_ttft_mistakes(),
                        hint="prefill is compute-bound: about 2 FLOPs per parameter per token, divided by the "
                             "dense peak.")


TPOT_CONTEXT = 32768


def _tpot_mistakes() -> tuple[Mistake, ...]:
    p = place("llama-3.1-8b", "h100-sxm", phase="decode", context_tokens=TPOT_CONTEXT)
    bw = p.bandwidth_bytes_per_s
    all_weights = weight_bytes("llama-3.1-8b", "bf16")
    return (
        Mistake("forget the KV cache (weights alone)", float(p.cost.bytes - p.cost.kv_bytes) / bw * 1e3),
        Mistake("forget the KV cache and read the whole embedding table", all_weights / bw * 1e3),
        Mistake("read the whole embedding table (a decode step looks up one row)",
                float(p.cost.bytes - p.cost.weight_bytes + all_weights) / bw * 1e3),
    )


def llama8b_tpot_ms(answer) -> CheckResult:
    """3.2 — time-per-output-token lower bound, Llama-3.1-8B, batch 1, 32,768 tokens cached, H100 SXM (ms)."""
    expected = float(place("llama-3.1-8b", "h100-sxm", phase="decode",
                           context_tokens=TPOT_CONTEXT).time_lower_bound_s) * 1e3
    return check_number("3.2", answer, expected, rel_tol=0.03, unit="ms", mistakes=_tpot_mistakes(),
                        hint="decode is memory-bound: (weight bytes actually read + KV bytes) ÷ bandwidth.")


def _gpt_fast():
    """gpt-fast's single-chip Llama-2-7B measurement and its bound at ``GPT_FAST_CONTEXT_TOKENS``
    cached (an assumption the lesson states: the middle decode step of a run of generate.py's
    default length)."""
    return gpt_fast_7b_measurement(), gpt_fast_7b_bound(GPT_FAST_CONTEXT_TOKENS)


def _gpt_fast_mistakes() -> tuple[Mistake, ...]:
    measured, bound = _gpt_fast()
    bound_tps = float(bound.tokens_per_s_upper_bound)
    mfu = 2 * get_model(measured.model).parameter_count() * measured.tokens_per_s / bound.part.peak_flops_per_s("bf16")
    return (
        Mistake("divide the bound by the measurement (upside down)", 100 * bound_tps / measured.tokens_per_s),
        Mistake("compute MFU (FLOPs against the compute peak) instead of the fraction of the bandwidth bound",
                100 * mfu),
    )


_PERCENT_REL_TOL = 0.05  #: 3.3's tolerance: 5 % of the value (relative), not 5 percentage points


def gpt_fast_percent_of_bound(answer) -> CheckResult:
    """3.3 — the measured gpt-fast decode rate as a percentage of the package's upper bound (MBU).
    The tolerance is relative (``_PERCENT_REL_TOL`` of the value); a wrong answer's message says so
    in words and in percentage points, so "±5 %" is not read as five points."""
    measured, bound = _gpt_fast()
    expected = 100 * measured.tokens_per_s / float(bound.tokens_per_s_upper_bound)
    result = check_number("3.3", answer, expected, rel_tol=_PERCENT_REL_TOL, unit="%", mistakes=_gpt_fast_mistakes(),
                          hint="measured tokens/s ÷ bound tokens/s × 100.")
    allowed = (f"(allowed ±{100 * _PERCENT_REL_TOL:g} % of the value, i.e. ±{_PERCENT_REL_TOL * expected:.1f} "
               "percentage points)")
    return replace(result, message=re.sub(r"\(allowed ±[^)]*\)", allowed, result.message, count=1))


def memory_bound_op_in_prefill(answer) -> CheckResult:
    """3.4 — which operator is memory-bound inside a compute-bound 8,192-token Qwen3.8-27B prefill?"""
    p = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192)
    bounds = {row["name"]: row["bound"] for row in p.op_rows() if row["block"] == "full_attention"}
    memory = [name for name in CANDIDATES if bounds.get(name) == "memory"]
    return check_choice("3.4", answer, memory[0], CANDIDATES,
                        hint="a norm does a handful of FLOPs per element it reads and writes.")


#: 3.5's context: 131,071 tokens cached plus the new one fill Llama-3.1-8B's 131,072-token context
#: exactly (one more would be past the model's max_position_embeddings: a what-if)
LONG_CONTEXT = 131071


def _long_context_place():
    return place("llama-3.1-8b", "h100-sxm", phase="decode", context_tokens=LONG_CONTEXT)


def _long_context_mistakes() -> tuple[Mistake, ...]:
    p = _long_context_place()
    c = p.cost
    all_weights = weight_bytes("llama-3.1-8b", "bf16")
    return (
        Mistake("leave out attention's FLOPs (weight matmuls only)", float(c.weight_matmul_flops / c.bytes)),
        Mistake("leave out the KV cache's bytes (the weight lens)", float(c.flops / (c.bytes - c.kv_bytes))),
        Mistake("read the whole embedding table (a decode step looks up one row)",
                float(c.flops / (c.bytes - c.weight_bytes + all_weights))),
    )


_LONG_CONTEXT_REL_TOL = 0.10  #: 3.5's tolerance before its named mistakes narrow it (the message states the band)


def long_context_decode_intensity(answer) -> CheckResult:
    """3.5 — FLOP per byte of all traffic, Llama-3.1-8B, batch-1 decode, 131,071 tokens cached (the
    model's whole context with the new token). The embedding-table mistake lies a few percent below the
    answer, so the band accepted is narrower than ±10 % on that side; a wrong answer's message states it."""
    expected = float(_long_context_place().intensity)
    mistakes = _long_context_mistakes()
    result = check_number("3.5", answer, expected, rel_tol=_LONG_CONTEXT_REL_TOL, unit="FLOP/byte", mistakes=mistakes,
                          hint="the KV cache now weighs about as much as the weights, and attention does about "
                               "(query heads ÷ KV heads) FLOPs per byte of it: add both FLOPs and bytes (and read "
                               "one row of the embedding table, not all of it).")
    return state_accepted_band(result, expected, mistakes, rel_tol=_LONG_CONTEXT_REL_TOL, unit="FLOP/byte")


EXERCISES = {
    "3.1": llama8b_ttft_ms,
    "3.2": llama8b_tpot_ms,
    "3.3": gpt_fast_percent_of_bound,
    "3.4": memory_bound_op_in_prefill,
    "3.5": long_context_decode_intensity,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "3.1": _ttft_mistakes,
    "3.2": _tpot_mistakes,
    "3.3": _gpt_fast_mistakes,
    "3.5": _long_context_mistakes,
}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES = {
    "3.4": "a choice among three operators: each wrong choice is rejected with the hint",
}
