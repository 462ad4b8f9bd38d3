"""Checkers for the lesson-10 exercises (serving a request: TTFT, TPOT, speculative decoding, cost).
Every expected value is computed from :mod:`roofline_lessons.topics.serving` and the catalog when the
checker runs, so a catalog update never leaves an answer stale."""

from __future__ import annotations

from functools import partial

import numpy as np

from ...core.costs import model_cost
from ...core.hardware import get_part
from ...core.models import get_model
from ...core.placement import place
from ...topics.serving import cost_per_million_output_tokens, expected_tokens_per_verify, request_timeline
from ..checkers import (CheckResult, Mistake, _wrong, as_number, check_number, distinct_mistakes,
                        is_unanswered)

_REL_TOL = 0.02  #: every lesson-10 checker's tolerance (relative)

MODEL, PART, PROMPT_TOKENS = "llama-3.1-8b", "h100-sxm", 2048
SHORT_OUTPUT_TOKENS, SHORT_BATCH = 16, 8  #: 10.2
K, ALPHA = 3, 0.8  #: 10.3
TARGET, DRAFT, BIG_PART, SPEC_K, SPEC_ALPHA, OUTPUT_TOKENS = "llama-3.1-70b", "llama-3.1-8b", "h200", 4, 0.7, 256
#: 10.4's request: a long prompt and a short answer, so the prefill is a large share of E2E and the
#: E2E speed-up (a named mistake) lies far from the TPOT speed-up
SPEC_PROMPT_TOKENS, SPEC_OUTPUT_TOKENS = 8192, 128
#: 10.4 stores both models' weights in FP8: in BF16 the 70B target and the 8B draft do not fit one
#: H200 together (lesson 10), and an exercise must price a setup that runs
SPEC_WEIGHTS_DTYPE = "fp8"
COST_BATCH, EXAMPLE_PRICE_PER_HOUR_USD = 32, 2.50  #: 10.5 (the price is the exercise's assumption)


#: the named mistakes that differ from the right answer (a mistake giving it is never named)
_distinct = partial(distinct_mistakes, rel_tol=_REL_TOL)


# ---- 10.1 TTFT by hand ------------------------------------------------------------------------


def _ttft_s() -> float:
    return request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=1).ttft_s


def _ttft_mistakes() -> tuple[Mistake, ...]:
    part, m = get_part(PART), get_model(MODEL)
    cost = model_cost(MODEL, phase="prefill", prompt_tokens=PROMPT_TOKENS)
    return _distinct(_ttft_s(), (
        Mistake("take TTFT from the bandwidth (bytes ÷ bandwidth) when the prefill is compute-bound",
                float(cost.bytes) / part.memory_bandwidth_bytes_per_s),
        Mistake("count 2 FLOPs per parameter for every prompt token (the lm_head runs on the last position only, "
                "and the embedding is a lookup, not a matmul)",
                2 * m.parameter_count() * PROMPT_TOKENS / part.peak_flops_per_s("bf16")),
        Mistake("use the FP8 peak (this model runs in BF16)", float(cost.flops) / part.peak_flops_per_s("fp8")),
        Mistake("give milliseconds where seconds were asked", 1e3 * _ttft_s()),
    ))


def ttft_by_hand_s(answer) -> CheckResult:
    """10.1 — TTFT (seconds) of Llama-3.1-8B, batch 1, a 2,048-token prompt on an H100 SXM: the
    prefill step's estimate, max(FLOPs ÷ BF16 peak, unfused bytes ÷ bandwidth) (compute binds, so
    the lower bound is the same number)."""
    return check_number("10.1", answer, _ttft_s(), rel_tol=_REL_TOL, unit="s", mistakes=_ttft_mistakes(),
                        hint="model_cost('llama-3.1-8b', phase='prefill', prompt_tokens=2048); "
                             "max(FLOPs ÷ h100.peak_flops_per_s('bf16'), bytes ÷ h100.memory_bandwidth_bytes_per_s).")


# ---- 10.2 TPOT from a timeline ------------------------------------------------------------------


