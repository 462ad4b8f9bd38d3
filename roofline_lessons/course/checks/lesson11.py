"""Checkers for the lesson-11 exercises (many chips: tensor, expert and pipeline parallel, the link).
Every expected value is computed from :mod:`roofline_lessons.core.placement`, :mod:`roofline_lessons.
core.parallel`, :mod:`roofline_lessons.topics.many_chips` and the catalog when the checker runs, so a
catalog update never leaves an answer stale. Every figure is per chip, as in the lesson.

Which figure each exercise asks for: 11.2, 11.3 and 11.5 the **estimate** (the ring, the catalog's
assumed latency per call, communication and pipeline stages one after another); 11.7 the **lower
bound**'s communication (the least bytes, no latency); 11.8 the assumed latency's share of the
estimate; 11.1, 11.4 and 11.6 are neither (memory, a ridge, an idle share). Where the other figure
is a tempting answer it is a named mistake."""

from __future__ import annotations

import math
from functools import partial

from ...core.hardware import get_part
from ...core.models import get_model
from ...core.parallel import Parallelism, bubble_fraction, steady_state_idle_fraction
from ...core.placement import place
from ...core.units import GiB
from ...topics.many_chips import activation_message_bytes, link_ridges, one_all_reduce
from ..checkers import CheckResult, Mistake, check_number, distinct_mistakes

_REL_TOL = 0.02  #: every lesson-11 checker's tolerance (relative)

MOE, MOE_PART, MOE_TP, MOE_BATCH, MOE_TOKENS = "qwen3-235b-a22b", "h200", 8, 64, 8192  #: 11.1
MODEL, PART, CONTEXT = "llama-3.1-70b", "h100-sxm", 4096
REDUCE_TP, REDUCE_TOKENS = 8, 1024  #: 11.2
DECODE_TP, DECODE_BATCH = 8, 64  #: 11.3 and 11.7
_DECODE_REL_TOL = 0.01  #: 11.3 is tighter: leaving out the embedding all-reduce and the logits is 2 % off
RIDGE_PART, RIDGE_CHIPS = "l4", 8  #: 11.4
PIPELINE = 4  #: 11.5
BUBBLE_STAGES, BUBBLE_MICRO_BATCHES = 4, 8  #: 11.6
SHARE_TP = 8  #: 11.8: Llama-3.1-70B decode at batch 1


#: the named mistakes that differ from the right answer (a mistake giving it is never named)
_distinct = partial(distinct_mistakes, rel_tol=_REL_TOL)


# ---- 11.1 memory per chip, past the KV heads ----------------------------------------------------


def _moe_place(tensor: int = MOE_TP):
    """64 sequences just after an 8,192-token prefill: each holds 8,192 tokens of KV cache."""
    return place(MOE, MOE_PART, phase="prefill", batch=MOE_BATCH, prompt_tokens=MOE_TOKENS,
                 parallelism=Parallelism(tensor=tensor))


def _memory_per_chip_gib() -> float:
    return float(_moe_place().memory_required_bytes) / GiB


def _memory_mistakes() -> tuple[Mistake, ...]:
    p = _moe_place()
    m = get_model(MOE)
    weights, kv = float(p.footprint.weight_bytes), float(p.footprint.kv_cache_bytes)
    whole_kv = kv * min(MOE_TP, m.num_key_value_heads)
    return _distinct(_memory_per_chip_gib(), (
        Mistake(f"divide the KV cache by {MOE_TP} chips past the model's {m.num_key_value_heads} KV heads (the cache "
                f"splits by KV head: each chip holds 1/{min(MOE_TP, m.num_key_value_heads)} of it, each head stored "
                f"on {max(1, MOE_TP // m.num_key_value_heads)} chips)",
                (weights + whole_kv / MOE_TP) / GiB),
        Mistake("give GB (10^9 bytes) where GiB (2^30 bytes) were asked", float(p.memory_required_bytes) / 1e9),
        Mistake("forget to split the KV cache (the whole cache on every chip)", (weights + whole_kv) / GiB),
        Mistake("forget to split the weights (the whole model on every chip)",
                (weights * MOE_TP + kv) / GiB),
    ))


