"""Checkers for the lesson-13 exercises (how close real engines get: published runs against the
bound, a calibrated forecast, a sized deployment). Every expected value is computed from
:mod:`roofline_lessons.topics.real_engines`, :mod:`roofline_lessons.topics.serving` and the catalogs
when the checker runs, so a catalog update never leaves an answer stale."""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from ...core.hardware import get_part
from ...core.memory import weight_bytes
from ...topics.real_engines import calibrate, price_run, priced_runs, size_deployment
from ...topics.serving import request_timeline
from ..checkers import CheckResult, Mistake, check_number, distinct_mistakes

_REL_TOL = 0.02  #: 13.1, 13.3 (relative)
_RATE_REL_TOL = 0.005  #: 13.2 (relative): tight enough to reject the named mistakes, loose enough for rounding
TTFT_RUN = "trtllm-0.14-llama-3.1-70b-h100x4-ttft-467"  #: 13.1 (its estimate differs from its bound)
#: 13.2: Llama-3.1-8B in BF16 on one H100, a long prompt: the KV cache is a visible share of each step
RATE_MODEL, RATE_PART, RATE_PROMPT, RATE_OUTPUT = "llama-3.1-8b", "h100-sxm", 16384, 512
FORECAST_RUN = "trtllm-0.17-llama-3.1-70b-h200-fp8-128-2048"  #: 13.3
FORECAST_REGIME = "max throughput"
#: 13.4: H200s for 25,000 output tok/s of Llama-3.1-70B in FP8 at TPOT <= 40 ms, TP 4 copies
SIZE = dict(model="llama-3.1-70b", part="h200", target_output_tokens_per_s=25_000, tpot_slo_s=0.040,
            prompt_tokens=1000, output_tokens=1000, tensor=4, weights_dtype="fp8", kv_dtype="fp8",
            compute_dtype="fp8")


#: the named mistakes that differ from the right answer (a mistake giving it is never named)
_distinct = partial(distinct_mistakes, rel_tol=_REL_TOL)


# ---- 13.1 a time's fraction of the bound --------------------------------------------------------


def _ttft():
    return price_run(TTFT_RUN)


def _ttft_mistakes() -> tuple[Mistake, ...]:
    p = _ttft()
    return _distinct(p.fraction_of_bound, (
        Mistake("divide the measured time by the bound: for a TIME the fraction is bound ÷ measured (at most 1), "
                "for a rate measured ÷ bound", p.measured / p.bound),
        Mistake("use the course's estimate instead of the lower bound", p.estimate / p.measured),
        Mistake("write it as a percentage: the fraction is a number at most 1", 100 * p.fraction_of_bound),
    ))


def ttft_fraction(answer) -> CheckResult:
    """13.1 — the TensorRT-LLM TTFT run's fraction of its bound (Llama-3.1-70B on 4 × H100; a number at
    most 1)."""
    return check_number("13.1", answer, _ttft().fraction_of_bound, rel_tol=_REL_TOL, mistakes=_ttft_mistakes(),
                        hint="a time: bound ÷ measured, from the priced run's .bound and .measured.")


# ---- 13.2 a per-user decode rate's bound --------------------------------------------------------


def _rate_timeline():
    return request_timeline(RATE_MODEL, RATE_PART, prompt_tokens=RATE_PROMPT, output_tokens=RATE_OUTPUT)


def _rate() -> float:
    return 1.0 / _rate_timeline().tpot_lower_bound_s


def _rate_mistakes() -> tuple[Mistake, ...]:
    t = _rate_timeline()
    return _distinct(_rate(), (
        Mistake("divide all output tokens by the E2E bound: that folds the prefill into the rate; the per-user "
                "decode rate is 1 ÷ TPOT", RATE_OUTPUT / t.e2e_lower_bound_s),
        Mistake("take 1 ÷ TTFT: the first token's time is the prefill's, not a decode step's",
                1.0 / t.ttft_lower_bound_s),
        Mistake("divide the bandwidth by the weight bytes alone: each decode step also reads every cached "
                "token's KV", float(t_part_bw() / t_weights())),
    ), rel_tol=_RATE_REL_TOL)


def t_part_bw() -> float:
    return get_part(RATE_PART).memory_bandwidth_bytes_per_s


def t_weights() -> float:
    return float(weight_bytes(RATE_MODEL, "bf16"))


