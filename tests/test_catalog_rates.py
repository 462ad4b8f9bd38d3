"""Issue 25, the hardware catalog: INT8 and with-sparsity rates from the datasheets, headline figures that are
two things at once, why a rate is missing, a second published figure beside the one the course uses, the
H100 SXM's board power and special-function rate, and wording its sources support."""

from pathlib import Path

import pytest

from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.hardware import (RATE_IN_CATALOG, RATE_NO_UNITS, RATE_NOT_IN_CATALOG, RATE_NOT_PUBLISHED,
                                            _part_from_entry, get_part, list_parts)
from roofline_lessons.topics.datasheets import headline_kind

ROOT = Path(__file__).resolve().parents[1]

#: dense INT8 (TOPS, as ops/s): half of each datasheet's with-sparsity INT8 figure
INT8_DENSE = {"h100-pcie": 1513e12, "h200": 1978.9e12, "b200": 4500e12, "gb200": 5000e12, "l4": 242.5e12,
              "l40s": 733e12, "rtx-4090": 660.6e12, "mi300x": 2614.9e12, "mi325x": 2614.9e12,
              "a100-80gb": 624e12, "h100-sxm": 1978.9e12}


@pytest.mark.parametrize("pid,rate", INT8_DENSE.items())
def test_int8_dense_rates_from_the_datasheets(pid, rate):
    p = get_part(pid)
    assert p.peak_flops_per_s("int8") == pytest.approx(rate)
    assert p.sparse_headline_flops_per_s("int8") == pytest.approx(2 * rate, rel=0.001)  # the datasheet's headline


@pytest.mark.parametrize("pid,figure,must_include", [
    ("l4", 485e12, {"fp8 with sparsity"}),
    ("h100-pcie", 3026e12, {"fp8 with sparsity"}),
    ("b200", 9e15, {"fp8 with sparsity", "fp4 dense"}),          # one number, two things: both are said
    ("b200", 4.5e15, {"fp8 dense", "bf16 with sparsity"}),
    ("a100-80gb", 624e12, {"int8 dense", "bf16 with sparsity"}),  # never FP8: the A100 has none
    ("mi300x", 2614.9e12, {"fp8 dense", "bf16 with sparsity"}),
    ("h100-sxm", 1979e12, {"bf16 with sparsity", "fp8 dense"}),
])
def test_headline_kind_names_everything_a_figure_is(pid, figure, must_include):
    kinds = headline_kind(pid, figure)
    assert must_include <= set(kinds), kinds
    if pid == "a100-80gb":
        assert not any(k.startswith("fp8") for k in kinds)


def test_headline_kind_keeps_dense_before_sparse_and_misses_unknown_figures():
    kinds = headline_kind("b200", 9e15)
    assert kinds.index("fp4 dense") < kinds.index("fp8 with sparsity")
    assert headline_kind("b200", 2.25e15) == ["bf16 dense", "fp16 dense"]  # the loose "2.2 PFLOPS FP8"
    assert headline_kind("l4", 150e12) == []


def test_every_nvidia_and_amd_part_carries_its_sparse_headlines():
    for pid in list_parts():
        p = get_part(pid)
        if p.vendor in ("NVIDIA", "AMD"):
            assert {"bf16", "fp8" if "fp8" in p.dense_flops_per_s else "bf16", "int8"} <= set(p.sparse_flops_per_s), pid


def test_a_missing_rate_says_why():
    assert get_part("a100-80gb").rate_status("fp8") == RATE_NO_UNITS
    assert get_part("h100-sxm").rate_status("fp4") == RATE_NO_UNITS
    assert get_part("tpu-v5e").rate_status("fp32") == RATE_NOT_PUBLISHED
    assert get_part("h100-sxm").rate_status("bf16") == RATE_IN_CATALOG
    assert get_part("tpu-v5e").rate_status("int4") == RATE_NOT_IN_CATALOG  # nothing recorded: no claim made
    with pytest.raises(RooflineInputError, match=r"a100-80gb has no fp8 rate in the catalog \(no units: .*Hopper"):
        get_part("a100-80gb").peak_flops_per_s("fp8")


def test_the_lesson2_table_explains_every_gap():
    """Every format lesson 2's ridge table shows is either a rate or an explained gap on every part."""
    for pid in list_parts():
        for dt in ("fp32", "bf16", "fp8", "fp4", "int8"):
            assert get_part(pid).rate_status(dt) != RATE_NOT_IN_CATALOG, (pid, dt)