def moe_memory_per_chip_gib(answer) -> CheckResult:
    """11.1 — GiB per chip (weights + KV cache) of Qwen3-235B-A22B under tensor parallel 8 on H200s,
    64 sequences holding 8,192 tokens each, BF16."""
    return check_number("11.1", answer, _memory_per_chip_gib(), rel_tol=_REL_TOL, unit="GiB",
                        mistakes=_memory_mistakes(),
                        hint="weights ÷ 8 (parameter_count() × 2 bytes) + 64 × 8,192 × kv_bytes_per_token('bf16') "
                             "÷ min(8, num_key_value_heads), all ÷ 2^30.")


# ---- 11.2 one all-reduce --------------------------------------------------------------------------


def _reduce():
    return one_all_reduce(PART, REDUCE_TP, activation_message_bytes(MODEL, REDUCE_TOKENS))


def _reduce_s() -> float:
    return _reduce().time_s


def _reduce_mistakes() -> tuple[Mistake, ...]:
    a = _reduce()
    bw = a.link.per_direction_bytes_per_s
    return _distinct(a.time_s, (
        Mistake(f"halve the bytes' time: either you divided by the bidirectional headline "
                f"({a.link.bidirectional_bytes_per_s / 1e9:,.0f} GB/s, both directions added) instead of the "
                f"per-direction bandwidth ({bw / 1e9:,.0f} GB/s), or each chip sent only (n − 1)/n of the message, "
                "forgetting the all-gather half (a ring all-reduce is a reduce-scatter, then an all-gather: "
                "2(n − 1)/n in all)",
                a.headline_time_s),
        Mistake(f"forget the ring factor 2(n − 1)/n (each chip sends {a.ring_factor:g}× the message, not 1×)",
                a.latency_s + a.message_bytes / bw),
        Mistake("forget the latency term (every call pays the link's latency_s, whatever its size)", a.bandwidth_s),
        Mistake("give microseconds where seconds were asked", 1e6 * a.time_s),
        Mistake("give the lower bound (the message sent once through the switch, no latency) where the estimate "
                "was asked: the ring's 2(n − 1)/n of the message plus the call's assumed latency", a.bound_time_s),
    ))


def one_all_reduce_s(answer) -> CheckResult:
    """11.2 — seconds of one ring all-reduce of a 1,024-token prefill's activations (Llama-3.1-70B,
    BF16) over 8 H100 SXMs, by the estimate's rules: the assumed latency + 2(n − 1)/n × message ÷
    per-direction bandwidth."""
    return check_number("11.2", answer, _reduce_s(), rel_tol=_REL_TOL, unit="s", mistakes=_reduce_mistakes(),
                        hint="the estimate: message = 1,024 × hidden_size × 2 bytes; by the ring each chip sends "
                             "2(n − 1)/n of it at link.per_direction_bytes_per_s, plus link.latency_s (assumed) for "
                             "the call.")


# ---- 11.3 a decode step's communication, by the estimate -------------------------------------------


def _decode():
    return place(MODEL, PART, phase="decode", batch=DECODE_BATCH, context_tokens=CONTEXT,
                 parallelism=Parallelism(tensor=DECODE_TP))


def _decode_comm_s() -> float:
    return float(_decode().comm_time_s)


