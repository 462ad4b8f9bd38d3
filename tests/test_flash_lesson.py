"""Lesson 6: the FlashAttention-2 loop order (simulation = closed form, exact output), the cost
model's compulsory bytes, the comparative-word helper, the dashboard's loop orders and checker 6.4."""

import math
import re

import numpy as np
import pytest

from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.models import get_model
from roofline_lessons.course.checkers import CORRECT, INCORRECT, NOT_ATTEMPTED
from roofline_lessons.course.checks import lesson06
from roofline_lessons.topics.flash import (BlockSizes, SRAMOverflowError, attention_flops, attention_layer_bytes,
                                           attention_matmul_flops, comparative, compulsory_hbm_bytes, fa2_block_sizes,
                                           flash2_hbm_bytes, flash_block_sizes, flash_hbm_bytes, naive_attention,
                                           standard_hbm_bytes, tiled_attention, tiled_attention_fa2,
                                           working_set_elements)
from roofline_lessons.viz.dashboards import lesson06_view
from roofline_lessons.viz.dashboards.lesson06 import tile_map

H100_SMEM = 233_472


# ---- the FlashAttention-2 order: exact, and the simulation equals its closed form -------------

@pytest.mark.parametrize("n", [1, 7, 64, 200, 333])
@pytest.mark.parametrize("d", [4, 16, 64])
@pytest.mark.parametrize("sram_kib", [2, 8, 32])
@pytest.mark.parametrize("causal", [False, True])
def test_fa2_order_is_exact_and_counts_match_the_closed_form(n, d, sram_kib, causal):
    sram = sram_kib * 1024
    try:
        flash_block_sizes(sram, d, 8)
    except SRAMOverflowError:
        pytest.skip("tiles do not fit")
    rng = np.random.default_rng(n * 1000 + d)
    q, k, v = (rng.standard_normal((n, d)) * 2 for _ in range(3))
    out, traffic = tiled_attention_fa2(q, k, v, sram, causal=causal)
    np.testing.assert_allclose(out, naive_attention(q, k, v, causal), atol=1e-12, rtol=0)
    assert traffic.sram_peak_bytes <= sram
    assert traffic.hbm_bytes == flash2_hbm_bytes(n, d, sram, 8, causal)
    # Algorithm 1 visits the same tiles (in another order) and is counted by its own closed form
    out1, traffic1 = tiled_attention(q, k, v, sram, causal=causal)
    assert sorted(traffic1.visited) == sorted(traffic.visited)
    assert traffic1.hbm_bytes == flash_hbm_bytes(n, d, sram, 8, causal)


def test_fa2_order_loop_structure_and_bytes_by_hand():
    rng = np.random.default_rng(3)
    n, d, sizes = 10, 4, BlockSizes(rows=4, cols=3, paper_rows=4, paper_cols=3)
    q, k, v = (rng.standard_normal((n, d)) for _ in range(3))
    out, t = tiled_attention_fa2(q, k, v, 10**6, block_sizes=sizes)
    assert [i for i, _ in t.visited] == sorted(i for i, _ in t.visited)  # query blocks outer
    t_r, t_c = math.ceil(n / 4), math.ceil(n / 3)
    assert t.hbm_read_bytes == (n * d + t_r * 2 * n * d) * 8  # Q once, K and V once per query block
    assert t.hbm_write_bytes == (n * d + n) * 8  # O and the log-sum-exp, once
    assert len(t.visited) == t_r * t_c
    _, t_no_lse = tiled_attention_fa2(q, k, v, 10**6, block_sizes=sizes, write_logsumexp=False)
    assert t_no_lse.hbm_write_bytes == n * d * 8
    assert flash2_hbm_bytes(n, d, 10**6, 8, block_sizes=sizes, write_logsumexp=False) == t_no_lse.hbm_bytes
    # causal: query block i reads only the key blocks starting at or before its last row
    _, tc = tiled_attention_fa2(q, k, v, 10**6, causal=True, block_sizes=sizes)
    assert tc.hbm_bytes == flash2_hbm_bytes(n, d, 10**6, 8, True, sizes)
    np.testing.assert_allclose(tiled_attention_fa2(q, k, v, 10**6, True, sizes)[0], naive_attention(q, k, v, True),
                               atol=1e-12)


