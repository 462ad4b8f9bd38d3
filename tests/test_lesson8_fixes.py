"""Issue 10, lesson 8: the attention experiment shows the M/d² condition, the bandwidth probe is
amortised so its roofs come out monotone, GPU probes are sized past the L2, tensor instructions are
not counted as 2 FLOPs each, and the hierarchical-roofline claim follows the numbers."""

import dataclasses

import numpy as np
import pytest

from roofline_lessons import get_part
from roofline_lessons.measure.gpu import LLC_MULTIPLE, device_l2_bytes, probe_sizes
from roofline_lessons.measure.probes import (ATTENTION_HEAD_DIM, ATTENTION_SRAM_BYTES, MODES, STREAM_ARRAYS,
                                             BandwidthSample, Roof, Timing, _Workers, bandwidth_plateaus,
                                             cache_capacity_bytes, fp_pipe_flops, is_monotone, limiting_roof,
                                             m_over_d_squared, passes_per_call, stream_kernels,
                                             tensor_instruction_flops, working_set_sizes)
from roofline_lessons.topics.datasheets import best_measurement
from roofline_lessons.topics.flash import (attention_flops, compulsory_hbm_bytes, flash_hbm_bytes, l2_bandwidth_figures,
                                           standard_hbm_bytes, tiled_attention)

# --- 2. tiled attention: M/d² large saves bytes, M/d² small loses -----------------------------------

@pytest.mark.parametrize("mode", sorted(MODES))
def test_attention_experiment_shows_the_m_over_d_squared_condition(mode):
    n, d = MODES[mode]["attention_n"], ATTENTION_HEAD_DIM
    naive = float(standard_hbm_bytes(n, d, 8))
    large, small = ATTENTION_SRAM_BYTES
    assert m_over_d_squared(large, d) >= 16 and m_over_d_squared(small, d) <= 4
    assert flash_hbm_bytes(n, d, large, 8) < naive / 2  # M ≫ d²: tiling saves HBM bytes
    assert flash_hbm_bytes(n, d, small, 8) > naive  # M ≈ d²: tiling moves more than the naive kernel


def test_the_tiled_count_is_what_the_kernel_moves():
    rng = np.random.default_rng(0)
    n, d = 128, ATTENTION_HEAD_DIM
    q, k, v = (rng.standard_normal((n, d)) for _ in range(3))
    for sram in ATTENTION_SRAM_BYTES:
        _, traffic = tiled_attention(q, k, v, sram)
        assert traffic.hbm_bytes == flash_hbm_bytes(n, d, sram, 8)


def test_m_over_d_squared_counts_elements():
    assert m_over_d_squared(64 * 1024, 64, 8) == 2.0
    assert m_over_d_squared(2**20, 64, 8) == 32.0


# --- 3. amortised bandwidth probe ---------------------------------------------------------------------

def test_every_sweep_call_moves_at_least_the_amortisation_target():
    caches, threads = {"L1": 32 << 10, "L2": 1 << 20, "L3": 32 << 20}, 2
    target = MODES["quick"]["bytes_per_call"]
    for ws in working_set_sizes("quick", caches, threads):
        for kernel, arrays in STREAM_ARRAYS.items():
            n = ws // (8 * arrays)
            assert passes_per_call(arrays * n * 8, target) * arrays * n * 8 >= target


def test_sweep_leaves_out_slices_that_live_in_l1():
    caches = {"L1": 32 << 10, "L2": 1 << 20, "L3": 32 << 20}
    assert all(ws / 2 > 2 * caches["L1"] for ws in working_set_sizes("quick", caches, threads=2))
    assert working_set_sizes("quick") == working_set_sizes("quick", None)  # no caches known: the full ladder


def test_repeated_passes_compute_and_count_correctly():
    w = _Workers(2)
    try:
        n = 10_001
        kernels = stream_kernels(n, w, passes=7)
        for name, (call, moved, touched) in kernels.items():
            call()
            assert moved == 7 * touched
        a, b, c = kernels["triad"][0].arrays
        assert np.all(a == b + c)
        assert kernels["read"][0].partial.sum() == 7 * n  # read ran first, over a = 1.0
    finally:
        w.close()


