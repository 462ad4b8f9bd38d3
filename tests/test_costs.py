import numpy as np
import pytest

from roofline_lessons.core.costs import Workload, expected_experts_touched, model_cost
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.models import get_model, list_models
from roofline_lessons.core.units import MiB

DENSE = [m for m in list_models() if not get_model(m).is_moe]


@pytest.mark.parametrize("mid", DENSE)
def test_batch1_decode_does_about_one_flop_per_weight_byte(mid):
    c = model_cost(mid, phase="decode", batch=1, context_tokens=0)
    assert c.intensity_per_weight_byte == pytest.approx(1.0, rel=0.03)


@pytest.mark.parametrize("mid", DENSE)
def test_prefill_flops_per_weight_byte_is_about_the_prompt_length(mid):
    c = model_cost(mid, phase="prefill", prompt_tokens=2048)
    assert c.intensity_per_weight_byte == pytest.approx(2048, rel=0.15)


def test_prefill_flops_are_two_per_parameter_per_token_plus_attention():
    m = get_model("llama-3.1-8b")
    t = 4096
    c = model_cost(m, phase="prefill", prompt_tokens=t)
    matmul_params = m.parameter_count() - 2 * m.vocab_size * m.hidden_size  # no embedding, no lm_head
    attention = 2 * 2 * m.head_dim * m.num_attention_heads * t * (t + 1) / 2 * m.num_hidden_layers
    head = 2 * m.hidden_size * m.vocab_size  # last position only
    assert c.flops == pytest.approx(2 * matmul_params * t + attention + head, rel=0.01)


def test_lm_head_only_last_position_in_prefill():
    m = get_model("qwen3-8b")
    c = model_cost(m, phase="prefill", batch=3, prompt_tokens=1000)
    head = next(op for op in c.ops if op.name == "lm_head")
    assert head.flops == 2 * 3 * m.hidden_size * m.vocab_size
    assert "last position" in head.note


def test_embedding_reads_only_looked_up_rows():
    m = get_model("llama-2-7b")
    emb = next(op for op in model_cost(m, phase="decode", batch=4).ops if op.name == "embed_tokens")
    assert emb.weight_bytes == 4 * m.hidden_size * 2
    emb = next(op for op in model_cost(m, phase="prefill", prompt_tokens=100_000).ops if op.name == "embed_tokens")
    assert emb.weight_bytes == m.vocab_size * m.hidden_size * 2  # capped at the vocabulary


def test_decode_reads_the_whole_kv_cache():
    m = get_model("llama-3.1-8b")
    ctx = np.array([0, 1000, 10_000])
    c = model_cost(m, phase="decode", batch=2, context_tokens=ctx)
    np.testing.assert_allclose(c.kv_read_bytes, 2 * (ctx + 1) * m.kv_bytes_per_token("bf16"))
    np.testing.assert_allclose(c.kv_write_bytes, 2 * m.kv_bytes_per_token("bf16"))


def test_sliding_window_caps_kv_reads():
    m = get_model("mistral-7b")
    a = model_cost(m, phase="decode", context_tokens=4095).kv_read_bytes
    b = model_cost(m, phase="decode", context_tokens=50_000).kv_read_bytes
    assert a == b == 4096 * m.kv_bytes_per_token("bf16")


def test_deltanet_state_is_read_and_written_every_decode_step():
    m = get_model("qwen3.8-27b")
    for ctx in (0, 100_000):
        c = model_cost(m, phase="decode", batch=5, context_tokens=ctx)
        step = next(op for op in c.ops if op.name == "state_update+readout")
        assert step.layers == 48
        assert step.state_read_bytes == step.state_write_bytes == 5 * 3 * MiB
        conv = m.conv_state_bytes("bf16") * 5
        assert c.state_read_bytes == c.state_write_bytes == pytest.approx(5 * 144 * MiB + conv)


def test_prefill_chunk_states_go_through_hbm():
    """The chunked kernel writes one state per chunk (activations' format) and reads each back;
    the final state (float32) is written once. Old model: read 0, written once."""
    m = get_model("qwen3.8-27b")
    per_layer_elems = 48 * 128 * 128
    conv = m.conv_state_bytes("bf16")
    for chunk in (64, 128):
        c = model_cost(m, phase="prefill", prompt_tokens=1024, deltanet_chunk_tokens=chunk)
        chunks = 1024 // chunk
        boundary = 48 * chunks * per_layer_elems * 2
        assert c.state_read_bytes == pytest.approx(boundary)
        assert c.state_write_bytes == pytest.approx(boundary + 144 * MiB + conv)
    # a prompt that is not a whole number of chunks rounds the chunk count up
    c = model_cost(m, phase="prefill", prompt_tokens=65)
    assert c.state_read_bytes == pytest.approx(48 * 2 * per_layer_elems * 2)


