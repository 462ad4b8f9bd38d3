"""The lower bound is a bound and the estimate an estimate: the bound never exceeds the estimate, it
counts only compulsory traffic (checked against a hand count), it never pays a per-call latency, it
takes the least communication the link allows, and no measured figure in the catalog beats it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from roofline_lessons import get_model, get_part, place
from roofline_lessons.core.hardware import list_parts as all_part_ids
from roofline_lessons.core.models import list_models as all_model_ids
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.parallel import Parallelism

BATCHES = np.array([1.0, 8.0, 64.0])
FORMATS = (
    {},  # BF16 everything
    {"weights_dtype": "fp8", "compute_dtype": "fp8", "kv_dtype": "fp8", "quantized_weights": "mlp"},  # attention BF16
    {"weights_dtype": "int4"},  # weight-only, the linear recipe: dequantised on the fly
)
SPLITS = (None, Parallelism(tensor=8), Parallelism(tensor=2, pipeline=2), Parallelism(expert=2),
          Parallelism(tensor=2, overlap_comm=True),
          # past one 8-chip server: TP across two servers, pipeline stages on different servers, and the
          # attention-data-parallel layout whose all-to-all spans two servers
          Parallelism(tensor=16), Parallelism(tensor=8, pipeline=2),
          Parallelism(tensor=2, expert=8, attention_data_parallel=True))
#: an NVSwitch node that reduces in the switch, one that does not (and has no FP8 units), AMD, a TPU
PARTS = ("h100-sxm", "a100-80gb", "mi300x", "tpu-v5e")


def _placements(model_id: str, part_id: str):
    for phase, lengths in (("decode", {"context_tokens": 4096}), ("prefill", {"prompt_tokens": 1024})):
        for fmt in FORMATS:
            for par in SPLITS:
                try:
                    yield place(model_id, part_id, phase=phase, batch=BATCHES, parallelism=par, **lengths, **fmt)
                except RooflineInputError:
                    continue  # a combination the part or the model refuses (no FP8 units, heads not divisible)


@pytest.mark.parametrize("model_id", all_model_ids())
def test_the_bound_never_exceeds_the_estimate(model_id):
    seen = 0
    for part_id in PARTS:
        for p in _placements(model_id, part_id):
            seen += 1
            bound, estimate = np.asarray(p.time_lower_bound_s), np.asarray(p.time_estimate_s)
            assert np.all(bound > 0)
            assert np.all(bound <= estimate * (1 + 1e-12)), (model_id, part_id, p.workload, p.parallelism)
            assert np.all(np.asarray(p.cost.compulsory_bytes) <= np.asarray(p.cost.bytes) * (1 + 1e-12))
            assert np.all(np.asarray(p.tokens_per_s_upper_bound) >= np.asarray(p.tokens_per_s_estimate))
    assert seen > 20  # the grid really ran


def test_the_grid_reaches_past_one_server():
    """The bound-vs-estimate grid above really prices splits over two servers (not only refusals)."""
    crossing = [p for mid in ("llama-3.1-70b", "qwen3-30b-a3b") for p in _placements(mid, "h100-sxm")
                if p.scale_out_link is not None]
    assert len(crossing) >= 8
    assert any(p.parallelism.attention_data_parallel for p in crossing)
    for p in crossing:
        assert np.all(np.asarray(p.time_lower_bound_s) <= np.asarray(p.time_estimate_s) * (1 + 1e-12))
        assert np.all(np.asarray(p.network_bytes) > 0) or p.parallelism.pipeline > 1


def _llama_8b_hand_count(batch: float, *, prompt: int = 0, cached: int = 0) -> float:
    """Llama-3.1-8B's compulsory bytes from its config alone, in BF16: every weight but the embedding
    read once, one embedding row per token, the KV history read, the new K and V written, the ids
    (int32) in and the last position's logits out."""
    m = get_model("llama-3.1-8b")
    h, L, vocab = m.hidden_size, m.num_hidden_layers, m.vocab_size
    kv_per_token = L * m.num_key_value_heads * m.head_dim * 2 * 2  # K and V, 2 bytes each
    new = prompt if prompt else 1
    tokens = batch * new
    weights = (m.parameter_count() - vocab * h + tokens * h) * 2
    kv = batch * cached * kv_per_token + tokens * kv_per_token
    return weights + kv + tokens * 4 + batch * vocab * 2