def test_closed_forms_at_scale_follow_the_per_pair_rules():
    for d in (64, 128, 256):
        s = flash_block_sizes(H100_SMEM, d, 2)
        n = 1 << 17
        per_pair_fa2 = flash2_hbm_bytes(n, d, H100_SMEM, 2) / 2 / n**2
        per_pair_fa1 = flash_hbm_bytes(n, d, H100_SMEM, 2) / 2 / n**2
        assert per_pair_fa2 == pytest.approx(2 * d / s.rows, rel=0.01)
        assert per_pair_fa1 == pytest.approx((3 * d + 4) / s.cols, rel=0.02)  # O, Q read, O written; ℓ, m
    # head dim 256 in one H100 SM: both tiled orders move more bytes than standard attention (no cache reuse)
    assert flash2_hbm_bytes(1 << 17, 256, H100_SMEM, 2) > float(standard_hbm_bytes(1 << 17, 256))
    assert flash2_hbm_bytes(1 << 17, 128, H100_SMEM, 2) < float(standard_hbm_bytes(1 << 17, 128))


def test_fa2_order_refuses_overflow_and_bad_lengths():
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((64, 16)) for _ in range(3))
    with pytest.raises(SRAMOverflowError, match="SRAM bytes are free"):
        tiled_attention_fa2(q, k, v, 4096, block_sizes=BlockSizes(64, 64, 64, 64))
    for bad in (0, -3, 2.5, "8192", None, True, float("nan")):
        with pytest.raises(RooflineInputError, match="whole number"):
            flash2_hbm_bytes(bad, 64, H100_SMEM)



def test_fa2_order_with_fa1_tiles_moves_more_than_algorithm1_at_d128():
    """The lesson's answer to "what does FlashAttention-2's order save?": not HBM bytes in this model."""
    n = 1 << 17
    fa1 = flash_hbm_bytes(n, 128, H100_SMEM, 2) / 2 / n**2
    fa2 = flash2_hbm_bytes(n, 128, H100_SMEM, 2) / 2 / n**2
    assert fa2 > fa1  # 2d/B_r = 2.00 against (3d + 4)/B_c ≈ 1.80 with FlashAttention-1's tiles


def test_fa2_block_sizes_lift_the_fa1_cap():
    m = H100_SMEM // 2
    for d in (64, 128, 256):
        s = fa2_block_sizes(H100_SMEM, d, block_cols=64)
        assert s.cols == 64
        assert working_set_elements(s.rows, s.cols, d) <= m < working_set_elements(s.rows + 1, s.cols, d)
        assert s.rows > flash_block_sizes(H100_SMEM, d, 2).rows  # larger query blocks than B_r = min(M/4d, d)
        n = 1 << 17
        per_pair = flash2_hbm_bytes(n, d, H100_SMEM, 2, block_sizes=s) / 2 / n**2
        assert per_pair == pytest.approx(2 * d / s.rows, rel=0.01)  # re-reads fall as 2d/B_r
    assert fa2_block_sizes(H100_SMEM, 128).rows > 128  # FlashAttention-2 has no B_r ≤ d cap
    # the simulation accepts the uncapped tiles and stays exact and within the SRAM
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((300, 16)) for _ in range(3))
    s = fa2_block_sizes(16 * 1024, 16, block_cols=8, element_bytes=8)
    out, t = tiled_attention_fa2(q, k, v, 16 * 1024, causal=True, block_sizes=s)
    np.testing.assert_allclose(out, naive_attention(q, k, v, True), atol=1e-12)
    assert t.sram_peak_bytes <= 16 * 1024 and t.hbm_bytes == flash2_hbm_bytes(300, 16, 16 * 1024, 8, True, s)
    with pytest.raises(SRAMOverflowError):
        fa2_block_sizes(1024, 256, block_cols=64)
    with pytest.raises(SRAMOverflowError):
        fa2_block_sizes(H100_SMEM, 128, block_cols=0)