def long_prompt_rate_bound(answer) -> CheckResult:
    """13.2 — tokens/s per user no engine can beat without speculative decoding for one Llama-3.1-8B
    request (BF16, one H100 SXM, a 16,384-token prompt, 512 output tokens)."""
    return check_number("13.2", answer, _rate(), rel_tol=_RATE_REL_TOL, unit="tokens/s", mistakes=_rate_mistakes(),
                        hint="1 ÷ request_timeline(...).tpot_lower_bound_s.")


# ---- 13.3 a held-out forecast ---------------------------------------------------------------------


def _forecast_parts():
    runs = [p for p in priced_runs() if p.run.regime == FORECAST_REGIME]
    held = next(p for p in runs if p.run.id == FORECAST_RUN)
    others = [p.fraction_of_bound for p in runs if p is not held]
    return held, others, [p.fraction_of_bound for p in runs]


def _forecast() -> float:
    held, others, _ = _forecast_parts()
    return float(np.median(others)) * held.bound


def _forecast_mistakes() -> tuple[Mistake, ...]:
    held, others, every = _forecast_parts()
    return _distinct(_forecast(), (
        Mistake("calibrate on every run of the regime, the held-out one included: the run then calibrates its own "
                "forecast (circular)", float(np.median(every)) * held.bound),
        Mistake("multiply the efficiency by the estimate instead of the bound: the efficiency is a fraction of "
                "the bound", float(np.median(others)) * held.estimate),
        Mistake("forecast the bound itself (an efficiency of 1)", held.bound),
    ))


def held_out_forecast(answer) -> CheckResult:
    """13.3 — the forecast output tokens/s of the held-out run (its bound × the median fraction of the
    bound of the OTHER maximum-throughput runs)."""
    return check_number("13.3", answer, _forecast(), rel_tol=_REL_TOL, unit="tokens/s",
                        mistakes=_forecast_mistakes(),
                        hint="np.median of the other runs' fraction_of_bound, times the held-out run's bound.")


# ---- 13.4 a sized deployment ----------------------------------------------------------------------


def _sizing(efficiency=None):
    if efficiency is None:
        efficiency = calibrate(priced_runs(), FORECAST_REGIME)[1]
    return size_deployment(**SIZE, efficiency=efficiency)


def _chips() -> float:
    return float(_sizing().chips)


def _chips_mistakes() -> tuple[Mistake, ...]:
    s = _sizing()
    bound_only = _sizing(1.0)
    exact_copies = SIZE["target_output_tokens_per_s"] / s.copy_output_tokens_per_s
    return _unique(_distinct(_chips(), (
        Mistake(f"count copies, not chips: each copy is TP {SIZE['tensor']}, so chips = copies × "
                f"{SIZE['tensor']}", float(s.copies)),
        Mistake("plan on the bound (an efficiency of 1): the fewest chips possible, not a deployment",
                float(bound_only.chips)),
        Mistake("round the copies down: a fraction of a copy must be a whole one more",
                float(math.floor(exact_copies) * SIZE["tensor"])),
    ), rel_tol=0.0))


def _unique(mistakes: tuple[Mistake, ...]) -> tuple[Mistake, ...]:
    """The first mistake of each distinct value: two mistakes that give the same whole number cannot both be
    named for it."""
    seen, out = set(), []
    for m in mistakes:
        if m.value not in seen:
            seen.add(m.value)
            out.append(m)
    return tuple(out)


def h200s_needed(answer) -> CheckResult:
    """13.4 — H200s for 25,000 output tokens/s of Llama-3.1-70B (FP8) at TPOT at most 40 ms, in TP 4
    copies, at the maximum-throughput runs' median efficiency."""
    return check_number("13.4", answer, _chips(), rel_tol=0.0, abs_tol=0.5, whole=True, unit="H200s", mistakes=_chips_mistakes(),
                        hint="size_deployment(...).chips: copies × tensor, the copies rounded up.")


EXERCISES = {
    "13.1": ttft_fraction,
    "13.2": long_prompt_rate_bound,
    "13.3": held_out_forecast,
    "13.4": h200s_needed,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "13.1": _ttft_mistakes,
    "13.2": _rate_mistakes,
    "13.3": _forecast_mistakes,
    "13.4": _chips_mistakes,
}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES: dict[str, str] = {}
