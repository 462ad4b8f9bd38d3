"""Serving's two figures: an idle server's lower bounds and continuous batching's upper bound beside the
static batch's estimates (issue "Bounds that are bounds", item 2)."""

import numpy as np
import pytest

from roofline_lessons import get_model, get_part, place
from roofline_lessons.core.parallel import Parallelism
from roofline_lessons.topics.serving import continuous_batching_cycle_lower_bound_s, request_timeline

CASES = [
    dict(model="llama-3.1-8b", part="h100-sxm", prompt_tokens=2048, output_tokens=128, batch=1),
    dict(model="llama-3.1-8b", part="h100-sxm", prompt_tokens=2048, output_tokens=128, batch=64),
    dict(model="mistral-7b", part="h100-sxm", prompt_tokens=2048, output_tokens=128, batch=32),
    dict(model="qwen3.8-27b", part="b200", prompt_tokens=512, output_tokens=512, batch=16, weights_dtype="fp8",
         compute_dtype="fp8"),
    dict(model="llama-3.1-8b", part="a100-80gb", prompt_tokens=4096, output_tokens=64, batch=8, weights_dtype="int4"),
    dict(model="llama-3.1-8b", part="h100-sxm", prompt_tokens=4096, output_tokens=64, batch=4,
         prefix_cached_tokens=3000),
    dict(model="llama-3.1-8b", part="h100-sxm", prompt_tokens=4096, output_tokens=64, batch=4, chunk_tokens=512),
    dict(model="llama-3.1-8b", part="h100-sxm", prompt_tokens=1024, output_tokens=200, batch=2,
         speculative_tokens=3, acceptance=0.7),
    dict(model="llama-3.1-70b", part="h100-sxm", prompt_tokens=1024, output_tokens=100, batch=2,
         speculative_tokens=4, acceptance=0.6, draft_model="llama-3.1-8b"),
    dict(model="deepseek-v3", part="h200", prompt_tokens=1024, output_tokens=64, batch=16,
         weights_dtype="fp8", compute_dtype="fp8", parallelism=Parallelism(tensor=8)),
    dict(model="llama-3.1-70b", part="h100-sxm", prompt_tokens=1024, output_tokens=32, batch=8,
         parallelism=Parallelism(tensor=2, pipeline=2)),
    dict(model="llama-3.1-8b", part="h100-sxm", prompt_tokens=1024, output_tokens=1, batch=4),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['model']}-{c['part']}-b{c['batch']}")
def test_every_lower_bound_is_below_its_estimate_and_the_upper_bound_above(case):
    kw = dict(case)
    t = request_timeline(kw.pop("model"), kw.pop("part"), **kw)
    assert 0 < t.ttft_lower_bound_s <= t.ttft_s * (1 + 1e-12)
    assert t.step_lower_bound_s.shape == t.step_s.shape
    assert np.all(t.step_lower_bound_s <= t.step_s * (1 + 1e-12))
    assert t.e2e_lower_bound_s <= t.e2e_s * (1 + 1e-12)
    if t.output_tokens > 1:
        assert t.tpot_lower_bound_s <= t.tpot_s * (1 + 1e-12)
    # continuous batching's steady state beats the static schedule, bound for bound and against its estimate
    static_bound = t.batch * t.output_tokens / t.e2e_lower_bound_s
    d = t.to_dict()
    if t.speculative_tokens or ("parallelism" in case and case["parallelism"].pipeline > 1):
        assert d["output_tokens_per_s_upper_bound"] is None  # not modelled: said, never guessed
    else:
        assert t.output_tokens_per_s_upper_bound >= static_bound * (1 - 1e-12)
        assert t.output_tokens_per_s_upper_bound >= t.output_tokens_per_s_static_batch
        assert d["output_tokens_per_s_upper_bound"] == pytest.approx(t.output_tokens_per_s_upper_bound)
    assert d["output_tokens_per_s_static_batch"] == pytest.approx(t.output_tokens_per_s)
    assert "output_tokens_per_s" not in d  # never an unnamed rate


