"""The serving-engine simulation (topics/engine.py) and `roofline-lessons simulate`: the checks the
issue names (one request is lesson 10's timeline, low load → the prefill bound, Little's law,
saturation → the continuous-batching upper bound), the scheduler's mechanics, and bad input."""

import json

import numpy as np
import pytest

from roofline_lessons.cli import main
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.topics.engine import (EngineConfig, Requests, goodput_curve, poisson_requests, read_trace,
                                            simulate)
from roofline_lessons.topics.serving import request_timeline

M, P = "llama-3.1-8b", "h100-sxm"


def one(prompt=1000, output=50):
    return Requests(np.array([0.0]), np.array([prompt]), np.array([output]))


@pytest.mark.parametrize("cost", ["estimate", "lower_bound"])
@pytest.mark.parametrize("chunk,prefix", [(None, 0), (None, 512), (256, 0), (256, 512)])
def test_one_request_is_lesson_10s_timeline(cost, chunk, prefix):
    s = simulate(M, P, one(), EngineConfig(cost=cost, chunk_tokens=chunk, prefix_cached_tokens=prefix))
    t = request_timeline(M, P, prompt_tokens=1000, output_tokens=50, chunk_tokens=chunk, prefix_cached_tokens=prefix)
    ttft, e2e = (t.ttft_s, t.e2e_s) if cost == "estimate" else (t.ttft_lower_bound_s, t.e2e_lower_bound_s)
    assert s.ttft_s[0] == pytest.approx(ttft, rel=1e-12)
    assert s.e2e_s[0] == pytest.approx(e2e, rel=1e-12)
    # and step by step: every decode step's seconds equal lesson 10's
    steps = t.step_s if cost == "estimate" else t.step_lower_bound_s
    decode = s.steps["duration_s"][s.steps["prefill_tokens"] == 0]
    np.testing.assert_allclose(decode, steps, rtol=1e-12)
    assert s.queue_s[0] == 0.0


def test_one_request_of_an_moe_is_lesson_10s_timeline():
    s = simulate("qwen3-30b-a3b", P, one(2048, 20), EngineConfig(chunk_tokens=512))
    t = request_timeline("qwen3-30b-a3b", P, prompt_tokens=2048, output_tokens=20, chunk_tokens=512)
    assert s.ttft_s[0] == pytest.approx(t.ttft_s, rel=1e-12) and s.e2e_s[0] == pytest.approx(t.e2e_s, rel=1e-12)


def test_low_load_ttft_tends_to_the_prefill_bound():
    s = simulate(M, P, poisson_requests(0.05, 40, 1024, 256, seed=2), EngineConfig(cost="lower_bound"))
    bound = request_timeline(M, P, prompt_tokens=1024, output_tokens=256).ttft_lower_bound_s
    assert np.all(s.ttft_s >= bound * (1 - 1e-9))  # nothing beats the idle server's prefill
    assert np.median(s.ttft_s) == pytest.approx(bound, rel=1e-9)
    # as the load rises, queueing pushes TTFT away from it
    busy = simulate(M, P, poisson_requests(40, 400, 1024, 256, seed=2), EngineConfig(cost="lower_bound"))
    assert np.mean(busy.ttft_s) > 1.5 * bound


def test_littles_law_holds_on_the_simulated_run():
    s = simulate(M, P, poisson_requests(30, 1500, 1024, 256, seed=3), EngineConfig(chunk_tokens=512))
    assert s.preemptions == 0
    # L (time-average running, from the step log) = throughput × W (admission → last token, from the requests)
    w_running = np.mean(s.e2e_s - s.queue_s)
    assert s.mean_running_requests == pytest.approx(s.completed_requests_per_s * w_running, rel=1e-9)
    # a bookkeeping slip (a request counted as running before its admission or after its last token) breaks it
    assert s.mean_running_requests != pytest.approx(s.completed_requests_per_s * np.mean(s.e2e_s), rel=1e-3)