def test_rate_gaps_are_checked_on_load():
    entry = {"name": "x", "vendor": "v", "memory_type": "HBM", "memory_bandwidth_bytes_per_s": 1e12,
             "memory_capacity_gib": 16, "dense_flops_per_s": {"bf16": 1e14}, "source": "s", "as_of": "2026-01"}
    with pytest.raises(ValueError, match="has a dense bf16 rate"):
        _part_from_entry("x", {**entry, "rate_gaps": {"bf16": {"kind": "no units", "why": "w"}}})
    with pytest.raises(ValueError, match="needs kind"):
        _part_from_entry("x", {**entry, "rate_gaps": {"fp8": {"kind": "unsupported", "why": "w"}}})
    with pytest.raises(ValueError, match="needs kind"):
        _part_from_entry("x", {**entry, "rate_gaps": {"fp8": {"kind": "no units", "why": " "}}})
    assert _part_from_entry("x", {**entry, "rate_gaps": {"fp8": {"kind": "no units", "why": "w"}}}).rate_status(
        "fp8") == RATE_NO_UNITS


def test_b200_carries_both_published_figures_and_says_which_it_uses():
    b200 = get_part("b200")
    (bw,) = b200.alternatives("memory_bandwidth_bytes_per_s")
    (fp32,) = b200.alternatives("dense_flops_per_s.fp32")
    assert bw.value == 7.7e12 and bw.used_value == b200.memory_bandwidth_bytes_per_s == 8.0e12
    assert fp32.value == 75e12 and fp32.used_value == b200.peak_flops_per_s("fp32") == 80e12
    for alt in (bw, fp32):
        assert "HGX B200" in alt.source and alt.as_of and "course" in alt.why_not_used
    assert "DGX B200" in bw.why_not_used and "7,680-bit" in bw.source  # the driver's bus width agrees with 7.7


def test_alternative_figures_are_checked_on_load():
    entry = {"name": "x", "vendor": "v", "memory_type": "HBM", "memory_bandwidth_bytes_per_s": 1e12,
             "memory_capacity_gib": 16, "dense_flops_per_s": {"bf16": 1e14}, "source": "s", "as_of": "2026-01"}
    good = {"field": "memory_bandwidth_bytes_per_s", "value": 0.9e12, "source": "a table", "as_of": "2026-01",
            "why_not_used": "the course uses the other"}
    assert _part_from_entry("x", {**entry, "alternative_figures": [good]}).alternatives()[0].used_value == 1e12
    for bad, match in (({"field": "dense_flops_per_s.fp8"}, "no value of its own"),
                       ({"field": "dense_flops_per_s"}, "is not one of"),
                       ({"field": "clock_hz"}, "is not one of"),
                       ({"value": 1e12}, "must be > 0 and differ"),
                       ({"source": ""}, "needs source"),
                       ({"why_not_used": ""}, "needs why_not_used")):
        with pytest.raises(ValueError, match=match):
            _part_from_entry("x", {**entry, "alternative_figures": [{**good, **bad}]})


def test_h100_special_function_rate_is_sourced_and_only_the_h100s():
    h100 = get_part("h100-sxm")
    assert h100.special_function_peak_ops_per_s() == 3.9e12
    assert "FlashAttention-3" in h100.special_function_source and "footnote 5" in h100.special_function_source
    assert h100.special_function_as_of == "2024-07-11"
    # the paper's own arithmetic: 16 operations per SM per clock x 132 SMs x 1,830 MHz
    assert 16 * 132 * 1.83e9 == pytest.approx(h100.special_function_peak_ops_per_s(), rel=0.01)
    with pytest.raises(RooflineInputError, match="b200 has no special-function rate.*h100-sxm"):
        get_part("b200").special_function_peak_ops_per_s()
    entry = {"name": "x", "vendor": "v", "memory_type": "HBM", "memory_bandwidth_bytes_per_s": 1e12,
             "memory_capacity_gib": 16, "dense_flops_per_s": {"bf16": 1e14}, "source": "s", "as_of": "2026-01",
             "special_function_ops_per_s": 1e12}
    with pytest.raises(ValueError, match="special_function_source"):
        _part_from_entry("x", entry)


def test_catalog_says_only_what_its_sources_support():
    """'clocks not locked' was more than stas00/ml-engineering states: it gives neither power cap nor clocks."""
    for path in (ROOT / "roofline_lessons" / "data" / "hardware.toml",
                 ROOT / "roofline_lessons" / "topics" / "datasheets.py"):
        assert "clocks not locked" not in path.read_text(encoding="utf-8")
    for pid in list_parts():
        for m in get_part(pid).measurements("matmul_flops_per_s"):
            if "stas00" in m.source:
                assert "power cap and clocks not given by the source" in m.conditions, (pid, m.dtype)


def test_lesson2_checks_the_issue_headlines():
    src = (ROOT / "py" / "notebooks" / "02_the_ridge_point.py").read_text(encoding="utf-8")
    for figure in ('("h100-pcie", 3026e12)', '("l4", 485e12)', '("b200", 4.5e15)', '("b200", 9e15)',
                   '("a100-80gb", 624e12)'):
        assert figure in src
    assert 'alternatives("memory_bandwidth_bytes_per_s")' in src
