"""Issue 28, part 2: the parts added to the hardware catalog (H800, A100 40GB, B300, GB300, MI355X, RTX PRO 6000
Blackwell, TPU7x Ironwood). Each key figure is held to what its vendor source states: dense rates, not the
with-sparsity headlines; capacity in GiB; a link's per-direction rate half its bidirectional total; and every
figure a vendor does not publish recorded as a gap or left out, never filled in."""

import re

import pytest

from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.hardware import (RATE_IN_CATALOG, RATE_NO_UNITS, RATE_NOT_PUBLISHED, get_part,
                                            list_parts)
from roofline_lessons.topics.datasheets import headline_kind

NEW = ("h800", "a100-40gb", "b300", "gb300", "mi355x", "rtx-pro-6000", "tpu-v7")
TAKEN_IN = "2026-12-03"

#: dense FLOP/s (INT8: ops/s) per part and format, as each source states them
DENSE = {
    "h800": {"fp32": 66.9e12, "bf16": 989.4e12, "fp16": 989.4e12, "fp8": 1978.9e12, "int8": 1978.9e12},
    "a100-40gb": {"fp32": 19.5e12, "bf16": 312e12, "fp16": 312e12, "int8": 624e12},
    "b300": {"fp32": 75e12, "bf16": 2250e12, "fp16": 2250e12, "fp8": 4500e12, "fp4": 14000e12, "int8": 153.5e12},
    "gb300": {"bf16": 2500e12, "fp16": 2500e12, "fp8": 5000e12, "fp4": 15000e12, "int8": 166.7e12},
    "mi355x": {"fp32": 157.3e12, "bf16": 2516.6e12, "fp16": 2516.6e12, "fp8": 5033.2e12, "int8": 5033.2e12,
               "fp4": 10066.3e12},
    "rtx-pro-6000": {"fp32": 126.0e12, "bf16": 503.8e12, "fp16": 503.8e12, "fp8": 1007.6e12, "fp4": 2015.2e12,
                     "int8": 1007.6e12},
    "tpu-v7": {"bf16": 2307e12, "fp8": 4614e12},
}

#: (bytes/s, GiB, board watts or None)
MEMORY_AND_POWER = {
    "h800": (3.35e12, 80, None), "a100-40gb": (1.555e12, 40, 400), "b300": (7.7e12, 270, 1100),
    "gb300": (8.0e12, 279, 1400), "mi355x": (8.0e12, 288, 1400), "rtx-pro-6000": (1.792e12, 96, 600),
    "tpu-v7": (7.38e12, 192, None),
}

#: scale-up link: (bidirectional bytes/s, chips in one domain); None: the part has none
SCALE_UP = {"h800": (400e9, 8), "a100-40gb": (600e9, 8), "b300": (1800e9, 8), "gb300": (1800e9, 72),
            "mi355x": (1075.2e9, 8), "rtx-pro-6000": None, "tpu-v7": (1200e9, 9216)}
#: PCIe host link, bidirectional bytes/s; None: none catalogued
HOST = {"h800": 128e9, "a100-40gb": 64e9, "b300": 128e9, "gb300": None, "mi355x": 128e9, "rtx-pro-6000": 128e9,
        "tpu-v7": None}

#: formats each vendor gives no rate for, and why
GAPS = {"h800": {"fp4": RATE_NO_UNITS}, "a100-40gb": {"fp8": RATE_NO_UNITS, "fp4": RATE_NO_UNITS},
        "gb300": {"fp32": RATE_NOT_PUBLISHED},  # NVIDIA gives none; Verda's two readings disagree
        "tpu-v7": {"fp32": RATE_NOT_PUBLISHED, "fp16": RATE_NOT_PUBLISHED, "int8": RATE_NOT_PUBLISHED,
                   "fp4": RATE_NOT_PUBLISHED}}


def test_the_new_parts_are_in_the_catalog_with_a_source_and_todays_date():
    assert set(NEW) <= set(list_parts())
    for pid in NEW:
        p = get_part(pid)
        assert p.source.strip() and p.as_of == TAKEN_IN, pid
        for link in (p.scale_up_link, p.host_link):
            if link is not None:
                assert link.source.strip() and link.as_of == TAKEN_IN, pid


@pytest.mark.parametrize("pid", NEW)
def test_dense_rates_are_the_sourced_ones(pid):
    p = get_part(pid)
    assert dict(p.dense_flops_per_s) == pytest.approx(DENSE[pid], rel=1e-9)