def test_an_idle_prefill_and_decode_are_the_placement_s_two_figures():
    t = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=3, batch=4)
    pf = place("llama-3.1-8b", "h100-sxm", phase="prefill", batch=4, prompt_tokens=2048)
    assert t.ttft_s == pytest.approx(float(pf.time_estimate_s)) and t.ttft_lower_bound_s == pytest.approx(
        float(pf.time_lower_bound_s))
    dc = place("llama-3.1-8b", "h100-sxm", phase="decode", batch=4, context_tokens=np.array([2048.0, 2049.0]))
    assert t.step_lower_bound_s == pytest.approx(np.asarray(dc.time_lower_bound_s))
    assert t.step_s == pytest.approx(np.asarray(dc.time_estimate_s))


def test_the_continuous_batching_cycle_by_hand():
    """Dense model, one chip: the cycle is the larger of Σ decode bounds and each unit's summed work,
    the prefills' weights left out (a decode step reads them anyway)."""
    m, p, b, P, O = "llama-3.1-8b", "h100-sxm", 32, 2048, 128
    t = request_timeline(m, p, prompt_tokens=P, output_tokens=O, batch=b)
    ctx = P + np.arange(O - 1, dtype=float)
    d = place(m, p, phase="decode", batch=b, context_tokens=ctx)
    pf = place(m, p, phase="prefill", batch=b, prompt_tokens=P)
    tensor = float(np.sum(d.tensor_time_s)) + float(pf.tensor_time_s)
    memory = (float(np.sum(d.cost.compulsory_bytes)) + float(pf.cost.compulsory_bytes - pf.cost.weight_bytes)) / 3.35e12
    cycle = max(tensor, memory)  # each unit's work summed over the cycle (no per-step maximum: contexts stagger)
    assert t.output_tokens_per_s_upper_bound == pytest.approx(b * O / cycle, rel=1e-9)
    assert continuous_batching_cycle_lower_bound_s(get_model(m), get_part(p), batch=b, uncached_prompt_tokens=P,
                                                   decode_contexts=ctx, fields={}) == pytest.approx(cycle, rel=1e-9)


def test_the_issue_s_mistral_case_continuous_beats_static():
    """Issue 23: Mistral-7B, 2,048 in / 128 out on an H100, where the static schedule's estimate read lower
    than the course's own mixed steps."""
    t = request_timeline("mistral-7b", "h100-sxm", prompt_tokens=2048, output_tokens=128, batch=64)
    assert t.output_tokens_per_s_upper_bound > 1.3 * t.output_tokens_per_s_static_batch


def test_bf16_kept_matmuls_run_at_the_bf16_rate_in_serve():
    """An FP8 recipe that keeps attention's projections BF16 prices them at the BF16 rate in every serving
    step, as `place` does (the copy of the compute formula that ignored it is gone)."""
    kw = dict(weights_dtype="fp8", compute_dtype="fp8", quantized_weights="mlp")
    t = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=8192, output_tokens=1, batch=1, **kw)
    pf = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=8192, **kw)
    assert float(pf.cost.unquantized_matmul_flops) > 0
    assert t.ttft_s == pytest.approx(float(pf.time_estimate_s), rel=1e-12)
    chunked = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=8192, output_tokens=1, chunk_tokens=8192,
                               prefix_cached_tokens=1, **kw)
    everything_fp8 = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=8192, output_tokens=1,
                                      chunk_tokens=8192, prefix_cached_tokens=1, weights_dtype="fp8",
                                      compute_dtype="fp8", quantized_weights="all")
    assert chunked.ttft_s > everything_fp8.ttft_s  # the BF16 projections are slower, in the extension path too


def test_the_latency_moves_the_estimate_not_the_bound():
    kw = dict(prompt_tokens=1024, output_tokens=16, batch=1)
    a = request_timeline("llama-3.1-70b", "h100-sxm", parallelism=Parallelism(tensor=8), **kw)
    b = request_timeline("llama-3.1-70b", "h100-sxm", parallelism=Parallelism(tensor=8, collective_latency_s=0.0), **kw)
    assert a.e2e_lower_bound_s == pytest.approx(b.e2e_lower_bound_s, rel=1e-12)
    assert a.output_tokens_per_s_upper_bound == pytest.approx(b.output_tokens_per_s_upper_bound, rel=1e-12)
    assert a.e2e_s > b.e2e_s


