"""roofline_lessons.topics.kernels and the catalog's compute-unit counts: arithmetic checked by hand,
the directions the figures must move, arrays in and out, and errors that name the bad value."""

import ast
import copy
import re
from pathlib import Path

import numpy as np
import pytest

from roofline_lessons.core import hardware
from roofline_lessons.core._catalog import load_catalog
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.hardware import COMPUTE_UNIT_NAMES, get_part, list_parts
from roofline_lessons.core.models import get_model
from roofline_lessons.core.placement import place
from roofline_lessons.topics import kernels as k
from roofline_lessons.topics.many_chips import one_all_reduce

H100 = "h100-sxm"


# ---- the catalog's compute units --------------------------------------------------------------

@pytest.mark.parametrize("pid,units,name", [
    ("h100-sxm", 132, "SM"), ("h100-pcie", 114, "SM"), ("a100-80gb", 108, "SM"), ("a100-40gb", 108, "SM"),
    ("h200", 132, "SM"), ("b200", 148, "SM"), ("l40s", 142, "SM"), ("rtx-4090", 128, "SM"),
    ("rtx-pro-6000", 188, "SM"), ("mi300x", 304, "CU"), ("mi325x", 304, "CU"), ("mi355x", 256, "CU"),
    ("tpu-v5e", 1, "TensorCore"), ("tpu-v5p", 2, "TensorCore"), ("tpu-v6e", 1, "TensorCore"),
    ("tpu-v7", 2, "TensorCore")])
def test_catalog_compute_units(pid, units, name):
    p = get_part(pid)
    assert (p.compute_units, p.compute_unit_name) == (units, name)


def test_every_count_has_its_source_and_date_and_every_gap_says_why():
    absent = []
    for pid in list_parts():
        p = get_part(pid)
        if p.compute_units is None:
            absent.append(pid)
            assert p.compute_unit_name is None and not p.compute_units_source
            assert p.compute_units_note.startswith("Absent"), pid
        else:
            assert p.compute_unit_name in COMPUTE_UNIT_NAMES
            assert len(p.compute_units_source) > 40, pid
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", p.compute_units_as_of), pid
    # no primary source read gives these; they stay absent rather than borrowed from a sibling part
    assert set(absent) == {"gb200", "l4", "h800", "b300", "gb300"}


def _entry(pid="h100-sxm"):
    return copy.deepcopy(load_catalog("hardware.toml")["parts"][pid])


@pytest.mark.parametrize("change,message", [
    ({"compute_units": 0}, "whole number >= 1"),
    ({"compute_units": 13.5}, "whole number >= 1"),
    ({"compute_unit_name": "core"}, "compute_unit_name must be one of"),
    ({"compute_units_source": ""}, "without compute_units_source"),
])
def test_loader_refuses_a_bad_compute_unit_entry(change, message):
    entry = _entry()
    entry.update(change)
    with pytest.raises(ValueError, match=message):
        hardware._part_from_entry("h100-sxm", entry)


def test_loader_refuses_a_name_or_source_without_the_count():
    entry = _entry()
    del entry["compute_units"]
    with pytest.raises(ValueError, match="without compute_units"):
        hardware._part_from_entry("h100-sxm", entry)


# ---- decode attention grids -------------------------------------------------------------------

def test_decode_attention_ctas_by_hand_and_over_arrays():
    assert k.decode_attention_ctas(4, 8, 2) == 64
    assert isinstance(k.decode_attention_ctas(4, 8), int)
    out = k.decode_attention_ctas(np.array([1, 4, 16]), 8)
    assert isinstance(out, np.ndarray) and out.tolist() == [8, 32, 128]


@pytest.mark.parametrize("bad", [0, 1.5, -2, True, "8", None, float("nan")])
def test_decode_attention_ctas_names_the_bad_batch(bad):
    with pytest.raises(RooflineInputError, match=r"batch must be a whole number >= 1, got " + re.escape(repr(bad))):
        k.decode_attention_ctas(bad, 8)


def test_bad_element_of_an_array_is_named():
    with pytest.raises(RooflineInputError, match=r"kv_heads must be whole numbers >= 1, got 0 in array\(\[8, 0\]\)"):
        k.decode_attention_ctas(1, np.array([8, 0]))