@pytest.mark.parametrize("prompt,output,chunk", [(128, 512, 64), (256, 1024, 32)])
def test_saturation_throughput_tends_to_the_continuous_batching_upper_bound(prompt, output, chunk):
    s = simulate(M, P, poisson_requests(1000, 1500, prompt, output, seed=2),
                 EngineConfig(cost="lower_bound", chunk_tokens=chunk, max_running=128))
    upper = request_timeline(M, P, prompt_tokens=prompt, output_tokens=output, batch=128).output_tokens_per_s_upper_bound
    ratio = s.output_tokens_per_s / upper
    assert ratio <= 1.0
    assert ratio > 0.9
    assert s.mean_running_requests > 120


def test_the_bound_run_is_never_slower_than_the_estimate_run():
    req = poisson_requests(20, 300, 1024, 128, seed=4)
    est = simulate(M, P, req, EngineConfig(chunk_tokens=512))
    lb = simulate(M, P, req, EngineConfig(chunk_tokens=512, cost="lower_bound"))
    assert lb.output_tokens_per_s >= est.output_tokens_per_s * 0.999
    assert np.mean(lb.e2e_s) <= np.mean(est.e2e_s)


def test_chunking_trades_ttft_for_tpot():
    req = poisson_requests(4, 300, 4096, 128, seed=5)
    whole = simulate(M, P, req, EngineConfig(token_budget=8192))
    small = simulate(M, P, req, EngineConfig(chunk_tokens=256))
    assert np.percentile(small.tpot_s, 99) < np.percentile(whole.tpot_s, 99)
    assert np.mean(small.ttft_s) > np.mean(whole.ttft_s)


def test_a_full_kv_cache_preempts_and_swap_differs_from_recompute():
    req = poisson_requests(100, 600, 4096, 1024, seed=2)
    rec = simulate(M, P, req, EngineConfig(max_running=512, memory_utilization=0.5))
    swp = simulate(M, P, req, EngineConfig(max_running=512, memory_utilization=0.5, preemption="swap"))
    assert rec.preemptions > 0 and swp.preemptions > 0
    assert np.max(rec.kv_blocks_used_share[1]) <= 1.0
    assert np.all(np.isfinite(rec.e2e_s)) and np.all(np.isfinite(swp.e2e_s))
    # every request still gets all its tokens: E2E covers its output
    assert np.all(rec.e2e_s >= rec.ttft_s)
    # without pressure, none
    calm = simulate(M, P, poisson_requests(1, 100, 4096, 1024, seed=2), EngineConfig(max_running=512))
    assert calm.preemptions == 0


def test_prefix_hits_cut_ttft_in_proportion_to_the_hit_rate():
    req = poisson_requests(5, 300, 2048, 64, seed=6)
    none = simulate(M, P, req)
    half = simulate(M, P, req, EngineConfig(prefix_cached_tokens=1536, prefix_hit_rate=0.5))
    full = simulate(M, P, req, EngineConfig(prefix_cached_tokens=1536, prefix_hit_rate=1.0))
    assert np.mean(full.ttft_s) < np.mean(half.ttft_s) < np.mean(none.ttft_s)


def test_disaggregated_pools_send_the_kv_and_count_every_chip():
    req = poisson_requests(10, 300, 1024, 128, seed=7)
    s = simulate(M, P, req, EngineConfig(prefill_chips=1, decode_chips=1))
    assert s.chips == 2 and s.kv_transfer_s > 0
    assert s.output_tokens_per_s_per_chip == pytest.approx(s.output_tokens_per_s / 2)
    # decode steps never carry a prefill: TPOT is the decode pool's alone
    dec = s.steps["instance"] == 1
    assert np.all(s.steps["prefill_tokens"][dec] == 0)
    assert np.all(np.isfinite(s.e2e_s))


def test_static_batching_waits_for_the_whole_batch():
    req = poisson_requests(10, 200, 512, 128, seed=8)
    static = simulate(M, P, req, EngineConfig(scheduler="static", max_running=16))
    cont = simulate(M, P, req, EngineConfig(max_running=16))
    assert np.mean(static.queue_s) > np.mean(cont.queue_s)


def test_goodput_is_the_highest_rate_meeting_the_attainment():
    g = goodput_curve(M, P, rates_per_s=[5, 20, 80], requests=200, prompt_tokens=1024, output_tokens=128,
                      ttft_slo_s=0.2, tpot_slo_s=0.01, refine=2)
    assert g.attainment[0] >= 0.9 and g.attainment[-1] < 0.9
    assert g.goodput_requests_per_s in g.rates_per_s
    ok = g.rates_per_s[g.attainment >= 0.9]
    assert g.goodput_requests_per_s == ok.max()


