"""Issue 16: DeepSeek-V3 (MLA), Gemma-3-27B and gpt-oss-120b (sliding windows), and the 4-bit / KV formats.

Every expected figure is either a published one (config.json, a model card, figures.md) or
recomputed here by hand from the config's shapes, never read back from the code under test.
"""

import json

import numpy as np
import pytest

from roofline_lessons.cli import main
from roofline_lessons.core import costs
from roofline_lessons.core.costs import Workload, model_cost, stored_weight_bytes
from roofline_lessons.core.dtypes import kv_bytes_per_element, weight_bytes_per_element
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.hardware import get_part
from roofline_lessons.core.memory import footprint, kv_cache_bytes_per_sequence, max_batch_that_fits, weight_bytes
from roofline_lessons.core.models import FULL_ATTENTION, MLA, SLIDING_ATTENTION, get_model, list_models
from roofline_lessons.core.parallel import Parallelism, kv_split
from roofline_lessons.core.placement import place
from roofline_lessons.core.units import num

NEW = ("deepseek-v3", "gemma-3-27b", "gpt-oss-120b")


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ---- configs against their published config.json ---------------------------------------------

#: deepseek-ai/DeepSeek-V3 config.json (also its inference/configs/config_671B.json and
#: ../shared/reference/figures.md): n_routed_experts → num_experts, num_nextn_predict_layers → mtp_layers;
#: head_dim is not a config field: qk_nope_head_dim + qk_rope_head_dim = 192.
#: google/gemma-3-27b-it config.json text_config (transformers' Gemma3 test fixtures and registry
#: hold the same): sliding_window_pattern 6 ("_sliding_window_pattern"), vocab 262208, tied embeddings, q/k norms.
#: openai/gpt-oss-120b config.json: num_local_experts → num_experts, layer_types alternate
#: sliding/full starting with sliding, attention_bias true (biases are not counted here).
PUBLISHED_CONFIG = {
    "deepseek-v3": dict(hidden_size=7168, num_hidden_layers=61, num_attention_heads=128, num_key_value_heads=128,
                        head_dim=128 + 64, intermediate_size=18432, vocab_size=129280, tie_word_embeddings=False,
                        q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
                        v_head_dim=128, num_experts=256, num_experts_per_tok=8, moe_intermediate_size=2048,
                        n_shared_experts=1, first_k_dense_replace=3, mtp_layers=1, max_context_tokens=163840,
                        sliding_window=None),
    "gemma-3-27b": dict(hidden_size=5376, num_hidden_layers=62, num_attention_heads=32, num_key_value_heads=16,
                        head_dim=128, intermediate_size=21504, vocab_size=262208, tie_word_embeddings=True,
                        qk_norm=True, sliding_window=1024, sliding_window_pattern=6, max_context_tokens=131072,
                        num_experts=0, kv_lora_rank=0),
    "gpt-oss-120b": dict(hidden_size=2880, num_hidden_layers=36, num_attention_heads=64, num_key_value_heads=8,
                         head_dim=64, intermediate_size=2880, moe_intermediate_size=2880, vocab_size=201088,
                         tie_word_embeddings=False, sliding_window=128, sliding_window_pattern=2,
                         num_experts=128, num_experts_per_tok=4, max_context_tokens=131072, kv_lora_rank=0,
                         n_shared_experts=0, first_k_dense_replace=0),
}


@pytest.mark.parametrize("mid", NEW)
def test_config_fields_match_the_published_config(mid):
    m = get_model(mid)
    wrong = {k: (getattr(m, k), v) for k, v in PUBLISHED_CONFIG[mid].items() if getattr(m, k) != v}
    assert not wrong, wrong
    assert m.source  # each entry names where its fields come from


@pytest.mark.parametrize("mid", NEW)
def test_total_parameters_within_half_a_percent_of_published(mid):
    """DeepSeek-V3 671 B (report), Gemma-3-27B 1,416 M + 25,600 M (Gemma 3 report, Table 1),
    gpt-oss-120b 116.83 B (model card; our count leaves out its ~40 M attention and expert biases)."""
    published = {"deepseek-v3": 671e9, "gemma-3-27b": 1416e6 + 25600e6, "gpt-oss-120b": 116.83e9}[mid]
    assert get_model(mid).parameter_count() == pytest.approx(published, rel=0.005)