def _modelled_sweep(bytes_per_call_of, overhead_s, bandwidth_of, threads=2):
    """Samples timed by a cost model: fixed cost per call + bytes / the level's bandwidth."""
    out = []
    for ws in working_set_sizes("quick", {"L1": 32 << 10, "L2": 1 << 20, "L3": 32 << 20}, threads) or []:
        per_pass = ws
        moved = bytes_per_call_of(per_pass)
        t = overhead_s + moved / bandwidth_of(ws)
        out.append(BandwidthSample("triad", ws, moved, Timing(t, t, t), threads=threads))
    return out


def test_amortised_timing_gives_monotone_roofs_where_one_pass_per_call_does_not():
    caches, shared = {"L1": 32 << 10, "L2": 1 << 20, "L3": 32 << 20}, {"L1": 1, "L2": 1, "L3": 2}

    def bandwidth(ws):  # the machine's true levels, aggregate over 2 threads
        return 200e9 if ws <= 2 << 20 else 100e9 if ws <= 32 << 20 else 30e9

    target = MODES["quick"]["bytes_per_call"]
    amortised = _modelled_sweep(lambda b: passes_per_call(b, target) * b, 50e-6, bandwidth)
    one_pass = _modelled_sweep(lambda b: b, 50e-6, bandwidth)
    good = bandwidth_plateaus(amortised, caches, shared_cpus=shared)
    bad = bandwidth_plateaus(one_pass, caches, shared_cpus=shared)
    assert [r.name for r in good] == ["L2", "L3", "DRAM"] and is_monotone(good)
    assert not is_monotone(bad)  # the old probe: call overhead drags the L2 "roof" under L3


def test_private_caches_count_once_per_thread():
    caches, shared = {"L1": 32 << 10, "L2": 1 << 20, "L3": 32 << 20}, {"L1": 1, "L2": 1, "L3": 2}
    assert cache_capacity_bytes("L2", caches, 2, shared) == 2 << 20
    assert cache_capacity_bytes("L3", caches, 2, shared) == 32 << 20
    assert cache_capacity_bytes("L2", caches, 1, None) == 1 << 20  # an old file: sizes as they were
    assert cache_capacity_bytes("L3", caches, 4, None) == 32 << 20


def test_is_monotone():
    assert is_monotone([Roof("L2", 3e9), Roof("L3", 2e9), Roof("DRAM", 2e9)])
    assert not is_monotone([Roof("L2", 1e9), Roof("L3", 2e9), Roof("DRAM", 1e9)])


def test_saved_threads_and_passes_round_trip(tmp_path):
    from roofline_lessons.measure import results
    from roofline_lessons.measure.probes import Measurement

    m = Measurement(machine={"caches": {}}, mode="quick", created="now",
                    bandwidth=[BandwidthSample("triad", 3 << 20, 30 << 20, Timing(1e-3, 1e-3, 1e-3), 2, 10)])
    again = results.load(results.save(m, tmp_path / "m.json"))
    assert again.bandwidth[0].threads == 2 and again.bandwidth[0].passes == 10


# --- 4. GPU probes sized past the L2 (fake devices) ----------------------------------------------------

class _FakeProps:
    def __init__(self, l2):
        self.L2_cache_size = l2


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("l2", [50 * 2**20, 126 * 2**20, 256 * 2**20, 4 * 2**20])
def test_gpu_memory_probes_are_sized_past_the_l2(mode, l2):
    sizes = probe_sizes(mode, l2)
    assert 2 * sizes["gemv_n"] ** 2 >= LLC_MULTIPLE * l2  # the bf16 matrix
    assert 2 * sizes["copy_elements"] >= LLC_MULTIPLE * l2  # each bf16 copy buffer
    assert 2 * sizes["gemv_n"] ** 2 > 4 * l2


def test_quick_gemv_on_an_h100_no_longer_fits_its_l2():
    l2, source = device_l2_bytes(_FakeProps(50 * 2**20), "NVIDIA H100 80GB HBM3")
    assert source == "reported by the device"
    assert 2 * probe_sizes("quick", l2)["gemv_n"] ** 2 > get_part("h100-sxm").last_level_cache_bytes * 4


def test_device_l2_falls_back_to_the_catalog():
    class NoL2:
        pass

    l2, source = device_l2_bytes(NoL2(), "NVIDIA H100 80GB HBM3")
    assert l2 == get_part("h100-sxm").last_level_cache_bytes and "h100-sxm" in source
    l2, source = device_l2_bytes(None, "Some Future GPU")
    assert l2 >= get_part("b200").last_level_cache_bytes and "unknown" in source


# --- 5. tensor instructions are many FMAs each ----------------------------------------------------------

