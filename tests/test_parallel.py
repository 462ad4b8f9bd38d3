"""Lesson 11's package layer: the catalog's links, the many-chip cost model (tensor, expert and
pipeline parallelism), its use by placement, serving and the CLI.

Every expected figure is computed here from the model's shapes and the catalog's link, never typed.
"""

import json

import numpy as np
import pytest

from roofline_lessons.cli import main
from roofline_lessons.core.dtypes import bytes_per_element
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.hardware import LATENCY_BASES, LINK_KINDS, _link, get_part, list_parts
from roofline_lessons.core.memory import kv_cache_bytes_per_sequence, max_batch_that_fits, weight_bytes
from roofline_lessons.core.models import get_model
from roofline_lessons.core.parallel import (
    Parallelism,
    bubble_fraction,
    check_parallelism,
    chip_shares,
    choose_link,
    interconnect_ridge_flop_per_byte,
    max_batch_that_fits_on_chips,
)
from roofline_lessons.core.placement import place, stage_placements
from roofline_lessons.topics.serving import request_timeline

GB = 1e9
L70, L8 = "llama-3.1-70b", "llama-3.1-8b"
MOE_BIG, MOE_SMALL = "qwen3-235b-a22b", "qwen3-30b-a3b"


def op(p, name):
    return next(o for o in p.cost.ops if o.name == name)


def comm_part(p, prefix):
    return next(c for c in p.comm.parts if c.name.startswith(prefix))


# ---- the catalog's links -------------------------------------------------------------------


@pytest.mark.parametrize("pid", list_parts())
def test_every_part_has_a_checked_link(pid):
    part = get_part(pid)
    links = [lk for lk in (part.scale_up_link, part.host_link) if lk is not None]
    assert links, f"{pid} has no link"
    for lk in links:
        assert lk.kind in LINK_KINDS
        assert lk.per_direction_bytes_per_s == pytest.approx(lk.bidirectional_bytes_per_s / 2, rel=1e-12)
        assert lk.source.strip() and lk.as_of.strip() and lk.name.strip()
        assert lk.latency_basis in LATENCY_BASES and lk.latency_s > 0 and lk.latency_source.strip()
        assert isinstance(lk.max_chips, int) and lk.max_chips >= 2
    if part.scale_up_link is not None:
        assert part.scale_up_link.kind == "scale-up" and part.link("scale-up") is part.scale_up_link
    if part.host_link is not None:
        assert part.host_link.kind == "pcie" and part.link("pcie") is part.host_link


@pytest.mark.parametrize("pid", ["l4", "l40s", "rtx-4090"])
def test_pcie_only_parts(pid):
    part = get_part(pid)
    assert part.scale_up_link is None and part.host_link is not None
    with pytest.raises(RooflineInputError) as e:
        part.link("scale-up")
    assert pid in str(e.value) and "PCIe only" in str(e.value)


def test_link_errors_name_what_exists():
    with pytest.raises(RooflineInputError, match="gb200.*scale-up"):
        get_part("gb200").link("pcie")
    with pytest.raises(RooflineInputError, match="'nvlink'.*scale-up, pcie"):
        get_part("h100-sxm").link("nvlink")


def test_link_figures_match_the_reference_sheet():
    # the vendors' datasheets, bidirectional totals per GPU: NVIDIA H100 and H200 datasheets (NVLink 900 GB/s),
    # A100 datasheet (NVLink 600 GB/s), DGX B200 datasheet (NVLink 1.8 TB/s per GPU); PCIe x16 per direction
    h100 = get_part("h100-sxm").scale_up_link
    assert h100.bidirectional_bytes_per_s == 900 * GB and h100.per_direction_bytes_per_s == 450 * GB
    assert get_part("h200").scale_up_link.bidirectional_bytes_per_s == 900 * GB
    assert get_part("a100-80gb").scale_up_link.bidirectional_bytes_per_s == 600 * GB
    assert get_part("b200").scale_up_link.bidirectional_bytes_per_s == 1800 * GB
    assert get_part("h100-pcie").scale_up_link.max_chips == 2  # the bridge joins pairs only
    for pid in ("h100-sxm", "h100-pcie", "h200", "b200", "mi300x"):  # PCIe Gen5 x16
        assert get_part(pid).host_link.per_direction_bytes_per_s == pytest.approx(64 * GB, rel=0.05)
    for pid in ("a100-80gb", "l4", "l40s", "rtx-4090"):  # PCIe Gen4 x16
        assert get_part(pid).host_link.per_direction_bytes_per_s == pytest.approx(32 * GB, rel=0.05)


GOOD_LINK = dict(name="X", per_direction_bytes_per_s=100e9, bidirectional_bytes_per_s=200e9, max_chips=8,
                 latency_s=1e-5, latency_basis="assumed", latency_source="a guess", source="a datasheet", as_of="2026-01-01")


def test_link_loader_accepts_a_good_entry_and_refuses_bad_ones():
    lk = _link("p", "scale-up", GOOD_LINK)
    assert lk.per_direction_bytes_per_s == 100e9 and lk.kind == "scale-up"
    assert _link("p", "pcie", None) is None
    bad = [
        dict(GOOD_LINK, per_direction_bytes_per_s=200e9),  # the trap: the headline typed as per direction
        dict(GOOD_LINK, latency_basis="guessed"),
        dict(GOOD_LINK, latency_source=""),
        dict(GOOD_LINK, source=""),
        dict(GOOD_LINK, as_of="  "),
        dict(GOOD_LINK, max_chips=1),
        dict(GOOD_LINK, per_direction_bytes_per_s=0.0, bidirectional_bytes_per_s=0.0),
        {k: v for k, v in GOOD_LINK.items() if k != "source"},
    ]
    for entry in bad:
        with pytest.raises(ValueError, match="hardware.toml: part 'p'"):
            _link("p", "scale-up", entry)


# ---- Parallelism itself ----------------------------------------------------------------------


def test_parallelism_validates_and_labels():
    assert Parallelism().chips == 1 and Parallelism().label == "1 chip"
    par = Parallelism(tensor=2, expert=4)
    assert par.chips == 8 and par.label == "TP 2 × EP 4"
    assert Parallelism(tensor=np.int64(4), pipeline=2).chips == 8
    for bad in (dict(tensor=0), dict(expert=-1), dict(pipeline=1.5), dict(tensor=True), dict(tensor="2"),
                dict(link="nvlink"), dict(overlap_comm="yes")):
        with pytest.raises(RooflineInputError):
            Parallelism(**bad)
    with pytest.raises(RooflineInputError, match="parallelism must be"):
        place(L8, "h100-sxm", phase="decode", parallelism=2)