def test_gpt_oss_active_parameters_without_the_embedding():
    """OpenAI's card counts 5.13 B active without the embedding table (the unembedding is in)."""
    m = get_model("gpt-oss-120b")
    assert m.active_parameter_count() - m.vocab_size * m.hidden_size == pytest.approx(5.13e9, rel=0.005)


def test_deepseek_v3_active_parameters_to_the_published_precision():
    """The report says "37B activated" — two significant figures, and it does not say whether the
    embedding table is in. So the honest test is 37 ± 0.5 B; our count meets it without the embedding
    (36.6 B; with the 0.93 B table it is 37.55 B, just outside)."""
    m = get_model("deepseek-v3")
    without_embedding = m.active_parameter_count() - m.vocab_size * m.hidden_size
    assert abs(without_embedding - 37e9) <= 0.5e9
    assert m.active_parameter_count() < m.parameter_count() / 15  # 8 of 256 routed experts


@pytest.mark.parametrize("mid", list_models())
def test_operator_list_builds_every_weight_once(mid):
    m = get_model(mid)
    assert costs.parameter_counts(m) == m._parameter_counts()


def test_mtp_layer_is_not_counted():
    m = get_model("deepseek-v3")
    assert m.mtp_layers == 1
    assert len(m.layer_types()) == m.num_hidden_layers == 61
    assert m.num_moe_layers == 58 and m.num_dense_mlp_layers == 3


# ---- MLA -------------------------------------------------------------------------------------


def test_mla_caches_the_latent_only():
    m = get_model("deepseek-v3")
    assert m.is_mla and m.layer_types() == (MLA,) * 61
    assert m.mla_cache_elements_per_token == 512 + 64 == 576
    assert m.kv_bytes_per_token("bf16") == 61 * 576 * 2 == 70_272  # figures.md
    assert m.kv_bytes_per_token("fp8") == 61 * 576
    # int8: one bf16 scale per token and latent
    assert m.kv_bytes_per_token("int8") == pytest.approx(61 * (576 + 2))
    assert kv_cache_bytes_per_sequence(m, 32_768) == 32_768 * 70_272  # no window caps MLA


@pytest.mark.parametrize("kv", ["bf16", "fp8", "int4"])
def test_absorbed_decode_reads_only_the_latent(kv):
    m = get_model("deepseek-v3")
    batch, ctx = 3, np.array([0, 4095, 32_767])
    c = model_cost(m, phase="decode", batch=batch, context_tokens=ctx, kv_dtype=kv)
    keys = ctx + 1
    per_elem = {"bf16": 2.0, "fp8": 1.0, "int4": 0.5 + 2.0 / 576}[kv]
    np.testing.assert_allclose(c.kv_read_bytes, batch * keys * 576 * per_elem * 61)
    np.testing.assert_allclose(c.kv_write_bytes, batch * 576 * per_elem * 61)
    names = [op.name for op in c.ops if op.block == "mla"]
    assert "attention (absorbed, in the latent)" in names and "kv_b_proj (expand the latent)" not in names


def test_expanded_decode_re_expands_every_cached_key():
    m = get_model("deepseek-v3")
    flops = {}
    for ctx in (1023, 32_767):
        e = model_cost(m, phase="decode", context_tokens=ctx, mla_absorbed=False)
        a = model_cost(m, phase="decode", context_tokens=ctx, mla_absorbed=True)
        kvb = next(op for op in e.ops if op.name == "kv_b_proj (expand the latent)")
        # 2 FLOPs × keys × kv_lora_rank × heads × (nope + v), every layer, every step
        assert kvb.flops * kvb.layers == pytest.approx(2 * (ctx + 1) * 512 * 128 * (128 + 128) * 61)
        flops[ctx] = (e.block_total("mla", "flops"), a.block_total("mla", "flops"))
        assert e.kv_read_bytes == pytest.approx(a.kv_read_bytes)  # both read the same latent
    assert flops[32_767][0] > 20 * flops[1023][0]  # grows with the context
    assert flops[32_767][0] > 100 * flops[32_767][1]  # two orders of magnitude over absorbed at 32K


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_absorbed_and_expanded_hold_the_same_weights(phase):
    m = get_model("deepseek-v3")
    kw = dict(phase=phase, prompt_tokens=512, context_tokens=512)
    a = model_cost(m, mla_absorbed=True, **kw)
    e = model_cost(m, mla_absorbed=False, **kw)

    def params(c):
        return sum(op.weight_params * op.layers for op in c.ops if op.block == "mla")

    assert params(a) == params(e) == m.mla_layer_parameters * 61
    # W_UK + W_UV (absorbed) = kv_b_proj (expanded)
    uk = next(op for op in a.ops if op.name.startswith("q_absorb")).weight_params
    uv = next(op for op in a.ops if op.name.startswith("v_up")).weight_params
    kvb = next(op for op in e.ops if op.name.startswith("kv_b_proj")).weight_params
    assert uk + uv == kvb == 512 * 128 * (128 + 128)
    # the attention output that reaches o_proj has the same shape in both forms
    o_a = next(op for op in a.ops if op.name == "o_proj" and op.block == "mla")
    o_e = next(op for op in e.ops if op.name == "o_proj" and op.block == "mla")
    assert o_a.flops == o_e.flops and o_a.weight_params == o_e.weight_params == 128 * 128 * 7168