def test_tensor_instructions_are_not_two_flops_each():
    assert tensor_instruction_flops(1, 16, 8, 16) == 4096
    assert tensor_instruction_flops(10, 16, 8, 16) != fp_pipe_flops(fma=10)
    assert fp_pipe_flops(fma=10, add=3, mul=2) == 25


# --- 1. the hierarchical-roofline claim agrees with lesson 6's numbers ----------------------------------

def test_lesson6_tiled_attention_is_l2_bound_not_compute_bound():
    h100 = get_part("h100-sxm")
    d, n = 128, 32768
    f = float(attention_flops(n, d, True))
    for l2 in l2_bandwidth_figures(h100):  # at the near-partition and at the whole-L2 figure alike
        levels = {"HBM": (h100.memory_bandwidth_bytes_per_s, f / float(compulsory_hbm_bytes(n, d))),
                  "L2": (l2.value, f / flash_hbm_bytes(n, d, h100.shared_memory_per_sm_bytes, 2, True))}
        name, rate = limiting_roof(h100.peak_flops_per_s("bf16"), levels)
        assert name == "L2" and rate < h100.peak_flops_per_s("bf16")


def test_limiting_roof_picks_the_lowest():
    assert limiting_roof(100.0, {"HBM": (1.0, 1000.0), "L2": (10.0, 5.0)}) == ("L2", 50.0)
    assert limiting_roof(10.0, {"HBM": (1.0, 1000.0)}) == ("compute", 10.0)


# --- review of lesson 8's rendered output -------------------------------------------------------------

from pathlib import Path

from roofline_lessons.measure import probes as measure_mod
from roofline_lessons.measure.probes import (NEAR_ROOF, NOISY_SPREAD, attention_tiles, break_even_m_over_d_squared,
                                             kernel_samples, largest_spread, roof_fraction)
from roofline_lessons.topics.flash import flash2_hbm_bytes

LESSON8 = Path(__file__).resolve().parents[1] / "py" / "notebooks" / "08_measure_your_machine.py"


def test_tiled_attention_is_timed_with_the_same_repeats_as_every_kernel(monkeypatch):
    calls = []

    def fake_time_call(fn, repeats=5, min_time_s=0.01):
        calls.append((repeats, min_time_s))
        return Timing(1e-3, 1e-3, 1e-3)

    monkeypatch.setattr(measure_mod, "time_call", fake_time_call)
    samples = kernel_samples("quick", threads=1)
    cfg = MODES["quick"]
    assert len(calls) == len(samples)
    assert set(calls) == {(cfg["repeats"], cfg["min_time_s"])}  # the tiled ones too: no single-run timing
    assert cfg["repeats"] > 1


def test_spreads_and_the_noise_threshold():
    t = Timing(1.0, 1.1, 1.5)
    assert t.spread == pytest.approx(0.1) and t.worst_spread == pytest.approx(0.5)
    assert largest_spread([t, Timing(1.0, 1.0, 1.0)]) == pytest.approx(0.5)
    assert largest_spread([t]) > NOISY_SPREAD
    assert largest_spread([Timing(1.0, 1.05, 1.1)]) < NOISY_SPREAD
    assert largest_spread([]) == 0.0


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_small_sram_runs_more_tiles(mode):
    n = MODES[mode]["attention_n"]
    large, small = ATTENTION_SRAM_BYTES
    assert attention_tiles(n, ATTENTION_HEAD_DIM, small) > attention_tiles(n, ATTENTION_HEAD_DIM, large)


def test_roof_fraction_uses_the_lower_roof():
    assert roof_fraction(10.0, 1.0, 100.0, 20.0) == 0.5  # bandwidth roof 20 FLOP/s at intensity 1
    assert roof_fraction(50.0, 10.0, 100.0, 20.0) == 0.5  # compute roof 100
    assert 0 < NEAR_ROOF < 1


@pytest.mark.parametrize("mode", sorted(MODES))
def test_break_even_m_over_d_squared_separates_the_experiments_sizes(mode):
    n, d = MODES[mode]["attention_n"], ATTENTION_HEAD_DIM
    b = break_even_m_over_d_squared(n, d)
    naive = float(standard_hbm_bytes(n, d, 8))
    elements = round(b * d * d)
    assert flash_hbm_bytes(n, d, elements * 8, 8) <= naive < flash_hbm_bytes(n, d, (elements - 1) * 8, 8)
    large, small = ATTENTION_SRAM_BYTES
    assert m_over_d_squared(small, d) < b < m_over_d_squared(large, d)