def test_a_staggered_engine_cannot_beat_the_upper_bound():
    """A strict reader's counterexample to a Σ-of-step-maxima cycle: with contexts staggered, a cycle can take
    less than the synchronised steps' sum; the bound (each unit's summed work) must stay under it."""
    m, p, b, O = "llama-3.1-8b", "h200", 1400, 600
    t = request_timeline(m, p, prompt_tokens=1, output_tokens=O, batch=b)
    mean_ctx = 1 + (O - 2) / 2
    d = place(m, p, phase="decode", batch=b, context_tokens=mean_ctx)
    pf = place(m, p, phase="prefill", batch=b, prompt_tokens=1)
    # an engine whose steps all sit at the mean context, the prefills' FLOPs after them: a schedule that exists
    staggered_cycle = (O - 1) * float(d.time_lower_bound_s) + float(pf.tensor_time_s)
    synchronised = float(np.sum(t.step_lower_bound_s))  # the old cycle: Σ of the synchronised steps' bounds
    assert b * O / staggered_cycle > b * O / synchronised  # the counterexample: it beat the old figure
    assert t.output_tokens_per_s_upper_bound >= b * O / staggered_cycle * (1 - 1e-9)


def test_an_moe_extension_touches_only_the_new_tokens_experts():
    """A prefix-cached prefill of 8 new tokens reads the experts those 8 tokens touch, not those a prefill of the
    whole prompt would: its lower bound sits near a decode step's, not near the whole prefill's."""
    t = request_timeline("qwen3-30b-a3b", "h100-sxm", prompt_tokens=2048, output_tokens=2, prefix_cached_tokens=2040)
    whole = place("qwen3-30b-a3b", "h100-sxm", phase="prefill", prompt_tokens=2048)
    eight = place("qwen3-30b-a3b", "h100-sxm", phase="prefill", prompt_tokens=8)
    assert t.ttft_lower_bound_s < 0.5 * float(whole.time_lower_bound_s)
    assert t.ttft_lower_bound_s >= float(eight.time_lower_bound_s)  # plus the cached prefix's KV read


def test_an_extension_dequantises_only_the_weights_it_reads():
    """Weight-only int4 MoE with a 2,047-token cached prefix: the one new token's step dequantises the experts it
    touches, not those a whole 2,048-token prefill would (3.5 ms of vector work on an H100 for gpt-oss-120b)."""
    kw = dict(weights_dtype="int4")
    t = request_timeline("gpt-oss-120b", "h100-sxm", prompt_tokens=2048, output_tokens=2, prefix_cached_tokens=2047,
                         **kw)
    whole = place("gpt-oss-120b", "h100-sxm", phase="prefill", prompt_tokens=2048, **kw)
    one = place("gpt-oss-120b", "h100-sxm", phase="prefill", prompt_tokens=1, **kw)
    assert t.ttft_lower_bound_s < float(whole.dequant_time_s)
    assert t.ttft_lower_bound_s >= float(one.time_lower_bound_s)


def test_a_pipelined_decode_tpot_bound_counts_one_tokens_crossing():
    """A token crosses the pipeline's stages one after another: at batch 1 the TPOT lower bound of a
    two-stage pipeline is no smaller than one chip's decode bound (it once took the larger stage's
    bound alone, about half — what card many-chips-pipeline-latency names as a red flag)."""
    pp = request_timeline("llama-3.1-70b", "h100-sxm", prompt_tokens=1000, output_tokens=100,
                          parallelism=Parallelism(pipeline=2))
    stage = place("llama-3.1-70b", "h100-sxm", phase="decode", context_tokens=1050,
                  parallelism=Parallelism(pipeline=2))
    assert pp.tpot_lower_bound_s >= 0.95 * float(stage.pipeline_crossing_lower_bound_s)
    assert pp.tpot_lower_bound_s > 1.8 * float(stage.busiest_stage_lower_bound_s)
    assert pp.tpot_lower_bound_s <= pp.tpot_s * (1 + 1e-9)  # a bound, under its estimate
