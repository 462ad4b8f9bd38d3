"""Checkers for the lesson-6 exercises (FlashAttention tiling)."""

from __future__ import annotations

import math

import numpy as np

from ...core.hardware import get_part
from ...core.units import num
from ...topics.flash import flash_block_sizes, flash_hbm_bytes, standard_hbm_bytes
from ..checkers import (CORRECT, CheckResult, Mistake, _finish, _not_attempted, _wrong, as_number, check_choice,
                        check_number, is_unanswered)


def _standard_mistakes() -> tuple[Mistake, ...]:
    n, d = 8192, 128
    return (
        Mistake("count the N×N matrices once instead of written and read (S and P)", (4 * n * d + 2 * n * n) * 2 / 1e9),
        Mistake("leave out the N×N score matrices (that is FlashAttention's compulsory traffic)", 4 * n * d * 2 / 1e9),
        Mistake("answer in GiB instead of GB", float(standard_hbm_bytes(n, d, 2)) / 2**30),
    )


def standard_bytes_gb(answer) -> CheckResult:
    """6.1 — by hand: HBM bytes of standard attention for one head, N = 8,192, d = 128, BF16, in GB."""
    return check_number("6.1", answer, float(standard_hbm_bytes(8192, 128, 2)) / 1e9, rel_tol=0.05, unit="GB",
                        mistakes=_standard_mistakes(),
                        hint="4·N·d + 4·N² elements (Q, K, V, O once; S and P each written and read), 2 bytes each.")


def _block_mistakes() -> tuple[Mistake, ...]:
    m = get_part("h100-sxm").shared_memory_per_sm_bytes
    return (
        Mistake("take M in bytes, not in BF16 elements", float(math.ceil(m / (4 * 128)))),
        Mistake("take a vendor 'KB' as 1,000 bytes (228 KB of SRAM is 228 KiB)",
                float(math.ceil(228_000 / 2 / (4 * 128)))),
    )


def block_cols(answer) -> CheckResult:
    """6.2 — the paper's key-block size B_c = ⌈M/4d⌉ for the H100's shared memory, d = 128, BF16."""
    m = get_part("h100-sxm").shared_memory_per_sm_bytes
    return check_number("6.2", answer, flash_block_sizes(m, 128, 2).paper_cols, abs_tol=0.5, unit="rows", whole=True,
                        mistakes=_block_mistakes(),
                        hint="M in elements: bytes ÷ 2; then ⌈M / (4·d)⌉.")


def _ratio_mistakes() -> tuple[Mistake, ...]:
    return (Mistake("treat the tiled bytes as linear in N (Q, K, V, O once: that is the compulsory traffic)", 2.0),)


def bytes_ratio_when_n_doubles(answer) -> CheckResult:
    """6.3 — factor by which tiled attention's HBM bytes grow when N doubles (8,192 → 16,384)."""
    m = get_part("h100-sxm").shared_memory_per_sm_bytes
    expected = flash_hbm_bytes(16384, 128, m, 2) / flash_hbm_bytes(8192, 128, m, 2)
    return check_number("6.3", answer, expected, rel_tol=0.05, unit="×", mistakes=_ratio_mistakes(),
                        hint="Θ(N²·d²/M): what does doubling N do to N²?")


def _as_pair(result):
    """(m, l, None) for a usable pair of numbers; (None, None, explanation) otherwise. Never raises."""
    if isinstance(result, (str, bytes, dict)) or not hasattr(result, "__len__"):
        value, problem = as_number(result)
        what = f"one number ({num(value, 6)})" if problem is None else repr(result)[:40]
        return None, None, f"it returned {what}, not a pair (m, l): return both values, `return m, l`."
    try:
        items = list(result)
    except Exception:  # an odd container: explain, never crash
        return None, None, f"it returned {type(result).__name__}, not a pair (m, l)."
    if len(items) != 2:
        return None, None, f"it returned {len(items)} values; expected the pair (m, l)."
    (m, p1), (l, p2) = as_number(items[0]), as_number(items[1])
    if p1 or p2:
        return None, None, f"the pair it returned is not two numbers: {p1 or p2}"
    return m, l, None


