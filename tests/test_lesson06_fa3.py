"""Lesson 6: FlashAttention-3's real forward tile (hopper/tile_size.h, flash_fwd_launch_template.h), the
L2-side intensity of a tile with and without K/V multicast across a cluster, and the lesson's use of both."""

from pathlib import Path

import pytest

from roofline_lessons import get_part
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.topics.datasheets import best_measurement
from roofline_lessons.topics.flash import (FA3_TILE_SOURCE, BlockSizes, cluster_tile_l2_traffic, fa3_forward_tiles,
                                           flash2_hbm_bytes)

KiB = 1024
ROOT = Path(__file__).resolve().parents[1]


# ---- the launch code's tile choice ----------------------------------------------------------

@pytest.mark.parametrize("head_dim, causal, expected", [
    (64, False, (192, 192)), (64, True, (192, 128)),
    (96, False, (192, 144)), (96, True, (192, 144)),
    (128, False, (128, 176)), (128, True, (128, 128)),
    (192, False, (128, 112)), (192, True, (128, 112)),
    (256, False, (128, 80)), (256, True, (128, 80)),
])
def test_fa3_tiles_follow_tile_size_fwd_sm90(head_dim, causal, expected):
    t = fa3_forward_tiles(head_dim, causal, 16384)
    assert (t.block_rows, t.block_cols) == expected and t.stages == 2


def test_fa3_cluster_rule():
    assert fa3_forward_tiles(256, False, 16384).cluster_ctas == 2  # 128 query blocks: even
    assert fa3_forward_tiles(128, False, 16384).cluster_ctas == 2
    assert fa3_forward_tiles(256, True, 16384).cluster_ctas == 1  # causal: no cluster
    assert fa3_forward_tiles(256, False, 3 * 128).cluster_ctas == 1  # 3 query blocks: odd
    assert fa3_forward_tiles(256, False, 3 * 128 + 1).cluster_ctas == 2  # ⌈N/128⌉ = 4
    assert fa3_forward_tiles(64, False, 16384).cluster_ctas == 1  # 16-bit clusters need head dim ≥ 128
    assert "tile_size.h" in FA3_TILE_SOURCE and "flash_fwd_launch_template.h" in FA3_TILE_SOURCE


@pytest.mark.parametrize("kwargs", [dict(head_dim=0), dict(head_dim=512), dict(head_dim="256"), dict(head_dim=True),
                                    dict(seqlen_q=0), dict(seqlen_q=2.5), dict(element_bytes=1)])
def test_fa3_tiles_refuse_bad_input(kwargs):
    args = dict(head_dim=256, causal=False, seqlen_q=16384) | kwargs
    with pytest.raises(RooflineInputError) as err:
        fa3_forward_tiles(**args)
    assert repr(list(kwargs.values())[0]) in str(err.value)


# ---- L2-side intensity, with and without multicast --------------------------------------------

def test_fa3_head_dim_256_intensity_and_l2_roof():
    t = fa3_forward_tiles(256, False, 16384)
    mc = cluster_tile_l2_traffic(t.block_rows, t.block_cols, 256, 16384, 2, t.cluster_ctas, t.stages)
    solo = cluster_tile_l2_traffic(t.block_rows, t.block_cols, 256, 16384, 2, 1, t.stages)
    assert mc.intensity_flop_per_byte == pytest.approx(252.05, abs=0.01)
    assert solo.intensity_flop_per_byte == pytest.approx(127.00, abs=0.01)
    assert solo.l2_roof_flop_per_s(5.5e12) == pytest.approx(698.5e12, rel=1e-3)
    # by hand: 4·128·16384·256 FLOPs over Q + O (128·256·2 each) + LSE (128·4) + K, V (2·16384·256·2) ÷ 2
    assert mc.flops == 4 * 128 * 16384 * 256
    assert mc.l2_bytes == 2 * 128 * 256 * 2 + 128 * 4 + 2 * 16384 * 256 * 2 / 2
    assert mc.kv_l2_bytes * 2 == solo.kv_l2_bytes
    # the shared memory: Q tile and two stages of K and V tiles, 224 KiB of the 227 KiB one block may use
    assert mc.shared_memory_bytes == 224 * KiB <= 227 * KiB
    wider = cluster_tile_l2_traffic(128, 96, 256, 16384, 2, 1, 2)
    assert wider.shared_memory_bytes == 256 * KiB > 227 * KiB


