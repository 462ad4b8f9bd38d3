"""Checkers for the lesson-14 exercises (serving engines: Little's law on a simulated run, TTFT under
load, goodput at an SLO attainment, flash-decoding's KV splits). Every expected value is computed
from :mod:`roofline_lessons.topics.engine`, :mod:`roofline_lessons.topics.kernels` and the catalogs
when the checker runs (the simulations are seeded, and cached for the session)."""

from __future__ import annotations

import math
from functools import lru_cache, partial

import numpy as np

from ...core.hardware import get_part
from ...core.memory import weight_bytes
from ...core.models import get_model
from ...topics import kernels
from ...topics.engine import EngineConfig, goodput_curve, poisson_requests, simulate
from ...topics.serving import request_timeline
from ..checkers import CheckResult, Mistake, check_number, distinct_mistakes

_REL_TOL = 0.02
#: 14.1 and 14.2: Llama-3.1-8B on one H100, 1,024 in and 256 out, chunks of 512, 40 requests/s (past capacity: a queue builds)
RUN = dict(model="llama-3.1-8b", part="h100-sxm", rate=40.0, requests=600, prompt=1024, output=256, chunk=512, seed=0)
#: 14.3: two H100s as one pool, 4,096 in and 256 out, whole prompts, SLOs 1 s TTFT and 25 ms TPOT at 90 %
GOODPUT = dict(model="llama-3.1-8b", part="h100-sxm", rates=(4, 8, 12, 16, 24, 32, 48), requests=400, prompt=4096,
               output=256, ttft_slo_s=1.0, tpot_slo_s=0.025, attainment=0.9)
#: 14.4: Llama-3.1-70B decode at batch 2, 65,536 tokens of context, on an H100 SXM
SPLIT = dict(model="llama-3.1-70b", part="h100-sxm", batch=2, context_tokens=65_536)


#: the named mistakes that differ from the right answer (a mistake giving it is never named)
_distinct = partial(distinct_mistakes, rel_tol=_REL_TOL)


@lru_cache(maxsize=1)
def _run():
    r = RUN
    return simulate(r["model"], r["part"], poisson_requests(r["rate"], r["requests"], r["prompt"], r["output"],
                                                            seed=r["seed"]), EngineConfig(chunk_tokens=r["chunk"]))


# ---- 14.1 Little's law ------------------------------------------------------------------------------


def _in_system() -> float:
    s = _run()
    return s.completed_requests_per_s * float(np.mean(s.e2e_s))


def _in_system_mistakes() -> tuple[Mistake, ...]:
    s = _run()
    w = float(np.mean(s.e2e_s))
    lam = s.completed_requests_per_s
    return _distinct(_in_system(), (
        Mistake("divide the rate by the time (λ ÷ W): Little's law multiplies them, L = λ × W", lam / w),
        Mistake("divide the time by the rate (W ÷ λ): Little's law multiplies them, L = λ × W", w / lam),
        Mistake("forget the queue: time from admission to the last token counts only the running requests, "
                "not those waiting", lam * float(np.mean(s.e2e_s - s.queue_s))),
        Mistake("use the offered rate: past capacity requests complete more slowly than they arrive, so λ is the "
                "run's completions per second (requests ÷ span), not the arrival rate", RUN["rate"] * w),
    ))


def requests_in_system(answer) -> CheckResult:
    """14.1 — the mean number of requests in the system (waiting or running), by Little's law from the
    run's completions per second and its mean E2E (arrival to last token)."""
    return check_number("14.1", answer, _in_system(), rel_tol=_REL_TOL, mistakes=_in_system_mistakes(),
                        unit="requests", hint="L = λ × W with λ = run.completed_requests_per_s and W the mean of "
                                              "run.e2e_s (arrival to last token).")


# ---- 14.2 TTFT under load ------------------------------------------------------------------------------


def _ttft() -> float:
    return float(np.mean(_run().ttft_s))


