"""Lesson 10's package layer: one request's timeline, speculation, prefix caching, continuous
batching, the frontier, Little's law, goodput, cost and energy."""

import math

import numpy as np
import pytest

from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.hardware import get_part
from roofline_lessons.core.models import get_model
from roofline_lessons.core.placement import place
from roofline_lessons.topics import serving as s

M, P = "llama-3.1-8b", "h100-sxm"


def tl(**kw):
    args = dict(prompt_tokens=1024, output_tokens=64, batch=4)
    args.update(kw)
    return s.request_timeline(M, P, **args)


def test_ttft_is_the_prefill_bound():
    t = tl()
    assert t.ttft_s == pytest.approx(float(place(M, P, phase="prefill", batch=4, prompt_tokens=1024).time_estimate_s))


def test_steps_equal_a_loop_over_place_and_e2e_is_their_sum():
    t = tl(output_tokens=40)
    loop = [float(place(M, P, phase="decode", batch=4, context_tokens=1024 + i).time_estimate_s) for i in range(39)]
    assert t.decode_steps == 39 and isinstance(t.decode_steps, int)
    np.testing.assert_allclose(t.step_s, loop, rtol=1e-12)
    assert t.e2e_s == pytest.approx(t.ttft_s + sum(loop))
    assert t.tpot_s == pytest.approx((t.e2e_s - t.ttft_s) / 39)
    assert t.mean_step_s == pytest.approx(np.mean(loop))  # the two TPOTs agree without speculation
    assert t.output_tokens_per_s == pytest.approx(4 * 40 / t.e2e_s)
    assert t.output_tokens_per_s_per_sequence == pytest.approx(40 / t.e2e_s)
    assert t.tokens_per_verify_step == 1


def test_memory_is_counted_at_the_final_context():
    t = tl(output_tokens=100)
    fp = place(M, P, phase="prefill", batch=4, prompt_tokens=1124)
    assert t.memory_required_bytes == pytest.approx(float(fp.memory_required_bytes))
    assert t.fits_in_memory
    assert not s.request_timeline("llama-3.1-70b", P, prompt_tokens=16, output_tokens=2).fits_in_memory


def test_one_output_token_has_no_decode_step():
    t = tl(output_tokens=1)
    assert t.decode_steps == 0 and t.e2e_s == t.ttft_s and math.isnan(t.tpot_s)


def test_expected_tokens_per_verify():
    assert s.expected_tokens_per_verify(4, 0.0) == 1
    assert s.expected_tokens_per_verify(0, 0.9) == pytest.approx(1)
    assert s.expected_tokens_per_verify(3, 0.5) == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    assert s.expected_tokens_per_verify(5, 0.999999) == pytest.approx(6, rel=1e-4)
    np.testing.assert_allclose(s.expected_tokens_per_verify(np.array([1, 2]), 0.5), [1.5, 1.75])


def test_speculation_helps_small_batches_and_not_compute_bound_ones():
    kw = dict(speculative_tokens=4, acceptance=0.7)
    small, small_spec = tl(batch=1), tl(batch=1, **kw)
    assert small_spec.tpot_s < small.tpot_s
    assert small_spec.tokens_per_verify_step == pytest.approx(s.expected_tokens_per_verify(4, 0.7))
    assert small_spec.decode_steps == math.ceil(63 / small_spec.tokens_per_verify_step)
    assert small_spec.mean_step_s > small_spec.tpot_s  # a verify step yields more than one token
    big, big_spec = tl(batch=1024, prompt_tokens=64), tl(batch=1024, prompt_tokens=64, **kw)
    assert place(M, P, phase="decode", batch=1024 * 5, context_tokens=64).bound == "compute"
    assert big_spec.tpot_s > big.tpot_s


def _lm_head_s(pl):
    lm = next(op for op in pl.cost.ops if op.name == "lm_head")
    compute = lm.weight_matmul_flops / pl.matmul_peak_flops_per_s + (lm.flops - lm.weight_matmul_flops) / pl.other_peak_flops_per_s
    return float(max(compute, lm.bytes / pl.bandwidth_bytes_per_s)) * lm.layers


