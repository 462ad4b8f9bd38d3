"""Package pieces behind lessons 5–7 and their dashboards' update functions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_lessons import get_model, place
from roofline_lessons.core.memory import max_batch_that_fits
from roofline_lessons.core.models import FULL_ATTENTION, GATED_DELTANET
from roofline_lessons.core.units import MiB
from roofline_lessons.topics.flash import (SRAM, BlockSizes, SRAMOverflowError, attention_flops, compulsory_hbm_bytes,
                                           decode_attention_intensity, flash_block_sizes, flash_hbm_bytes,
                                           naive_attention, standard_hbm_bytes, tiled_attention, working_set_elements)
from roofline_lessons.topics.hybrid import (all_full_attention, kv_overtakes_weights_context, layer_kind_points,
                                            step_bytes_breakdown)
from roofline_lessons.viz.dashboards import Lesson05Chart, Lesson06Chart, lesson05_view, lesson06_view

# ---- lesson 5 ---------------------------------------------------------------------------------

def test_state_is_read_and_written_at_every_context_and_kv_grows():
    ctx = np.array([1024, 65536, 262144])
    b = step_bytes_breakdown("qwen3.8-27b", ctx, batch=4)
    assert np.allclose(b["state read"], b["state read"][0]) and np.allclose(b["state written"], b["state read"])
    assert b["state read"][0] > 4 * 144 * MiB
    assert np.all(np.diff(b["KV read"]) > 0) and np.allclose(b["weights"], b["weights"][0])
    np.testing.assert_allclose(b["KV read"], 4 * (ctx + 1) * 64 * 1024)


def test_kv_overtakes_weights_moves_in_with_batch():
    one, sixteen = (kv_overtakes_weights_context("qwen3.8-27b", b) for b in (1, 16))
    assert one / sixteen == pytest.approx(16, rel=1e-3)  # (16 embedding rows instead of 1)
    c = place("qwen3.8-27b", "h100-sxm", phase="decode", batch=16, context_tokens=int(sixteen)).cost
    assert c.kv_read_bytes == pytest.approx(c.weight_bytes, rel=1e-4)


def test_only_the_full_attention_dot_moves():
    pts = [layer_kind_points(place("qwen3.8-27b", "h100-sxm", phase="decode", batch=16, context_tokens=c).cost)
           for c in (1024, 131072)]
    assert pts[0][GATED_DELTANET].intensity == pytest.approx(pts[1][GATED_DELTANET].intensity)
    assert pts[0][FULL_ATTENTION].intensity > pts[1][FULL_ATTENTION].intensity * 1.5
    assert pts[0][FULL_ATTENTION].layers == 16 and pts[0][GATED_DELTANET].layers == 48


def test_all_attention_counterfactual():
    v = all_full_attention("qwen3.8-27b")
    assert v.kv_bytes_per_token() == 4 * get_model("qwen3.8-27b").kv_bytes_per_token()
    assert v.deltanet_state_bytes() == 0 and not v.is_hybrid
    assert max_batch_that_fits(v, "h200", 131072) < max_batch_that_fits("qwen3.8-27b", "h200", 131072)


def test_lesson05_view_and_chart():
    v = lesson05_view("h100-sxm", 16, 131072)
    assert sum(v.time_share.values()) == pytest.approx(1.0, rel=0.02)  # memory-bound: shares of the step add up
    assert v.time_share["KV read"] > v.time_share["weights"]
    assert v.dots[FULL_ATTENTION][0] != v.dots[GATED_DELTANET][0]
    fp8 = lesson05_view("h100-sxm", 16, 131072, "fp8")
    assert fp8.bytes_now["KV read"] == pytest.approx(v.bytes_now["KV read"] / 2)
    chart = Lesson05Chart()
    a, b = chart.png(v), chart.png(lesson05_view("h100-sxm", 16, 1024))
    assert a != b and chart.figures.misses == 1
    assert lesson05_view("nope", 1, 1024).error


# ---- lesson 6 ---------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 160), d=st.sampled_from([4, 8, 16, 32]), sram_kib=st.sampled_from([2, 4, 8, 16]),
       causal=st.booleans(), seed=st.integers(0, 2**16))
def test_tiled_attention_is_exact_and_counts_match_the_formula(n, d, sram_kib, causal, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, d)) * 2 for _ in range(3))
    sram = sram_kib * 1024
    out, traffic = tiled_attention(q, k, v, sram, causal=causal)
    np.testing.assert_allclose(out, naive_attention(q, k, v, causal), atol=1e-10, rtol=0)
    assert traffic.sram_peak_bytes <= sram
    assert traffic.hbm_bytes == flash_hbm_bytes(n, d, sram, 8, causal)


def test_bytes_follow_theorem_2_scaling():
    m = 64 * 1024
    base = flash_hbm_bytes(16384, 64, m, 2)
    assert flash_hbm_bytes(32768, 64, m, 2) / base == pytest.approx(4, rel=0.05)  # ∝ N²
    assert flash_hbm_bytes(16384, 128, m, 2) / base == pytest.approx(4, rel=0.12)  # ∝ d²
    assert flash_hbm_bytes(16384, 64, 2 * m, 2) / base == pytest.approx(0.5, rel=0.12)  # ∝ 1/M
    std = standard_hbm_bytes(np.array([1024, 2048]), 64)
    assert std[1] / std[0] == pytest.approx(4, rel=0.1)  # the N² term dominates


def test_simulated_counts_scale_like_the_theorem():
    rng = np.random.default_rng(1)
    counts = {}
    for n in (256, 512):
        q, k, v = (rng.standard_normal((n, 16)) for _ in range(3))
        counts[n] = tiled_attention(q, k, v, 8 * 1024)[1].hbm_bytes
    assert counts[512] / counts[256] == pytest.approx(4, rel=0.15)


def test_sram_is_never_exceeded_and_oversized_tiles_are_refused():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((64, 16)) for _ in range(3))
    with pytest.raises(SRAMOverflowError, match="SRAM bytes are free"):
        tiled_attention(q, k, v, 4096, block_sizes=BlockSizes(64, 64, 64, 64))
    with pytest.raises(SRAMOverflowError, match="cannot hold"):
        flash_block_sizes(256, 128, 8)
    sram = SRAM(100)
    sram.alloc(60, "a")
    with pytest.raises(SRAMOverflowError):
        sram.alloc(41, "b")


def test_block_sizes_follow_the_paper_then_fit():
    s = flash_block_sizes(233472, 128, 2)
    assert s.paper_cols == 228 and s.paper_rows == 128
    assert s.cols <= s.paper_cols and working_set_elements(s.rows, s.cols, 128) * 2 <= 233472


def test_roofline_positions():
    n, d, m = 32768, 128, 233472
    f = float(attention_flops(n, d, True))
    i_std, i_tiled, i_ideal = (f / float(standard_hbm_bytes(n, d)), f / flash_hbm_bytes(n, d, m, 2, True),
                               f / float(compulsory_hbm_bytes(n, d)))
    assert i_std < i_tiled < i_ideal  # the dot moves right with tiling
    assert float(decode_attention_intensity(4, 32768)) == pytest.approx(4, rel=0.02)  # ≈ GQA group size


def test_lesson06_view_and_chart():
    v = lesson06_view(8192, 128, 228, True)
    ks = list(v.intensity_by_kind)
    i = v.intensity_by_kind
    assert i[ks[0]] < min(i[ks[1]], i[ks[2]]) and max(i[ks[1]], i[ks[2]]) < i[ks[3]]  # standard < tiled < compulsory
    assert v.tile_map.shape[0] >= v.tile_map.shape[1] // 2 and np.isnan(v.tile_map).any()  # causal skips tiles
    full = lesson06_view(8192, 128, 228, False)
    assert not np.isnan(full.tile_map).any()
    chart = Lesson06Chart()
    assert chart.png(v) != chart.png(lesson06_view(512, 128, 228, True))
    assert lesson06_view(512, 256, 1, False).error  # SRAM too small for one tile


# ---- lesson 7 ---------------------------------------------------------------------------------

def test_levers_do_what_the_lesson_says():
    from roofline_lessons.topics.levers import lever_speedups, ridge_shift

    assert ridge_shift("b200") == pytest.approx({"bf16": 281.25, "fp8": 562.5, "fp4": 1125.0})
    assert "fp4" not in ridge_shift("h100-sxm")
    by = lambda phase, tokens=8192, batch=1: {r.lever: r for r in lever_speedups("qwen3.8-27b", "h100-sxm",  # noqa
                                                                                 phase, tokens, batch)}
    pf, dc = by("prefill"), by("decode")
    w8 = "weight-only 8-bit (W8A16)"
    # W8A8 prefill: under 2x because attention/softmax/norm FLOPs keep the BF16 rate
    assert 1.85 < pf["W8A8 FP8"].speedup_lower_bound < 1.99
    # weight-only in compute-bound prefill: the bound overlaps dequantisation (no slower); the estimate adds it
    # in series (a little slower): the lesson says which is which
    assert pf[w8].speedup_lower_bound == pytest.approx(1.0, abs=1e-9) and 0.99 < pf[w8].speedup_estimate < 1
    assert dc["W8A8 FP8"].speedup_lower_bound == pytest.approx(dc[w8].speedup_lower_bound, rel=1e-3)
    # batch-1 decode is memory-bound on weights: the bound's speed-up is the ratio of compulsory bytes, which the
    # default recipe (linear layers 8-bit; embedding and lm_head BF16) keeps under 2x
    base, lever = dc["BF16 (baseline)"].placement, dc[w8].placement
    assert lever.lower_bound_roof == "memory"
    assert dc[w8].speedup_lower_bound == pytest.approx(float(base.cost.compulsory_bytes / lever.cost.compulsory_bytes))
    assert 1.8 < dc[w8].speedup_lower_bound < 2 and dc[w8].speedup_estimate == pytest.approx(
        dc[w8].speedup_lower_bound, rel=0.01)
    long = by("decode", 65536, 16)
    for fig in ("speedup_lower_bound", "speedup_estimate"):
        assert getattr(long["FP8 KV cache"], fig) > getattr(long[w8], fig) > 1.2
    a100 = {r.lever: r for r in lever_speedups("llama-3.1-8b", "a100-80gb", "decode")}
    assert a100["W8A8 FP8"].speedup_lower_bound is None and "no fp8" in a100["W8A8 FP8"].unavailable
    # no FP8 units, but the linear weights' bytes still halve: the bound's speed-up is the ratio of compulsory bytes
    base, lever = a100["BF16 (baseline)"].placement, a100[w8].placement
    assert a100[w8].speedup_lower_bound == pytest.approx(float(base.cost.compulsory_bytes / lever.cost.compulsory_bytes))
    assert a100[w8].speedup_lower_bound > 1.5


def test_lesson07_view_and_chart():
    from roofline_lessons.viz.dashboards import Lesson07Chart, lesson07_view

    v = lesson07_view("b200", "decode", "W4A4 FP4", "FP8 KV cache")
    assert v.speedup > 3 and v.speedup_lower_bound > 3 and v.fits
    assert len(v.roofs) == 4 and v.chosen[0] > v.baseline[0]  # BF16, FP8, FP4 and INT8: the B200 has all four
    bad = lesson07_view("a100-80gb", "decode", "W8A8 FP8", "BF16 KV cache")
    assert bad.error and "no fp8" in bad.text and "not available on a100-80gb" in bad.text
    chart = Lesson07Chart()
    assert chart.png(v) != chart.png(lesson07_view("b200", "prefill", "W8A8 FP8", "BF16 KV cache"))
    assert chart.png(bad).startswith(b"\x89PNG")


def test_lesson05_marks_the_batch_16_steps_that_do_not_fit_and_names_the_memory_share():
    """Issue 25, item 21: rows that do not fit the H100 say so; the H200 counterfactual gives both shares."""
    from pathlib import Path

    from roofline_lessons.core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION

    for ctx, fits in ((8192, True), (32768, False), (131072, False)):
        assert place("qwen3.8-27b", "h100-sxm", phase="decode", batch=16, context_tokens=ctx).fits_in_memory == fits
    full, vllm = (max_batch_that_fits("qwen3.8-27b", "h200", 131072, memory_utilization=u)
                  for u in (1.0, VLLM_DEFAULT_MEMORY_UTILIZATION))
    assert full > vllm  # the share changes the answer, so the lesson must say which it uses
    text = (Path(__file__).resolve().parents[1] / "py" / "notebooks" / "05_hybrid_kv_growth.py").read_text("utf-8")
    assert "does not fit" in text and "fits_in_memory" in text
    assert text.count("resident(") >= 3  # defined, and used in both batch-16 tables
    assert "memory_utilization=vllm_share" in text and "100 % of memory" in text


# ---- the second reader's findings on lessons 5 and 6 --------------------------------------------

def _prose(name):
    """A lesson script's prose as it prints: adjacent string pieces joined across line breaks."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "py" / "notebooks" / name).read_text("utf-8")
    return re.sub(r'"\s*\n\s*(?:\+\s*)?f?"', "", text)