def _decode_mistakes() -> tuple[Mistake, ...]:
    p = _decode()
    lk, bw = p.link, p.link.per_direction_bytes_per_s
    layer = next(c for c in p.comm.parts if c.name.startswith("tensor all-reduce"))
    emb = next(c for c in p.comm.parts if c.name.startswith("embedding"))
    logits = next(c for c in p.comm.parts if c.name.startswith("logits"))
    n = DECODE_TP
    ring = 2 * (n - 1) / n
    reduce_bytes = float(layer.bytes) + float(emb.bytes)  # the all-reduces' bytes, at 2(n − 1)/n
    one_per_layer = (layer.calls / 2) * lk.latency_s + float(layer.bytes) / 2 / bw + float(emb.time_s) \
        + float(logits.time_s)
    latency = p.comm.calls * lk.latency_s
    return _distinct(_decode_comm_s(), (
        Mistake("forget the bytes: at batch 64 each all-reduce carries 64 tokens' activations, and the bytes are "
                "about a third of the time, not just the calls × latency", latency),
        Mistake("forget the latency term (calls × the link's latency_s)", float(p.comm.bytes) / bw),
        Mistake("leave out the embedding all-reduce and the logits all-gather (they are 2 of the calls, and the "
                f"logits of {DECODE_BATCH} tokens × vocab_size are the largest single message)",
                float(layer.time_s)),
        Mistake("use a ring factor of 1 (the n = 2 value, or the message once) instead of 2(n − 1)/n = "
                f"{ring:g} for the all-reduces", latency + (reduce_bytes / ring + float(logits.bytes)) / bw),
        Mistake("price the logits as an all-reduce (2(n − 1)/n of the logits) instead of an all-gather ((n − 1)/n)",
                latency + (reduce_bytes + 2 * float(logits.bytes)) / bw),
        Mistake("count one all-reduce per layer instead of two (one after attention, one after the MLP)",
                one_per_layer),
        Mistake("use the bidirectional headline instead of the per-direction bandwidth",
                latency + float(p.comm.bytes) / lk.bidirectional_bytes_per_s),
        Mistake("give milliseconds where seconds were asked", 1e3 * _decode_comm_s()),
        Mistake("give the lower bound's communication (each byte once through the switch, no logits gather, no "
                "latency) where the estimate was asked: the ring's bytes and every call's assumed latency",
                float(p.comm_lower_bound_s)),
    ), rel_tol=_DECODE_REL_TOL)


def decode_comm_s(answer) -> CheckResult:
    """11.3 — seconds of communication per chip in one decode step of Llama-3.1-70B at batch 64 under
    tensor parallel 8 on H100 SXMs (4,096 tokens cached), by the estimate: every call's assumed
    latency + its ring bytes ÷ per-direction bandwidth, within 1 %."""
    return check_number("11.3", answer, _decode_comm_s(), rel_tol=_DECODE_REL_TOL, unit="s",
                        mistakes=_decode_mistakes(),
                        hint="the estimate: 2 all-reduces per layer + 1 after the embedding (each, by the ring: "
                             "2(n − 1)/n × 64 × hidden_size × 2 bytes) + 1 logits all-gather ((n − 1)/n × 64 × "
                             "vocab_size × 2 bytes); each call costs link.latency_s (assumed), and all the bytes ÷ "
                             "link.per_direction_bytes_per_s.")


# ---- 11.4 the third ridge ---------------------------------------------------------------------


def _ridge():
    return link_ridges([RIDGE_PART], chips=RIDGE_CHIPS)[0]


def _ridge_mistakes() -> tuple[Mistake, ...]:
    r = _ridge()
    part = get_part(RIDGE_PART)
    out = [
        Mistake(f"use the bidirectional headline ({r.link.bidirectional_bytes_per_s / 1e9:,.0f} GB/s) instead of the "
                f"per-direction bandwidth: that halves the ridge", r.headline_ridge),
        Mistake("divide by the HBM bandwidth (that is the HBM ridge, not the link's)", r.hbm_ridge),
    ]
    sparse = part.sparse_flops_per_s.get("bf16")
    fp8 = part.peak_flops_per_s("fp8") if "fp8" in part.dense_flops_per_s else None
    doubled = {v for v in (sparse, fp8) if v}
    for peak in sorted(doubled):
        causes = []
        if fp8 and math.isclose(peak, fp8, rel_tol=1e-6):
            causes.append("the FP8 rate (the step computes in BF16)")
        if sparse and math.isclose(peak, sparse, rel_tol=1e-6):
            causes.append("the sparse (2:4) BF16 headline (the dense peak is half of it)")
        out.append(Mistake("use " + " or ".join(causes) + " instead of the dense BF16 peak"
                           + (": on the L4 the two are the same number" if len(causes) > 1 else ""),
                           peak / r.link.per_direction_bytes_per_s))
    return _distinct(r.link_ridge, out)


def l4_link_ridge(answer) -> CheckResult:
    """11.4 — the third ridge of 8 L4s (FLOP/byte): dense BF16 peak ÷ the PCIe link's per-direction
    bandwidth."""
    return check_number("11.4", answer, _ridge().link_ridge, rel_tol=_REL_TOL, unit="FLOP/byte",
                        mistakes=_ridge_mistakes(),
                        hint="l4.peak_flops_per_s('bf16') ÷ l4.host_link.per_direction_bytes_per_s.")


# ---- 11.5 pipeline parallel does not cut latency ---------------------------------------------------