def test_a_draft_model_adds_its_steps_and_must_be_smaller():
    mtp = s.request_timeline("llama-3.1-70b", "h200", prompt_tokens=512, output_tokens=32, speculative_tokens=3,
                             acceptance=0.6)
    drafted = s.request_timeline("llama-3.1-70b", "h200", prompt_tokens=512, output_tokens=32, speculative_tokens=3,
                                 acceptance=0.6, draft_model="llama-3.1-8b")
    assert drafted.step_s[0] > mtp.step_s[0] and drafted.draft_model_id == "llama-3.1-8b"
    draft = place("llama-3.1-8b", "h200", phase="decode", context_tokens=np.arange(512, 515)).time_estimate_s
    base = place("llama-3.1-70b", "h200", phase="decode", context_tokens=512)
    mtp_draft_step = float(base.time_estimate_s) / 80 + _lm_head_s(base)
    assert drafted.step_s[0] - mtp.step_s[0] == pytest.approx(float(np.sum(draft)) - 3 * mtp_draft_step)
    with pytest.raises(RooflineInputError, match="llama-3.1-70b.*larger"):
        tl(speculative_tokens=2, acceptance=0.5, draft_model="llama-3.1-70b")


def test_an_mtp_draft_step_pays_for_the_lm_head():
    """The old price (1 / layers of a decode step) left out the shared lm_head read (~1.05 GB for Llama-3.1-8B
    against ~0.44 GB per layer)."""
    k = 2
    spec = tl(batch=1, output_tokens=8, speculative_tokens=k, acceptance=0.5)
    verify_s = float(s._verify(get_model(M), get_part(P), 1, k + 1, np.array([1024.0]), {}).time_s[0])
    draft_s = spec.step_s[0] - verify_s
    base = place(M, P, phase="decode", batch=1, context_tokens=1024)
    lm = next(op for op in base.cost.ops if op.name == "lm_head")
    assert lm.bytes > 2 * base.cost.bytes / 32  # the head outweighs a layer for this model
    assert draft_s == pytest.approx(k * (float(base.time_estimate_s) / 32 + _lm_head_s(base)))
    assert draft_s > 3 * k * float(base.time_estimate_s) / 32  # ~3× the old price


def test_an_mtp_draft_step_dequantises_only_the_lm_head():
    """With weight-only FP8 the draft step once paid the whole target's dequantisation every step
    (Llama-3.1-70B on an H200: 2.23 ms against a 0.62 ms lower bound, 2.04 ms of it dequant). It
    pays one layer's share of it and the lm_head's own: zero for the BF16 lm_head FP8 recipes keep."""
    base = place("llama-3.1-70b", "h200", phase="decode", context_tokens=2048, weights_dtype="fp8")
    lm = next(op for op in base.cost.ops if op.name == "lm_head")
    assert float(base.dequant_time_s) > 1e-3 and float(lm.dequant_flops) == 0.0
    est, lb = s._mtp_draft_step(base, 80)
    assert float(est) == pytest.approx(float(base.time_estimate_s) / 80 + _lm_head_s(base))
    assert float(est) < 1.05 * float(lb)  # both ~ one layer + one lm_head read, no whole-model dequant
    # a quantised lm_head pays its own dequantisation, and only that
    q = place(M, P, phase="decode", context_tokens=1024, weights_dtype="int4", quantized_weights="all")
    qlm = next(op for op in q.cost.ops if op.name == "lm_head")
    own = float(qlm.dequant_flops) * qlm.layers / q.vector_peak_flops_per_s
    assert own > 0
    tensor = float(q.tensor_seconds(qlm.weight_matmul_flops, qlm.flops - qlm.weight_matmul_flops,
                                    qlm.unquantized_matmul_flops)) * qlm.layers
    head = max(tensor + own, float(qlm.bytes) * qlm.layers / q.bandwidth_bytes_per_s)
    est_q, _ = s._mtp_draft_step(q, 32)
    assert float(est_q) == pytest.approx(float(q.time_estimate_s) / 32 + head)
    assert float(est_q) < float(q.time_estimate_s) / 32 + float(q.dequant_time_s)  # not the whole model's