@pytest.mark.parametrize("pid", NEW)
def test_bandwidth_is_si_capacity_is_binary_and_power_is_sourced_or_absent(pid):
    bw, gib, watts = MEMORY_AND_POWER[pid]
    p = get_part(pid)
    assert p.memory_bandwidth_bytes_per_s == bw
    assert p.memory_capacity_bytes == gib * 2**30  # a vendor's "288 GB" of HBM is 288 GiB
    assert p.board_power_w == watts
    if watts is not None:
        assert str(watts)[:2] in p.board_power_source.replace(",", "") and p.board_power_as_of == TAKEN_IN


@pytest.mark.parametrize("pid", NEW)
def test_links_store_both_figures_and_compute_with_half(pid):
    p = get_part(pid)
    if SCALE_UP[pid] is None:
        assert p.scale_up_link is None
        with pytest.raises(RooflineInputError, match="PCIe only"):
            p.link("scale-up")
    else:
        both, chips = SCALE_UP[pid]
        assert p.scale_up_link.bidirectional_bytes_per_s == both and p.scale_up_link.max_chips == chips
        assert p.scale_up_link.per_direction_bytes_per_s == both / 2
    if HOST[pid] is None:
        assert p.host_link is None
    else:
        assert p.host_link.bidirectional_bytes_per_s == HOST[pid]
        assert p.host_link.per_direction_bytes_per_s == HOST[pid] / 2
    for link in (p.scale_up_link, p.host_link):
        if link is None:
            continue
        assert link.latency_s == 10e-6 and link.latency_basis == "assumed"
        if link is p.scale_up_link and pid in ("mi355x", "tpu-v7"):  # no NCCL there: the figure is borrowed
            assert "borrowed from GPU nodes" in link.latency_source and "not a measurement" in link.latency_source
            assert ("RCCL" if pid == "mi355x" else "ICI") in link.latency_source
        else:  # the assumed latency, worded exactly as on every other GPU link
            assert link.latency_source == get_part("h100-sxm").scale_up_link.latency_source


@pytest.mark.parametrize("pid", NEW)
def test_every_unpublished_rate_is_a_gap_not_a_number(pid):
    p = get_part(pid)
    for dt in ("fp32", "bf16", "fp8", "fp4", "int8"):
        expected = GAPS.get(pid, {}).get(dt, RATE_IN_CATALOG)
        assert p.rate_status(dt) == expected, (pid, dt)
        if expected != RATE_IN_CATALOG:
            assert dt not in p.sparse_flops_per_s
            with pytest.raises(RooflineInputError, match=rf"{pid} has no {dt} rate in the catalog \({expected}: "):
                p.peak_flops_per_s(dt)


def test_sparse_headlines_are_kept_beside_the_dense_rates_never_instead():
    for pid in NEW:
        p = get_part(pid)
        for dt, sparse in p.sparse_flops_per_s.items():
            assert sparse > p.dense_flops_per_s[dt], (pid, dt)
            if dt != "fp4":  # 2:4 sparsity doubles the BF16, FP8 and INT8 headlines
                assert sparse == pytest.approx(2 * p.dense_flops_per_s[dt], rel=0.002), (pid, dt)
    assert get_part("h800").peak_flops_per_s("bf16") == 989.4e12  # not the headline 1,979
    assert get_part("mi355x").sparse_headline_flops_per_s("fp4") is None  # AMD gives no sparse MXFP4 figure
    assert "fp4" not in get_part("tpu-v7").sparse_flops_per_s and not get_part("tpu-v7").sparse_flops_per_s


@pytest.mark.parametrize("pid,dense,sparse", [("b300", 14e15, 18e15), ("gb300", 15e15, 20e15)])
def test_blackwell_ultra_fp4_sparse_headline_is_not_twice_dense(pid, dense, sparse):
    """NVIDIA prints both ('18 PFLOPS | 14 PFLOPS'): halving the sparse headline gives a wrong dense rate."""
    p = get_part(pid)
    assert p.peak_flops_per_s("fp4") == dense and p.sparse_headline_flops_per_s("fp4") == sparse
    assert sparse / 2 < 0.7 * dense
    assert "NOT twice" in p.notes or "not twice" in p.notes