def test_chunk_size_must_be_whole():
    from roofline_lessons.core.errors import RooflineInputError
    with pytest.raises(RooflineInputError, match="deltanet_chunk_tokens"):
        model_cost("qwen3.8-27b", phase="prefill", prompt_tokens=8, deltanet_chunk_tokens=0)


def test_eager_attention_counts_the_full_score_square():
    t = 4096
    on = model_cost("llama-3.1-8b", phase="prefill", prompt_tokens=t)
    off = model_cost("llama-3.1-8b", phase="prefill", prompt_tokens=t, flash_attention=False)
    att_on = on.block_total("full_attention", "flops")
    att_off = off.block_total("full_attention", "flops")
    m = get_model("llama-3.1-8b")
    extra_pairs = t * t - t * (t + 1) / 2  # the masked half an eager kernel still computes
    per_pair = (4 * m.head_dim + 5) * m.num_attention_heads * m.num_hidden_layers
    assert att_off - att_on == pytest.approx(extra_pairs * per_pair)


def test_final_norm_runs_on_every_prefill_position_lm_head_on_the_last():
    c = model_cost("llama-3.1-8b", phase="prefill", batch=2, prompt_tokens=100)
    ops = {op.name: op for op in c.ops}
    assert ops["final_norm"].flops == pytest.approx(4 * 200 * 4096)
    assert ops["lm_head"].flops == pytest.approx(2 * 2 * 4096 * 128256)


def test_weight_lens_counts_weight_matmuls_only():
    """At long context the weight lens stays ≈ batch (2·batch FLOPs per BF16 weight of 2 bytes),
    not inflated by attention FLOPs that come with their own KV bytes."""
    short = model_cost("llama-3.1-8b", phase="decode", batch=16, context_tokens=1024)
    long = model_cost("llama-3.1-8b", phase="decode", batch=16, context_tokens=131072)
    assert short.intensity_per_weight_byte == pytest.approx(16, rel=0.02)
    assert long.intensity_per_weight_byte == pytest.approx(short.intensity_per_weight_byte)
    assert long.flops > 1.5 * short.flops  # attention FLOPs do grow: they are simply not in this lens
    assert 0 < long.other_flops < long.flops


def test_state_dtype_is_a_lever():
    f32 = model_cost("qwen3.8-27b", phase="decode").state_bytes
    bf16 = model_cost("qwen3.8-27b", phase="decode", state_dtype="bf16").state_bytes
    assert bf16 < f32


def test_attention_ops_present_with_and_without_flash():
    on = model_cost("llama-3.1-8b", phase="prefill", prompt_tokens=4096)
    off = model_cost("llama-3.1-8b", phase="prefill", prompt_tokens=4096, flash_attention=False)
    names_off = [op.name for op in off.ops]
    assert any(n.startswith("qk_scores") for n in names_off) and "softmax" in names_off
    assert any(n.startswith("score_v") for n in names_off)
    assert any(n.startswith("attention (fused") for n in (op.name for op in on.ops))
    assert off.flops > on.flops  # eager attention computes the masked half of the square too
    assert off.activation_bytes > on.activation_bytes + 32 * 32 * 4096 * 4096 * 2  # the N^2 score matrix


def test_output_gate_only_where_the_model_has_one():
    gated = [op.name for op in model_cost("qwen3.8-27b").ops]
    plain = [op.name for op in model_cost("qwen3-8b").ops]
    assert "output_gate" in gated and "output_gate" not in plain


def test_every_layer_kind_has_its_operators():
    names = {op.name for op in model_cost("qwen3.8-27b").ops}
    for n in ("embed_tokens", "input_norm", "k_proj", "v_proj", "o_proj", "short_conv", "state_update+readout",
              "in_proj_qkv", "out_proj", "gate_proj", "up_proj", "down_proj", "silu_mul", "final_norm", "lm_head"):
        assert n in names
    moe = {op.name for op in model_cost("qwen3-30b-a3b").ops}
    assert {"router", "experts_gate_up", "experts_down"} <= moe


def test_moe_reads_only_touched_experts():
    m = get_model("qwen3-30b-a3b")
    assert expected_experts_touched(128, 8, 1) == pytest.approx(8)
    assert expected_experts_touched(128, 8, 10_000) == pytest.approx(128)
    one = model_cost(m, phase="decode", batch=1)
    up = next(op for op in one.ops if op.name == "experts_gate_up")
    assert up.weight_bytes == pytest.approx(8 * 2 * m.hidden_size * m.moe_intermediate_size * 2)
    per_token = [model_cost(m, phase="decode", batch=b).weight_bytes / b for b in (1, 8, 64)]
    assert per_token[0] > per_token[1] > per_token[2]