def test_a_draft_model_prefills_the_prompt_too():
    kw = dict(prompt_tokens=2048, output_tokens=16, batch=2, speculative_tokens=3, acceptance=0.6)
    drafted = s.request_timeline("llama-3.1-70b", "h200", draft_model="llama-3.1-8b", **kw)
    target = place("llama-3.1-70b", "h200", phase="prefill", batch=2, prompt_tokens=2048).time_estimate_s
    draft = place("llama-3.1-8b", "h200", phase="prefill", batch=2, prompt_tokens=2048).time_estimate_s
    assert drafted.ttft_s == pytest.approx(float(target) + float(draft))
    mtp = s.request_timeline("llama-3.1-70b", "h200", **kw)
    assert mtp.ttft_s == pytest.approx(float(target))  # no separate draft model to prefill


def test_a_draft_model_needs_memory_for_its_weights_and_kv():
    kw = dict(prompt_tokens=8000, output_tokens=192, batch=16, speculative_tokens=3, acceptance=0.6)
    drafted = s.request_timeline("llama-3.1-70b", "b200", draft_model="llama-3.1-8b", **kw)
    target = place("llama-3.1-70b", "b200", phase="decode", batch=16, context_tokens=8191).memory_required_bytes
    draft = place("llama-3.1-8b", "b200", phase="decode", batch=16, context_tokens=8191).memory_required_bytes
    assert drafted.memory_required_bytes == pytest.approx(float(target) + float(draft))
    assert s.request_timeline("llama-3.1-70b", "b200", **kw).fits_in_memory  # the target alone fits
    assert not drafted.fits_in_memory  # the draft's weights and KV push it over
    assert drafted.to_dict()["memory_required_bytes"] == round(float(target) + float(draft))


def test_prefix_caching_lowers_ttft_but_still_reads_the_prefix():
    full, cached = tl(), tl(prefix_cached_tokens=768)
    assert cached.ttft_s < full.ttft_s
    fresh = float(place(M, P, phase="prefill", batch=4, prompt_tokens=256).time_estimate_s)
    assert cached.ttft_s > fresh  # 256 new tokens attend over 1,024, not 256
    np.testing.assert_allclose(cached.step_s, full.step_s)


def test_chunking_costs_a_weight_read_per_chunk():
    one, chunked = tl(batch=1, prompt_tokens=512), tl(batch=1, prompt_tokens=512, chunk_tokens=64)
    assert chunked.ttft_s > one.ttft_s
    assert tl(chunk_tokens=4096).ttft_s == pytest.approx(tl().ttft_s)


def test_each_chunk_attends_over_the_chunks_before_it():
    t = s.request_timeline(M, P, prompt_tokens=4096, output_tokens=8, chunk_tokens=512)
    fresh = 8 * float(place(M, P, phase="prefill", prompt_tokens=512).time_estimate_s)
    assert t.ttft_s > fresh * 1.02  # later chunks read and attend the earlier chunks' KV
    # chunk i = prefill(512 (i+1)) − per-token work of prefill(512 i): the FLOPs telescope to one whole prefill
    whole = place(M, P, phase="prefill", prompt_tokens=4096)
    lm = next(op for op in whole.cost.ops if op.name == "lm_head")
    chunks = s._extend(get_model(M), get_part(P), 1, np.full(8, 512.0), 512.0 * np.arange(8), {})
    assert float(np.sum(chunks.flops)) == pytest.approx(float(whole.cost.flops) + 7 * float(lm.flops))
    assert t.ttft_s == pytest.approx(float(np.sum(chunks.time_s)))