def test_tiled_bytes_never_rise_with_the_sram():
    n, d = 256, ATTENTION_HEAD_DIM
    for count in (flash_hbm_bytes, flash2_hbm_bytes):
        counts = [count(n, d, e * 8, 8) for e in range(4 * d + 8, 40 * d * d, 97)]
        assert all(a >= b for a, b in zip(counts, counts[1:]))
    assert break_even_m_over_d_squared(n, d, tiled_bytes=flash2_hbm_bytes) < float("inf")


def test_h100_has_a_like_for_like_fp32_ridge():
    h100 = get_part("h100-sxm")
    assert h100.ridge_point_flop_per_byte("fp32") < h100.ridge_point_flop_per_byte("bf16")


def test_lesson8_text_follows_the_review():
    text = LESSON8.read_text()
    assert "L1/shared memory (`l1tex__t_bytes.sum`)" not in text
    assert "smsp__sass_data_bytes_mem_shared" in text and "HMMA.16816" in text and "HGMMA" in text
    assert "SpeedOfLight_HierarchicalTensorRooflineChart" in text
    assert "flash2_hbm_bytes" in text and "Algorithm 1 order" in text
    assert "M ≈ d²" not in text and "break_even_m_over_d_squared" in text
    assert 'ridge_point_flop_per_byte("fp32")' in text
    assert "noise_warning(mine.matmul" in text
    assert "This run is noisy" in text  # the tile-order sentence has a branch for a contradicting order


# --- issue 25, item 19: the DRAM roof's counting convention, write-allocate, and numpy as a lower bound ----

import itertools
import re
from fractions import Fraction

from roofline_lessons.course.checkers import CORRECT, NOT_ATTEMPTED
from roofline_lessons.course.checks import lesson08
from roofline_lessons.measure import results
from roofline_lessons.measure.probes import (DRAM_VERDICTS, READ_BEATS_TRIAD, STREAM_WRITES, TREND_SHAPES,
                                             TREND_TOLERANCE, DramRoofCheck, dram_roof_check,
                                             feeding_roof, roofline_top_index, shape_against_roofline, trend,
                                             trend_words, write_allocate_factor)

ROOT = Path(__file__).resolve().parents[1]
SOLUTION8 = ROOT / "py" / "solutions" / "08_measure_your_machine.py"


class _GeneratedExercise:
    """The lesson-8 exercise as the generator writes it from the solution, read as a percent script
    (exercises are kept as notebooks only)."""

    def __init__(self, solution: Path) -> None:
        self.solution = solution

    def read_text(self) -> str:
        from roofline_lessons.course.exercisegen import exercise_texts

        return exercise_texts(self.solution)[1]

    def __str__(self) -> str:
        return f"the exercise generated from {self.solution.name}"


EXERCISE8 = _GeneratedExercise(SOLUTION8)


def test_write_allocate_factor_counts_the_read_of_every_written_array():
    assert write_allocate_factor("triad") == Fraction(4, 3)
    assert write_allocate_factor("copy") == Fraction(3, 2)
    assert write_allocate_factor("read") == 1
    assert set(STREAM_WRITES) == set(STREAM_ARRAYS)
    with pytest.raises(ValueError, match="'scale'"):
        write_allocate_factor("scale")


def test_the_dram_roof_counted_both_ways():
    m = results.example()
    assert m.dram_bytes_per_s(write_allocate=True) == pytest.approx(m.dram_bytes_per_s() * 4 / 3)
    assert m.dram_bytes_per_s() == next(r.bytes_per_s for r in m.roofs() if r.name == "DRAM")  # the default is unchanged


def test_the_shipped_examples_dot_is_above_both_counts_from_dram():
    check = dram_roof_check(results.example())
    assert check.working_set_bytes == 128 * 2**20 and check.last_level_cache_bytes == 32 * 2**20
    assert not check.fits_in_cache
    assert check.best_bytes_per_s / check.stream_roof_bytes_per_s == pytest.approx(2.18, abs=0.01)  # the 218 %
    assert check.best_bytes_per_s > check.write_allocate_roof_bytes_per_s  # write-allocate alone cannot explain it
    assert check.verdict == READ_BEATS_TRIAD
    # ... in its best run only: the median run, 4.96× slower, is under the roof (M3: judge on the median too)
    assert check.best_bytes_per_s / check.median_bytes_per_s == pytest.approx(4.96, abs=0.01)
    assert check.median_verdict == "under the roof"


