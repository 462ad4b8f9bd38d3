"""Lesson 8 machinery: probes, saved results (atomic, corrupt and foreign files), GPU skip path."""

import json

import numpy as np
import pytest

from roofline_lessons.measure import results
from roofline_lessons.measure.gpu import catalog_part_for, gpu_probes, gpu_status
from roofline_lessons.measure.machine import describe, theoretical_peak_flops_per_s
from roofline_lessons.measure.probes import (BandwidthSample, Measurement, Timing, _Workers, bandwidth_plateaus,
                                             measure, stream_kernels, time_call, working_set_sizes)


@pytest.fixture(scope="module")
def quick():
    return measure("quick")


def test_quick_measurement_has_every_part(quick):
    kernels = {s.kernel for s in quick.bandwidth}
    assert kernels == {"read", "copy", "triad"}
    sizes = sorted({s.working_set_bytes for s in quick.bandwidth if s.kernel == "triad"})
    assert sizes[0] < 1 << 20 and sizes[-1] >= 128 << 20  # from inside L2 to far past a 32 MiB L3
    assert {m.dtype for m in quick.matmul} == {"float64", "float32"}
    names = [k.name for k in quick.kernels]
    assert "dot" in names and "axpy" in names and any(n.startswith("gemv") for n in names)
    assert "attention, naive" in names and sum(n.startswith("attention, tiled") for n in names) == 2
    assert all(s.bytes_moved >= 32 << 20 for s in quick.bandwidth)  # every timed call amortised
    assert all(k.flops_per_s > 0 and k.intensity > 0 for k in quick.kernels)
    assert quick.ridge_point_flop_per_byte() > 0 and quick.roofs()[-1].name == "DRAM"
    assert quick.gpu is not None and "available" in quick.gpu


def test_stream_kernels_compute_what_they_claim():
    w = _Workers(2)
    try:
        k = stream_kernels(300_000, w)
        k["triad"][0]()
        k["copy"][0]()
    finally:
        w.close()
    assert k["triad"][1] == 3 * 300_000 * 8 and k["copy"][1] == 2 * 300_000 * 8


def test_triad_computes_b_plus_c_in_place():
    w = _Workers(2)
    try:
        n = 1_000_003
        call = stream_kernels(n, w)["triad"][0]
        call()
    finally:
        w.close()
    a, b, c = call.arrays
    assert np.all(a == b + c)


class _Clock:
    """A stand-in for time.perf_counter: each call of the timed function advances it by ``cost_s``
    (and by ``slow_s`` more on the calls listed), so time_call's loop is checked without a real clock."""

    def __init__(self, cost_s, slow_calls=(), slow_s=0.0):
        self.now, self.calls, self.cost_s, self.slow_calls, self.slow_s = 0.0, 0, cost_s, set(slow_calls), slow_s

    def __call__(self):
        return self.now

    def fn(self):
        self.calls += 1
        self.now += self.cost_s + (self.slow_s if self.calls in self.slow_calls else 0.0)


def test_time_call_loops_tiny_calls_until_the_minimum_time(monkeypatch):
    import roofline_lessons.measure.probes as probes

    clock = _Clock(cost_s=1e-6)
    monkeypatch.setattr(probes.time, "perf_counter", clock)
    t = time_call(clock.fn, repeats=3, min_time_s=0.001)
    # 1 µs a call: the loop doubles from 1 to 1,024 calls (≥ 1 ms), then times 2 more repeats of 1,024
    assert clock.calls == 1 + sum(2 ** i for i in range(11)) + 2 * 1024
    assert (t.best_s, t.median_s, t.worst_s) == pytest.approx((1e-6, 1e-6, 1e-6))


def test_time_call_keeps_best_median_and_worst(monkeypatch):
    import roofline_lessons.measure.probes as probes

    clock = _Clock(cost_s=0.01, slow_calls={3}, slow_s=0.02)  # the second timed run is disturbed
    monkeypatch.setattr(probes.time, "perf_counter", clock)
    t = time_call(clock.fn, repeats=3, min_time_s=0.005)
    assert (t.best_s, t.median_s, t.worst_s) == pytest.approx((0.01, 0.01, 0.03))
    assert t.spread == pytest.approx(0.0) and t.worst_spread == pytest.approx(2.0)


def test_working_set_sizes_double():
    s = working_set_sizes("quick")
    assert all(b == 2 * a for a, b in zip(s, s[1:]))