@pytest.mark.parametrize("pid", ["b300", "gb300"])
def test_blackwell_ultra_cut_int8(pid):
    p = get_part(pid)
    assert p.peak_flops_per_s("int8") < p.peak_flops_per_s("bf16") / 10  # INT8 below BF16 on Blackwell Ultra
    assert p.peak_flops_per_s("int8") < get_part("b200").peak_flops_per_s("int8") / 25
    assert p.peak_flops_per_s("fp8") == 2 * p.peak_flops_per_s("bf16")
    assert "INT8" in p.notes and "cut" in p.notes
    assert get_part("b300").sparse_headline_flops_per_s("int8") == 307e12  # the datasheet's figure, halved above


def test_h800_is_the_h100_sxm_with_the_nvlink_cut():
    h800, h100 = get_part("h800"), get_part("h100-sxm")
    assert dict(h800.dense_flops_per_s) == dict(h100.dense_flops_per_s)
    assert dict(h800.sparse_flops_per_s) == dict(h100.sparse_flops_per_s)
    assert h800.memory_bandwidth_bytes_per_s == h100.memory_bandwidth_bytes_per_s
    assert h800.memory_capacity_bytes == h100.memory_capacity_bytes
    link = h800.scale_up_link
    assert link.per_direction_bytes_per_s == 200e9 < h100.scale_up_link.per_direction_bytes_per_s
    assert "reduced from 900 GB/s to 400 GB/s" in link.source and "2505.09343" in link.source
    assert "160 GB/s" in link.notes and "2412.19437" in h800.notes
    # DeepSeek's own words on the part and its links, not a claim that nothing else was cut
    assert "reduced FP64 computational performance and NVLink bandwidth" in h800.notes
    assert "of which about 160GB/s can actually be achieved" in h800.notes and "40GB/s for effective" in h800.notes
    for text in (h800.notes, h800.host_link.source, h800.rate_gaps["fp4"].why):
        assert "only" not in text.replace("only 50GB/s", ""), text
    # figures no H800 source gives are left out, not copied from the H100
    assert h800.last_level_cache_bytes is None and h800.shared_memory_per_sm_bytes is None
    assert h800.board_power_w is None and "not taken in" in h800.notes


def test_a100_40gb_has_the_80gb_rates_and_slower_hbm2():
    small, big = get_part("a100-40gb"), get_part("a100-80gb")
    assert dict(small.dense_flops_per_s) == dict(big.dense_flops_per_s)
    assert small.memory_type == "HBM2" and small.memory_bandwidth_bytes_per_s == 1.555e12
    assert small.ridge_point_flop_per_byte("bf16") == pytest.approx(201, rel=0.005)
    assert small.ridge_point_flop_per_byte("bf16") > big.ridge_point_flop_per_byte("bf16")
    assert "1,555GB/s" in small.source and "40GB SXM" in small.source


def test_mi355x_headlines_are_two_things_at_once():
    assert {"fp8 dense", "bf16 with sparsity"} <= set(headline_kind("mi355x", 5.0e15))
    assert {"fp4 dense", "fp8 with sparsity", "int8 with sparsity"} <= set(headline_kind("mi355x", 10e15))
    p = get_part("mi355x")
    # the white paper's per-clock figures x 256 CUs x 2,400 MHz
    for dt, per_clock in (("bf16", 4096), ("fp8", 8192), ("fp4", 16384)):
        assert p.peak_flops_per_s(dt) == pytest.approx(per_clock * 256 * 2.4e9, rel=1e-5)
    assert p.shared_memory_per_sm_bytes == 160 * 2**10 and p.last_level_cache_bytes == 256 * 2**20
    assert p.scale_up_link.per_direction_bytes_per_s == pytest.approx(7 * 76.8e9)


def test_rtx_pro_6000_is_the_workstation_edition_from_its_whitepaper():
    p = get_part("rtx-pro-6000")
    assert "Workstation Edition" in p.name and "Table 4" in p.source
    assert p.memory_type == "GDDR7" and p.last_level_cache_bytes == 128 * 2**20
    assert p.shared_memory_per_sm_bytes is None and "carveout" in p.notes  # not stated by a source read here
    assert p.sparse_headline_flops_per_s("fp4") == pytest.approx(4030.4e12)  # the '4,000 AI TOPS' headline
    assert "1,597" in p.notes  # the Server Edition's bandwidth is a different card's, named so