def _joined(text):
    """A notebook script's prose as it prints: adjacent string pieces joined across line breaks."""
    return re.sub(r'"\s*\n\s*(?:\+\s*)?f?"', "", text)


def _roof_check(best, ws=100.0, llc=10, stream=1.0, median=None):
    return DramRoofCheck("dot", ws, llc, best, best / 2 if median is None else median, stream, stream * 4 / 3)


def test_dram_roof_verdicts_follow_the_numbers():
    assert _roof_check(0.9).verdict == "under the roof"
    assert _roof_check(1.2).verdict == "within the write-allocate gap"
    assert _roof_check(1.5).verdict == READ_BEATS_TRIAD
    assert _roof_check(1.5, ws=5.0).verdict == "a cache may feed it"
    assert _roof_check(1.5, llc=None).verdict == READ_BEATS_TRIAD  # caches unknown: DRAM assumed
    assert set(DRAM_VERDICTS) == {"under the roof", "a cache may feed it", "within the write-allocate gap",
                                  READ_BEATS_TRIAD}
    # the median run is judged by the same rule
    assert _roof_check(1.5, median=1.45).median_verdict == READ_BEATS_TRIAD
    assert _roof_check(1.5, median=1.2).median_verdict == "within the write-allocate gap"
    assert _roof_check(1.5).median_verdict == "under the roof"


def test_the_verdict_says_read_only_traffic_not_a_too_low_plateau():
    """M3: a read-only kernel beating the triad roof says the triad roof understates what the memory delivers to
    read-only traffic — reads alone commonly beat a mix of reads and writes even in tuned code."""
    assert "too low" not in READ_BEATS_TRIAD and "read-only" in READ_BEATS_TRIAD
    doc = DramRoofCheck.verdict.__doc__
    assert "understates what the memory delivers to read-only traffic" in " ".join(doc.split())
    text = _joined(LESSON8.read_text())
    assert "understates what this memory delivers to read-only traffic" in text
    assert "plateau is **too \"\n" not in text and "is **too low** for this memory" not in text
    assert "c.median_verdict" in text  # the lesson judges the median run too


def test_dram_roof_check_names_a_missing_kernel():
    with pytest.raises(ValueError, match="'nope'"):
        dram_roof_check(results.example(), "nope")


# --- exercise 8.5 accepts "the measured roof is too low"; the red flags are still rejected ------------------

def _assigned(path, name):
    match = re.search(rf"^{name} = (.+?)(\s+#.*)?$", path.read_text(), re.M)
    assert match, f"{name} is not assigned in {path}"
    return eval(match.group(1))  # a literal: a string, or the stub's ...


def test_checker_85_accepts_the_solution_and_rejects_the_stub():
    solution = _assigned(SOLUTION8, "why")
    assert "median" in SOLUTION8.read_text()  # the solution reads the example's median run, not only its best
    assert solution == "the measured roof is too low"
    assert lesson08.above_the_roof(solution).status == CORRECT
    assert _assigned(EXERCISE8, "why") is ...
    assert lesson08.above_the_roof(...).status == NOT_ATTEMPTED


@pytest.mark.parametrize("answer", lesson08.ABOVE_ROOF_RIGHT)
def test_checker_85_accepts_both_right_answers(answer):
    result = lesson08.above_the_roof(f"  {answer.upper()} ")
    assert result.passed
    other = next(a for a in lesson08.ABOVE_ROOF_RIGHT if a != answer)
    assert other in result.message  # the learner hears the other explanation too


@pytest.mark.parametrize("flag", sorted(lesson08.ABOVE_ROOF_WRONG))
def test_checker_85_rejects_the_red_flags_with_their_reason(flag):
    result = lesson08.above_the_roof(flag)
    assert not result.passed and lesson08.ABOVE_ROOF_WRONG[flag] in result.message


@pytest.mark.parametrize("answer", ["both", "", 3, 2.5, ["a cache is feeding it"], True, {"x": 1}])
def test_checker_85_never_crashes_and_rejects_other_answers(answer):
    assert not lesson08.above_the_roof(answer).passed