def _pipe():
    return place(MODEL, PART, phase="decode", context_tokens=CONTEXT, parallelism=Parallelism(pipeline=PIPELINE))


def _pipe_s() -> float:
    return float(_pipe().time_estimate_s)


def _pipe_mistakes() -> tuple[Mistake, ...]:
    p = _pipe()
    tp = place(MODEL, PART, phase="decode", context_tokens=CONTEXT, parallelism=Parallelism(tensor=PIPELINE))
    one = place(MODEL, PART, phase="decode", context_tokens=CONTEXT)
    return _distinct(_pipe_s(), (
        Mistake(f"take one stage's time for the step: pipeline parallel does not cut a single sequence's latency "
                f"(the step crosses all {PIPELINE} stages, one after another, and so does the package's "
                "time_lower_bound_s here: one token's crossing); the exercise asks for the estimate, "
                "time_estimate_s", float(p.stage_time_s)),
        Mistake(f"divide one chip's time by {PIPELINE}: pipelining does not cut one sequence's latency (the stages "
                "run one after another)", float(one.time_estimate_s) / PIPELINE),
        Mistake(f"multiply the busiest stage by {PIPELINE}: the stages differ (the last one also holds the lm_head), "
                "so add stage_time_s and other_stages_s", PIPELINE * float(p.stage_time_s)
                + (PIPELINE - 1) * float(p.pipeline_send_s)),
        Mistake(f"price it as tensor parallel {PIPELINE}, which splits every layer (pipeline parallel splits the "
                "layers into stages)", float(tp.time_estimate_s)),
        Mistake("give milliseconds where seconds were asked", 1e3 * _pipe_s()),
    ))


def pipeline_step_s(answer) -> CheckResult:
    """11.5 — seconds of one batch-1 decode step of Llama-3.1-70B over a 4-stage pipeline of H100
    SXMs (4,096 tokens cached), by the estimate: the sum of the stages' times, one after another,
    plus the sends between them (each with its assumed latency)."""
    return check_number("11.5", answer, _pipe_s(), rel_tol=_REL_TOL, unit="s", mistakes=_pipe_mistakes(),
                        hint="place(..., parallelism=Parallelism(pipeline=4)): the stages one after another, "
                             "stage_time_s + other_stages_s, plus (p − 1) × pipeline_send_s — its "
                             "time_estimate_s (time_lower_bound_s is the bound: the crossing without latencies).")


# ---- 11.6 the bubble ------------------------------------------------------------------------------


def _bubble() -> float:
    return bubble_fraction(BUBBLE_STAGES, BUBBLE_MICRO_BATCHES)


def _bubble_mistakes() -> tuple[Mistake, ...]:
    p, m = BUBBLE_STAGES, BUBBLE_MICRO_BATCHES
    return _distinct(_bubble(), (
        Mistake("divide by the micro-batches alone, (p − 1)/m (the step lasts m + p − 1 stage-times)", (p - 1) / m),
        Mistake("ignore the micro-batches, (p − 1)/p (that is the bubble of one micro-batch)", (p - 1) / p),
        Mistake("give a percentage where a fraction was asked", 100 * _bubble()),
        Mistake(f"answer a different question: max(0, 1 − m/p) = {steady_state_idle_fraction(p, m):g} is the idle "
                f"share of a server keeping {m} independent batches circulating in steady decode; here one batch is "
                f"split into {m} micro-batches that must all finish before the next step (a flush): "
                "(p − 1)/(m + p − 1)", steady_state_idle_fraction(p, m)),
    ))


def pipeline_bubble(answer) -> CheckResult:
    """11.6 — the idle fraction (0 to 1) of a flushed 4-stage pipeline: one batch split into 8 micro-batches
    that must all finish before the next step, (p − 1)/(m + p − 1)."""
    return check_number("11.6", answer, _bubble(), rel_tol=_REL_TOL, mistakes=_bubble_mistakes(),
                        hint="m micro-batches take m + p − 1 stage-times; each stage is busy for m of them.")


# ---- 11.7 the same step's communication, by the lower bound ------------------------------------------


def _bound_comm_s() -> float:
    return float(_decode().comm_lower_bound_s)


