"""Checkers for the lesson-6 exercises (FlashAttention tiling)."""

from __future__ import annotations

import numpy as np

from ..checkers import CheckResult, check_choice, check_function, check_number
from ..flash import flash_block_sizes, flash_hbm_bytes, standard_hbm_bytes
from ..hardware import get_part


def standard_bytes_gb(answer) -> CheckResult:
    """6.1 — by hand: HBM bytes of standard attention for one head, N = 8,192, d = 128, BF16, in GB."""
    return check_number("6.1", answer, float(standard_hbm_bytes(8192, 128, 2)) / 1e9, rel_tol=0.05, unit="GB",
                        hint="4·N·d + 4·N² elements (Q, K, V, O once; S and P each written and read), 2 bytes each.")


def block_cols(answer) -> CheckResult:
    """6.2 — the paper's key-block size B_c = ⌈M/4d⌉ for the H100's shared memory, d = 128, BF16."""
    m = get_part("h100-sxm").shared_memory_per_sm_bytes
    return check_number("6.2", answer, flash_block_sizes(m, 128, 2).paper_cols, abs_tol=0.5, unit="rows",
                        hint="M in elements: bytes ÷ 2; then ⌈M / (4·d)⌉.")


def bytes_ratio_when_n_doubles(answer) -> CheckResult:
    """6.3 — factor by which tiled attention's HBM bytes grow when N doubles (8,192 → 16,384)."""
    m = get_part("h100-sxm").shared_memory_per_sm_bytes
    expected = flash_hbm_bytes(16384, 128, m, 2) / flash_hbm_bytes(8192, 128, m, 2)
    return check_number("6.3", answer, expected, rel_tol=0.05, unit="×",
                        hint="Θ(N²·d²/M): what does doubling N do to N²?")


def online_softmax(fn) -> CheckResult:
    """6.4 — merge two softmax partials: fn(m1, l1, m2, l2) -> (m, l) for the running max and sum."""
    rng = np.random.default_rng(6)
    cases = []
    for _ in range(4):
        a, b = rng.standard_normal(5) * 3, rng.standard_normal(7) * 3
        m1, l1, m2, l2 = a.max(), np.exp(a - a.max()).sum(), b.max(), np.exp(b - b.max()).sum()
        both = np.concatenate([a, b])
        cases.append(((m1, l1, m2, l2), float(np.exp(both - both.max()).sum())))

    def running_sum(*args):
        result = fn(*args)
        if result is ... or result is None:
            return result
        try:
            return result[1]
        except (TypeError, IndexError, KeyError):
            return "not a (max, sum) pair"

    return check_function("6.4", running_sum if callable(fn) else fn, cases, rel_tol=1e-9,
                          hint="m = max(m1, m2); each partial sum is rescaled by exp(its max − m).")


def decode_fix(answer) -> CheckResult:
    """6.5 — does FlashAttention tiling lift decode attention off the bandwidth slope? 'yes' or 'no'."""
    from ..flash import decode_attention_intensity

    expected = "no" if float(decode_attention_intensity(8, 32768)) < get_part("h100-sxm").ridge_point_flop_per_byte() \
        else "yes"
    return check_choice("6.5", answer, expected, ("yes", "no"),
                        hint="in decode each cached key and value is used by one query per head group.")


EXERCISES = {
    "6.1": standard_bytes_gb,
    "6.2": block_cols,
    "6.3": bytes_ratio_when_n_doubles,
    "6.4": online_softmax,
    "6.5": decode_fix,
}
