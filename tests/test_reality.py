"""Lesson 9's reality check: the bookkeeping around the measured decode loop."""

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.units import percent
from roofline_lessons.measure import reality
from roofline_lessons.measure.decoder import llama_like
from roofline_lessons.measure.reality import StepSample, mbu, measured_knee, mfu


@dataclass
class Roofs:
    """Stand-in for lesson 8's Measurement: two roofs and a machine description."""

    bandwidth: float = 20e9
    peak: float = 100e9
    machine: dict = field(default_factory=lambda: {"caches": {"L2": 2**20}})

    def dram_bytes_per_s(self):
        return self.bandwidth

    def peak_flops_per_s(self, dtype):
        assert dtype == "float32"
        return self.peak


TINY = llama_like("tiny", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=16, intermediate_size=128, vocab_size=100)


def sample(measured, compute, memory, batch=1, phase="decode", tokens=128):
    return StepSample(phase, batch, tokens, measured, measured, compute * 1e9, memory * 1e9, compute, memory)


def test_a_step_is_held_against_the_larger_of_its_two_times():
    s = sample(measured=0.010, compute=0.002, memory=0.007)
    assert s.bound_s == 0.007 and s.binds == "memory" and s.achieved == pytest.approx(0.7)
    c = sample(measured=0.010, compute=0.009, memory=0.007)
    assert c.binds == "compute" and c.achieved == pytest.approx(0.9)


def test_utilisations_and_no_fitted_overhead():
    assert mbu(7e9, 1.0, 10e9) == pytest.approx(0.7)
    assert mfu(30e9, 1.0, 100e9) == pytest.approx(0.3)
    assert not hasattr(reality, "fit_overhead_s")  # issue 25, item 3: a fit cannot separate the two parts
    # gaps of 3 ms at two contexts: a fixed 3 ms per step, or kernels at 70–75 % of the roof? A fit
    # cannot say, so a check without the tiny-model measurement refuses to invent a fixed cost
    check = reality.RealityCheck("quick", "now", dict(TINY.__dict__), 10e9, 100e9, 2**20, 1,
                                 decode_by_context=[sample(0.010, 0.001, 0.007), sample(0.012, 0.001, 0.009)])
    with pytest.raises(RooflineInputError, match="no fixed-cost measurement"):
        check.overhead_s()


def test_the_measured_knee_is_where_throughput_stops_doubling():
    steps = [sample(0.010 * f, 0, 0, batch=b) for b, f in ((1, 1.0), (2, 1.05), (4, 1.1), (8, 2.0), (16, 4.0))]
    assert measured_knee(steps) == 8
    assert measured_knee(steps[:3]) is None
    # a batch sweep mixed with batch-1 steps at other contexts is refused (it once returned "batch 1")
    with pytest.raises(RooflineInputError, match="one decode step per batch"):
        measured_knee(steps + [sample(0.009, 0, 0, batch=1, tokens=64)])


def test_a_run_times_every_planned_step_and_bounds_it_with_the_cost_model(monkeypatch, tmp_path):
    monkeypatch.setitem(reality.MODES, "tiny", {"batches": (1, 2), "context": 8, "contexts": (4, 8),
                                                "prompts": (4,), "steps": 1, "step_budget_s": None})
    check = reality.run("tiny", roofs=Roofs(), model=TINY)
    assert [s.batch for s in check.decode_by_batch] == [1, 2]
    assert [s.tokens for s in check.decode_by_context] == [4, 8]
    assert [s.tokens for s in check.prefill] == [4]
    for s in check.samples:
        assert s.measured_s > 0 and s.bound_s > 0 and s.memory_s == pytest.approx(s.bytes / 20e9)
    assert check.model_config() == TINY and check.critical_batch() >= 1
    path = reality.save(check, tmp_path / "r.json")
    again = reality.load(path)
    assert again.decode_by_batch == check.decode_by_batch and again.model_config() == TINY


def test_bad_mode_and_bad_files_say_what_is_wrong(tmp_path):
    with pytest.raises(RooflineInputError, match="mode must be one of"):
        reality.run("fast", roofs=Roofs(), model=TINY)
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    with pytest.raises(RooflineInputError, match="not a readable reality-check file"):
        reality.load(bad)


def test_the_gpu_path_says_why_it_cannot_run():
    status = reality.gpu_status()
    assert set(status) == {"available", "why"} and status["why"]