def _bound_comm_mistakes() -> tuple[Mistake, ...]:
    p = _decode()
    lk, bw = p.link, p.link.per_direction_bytes_per_s
    least = float(p.comm.bound_bytes)
    logits = next(c for c in p.comm.parts if c.name.startswith("logits"))
    return _distinct(_bound_comm_s(), (
        Mistake("give the estimate's communication (the ring's bytes and every call's assumed latency, 11.3) where "
                "the lower bound was asked", _decode_comm_s()),
        Mistake(f"count the ring's 2(n − 1)/n: the {lk.name} switch reduces in the switch (NVLink SHARP), so the "
                "least traffic sends each byte of a message once", float(p.comm.bytes) / bw),
        Mistake("add the per-call latency: the lower bound counts none (the latency is the estimate's assumption)",
                least / bw + float(p.comm.calls) * lk.latency_s),
        Mistake("count the logits all-gather: vocab-parallel sampling exchanges each chip's top candidates, not its "
                "logits, so the bound counts no logits", (least + float(logits.bytes)) / bw),
        Mistake("use the bidirectional headline instead of the per-direction bandwidth",
                least / lk.bidirectional_bytes_per_s),
        Mistake("give milliseconds where seconds were asked", 1e3 * _bound_comm_s()),
    ), rel_tol=_DECODE_REL_TOL)


def bound_comm_s(answer) -> CheckResult:
    """11.7 — the lower bound's seconds of communication per chip in 11.3's step (Llama-3.1-70B,
    batch 64, TP 8 on H100 SXMs, 4,096 cached): the least bytes (each byte of an all-reduce once,
    through the switch; no logits) ÷ per-direction bandwidth, no latency, within 1 %."""
    return check_number("11.7", answer, _bound_comm_s(), rel_tol=_DECODE_REL_TOL, unit="s",
                        mistakes=_bound_comm_mistakes(),
                        hint="the lower bound: (2 × layers + 1) all-reduces, each sending 64 × hidden_size × 2 "
                             "bytes once (in the switch), no logits, ÷ link.per_direction_bytes_per_s; no latency.")


# ---- 11.8 how much of the estimate is an assumption ----------------------------------------------------


def _share_place(latency_s=None):
    return place(MODEL, PART, phase="decode", context_tokens=CONTEXT,
                 parallelism=Parallelism(tensor=SHARE_TP, collective_latency_s=latency_s))


def _latency_share() -> float:
    p = _share_place()
    return 1.0 - float(_share_place(0.0).time_estimate_s) / float(p.time_estimate_s)


def _share_mistakes() -> tuple[Mistake, ...]:
    p = _share_place()
    latency = float(p.comm.calls) * p.link.latency_s
    return _distinct(_latency_share(), (
        Mistake("give the latency's share of the communication, not of the whole step's estimate",
                latency / float(p.comm_time_s)),
        Mistake("divide by the lower bound instead of the estimate", latency / float(p.time_lower_bound_s)),
        Mistake("give the share that is NOT latency", 1.0 - _latency_share()),
        Mistake("give a percentage where a fraction was asked", 100 * _latency_share()),
    ))


def latency_share(answer) -> CheckResult:
    """11.8 — the fraction (0 to 1) of the estimate of Llama-3.1-70B's batch-1 decode step under TP 8
    on H100 SXMs (4,096 cached) that is the assumed per-call latency: calls × latency ÷ the estimate."""
    return check_number("11.8", answer, _latency_share(), rel_tol=_REL_TOL, mistakes=_share_mistakes(),
                        hint="p = place(..., parallelism=Parallelism(tensor=8)); p.comm.calls × p.link.latency_s "
                             "÷ p.time_estimate_s.")


EXERCISES = {
    "11.1": moe_memory_per_chip_gib,
    "11.2": one_all_reduce_s,
    "11.3": decode_comm_s,
    "11.4": l4_link_ridge,
    "11.5": pipeline_step_s,
    "11.6": pipeline_bubble,
    "11.7": bound_comm_s,
    "11.8": latency_share,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "11.1": _memory_mistakes,
    "11.2": _reduce_mistakes,
    "11.3": _decode_mistakes,
    "11.4": _ridge_mistakes,
    "11.5": _pipe_mistakes,
    "11.6": _bubble_mistakes,
    "11.7": _bound_comm_mistakes,
    "11.8": _share_mistakes,
}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES: dict[str, str] = {}
