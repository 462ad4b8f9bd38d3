"""Lesson 9's reality check: the bookkeeping around the measured decode loop."""

from dataclasses import dataclass, field

import pytest

from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.measure import reality
from roofline_lessons.measure.decoder import llama_like
from roofline_lessons.measure.reality import StepSample, fit_overhead_s, mbu, measured_knee, mfu


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


def test_utilisations_and_the_overhead_fit():
    assert mbu(7e9, 1.0, 10e9) == pytest.approx(0.7)
    assert mfu(30e9, 1.0, 100e9) == pytest.approx(0.3)
    steps = [sample(0.010, 0.001, 0.007), sample(0.012, 0.001, 0.009)]
    assert fit_overhead_s(steps) == pytest.approx(0.003)
    assert fit_overhead_s([sample(0.005, 0.001, 0.007)]) == 0.0  # never negative
    with pytest.raises(RooflineInputError):
        fit_overhead_s([])


def test_the_measured_knee_is_where_throughput_stops_doubling():
    steps = [sample(0.010 * f, 0, 0, batch=b) for b, f in ((1, 1.0), (2, 1.05), (4, 1.1), (8, 2.0), (16, 4.0))]
    assert measured_knee(steps) == 8
    assert measured_knee(steps[:3]) is None


def test_a_run_times_every_planned_step_and_bounds_it_with_the_cost_model(monkeypatch, tmp_path):
    monkeypatch.setitem(reality.MODES, "tiny", {"batches": (1, 2), "context": 8, "contexts": (4, 8),
                                                "prompts": (4,), "steps": 1})
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


def test_the_fixed_cost_is_measured_and_the_rest_of_the_gap_is_slower_streaming(monkeypatch):
    monkeypatch.setitem(reality.MODES, "tiny", {"batches": (1,), "context": 8, "contexts": (8,),
                                                "prompts": (4,), "steps": 1})
    check = reality.run("tiny", roofs=Roofs(), model=TINY)
    assert check.dispatch_s > 0 and check.overhead_s() == check.dispatch_s
    s = check.decode_by_batch[0]
    assert check.effective_bandwidth_bytes_per_s(s) == pytest.approx(s.bytes / (s.measured_s - check.dispatch_s))
    assert check.dtypes["flash_attention"] is False  # the numpy decoder is eager: priced that way


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
