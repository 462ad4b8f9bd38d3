import re

import pytest

from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.hardware import get_part, list_parts

IDS = ["a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "gb200", "l4", "l40s", "rtx-4090", "mi300x",
       "mi325x", "tpu-v5e", "tpu-v5p", "tpu-v6e"]


def test_every_issue_id_is_in_the_catalog():
    assert set(IDS) <= set(list_parts())


@pytest.mark.parametrize("pid", IDS)
def test_each_part_has_source_date_and_dense_rates(pid):
    p = get_part(pid)
    assert p.source and re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", p.as_of)
    assert p.memory_bandwidth_bytes_per_s > 1e11
    assert p.memory_capacity_bytes >= 16e9
    assert "bf16" in p.dense_flops_per_s
    for dt, sparse in p.sparse_flops_per_s.items():
        # A with-sparsity headline is 2x the dense rate of the same dtype
        assert sparse == pytest.approx(2 * p.dense_flops_per_s[dt], rel=0.02), (pid, dt)  # L40S: 733 vs 2 x 362


# Derived ridge points listed in shared/reference/figures.md (dense FLOP/s / bytes/s).
RIDGES = [("a100-80gb", "bf16", 153), ("h100-sxm", "bf16", 295), ("h100-pcie", "bf16", 378), ("h200", "bf16", 206),
          ("b200", "bf16", 281), ("mi300x", "bf16", 247), ("tpu-v5e", "bf16", 240), ("h100-sxm", "fp8", 591),
          ("b200", "fp8", 562), ("b200", "fp4", 1125)]


@pytest.mark.parametrize("pid,dtype,ridge", RIDGES)
def test_ridge_points_match_the_reference(pid, dtype, ridge):
    assert get_part(pid).ridge_point_flop_per_byte(dtype) == pytest.approx(ridge, rel=0.005)


def test_headline_figures_are_dense():
    h100 = get_part("h100-sxm")
    assert h100.peak_flops_per_s("bf16") == 989.4e12
    assert h100.sparse_headline_flops_per_s("bf16") == 1978.9e12
    assert get_part("b200").peak_flops_per_s("fp8") == 4500e12  # not the loose "2.2 PFLOPS FP8"


def test_on_chip_sizes_are_binary():
    assert get_part("h100-sxm").last_level_cache_bytes == 50 * 2**20
    assert get_part("h100-sxm").shared_memory_per_sm_bytes == 228 * 2**10


@pytest.mark.parametrize("pid", ["l4", "l40s", "rtx-4090"])
def test_compute_capability_89_shared_memory_is_the_100_kib_carveout(pid):
    """CUDA's compute-capability table (and the Ada tuning guide): at most 100 KiB of shared memory per SM on
    8.9, carved from a 128 KiB L1/shared array; the catalog holds the shared memory, not the array."""
    p = get_part(pid)
    assert p.shared_memory_per_sm_bytes == 100 * 2**10
    assert "100 KiB" in p.notes and "128 KiB" in p.notes


def test_unknown_part_names_close_matches():
    with pytest.raises(RooflineInputError) as err:
        get_part("h100")
    msg = str(err.value)
    assert "'h100'" in msg and "h100-sxm" in msg and "h100-pcie" in msg


def test_a100_has_no_fp8():
    with pytest.raises(RooflineInputError, match="no fp8 rate.*bf16"):
        get_part("a100-80gb").peak_flops_per_s("fp8")


def test_unknown_dtype():
    with pytest.raises(RooflineInputError, match="unknown dtype 'fp6'.*fp8"):
        get_part("h100-sxm").peak_flops_per_s("fp6")


def test_measured_figures_carry_sources():
    m = get_part("h100-sxm").measurements("matmul_flops_per_s")
    assert any(x.dtype == "bf16" and x.value == 794.5e12 for x in m)
    for pid in IDS:
        for x in get_part(pid).measured:
            assert x.source and x.value > 0


def test_device_memory_is_binary():
    """A vendor's '80 GB' of HBM is 80 GiB (five 16 GiB stacks on an H100); nvidia-smi shows 81,559 MiB of
    an H100 SXM's 81,920 MiB, which an SI reading (76,294 MiB) could not hold."""
    from roofline_lessons.core.hardware import list_parts

    assert get_part("h100-sxm").memory_capacity_bytes == 80 * 2**30
    assert get_part("h200").memory_capacity_bytes == 141 * 2**30
    assert get_part("h100-sxm").memory_capacity_bytes > 81_559 * 2**20
    assert get_part("h200").memory_capacity_bytes > 143_771 * 2**20 * 0.99
    for pid in list_parts():
        cap = get_part(pid).memory_capacity_bytes
        assert cap % 2**30 == 0, pid  # whole GiB, never an SI count of bytes


def test_board_power_is_sourced_or_absent():
    with_power = [pid for pid in list_parts() if get_part(pid).board_power_w is not None]
    assert {"b200", "gb200", "h100-pcie", "h100-sxm"} <= set(with_power)
    h100 = get_part("h100-sxm")  # the datasheet's "Up to 700W (configurable)": a maximum, said so
    assert h100.board_power_w == 700 and "Up to 700W (configurable)" in h100.board_power_source
    for pid in list_parts():
        p = get_part(pid)
        if p.board_power_w is None:
            assert p.board_power_source == "" and p.board_power_as_of == ""
        else:
            assert p.board_power_w > 0 and p.board_power_source
            assert re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", p.board_power_as_of)
    # the B200 and GB200 figures are the ones their catalog names carry
    assert str(int(get_part("b200").board_power_w)) + " W" in get_part("b200").name
    assert str(int(get_part("gb200").board_power_w)) + " W" in get_part("gb200").name


def test_a_board_power_without_source_is_refused():
    from roofline_lessons.core.hardware import _part_from_entry

    entry = {"name": "x", "vendor": "v", "memory_type": "HBM", "memory_bandwidth_bytes_per_s": 1e12,
             "memory_capacity_gib": 16, "dense_flops_per_s": {"bf16": 1e14}, "source": "s", "as_of": "2026-01",
             "board_power_w": 500}
    with pytest.raises(ValueError, match="board_power_source"):
        _part_from_entry("x", entry)
    entry.update(board_power_source="a datasheet", board_power_as_of="2026-01-01")
    assert _part_from_entry("x", entry).board_power_w == 500.0