@pytest.mark.parametrize("br, bc, d, n", [(128, 80, 256, 16384), (64, 64, 64, 4096), (192, 128, 128, 1920)])
def test_without_multicast_the_traffic_is_the_fa2_order_count(br, bc, d, n):
    """Per query block times the query blocks = flash2_hbm_bytes with the same tiles (N a multiple of B_r,
    the log-sum-exp in the element size as flash2_hbm_bytes counts it)."""
    per_block = cluster_tile_l2_traffic(br, bc, d, n, 2, 1, lse_bytes_per_row=2)
    assert per_block.l2_bytes * (n // br) == flash2_hbm_bytes(n, d, 0, 2, False, BlockSizes(br, bc, 0, 0))


def test_multicast_acts_like_a_taller_query_block():
    for c in (1, 2, 4):
        t = cluster_tile_l2_traffic(128, 80, 128, 1 << 22, 2, c)
        assert t.intensity_flop_per_byte == pytest.approx(2 * 128 * c / 2, rel=0.01)  # ≈ 2·B_r·C / b


@pytest.mark.parametrize("kwargs", [dict(block_rows=0), dict(block_cols=1.5), dict(head_dim=None), dict(keys=-1),
                                    dict(element_bytes=0), dict(multicast_ctas=0), dict(stages=False),
                                    dict(lse_bytes_per_row=-4)])
def test_cluster_tile_traffic_refuses_bad_input(kwargs):
    args = dict(block_rows=128, block_cols=80, head_dim=256, keys=16384) | kwargs
    with pytest.raises(RooflineInputError) as err:
        cluster_tile_l2_traffic(**args)
    assert repr(list(kwargs.values())[0]) in str(err.value)


# ---- the lesson's claims hold for the catalog's figures ---------------------------------------

def test_catalog_figures_keep_the_lessons_comparisons():
    h100 = get_part("h100-sxm")
    fa3 = best_measurement(h100, "attention_flops_per_s", "fp16")
    l2 = best_measurement(h100, "l2_bandwidth_bytes_per_s")
    assert "H100 PCIe" in l2.conditions
    t = fa3_forward_tiles(fa3.head_dim, fa3.causal, fa3.sequence_length)
    mc = cluster_tile_l2_traffic(t.block_rows, t.block_cols, fa3.head_dim, fa3.sequence_length, 2, t.cluster_ctas)
    solo = cluster_tile_l2_traffic(t.block_rows, t.block_cols, fa3.head_dim, fa3.sequence_length, 2, 1)
    peak = h100.peak_flops_per_s("fp16")
    assert solo.l2_roof_flop_per_s(l2.value) < fa3.value < peak < mc.l2_roof_flop_per_s(l2.value)
    assert mc.shared_memory_bytes <= h100.shared_memory_per_sm_bytes - KiB


def test_lesson06_explains_fa3_with_its_own_tile_and_multicast():
    text = (ROOT / "py" / "notebooks" / "06_flashattention_tiling.py").read_text()
    section = text.split("## The missing roof")[1].split("## What tiling does not fix")[0]
    # the hypothetical uncapped tile is gone; FA3's launch tile and its multicast come from package calls
    assert "free_fa3" not in section and "fa2_block_sizes(sram, fa3_d" not in section
    assert "fa3_forward_tiles(fa3_d, fa3_causal, fa3_n)" in section and "cluster_tile_l2_traffic(" in section
    assert "**multicast**" in section and "FA3_TILE_SOURCE" in section
    # the comparisons are asserted beside the words
    assert "assert fa3_solo.l2_roof_flop_per_s(l2.value) < fa3.value < peak16 < fa3_mc.l2_roof_flop_per_s" in section
    assert "likely a lower bound for the SXM" in section and "measured on an H100 PCIe" in section
    assert "multicast" in text.split("## Summary")[1]