def test_a_later_chunk_in_a_mixed_step_attends_over_the_earlier_ones():
    """Chunk i of a prompt rides with the decode tokens over the i chunks before it: its FLOPs and bytes
    are :func:`_extend`'s (the chunk over its history), so later chunks cost more than the first."""
    kw = dict(decode_batch=16, decode_context_tokens=2048, prefill_chunk_tokens=512)
    first = s.mixed_step(M, P, **kw)
    assert s.mixed_step(M, P, prefill_cached_tokens=0, **kw) == first  # the default: a fresh prompt
    later = s.mixed_step(M, P, prefill_cached_tokens=1536, **kw)
    chunk = s._extend(get_model(M), get_part(P), 1, 512.0, 1536.0, {})
    d = place(M, P, phase="decode", batch=16, context_tokens=2048)
    assert later.flops == pytest.approx(float(d.cost.flops) + float(chunk.flops))
    assert later.flops > first.flops and later.bytes > first.bytes
    assert later.time_s >= first.time_s and later.lower_bound_s > first.lower_bound_s
    with pytest.raises(RooflineInputError, match="prefill_cached_tokens"):
        s.mixed_step(M, P, prefill_cached_tokens=-1, **kw)


def test_mixed_step_is_more_intense_than_decode_alone():
    mx = s.mixed_step(M, P, decode_batch=32, decode_context_tokens=2048, prefill_chunk_tokens=512)
    d = place(M, P, phase="decode", batch=32, context_tokens=2048)
    assert mx.decode_only_time_s == pytest.approx(float(d.time_estimate_s))
    assert mx.intensity > mx.decode_only_intensity
    assert mx.tokens == 544 and mx.intensity == pytest.approx(mx.flops / mx.bytes)
    pf = place(M, P, phase="prefill", prompt_tokens=512)
    assert mx.bytes < float(d.cost.bytes + pf.cost.bytes)  # weights read once for both
    assert mx.time_s < float(d.time_estimate_s + pf.time_estimate_s)


def test_pareto_and_goodput():
    pa = s.pareto(M, P, prompt_tokens=512, output_tokens=64, batches=[1, 16, 256, 4096])
    assert np.all(np.diff(pa.output_tokens_per_s) > 0)
    assert np.all(np.diff(pa.output_tokens_per_s_per_sequence) < 0)
    assert pa.fits_in_memory.tolist() == [True, True, True, False]
    g = s.goodput_requests_per_s(M, P, prompt_tokens=512, output_tokens=64, batches=[1, 16, 256, 4096],
                                 ttft_slo_s=float(pa.ttft_s[1]) * 1.01, tpot_slo_s=1.0)
    assert g.meets_slo.tolist() == [True, True, False, False] and g.best_batch == 16
    assert g.best_goodput_requests_per_s == pytest.approx(16 / pa.e2e_s[1])


def test_goodput_says_it_ignores_queueing():
    doc = " ".join(s.goodput_requests_per_s.__doc__.split())
    assert "ignores queueing" in doc and "estimate of a static-batch schedule" in doc and "neither a bound" in doc


def test_littles_law_round_trips():
    assert s.littles_law(throughput_per_s=10, latency_s=2.5) == pytest.approx(25)
    assert s.littles_law(concurrency=25, latency_s=2.5) == pytest.approx(10)
    assert s.littles_law(concurrency=25, throughput_per_s=10) == pytest.approx(2.5)
    with pytest.raises(RooflineInputError, match="exactly two"):
        s.littles_law(concurrency=1)


def test_cost_and_energy():
    assert s.cost_per_million_output_tokens(3.6, 1000) == pytest.approx(1.0)
    assert s.energy_per_token_upper_bound_j(700, 350) == pytest.approx(2.0)
    assert s.energy_per_token_upper_bound_j("b200", 1000) == pytest.approx(get_part("b200").board_power_w / 1000)
    assert s.energy_per_token_upper_bound_j("h100-sxm", 700) == pytest.approx(1.0)  # "up to 700 W (configurable)"
    with pytest.raises(RooflineInputError, match="h200 has no sourced board power"):
        s.energy_per_token_upper_bound_j("h200", 100)


@pytest.mark.parametrize("kw, named", [
    (dict(acceptance=1.0, speculative_tokens=2), "1.0"), (dict(acceptance=-0.1), "-0.1"),
    (dict(output_tokens=0), "output_tokens.*0"), (dict(prefix_cached_tokens=-1), "-1"),
    (dict(prefix_cached_tokens=1024), "1024"), (dict(chunk_tokens=0), "chunk_tokens.*0"),
    (dict(batch=1.5), "1.5"), (dict(speculative_tokens=-1), "-1"),
    (dict(draft_model="llama-3.1-8b"), "speculative_tokens"), (dict(phase="prefill"), "phase"),
])
def test_bad_input_names_the_value(kw, named):
    with pytest.raises(RooflineInputError, match=named):
        tl(**kw)


