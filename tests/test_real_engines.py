"""Lesson 13: published engine runs against the course's bound. No catalogued run beats its bound;
the fraction of the bound reads the same way for rates and times; every gap a source leaves is
filled by a listed assumption; the forecast never calibrates a run on itself; the sizing meets its
limits and needs more chips at a lower efficiency."""

from __future__ import annotations

import math

import numpy as np
import pytest

from roofline_lessons.core.engine_runs import REGIMES, list_engine_runs
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.placement import place
from roofline_lessons.topics.real_engines import (
    TIME_METRICS,
    calibrate,
    leave_one_out,
    price_run,
    priced_runs,
    run_pricing,
    runs_table,
    size_deployment,
    spread_by_regime,
)
from roofline_lessons.topics.serving import request_timeline
from roofline_lessons.viz.display import alt_of


@pytest.fixture(scope="module")
def priced():
    return priced_runs()


def test_every_run_is_priced_and_none_beats_its_bound(priced):
    assert len(priced) == len(list_engine_runs()) >= 20
    for p in priced:
        assert p.bound > 0 and math.isfinite(p.bound), p.run.id
        assert 0 < p.fraction_of_bound <= 1, (p.run.id, p.fraction_of_bound, p.bound, p.measured)
        assert not p.beats_bound


def test_the_bound_is_never_worse_than_the_estimate(priced):
    for p in priced:
        if not math.isfinite(p.estimate):
            continue
        if p.run.metric in TIME_METRICS:
            assert p.bound <= p.estimate * (1 + 1e-9), p.run.id
        else:
            assert p.bound >= p.estimate * (1 - 1e-9), p.run.id


def test_a_fraction_reads_the_same_way_for_a_time_and_a_rate(priced):
    for p in priced:
        if p.run.metric in TIME_METRICS:
            assert p.fraction_of_bound == pytest.approx(p.bound / p.measured)
            assert p.as_rate(p.measured) == pytest.approx(1 / p.measured)
        else:
            assert p.fraction_of_bound == pytest.approx(p.measured / p.bound)


def test_every_regime_has_at_least_three_runs(priced):
    spreads = {s.regime: s for s in spread_by_regime(priced)}
    assert set(spreads) == set(REGIMES)
    assert all(s.runs >= 3 for s in spreads.values())
    assert all(s.lowest <= s.median <= s.highest <= 1 for s in spreads.values())


def test_every_unstated_figure_is_an_assumption_that_is_listed():
    for run in list_engine_runs():
        pr = run_pricing(run)
        text = " ".join(pr.assumed)
        for name in ("weights_dtype", "compute_dtype", "kv_dtype"):
            if getattr(run, name) == "not stated":
                assert name.replace("_", " ") in text, (run.id, name)
        if pr.mode != "any batch":
            if run.prompt_tokens is None:
                assert "prompt tokens" in text, run.id
            if run.output_tokens is None and pr.mode == "request":
                assert "output tokens" in text, run.id


def test_a_batch1_per_user_rate_is_one_over_the_tpot_bound():
    p = price_run("gpt-fast-llama-2-7b-bf16-a100-bs1")
    t = request_timeline("llama-2-7b", "a100-80gb", prompt_tokens=5, output_tokens=200)
    assert p.bound == pytest.approx(1 / t.tpot_lower_bound_s)
    assert "output tokens = 200" in " ".join(p.pricing.assumed)


def test_a_max_throughput_bound_takes_the_largest_batch_that_fits_and_rises_with_it():
    p = price_run("trtllm-0.17-llama-3.1-8b-h100-fp8-128-2048")
    fields = p.pricing.fields
    t = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=128, output_tokens=2048, batch=p.bound_batch,
                         **fields)
    assert p.bound == pytest.approx(t.output_tokens_per_s_upper_bound)
    assert p.estimate_batch <= p.bound_batch
    smaller = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=128, output_tokens=2048,
                               batch=p.bound_batch // 2, **fields)
    assert smaller.output_tokens_per_s_upper_bound < p.bound


def test_speculative_rows_are_bounded_with_every_draft_accepted():
    with_mtp = price_run("trtllm-deepseek-r1-b200x8-bs1-mtp3-relaxed")
    without = price_run("trtllm-deepseek-r1-b200x8-bs1-no-mtp")
    assert with_mtp.run.speculative_tokens == 3 and without.run.speculative_tokens is None
    assert with_mtp.bound > without.bound
    assert with_mtp.measured > without.measured  # the drafting helps in the published runs too