def test_sm_fill_by_hand_and_it_never_falls_as_ctas_grow():
    assert k.sm_fill(H100, 8) == pytest.approx(8 / 132)
    assert k.sm_fill(H100, 132) == 1.0 and k.sm_fill(H100, 1000) == 1.0
    assert k.sm_fill("h100-pcie", 57) == pytest.approx(0.5)
    fills = k.sm_fill(H100, np.arange(1, 300))
    assert isinstance(fills, np.ndarray) and np.all(np.diff(fills) >= 0) and fills.max() == 1.0


def test_sm_fill_refuses_parts_without_a_count_and_tpus():
    with pytest.raises(RooflineInputError, match=r"gb200 has no compute-unit count.*parts that have one: .*h100-sxm"):
        k.sm_fill("gb200", 8)
    with pytest.raises(RooflineInputError, match=r"tpu-v5p's compute units are TensorCores, which run no"):
        k.sm_fill("tpu-v5p", 8)
    with pytest.raises(RooflineInputError, match=r"ctas must be a whole number >= 1, got 0"):
        k.sm_fill(H100, 0)


def test_flash_decoding_splits_by_hand():
    # batch 1 × 8 KV heads on 132 SMs: ceil(132 / 8) = 17 splits, 136 CTAs; 16 would leave SMs idle
    s = k.flash_decoding_splits(H100, batch=1, kv_heads=8, context_tokens=32768)
    assert s == 17
    assert k.decode_attention_ctas(1, 8, s) >= 132 > k.decode_attention_ctas(1, 8, s - 1)
    # a 1,024-token context holds at most 1024 // 256 = 4 splits of 256 tokens
    assert k.flash_decoding_splits(H100, batch=1, kv_heads=8, context_tokens=1024) == 4
    assert k.flash_decoding_splits(H100, batch=1, kv_heads=8, context_tokens=1024, min_tokens_per_split=64) == 16
    # 32 × 8 = 256 CTAs already fill the SMs: no split
    assert k.flash_decoding_splits(H100, batch=32, kv_heads=8, context_tokens=32768) == 1
    # a context shorter than one split's minimum is not split
    assert k.flash_decoding_splits(H100, batch=1, kv_heads=8, context_tokens=100) == 1


def test_flash_decoding_splits_fall_as_the_batch_grows_and_take_arrays():
    s = k.flash_decoding_splits(H100, batch=np.arange(1, 40), kv_heads=8, context_tokens=65536)
    assert isinstance(s, np.ndarray) and np.all(np.diff(s) <= 0) and s[0] == 17 and s[-1] == 1
    with pytest.raises(RooflineInputError, match=r"context_tokens must be a whole number >= 1, got 0"):
        k.flash_decoding_splits(H100, batch=1, kv_heads=8, context_tokens=0)


def test_split_kv_combine_bytes_by_hand():
    # 17 splits write and the combine reads 1 × 32 rows × (128 + 1) FP32 values each
    assert k.split_kv_combine_bytes(1, 32, 128, 17) == 2 * 17 * 32 * 129 * 4
    assert k.split_kv_combine_bytes(1, 32, 128, 17, stats_per_row=2) == 2 * 17 * 32 * 130 * 4
    assert k.split_kv_combine_bytes(8, 32, 128, 1) == 0.0
    out = k.split_kv_combine_bytes(1, 32, 128, np.array([1, 2, 4]))
    assert out.tolist() == [0.0, 2 * 2 * 32 * 129 * 4, 2 * 4 * 32 * 129 * 4]