def test_checker_85_choices_are_the_right_and_the_wrong_ones():
    assert set(lesson08.GAP_CHOICES) == set(lesson08.ABOVE_ROOF_RIGHT) | set(lesson08.ABOVE_ROOF_WRONG)
    text = EXERCISE8.read_text()
    for choice in lesson08.GAP_CHOICES:  # the exercise offers every choice the checker knows
        assert " ".join(f'`"{choice}"`'.split()) in " ".join(text.replace("\n# ", " ").split())


# --- issue 25, item 20: every word about a measured sequence comes from its numbers -------------------------

def _never_falls(v, tol):
    return all(v[i] <= v[j] * (1 + tol) for i, j in itertools.combinations(range(len(v)), 2))


def _never_rises(v, tol):
    return all(v[j] <= v[i] * (1 + tol) for i, j in itertools.combinations(range(len(v)), 2))


@pytest.mark.parametrize("values,shape", [
    ([1, 2, 4, 8], "rises"),
    ([8, 4, 2, 1], "falls"),
    ([31.8, 61.9, 39.7, 38.6, 38.4], "peaks"),  # the shipped example's matrix–matrix rates (GFLOP/s)
    ([1, 3, 2], "peaks"),
    ([3, 1, 2], "dips"),
    ([1, 1.02, 0.99, 1.01], "flat"),
    ([1, 3, 1, 3], "up and down"),
    ([100, 96, 92, 88, 84], "falls"),  # a drift of steps each under the tolerance is still a fall
    ([1, 2, 1.97, 3], "rises"),  # a step back under the tolerance does not break a rise
    ([1.049, 1.0, 1.1, 1.0477], "up and down"),  # last below first: not called a rise
    ([35.1, 86.5, 86.5, 86.5, 86.5], "plateaus"),  # W1: the reader's attainable rate, at the compute roof from 16 rows
    ([24.2, 49.8, 64.9, 80.4, 89.1], "rises"),  # ... and the measured rate, which keeps climbing
    ([1, 2, 3, 3.05], "plateaus"),
    ([10, 5, 5, 5], "bottoms out"),
    ([1, 1.04, 1.08, 1.12, 1.16], "rises"),  # a drift of small steps into a level-looking tail is still a rise
])
def test_trend_names_the_shape(values, shape):
    assert trend(values).shape == shape


def test_trend_words_for_rising_falling_and_peaked_sequences():
    labels = ["4 rows", "16 rows", "64 rows", "256 rows"]
    show = lambda x: f"{x:g} GFLOP/s"  # noqa: E731
    up = trend_words(labels, [10, 20, 30, 40], show)
    assert up == "rises from 10 GFLOP/s at 4 rows to 40 GFLOP/s at 256 rows"
    down = trend_words(labels, [40, 30, 20, 10], show)
    assert down == "falls from 40 GFLOP/s at 4 rows to 10 GFLOP/s at 256 rows"
    peak = trend_words(labels, [30, 60, 40, 38], show)
    assert peak == "rises from 30 GFLOP/s at 4 rows to a peak of 60 GFLOP/s at 16 rows, then falls to 38 GFLOP/s at 256 rows"
    dip = trend_words(labels, [30, 10, 20, 38], show)
    assert dip.startswith("falls from 30 GFLOP/s at 4 rows to a low of 10 GFLOP/s at 16 rows, then rises")
    flat = trend_words(labels, [10, 10.2, 10.1, 10.3], show)
    assert flat.startswith("stays within 5 %") and "rises" not in flat and "falls" not in flat
    noisy_rise = trend_words(labels, [10, 20, 19.5, 40], show)
    assert noisy_rise.startswith("rises") and "no step the other way larger than 5 %" in noisy_rise
    zigzag = trend_words(labels, [10, 30, 10, 30], show)
    assert "up and down" in zigzag and "rises" not in zigzag and "falls" not in zigzag
    level = trend_words(labels, [35, 86, 86, 86], show)
    assert level == ("rises from 35 GFLOP/s at 4 rows to 86 GFLOP/s at 16 rows, then stays level (within 5 %) up to "
                     "86 GFLOP/s at 256 rows")
    floor = trend_words(labels, [80, 40, 40, 41], show)
    assert floor.startswith("falls from 80 GFLOP/s at 4 rows to 40 GFLOP/s at 16 rows, then stays level")


def test_the_example_matmul_sentence_no_longer_says_rises():
    m = results.example()
    gemms = sorted((k for k in m.kernels if k.name.startswith("gemm")), key=lambda k: k.intensity)
    words = trend_words([k.name for k in gemms], [k.flops_per_s for k in gemms], lambda r: f"{r / 1e9:.1f} GFLOP/s")
    assert words.startswith("rises from 31.8 GFLOP/s") and "a peak of 61.9 GFLOP/s" in words
    assert "then falls to 38.4 GFLOP/s" in words