def test_check_parallelism_refusals_name_the_numbers():
    with pytest.raises(RooflineInputError, match="tensor parallel 3 .*64 attention heads"):
        check_parallelism(get_model(L70), Parallelism(tensor=3))
    with pytest.raises(RooflineInputError, match="pipeline parallel 81 .*80 layers"):
        check_parallelism(get_model(L70), Parallelism(pipeline=81))
    assert check_parallelism(L70, Parallelism(pipeline=80)) == ()  # one layer per stage is allowed
    with pytest.raises(RooflineInputError, match="dense"):
        check_parallelism(L70, Parallelism(expert=2))
    with pytest.raises(RooflineInputError, match="expert parallel 3 .*128 experts"):
        check_parallelism(MOE_SMALL, Parallelism(expert=3))
    with pytest.raises(RooflineInputError, match="Gated DeltaNet"):  # 24 heads divide by 12, 16 key heads do not
        check_parallelism("qwen3.8-27b", Parallelism(tensor=12))


# ---- one chip --------------------------------------------------------------------------------


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12)
    return a == b


@pytest.mark.parametrize("model", [L8, "qwen3.8-27b", MOE_SMALL, "mistral-7b"])
@pytest.mark.parametrize("par", [Parallelism(), Parallelism(link="pcie"), Parallelism(overlap_comm=True)])
def test_one_chip_is_the_single_chip_placement(model, par):
    for kw in (dict(phase="decode", batch=8, context_tokens=4096), dict(phase="prefill", batch=2, prompt_tokens=900)):
        a = place(model, "h100-sxm", **kw).to_dict()
        b = place(model, "h100-sxm", parallelism=par, **kw).to_dict()
        assert b["chips"] == 1 and b["per_chip"] is False and b["comm_bytes"] == 0 and b["link"] is None
        for k in a:
            if k in ("ops", "overlap_comm"):
                continue
            assert _same(a[k], b[k]), k
        assert len(a["ops"]) == len(b["ops"])
        for x, y in zip(a["ops"], b["ops"]):
            assert all(_same(x[k], y[k]) for k in x), x["name"]


# ---- tensor parallel --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4, 8])
def test_tensor_parallel_splits_weights_and_replicates_norms(n):
    kw = dict(phase="decode", batch=4, context_tokens=4096)
    one = place(L70, "h100-sxm", **kw)
    tp = place(L70, "h100-sxm", parallelism=Parallelism(tensor=n), **kw)
    assert tp.chips == n and tp.per_chip
    for name in ("q_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head", "embed_tokens"):
        assert op(tp, name).weight_bytes == pytest.approx(op(one, name).weight_bytes / n, rel=1e-12), name
        assert op(tp, name).flops == pytest.approx(op(one, name).flops / n, rel=1e-12), name
    for name in ("input_norm", "post_attention_norm", "final_norm"):
        assert op(tp, name).flops == op(one, name).flops and op(tp, name).weight_bytes == op(one, name).weight_bytes
    kv_heads = get_model(L70).num_key_value_heads
    share = 1 / min(n, kv_heads)
    for name in ("k_proj", "v_proj", "kv_cache_write"):
        assert op(tp, name).bytes == pytest.approx(op(one, name).bytes * share, rel=1e-12), name
    attn = next(o for o in tp.cost.ops if o.name.startswith("attention"))
    attn1 = next(o for o in one.cost.ops if o.name.startswith("attention"))
    assert attn.kv_read_bytes == pytest.approx(attn1.kv_read_bytes * share) and attn.flops == pytest.approx(attn1.flops / n)
    assert tp.footprint.kv_cache_bytes == pytest.approx(one.footprint.kv_cache_bytes * share, rel=1e-12)
    # a big model: every chip does 1/n of the FLOPs and reads about 1/n of the weights
    assert tp.cost.flops == pytest.approx(one.cost.flops / n, rel=0.01)
    assert tp.cost.weight_bytes == pytest.approx(one.cost.weight_bytes / n, rel=0.01)
    assert tp.footprint.weight_bytes * n >= weight_bytes(L70)
    assert tp.footprint.weight_bytes * n == pytest.approx(weight_bytes(L70), rel=1e-3)


def test_tensor_parallel_past_the_kv_heads_replicates_the_cache_and_says_so():
    kw = dict(phase="decode", batch=4, context_tokens=8192)
    kv_heads = get_model(L70).num_key_value_heads
    n = 2 * kv_heads
    one = place(L70, "gb200", **kw)
    tp = place(L70, "gb200", parallelism=Parallelism(tensor=n), **kw)
    assert tp.footprint.kv_cache_bytes == pytest.approx(one.footprint.kv_cache_bytes / kv_heads, rel=1e-12)
    assert tp.footprint.kv_cache_bytes * n > one.footprint.kv_cache_bytes  # stored twice over the chips
    assert op(tp, "k_proj").weight_bytes == pytest.approx(op(one, "k_proj").weight_bytes / kv_heads)
    assert tp.footprint.weight_bytes * n > weight_bytes(L70)
    (w,) = tp.warnings
    assert f"{kv_heads} KV heads" in w and "replicated 2×" in w
    assert place(L70, "gb200", parallelism=Parallelism(tensor=kv_heads), **kw).warnings == ()


def test_all_reduce_bytes_by_hand_and_the_per_direction_rate():
    batch, prompt, n = 2, 512, 4
    m, part = get_model(L70), get_part("h100-sxm")
    p = place(m, part, phase="prefill", batch=batch, prompt_tokens=prompt, parallelism=Parallelism(tensor=n))
    link = part.scale_up_link
    assert p.link is link and p.interconnect_bandwidth_bytes_per_s == link.per_direction_bytes_per_s
    ab = bytes_per_element("bf16")
    ring = 2 * (n - 1) / n
    message = batch * prompt * m.hidden_size * ab
    ar = comm_part(p, "tensor all-reduce")
    assert ar.calls == 2 * m.num_hidden_layers
    assert ar.bytes == pytest.approx(message * ring * 2 * m.num_hidden_layers, rel=1e-12)
    emb = comm_part(p, "embedding all-reduce")
    assert emb.calls == 1 and emb.bytes == pytest.approx(message * ring, rel=1e-12)
    logits = comm_part(p, "logits all-gather")  # the last position of each sequence only
    assert logits.bytes == pytest.approx(batch * m.vocab_size * ab * (n - 1) / n, rel=1e-12)
    assert p.comm_bytes == pytest.approx(ar.bytes + emb.bytes + logits.bytes, rel=1e-12)
    for c in p.comm.parts:
        assert c.time_s == pytest.approx(c.calls * link.latency_s + c.bytes / link.per_direction_bytes_per_s)
    calls = sum(c.calls for c in p.comm.parts)
    by_hand = calls * link.latency_s + p.comm_bytes / link.per_direction_bytes_per_s
    headline = calls * link.latency_s + p.comm_bytes / link.bidirectional_bytes_per_s  # the classic mistake
    assert p.comm_time_s == pytest.approx(by_hand, rel=1e-12)
    assert p.comm_time_s > 1.5 * headline
    d = p.to_dict()
    assert d["collective_calls"] == calls and d["collective_latency_s"] == link.latency_s
    assert d["interconnect_bidirectional_bytes_per_s"] == link.bidirectional_bytes_per_s
    assert p.interconnect_intensity == pytest.approx(p.cost.flops / p.comm_bytes)
    assert p.interconnect_ridge_point_flop_per_byte == pytest.approx(
        p.peak_flops_per_s / link.per_direction_bytes_per_s)
    assert interconnect_ridge_flop_per_byte(1e15, link) == pytest.approx(1e15 / link.per_direction_bytes_per_s)