def test_mla_form_defaults_and_override():
    def names(**kw):
        return {op.name for op in model_cost("deepseek-v3", prompt_tokens=256, context_tokens=256, **kw).ops}

    expanded, absorbed = "kv_b_proj (expand the latent)", "attention (absorbed, in the latent)"
    assert expanded in names(phase="prefill") and absorbed not in names(phase="prefill")
    assert absorbed in names(phase="decode") and expanded not in names(phase="decode")
    assert absorbed in names(phase="prefill", mla_absorbed=True)
    assert expanded in names(phase="decode", mla_absorbed=False)
    assert Workload(phase="decode").mla_absorbed is None


def test_mla_form_changes_nothing_for_other_models():
    a = model_cost("llama-3.1-8b", phase="decode", context_tokens=4096, mla_absorbed=True)
    e = model_cost("llama-3.1-8b", phase="decode", context_tokens=4096, mla_absorbed=False)
    assert a.flops == e.flops and a.bytes == e.bytes


def test_tensor_parallel_splits_heads_but_replicates_the_latent():
    m = get_model("deepseek-v3")
    w = Workload(phase="decode", batch=4, context_tokens=8191)
    one = place(m, "h200", w)
    eight = place(m, "h200", w, parallelism=Parallelism(tensor=8))
    assert kv_split(m, 8) == 1
    assert any("replicated" in s and "latent" in s for s in eight.warnings)
    att1 = next(op for op in one.cost.ops if op.name == "attention (absorbed, in the latent)")
    att8 = next(op for op in eight.cost.ops if op.name == "attention (absorbed, in the latent)")
    assert att8.flops == pytest.approx(att1.flops / 8)  # heads split
    assert att8.kv_read_bytes == pytest.approx(att1.kv_read_bytes)  # every chip reads the whole latent
    assert eight.footprint.kv_cache_bytes == pytest.approx(one.footprint.kv_cache_bytes)


# ---- sliding windows ---------------------------------------------------------------------------


def test_gemma3_and_gpt_oss_layer_types():
    gemma = get_model("gemma-3-27b").layer_types()
    expected = ([SLIDING_ATTENTION] * 5 + [FULL_ATTENTION]) * 10 + [SLIDING_ATTENTION] * 2
    assert list(gemma) == expected and len(gemma) == 62
    oss = get_model("gpt-oss-120b").layer_types()
    assert list(oss) == [SLIDING_ATTENTION, FULL_ATTENTION] * 18
    assert (get_model("gemma-3-27b").num_sliding_attention_layers, get_model("gemma-3-27b").num_full_attention_layers) \
        == (52, 10)
    assert (get_model("gpt-oss-120b").num_sliding_attention_layers,
            get_model("gpt-oss-120b").num_full_attention_layers) == (18, 18)


#: (global layers, local layers, window, bytes per token per layer in bf16 = 2 × KV heads × head_dim × 2)
WINDOWED = {"gemma-3-27b": (10, 52, 1024, 2 * 16 * 128 * 2), "gpt-oss-120b": (18, 18, 128, 2 * 8 * 64 * 2)}


