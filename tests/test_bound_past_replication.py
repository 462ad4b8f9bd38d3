"""The lower bound past what the estimate replicates (core.parallel, core.placement, core.models, the CLI).

A strict reader found four places where the bound was not a bound: the KV cache replicated over the
tensor-parallel chips (t above the KV heads, or an MLA latent), uniform routing for a model whose router
is group-limited (DeepSeek-V3: at most 4 of 8 groups per token), and the two links past one server priced
as if in-server traffic could not use the NIC. Every expected figure is counted here by hand from the
model's shapes and the catalog, never typed.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

import roofline_lessons.core.parallel as parallel
from roofline_lessons.cli import main
from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.hardware import get_part
from roofline_lessons.core.memory import kv_cache_bytes_per_sequence
from roofline_lessons.core.model_config import model_from_config
from roofline_lessons.core.models import get_model
from roofline_lessons.core.parallel import Parallelism, remote_groups_per_token
from roofline_lessons.core.placement import place

DSV3 = "deepseek-v3"
BF16 = 2
HF_CONFIGS = Path(__file__).parent / "data" / "hf_configs"
#: DeepSeek-V3's published config.json (tests/data/hf_configs), as a learner would read it
V3_CONFIG = json.loads((HF_CONFIGS / "deepseek-ai--DeepSeek-V3" / "config.json").read_text(encoding="utf-8"))
#: the same shapes under DeepSeek-V2's model_type, whose routing depends on topk_method
V2_SHAPED = {**V3_CONFIG, "model_type": "deepseek_v2", "architectures": ["DeepseekV2ForCausalLM"], "n_group": 8,
             "topk_group": 3}


def _compulsory_kv_read(p) -> float:
    return float(p.cost.kv_read_bytes - p.cost.kv_scratch_bytes)


# ---- 1. the KV cache: replicated in the estimate and the memory, read once per TP group in the bound ----------


def test_an_mla_latent_is_read_once_per_tensor_parallel_group_in_the_bound():
    """The reader's example: DeepSeek-V3 on 8 H200, batch 64 at 32,768 tokens. The estimate keeps the
    latent replicated on the 8 chips (each reads all of it); the bound reads 1/8 per chip, as decode
    context parallel shards it."""
    m, part = get_model(DSV3), get_part("h200")
    batch, ctx, t = 64, 32768, 8
    kw = dict(phase="decode", batch=batch, context_tokens=ctx, weights_dtype="fp8")
    p = place(m, part, parallelism=Parallelism(tensor=t), **kw)
    history = batch * ctx * m.kv_bytes_per_token("bf16")  # every sequence's latent, every layer
    assert float(p.cost.kv_read_bytes) >= history  # the estimate: each chip reads the whole latent
    assert _compulsory_kv_read(p) == pytest.approx(history / t)  # the bound: 1/8 of it
    # the memory keeps the replication: every chip holds the whole latent cache
    assert float(p.footprint.kv_cache_bytes) == pytest.approx(batch * kv_cache_bytes_per_sequence(m, ctx + 1))
    # the bound by hand: memory-bound, compulsory bytes ÷ bandwidth, with the KV at 1/8
    replicated = float(p.cost.compulsory_bytes) + history * (1 - 1 / t) + batch * m.kv_bytes_per_token() * (1 - 1 / t)
    assert p.lower_bound_roof == "memory"
    assert float(p.time_lower_bound_s) == pytest.approx(float(p.cost.compulsory_bytes) / part.memory_bandwidth_bytes_per_s)
    assert replicated / part.memory_bandwidth_bytes_per_s == pytest.approx(46.2e-3, rel=2e-3)  # the old figure
    assert 19e-3 < float(p.time_lower_bound_s) < 20e-3  # the reader's ~19.5 ms
    assert float(p.time_lower_bound_s) <= float(p.time_estimate_s)


@pytest.mark.parametrize("mid, t, heads_per_chip", [
    ("qwen3-235b-a22b", 8, 4),  # 4 KV heads on 8 chips: each head on 2
    ("llama-3.1-70b", 16, 8),  # 8 KV heads on 16 chips over two servers
    ("llama-3.1-70b", 8, 8),  # t = KV heads: nothing replicated, nothing changes
])
def test_gqa_kv_past_the_heads_is_sharded_in_the_bound_only(mid, t, heads_per_chip):
    m = get_model(mid)
    batch, ctx = 16, 8192
    p = place(m, "h100-sxm", phase="decode", batch=batch, context_tokens=ctx, parallelism=Parallelism(tensor=t))
    history = batch * ctx * m.kv_bytes_per_token("bf16")
    split = min(t, m.num_key_value_heads)
    assert heads_per_chip == m.num_key_value_heads
    # the estimate reads its KV heads' cache (1/min(t, KV heads)), the new token's own K and V included
    own = batch * m.kv_bytes_per_token("bf16")
    assert float(p.cost.kv_read_bytes) == pytest.approx((history + own) / split)
    assert _compulsory_kv_read(p) == pytest.approx(history / t)  # the bound: 1/t
    assert float(p.footprint.kv_cache_bytes) == pytest.approx(batch * kv_cache_bytes_per_sequence(m, ctx + 1) / split)
    replicated = t // split
    assert p.kv_replication == replicated
    named = [c for c in p.estimate_conventions if "decode context parallel" in c]
    assert (len(named) == 1) == (replicated > 1)
    assert float(p.time_lower_bound_s) <= float(p.time_estimate_s)


def test_replicated_kv_writes_are_not_compulsory_but_stay_in_the_estimate():
    """A prefill under TP 8 of DeepSeek-V3: each chip writes the whole latent (the estimate, with the
    activations' traffic), 1/8 of it compulsory. The op's total bytes are the single chip's."""
    m = get_model(DSV3)
    batch, prompt, t = 2, 4096, 8
    kw = dict(phase="prefill", batch=batch, prompt_tokens=prompt)
    one = next(o for o in model_cost(m, **kw).ops if o.name == "kv_cache_write")
    p = place(m, "h200", parallelism=Parallelism(tensor=t), **kw)
    chip = next(o for o in p.cost.ops if o.name == "kv_cache_write")
    written = batch * prompt * m.kv_bytes_per_token_per_layer("bf16")
    assert float(one.kv_write_bytes) == pytest.approx(written)
    assert float(chip.kv_write_bytes) == pytest.approx(written / t)
    assert float(chip.bytes) == pytest.approx(float(one.bytes))  # the estimate still writes it all
    assert float(chip.compulsory_bytes) == pytest.approx(written / t)
    assert "decode context parallel" in chip.note


def test_the_bound_stays_below_the_estimate_where_the_kv_is_replicated():
    batches = np.array([1.0, 16.0, 128.0])
    splits = (Parallelism(tensor=8), Parallelism(tensor=4, expert=2), Parallelism(tensor=8, pipeline=2),
              Parallelism(tensor=16), Parallelism(tensor=8, overlap_comm=True))
    seen = 0
    for mid in (DSV3, "qwen3-235b-a22b", "llama-3.1-70b", "gpt-oss-120b"):
        for phase, lengths in (("decode", {"context_tokens": 32768}), ("prefill", {"prompt_tokens": 2048})):
            for par in splits:
                try:
                    p = place(mid, "h200", phase=phase, batch=batches, parallelism=par, **lengths)
                except RooflineInputError:
                    continue
                seen += 1
                assert np.all(np.asarray(p.time_lower_bound_s) <= np.asarray(p.time_estimate_s) * (1 + 1e-12))
                assert np.all(np.asarray(p.cost.compulsory_bytes) <= np.asarray(p.cost.bytes) * (1 + 1e-12))
    assert seen >= 20


# ---- 2. group-limited routing ------------------------------------------------------------------------


def test_deepseek_v3_routes_to_at_most_4_of_8_groups_in_the_catalog_and_its_config():
    m = get_model(DSV3)
    assert (m.n_group, m.topk_group) == (8, 4) and m.group_limited_routing
    assert "n_group" in m.source
    for mid in ("qwen3-235b-a22b", "gpt-oss-120b", "mixtral-8x7b", "llama-3.1-8b"):
        assert not get_model(mid).group_limited_routing
    read = model_from_config(V3_CONFIG)
    assert (read.n_group, read.topk_group) == (8, 4) and V3_CONFIG["topk_method"] == "noaux_tc"
    # DeepSeek-V2: group-limited only under group_limited_greedy (DeepSeek-V2's); greedy (V2-Lite's, and
    # transformers' default) is not
    v2 = model_from_config({**V2_SHAPED, "topk_method": "group_limited_greedy"})
    assert (v2.n_group, v2.topk_group) == (8, 3) and v2.group_limited_routing
    for method in ("greedy", None):
        cfg = {key: v for key, v in {**V2_SHAPED, "topk_method": method}.items() if v is not None}
        free = model_from_config(cfg)
        assert (free.n_group, free.topk_group) == (0, 0) and not free.group_limited_routing
    # a V3 config without the fields takes transformers' DeepseekV3Config defaults, 8 and 4
    bare = {key: v for key, v in V3_CONFIG.items() if key not in ("n_group", "topk_group")}
    assert (model_from_config(bare).n_group, model_from_config(bare).topk_group) == (8, 4)


@pytest.mark.parametrize("change, needle", [
    ({"n_group": 7}, "n_group 7 and topk_group 4 do not fit 256 routed experts"),
    ({"topk_group": 9}, "topk_group 9 do not fit"),
    ({"n_group": 256, "topk_group": 4}, "do not fit 256 routed experts with 8 per token"),
])
def test_bad_routing_groups_are_one_line(change, needle):
    with pytest.raises(RooflineInputError, match=needle):
        model_from_config({**V3_CONFIG, **change})
    with pytest.raises(RooflineInputError, match="topk_method 'top2' .*greedy, gready, group_limited_greedy"):
        model_from_config({**V2_SHAPED, "topk_method": "top2"})
    with pytest.raises(RooflineInputError, match="group-limited routing needs"):
        dataclasses.replace(get_model(DSV3), topk_group=9)


def _enumerated_remote(E: int, k: int, units: int, n_group: int, topk_group: int) -> float:
    """Mean over origin units of the OTHER units a token reaches, every choice of groups and of experts
    among theirs enumerated (each equally likely)."""
    size, per_unit = E // n_group, E // units
    total, count = 0.0, 0
    for groups in itertools.combinations(range(n_group), topk_group):
        pool = [x for g in groups for x in range(g * size, (g + 1) * size)]
        for chosen in itertools.combinations(pool, k):
            reached = {x // per_unit for x in chosen}
            for origin in range(units):
                total += len(reached - {origin})
                count += 1
    return total / count


@pytest.mark.parametrize("E, k, units, n_group, topk_group", [
    (8, 2, 4, 4, 2),  # one routing group per unit
    (8, 2, 2, 4, 2),  # two routing groups per unit
    (8, 2, 8, 4, 2),  # a routing group spans two units
    (12, 2, 3, 4, 2),  # unaligned: units of 4 experts over groups of 3
    (16, 3, 4, 8, 3),
])
def test_group_limited_remote_groups_match_an_enumeration(E, k, units, n_group, topk_group):
    limited = _enumerated_remote(E, k, units, n_group, topk_group)
    got = remote_groups_per_token(E, k, units, n_group, topk_group)
    assert got == pytest.approx(min(limited, remote_groups_per_token(E, k, units)), abs=1e-12)
    assert got <= remote_groups_per_token(E, k, units) + 1e-12


def test_deepseek_v3_reaches_at_most_4_servers_in_the_bound_and_5_3_in_the_estimate():
    m = get_model(DSV3)
    E, k = m.num_experts, m.num_experts_per_tok
    uniform = 8 * (1 - math.comb(E - E // 8, k) / math.comb(E, k))  # servers a token reaches, own included
    assert uniform == pytest.approx(5.29, abs=0.01)
    limited = remote_groups_per_token(E, k, 8, m.n_group, m.topk_group) * 8 / 7  # 8 × one server's chance
    s = E // m.n_group
    by_hand = 8 * (m.topk_group / m.n_group) * (1 - math.comb((m.topk_group - 1) * s, k) / math.comb(m.topk_group * s, k))
    assert limited == pytest.approx(by_hand) and by_hand <= m.topk_group < uniform


def test_expert_parallel_over_two_servers_uses_the_group_limit_in_the_bound_only():
    """DeepSeek-V3, EP 16 on H100 over two 8-chip servers: 4 routing groups per server. The NIC term of
    the bound: each token crosses to the other server unless all 4 of its groups are on its own; the
    estimate still sends one copy per chosen expert under uniform routing."""
    m = get_model(DSV3)
    E, k, h, moe = m.num_experts, m.num_experts_per_tok, m.hidden_size, m.num_moe_layers
    batch = 64
    kw = dict(phase="decode", batch=batch, context_tokens=1024, weights_dtype="fp8", compute_dtype="fp8")
    p = place(m, "h100-sxm", parallelism=Parallelism(expert=16), **kw)
    across = next(c for c in p.comm.parts if c.name.endswith("across servers"))
    tok = batch / 16
    s, g, top = E // m.n_group, m.n_group, m.topk_group
    # the other server holds 4 of the 8 groups: j of them drawn (hypergeometric), then the 8 experts among
    # the 4·32 drawn experts miss its j·32 with chance C((4 − j)·32, 8)/C(128, 8)
    miss = sum(math.comb(4, j) * math.comb(4, top - j) / math.comb(g, top)
               * math.comb((top - j) * s, k) / math.comb(top * s, k) for j in range(0, top + 1))
    assert across.least_bytes == pytest.approx(2 * moe * tok * (1 - miss) * h * BF16)
    assert across.bytes == pytest.approx(2 * moe * tok * k * 8 / 16 * h * BF16)  # the estimate: unchanged
    # the same model without the limit: the estimate is the same, the bound's all-to-all larger
    free = dataclasses.replace(m, n_group=0, topk_group=0)
    q = place(free, "h100-sxm", parallelism=Parallelism(expert=16), **kw)
    assert float(q.time_estimate_s) == pytest.approx(float(p.time_estimate_s))
    assert float(q.comm.bound_bytes) > float(p.comm.bound_bytes)
    assert any("not limited to 4 of the 8 expert groups" in c for c in p.estimate_conventions)
    assert not any("expert groups per token" in c for c in q.estimate_conventions)


# ---- 3. expert slots: uniform over the slots, said once ----------------------------------------------------


def test_the_expert_slots_convention_says_uniform_over_the_slots_only():
    doc = parallel.__doc__
    assert "as if it chose k of the slots" not in doc
    assert "uniform over the SLOTS" in doc and "a token chooses k of the slots" in doc
    assert "only\n  when every expert has equally many replicas" in doc


# ---- 4. two links past one server ------------------------------------------------------------------------------


@pytest.mark.parametrize("mid, par", [
    ("llama-3.1-70b", Parallelism(tensor=16)),
    (DSV3, Parallelism(expert=16)),
    (DSV3, Parallelism(tensor=2, expert=72, expert_slots=288, attention_data_parallel=True)),
])
def test_past_one_server_the_bound_lets_both_links_carry_the_in_server_bytes(mid, par):
    part = get_part("h100-sxm")
    up, net = part.scale_up_link, part.scale_out_link
    p = place(mid, part, phase="decode", batch=144, context_tokens=1024, weights_dtype="fp8", compute_dtype="fp8",
              parallelism=par)
    N = sum(float(c.least_bytes) for c in p.comm.parts if c.link is net)
    U = sum(float(c.least_bytes) for c in p.comm.parts if c.link is up)
    assert N > 0 and U > 0
    nbw, ubw = net.per_direction_bytes_per_s, up.per_direction_bytes_per_s
    assert float(p.comm_lower_bound_s) == pytest.approx(max(N / nbw, (N + U) / (nbw + ubw)))
    assert float(p.comm_lower_bound_s) <= max(N / nbw, U / ubw) * (1 + 1e-12)  # never above the old rule
    assert float(p.comm.network_bound_bytes) == pytest.approx(N)
    assert float(p.time_lower_bound_s) <= float(p.time_estimate_s)


def test_in_one_server_the_bound_is_the_link_alone():
    p = place("llama-3.1-70b", "h100-sxm", phase="decode", batch=8, context_tokens=1024,
              parallelism=Parallelism(tensor=8))
    link = get_part("h100-sxm").scale_up_link
    assert float(p.comm_lower_bound_s) == pytest.approx(float(p.comm.bound_bytes) / link.per_direction_bytes_per_s)


# ---- the CLI says which convention each figure follows ------------------------------------------------


def _run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def test_place_says_the_bound_shards_the_kv_and_the_estimate_keeps_it(capsys):
    out, err = _run(capsys, "place", "--hardware", "h200", "--model", DSV3, "--phase", "decode", "--batch", "64",
                    "--context", "32768", "--tensor-parallel", "8", "--weights", "fp8")
    bound = next(line for line in out.splitlines() if line.lstrip().startswith("time lower bound"))
    assert "the bound shards the KV across the 8 chips (1/8 per chip), as decode context parallel does" in bound
    assert "the estimate and memory keep it replicated 8×" in bound
    assert "the KV cache replicated 8× on the tensor-parallel chips" in out  # an estimate convention
    assert "the lower bound shards it across the 8 chips, as decode context parallel does" in err
    plain, _ = _run(capsys, "place", "--hardware", "h200", "--model", "llama-3.1-70b", "--phase", "decode",
                    "--tensor-parallel", "8")
    assert "decode context parallel" not in plain  # 8 KV heads on 8 chips: nothing replicated


def test_place_names_the_routing_and_what_its_byte_count_is(capsys):
    out, _ = _run(capsys, "place", "--hardware", "h100-sxm", "--model", DSV3, "--phase", "decode", "--batch", "64",
                  "--context", "1024", "--tensor-parallel", "2", "--expert-parallel", "4", "--weights", "fp8",
                  "--compute", "fp8")
    comm = next(line for line in out.splitlines() if line.lstrip().startswith("communication"))
    assert "sent or received (the expert all-to-all counted on its receive side: with TP 2" in comm
    assert ("the mean step under uniform routing (group-limited routing lowers the bound's all-to-all to at most "
            "4 of 8 expert groups per token)") in out
    ep, _ = _run(capsys, "place", "--hardware", "h100-sxm", "--model", "qwen3-30b-a3b", "--phase", "decode",
                 "--batch", "64", "--expert-parallel", "16")
    comm = next(line for line in ep.splitlines() if line.lstrip().startswith("communication"))
    assert " sent; " in comm and "received" not in comm  # EP alone: each chip's sends
    assert "group-limited" not in ep and "the mean step under uniform routing" in ep
    assert "the network carries the cross-server bytes, both links share the rest" in ep
    serve, _ = _run(capsys, "serve", "--hardware", "h100-sxm", "--model", DSV3, "--prompt", "512", "--output", "8",
                    "--batch", "64", "--expert-parallel", "8", "--weights", "fp8", "--compute", "fp8")
    assert "group-limited routing lowers the bound's all-to-all to at most 4 of 8 expert groups per token" in serve


def test_place_json_keeps_the_estimate_bytes_and_the_bound_bytes_apart(capsys):
    out, _ = _run(capsys, "place", "--hardware", "h200", "--model", DSV3, "--phase", "decode", "--batch", "64",
                  "--context", "32768", "--tensor-parallel", "8", "--weights", "fp8", "--json")
    d = json.loads(out)
    m = get_model(DSV3)
    history = 64 * 32768 * m.kv_bytes_per_token("bf16")
    assert d["kv_read_bytes"] >= history and d["compulsory_bytes"] < d["bytes"] - history * 7 / 8 * 0.99
    assert d["kv_replication"] == 8 and d["group_limited_routing"] == {"n_group": 8, "topk_group": 4}