def test_other_bad_inputs():
    for call, named in [(lambda: s.expected_tokens_per_verify(1.5, 0.5), "1.5"),
                        (lambda: s.cost_per_million_output_tokens(-1, 10), "-1"),
                        (lambda: s.cost_per_million_output_tokens(1, 0), "output_tokens_per_s.*0"),
                        (lambda: s.energy_per_token_upper_bound_j(0, 10), "board_power_w.*0"),
                        (lambda: s.mixed_step(M, P, decode_batch=0, decode_context_tokens=1,
                                              prefill_chunk_tokens=1), "decode_batch"),
                        (lambda: s.pareto(M, P, prompt_tokens=8, output_tokens=8, batches=[0]), "batches")]:
        with pytest.raises(RooflineInputError, match=named):
            call()


def test_a_long_request_is_priced_at_once(monkeypatch):
    """Every decode step is priced in one vectorised call, not one placement per token."""
    calls = []
    real = s.place
    monkeypatch.setattr(s, "place", lambda *a, **k: calls.append(1) or real(*a, **k))
    t = s.request_timeline(M, P, prompt_tokens=1024, output_tokens=4096, batch=8, speculative_tokens=4,
                           acceptance=0.8, draft_model="llama-2-7b")
    assert t.decode_steps > 500 and t.step_s.shape == (t.decode_steps,)
    assert len(calls) < 20, len(calls)


def test_goodput_names_what_a_batch_misses():
    from roofline_lessons.topics.serving import goodput_requests_per_s

    g = goodput_requests_per_s("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256,
                               batches=[1, 64, 1024], ttft_slo_s=1.0, tpot_slo_s=0.010)
    assert g.misses(1) == ()
    assert "TTFT" in g.misses(64)  # 64 prompts of 2,048 tokens prefill together: far over 1 s
    assert "memory" in g.misses(1024)
    with pytest.raises(RooflineInputError, match="not in this sweep"):
        g.misses(3)


def test_goodput_by_the_lower_bounds():
    """``figures="lower_bound"`` times every batch by its steps' lower bounds: never slower than the
    estimate, so never fewer requests/s, and a batch the estimate admits the bounds admit too."""
    kw = dict(prompt_tokens=2048, output_tokens=256, batches=range(1, 129), ttft_slo_s=2.0, tpot_slo_s=0.010)
    est = s.goodput_requests_per_s("llama-3.1-8b", "h100-sxm", **kw)
    lb = s.goodput_requests_per_s("llama-3.1-8b", "h100-sxm", figures="lower_bound", **kw)
    pa = s.pareto("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256, batches=range(1, 129))
    assert est.figures == "estimate" and lb.figures == "lower_bound"
    assert np.allclose(lb.tpot_s, pa.tpot_lower_bound_s) and np.allclose(lb.e2e_s, pa.e2e_lower_bound_s)
    assert np.all(lb.requests_per_s >= est.requests_per_s) and np.all(lb.meets_slo >= est.meets_slo)
    assert lb.best_batch > est.best_batch  # the TPOT objective sits between the two figures here
    assert lb.misses(lb.best_batch + 1) == ("TPOT",) and est.misses(est.best_batch + 1) == ("TPOT",)
    with pytest.raises(RooflineInputError, match="figures"):
        s.goodput_requests_per_s("llama-3.1-8b", "h100-sxm", figures="measured", **kw)


def test_a_random_arrival_waits_for_the_running_batch():
    g = s.goodput_requests_per_s(M, P, prompt_tokens=512, output_tokens=64, batches=[1, 16], ttft_slo_s=1.0,
                                 tpot_slo_s=1.0)
    pa = s.pareto(M, P, prompt_tokens=512, output_tokens=64, batches=[1, 16])
    assert np.allclose(g.e2e_s, pa.e2e_s)
    assert np.allclose(g.mean_arrival_wait_s, pa.e2e_s / 2) and np.allclose(g.max_arrival_wait_s, pa.e2e_s)
    assert np.allclose(g.ttft_s, pa.ttft_s)  # TTFT stays timed from the batch's start


def test_the_cycle_bound_names_its_unit():
    """The continuous-batching bound is the largest of its units' terms, and the request says which:
    memory at batch 1, compute at the capacity wall (where the prompts' FLOPs no longer hide)."""
    from roofline_lessons.core.memory import max_batch_that_fits

    wall = max_batch_that_fits("llama-3.1-8b", "h100-sxm", 2048 + 256)
    small, big = (s.request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256, batch=b)
                  for b in (1, wall))
    assert (small.upper_bound_unit, big.upper_bound_unit) == ("memory", "compute")
    terms = s.continuous_batching_cycle_terms_s(get_model("llama-3.1-8b"), get_part("h100-sxm"), batch=wall,
                                                uncached_prompt_tokens=2048,
                                                decode_contexts=2048 + np.arange(255.0), fields={})
    assert tuple(terms) == s.CYCLE_UNITS and max(terms, key=terms.get) == "compute"
    assert big.output_tokens_per_s_upper_bound == pytest.approx(wall * 256 / max(terms.values()))
    spec = s.request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256,
                              speculative_tokens=4, acceptance=0.7)
    assert spec.upper_bound_unit is None and math.isnan(spec.output_tokens_per_s_upper_bound)
    one = s.request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=1)
    assert one.upper_bound_unit is None and one.output_tokens_per_s_upper_bound == pytest.approx(1 / one.ttft_lower_bound_s)