@pytest.mark.parametrize("phase, batch, lengths", [
    ("decode", 1, {"context_tokens": 4096}),
    ("decode", 32, {"context_tokens": 4096}),
    ("prefill", 1, {"prompt_tokens": 2048}),
])
def test_compulsory_bytes_match_a_hand_count(phase, batch, lengths):
    p = place("llama-3.1-8b", "h100-sxm", phase=phase, batch=batch, **lengths)
    expected = _llama_8b_hand_count(batch, prompt=lengths.get("prompt_tokens", 0),
                                    cached=lengths.get("context_tokens", 0))
    assert p.cost.compulsory_bytes == pytest.approx(expected, rel=1e-12)
    assert p.memory_lower_bound_s == pytest.approx(expected / p.bandwidth_bytes_per_s, rel=1e-12)


def test_a_2048_token_prefill_is_mostly_activations_in_the_unfused_view_only():
    p = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=2048)
    assert p.cost.activation_bytes > p.cost.weight_bytes  # the estimate's convention: each activation via HBM
    assert p.cost.compulsory_bytes < 0.5 * p.cost.bytes
    assert p.memory_lower_bound_s < p.memory_time_s


def test_a_tp8_bound_does_not_move_with_the_collective_latency():
    kw = dict(phase="decode", batch=1, context_tokens=4096)
    runs = {lat: place("llama-3.1-8b", "h100-sxm", parallelism=Parallelism(tensor=8, collective_latency_s=lat), **kw)
            for lat in (0.0, 5e-6, 10e-6, 50e-6)}
    bounds = {lat: p.time_lower_bound_s for lat, p in runs.items()}
    estimates = [runs[lat].time_estimate_s for lat in sorted(runs)]
    assert len(set(bounds.values())) == 1
    assert estimates == sorted(estimates) and estimates[0] < estimates[-1]  # the estimate pays each call
    default = place("llama-3.1-8b", "h100-sxm", parallelism=Parallelism(tensor=8), **kw)
    assert default.time_estimate_s == pytest.approx(runs[10e-6].time_estimate_s)  # the catalog's assumed 10 µs
    assert default.time_lower_bound_s == bounds[0.0]


def test_in_switch_reduction_sends_each_byte_once_and_the_ring_two_times_seven_eighths():
    kw = dict(phase="decode", batch=8, context_tokens=1024, parallelism=Parallelism(tensor=8))
    nvls = place("llama-3.1-70b", "h100-sxm", **kw)
    assert nvls.link.in_switch_reduction
    reduce_parts = [c for c in nvls.comm.parts if "all-reduce" in c.name]
    assert reduce_parts
    for c in reduce_parts:
        assert c.least_bytes == pytest.approx(c.bytes / (2 * 7 / 8))
    # the same node without in-switch reduction: the ring's bytes are the least
    part = get_part("h100-sxm")
    ring_part = replace(part, scale_up_link=replace(part.scale_up_link, in_switch_reduction=False))
    ring = place("llama-3.1-70b", ring_part, **kw)
    for c in ring.comm.parts:
        if "all-gather" in c.name:
            assert c.least_bytes == 0  # vocab-parallel sampling gathers no logits
        else:
            assert c.least_bytes == pytest.approx(c.bytes)
    assert ring.comm.bound_bytes > nvls.comm.bound_bytes
    assert ring.comm_lower_bound_s > nvls.comm_lower_bound_s
    # an A100 node's NVSwitch does not reduce in the switch
    assert not get_part("a100-80gb").scale_up_link.in_switch_reduction


def test_bf16_weights_under_an_fp8_recipe_run_at_the_bf16_rate():
    p = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=4096, weights_dtype="fp8",
              compute_dtype="fp8", quantized_weights="mlp")
    q = next(op for op in p.cost.ops if op.name == "q_proj")
    gate = next(op for op in p.cost.ops if op.name == "gate_proj")
    assert q.unquantized_matmul_flops == q.weight_matmul_flops > 0  # attention stays BF16: the BF16 rate
    assert gate.unquantized_matmul_flops == 0  # the MLP is FP8: the FP8 rate
    bf16, fp8 = p.part.peak_flops_per_s("bf16"), p.part.peak_flops_per_s("fp8")
    assert p.op_compute_time_s(q) == pytest.approx(q.weight_matmul_flops / bf16 + q.other_flops / bf16)
    assert p.op_compute_time_s(gate) == pytest.approx(gate.weight_matmul_flops / fp8 + gate.other_flops / bf16)


def test_weight_only_dequant_overlaps_in_the_bound_and_adds_in_the_estimate():
    p = place("llama-3.1-8b", "h100-sxm", phase="decode", batch=64, context_tokens=1024, weights_dtype="int4")
    assert p.dequant_time_s > 0
    assert p.compute_time_s == pytest.approx(p.tensor_time_s + p.dequant_time_s)
    assert p.compute_lower_bound_s == pytest.approx(max(p.tensor_time_s, p.dequant_time_s))
    assert any("dequantisation in series" in c for c in p.estimate_conventions)