def test_tpu_v7_states_bf16_and_fp8_only_and_keeps_its_second_bandwidth_figure():
    p = get_part("tpu-v7")
    assert set(p.dense_flops_per_s) == {"bf16", "fp8"}
    assert p.peak_flops_per_s("fp8") == 2 * p.peak_flops_per_s("bf16")
    (alt,) = p.alternatives("memory_bandwidth_bytes_per_s")
    assert alt.value == 7.37e12 and alt.used_value == 7.38e12 and "approximately 7.37 TB/s" in alt.source
    assert "per chip" in p.name and "two devices" in p.notes
    assert p.last_level_cache_bytes is None and p.host_link is None


def test_blackwell_ultra_memory_is_the_skus_with_the_chips_maximum_beside_it():
    b300, gb300 = get_part("b300"), get_part("gb300")
    assert [a.value for a in b300.alternatives("memory_capacity_gib")] == [288]
    assert [a.value for a in b300.alternatives("memory_bandwidth_bytes_per_s")] == [8.0e12]
    assert [a.value for a in gb300.alternatives("memory_capacity_gib")] == [288]
    for p in (b300, gb300):
        assert p.last_level_cache_bytes is None and p.shared_memory_per_sm_bytes is None  # not published
        assert "Configurable up to" in p.board_power_source
    assert "HGX B300 column" in b300.source and "GB300 NVL72 column" in gb300.source
    assert "Verda" in gb300.notes  # the one third-party figure (FP32) says where it is from


def test_sources_quote_where_a_figure_was_read_through_a_copy():
    for pid in ("b300", "gb300"):
        assert "transcription" in get_part(pid).source
    for pid in ("mi355x", "rtx-pro-6000", "tpu-v7"):
        assert re.search(r"stored (text )?copy", get_part(pid).source), pid


def test_h800_nvlink_is_assumed_to_reduce_in_the_switch_for_the_bound_only():
    """Under uncertainty the bound takes the capability (least bytes); the estimate keeps the ring."""
    link = get_part("h800").scale_up_link
    assert link.in_switch_reduction
    assert "issue 1374" in link.in_switch_source and "215 GB/s" in link.in_switch_source
    assert "issue 892" in link.in_switch_source  # the evidence against is named too
    assert "the bound assumes the capability" in link.in_switch_source and "estimate keeps the ring" in link.in_switch_source
    from roofline_lessons.core.parallel import Parallelism
    from roofline_lessons.core.placement import place
    p = place("llama-3.1-70b", "h800", phase="decode", batch=8, context_tokens=1024,
              parallelism=Parallelism(tensor=8))
    (ar,) = [c for c in p.comm.parts if c.name.startswith("tensor all-reduce")]
    assert ar.least_bytes == pytest.approx(ar.bytes / (2 * 7 / 8))  # once in the switch against the ring's 2(n-1)/n


#: the TPUs' data-center network: (Google's Gb/s per chip, read as each way)
DCN_GBIT_PER_CHIP = {"tpu-v7": 100, "tpu-v6e": 100, "tpu-v5p": 50, "tpu-v5e": 25}


@pytest.mark.parametrize("pid", sorted(DCN_GBIT_PER_CHIP))
def test_tpus_cross_slices_over_the_data_center_network(pid):
    p = get_part(pid)
    net = p.scale_out_link
    assert net is not None and p.link("scale-out") is net and net.kind == "scale-out" and net.max_chips is None
    per = DCN_GBIT_PER_CHIP[pid] * 1e9 / 8  # Gb/s -> bytes/s, the larger (each-way) reading
    assert net.per_direction_bytes_per_s == per and net.bidirectional_bytes_per_s == 2 * per
    assert not net.in_switch_reduction and net.as_of == TAKEN_IN
    assert "each direction" in net.notes.lower() or "each way" in net.notes.lower()
    assert net.latency_s == 10e-6 and "not a measurement" in net.latency_source
    if pid in ("tpu-v7", "tpu-v6e"):
        assert "(Gb/s) | 50 | 100 | 100" in net.source
    elif pid == "tpu-v5p":
        assert "(Gbps) | 50" in net.source
    else:  # v5e: derived from the per-host NICs, and said so
        assert "2 x 100 Gbps NIC" in net.source and "Chips per host | 8" in net.source
        assert net.notes.startswith("Derived, not stated")
    # the network is far slower than the chip's ICI: only traffic between slices crosses it
    assert net.per_direction_bytes_per_s < p.scale_up_link.per_direction_bytes_per_s / 10