def _ttft_mistakes() -> tuple[Mistake, ...]:
    r = RUN
    t = request_timeline(r["model"], r["part"], prompt_tokens=r["prompt"], output_tokens=r["output"],
                         chunk_tokens=r["chunk"])
    part = get_part(r["part"])
    return _distinct(_ttft(), (
        Mistake("take the idle server's prefill (lesson 10's TTFT): under load a request also waits in the queue "
                "and shares each step with the running batch", float(t.ttft_s)),
        Mistake("divide the weight bytes by the bandwidth: that is one decode step's memory time, not a prefill "
                "(compute-bound) plus its queueing", weight_bytes(r["model"]) / part.memory_bandwidth_bytes_per_s),
        Mistake("take the mean queueing delay alone: TTFT runs on to the end of the prefill",
                float(np.mean(_run().queue_s))),
    ))


def mean_ttft_under_load(answer) -> CheckResult:
    """14.2 — the run's mean TTFT, seconds."""
    return check_number("14.2", answer, _ttft(), rel_tol=_REL_TOL, mistakes=_ttft_mistakes(), unit="s",
                        hint="run.ttft_s holds each request's TTFT (arrival to first token): take its mean.")


# ---- 14.3 goodput ------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _curve():
    g = GOODPUT
    return goodput_curve(g["model"], g["part"], rates_per_s=list(g["rates"]), requests=g["requests"],
                         prompt_tokens=g["prompt"], output_tokens=g["output"], ttft_slo_s=g["ttft_slo_s"],
                         tpot_slo_s=g["tpot_slo_s"], slo_attainment=g["attainment"], config=EngineConfig(chips=2))


def _goodput_per_chip() -> float:
    return _curve().goodput_requests_per_s_per_chip


def _goodput_mistakes() -> tuple[Mistake, ...]:
    c = _curve()
    any_met = c.rates_per_s[c.attainment > 0]
    return _distinct(_goodput_per_chip(), (
        Mistake("give the whole deployment's goodput: the question asks per chip (two chips here)",
                c.goodput_requests_per_s),
        Mistake("take the highest rate at which any request meets the SLOs, or the first rate that misses the "
                "target: goodput is the highest rate whose attainment still reaches the target share (90 %)",
                float(any_met.max()) / c.chips if any_met.size else 0.0),
    ))


def goodput_per_chip(answer) -> CheckResult:
    """14.3 — DistServe's goodput per chip, requests/s."""
    return check_number("14.3", answer, _goodput_per_chip(), rel_tol=_REL_TOL, mistakes=_goodput_mistakes(),
                        unit="requests/s", hint="the highest rate whose attainment is at least the target, "
                                                "divided by the deployment's chips (curve.chips).")


# ---- 14.4 flash-decoding splits -----------------------------------------------------------------------------


def _splits() -> int:
    s = SPLIT
    m = get_model(s["model"])
    return int(kernels.flash_decoding_splits(s["part"], batch=s["batch"], kv_heads=m.num_key_value_heads,
                                             context_tokens=s["context_tokens"]))


def _split_mistakes() -> tuple[Mistake, ...]:
    s = SPLIT
    m, part = get_model(s["model"]), get_part(s["part"])
    units = part.compute_units
    return _distinct(_splits(), (
        Mistake("count a CTA per query head: GQA packs the query heads that share a KV head into one CTA",
                math.ceil(units / (s["batch"] * m.num_attention_heads))),
        Mistake("forget the batch: every sequence brings its own KV heads' CTAs",
                math.ceil(units / m.num_key_value_heads)),
        Mistake("forget the KV heads: each sequence launches one CTA per KV head (its GQA group packed inside)",
                math.ceil(units / s["batch"])),
        Mistake("round down: with fewer splits some SMs get no CTA; take the ceiling",
                units // (s["batch"] * m.num_key_value_heads)),
        Mistake("answer the SM count: the question asks how many ways to split each KV sequence", units),
    ), rel_tol=0.0)


def flash_decoding_splits(answer) -> CheckResult:
    """14.4 — the fewest KV splits that give every SM a CTA (a whole number)."""
    return check_number("14.4", answer, _splits(), rel_tol=0.0, whole=True, mistakes=_split_mistakes(),
                        hint="CTAs = batch × KV heads × splits; find the fewest splits with CTAs ≥ the SM count "
                             "(part.compute_units).")


EXERCISES = {
    "14.1": requests_in_system,
    "14.2": mean_ttft_under_load,
    "14.3": goodput_per_chip,
    "14.4": flash_decoding_splits,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "14.1": _in_system_mistakes,
    "14.2": _ttft_mistakes,
    "14.3": _goodput_mistakes,
    "14.4": _split_mistakes,
}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES: dict[str, str] = {}