def test_decode_attention_time_with_sm_limit_by_hand():
    bw = get_part(H100).memory_bandwidth_bytes_per_s
    assert k.decode_attention_time_with_sm_limit_s(H100, kv_bytes=1e9, ctas=8) == pytest.approx(1e9 / bw * 132 / 8)
    # every SM busy: the estimate meets the bandwidth bound
    assert k.decode_attention_time_with_sm_limit_s(H100, kv_bytes=1e9, ctas=264) == pytest.approx(1e9 / bw)
    t = k.decode_attention_time_with_sm_limit_s(H100, kv_bytes=1e9, ctas=np.arange(1, 200))
    assert np.all(np.diff(t[:132]) <= 0) and t.min() == pytest.approx(1e9 / bw)
    # one CTA past the SM count starts a second wave: 133 CTAs take 2 × 132 / 133 of one full wave
    assert t[132] == pytest.approx(1e9 / bw * 2 * 132 / 133)
    assert k.decode_attention_time_with_sm_limit_s(H100, kv_bytes=1e9, ctas=136) > \
        k.decode_attention_time_with_sm_limit_s(H100, kv_bytes=1e9, ctas=128)
    with pytest.raises(RooflineInputError, match=r"kv_bytes must be a number > 0, got -1"):
        k.decode_attention_time_with_sm_limit_s(H100, kv_bytes=-1, ctas=8)


# ---- GQA packing --------------------------------------------------------------------------

def test_gqa_mma_m_fill_by_hand():
    assert k.gqa_mma_m_fill(8) == pytest.approx(8 / 64)
    assert k.gqa_mma_m_fill(8, packed=False) == pytest.approx(1 / 64)
    assert k.gqa_mma_m_fill(8, query_tokens=16) == 1.0  # 128 rows fill two 64-row tiles
    assert k.gqa_mma_m_fill(3, query_tokens=30) == pytest.approx(90 / 128)
    assert k.gqa_mma_m_fill(8, mma_m=16) == pytest.approx(8 / 16)


def test_packing_never_fills_fewer_rows_than_one_head_at_a_time():
    g = np.arange(1, 17)[:, None]
    t = np.arange(1, 9)[None, :]
    packed, alone = k.gqa_mma_m_fill(g, t), k.gqa_mma_m_fill(g, t, packed=False)
    assert packed.shape == (16, 8) and np.all(packed >= alone - 1e-12)
    with pytest.raises(RooflineInputError, match="packed must be True or False"):
        k.gqa_mma_m_fill(8, packed="yes")


# ---- waves and tiles ----------------------------------------------------------------------

def test_wave_quantization_by_hand():
    one = k.wave_quantization(132, 132)
    assert (one.waves, one.efficiency, one.idle_fraction, one.last_wave_tiles) == (1, 1.0, 0.0, 132)
    two = k.wave_quantization(133, H100)
    assert two.compute_units == 132 and two.waves == 2 and two.last_wave_tiles == 1
    assert two.efficiency == pytest.approx(133 / 264)
    arr = k.wave_quantization(np.array([66, 132, 133, 264]), 132)
    assert arr.waves.tolist() == [1, 1, 2, 2] and arr.efficiency.tolist() == pytest.approx([0.5, 1, 133 / 264, 1])
    with pytest.raises(RooflineInputError, match=r"tiles must be a whole number >= 1, got 0"):
        k.wave_quantization(0, 132)
    with pytest.raises(RooflineInputError, match=r"compute_units must be a whole number >= 1, got -4"):
        k.wave_quantization(10, -4)


def test_gemm_tiles_and_tile_quantization_by_hand():
    assert k.gemm_output_tiles(4096, 4096) == 32 * 32
    assert k.gemm_output_tiles(129, 128) == 2
    assert k.tile_quantization_efficiency(8, 4096, 128, 128) == pytest.approx(8 / 128)
    assert k.tile_quantization_efficiency(128, 256, 128, 128) == 1.0
    assert k.tile_quantization_efficiency(129, 128, 128, 128) == pytest.approx(129 / 256)
    eff = k.tile_quantization_efficiency(np.arange(1, 129), 128, 128, 128)
    assert np.all(np.diff(eff) > 0) and eff[-1] == 1.0


def test_split_k_tiles_by_hand():
    # m = 8 tokens, n = 4096: 32 output tiles of 128 × 128; 4 K slices make 128 CTAs
    assert k.split_k_tiles(8, 4096, 4096, 4) == 128
    assert k.wave_quantization(k.split_k_tiles(8, 4096, 4096, 4), H100).efficiency > \
        k.wave_quantization(k.gemm_output_tiles(8, 4096), H100).efficiency
    with pytest.raises(RooflineInputError, match=r"splits must be at most k.*splits=9 for k=8"):
        k.split_k_tiles(8, 4096, 8, 9)