def test_ring_factor_grows_towards_two():
    per_call = []
    for n in (2, 4, 8):
        p = place(L70, "h100-sxm", phase="decode", batch=16, parallelism=Parallelism(tensor=n))
        ar = comm_part(p, "tensor all-reduce")
        per_call.append(ar.bytes / ar.calls / (16 * get_model(L70).hidden_size * 2))
    assert per_call == pytest.approx([2 * (n - 1) / n for n in (2, 4, 8)], rel=1e-12)


def test_batch_one_decode_collectives_are_latency_bound():
    link = get_part("h100-sxm").scale_up_link
    p = place(L70, "h100-sxm", phase="decode", context_tokens=4096, parallelism=Parallelism(tensor=2))
    latency = p.comm.calls * link.latency_s
    assert p.comm_time_s - p.comm_bytes / link.per_direction_bytes_per_s == pytest.approx(latency, rel=1e-12)
    assert latency > 0.9 * p.comm_time_s
    assert p.bound == "memory"
    one = place(L70, "h100-sxm", phase="decode", context_tokens=4096)
    assert not one.fits_in_memory and p.fits_in_memory
    assert p.time_estimate_s < one.time_estimate_s  # weights / 2 per chip beats the all-reduces


# ---- the step's time and its bound ------------------------------------------------------------


def test_without_overlap_comm_is_added_with_overlap_the_max():
    kw = dict(phase="prefill", batch=1, prompt_tokens=4096)
    for part in ("h100-sxm", "l4"):
        off = place(L70, part, parallelism=Parallelism(tensor=8), **kw)
        on = place(L70, part, parallelism=Parallelism(tensor=8, overlap_comm=True), **kw)
        c, m, k = off.compute_time_s, off.memory_time_s, off.comm_time_s
        assert (on.compute_time_s, on.memory_time_s, on.comm_time_s) == (c, m, k)
        assert off.time_estimate_s == pytest.approx(max(c, m) + k, rel=1e-12)
        assert on.time_estimate_s == pytest.approx(max(c, m, k), rel=1e-12)
        assert on.time_estimate_s <= off.time_estimate_s
        # the operator-by-operator sum follows the same rule (it was comm-added even with overlap)
        ops_sum = off.time_estimate_per_op_sum_s - k
        assert on.time_estimate_per_op_sum_s == pytest.approx(max(ops_sum, k), rel=1e-12)
        assert on.time_estimate_per_op_sum_s < off.time_estimate_per_op_sum_s
        assert on.time_estimate_per_op_sum_s >= on.time_estimate_s * (1 - 1e-12)
        assert off.tokens_per_s_estimate == pytest.approx(4096 / off.time_estimate_s)


def test_an_interconnect_bound_split_found_by_computation():
    # Prefill on n chips: per chip ~2·P·tokens/n FLOPs against 2·layers all-reduces of the whole
    # activations (tokens × hidden), each 2(n−1)/n of it sent. The link loses when the hand-computed
    # all-reduce time beats the FLOPs' time; which splits those are is computed here, not typed.
    tokens = 4096
    outcomes = set()
    for model, pid, n in ((L8, "l4", 8), (L8, "h100-sxm", 8), (L8, "h100-sxm", 2), (L70, "h100-sxm", 8),
                          (L70, "l4", 2)):
        m, part = get_model(model), get_part(pid)
        link = part.scale_up_link or part.host_link
        p = place(m, part, phase="prefill", batch=1, prompt_tokens=tokens, parallelism=Parallelism(tensor=n))
        compute_by_hand = 2 * m.parameter_count() * tokens / n / part.peak_flops_per_s("bf16")
        comm_by_hand = (2 * m.num_hidden_layers * tokens * m.hidden_size * 2 * 2 * (n - 1) / n
                        / link.per_direction_bytes_per_s + 2 * m.num_hidden_layers * link.latency_s)
        assert p.compute_time_s == pytest.approx(compute_by_hand, rel=0.25)  # + attention's FLOPs
        assert p.comm_time_s == pytest.approx(comm_by_hand, rel=0.05)  # + the embedding and logits
        slowest_other = max(p.compute_time_s, p.memory_time_s)
        if abs(comm_by_hand / slowest_other - 1) > 0.1:  # clear either way
            link_loses = comm_by_hand > slowest_other
            assert (p.bound == "interconnect") == link_loses, (model, pid, n)
            outcomes.add(link_loses)
    assert outcomes == {True, False}
    # the same split over the slower link is the more interconnect-bound one
    slow = place(L8, "l4", phase="prefill", prompt_tokens=tokens, parallelism=Parallelism(tensor=8))
    fast = place(L8, "h100-sxm", phase="prefill", prompt_tokens=tokens, parallelism=Parallelism(tensor=8))
    assert slow.comm_time_s / slow.compute_time_s > fast.comm_time_s / fast.compute_time_s


def test_bound_is_the_largest_of_the_three_times():
    prompts = np.array([1, 16, 128, 1024, 8192, 65536])
    p = place(L8, "l4", phase="prefill", prompt_tokens=prompts, parallelism=Parallelism(tensor=8))
    times = np.stack([p.compute_time_s, p.memory_time_s, p.comm_time_s])
    expected = np.array(["compute", "memory", "interconnect"])[np.argmax(times, axis=0)]
    assert list(p.bound) == list(expected)
    assert len(set(p.bound)) == 3  # a prompt sweep over PCIe crosses all three roofs
    for i, n in enumerate(prompts):
        assert place(L8, "l4", phase="prefill", prompt_tokens=int(n), parallelism=Parallelism(tensor=8)).bound == \
            p.bound[i]