def test_fa3_measurements_carry_their_conditions():
    from roofline_lessons import get_part
    from roofline_lessons.topics.datasheets import best_measurement

    h100 = get_part("h100-sxm")
    for dtype in ("fp16", "fp8"):
        m = best_measurement(h100, "attention_flops_per_s", dtype)
        assert m.head_dim and m.causal is not None and m.sequence_length and m.conditions
    assert "verify" in best_measurement(h100, "attention_flops_per_s", "fp8").conditions

# ---- what the cost model charges vs what the tiled kernel moves ------------------------------

@pytest.mark.parametrize("n", [1024, 4096, 32768])
def test_compulsory_bytes_are_what_the_cost_model_charges(n):
    qwen = get_model("qwen3.8-27b")
    assert qwen.head_dim == 256
    layer = attention_layer_bytes(n, qwen.head_dim, qwen.num_attention_heads, qwen.num_key_value_heads, H100_SMEM)
    fused = next(op for op in model_cost(qwen, phase="prefill", prompt_tokens=n).ops if op.name.startswith("attention"))
    assert fused.activation_bytes + fused.kv_read_bytes == pytest.approx(layer.compulsory_bytes, rel=1e-12)
    assert fused.flops == pytest.approx(layer.flops, rel=1e-12)
    # per query head the floor is Q, O and K, V once each: the per-head compulsory count for MHA
    mha = attention_layer_bytes(n, 128, 8, 8, H100_SMEM)
    assert mha.compulsory_bytes == pytest.approx(8 * float(compulsory_hbm_bytes(n, 128)))
    assert layer.fa2_bytes == pytest.approx(qwen.num_attention_heads * flash2_hbm_bytes(n, 256, H100_SMEM, 2, True))
    assert layer.compulsory_bytes < layer.fa2_bytes < layer.fa1_bytes
    assert layer.compulsory_intensity_flop_per_byte > layer.fa2_intensity_flop_per_byte
    with pytest.raises(RooflineInputError):
        attention_layer_bytes(n, 256, 24, 5, H100_SMEM)


def test_matmul_flops_are_attention_flops_without_the_softmax():
    n, d = 16384, 256
    assert float(attention_matmul_flops(n, d)) == 4 * n * n * d
    assert float(attention_flops(n, d) - attention_matmul_flops(n, d)) == 5 * n * n
    assert float(attention_matmul_flops(n, d, causal=True)) == pytest.approx(2 * n * n * d, rel=1e-3)


# ---- comparative words come from the numbers ------------------------------------------------

def test_comparative_words():
    from roofline_lessons import get_part

    b200, h100 = get_part("b200").ridge_point_flop_per_byte("bf16"), get_part("h100-sxm").ridge_point_flop_per_byte("bf16")
    assert comparative(b200, h100) == ("lower than" if b200 < h100 else "higher than")
    assert comparative(2, 1) == "higher than" and comparative(1, 1) == "the same as"
    assert comparative(1.001, 1, ("above", "below", "at"), rel_tol=0.01) == "at"
    assert comparative(0.5, 1, ("above", "below", "at")) == "below"


def test_lesson06_prose_carries_no_hand_typed_comparison_of_the_ridges():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "py" / "notebooks" / "06_flashattention_tiling.py").read_text()
    assert "ridge is higher" not in text and "ridge is lower" not in text
    assert "removes the $N^2$ bytes" not in text