def test_without_a_gpu_the_gpu_path_returns_the_reason_instead_of_failing():
    status = reality.gpu_status()
    if status["available"]:
        pytest.skip("a CUDA device is present; the GPU path runs for real in the lesson")
    assert reality.run_gpu() == status


def test_a_disturbed_timing_is_flagged():
    steady = StepSample("decode", 1, 8, 0.0102, 0.0100, 1e6, 1e8, 0.001, 0.005)
    disturbed = StepSample("decode", 1, 8, 0.0150, 0.0100, 1e6, 1e8, 0.001, 0.005)
    assert not steady.noisy and disturbed.noisy and disturbed.spread == pytest.approx(1.5)


def test_the_fixed_cost_is_measured_and_split_off_only_where_it_can_be(monkeypatch):
    """A real (tiny) run: whatever the timings, the fixed cost is measured, and the step is either
    split (a positive bandwidth from measured − fixed cost) or said to be inseparable — never a
    negative or clamped figure. Which branch a run takes depends on the machine; both are checked."""
    monkeypatch.setitem(reality.MODES, "tiny", {"batches": (1,), "context": 8, "contexts": (8,),
                                                "prompts": (4,), "steps": 1, "step_budget_s": None})
    check = reality.run("tiny", roofs=Roofs(), model=TINY)
    assert check.dispatch_s > 0 and check.overhead_s() == check.dispatch_s
    assert check.sizing == {} and check.model_sizing() is None  # a model given, not sized
    for s in check.decode_by_batch + check.decode_by_context:
        split = check.overhead_split(s)
        if split.separable:
            assert split.streaming_s == pytest.approx(s.measured_s - check.dispatch_s) and split.streaming_s > 0
            assert check.effective_bandwidth_bytes_per_s(s) == pytest.approx(s.compulsory_bytes / split.streaming_s)
        else:
            assert split.verdict == "not separable" and check.effective_bandwidth_bytes_per_s(s) is None
            assert split.streaming_s is None and split.fraction_of_roof is None
    assert check.dtypes["flash_attention"] is False  # the numpy decoder is eager: priced that way


def _split(measured, best, bound, overhead, moved=1e9, bandwidth=10e9, binds="memory", spread=0.0):
    return reality.OverheadSplit(measured, best, bound, overhead, moved, bandwidth, binds, spread)


def test_a_fixed_cost_not_clearly_smaller_than_the_step_cannot_be_separated():
    # equal to the fastest run, above it, far above the median, and just under it (2 % of the run left:
    # a difference of two noisy timings, under SPLIT_MARGIN)
    for overhead in (0.010, 0.012, 0.050, 0.0098):
        split = _split(measured=0.011, best=0.010, bound=0.005, overhead=overhead)
        assert not split.separable and split.verdict == "not separable"
        assert split.streaming_s is None and split.effective_bandwidth_bytes_per_s is None
        assert split.fraction_of_roof is None and split.overhead_share_of_gap is None
        assert "cannot be separated" in reality.describe_split(split)
    # a clear difference, but inside the spread of the two timings: still not separable
    noisy = _split(measured=0.020, best=0.010, bound=0.005, overhead=0.006, spread=0.001)
    assert noisy.best_s - noisy.overhead_s > reality.SPLIT_MARGIN * noisy.best_s and not noisy.separable
    assert _split(measured=0.0105, best=0.010, bound=0.005, overhead=0.006, spread=0.001).separable


def test_each_case_of_the_split_is_named_from_its_numbers():
    both = _split(measured=0.200, best=0.190, bound=0.100, overhead=0.040)
    assert both.verdict == "fixed cost and streaming" and both.overhead_share_of_gap == pytest.approx(0.4)
    assert both.effective_bandwidth_bytes_per_s == pytest.approx(1e9 / 0.160)
    assert both.fraction_of_roof == pytest.approx(0.100 / 0.160) and both.fraction_of_roof < 1
    covers = _split(measured=0.120, best=0.115, bound=0.100, overhead=0.030)
    assert covers.verdict == "fixed cost covers the gap" and covers.fraction_of_roof > 1
    beat = _split(measured=0.080, best=0.078, bound=0.100, overhead=0.005)
    assert beat.verdict == "beat the bound" and beat.gap_s < 0 and beat.overhead_share_of_gap is None
    assert beat.effective_bandwidth_bytes_per_s == pytest.approx(1e9 / 0.075) and beat.fraction_of_roof > 1