def test_every_measured_decode_rate_is_slower_than_its_bound():
    """Each end-to-end decode rate the catalog records (gpt-fast's, on one chip and on eight) is
    below the bound of the same workload: batch 1, BF16, a short prompt (context 0 is the least)."""
    checked = 0
    for part_id in all_part_ids():
        for m in get_part(part_id).measured:
            if m.tokens_per_s is None:
                continue
            said = f"{m.kernel} {m.conditions}".lower()
            assert "batch 1" in said and "bf16" in said, m  # the workload the bound below prices
            tp = 8 if "tensor parallel 8" in said else 1
            p = place(m.model, part_id, phase="decode", batch=1, context_tokens=0,
                      parallelism=Parallelism(tensor=tp) if tp > 1 else None)
            assert m.tokens_per_s < float(p.tokens_per_s_upper_bound), (part_id, m.model, m.kernel)
            checked += 1
    assert checked >= 2


def test_pipeline_stages_overlap_in_the_bound_and_run_in_turn_in_the_estimate():
    from roofline_lessons.core.placement import stage_placements

    kw = dict(phase="prefill", prompt_tokens=4096)
    par = Parallelism(pipeline=2)
    p = place("llama-3.1-8b", "h100-sxm", parallelism=par, **kw)
    stages = stage_placements("llama-3.1-8b", "h100-sxm", parallelism=par, **kw)
    assert p.time_lower_bound_s == pytest.approx(max(s.stage_lower_bound_s for s in stages))
    assert p.time_estimate_s >= sum(s.stage_time_s * s.stage_repeats for s in stages)
    assert any("pipeline stages one after another" in c for c in p.estimate_conventions)
    one = place("llama-3.1-8b", "h100-sxm", **kw)
    assert p.time_lower_bound_s < one.time_lower_bound_s  # half the layers per chip, overlapped


def test_the_logits_gather_is_not_compulsory_traffic():
    p = place("llama-3.1-8b", "h100-sxm", phase="decode", parallelism=Parallelism(tensor=8))
    gather = next(c for c in p.comm.parts if "all-gather" in c.name)
    assert gather.bytes > 0 and gather.least_bytes == 0
    assert p.to_dict()["lower_bound_roof"] in ("compute", "memory", "interconnect")


def test_all_to_all_bound_sends_one_copy_per_destination_group():
    """The least dispatch: one copy per other group a token's experts live on (uniform routing),
    checked by enumerating every choice of k experts; never more than one copy per expert."""
    import itertools

    from roofline_lessons.core.parallel import remote_groups_per_token

    for E, k, e in [(8, 2, 2), (8, 2, 4), (8, 2, 8), (16, 4, 4), (12, 3, 3)]:
        per_group = E // e
        choices = list(itertools.combinations(range(E), k))
        own = 0  # the token's own group holds experts 0 .. per_group - 1
        mean = sum(len({x // per_group for x in c} - {own}) for c in choices) / len(choices)
        got = remote_groups_per_token(E, k, e)
        assert abs(got - mean) < 1e-12, (E, k, e, got, mean)
        assert got <= k * (e - 1) / e + 1e-12
    assert remote_groups_per_token(8, 2, 8) == pytest.approx(2 * 7 / 8)  # one expert per group: the same
    assert remote_groups_per_token(8, 2, 1) == 0.0


def test_expert_parallel_bound_sends_fewer_bytes_than_the_estimate():
    p = place("qwen3-30b-a3b", "h200", phase="decode", batch=64, context_tokens=1024, parallelism=Parallelism(expert=4))
    a2a = next(part for part in p.comm.parts if "all-to-all" in part.name)
    assert float(a2a.bound_bytes) < float(a2a.bytes)
    assert float(p.comm_lower_bound_s) <= float(p.comm.time_s)


def test_expert_all_to_all_bound_counts_the_receive_side_under_tensor_parallel():
    """With TP t inside each expert group, every chip of the receiving group needs each routed token
    whole, so per chip the bound counts the group's whole receive (one copy per remote group, no /t)."""
    from roofline_lessons.core.parallel import remote_groups_per_token

    m = get_model("qwen3-235b-a22b")
    batch, e = 64, 2
    for t in (1, 2, 4):
        p = place(m, "h200", phase="decode", batch=batch, context_tokens=1024,
                  parallelism=Parallelism(tensor=t, expert=e))
        a2a = next(part for part in p.comm.parts if "all-to-all" in part.name)
        tokens_local = batch / e
        received = tokens_local * remote_groups_per_token(m.num_experts, m.num_experts_per_tok, e) * m.hidden_size * 2
        assert float(a2a.least_bytes) == pytest.approx(2 * m.num_moe_layers * received)  # dispatch + combine
        assert float(a2a.least_bytes) <= float(a2a.bytes)  # never more than the estimate's copy per expert