def test_trend_words_are_consistent_with_any_sequence():
    rng = np.random.default_rng(25)
    seen = set()
    for _ in range(3000):
        n = int(rng.integers(2, 7))
        v = list(np.exp(rng.normal(0, rng.choice([0.02, 0.1, 0.5]), n)).cumprod() if rng.random() < 0.5 else
                 np.exp(rng.normal(0, 0.3, n)))
        t, tol = trend(v), TREND_TOLERANCE
        seen.add(t.shape)
        assert t.shape in TREND_SHAPES
        flat = max(v) <= min(v) * (1 + tol)
        assert (t.shape == "flat") == flat
        if t.shape == "rises":
            assert _never_falls(v, tol) and v[-1] > v[0] * (1 + tol)
        if t.shape == "falls":
            assert _never_rises(v, tol) and v[0] > v[-1] * (1 + tol)
        if t.shape == "peaks":
            k = t.peak
            assert 0 < k < n - 1 and _never_falls(v[:k + 1], tol) and _never_rises(v[k:], tol)
            assert v[k] > v[0] * (1 + tol) and v[k] > v[-1] * (1 + tol)
        if t.shape == "dips":
            k = t.low
            assert 0 < k < n - 1 and _never_rises(v[:k + 1], tol) and _never_falls(v[k:], tol)
        if t.shape in ("plateaus", "bottoms out"):
            k = t.level_from
            assert 0 < k <= n - 2 and max(v[k:]) <= min(v[k:]) * (1 + tol)  # a level stretch of ≥ 2 to the end
            assert max(v[k - 1:k + 1]) > min(v[k - 1:k + 1]) * (1 + tol)  # entered by a step larger than tol
            assert (_never_falls(v, tol) and v[-1] > v[0] * (1 + tol) if t.shape == "plateaus" else
                    _never_rises(v, tol) and v[0] > v[-1] * (1 + tol))
        else:
            assert t.level_from is None
        if t.strict:
            assert t.shape in ("rises", "plateaus", "falls", "bottoms out", "peaks", "dips")
        words = trend_words([str(i) for i in range(n)], v)
        first = words.split()[0]
        assert first == {"flat": "stays", "rises": "rises", "plateaus": "rises", "falls": "falls",
                         "bottoms out": "falls", "peaks": "rises", "dips": "falls", "up and down": "goes"}[t.shape]
        if t.shape in ("rises", "flat", "plateaus"):
            assert " falls" not in words
        if t.shape in ("falls", "flat", "bottoms out"):
            assert " rises" not in words
    assert seen == set(TREND_SHAPES)


@pytest.mark.parametrize("bad", [[1.0], [], [1.0, 0.0], [1.0, -2.0], [1.0, float("nan")], [1.0, "x"]])
def test_trend_rejects_what_it_cannot_describe(bad):
    with pytest.raises(ValueError):
        trend(bad)


def test_trend_words_needs_one_label_per_value():
    with pytest.raises(ValueError, match="2 labels for 3 values"):
        trend_words(["a", "b"], [1, 2, 3])


def test_lesson8_words_come_from_the_numbers():
    text = LESSON8.read_text()
    assert "rising = gemms[-1].flops_per_s > gemms[0].flops_per_s" not in text  # the first-vs-last comparison
    assert "trend_words(labels, rates" in text and "shape_against_roofline(labels, rates, attainable" in text
    assert "roofline_top_index(attainable)" in text  # "reaches the compute roof at … and stays there", computed
    assert "lesson 4 on a CPU" not in text and "climbs towards the compute roof" not in text
    assert "write_allocate_factor(\"triad\")" in text and "dram_roof_check(example)" in text
    assert "**lower bound**" in text and "write-allocate" in text
    solution = SOLUTION8.read_text()
    assert "dot.verdict == READ_BEATS_TRIAD" in solution and "dot.median_verdict" in solution


# --- the second reader's findings on lesson 8 (W1, M2, M4, N2, N3) -----------------------------------------

ROWS = ["4 rows", "16 rows", "64 rows", "256 rows", "1024 rows"]