def test_the_split_boundaries():
    exactly = _split(measured=0.130, best=0.125, bound=0.100, overhead=0.030)  # fixed cost == gap
    assert exactly.verdict == "fixed cost covers the gap" and exactly.fraction_of_roof == pytest.approx(1.0)
    on_roof = _split(measured=0.100, best=0.095, bound=0.100, overhead=0.010)  # gap == 0
    assert on_roof.verdict == "beat the bound"


def test_a_compute_bound_step_is_held_against_the_matmul_roof():
    """fraction_of_roof is bound ÷ the kernels' own time, whichever roof binds: a compute-bound step
    that the fixed cost covers ran at or above the matmul roof, and says so."""
    covers = _split(measured=0.011, best=0.0105, bound=0.005, overhead=0.007, moved=1e7, binds="compute")
    assert covers.verdict == "fixed cost covers the gap" and covers.fraction_of_roof == pytest.approx(0.005 / 0.004)
    text = reality.describe_split(covers)
    assert "matmul roof" in text and "at or above it" in text and "hypothesis" in text


def test_every_verdict_reads_what_its_numbers_say():
    texts = {
        "fixed cost and streaming": _split(measured=0.200, best=0.190, bound=0.100, overhead=0.040),
        "fixed cost covers the gap": _split(measured=0.120, best=0.115, bound=0.100, overhead=0.030),
        "beat the bound": _split(measured=0.080, best=0.078, bound=0.100, overhead=0.005),
        "not separable": _split(measured=0.011, best=0.010, bound=0.005, overhead=0.012),
    }
    for verdict, split in texts.items():
        assert split.verdict == verdict
    both = reality.describe_split(texts["fixed cost and streaming"])
    assert "40 %" in both and "the other 60 %" in both and "hypothesis" in both
    assert f"at {percent(0.100 / 0.160, 0)} of the DRAM" in both
    # issue 25, item 22: the triad is not called the friendliest pattern, and the residual may hold the
    # per-call thread start-up a tiny model's calls never pay
    assert "friendliest" not in both and "not every access pattern's ceiling" in both and "threads" in both
    assert "at or above" in reality.describe_split(texts["fixed cost covers the gap"])
    assert "no gap to split" in reality.describe_split(texts["beat the bound"])
    # a share that rounds to 100 % never prints "the other 0 %"
    nearly_all = _split(measured=0.2000, best=0.1900, bound=0.1000, overhead=0.0996)
    text = reality.describe_split(nearly_all)
    assert nearly_all.verdict == "fixed cost and streaming" and "the other 0 %" not in text and "under 1 %" in text


def test_a_check_splits_with_its_own_fixed_cost():
    check = reality.RealityCheck("quick", "now", dict(TINY.__dict__), 10e9, 100e9, 2**20, 1, dispatch_s=0.004)
    step = sample(measured=0.010, compute=0.001, memory=0.005)
    split = check.overhead_split(step)
    assert split.overhead_s == 0.004 and split.bound_s == 0.005 and split.verdict == "fixed cost and streaming"
    check.dispatch_s = 0.5
    assert check.overhead_split(step).verdict == "not separable" and check.effective_bandwidth_bytes_per_s(step) is None


def test_the_model_is_sized_to_the_cache_within_the_budgets():
    from roofline_lessons.measure.decoder import CACHE_MULTIPLE, streamed_weight_bytes

    llc, free = 32 * 2**20, 16 * 2**30
    model, sizing = reality.size_model(llc, "quick", 20e9, free)  # 8 × 32 MiB = 256 MiB ≪ 20 GB/s × 0.08 s
    assert sizing.reached and sizing.limited_by == "" and sizing.multiple >= CACHE_MULTIPLE
    assert sizing.streamed_weight_bytes == streamed_weight_bytes(model)
    big = 480 * 2**20  # a VM reporting its host's L3: 8× would be 3.75 GiB
    model, sizing = reality.size_model(big, "quick", 13e9, free)
    budget = reality.MODES["quick"]["step_budget_s"] * 13e9
    assert not sizing.reached and sizing.limited_by == "time" and sizing.budget_bytes == int(budget)
    assert streamed_weight_bytes(model) <= budget and sizing.multiple < CACHE_MULTIPLE
    model, sizing = reality.size_model(big, "full", 13e9, free)  # full mode's step budget: 0.5 s × 13 GB/s
    assert sizing.reached and streamed_weight_bytes(model) >= CACHE_MULTIPLE * big
    model, sizing = reality.size_model(big, "full", 13e9, 4 * 2**30)  # a quarter of 4 GiB is 1 GiB
    assert sizing.limited_by == "memory" and model.parameter_count() * 4 <= reality.MEMORY_SHARE * 4 * 2**30
    model, sizing = reality.size_model(big, "full", 13e9, None)  # free memory unknown: no memory cap
    assert sizing.reached
    tiny_budget, sizing = reality.size_model(big, "quick", 1e6, free)  # a budget under one layer: one layer
    assert tiny_budget.num_hidden_layers == 1 and sizing.limited_by == "time" and sizing.over_budget
    huge = 2 * 2**30  # 8 × 2 GiB is past the family's largest model (256 layers)
    model, sizing = reality.size_model(huge, "full", 1e12, None)  # a 0.5 s stream at 1 TB/s: no cap here
    assert model.num_hidden_layers == 256 and sizing.limited_by == "family" and not sizing.over_budget
    with pytest.raises(RooflineInputError, match="mode must be one of"):
        reality.size_model(llc, "fast", 20e9, free)
    with pytest.raises(RooflineInputError, match="bandwidth_bytes_per_s must be positive"):
        reality.size_model(llc, "quick", 0, free)