@pytest.mark.parametrize("mid", WINDOWED)
def test_kv_per_sequence_by_hand(mid):
    n_global, n_local, window, per_layer = WINDOWED[mid]
    m = get_model(mid)
    assert m.kv_bytes_per_token_per_layer("bf16") == per_layer
    assert m.kv_bytes_per_token("bf16") == (n_global + n_local) * per_layer  # before window caps
    t = np.array([1, 100, 128, 1024, 5000, 32_768, 131_072])
    by_hand = n_global * per_layer * t + n_local * per_layer * np.minimum(t, window)
    np.testing.assert_array_equal(kv_cache_bytes_per_sequence(m, t), by_hand)
    # past the window only the global layers grow
    grow = kv_cache_bytes_per_sequence(m, 40_000) - kv_cache_bytes_per_sequence(m, 30_000)
    assert grow == 10_000 * n_global * per_layer


@pytest.mark.parametrize("mid", WINDOWED)
def test_decode_reads_at_most_the_window_in_local_layers(mid):
    n_global, n_local, window, per_layer = WINDOWED[mid]
    for ctx in (10, window - 1, window, 20_000):
        c = model_cost(mid, phase="decode", batch=2, context_tokens=ctx)
        keys = ctx + 1
        assert c.block_total("sliding_attention", "kv_read_bytes") == 2 * n_local * min(keys, window) * per_layer
        assert c.block_total("full_attention", "kv_read_bytes") == 2 * n_global * keys * per_layer


def test_sliding_prefill_counts_window_pairs():
    m = get_model("gemma-3-27b")
    t, w = 3000, 1024
    c = model_cost(m, phase="prefill", prompt_tokens=t)
    att = next(op for op in c.ops if op.block == "sliding_attention" and op.name.startswith("attention"))
    pairs = w * (w + 1) / 2 + (t - w) * w  # token i attends to min(i, window) keys
    per_pair = 2 * 2 * 128 * 32 + 5 * 32  # QKᵀ and ×V over 32 heads of 128, softmax 5 per score
    assert att.flops == pytest.approx(per_pair * pairs)
    assert att.layers == 52


def test_mistral_every_layer_capped_under_full_attention():
    """Mistral-7B-v0.1 is unchanged: every layer slides with no pattern, its block stays
    full_attention, and the numbers test_models/test_costs hold (131,072 B per token, reads capped
    at 4,096 tokens) still hold."""
    m = get_model("mistral-7b")
    assert set(m.layer_types()) == {FULL_ATTENTION} and m.num_sliding_attention_layers == 0
    assert m.kv_bytes_per_token("bf16") == 2 * 32 * 8 * 128 * 2 == 131_072
    assert kv_cache_bytes_per_sequence(m, 50_000) == 4096 * 131_072
    c = model_cost(m, phase="decode", context_tokens=50_000)
    assert c.kv_read_bytes == 4096 * 131_072
    assert "sliding_attention" not in c.blocks() and "full_attention" in c.blocks()


# ---- weight formats ------------------------------------------------------------------------------


def test_four_bit_bytes_per_weight():
    assert weight_bytes_per_element("int4") == 0.5 + 2 / 128 == 0.515625
    assert weight_bytes_per_element("fp4") == 0.5 + 1 / 32 == 0.53125
    assert weight_bytes_per_element("int4", 32) == 0.5625
    assert weight_bytes_per_element("fp8", 32) == weight_bytes_per_element("fp8") == 1.0
    c = model_cost("llama-3.1-8b", weights_dtype="int4", weight_group_size=32)
    assert next(op for op in c.ops if op.name == "q_proj").bytes_per_weight == 0.5625


def test_group_size_accepts_numpy_integers():
    """A group taken from a numpy array (np.int64) used to be refused as "not a whole number"."""
    assert weight_bytes_per_element("int4", np.int64(64)) == 0.5 + 2 / 64
    Workload(weights_dtype="int4", weight_group_size=np.int64(64))


def _llama8b_split():
    m = get_model("llama-3.1-8b")
    table = m.vocab_size * m.hidden_size
    norms = m.num_hidden_layers * 2 * m.hidden_size + m.hidden_size
    kept = 2 * table + norms  # embedding, lm_head, norms
    return m, kept, m.parameter_count() - kept