def test_lesson05_marks_a_model_priced_past_its_own_context():
    """M5: Qwen3-32B's config gives 40,960 positions; the counterfactual prices it at 131,072 (YaRN territory)."""
    step = place("qwen3-32b", "h200", phase="decode", batch=1, context_tokens=131072)
    assert step.context_beyond_model and get_model("qwen3-32b").max_context_tokens == 40960
    assert not place("qwen3.8-27b", "h200", phase="decode", batch=1, context_tokens=131072).context_beyond_model
    text = _prose("05_hybrid_kv_growth.py")
    assert "step.context_beyond_model" in text and "what-if: past its {m.max_context_tokens:,}-token context" in text
    assert "YaRN" in text and "QwenLM/Qwen3" in text


def test_lesson05_labels_the_estimate_and_says_which_capacity_it_fills():
    """N4: the two-dots columns are the estimate's unfused bytes; N5: the state bytes (not share) grow only with
    batch; N10: the 141 GiB is the datasheet's, the driver's 143,771 MiB is named and checked."""
    text = _prose("05_hybrid_kv_growth.py")
    assert "FLOP/byte (estimate, unfused)" in text
    assert "the state share only with batch" not in text and "the state bytes only with batch" in text
    assert "143_771" in text and "same_at_driver" in text and "the datasheet gives" in text
    from roofline_lessons import get_part

    share = 143_771 * MiB / get_part("h200").memory_capacity_bytes
    for m in ("qwen3.8-27b", all_full_attention("qwen3.8-27b")):  # the lesson's "the same batches here"
        assert max_batch_that_fits(m, "h200", 131072, memory_utilization=share) == max_batch_that_fits(m, "h200", 131072)


def test_checker_65_hint_names_every_query_head_of_the_group():
    """N11: each cached key and value is used by every query head of its group, not by one query per group."""
    from roofline_lessons.course.checks import lesson06

    message = lesson06.decode_fix("yes").message
    assert "one query per head group" not in message
    assert f"every query head of its group — {lesson06.DECODE_GROUP} here" in message
    assert lesson06.decode_fix("no").passed