def test_lesson06_prose_fixes_stay_fixed():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    text = (root / "py" / "notebooks" / "06_flashattention_tiling.py").read_text()
    # the measurement's conditions come from the catalog, not from typed fallbacks
    assert "getattr(fa3" not in text and "or 256" not in text and "or 16384" not in text
    # compulsory bytes from HBM do not make attention compute-bound while the L2 roof is lower
    assert "is the compute roof:" not in text and "compute-bound." not in text.split("## What tiling does not fix")[0]
    assert "which is how real kernels reach" not in text
    # FlashAttention-1's block rule is named as borrowed; FA-2 imposes no B_r ≤ d cap
    assert "with the paper's\n# $B_r = \\min" not in text and "borrows" in text
    # the FA-3 figure is cited as the July 2024 preprint, and the L2 figure's part as uncertain
    assert "2407.08608" in text and "July 2024" in text and "Later\n# versions" in text
    joined = re.sub(r'"\s*\n\s*(?:\+\s*)?f?"', "", text)  # the prose as printed: string pieces joined
    assert "measured on an H100 PCIe" in joined and "no measurement of the SXM's own L2" in joined
    assert "may well deliver more" not in text  # the PCIe figures are not read as bounds on the SXM's L2
    # the FP8 rate is quoted with its conditions, not as a fraction of the FP8 peak
    assert "fa3_fp8.conditions" in text and "of the dense FP8 peak" not in text
    solution = (root / "py" / "solutions" / "06_flashattention_tiling.py").read_text()
    assert "N ≫ B_c" in solution


# ---- dashboard ------------------------------------------------------------------------------

def test_dashboard_shows_both_orders():
    fa1 = lesson06_view(8192, 128, 228, True)
    fa2 = lesson06_view(8192, 128, 228, True, order="fa2")
    kinds = list(fa1.intensity_by_kind)
    assert len(kinds) == 4 and fa1.intensity_by_kind == fa2.intensity_by_kind
    assert fa1.bytes_by_kind[kinds[2]] == flash2_hbm_bytes(8192, 128, 228 * 1024, 2, True)
    assert "FlashAttention-2" in fa1.text and "FlashAttention-1's rule" in fa1.text
    assert not np.array_equal(np.nan_to_num(fa1.tile_map, nan=-1), np.nan_to_num(fa2.tile_map, nan=-1))
    order2 = tile_map(10, 4, 3, False, order="fa2")
    assert list(order2[0]) == [0, 1, 2, 3]  # row by row: query blocks outer
    order1 = tile_map(10, 4, 3, False)
    assert list(order1[:, 0]) == [0, 1, 2]  # column by column: key blocks outer
    with pytest.raises(RooflineInputError):
        tile_map(10, 4, 3, False, order="fa3")


# ---- checker 6.4 -----------------------------------------------------------------------------

def _merge(m1, l1, m2, l2):
    m = max(m1, m2)
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


def test_online_softmax_checker():
    assert lesson06.online_softmax(_merge).status == CORRECT
    assert lesson06.online_softmax(lambda *a: np.array(_merge(*a))).status == CORRECT

    def stub(m1, l1, m2, l2):
        return ...

    r = lesson06.online_softmax(stub)
    assert r.status == NOT_ATTEMPTED and "pair" in r.message and "returns a number" not in r.message
    cases = {
        "l1 + l2": lambda m1, l1, m2, l2: (max(m1, m2), l1 + l2),
        "sign is flipped": lambda m1, l1, m2, l2: (max(m1, m2), l1 * math.exp(max(m1, m2) - m1)
                                                    + l2 * math.exp(max(m1, m2) - m2)),
        "order is (m, l)": lambda *a: _merge(*a)[::-1],
        "larger of the two maxima": lambda m1, l1, m2, l2: (min(m1, m2), _merge(m1, l1, m2, l2)[1]),
        "not a pair": lambda *a: 3.0,
        "3 values": lambda *a: (1.0, 2.0, 3.0),
        "ZeroDivisionError": lambda *a: 1 / 0,
    }
    for words, fn in cases.items():
        r = lesson06.online_softmax(fn)
        assert r.status == INCORRECT and words in r.message, (words, r.message)
    wrong_sum = lesson06.online_softmax(cases["l1 + l2"])
    assert wrong_sum.message.count("(m, l) =") == 1 and "expected (" in wrong_sum.message  # both values shown
    for odd in ("merge", 3, [1, 2], lambda *a: "x", lambda *a: None, lambda *a: (None, 1.0), lambda *a: {"m": 1}):
        assert not lesson06.online_softmax(odd).passed