def test_linear_recipe_keeps_embedding_head_and_norms_in_bf16():
    m, kept, linear = _llama8b_split()
    assert weight_bytes(m, "int4") == pytest.approx(linear * 0.515625 + kept * 2, rel=1e-12)
    assert weight_bytes(m, "int4", weight_group_size=32) == pytest.approx(linear * 0.5625 + kept * 2, rel=1e-12)
    assert weight_bytes(m, "int4", quantized_weights="all") == pytest.approx(m.parameter_count() * 0.515625)
    assert Workload(weights_dtype="int4").weight_recipe == "linear"
    assert Workload(weights_dtype="fp8").weight_recipe == "linear"  # as published FP8 checkpoints
    assert Workload(weights_dtype="bf16").weight_recipe == "all"
    assert weight_bytes(m, "fp8") == pytest.approx(linear * 1 + kept * 2, rel=1e-12)


def test_experts_recipe_shrinks_only_gpt_oss_experts():
    m = get_model("gpt-oss-120b")
    c = model_cost(m, weights_dtype="fp4", quantized_weights="experts")
    narrow = {op.name for op in c.ops if op.weight_params and op.bytes_per_weight < 2}
    assert narrow == {"experts_gate_up", "experts_down"}
    experts = 36 * 128 * 3 * 2880 * 2880
    by_hand = experts * 0.53125 + (m.parameter_count() - experts) * 2
    assert stored_weight_bytes(c) == pytest.approx(by_hand, rel=1e-12)
    assert weight_bytes(m, "fp4", quantized_weights="experts") == pytest.approx(by_hand, rel=1e-12)


@pytest.mark.parametrize("mid", ["llama-3.1-8b", *NEW])
def test_fp8_all_is_one_byte_per_parameter(mid):
    m = get_model(mid)
    assert weight_bytes(m, "fp8") > m.parameter_count()  # the default recipe keeps the embedding, lm_head in BF16
    assert weight_bytes(m, "fp8", quantized_weights="all") == pytest.approx(m.parameter_count(), rel=1e-12)
    assert weight_bytes(m, "bf16") == 2 * m.parameter_count()


def test_weight_only_dequant_is_two_flops_per_quantised_weight_read():
    m, kept, linear = _llama8b_split()
    c = model_cost(m, phase="decode", batch=1, weights_dtype="int4")
    assert c.dequant_flops == 2 * linear  # batch 1 reads every linear weight once; embedding/head stay bf16
    assert c.flops == model_cost(m, phase="decode", batch=1).flops  # dequant is kept out of the model's FLOPs
    for mid in ("qwen3-30b-a3b", "gpt-oss-120b", "deepseek-v3"):
        c = model_cost(mid, phase="decode", batch=16, weights_dtype="int4")
        for op in c.ops:
            quantised = op.bytes_per_weight == 0.515625
            expected = 2 * op.weight_bytes / op.bytes_per_weight if quantised else 0.0
            assert op.dequant_flops == pytest.approx(expected), op.name


def test_w4a4_has_no_dequant_and_needs_an_fp4_part():
    w = Workload(phase="decode", batch=256, context_tokens=4096, weights_dtype="fp4", compute_dtype="fp4")
    assert not w.weight_only
    assert model_cost("llama-3.1-70b", w).dequant_flops == 0
    with pytest.raises(RooflineInputError, match="fp4"):
        place("llama-3.1-70b", "h100-sxm", w)
    b200 = place("llama-3.1-70b", "b200", w)
    bf16 = place("llama-3.1-70b", "b200", phase="decode", batch=256, context_tokens=4096)
    assert b200.dequant_time_s == 0 and b200.time_estimate_s < bf16.time_estimate_s
    assert b200.matmul_peak_flops_per_s == get_part("b200").peak_flops_per_s("fp4")


def test_dequant_time_uses_the_fp32_vector_rate():
    p = place("llama-3.1-70b", "h100-sxm", phase="decode", batch=8, context_tokens=4096, weights_dtype="int4")
    fp32 = get_part("h100-sxm").dense_flops_per_s["fp32"]
    assert p.dequant_time_s == pytest.approx(p.cost.dequant_flops / fp32)
    bf16 = get_part("h100-sxm").peak_flops_per_s("bf16")
    assert p.compute_time_s == pytest.approx(p.cost.flops / bf16 + p.cost.dequant_flops / fp32)