def test_a_sized_run_records_its_sizing_and_an_old_file_still_loads(monkeypatch, tmp_path):
    monkeypatch.setattr(reality, "available_memory_bytes", lambda: 2**30)
    monkeypatch.setattr(reality, "size_model", lambda llc, mode, bw, free: (TINY, reality.ModelSizing(
        llc, 8, 1000, "memory", 2000)))
    monkeypatch.setitem(reality.MODES, "tiny", {"batches": (1,), "context": 4, "contexts": (4,),
                                                "prompts": (4,), "steps": 1, "step_budget_s": 0.01})
    check = reality.run("tiny", roofs=Roofs())
    again = reality.load(reality.save(check, tmp_path / "r.json"))
    assert again.model_sizing() == reality.ModelSizing(2**20, 8, 1000, "memory", 2000)
    assert reality.example().model_sizing().reached  # the shipped example records its sizing
    old = reality.load(Path(__file__).parent / "data" / "reality_before_sizing.json")  # a file from before
    assert old.model_sizing() is None and old.skipped == [] and all(s.compulsory_bytes for s in old.samples)


def test_latest_saved_skips_gpu_runs(tmp_path):
    import os
    import time

    cpu = tmp_path / "reality-quick-1.json"
    cpu.write_text("{}")
    time.sleep(0.01)
    gpu = tmp_path / "reality-gpu-2.json"
    gpu.write_text("{}")
    os.utime(gpu, (time.time() + 5, time.time() + 5))
    assert reality.latest_saved(tmp_path) == cpu


def test_the_knee_is_the_lower_bound_s_and_the_estimate_s_lies_at_or_after_it():
    """``critical_batch()`` is where compute time reaches the compulsory bytes' time (the lower
    bound's knee, in the run's own formats); the unfused estimate's knee is never at a smaller batch."""
    from roofline_lessons.core.costs import model_cost

    check = reality.example()
    knee, estimate_knee = check.critical_batch(), check.critical_batch(unfused=True)
    assert knee is not None and estimate_knee is not None and knee <= estimate_knee
    context = check.decode_by_batch[0].tokens

    def reaches(batch, unfused=False):
        c = model_cost(check.model_config(), phase="decode", batch=batch, context_tokens=context, **check.dtypes)
        moved = c.bytes if unfused else c.compulsory_bytes
        return float(c.flops) / check.peak_flops_per_s >= float(moved) / check.bandwidth_bytes_per_s

    assert reaches(knee) and (knee == 1 or not reaches(knee - 1))
    assert reaches(estimate_knee, True) and (estimate_knee == 1 or not reaches(estimate_knee - 1, True))
    bf16 = reality.RealityCheck.from_dict(check.to_dict())
    bf16.dtypes = {k: ("bf16" if k.endswith("_dtype") else v) for k, v in check.dtypes.items()}
    assert bf16.critical_batch() < knee  # half the bytes per weight on the same roofs: memory time halves, the knee moves in