# ---- all-reduce algorithms ------------------------------------------------------------------

def _h100_link():
    return get_part(H100).scale_up_link


def test_allreduce_times_by_hand():
    lk = _h100_link()
    lat, bw, S, n = lk.latency_s, lk.per_direction_bytes_per_s, 1e6, 8
    ring = 2 * (n - 1) / n * S
    assert k.allreduce_time_s(S, n, lk, "ring") == pytest.approx(2 * (n - 1) * lat + ring / bw)
    assert k.allreduce_time_s(S, n, lk, "two_shot") == pytest.approx(2 * lat + ring / bw)
    assert k.allreduce_time_s(S, n, lk, "one_shot") == pytest.approx(lat + (n - 1) * S / bw)
    assert k.allreduce_time_s(S, n, lk, "in_switch") == pytest.approx(lat + S / bw)
    assert k.allreduce_time_s(S, n, H100, "ring") == k.allreduce_time_s(S, n, lk, "ring")  # a part: its link
    assert k.allreduce_time_s(S, n, lk, "ring", step_latency_s=1e-6) == pytest.approx(14e-6 + ring / bw)


def test_allreduce_agrees_with_the_course_collective_pricing():
    ar = one_all_reduce(H100, 8, 1e6)
    assert k.allreduce_lower_bound_s(1e6, 8, H100) == pytest.approx(ar.bound_time_s)
    assert k.allreduce_time_s(1e6, 8, H100, "ring", step_latency_s=0) == pytest.approx(ar.bandwidth_s)
    a100 = one_all_reduce("a100-80gb", 8, 1e6)  # no in-switch reduction: the least bytes are the ring's
    assert k.allreduce_lower_bound_s(1e6, 8, "a100-80gb") == pytest.approx(a100.bound_time_s)


def test_the_bound_is_below_every_algorithm_and_the_crossover_moves_with_size():
    sizes = np.logspace(3, 10, 30)
    bound = k.allreduce_lower_bound_s(sizes, 8, H100)
    assert isinstance(bound, np.ndarray) and bound.shape == sizes.shape
    for algo in k.ALLREDUCE_ALGORITHMS:
        t = k.allreduce_time_s(sizes, 8, H100, algo)
        assert np.all(t >= bound * (1 - 1e-12)) and np.all(np.diff(t) > 0), algo
    assert k.allreduce_time_s(sizes, 8, H100, "in_switch", step_latency_s=0) == pytest.approx(bound)
    small, big = 16e3, 1e9  # one-shot wins where latency rules, two-shot where bytes do
    assert k.allreduce_time_s(small, 8, H100, "one_shot") < k.allreduce_time_s(small, 8, H100, "two_shot")
    assert k.allreduce_time_s(big, 8, H100, "two_shot") < k.allreduce_time_s(big, 8, H100, "one_shot")
    assert k.allreduce_time_s(small, 8, H100, "one_shot") < k.allreduce_time_s(small, 8, H100, "ring")


def test_allreduce_refusals_name_the_value():
    with pytest.raises(RooflineInputError, match=r"algorithm 'tree'; algorithms are: ring, one_shot"):
        k.allreduce_time_s(1e6, 8, H100, "tree")
    with pytest.raises(RooflineInputError, match=r"NVLink 3.*does not reduce in the switch.*'in_switch'"):
        k.allreduce_time_s(1e6, 8, "a100-80gb", "in_switch")
    with pytest.raises(RooflineInputError, match=r"chips=16 exceeds the .* domain of 8 chips"):
        k.allreduce_time_s(1e6, 16, _h100_link(), "ring")
    with pytest.raises(RooflineInputError, match=r"chips must be a whole number >= 2, got 1"):
        k.allreduce_lower_bound_s(1e6, 1, H100)
    with pytest.raises(RooflineInputError, match=r"message_bytes must be a number > 0, got 0"):
        k.allreduce_time_s(0, 8, H100)
    with pytest.raises(RooflineInputError, match=r"message_bytes must be numbers > 0, got inf in"):
        k.allreduce_time_s(np.array([1e6, np.inf]), 8, H100)
    with pytest.raises(RooflineInputError, match=r"link must be a catalog Link"):
        k.allreduce_time_s(1e6, 8, 450e9)