def test_weight_only_roof_agrees_with_the_bound():
    """Dequantisation takes compute time but adds no model FLOPs: the roof (and ridge) must come
    down with it, or a point left of the ridge is called compute-bound (batch 76-88 of
    Llama-3.1-70B int4 on H100 were, before the fix)."""
    b = np.arange(40, 120, 2)
    p = place("llama-3.1-70b", "h100-sxm", phase="decode", batch=b, context_tokens=0, weights_dtype="int4")
    left_of_ridge = p.intensity < p.ridge_point_flop_per_byte
    np.testing.assert_array_equal(left_of_ridge, np.asarray(p.bound) == "memory")
    assert np.all(p.peak_flops_per_s < get_part("h100-sxm").peak_flops_per_s("bf16"))
    plain = place("llama-3.1-70b", "h100-sxm", phase="decode", batch=8)
    assert plain.peak_flops_per_s == get_part("h100-sxm").peak_flops_per_s("bf16")


def test_kv_formats_add_their_scales():
    m = get_model("llama-3.1-8b")
    bf16 = m.kv_bytes_per_token("bf16")
    assert m.kv_bytes_per_token("fp8") == bf16 / 2  # one scale per tensor: nothing per element
    # int8 / int4: one bf16 scale (2 bytes) per head_dim = 128 elements
    assert m.kv_bytes_per_token("int8") == pytest.approx(32 * 2 * 8 * (128 * 1 + 2))
    assert m.kv_bytes_per_token("int4") == pytest.approx(32 * 2 * 8 * (128 * 0.5 + 2))
    assert kv_bytes_per_element("int4", 128) == 0.5 + 2 / 128
    c = model_cost(m, phase="decode", context_tokens=999, kv_dtype="int4")
    assert c.kv_read_bytes == pytest.approx(1000 * m.kv_bytes_per_token("int4"))


@pytest.mark.parametrize("field, value", [("weight_group_size", 0), ("weight_group_size", -32),
                                          ("weight_group_size", 12.5), ("quantized_weights", "bogus"),
                                          ("mla_absorbed", "yes")])
def test_bad_format_fields_name_the_value(field, value):
    with pytest.raises(RooflineInputError, match=repr(value).replace(".", r"\.")):
        Workload(weights_dtype="int4", **{field: value})


# ---- memory ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mid", ["llama-3.1-70b", *NEW])
def test_weight_bytes_order_int4_fp8_bf16(mid):
    assert weight_bytes(mid, "int4") < weight_bytes(mid, "fp8") < weight_bytes(mid, "bf16")


@pytest.mark.parametrize("mid, part", [("llama-3.1-70b", "h100-sxm"), ("gpt-oss-120b", "h100-sxm"),
                                       ("gemma-3-27b", "l40s")])
def test_max_batch_grows_with_int4_weights_and_int4_kv(mid, part):
    bf16 = max_batch_that_fits(mid, part, 4096)
    int4 = max_batch_that_fits(mid, part, 4096, weights_dtype="int4")
    int4_kv = max_batch_that_fits(mid, part, 4096, weights_dtype="int4", kv_dtype="int4")
    assert bf16 < int4 < int4_kv
    assert int4_kv >= 3 * int4  # KV of int4 + scales is 0.52 / 2 of bf16's


@pytest.mark.parametrize("fields", [dict(weights_dtype="int4"), dict(weights_dtype="int4", weight_group_size=32),
                                    dict(weights_dtype="fp4", quantized_weights="experts"),
                                    dict(weights_dtype="fp8")])
def test_footprint_matches_weight_bytes(fields):
    m = get_model("gpt-oss-120b")
    w = Workload(phase="decode", batch=4, context_tokens=1000, kv_dtype="int8", **fields)
    f = footprint(m, w)
    assert f.weight_bytes == pytest.approx(weight_bytes(m, w.weights_dtype, weight_group_size=w.weight_group_size,
                                                        quantized_weights=w.quantized_weights))
    assert f.kv_cache_bytes == pytest.approx(4 * kv_cache_bytes_per_sequence(m, 1001, "int8"))


# ---- placement and the command line -------------------------------------------------------------