def _sample(ws, gbps):
    return BandwidthSample("triad", ws, 3 * 10**6, Timing(3e6 / (gbps * 1e9), 1, 1))


def test_plateaus_from_a_synthetic_sweep():
    caches = {"L2": 1 << 20, "L3": 32 << 20}
    pts = [_sample(64 << 10, 80), _sample(256 << 10, 90), _sample(4 << 20, 50), _sample(8 << 20, 55),
           _sample(256 << 20, 20), _sample(512 << 20, 22)]
    roofs = {r.name: r.bytes_per_s for r in bandwidth_plateaus(pts, caches)}
    assert roofs["L2"] == pytest.approx(90e9) and roofs["L3"] == pytest.approx(55e9)
    assert roofs["DRAM"] == pytest.approx(21e9)


def test_save_and_load_round_trip(quick, tmp_path):
    path = results.save(quick, tmp_path / "m.json")
    again = results.load(path)
    assert again.peak_flops_per_s() == quick.peak_flops_per_s()
    assert again.dram_bytes_per_s() == pytest.approx(quick.dram_bytes_per_s())
    assert [k.name for k in again.kernels] == [k.name for k in quick.kernels]
    assert not list(tmp_path.glob(".*.tmp"))


def test_new_path_never_overwrites(quick, tmp_path):
    first = results.save(quick, results.new_path(quick, tmp_path))
    second = results.save(quick, results.new_path(quick, tmp_path))
    assert first != second and first.exists() and second.exists()
    assert results.saved(tmp_path) == [first, second]


@pytest.mark.parametrize("content,needle", [
    ("{ this is not json", "not valid JSON"),
    ('{"schema": "roofline-lessons/measurement", "version": 1, "machine": {}', "not valid JSON"),
    ('{"hello": "world"}', "not a Roofline Lessons measurement"),
    ("[1, 2, 3]", "not a Roofline Lessons measurement"),
    ('{"schema": "roofline-lessons/measurement", "version": 99}', "version 99"),
    ('{"schema": "roofline-lessons/measurement", "version": 1, "machine": {}}', "damaged"),
])
def test_corrupt_or_foreign_files_give_a_clear_message(tmp_path, content, needle):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(results.MeasurementFileError, match=needle):
        results.load(path)


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(results.MeasurementFileError, match="does not exist"):
        results.load(tmp_path / "nope.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(results.MeasurementFileError):
        results.load(tmp_path / "bin.json")


def test_a_failed_save_keeps_the_old_file(quick, tmp_path, monkeypatch):
    path = results.save(quick, tmp_path / "keep.json")
    before = path.read_text()

    def boom(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError):
        results.save(quick, path)
    assert path.read_text() == before and not list(tmp_path.glob(".*.tmp"))


def test_example_measurement_ships_and_loads():
    m = results.example()
    assert isinstance(m, Measurement) and m.mode == "quick" and m.ridge_point_flop_per_byte() > 0


def test_data_dir_override(monkeypatch, tmp_path):
    monkeypatch.setenv(results.DATA_ENV, str(tmp_path))
    assert results.data_dir() == tmp_path


def test_gpu_path_is_skipped_cleanly_without_torch():
    usable, reason = gpu_status()
    if usable:
        pytest.skip("a GPU is present here")
    out = gpu_probes("quick")
    assert out == {"available": False, "reason": reason} and "skipped" in reason


@pytest.mark.parametrize("name,part", [("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"),
                                       ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
                                       ("NVIDIA B200", "b200"), ("NVIDIA L4", "l4"), ("NVIDIA L40S", "l40s"),
                                       ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("Tesla T4", None)])
def test_gpu_names_map_to_catalog_parts(name, part):
    assert catalog_part_for(name) == part


def test_machine_description():
    d = describe()
    assert d["cores"] >= 1 and "numpy" in d and "blas" in d
    peak = theoretical_peak_flops_per_s(8)
    assert peak is None or peak > 1e9


def test_measured_roofline_chart(quick):
    from roofline_lessons.viz.plots import bandwidth_sweep_chart, measured_roofline

    fig = measured_roofline(quick)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and "FLOP/byte" in ax.get_xlabel() and "GFLOP/s" in ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("DRAM" in s for s in labels) and any("gemv" in s for s in labels)
    assert "Working set" in bandwidth_sweep_chart(quick).axes[0].get_xlabel()


def test_json_is_plain(quick):
    data = json.loads(results.to_json(quick))
    assert data["schema"] == results.SCHEMA and data["version"] == results.VERSION