def test_a_tpu_split_past_its_slice_crosses_the_dcn_and_pays_its_latency_in_the_estimate_only():
    from roofline_lessons.core.parallel import Parallelism
    from roofline_lessons.core.placement import place
    kw = dict(phase="decode", batch=64, context_tokens=1024)
    p = place("llama-3.1-70b", "tpu-v6e", parallelism=Parallelism(tensor=8, pipeline=64), **kw)
    assert p.scale_out_link is get_part("tpu-v6e").scale_out_link
    assert p.server_chips == 256 and p.servers_per_replica == 2
    slow = place("llama-3.1-70b", "tpu-v6e", parallelism=Parallelism(tensor=8, pipeline=64, network_latency_s=1e-3), **kw)
    assert float(slow.time_lower_bound_s) == float(p.time_lower_bound_s)
    assert float(slow.time_estimate_s) > float(p.time_estimate_s)


def test_every_network_call_costs_10_us_more_than_the_in_server_call_20_in_all():
    have = [pid for pid in list_parts() if get_part(pid).scale_out_link is not None]
    assert set(DCN_GBIT_PER_CHIP) | {"h800", "b300", "gb300", "mi355x", "h100-sxm"} <= set(have)
    for pid in have:
        net, inside = get_part(pid).scale_out_link, get_part(pid).scale_up_link
        assert net.latency_s == 10e-6 and net.latency_s + inside.latency_s == pytest.approx(20e-6), pid
        assert "20 µs in all" in net.latency_source and "arXiv 2505.09343" in net.latency_source, pid
        assert "2.8 µs" in net.latency_source and "3.7 µs" in net.latency_source, pid
        assert "0.5 µs" not in net.latency_source and "~10×" not in net.latency_source, pid


def test_blackwell_ultra_networks_take_infiniband_sharp_and_say_which_fabric():
    b300, gb300 = get_part("b300").scale_out_link, get_part("gb300").scale_out_link
    for net in (b300, gb300):
        assert net.in_switch_reduction and re.search(r"SHARP\)? v4", net.in_switch_source)
        assert net.per_direction_bytes_per_s == 800e9 / 8
        assert "course's choice" in net.name + net.in_switch_source
        assert "Spectrum-X" in net.in_switch_source  # the other fabric, and what it would mean, is named
    assert "InfiniBand XDR or Spectrum-X" in b300.in_switch_source and "DGX B300 User Guide" in b300.source
    # GB300: one source for the NIC, its rate and the fabric the SHARP flag rests on
    assert "ConnectX-8 SuperNICs and Quantum-X800 switches" in gb300.source and "800 Gb/s" in gb300.source
    assert "The SHARP flag rests on that InfiniBand fabric" in gb300.in_switch_source


def test_b300_keeps_the_datasheet_fp4_with_the_hgx_page_figure_beside_it():
    b300 = get_part("b300")
    (alt,) = b300.alternatives("dense_flops_per_s.fp4")
    assert alt.value == pytest.approx(105e15 / 8) and alt.used_value == b300.peak_flops_per_s("fp4") == 14e15
    assert "144 PFLOPS | 105 PFLOPS" in alt.source and "14 PFLOPS" in alt.why_not_used
    (mem,) = b300.alternatives("memory_capacity_gib")
    assert "chip's maximum" not in mem.why_not_used and "275,040 MiB" in mem.why_not_used
    assert 275_040 * 2**20 == pytest.approx(288.4e9, rel=1e-3)  # the same memory in SI units
    assert 275_040 * 2**20 < b300.memory_capacity_bytes  # nvidia-smi shows a little less than 270 GiB


def test_gb300_states_no_fp32_rate_and_no_unsourced_cause():
    gb300 = get_part("gb300")
    assert gb300.rate_status("fp32") == RATE_NOT_PUBLISHED and "fp32" not in gb300.dense_flops_per_s
    assert "80 TFLOPS" in gb300.notes and "41.7" in gb300.notes  # both of Verda's readings, neither a rate
    assert "hence" not in gb300.notes


def test_mi355x_network_is_sourced_from_amd():
    net = get_part("mi355x").scale_out_link
    assert "8x AMD Pensando Pollara 400 AI NICs per node" in net.source and "1:1 mapping" in net.source
    assert "AMD ROCm documentation" in net.source and "not AMD's platform" not in net.notes
    assert not net.in_switch_reduction and net.per_direction_bytes_per_s == 400e9 / 8


def test_tpu_v7_ici_notes_say_what_one_axis_gets():
    link = get_part("tpu-v7").scale_up_link
    assert link.per_direction_bytes_per_s == 600e9
    assert "chip's total over all six links" in link.notes and "200 GBps per axis" in link.notes
    assert "a third" in link.notes