# ---- logits -----------------------------------------------------------------------------------

def test_logits_cost_by_hand():
    c = k.logits_cost("llama-3.1-8b", 8)
    h, v = 4096, 128256
    assert (c.hidden_size, c.vocab_size) == (h, v)
    assert c.lm_head_flops == 2 * h * v * 8
    assert c.lm_head_weight_bytes == h * v * 2
    assert c.logits_write_bytes == 8 * v * 4
    assert c.sampling_passes == k.DEFAULT_SAMPLING_PASSES == 3
    assert c.logits_read_bytes == 3 * 8 * v * 4
    assert c.total_bytes == h * v * 2 + 4 * 8 * v * 4
    assert c.intensity_flop_per_byte == pytest.approx(c.lm_head_flops / c.total_bytes)
    greedy = k.logits_cost("llama-3.1-8b", 8, sampling_passes=1, logits_dtype_bytes=2)
    assert greedy.logits_read_bytes == 8 * v * 2


def test_logits_cost_over_a_batch_array():
    c = k.logits_cost(get_model("qwen3-8b"), np.array([1, 16, 256]))
    assert isinstance(c.lm_head_flops, np.ndarray)
    assert np.all(np.diff(c.intensity_flop_per_byte) > 0)  # the weights are shared by the batch
    with pytest.raises(RooflineInputError, match=r"batch must be whole numbers >= 1, got -1 in"):
        k.logits_cost("qwen3-8b", np.array([1, -1]))
    with pytest.raises(RooflineInputError, match="unknown model id"):
        k.logits_cost("gpt-9", 1)


def test_logits_share_of_decode_step():
    s = k.logits_share_of_decode_step("llama-3.1-8b", H100, 1, 4096)
    pl = place("llama-3.1-8b", H100, phase="decode", batch=1, context_tokens=4096)
    row = next(r for r in pl.op_rows() if r["name"] == "lm_head")
    assert s.lm_head_time_estimate_s == pytest.approx(float(row["time_estimate_s"]))
    bw = get_part(H100).memory_bandwidth_bytes_per_s
    assert s.sampling_time_estimate_s == pytest.approx(3 * 128256 * 2 / bw)
    assert s.step_time_estimate_s == pytest.approx(float(pl.time_estimate_per_op_sum_s) + s.sampling_time_estimate_s)
    assert 0 < s.share_estimate < 1 and 0 < s.lm_head_share_of_compulsory_bytes < 1
    # a longer context adds KV reads the lm_head does not share: its share falls
    arr = k.logits_share_of_decode_step("llama-3.1-8b", H100, 1, np.array([1024, 8192, 65536]))
    assert isinstance(arr.share_estimate, np.ndarray) and np.all(np.diff(arr.share_estimate) < 0)


# ---- layers ---------------------------------------------------------------------------------

def test_kernels_imports_only_from_core():
    tree = ast.parse(Path(k.__file__).read_text(encoding="utf-8"))
    targets = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert targets and all(t.startswith("core") for t in targets), targets


def test_wave_efficient_splits_stay_in_one_wave():
    # 8 KV heads at batch 1 on 132 SMs: 15 splits (120 CTAs, 91 % of one wave) reach 85 % of the best
    # efficiency (33 splits fill exactly two waves); 14 (112 CTAs, 85 %) do not
    assert k.wave_efficient_splits(H100, batch=1, kv_heads=8, context_tokens=65536) == 15
    assert k.flash_decoding_splits(H100, batch=1, kv_heads=8, context_tokens=65536) == 17
    # batch × KV heads already fill 80 % of the SMs: no split
    assert k.wave_efficient_splits(H100, batch=32, kv_heads=8, context_tokens=65536) == 1
    # a short context caps the splits (256 tokens each at least)
    assert k.wave_efficient_splits(H100, batch=1, kv_heads=8, context_tokens=1024) <= 4
    with pytest.raises(RooflineInputError, match="kv_heads"):
        k.wave_efficient_splits(H100, batch=1, kv_heads=0, context_tokens=1024)
