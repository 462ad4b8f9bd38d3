"""Lesson 6: FlashAttention-3's real forward tile (hopper/tile_size.h, flash_fwd_launch_template.h), the
L2-side intensity of a tile with and without K/V multicast across a cluster, and the lesson's use of both."""

from pathlib import Path

import pytest

from roofline_lessons import get_part
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.topics.datasheets import best_measurement
from roofline_lessons.topics.flash import (FA3_TILE_SOURCE, BlockSizes, cluster_tile_l2_traffic, fa3_forward_tiles,
                                           flash2_hbm_bytes, l2_bandwidth_figures)

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

def test_the_catalog_holds_both_l2_figures_of_the_article():
    """M1: chips-and-cheese measured over 5.5 TB/s from the near L2 partition and about 3.8 TB/s across the whole
    50 MB, on an H100 PCIe; both are filed, labelled, and neither is called a lower bound for the SXM."""
    figs = l2_bandwidth_figures("h100-sxm")
    assert [m.value for m in figs] == [5.5e12, 3.8e12]
    assert [m.kernel for m in figs] == ["read, near L2 partition", "read, whole L2, both partitions"]
    for m in figs:
        assert "H100 PCIe" in m.conditions and "OpenCL" in m.conditions and m.date == "2023-07-02"
        assert "lower bound" not in (m.conditions + m.what).lower() and "below" not in m.what.lower()
    assert best_measurement("h100-sxm", "l2_bandwidth_bytes_per_s") is figs[0]
    with pytest.raises(RooflineInputError, match="'a100-80gb'"):
        l2_bandwidth_figures("a100-80gb")


def test_the_fa3_entry_carries_what_the_paper_states():
    """N9: the paper's appendix C.1 gives the GPU (H100 80GB SXM5, 700 W), a fixed 1,830 MHz clock, CUDA 12.3."""
    fa3 = best_measurement("h100-sxm", "attention_flops_per_s", "fp16")
    assert "CUDA 12.3" in fa3.software and "CUTLASS 3.5" in fa3.software
    assert "700 W" in fa3.conditions and "1,830 MHz" in fa3.conditions and "100 runs" in fa3.conditions


def test_catalog_figures_keep_the_lessons_comparisons():
    h100 = get_part("h100-sxm")
    fa3 = best_measurement(h100, "attention_flops_per_s", "fp16")
    t = fa3_forward_tiles(fa3.head_dim, fa3.causal, fa3.sequence_length)
    mc = cluster_tile_l2_traffic(t.block_rows, t.block_cols, fa3.head_dim, fa3.sequence_length, 2, t.cluster_ctas)
    solo = cluster_tile_l2_traffic(t.block_rows, t.block_cols, fa3.head_dim, fa3.sequence_length, 2, 1)
    peak = h100.peak_flops_per_s("fp16")
    near, whole = l2_bandwidth_figures(h100)
    # at both figures: no multicast below the measurement, multicast above it
    for l2 in (near, whole):
        assert solo.l2_roof_flop_per_s(l2.value) < fa3.value < mc.l2_roof_flop_per_s(l2.value)
    # above the compute peak only at the near-partition figure (the reader's 958 < 989 at 3.8 TB/s)
    assert mc.l2_roof_flop_per_s(near.value) > peak > mc.l2_roof_flop_per_s(whole.value)
    assert mc.l2_roof_flop_per_s(whole.value) == pytest.approx(958e12, rel=1e-3)
    assert solo.l2_roof_flop_per_s(whole.value) == pytest.approx(482.6e12, rel=1e-3)
    assert mc.shared_memory_bytes <= h100.shared_memory_per_sm_bytes - KiB


def test_lesson06_explains_fa3_with_its_own_tile_and_multicast():
    text = (ROOT / "py" / "notebooks" / "06_flashattention_tiling.py").read_text()
    section = text.split("## The missing roof")[1].split("## What tiling does not fix")[0]
    # the hypothetical uncapped tile is gone; FA3's launch tile and its multicast come from package calls
    assert "free_fa3" not in section and "fa2_block_sizes(sram, fa3_d" not in section
    assert "fa3_forward_tiles(fa3_d, fa3_causal, fa3_n)" in section and "cluster_tile_l2_traffic(" in section
    assert "**multicast**" in section and "FA3_TILE_SOURCE" in section
    # both L2 figures, and the comparisons asserted beside the words at each
    assert "l2_bandwidth_figures(h100)" in section
    assert "assert all(solo_slope[m.kernel] < fa3.value < mc_slope[m.kernel] for m in l2_figs)" in section
    assert "assert [m.kernel for m in clears] == [l2_near.kernel]" in section
    # the 5.5 TB/s figure is no longer called a lower bound for the SXM, nor the roof "probably low"
    assert "lower bound for the SXM" not in text and "probably low" not in text
    assert "multicast" in text.split("## Summary")[1]


def test_fa3_tile_source_cites_no_undated_version():
    """N1: the older launch template is identified by its text and year, not as 'an early 2024 version'."""
    assert "early 2024" not in FA3_TILE_SOURCE
    assert "Flash_fwd_kernel_traits<256, 128, 80, 12, 2, false, !Is_causal ? 2 : 1>" in FA3_TILE_SOURCE
    assert "07602adc" in FA3_TILE_SOURCE and "000090d0" in FA3_TILE_SOURCE
