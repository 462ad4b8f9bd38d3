"""Past one server: the scale-out link, hierarchical collectives, expert slots, attention data parallel and
replicas (core.parallel, core.placement, the CLI).

Every expected figure is counted here by hand from the model's shapes and the catalog's links, never typed.
"""

import json
import math

import numpy as np
import pytest

from roofline_lessons.cli import main
from roofline_lessons.core.costs import expected_experts_touched
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.hardware import LINK_KINDS, _link, get_part, list_parts
from roofline_lessons.core.models import get_model
from roofline_lessons.core.parallel import Parallelism, remote_groups_per_token, split_topology
from roofline_lessons.core.placement import place
from roofline_lessons.topics.serving import request_timeline

H100 = "h100-sxm"
L70, L8 = "llama-3.1-70b", "llama-3.1-8b"
QWEN_MOE = "qwen3-30b-a3b"  # 128 experts, 8 per token, every layer MoE
BF16 = 2


def part_named(p, name):
    return next(c for c in p.comm.parts if c.name == name)


def hit(slots: int, k: int, groups: int) -> float:
    """Chance one group of ``groups`` (slots/groups slots) gets at least one of a token's k choices."""
    return 1 - math.comb(slots - slots // groups, k) / math.comb(slots, k)


def _group_limited_reach(slots: int, k: int, dests: int, n_group: int, topk_group: int) -> float:
    """Mean over ``dests`` destinations (contiguous slots/dests each) of the chance a token reaches it when it
    draws topk_group of n_group routing groups (contiguous slots/n_group each), then k slots among theirs:
    every choice of groups enumerated."""
    import itertools

    size, d = slots // n_group, slots // dests
    pool = topk_group * size
    total = 0.0
    for u in range(dests):
        mine = set(range(u * d, (u + 1) * d))
        miss = [math.comb(pool - sum(len(mine & set(range(g * size, (g + 1) * size))) for g in chosen), k)
                / math.comb(pool, k) for chosen in itertools.combinations(range(n_group), topk_group)]
        total += 1 - sum(miss) / len(miss)
    return total / dests


# ---- the catalog's scale-out links -------------------------------------------------------------------


def test_scale_out_links_are_checked_and_per_direction():
    assert "scale-out" in LINK_KINDS
    have = [pid for pid in list_parts() if get_part(pid).scale_out_link is not None]
    for pid in ("a100-80gb", "h100-sxm", "h200", "b200", "gb200", "mi300x"):
        assert pid in have
    for pid in have:
        lk = get_part(pid).scale_out_link
        assert lk.kind == "scale-out" and lk.max_chips is None and get_part(pid).link("scale-out") is lk
        assert lk.per_direction_bytes_per_s == pytest.approx(lk.bidirectional_bytes_per_s / 2, rel=1e-12)
        assert lk.latency_basis == "assumed" and "not a measurement" in lk.latency_source
        assert lk.source.strip() and lk.as_of.strip()
    # 400 Gb/s each way = 50 GB/s per direction (DGX H100/H200/B200: one ConnectX-7 per GPU); A100: 200 Gb/s
    for pid in ("h100-sxm", "h200", "b200", "gb200", "mi300x"):
        assert get_part(pid).scale_out_link.per_direction_bytes_per_s == 400e9 / 8
    assert get_part("a100-80gb").scale_out_link.per_direction_bytes_per_s == 200e9 / 8
    for pid in ("h100-pcie", "l4", "l40s", "rtx-4090", "mi325x"):
        assert get_part(pid).scale_out_link is None
    with pytest.raises(RooflineInputError, match="no scale-out link.*reference NIC"):
        get_part("l4").link("scale-out")


def test_scale_out_loader_takes_no_max_chips():
    good = dict(name="NIC", per_direction_bytes_per_s=50e9, bidirectional_bytes_per_s=100e9, latency_s=2e-5,
                latency_basis="assumed", latency_source="a guess", source="a datasheet", as_of="2026-01-01")
    assert _link("p", "scale-out", good).max_chips is None
    with pytest.raises(ValueError, match="no max_chips"):
        _link("p", "scale-out", dict(good, max_chips=8))
    with pytest.raises(ValueError, match="half of"):
        _link("p", "scale-out", dict(good, per_direction_bytes_per_s=100e9))  # the Gb/s mistaken for both ways


# ---- Parallelism's new fields --------------------------------------------------------------------------


def test_parallelism_fields_and_labels():
    assert Parallelism(tensor=8, replicas=2).label == "TP 8 × DP 2"
    assert Parallelism(tensor=8, replicas=2).chips == 16 and Parallelism(tensor=8, replicas=2).chips_per_replica == 8
    adp = Parallelism(tensor=4, expert=80, attention_data_parallel=True)
    assert adp.label == "TP 4 × attention DP 80, MoE EP 320" and adp.expert_parallel_degree == 320
    assert Parallelism(expert=16, expert_slots=160).label == "EP 16, 160 expert slots"
    for bad in (dict(replicas=0), dict(replicas=1.5), dict(expert_slots=0), dict(expert_slots=True),
                dict(attention_data_parallel="yes"), dict(network_latency_s=-1), dict(network_latency_s=math.inf),
                dict(link="scale-out")):
        with pytest.raises(RooflineInputError):
            Parallelism(**bad)
    # the old keyword set still works, unchanged
    p = Parallelism(tensor=2, expert=1, pipeline=1, overlap_comm=False, link="auto", collective_latency_s=None)
    assert p.chips == 2 and p.label == "TP 2"


# ---- TP across two servers ----------------------------------------------------------------------------


def test_tensor_parallel_16_is_hierarchical_over_two_servers():
    batch = 8
    p = place(L70, H100, phase="decode", batch=batch, context_tokens=4096, parallelism=Parallelism(tensor=16))
    part, m = get_part(H100), get_model(L70)
    up, net = part.scale_up_link, part.scale_out_link
    assert p.link is up and p.scale_out_link is net and p.server_chips == 8 and p.servers_per_replica == 2
    M = batch * m.hidden_size * BF16  # one all-reduce's message
    L = m.num_hidden_layers
    inside = part_named(p, "tensor all-reduce (2 per layer)")
    across = part_named(p, "tensor all-reduce (2 per layer) across servers")
    # reduce-scatter + all-gather in the server: the ring's 2·7/8 of M; across: the ring over 2 servers of M/8
    assert inside.bytes == pytest.approx(2 * L * 2 * 7 / 8 * M) and inside.link is up
    assert across.bytes == pytest.approx(2 * L * 2 * 1 / 2 * M / 8) and across.link is net
    # the bound: NVLS sends M once in the server; SHARP sends the shard once across
    assert inside.least_bytes == pytest.approx(2 * L * M) and across.least_bytes == pytest.approx(2 * L * M / 8)
    # the estimate: each link's latency once per call, bytes at each link's per-direction bandwidth, added
    assert inside.time_s == pytest.approx(2 * L * up.latency_s + inside.bytes / up.per_direction_bytes_per_s)
    assert across.time_s == pytest.approx(2 * L * net.latency_s + across.bytes / net.per_direction_bytes_per_s)
    logits = part_named(p, "logits all-gather across servers")
    assert logits.bytes == pytest.approx(1 / 2 * batch * m.vocab_size * BF16 / 8) and logits.least_bytes == 0
    assert p.comm.calls == 2 * L + 2  # a collective over both links counts once
    # the bound runs the links at once: the larger of the two links' least bytes ÷ bandwidth
    by_link = {}
    for c in p.comm.parts:
        by_link[c.link.name] = by_link.get(c.link.name, 0.0) + float(c.least_bytes)
    expected = max(by_link[up.name] / up.per_direction_bytes_per_s, by_link[net.name] / net.per_direction_bytes_per_s)
    assert float(p.comm_lower_bound_s) == pytest.approx(expected)
    assert p.time_lower_bound_s <= p.time_estimate_s
    # the same 16 chips as if one server joined them (NVLink everywhere) are faster: the NIC costs time
    one_domain = get_part(H100)
    from dataclasses import replace
    wide = replace(one_domain, scale_up_link=replace(up, max_chips=16))
    q = place(L70, wide, phase="decode", batch=batch, context_tokens=4096, parallelism=Parallelism(tensor=16))
    assert q.scale_out_link is None and q.time_estimate_s < p.time_estimate_s


def test_network_latency_moves_the_estimate_only():
    kw = dict(phase="decode", batch=1, context_tokens=1024)
    catalog = get_part(H100).scale_out_link.latency_s  # the catalog's assumed figure
    assert 0 < catalog < 1e-4
    runs = [place(L70, H100, parallelism=Parallelism(tensor=16, network_latency_s=lat), **kw)
            for lat in (0, catalog, 1e-4)]
    assert len({float(p.time_lower_bound_s) for p in runs}) == 1
    est = [float(p.time_estimate_s) for p in runs]
    assert est == sorted(est) and est[0] < est[-1]
    default = place(L70, H100, parallelism=Parallelism(tensor=16), **kw)
    assert float(default.time_estimate_s) == pytest.approx(est[1])  # the catalog's assumed figure
    assert any("µs per call on the network" in c for c in default.estimate_conventions)


# ---- EP 16 over two servers --------------------------------------------------------------------------


def test_expert_parallel_16_sends_the_off_server_share_over_the_nic():
    batch = 64
    p = place(QWEN_MOE, H100, phase="decode", batch=batch, context_tokens=1024, parallelism=Parallelism(expert=16))
    m = get_model(QWEN_MOE)
    E, k, h, L = m.num_experts, m.num_experts_per_tok, m.hidden_size, m.num_moe_layers
    tok = batch / 16  # each chip is one expert group running 1/16 of the sequences
    calls = 2 * L  # dispatch + combine per MoE layer
    inside = part_named(p, "expert all-to-all (2 per MoE layer)")
    across = part_named(p, "expert all-to-all (2 per MoE layer) across servers")
    # the estimate: one copy per chosen expert; 7 of the 15 other chips are on this server, 8 on the other
    assert inside.bytes == pytest.approx(calls * tok * k * 7 / 16 * h * BF16)
    assert across.bytes == pytest.approx(calls * tok * k * 8 / 16 * h * BF16)
    # the bound: over NVLink once per other chip of the server hit, over the NIC once per other server hit
    assert inside.least_bytes == pytest.approx(calls * tok * 7 * hit(E, k, 16) * h * BF16)
    assert across.least_bytes == pytest.approx(calls * tok * 1 * hit(E, k, 2) * h * BF16)
    assert float(across.least_bytes) < float(across.bytes) and float(inside.least_bytes) < float(inside.bytes)
    assert p.time_lower_bound_s <= p.time_estimate_s
    # with everything on one server the two shares add up to the single-server all-to-all
    assert float(inside.bytes + across.bytes) == pytest.approx(calls * tok * k * 15 / 16 * h * BF16)


# ---- PP across servers --------------------------------------------------------------------------------


def test_pipeline_sends_between_servers_cross_the_nic():
    kw = dict(phase="decode", batch=4, context_tokens=1024)
    m, part = get_model(L70), get_part(H100)
    up, net = part.scale_up_link, part.scale_out_link
    p = place(L70, H100, parallelism=Parallelism(tensor=8, pipeline=2), **kw)
    send = 4 * m.hidden_size * BF16 / 8  # the stage's activations, 1/8 per chip
    assert p.comm.pipeline_send_bytes == pytest.approx(send) and p.comm.pipeline_network_sends == 1
    assert p.pipeline_send_s == pytest.approx(net.latency_s + send / net.per_direction_bytes_per_s)
    # TP 4 × PP 4: two stages per server, so one of the three sends crosses the NIC
    q = place(L70, H100, parallelism=Parallelism(tensor=4, pipeline=4), **kw)
    send4 = 4 * m.hidden_size * BF16 / 4
    up_s = up.latency_s + send4 / up.per_direction_bytes_per_s
    net_s = net.latency_s + send4 / net.per_direction_bytes_per_s
    assert q.comm.pipeline_network_sends == 1
    assert 3 * q.pipeline_send_s == pytest.approx(2 * up_s + net_s)
    assert q.time_estimate_s == pytest.approx(q.stage_time_s + q.other_stages_s + 2 * up_s + net_s)
    assert p.time_lower_bound_s <= p.time_estimate_s and q.time_lower_bound_s <= q.time_estimate_s


# ---- expert slots -------------------------------------------------------------------------------------


def _expert_params(p):
    return sum(o.weight_params * o.layers for o in p.cost.ops if o.name.startswith("experts_"))


def test_expert_slots_grow_the_weights_and_let_ep_not_divide_the_experts():
    m = get_model(QWEN_MOE)
    E, k, h, ie, L = m.num_experts, m.num_experts_per_tok, m.hidden_size, m.moe_intermediate_size, m.num_moe_layers
    with pytest.raises(RooflineInputError, match="expert parallel 3 does not divide .*128 experts"):
        place(QWEN_MOE, H100, phase="decode", parallelism=Parallelism(expert=3))
    batch = 48
    p = place(QWEN_MOE, H100, phase="decode", batch=batch, context_tokens=1024,
              parallelism=Parallelism(expert=3, expert_slots=129))
    per_expert = 3 * h * ie  # gate, up and down
    assert _expert_params(p) == pytest.approx(129 / 3 * per_expert * L)  # 43 whole experts on each chip
    # the weights read: the slots touched by all the step's tokens, split over the 3 groups
    read = sum(o.weight_bytes * o.layers for o in p.cost.ops if o.name.startswith("experts_"))
    touched = expected_experts_touched(129, k, batch)
    assert read == pytest.approx(touched / 3 * per_expert * L * BF16)
    plain = place(QWEN_MOE, H100, phase="decode", batch=batch, context_tokens=1024, parallelism=Parallelism(expert=4))
    assert p.footprint.weight_bytes > plain.footprint.weight_bytes  # 43 experts per chip against 32
    # the FLOPs per chip do not change with the slots: 1/e of the routed tokens
    q = place(QWEN_MOE, H100, phase="decode", batch=batch, context_tokens=1024,
              parallelism=Parallelism(expert=4, expert_slots=132))
    for name in ("experts_gate_up", "experts_down"):
        assert next(o for o in q.cost.ops if o.name == name).flops == pytest.approx(
            next(o for o in plain.cost.ops if o.name == name).flops)
    assert _expert_params(q) == pytest.approx(_expert_params(plain) * 132 / 128)
    assert any("132 expert slots" in w for w in q.warnings)
    # the all-to-all bound routes uniformly over the slots
    a2a = part_named(q, "expert all-to-all (2 per MoE layer)")
    assert a2a.least_bytes == pytest.approx(2 * L * batch / 4 * remote_groups_per_token(132, k, 4) * h * BF16)


@pytest.mark.parametrize("par, needle", [
    (Parallelism(expert=4, expert_slots=100), "fewer than .*128 experts"),
    (Parallelism(expert=3, expert_slots=130), "expert parallel 3 does not divide 130 expert slots.*multiple of 3"),
    (Parallelism(tensor=2, expert_slots=136), "redundant expert slots need expert parallel"),
])
def test_expert_slot_refusals(par, needle):
    with pytest.raises(RooflineInputError, match=needle):
        place(QWEN_MOE, H100, phase="decode", parallelism=par)
    with pytest.raises(RooflineInputError, match="dense"):
        place(L8, H100, phase="decode", parallelism=Parallelism(tensor=2, expert_slots=8))


# ---- attention data parallel -------------------------------------------------------------------------


def test_attention_data_parallel_layout_by_hand():
    m = get_model("deepseek-v3")
    batch, t, e = 64, 2, 4
    kw = dict(phase="decode", batch=batch, context_tokens=1024)
    adp = place(m, H100, parallelism=Parallelism(tensor=t, expert=e, attention_data_parallel=True), **kw)
    old = place(m, H100, parallelism=Parallelism(tensor=t, expert=e), **kw)
    E, k, h = m.num_experts, m.num_experts_per_tok, m.hidden_size
    L, moe, dense = m.num_hidden_layers, m.num_moe_layers, m.num_dense_mlp_layers
    # every chip holds E/(t·e) whole experts: the same expert weights per chip as TP t inside e groups
    assert _expert_params(adp) == pytest.approx(_expert_params(old))
    # the shared expert: whole on every chip, run on 1/t of the group's tokens
    for name in ("shared_expert_gate_up", "shared_expert_down"):
        a, o = (next(x for x in pl.cost.ops if x.name == name) for pl in (adp, old))
        assert a.weight_params == pytest.approx(t * o.weight_params) and a.flops == pytest.approx(o.flops)
    assert adp.footprint.weight_bytes > old.footprint.weight_bytes
    # the router runs on 1/t of the group's tokens
    r_adp, r_old = (next(x for x in pl.cost.ops if x.name == "router") for pl in (adp, old))
    assert r_adp.flops == pytest.approx(r_old.flops / t)
    # TP inside each group: attention's all-reduce (reduce-scatter + all-gather in MoE layers) and the dense
    # MLPs': L + dense all-reduces' bytes in 2·L calls; the MoE block needs none
    M = batch / e * h * BF16
    tp = part_named(adp, "tensor all-reduce (attention and dense MLP; MoE layers: reduce-scatter + all-gather)")
    assert tp.calls == 2 * L and tp.bytes == pytest.approx((L + dense) * 2 * (t - 1) / t * M)
    assert part_named(old, "tensor all-reduce (2 per layer)").bytes == pytest.approx(2 * L * 2 * (t - 1) / t * M)
    # the all-to-all over all t·e chips: each chip routes 1/t of its group's tokens, one copy per chosen expert
    tok = batch / e / t
    a2a = part_named(adp, "expert all-to-all (2 per MoE layer)")
    assert a2a.bytes == pytest.approx(2 * moe * tok * k * (t * e - 1) / (t * e) * h * BF16)
    # the bound: one copy per other chip reached under DeepSeek-V3's group-limited routing (8 routing groups of
    # 32 experts, one per chip here; a token draws 4 groups, then its 8 experts among their 128): another chip
    # is reached when its group is drawn (4/8) and one of the 8 lands in its 32 of the 128
    g, top, s = m.n_group, m.topk_group, E // m.n_group
    assert (g, top, t * e) == (8, 4, 8)
    reached = top / g * (1 - math.comb((top - 1) * s, k) / math.comb(top * s, k))
    assert a2a.least_bytes == pytest.approx(2 * moe * tok * (t * e - 1) * reached * h * BF16)
    assert reached < hit(E, k, t * e)  # fewer than uniform routing over all 256 experts would reach
    assert adp.time_lower_bound_s <= adp.time_estimate_s
    # with t = 1 the layout is expert parallel over every chip, as before
    one = place(m, H100, parallelism=Parallelism(expert=8, attention_data_parallel=True), **kw)
    ep = place(m, H100, parallelism=Parallelism(expert=8), **kw)
    assert float(one.time_estimate_s) == pytest.approx(float(ep.time_estimate_s))
    assert float(one.time_lower_bound_s) == pytest.approx(float(ep.time_lower_bound_s))


def test_attention_data_parallel_across_servers():
    m = get_model("deepseek-v3")
    batch = 2 * 144
    p = place(m, H100, phase="decode", batch=batch, context_tokens=1024, weights_dtype="fp8", compute_dtype="fp8",
              parallelism=Parallelism(expert=144, expert_slots=288, attention_data_parallel=True))
    k, h, moe = m.num_experts_per_tok, m.hidden_size, m.num_moe_layers
    assert p.servers_per_replica == 18 and p.chips == 144
    across = part_named(p, "expert all-to-all (2 per MoE layer) across servers")
    tok = batch / 144
    assert across.bytes == pytest.approx(2 * moe * tok * k * (144 - 8) / 144 * h * BF16)
    # the bound: each token once per other server its experts live on, under routing uniform within the
    # model's limit (4 of 8 groups of 36 slots; the 18 servers of 16 slots each do not align with them)
    reached = _group_limited_reach(288, k, 18, m.n_group, m.topk_group)
    assert across.least_bytes == pytest.approx(2 * moe * tok * 17 * reached * h * BF16)
    assert 6 < 17 * hit(288, k, 18) < 7  # uniform routing: each token's 8 experts on about six other servers
    assert 5 < 17 * reached < 6  # the model's group limit: fewer
    assert p.time_lower_bound_s <= p.time_estimate_s


def test_attention_data_parallel_refusals():
    with pytest.raises(RooflineInputError, match="llama-3.1-70b is dense.*replicas"):
        place(L70, H100, phase="decode", parallelism=Parallelism(tensor=8, attention_data_parallel=True))
    with pytest.raises(RooflineInputError, match="tensor × expert > 1"):
        place(QWEN_MOE, H100, phase="decode", parallelism=Parallelism(pipeline=2, attention_data_parallel=True))


# ---- replicas ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("par", [Parallelism(tensor=8), Parallelism(), Parallelism(tensor=2, pipeline=2)])
def test_replicas_leave_every_per_chip_figure_unchanged(par):
    from dataclasses import replace

    kw = dict(phase="decode", batch=8, context_tokens=2048)
    one = place(L70 if par.chips > 1 else L8, H100, parallelism=par, **kw)
    many = place(L70 if par.chips > 1 else L8, H100, parallelism=replace(par, replicas=3), **kw)
    assert many.chips == 3 * par.chips and many.chips_per_replica == par.chips and many.replicas == 3
    for attr in ("time_estimate_s", "time_lower_bound_s", "memory_required_bytes", "comm_bytes",
                 "tokens_per_s_estimate", "tokens_per_s_upper_bound"):
        assert float(getattr(many, attr)) == pytest.approx(float(getattr(one, attr))), attr
    assert float(many.cost.flops) == pytest.approx(float(one.cost.flops))
    assert float(many.aggregate_tokens_per_s_estimate) == pytest.approx(3 * float(one.tokens_per_s_estimate))
    assert float(many.aggregate_tokens_per_s_upper_bound) == pytest.approx(3 * float(one.tokens_per_s_upper_bound))
    assert "DP 3" in many.parallelism.label


def test_replicas_do_not_need_a_network():
    # 8 copies of one H100 PCIe card each: no scale-out link needed, the copies never talk
    p = place(L8, "h100-pcie", phase="decode", parallelism=Parallelism(replicas=8))
    assert p.chips == 8 and p.comm is None and p.per_chip


# ---- errors: which link, which domain ------------------------------------------------------------------


@pytest.mark.parametrize("part, par, needles", [
    ("h100-pcie", Parallelism(tensor=16), ("16 chips per copy exceed h100-pcie", "domain of 8", "no scale-out link")),
    ("l4", Parallelism(tensor=16), ("exceed l4", "no scale-out link")),
    ("mi325x", Parallelism(tensor=16), ("domain of 8", "mi325x has no scale-out link")),
    ("gb200", Parallelism(tensor=16, pipeline=9), ("tensor parallel = 16 chips straddles", "72-chip")),
    ("h100-sxm", Parallelism(tensor=4, pipeline=3, link="scale-up"), ("tensor × expert × pipeline", "12 chips")),
])
def test_a_split_past_the_domain_names_the_link_and_the_domain(part, par, needles):
    with pytest.raises(RooflineInputError) as err:
        place(L70, part, phase="decode", parallelism=par)
    for needle in needles:
        assert needle in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


def test_split_topology():
    topo = split_topology(H100, Parallelism(tensor=8, expert=1, pipeline=4))
    assert topo.scale_out is get_part(H100).scale_out_link and topo.server_chips == 8 and topo.servers(32) == 4
    assert split_topology("gb200", Parallelism(tensor=8, pipeline=9)).scale_out is None  # 72 chips: one rack
    assert split_topology("gb200", Parallelism(tensor=8, pipeline=18)).servers(144) == 2
    assert split_topology(H100, Parallelism(tensor=8, replicas=4)).scale_out is None  # copies never talk


# ---- the CLI --------------------------------------------------------------------------------------------


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


PLACE = ("place", "--hardware", H100, "--model", L70, "--phase", "decode", "--context", "1024")
SERVE = ("serve", "--hardware", H100, "--model", L70, "--prompt", "512", "--output", "16")


def test_cli_place_past_one_server(capsys):
    code, out, _ = run(capsys, *PLACE, "--tensor-parallel", "16")
    assert code == 0 and "PER CHIP" in out and "past one server" in out and "2 servers of 8 chips" in out
    net_us = get_part(H100).scale_out_link.latency_s * 1e6
    assert "over the network between servers" in out and f"{net_us:g} µs per call there (assumed)" in out
    code, out, _ = run(capsys, *PLACE, "--tensor-parallel", "16", "--network-latency", "5e-5", "--json")
    d = json.loads(out)
    p = place(L70, H100, phase="decode", context_tokens=1024,
              parallelism=Parallelism(tensor=16, network_latency_s=5e-5))
    assert d["scale_out_link"] == get_part(H100).scale_out_link.name and d["network_latency_s"] == 5e-5
    assert d["servers_per_replica"] == 2 and d["server_chips"] == 8
    assert d["network_bytes"] == pytest.approx(float(p.network_bytes)) and d["network_bytes"] > 0
    assert d["time_estimate_s"] == pytest.approx(float(p.time_estimate_s))
    assert {c["link"] for c in d["comm"]} == {get_part(H100).scale_up_link.name, d["scale_out_link"]}


def test_cli_new_flags_reach_the_json(capsys):
    code, out, _ = run(capsys, "place", "--hardware", H100, "--model", QWEN_MOE, "--phase", "decode", "--batch", "64",
                       "--tensor-parallel", "2", "--expert-parallel", "4", "--expert-slots", "136",
                       "--attention-data-parallel", "--replicas", "2", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["expert_slots"] == 136 and d["attention_data_parallel"] is True and d["replicas"] == 2
    assert d["chips"] == 16 and d["chips_per_replica"] == 8
    assert d["aggregate_tokens_per_s_estimate"] == pytest.approx(2 * d["tokens_per_s_estimate"])
    assert d["parallelism"] == "TP 2 × attention DP 4 × DP 2, MoE EP 8, 136 expert slots"


def test_cli_place_replicas_text_labels_the_aggregate(capsys):
    code, out, _ = run(capsys, *PLACE, "--tensor-parallel", "8", "--replicas", "2")
    assert code == 0 and "TP 8 × DP 2" in out and "batch 1 per copy" in out
    assert "for one copy of 8 chips" in out and "over all 16 chips, the aggregate" in out


def test_cli_serve_takes_the_new_flags_and_the_shared_ones(capsys):
    code, out, _ = run(capsys, *SERVE, "--tensor-parallel", "8", "--replicas", "3", "--memory-utilization", "0.8",
                       "--collective-latency", "5e-6", "--json")
    assert code == 0
    d = json.loads(out)
    t = request_timeline(L70, H100, prompt_tokens=512, output_tokens=16,
                         parallelism=Parallelism(tensor=8, collective_latency_s=5e-6))
    assert d["memory_utilization"] == 0.8 and d["replicas"] == 3 and d["chips"] == 24 and d["chips_per_replica"] == 8
    assert d["e2e_s"] == pytest.approx(t.e2e_s)  # the collective latency reached the estimate
    assert d["output_tokens_per_s_per_chip"] == pytest.approx(t.output_tokens_per_s_per_chip)  # per chip: unchanged
    assert d["aggregate_output_tokens_per_s"] == pytest.approx(3 * t.output_tokens_per_s)
    default = request_timeline(L70, H100, prompt_tokens=512, output_tokens=16, parallelism=Parallelism(tensor=8))
    assert t.e2e_s < default.e2e_s
    code, out, _ = run(capsys, *SERVE, "--tensor-parallel", "16", "--network-latency", "0")
    assert code == 0 and "16 × NVIDIA H100" in out and "per chip" in out
    code, out, _ = run(capsys, *SERVE, "--tensor-parallel", "8", "--replicas", "2")
    assert "over all 16 chips, the aggregate" in out and "batch 1 per copy" in out


BAD = [
    (("--replicas", "0"), "replicas must be a whole number >= 1, got '0'"),
    (("--expert-slots", "many"), "expert-slots must be a whole number >= 1, got 'many'"),
    (("--network-latency", "-1"), "--network-latency must be a number of seconds >= 0"),
    (("--attention-data-parallel", "--tensor-parallel", "8"), "dense"),
    (("--expert-slots", "128"), "dense"),
]


@pytest.mark.parametrize("extra,needle", BAD)
@pytest.mark.parametrize("base", [PLACE, SERVE])
def test_cli_bad_values_are_one_line(capsys, base, extra, needle):
    code, out, err = run(capsys, *base, *extra)
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_cli_refuses_past_a_domain_without_a_nic(capsys):
    code, out, err = run(capsys, "place", "--hardware", "h100-pcie", "--model", L8, "--phase", "decode",
                         "--tensor-parallel", "16")
    assert code == 2 and out == "" and err.count("\n") == 1 and "no scale-out link" in err


def test_arrays_of_batch_across_servers_match_scalars():
    par = Parallelism(tensor=4, expert=4, attention_data_parallel=True, pipeline=2)
    batches = np.array([8.0, 64.0])
    arr = place("deepseek-v3", H100, phase="decode", batch=batches, context_tokens=512, parallelism=par)
    for i, b in enumerate(batches):
        one = place("deepseek-v3", H100, phase="decode", batch=float(b), context_tokens=512, parallelism=par)
        assert float(np.asarray(arr.time_estimate_s)[i]) == pytest.approx(float(one.time_estimate_s))
        assert float(np.asarray(arr.time_lower_bound_s)[i]) == pytest.approx(float(one.time_lower_bound_s))
        assert float(np.asarray(arr.time_lower_bound_s)[i]) <= float(np.asarray(arr.time_estimate_s)[i])