def _short():
    return request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=SHORT_OUTPUT_TOKENS,
                            batch=SHORT_BATCH)


def _tpot_mistakes() -> tuple[Mistake, ...]:
    t = _short()
    return _distinct(t.tpot_s, (
        Mistake("divide by all the output tokens instead of output − 1 (the first token came from the prefill)",
                (t.e2e_s - t.ttft_s) / t.output_tokens),
        Mistake("divide E2E by the output tokens (that folds the prefill into every token)",
                t.e2e_s / t.output_tokens),
        Mistake("divide by the batch too (TPOT is the gap one user sees, not per token of all users)",
                t.tpot_s / t.batch),
        Mistake("give milliseconds where seconds were asked", 1e3 * t.tpot_s),
    ))


def short_answer_tpot_s(answer) -> CheckResult:
    """10.2 — TPOT (seconds) = (E2E − TTFT) ÷ (output − 1) of a 16-token answer at batch 8."""
    return check_number("10.2", answer, _short().tpot_s, rel_tol=_REL_TOL, unit="s", mistakes=_tpot_mistakes(),
                        hint="(short.e2e_s − short.ttft_s) ÷ (short.output_tokens − 1).")


# ---- 10.3 expected tokens per verify step --------------------------------------------------------


def _tokens_per_verify() -> float:
    return float(expected_tokens_per_verify(K, ALPHA))


def _verify_mistakes() -> tuple[Mistake, ...]:
    return _distinct(_tokens_per_verify(), (
        Mistake("use α^k instead of α^(k+1): (1 − α^k) ÷ (1 − α) is one term short",
                (1 - ALPHA**K) / (1 - ALPHA)),
        Mistake("count only the accepted drafts (the target always adds one token of its own)",
                _tokens_per_verify() - 1),
        Mistake("assume every drafted token is accepted (k + 1)", K + 1.0),
        Mistake("take 1 + k·α (acceptances are not independent of the run: the first rejection ends it)",
                1 + K * ALPHA),
    ))


def tokens_per_verify_step(answer) -> CheckResult:
    """10.3 — expected tokens per verify step with k = 3 drafted tokens and acceptance α = 0.8."""
    return check_number("10.3", answer, _tokens_per_verify(), rel_tol=_REL_TOL, unit="tokens",
                        mistakes=_verify_mistakes(),
                        hint="1 + α + α² + … + α^k = (1 − α^(k+1)) ÷ (1 − α): the i-th draft counts only if all "
                             "before it were accepted.")


# ---- 10.4 a draft model's speed-up --------------------------------------------------------------


def _spec(**kw):
    return request_timeline(TARGET, BIG_PART, prompt_tokens=SPEC_PROMPT_TOKENS, output_tokens=SPEC_OUTPUT_TOKENS,
                            weights_dtype=SPEC_WEIGHTS_DTYPE, **kw)


def _speedup() -> float:
    return _spec().tpot_s / _spec(speculative_tokens=SPEC_K, acceptance=SPEC_ALPHA, draft_model=DRAFT).tpot_s


def _speedup_mistakes() -> tuple[Mistake, ...]:
    plain = _spec()
    drafted = _spec(speculative_tokens=SPEC_K, acceptance=SPEC_ALPHA, draft_model=DRAFT)
    contexts = np.asarray(drafted.step_context_tokens, dtype=float)[:, None] + np.arange(SPEC_K)[None, :]
    draft_s = float(np.sum(place(DRAFT, BIG_PART, phase="decode", context_tokens=contexts,
                                 weights_dtype=SPEC_WEIGHTS_DTYPE).time_estimate_s))
    no_draft_tpot = (drafted.e2e_s - draft_s - drafted.ttft_s) / (drafted.output_tokens - 1)
    mtp = _spec(speculative_tokens=SPEC_K, acceptance=SPEC_ALPHA)
    return _distinct(_speedup(), (
        Mistake("forget the draft's cost (k decode steps of the draft model per verify step; at batch 1 that leaves "
                "about the expected tokens per verify step)",
                plain.tpot_s / no_draft_tpot),
        Mistake("price the draft as an MTP head (about one layer) rather than decode steps of the draft model",
                plain.tpot_s / mtp.tpot_s),
        Mistake("give the E2E speed-up (the prefill is not sped up) instead of the TPOT speed-up",
                plain.e2e_s / drafted.e2e_s),
        Mistake("invert it (speculative ÷ plain)", 1 / _speedup()),
    ))