def test_the_measured_knee_rule_is_nearly_doubling_and_rejects_a_bad_threshold():
    """"Nearly doubling" is at least ``KNEE_FLAT_BELOW`` (1.5×) the previous tokens/s at double the
    batch: a doubled batch whose step time grows by more than 2 ÷ 1.5 is sub-linear."""
    assert reality.KNEE_FLAT_BELOW == 1.5

    def at(batch, t):
        return StepSample("decode", batch, 128, t, t, 1.0, 1.0, 0.0, 1.0)

    limit = 2 / reality.KNEE_FLAT_BELOW
    assert measured_knee([at(1, 1.0), at(2, 0.999 * limit)]) is None
    assert measured_knee([at(1, 1.0), at(2, 1.001 * limit)]) == 2
    with pytest.raises(RooflineInputError):
        measured_knee([at(1, 1.0), at(2, 2.0)], flat_below=0)


def test_a_step_past_the_memory_or_time_budget_is_skipped_and_named(monkeypatch):
    """Issue 25, item 1: full mode once grew to 24 GB resident (a KV cache of every batch sized for
    the longest context) and was killed by the OOM killer. Every step's buffers are now budgeted,
    and a run stops adding steps past its time budget — each skipped step is recorded with why."""
    plan = {"batches": (1, 2, 64), "context": 8, "contexts": (8, 512), "prompts": (4, 256), "steps": 1,
            "step_budget_s": None, "run_budget_s": None}
    monkeypatch.setitem(reality.MODES, "tiny", plan)
    weights = reality.NumpyDecoder(TINY).weight_bytes()
    # free memory that holds the weights and the small steps, not a 64-sequence batch or a 512-token cache
    need = {(p, b, t): reality.step_buffer_bytes(TINY, p, b, t) for p, b, t in
            [("decode", 64, 8), ("decode", 1, 512), ("decode", 2, 8), ("prefill", 1, 256)]}
    assert need[("decode", 64, 8)] > 8 * need[("decode", 2, 8)]  # the KV cache grows with the batch
    free = int((weights + need[("decode", 2, 8)]) / reality.BUFFER_SHARE) + 4096
    assert weights + need[("decode", 1, 512)] > reality.BUFFER_SHARE * free
    check = reality.run("tiny", roofs=Roofs(), model=TINY, available_bytes=free)
    skipped = {(s["phase"], s["batch"], s["tokens"]): s for s in check.skipped}
    assert ("decode", 64, 8) in skipped and ("decode", 1, 512) in skipped
    assert all(s["reason"] == "memory" and "GiB" in s["why"] for s in skipped.values())
    assert [s.batch for s in check.decode_by_batch] == [1, 2] and [s.tokens for s in check.decode_by_context] == [8]
    # a time budget already spent: every step is skipped, for time
    monkeypatch.setitem(reality.MODES, "tiny", {**plan, "run_budget_s": 1e-9})
    check = reality.run("tiny", roofs=Roofs(), model=TINY, available_bytes=2**40)
    assert check.samples == [] and {s["reason"] for s in check.skipped} == {"time"}
    assert len(check.skipped) == len(reality._plan(plan))
    again = reality.RealityCheck.from_dict(check.to_dict())
    assert again.skipped == check.skipped


def test_the_batch_sweep_caches_hold_only_its_context():
    """The old run sized every batch's cache for the longest context of the plan."""
    small = reality.step_buffer_bytes(TINY, "decode", 64, 256)
    assert reality.step_buffer_bytes(TINY, "decode", 64, 2048) > 7 * small
    kv = 2 * TINY.num_hidden_layers * 64 * TINY.num_key_value_heads * 257 * TINY.head_dim * 4
    assert kv <= small < 2 * kv


def test_a_decode_step_s_predicted_time_includes_the_prefill_that_builds_its_cache():
    """The run's time budget once priced only the timed decode runs; the first step at a context also
    runs an untimed prefill of that context (2,048 tokens in full mode) to build its cache."""
    bw, peak, share = 20e9, 100e9, 0.5
    price = lambda phase, b, t: reality._sample(TINY, phase, b, t, (1.0, 1.0), bw, peak).bound_s  # noqa: E731
    built = reality.predicted_step_s(TINY, "decode", 4, 512, 3, share, bw, peak, cache_built=True)
    fresh = reality.predicted_step_s(TINY, "decode", 4, 512, 3, share, bw, peak, cache_built=False)
    assert built == pytest.approx(4 * price("decode", 4, 512) / share)
    assert fresh == pytest.approx(built + price("prefill", 1, 512) / share)
    prefill = reality.predicted_step_s(TINY, "prefill", 1, 512, 3, share, bw, peak, cache_built=False)
    assert prefill == pytest.approx(4 * price("prefill", 1, 512) / share)  # a prefill builds no other cache