def test_weights_dtype_halves_weight_bytes():
    a = model_cost("llama-3.1-8b", phase="decode").weight_bytes
    b = model_cost("llama-3.1-8b", phase="decode", weights_dtype="fp8", quantized_weights="all").weight_bytes
    assert b == pytest.approx(a / 2)
    linear = model_cost("llama-3.1-8b", phase="decode", weights_dtype="fp8").weight_bytes  # embedding, lm_head BF16
    lm_head, norms = 128256 * 4096, (2 * 32 + 1) * 4096  # the step reads the whole lm_head, every norm
    assert linear == pytest.approx(a / 2 + lm_head + norms + 4096, rel=1e-12)  # + one embedding row


def test_arrays_give_the_same_answer_as_scalars():
    batches = np.array([1, 4, 32, 256])
    ctx = np.array([0, 512, 8192, 131072])
    for mid in ("qwen3.8-27b", "qwen3-30b-a3b", "mistral-7b"):
        vec = model_cost(mid, phase="decode", batch=batches, context_tokens=ctx)
        for i, (b, c) in enumerate(zip(batches, ctx)):
            one = model_cost(mid, phase="decode", batch=int(b), context_tokens=int(c))
            assert vec.flops[i] == pytest.approx(one.flops)
            assert vec.bytes[i] == pytest.approx(one.bytes)
    prompts = np.array([128, 4096, 8192])
    vec = model_cost("mistral-7b", phase="prefill", prompt_tokens=prompts)
    for i, t in enumerate(prompts):
        assert vec.flops[i] == pytest.approx(model_cost("mistral-7b", phase="prefill", prompt_tokens=int(t)).flops)


@pytest.mark.parametrize("field,value", [("batch", 0), ("batch", 1.5), ("batch", -3), ("prompt_tokens", 0),
                                         ("context_tokens", -1), ("context_tokens", 2.5), ("batch", "8"),
                                         ("batch", True), ("batch", float("nan"))])
def test_bad_workload_values_are_named(field, value):
    with pytest.raises(RooflineInputError, match=field):
        Workload(**{field: value})


def test_bad_phase_and_dtype():
    with pytest.raises(RooflineInputError, match="phase must be one of prefill, decode"):
        Workload(phase="generate")
    with pytest.raises(RooflineInputError, match="unknown dtype 'int3'"):
        Workload(kv_dtype="int3")


def test_softmax_norms_and_elementwise_flops_are_the_small_share_the_docstring_gives():
    """Issue 25 (N1): the module docstring says softmax, norms and elementwise work, priced at the tensor-core
    peak by convention, are about 0.05 % of an 8,192-token Qwen3.8-27B prefill's FLOPs."""
    import roofline_lessons.core.costs as costs

    m = get_model("qwen3.8-27b")
    c = model_cost(m, phase="prefill", prompt_tokens=8192)
    elementwise = softmax = 0.0
    for op in c.ops:
        if float(op.weight_matmul_flops):
            continue
        total = float(op.flops) * op.layers
        if op.name.startswith("attention"):  # fused: 2 matmuls of 2·hd FLOPs per pair, softmax 5 per pair
            softmax += total * 5 / (4 * m.head_dim + 5)
        elif not op.name.startswith("state_update"):
            elementwise += total
    share = (elementwise + softmax) / float(c.flops)
    assert 0.0004 < share < 0.0006
    assert "about 0.05 % of the FLOPs" in costs.__doc__ and "convention" in costs.__doc__


def test_a_sliding_window_prefill_keeps_only_the_last_window_of_new_kv():
    """Of a long prompt's K and V, a sliding-window layer must keep only the last W − 1 tokens' (no later
    token reads older ones): the bound charges those writes, the unfused view writes the rest as scratch."""
    from roofline_lessons import get_model
    from roofline_lessons.core.costs import model_cost

    m = get_model("mistral-7b")
    W, t = m.sliding_window, 3 * m.sliding_window
    per_token = m.num_key_value_heads * m.head_dim * 2 * 2 * m.num_hidden_layers  # K and V, BF16, every layer
    long = model_cost("mistral-7b", phase="prefill", prompt_tokens=t)
    short = model_cost("mistral-7b", phase="prefill", prompt_tokens=W // 2)
    assert float(long.kv_write_bytes) == pytest.approx((W - 1) * per_token)
    assert float(short.kv_write_bytes) == pytest.approx(W // 2 * per_token)
    assert float(long.bytes) > float(long.compulsory_bytes)