def test_w1_the_measured_rise_is_not_read_as_the_rooflines_shape():
    """The reader's run: attainable 35.1 then 86.5 ×4 (the compute roof from 16 rows), measured 24.2 → 89.1."""
    attainable, measured = [35.1, 86.5, 86.5, 86.5, 86.5], [24.2, 49.8, 64.9, 80.4, 89.1]
    assert roofline_top_index(attainable) == 1
    words, agree = shape_against_roofline(ROWS, measured, attainable)
    assert not agree
    assert words.startswith("Up to 16 rows, where the roofline still rises, the measured rate rises too")
    assert "from 16 rows on, where the roofline is flat, the measured rate still rises" in words
    # a measured rate that rises where the roofline rises and is level where it is flat agrees
    words, agree = shape_against_roofline(ROWS, [30, 80, 82, 81, 83], attainable)
    assert agree and "is level too" in words
    # all right of the ridge: the roofline is flat throughout
    words, agree = shape_against_roofline(ROWS, measured, [86.5] * 5)
    assert not agree and words.startswith("The roofline is flat over all of them, and the measured rate still rises")
    # the roofline rising throughout, the measured rate rising: agreement, with no flat part named
    words, agree = shape_against_roofline(ROWS, measured, [30, 40, 50, 60, 90])
    assert agree and "flat" not in words


def test_roofline_top_index_refuses_a_falling_roofline():
    with pytest.raises(ValueError, match="never falls"):
        roofline_top_index([2.0, 1.0, 3.0])
    assert roofline_top_index([5.0, 5.0]) == 0 and roofline_top_index([1.0, 2.0, 3.0]) == 2


def test_m2_a_cache_resident_product_is_judged_against_the_cache_roof():
    """The 8 MiB weight matrix fits the 32 MiB L3, so the gemms' roof is the L3 one, not DRAM's."""
    m = results.example()
    l3 = next(r for r in m.roofs() if r.name == "L3")
    for k in m.kernels:
        if k.name.startswith("gemm"):
            assert m.feeding_roof(k.bytes_estimated) == l3
    assert m.feeding_roof(128 * 2**20).name == "DRAM"  # past every cache: DRAM
    assert m.feeding_roof(512 * 2**10).name == "L2"  # the smallest level with a measured roof that holds it
    roofs = [Roof("L2", 100.0), Roof("DRAM", 10.0)]
    caches = {"L1": 32 * 2**10, "L2": 2**20, "L3": 32 * 2**20}
    assert feeding_roof(16 * 2**10, roofs, caches).name == "L2"  # L1 has no roof: the next level up that has one
    assert feeding_roof(8 * 2**20, roofs, caches).name == "DRAM"  # L3 holds it but has no roof measured: DRAM
    with pytest.raises(ValueError, match="'x'"):
        feeding_roof("x", roofs, caches)
    with pytest.raises(ValueError, match="DRAM"):
        feeding_roof(1.0, [Roof("L2", 100.0)], caches)
    text = LESSON8.read_text()
    assert "mine.feeding_roof(k.bytes_estimated) for k in gemms" in text
    assert "the small batches sit near the bandwidth roof" not in text


def test_n2_the_compute_roof_is_the_best_matmul_measured_kernels_included():
    m = results.example()
    gemm_best = max(k.flops_per_s for k in m.kernels if k.name.startswith("gemm "))
    sweep_best = max(s.flops_per_s for s in m.matmul if s.dtype == "float64")
    assert m.peak_flops_per_s() == max(gemm_best, sweep_best)
    faster = dataclasses.replace(m, kernels=[dataclasses.replace(k, timing=Timing(k.timing.best_s / 10, k.timing.median_s,
                                                                                   k.timing.worst_s))
                                             if k.name == "gemm 1024×1024×1024" else k for k in m.kernels])
    assert faster.peak_source() == "gemm 1024×1024×1024"
    assert all(k.flops_per_s <= faster.peak_flops_per_s() for k in faster.kernels if k.name.startswith("gemm"))
    assert faster.peak_flops_per_s("float32") == m.peak_flops_per_s("float32")  # the kernels are float64 only


def test_m4_and_n3_lesson8_says_what_its_experiments_can_show():
    text = _joined(LESSON8.read_text())
    assert "which is why FlashAttention is a fused GPU kernel" not in text
    assert "compute-side and cache-resident" in text and "att_feeds" in text
    assert "work per byte than this CPU in float32" not in text  # no BF16-GPU against float32-CPU ratio
    assert "Not like for like in kind" in text