def test_a_prefix_cache_lifts_the_bound():
    """The bound is for the workload as priced: caching part of every prompt is a different workload."""
    plain, cached = (s.request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256, batch=231,
                                        prefix_cached_tokens=p) for p in (0, 1536))
    assert cached.output_tokens_per_s_upper_bound > 1.2 * plain.output_tokens_per_s_upper_bound
    doc = " ".join(s.cost_per_million_output_tokens.__doc__.split())
    assert "at that batch" in doc and "caches more of the prompt" in doc


def test_speculation_speedup_is_the_ratio_of_two_timelines():
    r = s.speculation_speedup(M, P, prompt_tokens=256, output_tokens=64, batch=4, speculative_tokens=4,
                              acceptance=0.7)
    plain = s.request_timeline(M, P, prompt_tokens=256, output_tokens=64, batch=4)
    spec = s.request_timeline(M, P, prompt_tokens=256, output_tokens=64, batch=4, speculative_tokens=4,
                              acceptance=0.7)
    assert r.tpot == pytest.approx(plain.tpot_s / spec.tpot_s) and r.e2e == pytest.approx(plain.e2e_s / spec.e2e_s)
    assert 1 < r.e2e < r.tpot and r.fits_in_memory == spec.fits_in_memory
    drafted = s.speculation_speedup("llama-3.1-70b", "h200", prompt_tokens=2048, output_tokens=256,
                                    speculative_tokens=4, acceptance=0.7, draft_model="llama-3.1-8b")
    assert not drafted.fits_in_memory and drafted.plain.fits_in_memory  # the draft's memory counts


def test_the_frontier_and_goodput_judge_a_one_token_answer_alike():
    """A one-token answer has no TPOT (NaN): it cannot miss a TPOT objective, by goodput or the frontier."""
    from roofline_lessons.topics.serving import frontier, goodput_requests_per_s

    batches = (1, 2, 4)
    fr = frontier("llama-3.1-8b", "h100-sxm", 512, 1, batches)
    g = goodput_requests_per_s("llama-3.1-8b", "h100-sxm", prompt_tokens=512, output_tokens=1, batches=batches,
                               ttft_slo_s=10.0, tpot_slo_s=0.001)
    assert np.isnan(fr.pareto.tpot_s).all()
    assert fr.meets(10.0, 0.001).tolist() == g.meets_slo.tolist() == [True, True, True]