def online_softmax(fn) -> CheckResult:
    """6.4 — merge two softmax partials: fn(m1, l1, m2, l2) -> (m, l) for the running max and sum."""
    ex = "6.4"
    if is_unanswered(fn):
        return _not_attempted(ex, "a function")
    if not callable(fn):
        return _wrong(ex, f"expected a function merge(m1, l1, m2, l2), got {type(fn).__name__}.")
    rng = np.random.default_rng(6)
    for _ in range(4):
        a, b = rng.standard_normal(5) * 3, rng.standard_normal(7) * 3
        m1, l1, m2, l2 = (float(x) for x in (a.max(), np.exp(a - a.max()).sum(), b.max(), np.exp(b - b.max()).sum()))
        both = np.concatenate([a, b])
        m_ok, l_ok = float(both.max()), float(np.exp(both - both.max()).sum())
        shown = f"{num(m1, 4)}, {num(l1, 4)}, {num(m2, 4)}, {num(l2, 4)}"
        try:
            result = fn(m1, l1, m2, l2)
        except Exception as exc:  # the learner's code failed: report it, never crash
            return _wrong(ex, f"calling it with ({shown}) raised {type(exc).__name__}: {exc}")
        if is_unanswered(result):
            return _not_attempted(ex, "a function body that returns the pair (m, l)")
        m, l, problem = _as_pair(result)
        if problem:
            return _wrong(ex, f"with ({shown}) {problem}")
        got = f"with ({shown}) it returned (m, l) = ({num(m, 6)}, {num(l, 6)}); expected ({num(m_ok, 6)}, {num(l_ok, 6)})."
        m_right = math.isclose(m, m_ok, rel_tol=1e-9, abs_tol=1e-12)
        l_right = math.isclose(l, l_ok, rel_tol=1e-9)
        if m_right and l_right:
            continue
        if math.isclose(m, l_ok, rel_tol=1e-9) and math.isclose(l, m_ok, rel_tol=1e-9, abs_tol=1e-12):
            return _wrong(ex, got + " Hint: the order is (m, l): the running max first, then the sum.")
        if not m_right:
            return _wrong(ex, got + " Hint: m is the larger of the two maxima, max(m1, m2).")
        if math.isclose(l, l1 + l2, rel_tol=1e-9):
            return _wrong(ex, got + " Hint: l1 + l2 adds sums taken against different maxima; rescale each by "
                                    "exp(its max − m) first.")
        if math.isclose(l, l1 * math.exp(m - m1) + l2 * math.exp(m - m2), rel_tol=1e-9):
            return _wrong(ex, got + " Hint: the factor is exp(old max − new max), at most 1 — the sign is flipped.")
        return _wrong(ex, got + " Hint: m = max(m1, m2); each partial sum is rescaled by exp(its max − m).")
    return _finish(CheckResult(ex, CORRECT, "right on all 4 test cases: both the max and the sum."))


#: 6.5's model: query heads per KV head, and the tokens cached
DECODE_GROUP, DECODE_CONTEXT = 8, 32768


def decode_fix(answer) -> CheckResult:
    """6.5 — does FlashAttention tiling lift decode attention off the bandwidth slope? 'yes' or 'no'."""
    from ...topics.flash import decode_attention_intensity

    expected = "no" if float(decode_attention_intensity(DECODE_GROUP, DECODE_CONTEXT)) \
        < get_part("h100-sxm").ridge_point_flop_per_byte() else "yes"
    return check_choice("6.5", answer, expected, ("yes", "no"),
                        hint=f"in decode each cached key and value is read once per step and used by every query head "
                             f"of its group — {DECODE_GROUP} here — and by nothing else: no tiling can reuse it more.")


#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "6.1": _standard_mistakes,
    "6.2": _block_mistakes,
    "6.3": _ratio_mistakes,
}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES = {
    "6.4": "a function returning a pair; each classic wrong merge (sum without rescaling, flipped sign, wrong max) "
           "has its own hint",
    "6.5": "a yes/no choice: the wrong one is rejected with the hint",
}


EXERCISES = {
    "6.1": standard_bytes_gb,
    "6.2": block_cols,
    "6.3": bytes_ratio_when_n_doubles,
    "6.4": online_softmax,
    "6.5": decode_fix,
}