def test_place_json_reports_the_formats(capsys):
    code, out, _ = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode",
                       "--weights", "int4", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["dequant_flops"] > 0 and d["dequant_time_s"] > 0
    assert d["weight_group_size"] == 128  # the group in use, not null
    assert d["quantized_weights"] == "linear"
    assert d["stored_weight_bytes"] == pytest.approx(weight_bytes("llama-3.1-8b", "int4"))
    code, out, _ = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode",
                       "--json")
    d = json.loads(out)
    assert d["dequant_flops"] == 0 and d["weight_group_size"] is None and d["quantized_weights"] == "all"


def test_place_group_size_flag(capsys):
    code, out, _ = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode",
                       "--weights", "int4", "--group-size", "32", "--json")
    d = json.loads(out)
    assert code == 0 and d["weight_group_size"] == 32
    assert d["stored_weight_bytes"] == pytest.approx(weight_bytes("llama-3.1-8b", "int4", weight_group_size=32))
    code, out, _ = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode",
                       "--weights", "int4", "--group-size", "32")
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("formats"))
    assert f"{num(0.5625)} bytes each" in line and "linear" in line and "dequantised" in line


def test_formats_line_uses_the_mla_latent_for_kv_scales(capsys):
    """An int4 latent carries one scale per 576 elements (0.503 B each), not per head_dim 192
    (0.510 B): the text output used the head_dim before the fix."""
    code, out, _ = run(capsys, "place", "--hardware", "h200", "--model", "deepseek-v3", "--phase", "decode",
                       "--context", "4096", "--kv", "int4")
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("formats"))
    assert code == 0 and f"KV int4 at {num(0.5 + 2 / 576)} bytes per element" in line


@pytest.mark.parametrize("args, needle", [(("--group-size", "0"), "group-size"),
                                          (("--quantized-weights", "bogus"), "bogus"),
                                          (("--mla", "sideways"), "sideways")])
def test_bad_format_flags_exit_2_with_one_line(capsys, args, needle):
    code, out, err = run(capsys, "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--phase", "decode",
                         "--weights", "int4", *args)
    assert code == 2 and out == ""
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_deepseek_tensor_parallel_from_the_command_line(capsys):
    code, out, err = run(capsys, "place", "--hardware", "h200", "--model", "deepseek-v3", "--phase", "decode",
                         "--context", "4096", "--batch", "8", "--tensor-parallel", "8", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["tensor_parallel"] == 8
    assert any("replicated" in s for s in d["warnings"]) or "replicated" in err


def test_mla_flag_changes_the_flops(capsys):
    flops = {}
    for form in ("absorbed", "expanded", "auto"):
        code, out, _ = run(capsys, "place", "--hardware", "h200", "--model", "deepseek-v3", "--phase", "decode",
                           "--context", "4096", "--mla", form, "--json")
        assert code == 0
        flops[form] = json.loads(out)["flops"]
    assert flops["expanded"] > 2 * flops["absorbed"]
    assert flops["auto"] == flops["absorbed"]  # decode defaults to absorbed


# ---- arrays ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mid", NEW)
def test_batch_and_context_arrays_match_scalars(mid):
    batch = np.array([1, 8, 64])
    ctx = np.array([0, 1000, 30_000])
    fields = dict(phase="decode", weights_dtype="int4", kv_dtype="int8")
    vec = model_cost(mid, batch=batch, context_tokens=ctx, **fields)
    pv = place(mid, "b200", batch=batch, context_tokens=ctx, **fields)
    for i in range(3):
        one = model_cost(mid, batch=int(batch[i]), context_tokens=int(ctx[i]), **fields)
        assert vec.flops[i] == pytest.approx(one.flops)
        assert vec.bytes[i] == pytest.approx(one.bytes)
        # a dense model reads its weights once whatever the batch: a scalar may stand for the array
        assert np.broadcast_to(vec.dequant_flops, (3,))[i] == pytest.approx(one.dequant_flops)
        p1 = place(mid, "b200", batch=int(batch[i]), context_tokens=int(ctx[i]), **fields)
        assert pv.time_estimate_s[i] == pytest.approx(p1.time_estimate_s)
        assert pv.footprint.total_bytes[i] == pytest.approx(p1.footprint.total_bytes)
    prompts = np.array([100, 2000, 9000])
    pre = model_cost(mid, phase="prefill", prompt_tokens=prompts)
    for i, t in enumerate(prompts):
        assert pre.flops[i] == pytest.approx(model_cost(mid, phase="prefill", prompt_tokens=int(t)).flops)