def test_an_unstated_batch_and_length_take_the_per_token_costs_alone():
    p = price_run("deepseek-online-decode-h800-ep144")
    assert p.pricing.mode == "any batch"
    par = p.pricing.parallelism
    step = place("deepseek-v3", "h800", phase="decode", batch=p.bound_batch, context_tokens=1, parallelism=par,
                 **p.pricing.fields)
    assert step.lower_bound_roof == p.bound_unit
    # a larger batch no longer moves it: the per-token costs set the rate
    bigger = place("deepseek-v3", "h800", phase="decode", batch=4 * p.bound_batch, context_tokens=1, parallelism=par,
                   **p.pricing.fields)
    assert 4 * p.bound_batch / float(bigger.time_lower_bound_s) == pytest.approx(
        p.bound_batch / float(step.time_lower_bound_s), rel=0.01)
    per_chip = p.bound
    assert per_chip == pytest.approx(p.bound_batch / float(step.time_lower_bound_s) / p.run.chips, rel=1e-9)


def test_an_unstated_split_takes_the_highest_bound():
    from roofline_lessons.topics.real_engines import _per_copy_rates, _split_candidates

    run = next(r for r in list_engine_runs() if r.id == "mlperf-4.1-llama-2-70b-mi300x8-offline")
    p = price_run(run)
    assert "split unstated" in " ".join(p.pricing.assumed)
    bounds = []
    for cand in _split_candidates(run, run_pricing(run)):
        try:
            bounds.append(_per_copy_rates(run, cand)[0] * cand.copies)
        except RooflineInputError:
            continue
    assert len(bounds) >= 2 and p.bound == pytest.approx(max(bounds))


def test_leave_one_out_never_calibrates_a_run_on_itself(priced):
    forecasts = leave_one_out(priced)
    singles = {s.regime for s in spread_by_regime(priced) if s.runs == 1}
    assert all(f.priced.run.regime not in singles for f in forecasts)
    for f in forecasts:
        others = [q.fraction_of_bound for q in priced if q.run.regime == f.priced.run.regime and q is not f.priced]
        assert f.efficiency == pytest.approx(float(np.median(others)))
        assert f.calibration_runs == len(others)
        p = f.priced
        assert f.error == pytest.approx(p.as_rate(f.predicted) / p.as_rate(p.measured) - 1)


def test_sizing_meets_its_limits_and_a_lower_efficiency_needs_more_chips(priced):
    low, mid, high = calibrate(priced, "max throughput")
    kw = dict(target_output_tokens_per_s=20_000, tpot_slo_s=0.040, prompt_tokens=1000, output_tokens=1000, tensor=4,
              weights_dtype="fp8", kv_dtype="fp8", compute_dtype="fp8")
    sizes = [size_deployment("llama-3.1-70b", "h200", efficiency=e, **kw) for e in (low, mid, high)]
    assert sizes[0].chips >= sizes[1].chips >= sizes[2].chips
    for s in sizes:
        assert s.chips == s.copies * 4
        assert s.tpot_s <= 0.040
        assert s.copies * s.copy_output_tokens_per_s >= 20_000
        assert (s.copies - 1) * s.copy_output_tokens_per_s < 20_000
        t = request_timeline("llama-3.1-70b", "h200", prompt_tokens=1000, output_tokens=1000, batch=s.batch + 1,
                             parallelism=__import__("roofline_lessons.core.parallel", fromlist=["P"]).Parallelism(
                                 tensor=4), weights_dtype="fp8", kv_dtype="fp8", compute_dtype="fp8")
        # TPOT is batch ÷ the copy's forecast rate (Little's law), the rate the bound × the efficiency
        assert s.tpot_s == pytest.approx(s.batch / s.copy_output_tokens_per_s)
        # one more sequence misses the limit or does not fit in the whole memory
        assert (s.batch + 1) / (t.output_tokens_per_s_upper_bound * s.efficiency) > 0.040 \
            or t.memory_required_bytes > t.memory_capacity_bytes


@pytest.mark.parametrize("bad", [dict(efficiency=0), dict(efficiency=1.5), dict(efficiency="0.5"),
                                 dict(tpot_slo_s=-1), dict(target_output_tokens_per_s=float("nan")),
                                 dict(tpot_slo_s=1e-6)])
def test_sizing_refuses_bad_input_with_a_message(bad):
    kw = dict(target_output_tokens_per_s=1000, tpot_slo_s=0.05, prompt_tokens=100, output_tokens=100,
              efficiency=0.5)
    kw.update(bad)
    with pytest.raises(RooflineInputError) as err:
        size_deployment("llama-3.1-8b", "h100-sxm", **kw)
    assert str(err.value)


def test_table_and_chart_come_from_the_same_priced_runs(priced):
    from roofline_lessons.viz.engines import engines_vs_bound_chart

    headers, rows = runs_table(priced)
    assert len(rows) == len(priced) and len(headers) == len(rows[0])
    alt = alt_of(engines_vs_bound_chart(priced))
    assert f"{len(priced)} published runs" in alt and "No run lies above the line y = x" in alt
    for s in spread_by_regime(priced):
        assert f"{round(100 * s.median)} %" in alt


def test_an_unknown_run_names_the_known_ones():
    with pytest.raises(RooflineInputError, match="gpt-fast-llama-2-7b-bf16-a100-bs1"):
        price_run("no-such-run")