def draft_model_speedup(answer) -> CheckResult:
    """10.4 — TPOT speed-up (plain ÷ speculative) of Llama-3.1-70B on an H200 drafted by Llama-3.1-8B,
    k = 4, α = 0.7, batch 1, 8,192 tokens in, 128 out, FP8 weights for both (so the pair fits the H200)."""
    return check_number("10.4", answer, _speedup(), rel_tol=_REL_TOL, mistakes=_speedup_mistakes(),
                        hint="request_timeline(..., weights_dtype='fp8') twice — without speculation, and with "
                             "speculative_tokens=4, acceptance=0.7, draft_model='llama-3.1-8b' — then "
                             "plain.tpot_s ÷ drafted.tpot_s.")


# ---- 10.5 dollars per million output tokens -----------------------------------------------------


def _batch32():
    return request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, batch=COST_BATCH)


def _usd(price: float) -> float:
    return float(cost_per_million_output_tokens(price, _batch32().output_tokens_per_s))


def _cost_mistakes(price: float) -> tuple[Mistake, ...]:
    t = _batch32()
    return _distinct(_usd(price), (
        Mistake("divide by one user's tokens/s instead of all users' (the chip-hour pays for every sequence on it)",
                float(cost_per_million_output_tokens(price, t.output_tokens_per_s_per_sequence))),
        Mistake("treat the price per hour as a price per second (forgot ÷ 3,600)",
                price / t.output_tokens_per_s * 1e6),
        Mistake("give the cost per thousand tokens instead of per million", _usd(price) / 1e3),
        Mistake("price at continuous batching's upper bound on tokens/s (that gives the lower bound on cost; the "
                "exercise asks for the static batch's estimate)",
                float(cost_per_million_output_tokens(price, t.output_tokens_per_s_upper_bound))),
    ))


def _price(price) -> tuple[float | None, str | None]:
    value, problem = as_number(price)
    if problem:
        return None, f"pass the price per hour you assumed (in US dollars) as the second argument: {problem}"
    if value <= 0:
        return None, f"the price per hour must be above 0 US dollars, got {price!r}."
    return value, None


def usd_per_million_tokens(answer, price_per_hour_usd=EXAMPLE_PRICE_PER_HOUR_USD) -> CheckResult:
    """10.5 — US dollars per million output tokens of Llama-3.1-8B on an H100 SXM at batch 32 (2,048
    in, 256 out), at the static batch's estimated throughput and the price per chip-hour you assumed."""
    if not is_unanswered(answer):
        price, problem = _price(price_per_hour_usd)
        if problem:
            return _wrong("10.5", problem)
    else:
        price = EXAMPLE_PRICE_PER_HOUR_USD
    return check_number("10.5", answer, _usd(price), rel_tol=_REL_TOL, unit="US$", mistakes=_cost_mistakes(price),
                        hint="price per hour ÷ 3,600 ÷ batch32.output_tokens_per_s × 1,000,000.")


EXERCISES = {
    "10.1": ttft_by_hand_s,
    "10.2": short_answer_tpot_s,
    "10.3": tokens_per_verify_step,
    "10.4": draft_model_speedup,
    "10.5": usd_per_million_tokens,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "10.1": _ttft_mistakes,
    "10.2": _tpot_mistakes,
    "10.3": _verify_mistakes,
    "10.4": _speedup_mistakes,
    "10.5": lambda: _cost_mistakes(EXAMPLE_PRICE_PER_HOUR_USD),
}

#: the extra arguments a checker needs when the tests feed it a classic mistake
MISTAKE_ARGS = {"10.5": lambda: (EXAMPLE_PRICE_PER_HOUR_USD,)}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES: dict[str, str] = {}