def test_seeded_runs_repeat():
    a = simulate(M, P, poisson_requests(20, 200, 512, 64, seed=9))
    b = simulate(M, P, poisson_requests(20, 200, 512, 64, seed=9))
    np.testing.assert_array_equal(a.e2e_s, b.e2e_s)


def test_trace_files(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens\n0.5,100,10\n0.0,200,5\n", encoding="utf-8")
    r = read_trace(f)
    assert r.arrival_s.tolist() == [0.0, 0.5] and r.prompt_tokens.tolist() == [200, 100]
    j = tmp_path / "t.jsonl"
    j.write_text('{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 3}\n', encoding="utf-8")
    assert read_trace(j).count == 1
    bad = tmp_path / "b.csv"
    bad.write_text("arrival,prompt\n1,2\n", encoding="utf-8")
    with pytest.raises(RooflineInputError, match="arrival_s"):
        read_trace(bad)


@pytest.mark.parametrize("kw,match", [
    (dict(cost="bound"), "cost must be one of"), (dict(chunk_tokens=0), "chunk_tokens"),
    (dict(prefix_hit_rate=1.5), "prefix_hit_rate"), (dict(prefill_chips=1), "decode_chips"),
    (dict(tensor_parallel=2, chips=3), "multiple of tensor_parallel"), (dict(preemption="drop"), "preemption"),
])
def test_bad_settings_are_named(kw, match):
    with pytest.raises(RooflineInputError, match=match):
        EngineConfig(**kw)


def test_a_request_past_memory_or_context_is_refused():
    with pytest.raises(RooflineInputError, match="context"):
        simulate(M, P, one(200_000, 10))
    with pytest.raises(RooflineInputError, match="does not fit"):
        simulate("llama-3.1-70b", P, one(100, 10))


def test_cli_json_has_the_promised_keys(capsys):
    rc = main(["simulate", "--hardware", P, "--model", M, "--rate", "10", "--requests", "100", "--prompt", "512",
               "--output", "64", "--ttft-slo", "0.5", "--tpot-slo", "0.02", "--json"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("ttft_s", "tpot_s", "e2e_s", "queue_s"):
        assert set(d[key]) >= {"mean", "p50", "p90", "p99"}
    for key in ("output_tokens_per_s", "goodput_requests_per_s", "mean_running_requests", "preemptions"):
        assert key in d
    assert d["goodput_requests_per_s"] > 0


@pytest.mark.parametrize("argv,match", [
    (["--rate", "-1", "--prompt", "5", "--output", "5"], "--rate"),
    (["--rate", "1", "--prompt", "5"], "--output"),
    (["--rate", "1", "--prompt", "5", "--output", "5", "--prefill-chips", "1"], "--decode-chips"),
    (["--rate", "1", "--prompt", "5", "--output", "5", "--preempt", "drop"], "preempt"),
    (["--rate", "1", "--prompt", "5", "--output", "5", "--slo-attainment", "0"], "slo-attainment"),
])
def test_cli_bad_input_is_one_line_exit_2(argv, match, capsys):
    rc = main(["simulate", "--hardware", P, "--model", M, *argv])
    err = capsys.readouterr().err
    assert rc == 2 and match in err and len(err.strip().splitlines()) == 1


def test_recompute_and_swap_costs_are_counted():
    req = poisson_requests(3, 300, 4096, 1024, seed=2)
    rec = simulate(M, P, req, EngineConfig(max_running=512, memory_utilization=0.6))
    swp = simulate(M, P, req, EngineConfig(max_running=512, memory_utilization=0.6, preemption="swap"))
    assert rec.preemptions > 0 and rec.recomputed_tokens > 0 and rec.swap_s == 0
    assert swp.preemptions > 0 and swp.recomputed_tokens == 0 and swp.swap_s > 0
    # without preemption nothing is prefilled twice, prefix hits included
    calm = simulate(M, P, poisson_requests(2, 100, 2048, 64, seed=1), EngineConfig(prefix_cached_tokens=1024,
                                                                                 prefix_hit_rate=0.5))
    assert calm.preemptions == 0 and calm.recomputed_tokens == 0