# ---- pipeline parallel ---------------------------------------------------------------------------


@pytest.mark.parametrize("model,pp", [(L70, 2), (L70, 3), (MOE_BIG, 4), (L8, 4)])
def test_pipeline_does_not_cut_the_latency_of_one_batch(model, pp):
    kw = dict(phase="decode", batch=1, context_tokens=4096)
    one = place(model, "h200", **kw)  # a hypothetical big-enough chip: compare time terms, not the fit
    p = place(model, "h200", parallelism=Parallelism(pipeline=pp), **kw)
    assert p.time_estimate_s >= one.time_estimate_s
    stages = stage_placements(model, "h200", parallelism=Parallelism(pipeline=pp), **kw)
    # one batch passes through the stages in turn: Σ of every stage's time + the sends between them
    total = sum(s.stage_repeats * s.stage_time_s for s in stages)
    assert sum(s.stage_repeats for s in stages) == pp
    assert p.time_estimate_s == pytest.approx(total + (pp - 1) * p.pipeline_send_s, rel=1e-12)
    # so it is one chip's time plus the sends (the stages' work adds up to the whole model's)
    assert p.time_estimate_s == pytest.approx(one.time_estimate_s + (pp - 1) * p.pipeline_send_s, rel=1e-3)
    assert p.time_estimate_s < pp * p.stage_time_s + (pp - 1) * p.pipeline_send_s + 1e-15
    assert p.pipeline_send_s == pytest.approx(
        p.link.latency_s + get_model(model).hidden_size * 2 / p.link.per_direction_bytes_per_s)
    assert p.comm_time_s == 0 and p.comm.calls == 0
    # memory: the fullest chip holds ceil(layers/pp) layers' weights + the embedding (first stage) or,
    # when the stages are equal, + the lm_head and the final norm (last stage)
    m = get_model(model)
    table = m.vocab_size * m.hidden_size * 2  # embedding (and the untied lm_head), bf16
    norm = m.hidden_size * 2
    layer_weights = weight_bytes(m) - 2 * table - norm
    fullest = -(-m.num_hidden_layers // pp) / m.num_hidden_layers * layer_weights + table
    fullest += norm if m.num_hidden_layers % pp == 0 else 0
    assert p.footprint.weight_bytes == pytest.approx(fullest, rel=1e-12)
    assert p.footprint.weight_bytes < 1.15 * one.footprint.weight_bytes / pp
    assert p.memory_required_bytes == max(s.memory_required_bytes for s in stages)
    assert p.stage_time_s == max(s.stage_time_s for s in stages)


def test_uneven_pipeline_reports_the_fullest_chip_and_agrees_with_max_batch():
    # 80 layers over 3 stages: 27 + 27 + 26. The last stage (lm_head) is the busiest at batch 1,
    # the first (27 layers + embedding) the fullest: the fit must be the fullest chip's.
    par = Parallelism(pipeline=3)
    stages = stage_placements(L70, "h100-sxm", phase="decode", batch=1, context_tokens=4096, parallelism=par)
    first, last = stages[0], stages[-1]
    assert first.memory_required_bytes > last.memory_required_bytes
    assert last.stage_time_s > first.stage_time_s
    mb = max_batch_that_fits_on_chips(L70, "h100-sxm", 4097, par)
    assert place(L70, "h100-sxm", phase="decode", batch=mb, context_tokens=4096, parallelism=par).fits_in_memory
    assert not place(L70, "h100-sxm", phase="decode", batch=mb + 1, context_tokens=4096,
                     parallelism=par).fits_in_memory


def test_bubble_fraction():
    assert bubble_fraction(1, 7) == 0
    for p in (2, 4, 8):
        values = [bubble_fraction(p, m) for m in (1, 2, 4, 64)]
        assert values[0] == pytest.approx((p - 1) / p)
        assert values == sorted(values, reverse=True) and values[-1] < 0.1
        assert bubble_fraction(p, p) == pytest.approx((p - 1) / (2 * p - 1))
    for bad in ((0, 1), (2, 0)):
        with pytest.raises(RooflineInputError):
            bubble_fraction(*bad)


def test_more_stages_than_layers_is_refused():
    layers = get_model(L8).num_hidden_layers
    with pytest.raises(RooflineInputError, match=f"{layers + 1} .*{layers} layers"):
        place(L8, "h100-sxm", phase="decode", parallelism=Parallelism(pipeline=layers + 1))


def _stage_bounds(model, part, par, **kw):
    """Each pipeline stage's own lower bound (its chip's compute, memory and least communication,
    overlapped), with how many stages it stands for."""
    return [(s.stage_repeats, float(np.asarray(s.stage_lower_bound_s))) for s in
            stage_placements(model, part, parallelism=par, **kw)]


@pytest.mark.parametrize("model,pp", [(L70, 2), (L70, 4), (MOE_BIG, 4), (L8, 4), (L70, 3)])
def test_pipeline_decode_bound_at_batch_1_is_the_stages_in_turn(model, pp):
    """One sequence's token crosses every stage one after another (its next token needs it), each stage
    reading its weights: at batch 1 the bound is the SUM of the stages' bounds, about one chip's bound —
    not the busiest stage's (card many-chips-pipeline-latency teaches the busiest stage as a red flag)."""
    kw = dict(phase="decode", batch=1, context_tokens=4096)
    par = Parallelism(pipeline=pp)
    p = place(model, "h200", parallelism=par, **kw)
    one = place(model, "h200", **kw)
    crossing = sum(n * lb for n, lb in _stage_bounds(model, "h200", par, **kw))
    busiest = max(lb for _, lb in _stage_bounds(model, "h200", par, **kw))
    assert float(p.time_lower_bound_s) == pytest.approx(crossing, rel=1e-12)
    assert float(p.pipeline_crossing_lower_bound_s) == pytest.approx(crossing, rel=1e-12)
    assert float(p.busiest_stage_lower_bound_s) == pytest.approx(busiest, rel=1e-12)
    assert p.pipeline_lower_bound_basis == "crossing" and busiest < crossing
    assert float(p.time_lower_bound_s) == pytest.approx(float(one.time_lower_bound_s), rel=1e-3)  # one chip's
    assert float(p.time_lower_bound_s) <= float(p.time_estimate_s)
    d = json.loads(json.dumps(p.to_dict()))
    assert d["pipeline_lower_bound_basis"] == "crossing" and d["time_lower_bound_s"] == pytest.approx(crossing)


def test_pipeline_decode_bound_is_below_every_micro_batch_schedule_and_the_busiest_stage_binds_when_full():
    """The bound holds for any schedule: m micro-batches of b/m sequences (m ≤ b) take at least the larger
    of one micro-batch crossing every stage and the busiest stage doing m of them. With enough sequences
    to keep every stage busy the busiest stage's bound for the whole step can bind."""
    model, pp, part, ctx = L70, 4, "h200", 4096
    par = Parallelism(pipeline=pp)
    for b in (1, 2, 3, 4, 8, 64, 512):
        bound = float(place(model, part, phase="decode", batch=b, context_tokens=ctx, parallelism=par).time_lower_bound_s)
        for m in [d for d in (1, 2, 4, 8, 16, 64, 512) if d <= b and b % d == 0]:
            stages = _stage_bounds(model, part, par, phase="decode", batch=b // m, context_tokens=ctx)
            schedule = max(sum(n * lb for n, lb in stages), m * max(lb for _, lb in stages))
            assert bound <= schedule * (1 + 1e-12), (b, m)
    full = place(model, part, phase="decode", batch=512, context_tokens=ctx, parallelism=par)
    assert full.pipeline_lower_bound_basis == "busiest stage"
    assert float(full.time_lower_bound_s) == pytest.approx(float(full.busiest_stage_lower_bound_s), rel=1e-12)
    assert float(full.pipeline_crossing_lower_bound_s) < float(full.time_lower_bound_s)


def test_pipeline_prefill_bound_is_the_busiest_stage_for_a_long_prompt_and_the_crossing_for_a_short_one():
    """A long prompt flows through the stages in chunks (the busiest stage binds); a short one cannot keep
    the stages busy: its last chunk crosses them in turn, each reading its weights."""
    par = Parallelism(pipeline=2)
    long = place(L70, "h100-sxm", phase="prefill", prompt_tokens=4096, parallelism=par)
    short = place(L70, "h100-sxm", phase="prefill", prompt_tokens=8, parallelism=par)
    assert long.pipeline_lower_bound_basis == "busiest stage" and short.pipeline_lower_bound_basis == "crossing"
    one_token = stage_placements(L70, "h100-sxm", phase="prefill", prompt_tokens=1, parallelism=par)
    crossing = sum(s.stage_repeats * float(s.stage_lower_bound_s) for s in one_token)
    assert float(short.time_lower_bound_s) == pytest.approx(crossing, rel=1e-12)
    assert float(short.time_lower_bound_s) > float(short.busiest_stage_lower_bound_s)
    assert place(L70, "h100-sxm", phase="decode").pipeline_lower_bound_basis is None  # no pipeline


def test_arrays_of_batch_take_each_elements_pipeline_bound():
    par = Parallelism(tensor=2, pipeline=4)
    batches = np.array([1, 8, 512])
    p = place(L70, "h200", phase="decode", batch=batches, context_tokens=4096, parallelism=par)
    for i, b in enumerate(batches):
        s = place(L70, "h200", phase="decode", batch=int(b), context_tokens=4096, parallelism=par)
        assert p.time_lower_bound_s[i] == pytest.approx(float(s.time_lower_bound_s), rel=1e-12)
        assert p.pipeline_lower_bound_basis[i] == s.pipeline_lower_bound_basis


def test_cli_place_says_which_pipeline_bound_binds(capsys):
    code, out, _ = run(capsys, *PLACE, "--pipeline-parallel", "2")
    p = place(L70, "h100-sxm", phase="decode", context_tokens=4096, parallelism=Parallelism(pipeline=2))
    from roofline_lessons.core.units import duration

    assert code == 0 and "the bound is one token crossing the 2 stages one after another" in out
    assert f"time lower bound     {duration(p.time_lower_bound_s)} for the whole step" in out
    assert duration(p.busiest_stage_lower_bound_s) in out
    assert "no collectives in this split" in out and "ring" not in out.split("least collective traffic")[1][:40]
    # a batch that fits (78 GiB of 80 per chip) and keeps both stages busy: compute-bound, the busiest stage binds
    code, out, err = run(capsys, *PLACE, "--pipeline-parallel", "2", "--batch", "640", "--context", "128")
    assert code == 0 and "the bound is the busiest stage's for the whole step" in out and "does not fit" not in err


# ---- expert parallel -----------------------------------------------------------------------------


def _expert_params(p):
    return sum(o.weight_params * o.layers for o in p.cost.ops if o.name.startswith("experts_"))


@pytest.mark.parametrize("e", [2, 4, 8])
def test_expert_parallel_spreads_experts_and_sequences(e):
    batch = 64
    kw = dict(phase="decode", batch=batch, context_tokens=2048)
    one = place(MOE_BIG, "h200", **kw)
    ep = place(MOE_BIG, "h200", parallelism=Parallelism(expert=e), **kw)
    assert _expert_params(ep) == pytest.approx(_expert_params(one) / e, rel=1e-12)
    experts = _expert_params(one) * 2  # bf16 bytes
    assert ep.footprint.weight_bytes == pytest.approx(one.footprint.weight_bytes - experts + experts / e, rel=1e-12)
    # the sequences are split over the groups: attention and KV are those of batch / e sequences
    local = place(MOE_BIG, "h200", phase="decode", batch=batch // e, context_tokens=2048)
    attn = next(o for o in ep.cost.ops if o.name.startswith("attention"))
    assert attn.flops == next(o for o in local.cost.ops if o.name.startswith("attention")).flops
    assert ep.footprint.kv_cache_bytes == pytest.approx(local.footprint.kv_cache_bytes, rel=1e-12)
    # all-to-all: each chip sends (e-1)/e of its group's routed token vectors, twice per MoE layer
    m = get_model(MOE_BIG)
    a2a = comm_part(ep, "expert all-to-all")
    assert a2a.calls == 2 * m.num_hidden_layers
    by_hand = 2 * m.num_hidden_layers * (batch / e) * m.num_experts_per_tok * m.hidden_size * 2 * (e - 1) / e
    assert a2a.bytes == pytest.approx(by_hand, rel=1e-12)
    assert ep.tokens_per_s_estimate == pytest.approx(batch / ep.time_estimate_s)


def test_expert_parallel_with_tensor_parallel_inside_each_group():
    kw = dict(phase="decode", batch=64, context_tokens=2048)
    ep = place(MOE_BIG, "h200", parallelism=Parallelism(expert=4), **kw)
    both = place(MOE_BIG, "h200", parallelism=Parallelism(tensor=2, expert=4), **kw)
    assert both.chips == 8
    # each chip of a group receives every token routed to the group whole (its experts are split by
    # columns), so TP inside the group does not cut the all-to-all bytes per chip, bound or estimate
    assert comm_part(both, "expert all-to-all").bytes == pytest.approx(comm_part(ep, "expert all-to-all").bytes)
    assert comm_part(both, "expert all-to-all").least_bytes == pytest.approx(
        comm_part(ep, "expert all-to-all").least_bytes)
    assert _expert_params(both) == pytest.approx(_expert_params(ep) / 2)
    assert {c.name.split(" ")[0] for c in both.comm.parts} >= {"tensor", "expert"}


def test_expert_parallel_refusals():
    with pytest.raises(RooflineInputError, match="dense"):
        place(L70, "h100-sxm", phase="decode", parallelism=Parallelism(expert=2))
    with pytest.raises(RooflineInputError, match="128 experts"):
        place(MOE_SMALL, "h100-sxm", phase="decode", parallelism=Parallelism(expert=3))


# ---- which link ---------------------------------------------------------------------------------


def test_link_choice():
    pcie_card = get_part("h100-pcie")
    link, notes = choose_link(pcie_card, Parallelism(tensor=2))
    assert link is pcie_card.scale_up_link and "bridge" in link.name and notes == ()
    link, notes = choose_link(pcie_card, Parallelism(tensor=4))
    assert link is pcie_card.host_link and len(notes) == 1 and "PCIe" in notes[0]
    p = place(L8, pcie_card, phase="decode", parallelism=Parallelism(tensor=4))
    assert p.link.kind == "pcie" and any("PCIe" in w for w in p.warnings)
    with pytest.raises(RooflineInputError, match="domain of 2"):
        choose_link(pcie_card, Parallelism(tensor=4, link="scale-up"))
    with pytest.raises(RooflineInputError, match="no scale-out link"):
        place(L70, "h100-pcie", phase="decode", parallelism=Parallelism(tensor=8, pipeline=2))
    l4 = get_part("l4")
    link, notes = choose_link(l4, Parallelism(tensor=2))
    assert link is l4.host_link and "no scale-up link" in notes[0]
    with pytest.raises(RooflineInputError, match="PCIe only"):
        choose_link(l4, Parallelism(tensor=2, link="scale-up"))
    assert choose_link("gb200", Parallelism(tensor=8, expert=8))[0].max_chips >= 64
    assert choose_link("h100-sxm", Parallelism()) == (None, ())


def test_forcing_pcie_on_an_nvlink_part_costs_time():
    kw = dict(phase="prefill", batch=1, prompt_tokens=2048)
    nv = place(L70, "h100-sxm", parallelism=Parallelism(tensor=8), **kw)
    pc = place(L70, "h100-sxm", parallelism=Parallelism(tensor=8, link="pcie"), **kw)
    assert pc.link is get_part("h100-sxm").host_link and pc.warnings == ()
    assert pc.comm_bytes == nv.comm_bytes
    bw = pc.link.per_direction_bytes_per_s, nv.link.per_direction_bytes_per_s
    assert (pc.comm_time_s - pc.comm.calls * pc.link.latency_s) == pytest.approx(
        (nv.comm_time_s - nv.comm.calls * nv.link.latency_s) * bw[1] / bw[0])


# ---- what fits --------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [L8, L70, "qwen3.8-27b", MOE_SMALL, "mistral-7b"])
def test_max_batch_on_one_chip_is_the_single_chip_figure(model):
    contexts = np.array([1024, 8192, 32768])
    for kw in (dict(), dict(kv_dtype="fp8", memory_utilization=0.9), dict(weights_dtype="fp8")):
        expected = max_batch_that_fits(model, "h200", contexts, **kw)
        got = max_batch_that_fits_on_chips(model, "h200", contexts, Parallelism(), **kw)
        np.testing.assert_array_equal(got, expected)
        assert max_batch_that_fits_on_chips(get_model(model), get_part("h200"), 4096, Parallelism(), **kw) == \
            max_batch_that_fits(model, "h200", 4096, **kw)


def test_max_batch_grows_with_tensor_parallel_and_matches_the_fit():
    batches = [max_batch_that_fits_on_chips(L70, "h100-sxm", 8193, Parallelism(tensor=n)) for n in (1, 2, 4, 8)]
    assert batches[0] == 0 and all(b > a for a, b in zip(batches, batches[1:]))
    assert batches[2] > 2 * batches[1]  # the weights' share shrinks too
    for model, part, par in ((L70, "h100-sxm", Parallelism(tensor=4)), (L70, "gb200", Parallelism(tensor=16)),
                             (MOE_BIG, "h200", Parallelism(expert=4)), (MOE_BIG, "h200", Parallelism(tensor=2, expert=4)),
                             ("qwen3.8-27b", "l4", Parallelism(tensor=4))):
        mb = max_batch_that_fits_on_chips(model, part, 8193, par)
        assert mb > 0
        assert place(model, part, phase="decode", batch=mb, context_tokens=8192, parallelism=par).fits_in_memory
        nxt = mb + par.expert  # one more sequence in every expert group
        assert not place(model, part, phase="decode", batch=nxt, context_tokens=8192, parallelism=par).fits_in_memory


def test_the_moe_fits_a_node_not_a_chip():
    one = place(MOE_BIG, "h200", phase="decode", batch=1, context_tokens=4096)
    node = place(MOE_BIG, "h200", phase="decode", batch=1, context_tokens=4096, parallelism=Parallelism(tensor=8))
    assert not one.fits_in_memory and node.fits_in_memory
    kv = kv_cache_bytes_per_sequence(MOE_BIG, 4097)
    kv_heads = get_model(MOE_BIG).num_key_value_heads
    assert node.footprint.kv_cache_bytes == pytest.approx(kv / kv_heads)  # 8 chips > 4 KV heads


# ---- numpy arrays ---------------------------------------------------------------------------


def test_arrays_of_batch_give_arrays_equal_to_scalar_placements():
    batches = np.array([1, 8, 64])
    par = Parallelism(tensor=2)
    p = place(L8, "h100-sxm", phase="decode", batch=batches, context_tokens=1024, parallelism=par)
    assert isinstance(p.bound, np.ndarray) and p.bound.shape == (3,) and set(p.bound) <= {"memory", "compute",
                                                                                             "interconnect"}
    for name in ("time_lower_bound_s", "comm_time_s", "comm_bytes", "memory_required_bytes", "stage_time_s"):
        assert np.shape(getattr(p, name)) == (3,), name
    for i, b in enumerate(batches):
        s = place(L8, "h100-sxm", phase="decode", batch=int(b), context_tokens=1024, parallelism=par)
        assert p.bound[i] == s.bound
        assert p.time_estimate_s[i] == pytest.approx(s.time_estimate_s, rel=1e-12)
        assert p.comm_time_s[i] == pytest.approx(s.comm_time_s, rel=1e-12)
    json.dumps(p.to_dict())


def test_arrays_through_uneven_pipeline_stages_match_scalars():
    # 80 layers in 3 stages: at 1 prompt token the last stage (lm_head) is the busiest, at 8,192 the
    # first (one more layer): every element must be its own busiest stage, as a scalar placement is.
    prompts = np.array([1, 8192])
    par = Parallelism(tensor=2, pipeline=3)
    p = place(L70, "h100-sxm", phase="prefill", prompt_tokens=prompts, parallelism=par)
    d = p.to_dict()
    json.dumps(d)
    for i, n in enumerate(prompts):
        s = place(L70, "h100-sxm", phase="prefill", prompt_tokens=int(n), parallelism=par)
        ds = s.to_dict()
        for k in ("flops", "bytes", "weight_bytes", "compute_time_s", "memory_time_s", "comm_time_s", "comm_bytes",
                  "time_lower_bound_s", "time_estimate_per_op_sum_s", "memory_required_bytes",
                  "collective_calls", "bound"):
            assert d[k][i] == pytest.approx(ds[k], rel=1e-12) if k != "bound" else d[k][i] == ds[k], (k, n)


def test_w8a8_arrays_serialise():
    p = place(L8, "h100-sxm", phase="decode", batch=np.array([1, 64]), weights_dtype="fp8", compute_dtype="fp8",
              parallelism=Parallelism(tensor=2))
    d = json.loads(json.dumps(p.to_dict()))
    assert len(d["interconnect_ridge_point"]) == 2


# ---- serving ------------------------------------------------------------------------------------


def test_request_timeline_one_chip_equals_no_parallelism():
    kw = dict(prompt_tokens=1024, output_tokens=32, batch=4, speculative_tokens=2, acceptance=0.6)
    a = request_timeline(L8, "h100-sxm", **kw)
    b = request_timeline(L8, "h100-sxm", parallelism=Parallelism(), **kw)
    c = request_timeline(L8, "h100-sxm", parallelism=Parallelism(overlap_comm=True), **kw)
    assert a.to_dict() == b.to_dict()
    da, dc = a.to_dict(), c.to_dict()
    assert all(_same(da[k], dc[k]) for k in da)
    np.testing.assert_allclose(a.step_s, c.step_s, rtol=1e-12)


def test_request_timeline_with_tensor_parallel():
    kw = dict(prompt_tokens=2048, output_tokens=16, batch=2)
    par = Parallelism(tensor=2)
    one = request_timeline(L70, "h200", **kw)
    tp = request_timeline(L70, "h200", parallelism=par, **kw)
    tp_overlap = request_timeline(L70, "h200", parallelism=Parallelism(tensor=2, overlap_comm=True), **kw)
    assert tp.chips == 2 and tp.memory_required_bytes < 0.6 * one.memory_required_bytes
    pre = place(L70, "h200", phase="prefill", batch=2, prompt_tokens=2048, parallelism=par)
    assert tp.ttft_s == pytest.approx(float(pre.time_estimate_s), rel=1e-12)
    assert tp.ttft_s == pytest.approx(max(pre.compute_time_s, pre.memory_time_s) + pre.comm_time_s, rel=1e-12)
    dec = place(L70, "h200", phase="decode", batch=2, context_tokens=2048, parallelism=par)
    assert tp.step_s[0] == pytest.approx(float(dec.time_estimate_s), rel=1e-12) and dec.comm_time_s > 0
    assert tp_overlap.e2e_s < tp.e2e_s
    d = tp.to_dict()
    assert d["chips"] == 2 and d["per_chip"] is True and d["parallelism"] == "TP 2"
    assert d["output_tokens_per_s_per_chip"] == pytest.approx(tp.output_tokens_per_s / 2)
    assert one.to_dict()["per_chip"] is False


@pytest.mark.parametrize("extra", [dict(speculative_tokens=3, acceptance=0.6), dict(prefix_cached_tokens=2048),
                                   dict(chunk_tokens=1024), dict(speculative_tokens=2, acceptance=0.5,
                                                                 draft_model=L8)])
def test_request_timeline_through_uneven_pipeline_stages(extra):
    # 80 layers over 3 stages; at batch 64 the busiest stage is the first, which holds no lm_head
    kw = dict(prompt_tokens=4096, output_tokens=8, batch=64, **extra)
    one = request_timeline(L70, "h200", **kw)
    pp = request_timeline(L70, "h200", parallelism=Parallelism(pipeline=3), **kw)
    assert pp.ttft_s >= one.ttft_s and pp.e2e_s >= one.e2e_s  # pipelining one batch cuts no latency
    assert pp.memory_required_bytes < 0.4 * one.memory_required_bytes


def test_request_timeline_pipeline_prefix_caching_is_each_stages_extension():
    par = Parallelism(pipeline=3)
    fresh = request_timeline(L70, "h200", prompt_tokens=4096, output_tokens=2, parallelism=par)
    cached = request_timeline(L70, "h200", prompt_tokens=4096, output_tokens=2, prefix_cached_tokens=2048,
                              parallelism=par)
    short = request_timeline(L70, "h200", prompt_tokens=2048, output_tokens=2, parallelism=par)
    assert short.ttft_s < cached.ttft_s < fresh.ttft_s


# ---- the CLI --------------------------------------------------------------------------------------


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


PLACE = ("place", "--hardware", "h100-sxm", "--model", L70, "--phase", "decode", "--context", "4096")


def test_cli_place_tensor_parallel_json(capsys):
    code, out, err = run(capsys, *PLACE, "--tensor-parallel", "2", "--json")
    assert code == 0 and err == ""
    d = json.loads(out)
    p = place(L70, "h100-sxm", phase="decode", context_tokens=4096, parallelism=Parallelism(tensor=2))
    assert d["chips"] == 2 and d["per_chip"] is True and d["tensor_parallel"] == 2
    assert d["interconnect_bandwidth_bytes_per_s"] == get_part("h100-sxm").scale_up_link.per_direction_bytes_per_s
    assert d["comm_bytes"] == pytest.approx(p.comm_bytes) and d["comm_time_s"] == pytest.approx(p.comm_time_s)
    assert d["bound"] in {"memory", "compute", "interconnect"} and d["overlap_comm"] is False
    assert d["memory_required_bytes"] == pytest.approx(p.memory_required_bytes)
    assert [c["name"] for c in d["comm"]] == [c.name for c in p.comm.parts]
    code, out, _ = run(capsys, *PLACE, "--json")
    d1 = json.loads(out)
    assert d1["chips"] == 1 and d1["per_chip"] is False and d1["comm_bytes"] == 0


def test_cli_place_text_says_per_chip(capsys):
    code, out, _ = run(capsys, *PLACE, "--tensor-parallel", "2")
    assert code == 0 and "PER CHIP" in out and "per direction" in out and "not overlapped" in out
    code, out, _ = run(capsys, *PLACE, "--tensor-parallel", "2", "--overlap-comm")
    assert code == 0 and "overlapped with compute (best case)" in out
    code, out, _ = run(capsys, *PLACE, "--pipeline-parallel", "3")
    assert code == 0 and "fullest chip" in out and "next pipeline stage" in out
    code, out, _ = run(capsys, *PLACE)
    assert "PER CHIP" not in out


def test_cli_link_flags(capsys):
    code, out, err = run(capsys, "place", "--hardware", "h100-pcie", "--model", L8, "--phase", "decode",
                         "--tensor-parallel", "4", "--json")
    assert code == 0 and "PCIe" in err and json.loads(out)["link"] == get_part("h100-pcie").host_link.name
    code, out, _ = run(capsys, *PLACE, "--tensor-parallel", "2", "--link", "pcie", "--json")
    assert code == 0 and json.loads(out)["interconnect_bandwidth_bytes_per_s"] == \
        get_part("h100-sxm").host_link.per_direction_bytes_per_s


def test_cli_serve_per_chip(capsys):
    code, out, _ = run(capsys, "serve", "--hardware", "h100-sxm", "--model", L70, "--prompt", "1024", "--output",
                       "64", "--tensor-parallel", "2", "--price-per-hour", "3")
    assert code == 0 and "per chip" in out and "per chip-hour" in out and "2 × " in out
    code, out, _ = run(capsys, "serve", "--hardware", "h100-sxm", "--model", L70, "--prompt", "1024", "--output",
                       "64", "--tensor-parallel", "2", "--price-per-hour", "3", "--json")
    d = json.loads(out)
    t = request_timeline(L70, "h100-sxm", prompt_tokens=1024, output_tokens=64, parallelism=Parallelism(tensor=2))
    assert d["chips"] == 2 and d["output_tokens_per_s_per_chip"] == pytest.approx(t.output_tokens_per_s_per_chip)
    assert d["cost_per_million_output_tokens"] == pytest.approx(3 / 3600 / t.output_tokens_per_s_per_chip * 1e6)


CLI_BAD = [
    (("--tensor-parallel", "3"), "64 attention heads"),
    (("--pipeline-parallel", "81"), "80 layers"),
    (("--link", "nvlink"), "nvlink"),
    (("--expert-parallel", "2"), "dense"),
    (("--tensor-parallel", "0"), "tensor-parallel"),
    (("--tensor-parallel", "two"), "tensor-parallel"),
    (("--replicas", "0"), "replicas"),
]


@pytest.mark.parametrize("extra,needle", CLI_BAD)
@pytest.mark.parametrize("command", ["place", "serve"])
def test_cli_bad_parallel_input_is_one_line(capsys, command, extra, needle):
    base = PLACE if command == "place" else ("serve", "--hardware", "h100-sxm", "--model", L70, "--prompt", "64",
                                             "--output", "4")
    code, out, err = run(capsys, *base, *extra)
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_cli_scale_up_on_a_pcie_only_part(capsys):
    code, out, err = run(capsys, "place", "--hardware", "l4", "--model", L8, "--phase", "decode",
                         "--tensor-parallel", "2", "--link", "scale-up")
    assert code == 2 and out == "" and err.count("\n") == 1 and "l4" in err and "PCIe only" in err


# ---- chip_shares, directly ---------------------------------------------------------------------


def test_chip_shares_cover_every_layer_once():
    from roofline_lessons.core.costs import Workload

    m = get_model(MOE_BIG)
    for p in (1, 2, 3, 4, 7):
        shares = chip_shares(m, Workload(phase="decode"), Parallelism(pipeline=p), None)
        assert shares[0].first and shares[-1].last
        base, extra = divmod(m.num_hidden_layers, p)
        counts = [base + (1 if i < extra else 0) for i in range(p)]
        assert {s.layers for s in shares} == set(counts)
        assert max(s.layers for s in shares) - min(s.layers for s in shares) <= 1


def test_the_measured_gpt_fast_split_is_below_its_bound():
    (m,) = get_part("a100-80gb").measurements("decode_tokens_per_s")
    p = place(m.model, "a100-80gb", phase="decode", batch=1, context_tokens=0, parallelism=Parallelism(tensor=8))
    assert p.link is get_part("a100-80gb").scale_up_link and p.fits_in_memory
    assert m.tokens_per_s < p.tokens_per_s_estimate  # a measurement never beats the bound
    assert m.tokens_per_s > 0.3 * p.tokens_per_s_estimate  # and is not far below it either
    one = place(m.model, "a100-80gb", phase="decode", batch=1, context_tokens=0)
    assert m.tokens_per_s > one.tokens_per_s_estimate  # 8 chips did beat what one chip's bandwidth allows


def test_flushed_bubble_and_steady_state_idle_are_different_questions():
    from roofline_lessons.core.parallel import bubble_fraction, steady_state_idle_fraction

    # one batch split into m micro-batches that must all leave before the next step: (p−1)/(m+p−1)
    assert bubble_fraction(4, 1) == pytest.approx(3 / 4)
    assert bubble_fraction(4, 4) == pytest.approx(3 / 7)
    assert bubble_fraction(1, 1) == 0
    # m independent batches circulating in steady decode: idle only while m < p
    assert steady_state_idle_fraction(4, 1) == pytest.approx(3 / 4)
    assert steady_state_idle_fraction(4, 2) == pytest.approx(1 / 2)
    assert steady_state_idle_fraction(4, 4) == 0 and steady_state_idle_fraction(4, 16) == 0
    for bad in ((0, 1), (4, 0), (2.5, 1), (True, 1), ("4", 2)):
        with pytest.raises(RooflineInputError, match="whole numbers >= 1"):
            steady_state_idle_fraction(*bad)
        with pytest.raises(RooflineInputError, match="whole numbers >= 1"):
            bubble_fraction(*bad)
