import numpy as np
import pytest

from roofline_lessons import place
from roofline_lessons.core.costs import Workload
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.memory import footprint, max_batch_that_fits, weight_bytes
from roofline_lessons.core.units import MiB


def test_seed_lesson_numbers_hold():
    d1 = place("qwen3.8-27b", "h100-sxm", phase="decode", batch=1)
    assert d1.bound == "memory"
    assert d1.fraction_of_peak == pytest.approx(0.0034, rel=0.05)  # "about 0.34 percent of peak"
    d32 = place("qwen3.8-27b", "h100-sxm", phase="decode", batch=32)
    assert d32.intensity_per_weight_byte == pytest.approx(32, rel=0.02)
    assert d32.bandwidth_bytes_per_s * d32.intensity_per_weight_byte == pytest.approx(107e12, rel=0.02)
    assert d32.intensity < d32.intensity_per_weight_byte  # each sequence brings its own state
    pf = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192)
    assert pf.bound == "compute"
    assert pf.intensity_per_weight_byte / pf.ridge_point_flop_per_byte == pytest.approx(27, rel=0.05)


def test_time_bound_matches_attainable():
    p = place("llama-3.1-8b", "a100-80gb", phase="decode", batch=1, context_tokens=1000)
    assert p.time_estimate_s == pytest.approx(p.cost.flops / p.attainable_flops_per_s)
    assert p.time_estimate_per_op_sum_s >= p.time_estimate_s * (1 - 1e-12)


def test_gpt_fast_measurement_is_below_the_bound():
    # Llama-2-7B bf16 batch-1 decode on A100-80GB: gpt-fast measured 104.9 tokens/s.
    p = place("llama-2-7b", "a100-80gb", phase="decode", batch=1, context_tokens=200)
    assert 104.9 < p.tokens_per_s_estimate < 104.9 / 0.5


def test_footprint_and_capacity():
    w = Workload(phase="decode", batch=8, context_tokens=32767)
    f = footprint("qwen3.8-27b", w)
    assert f.weight_bytes == pytest.approx(26.9e9 * 2, rel=0.01)
    assert f.kv_cache_bytes == 8 * 32768 * 64 * 1024
    assert f.state_bytes > 8 * 144 * MiB
    p = place("llama-3.1-70b", "h100-sxm", phase="decode")
    assert not p.fits_in_memory  # 141 GB of bf16 weights on an 80 GB part
    assert place("llama-3.1-70b", "h200", phase="decode", weights_dtype="fp8").fits_in_memory


def test_largest_batch_that_fits():
    b = max_batch_that_fits("llama-3.1-8b", "h100-sxm", 8192)
    per_seq = 8192 * 128 * 1024
    assert b == int((80 * 2**30 - weight_bytes("llama-3.1-8b")) // per_seq)  # "80 GB" of HBM is 80 GiB
    ctx = np.array([1024, 8192, 131072])
    bs = max_batch_that_fits("qwen3.8-27b", "h200", ctx)
    assert list(bs) == sorted(bs, reverse=True)
    assert max_batch_that_fits("llama-3.1-70b", "h100-sxm", 1024) == 0


def test_compute_dtype_the_part_lacks():
    with pytest.raises(RooflineInputError, match="a100-80gb has no fp8"):
        place("llama-3.1-8b", "a100-80gb", phase="decode", compute_dtype="fp8", weights_dtype="fp8")


def test_fp8_compute_needs_fp8_weights():
    """FP8 tensor cores take FP8 operands: 'FP8 compute' over BF16 weights is not a configuration."""
    with pytest.raises(RooflineInputError, match="not a real configuration"):
        place("llama-3.1-8b", "h100-sxm", phase="decode", compute_dtype="fp8")
    place("llama-3.1-8b", "h100-sxm", phase="decode", weights_dtype="fp8")  # weight-only: fine


def test_w8a8_runs_attention_at_the_bf16_rate():
    kw = dict(phase="prefill", prompt_tokens=32768)
    w8a8 = place("llama-3.1-8b", "h100-sxm", weights_dtype="fp8", compute_dtype="fp8", **kw)
    c = w8a8.cost
    unq = c.unquantized_matmul_flops  # the lm_head: the recipe keeps it BF16, so it runs at the BF16 rate
    assert unq > 0
    expected = (c.weight_matmul_flops - unq) / 1978.9e12 + (c.other_flops + unq) / 989.4e12
    assert w8a8.compute_time_s == pytest.approx(expected)
    assert 989.4e12 < w8a8.peak_flops_per_s < 1978.9e12  # a blend, weighted by where the FLOPs are
    all_fp8 = place("llama-3.1-8b", "h100-sxm", weights_dtype="fp8", compute_dtype="fp8",
                    attention_compute_dtype="fp8", **kw)
    assert all_fp8.peak_flops_per_s == 1978.9e12
    assert all_fp8.time_estimate_s < w8a8.time_estimate_s

def test_to_dict_has_every_field():
    d = place("qwen3.8-27b", "h100-sxm", phase="decode").to_dict()
    for k in ("flops", "bytes", "weight_bytes", "kv_bytes", "state_bytes", "activation_bytes", "intensity",
              "intensity_per_weight_byte", "ridge_point", "peak_flops_per_s", "bandwidth_bytes_per_s",
              "attainable_flops_per_s", "fraction_of_peak", "bound", "time_lower_bound_s",
              "memory_required_bytes", "fits_in_memory", "ops"):
        assert k in d
    total = sum(op["flops"] for op in d["ops"])
    assert total == pytest.approx(d["flops"])
    assert sum(op["bytes"] for op in d["ops"]) == pytest.approx(d["bytes"])


def test_memory_utilization_headroom():
    from roofline_lessons.core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION, max_batch_that_fits, usable_capacity_bytes

    assert VLLM_DEFAULT_MEMORY_UTILIZATION == 0.9
    full = max_batch_that_fits("llama-3.1-8b", "h100-sxm", 8192)
    ninety = max_batch_that_fits("llama-3.1-8b", "h100-sxm", 8192, memory_utilization=0.9)
    assert 0 < ninety < full
    assert usable_capacity_bytes("h200", 0.9) == pytest.approx(0.9 * 141 * 2**30)
    # Llama-3.1-70B in BF16 fits an H200 (141 GiB) with all its memory, not at vLLM's 0.9
    assert max_batch_that_fits("llama-3.1-70b", "h200", 8192) >= 1
    assert max_batch_that_fits("llama-3.1-70b", "h200", 8192, memory_utilization=0.9) == 0
    for bad in (0, 1.2, -0.5, "0.9", None):
        with pytest.raises(RooflineInputError, match="memory_utilization"):
            max_batch_that_fits("llama-3.1-8b", "h100-sxm", 8192, memory_utilization=bad)
