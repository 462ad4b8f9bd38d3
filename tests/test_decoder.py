"""The numpy decoder behind lesson 9: it computes what a Llama-architecture decoder computes, and
its shape is a catalog Model the cost model can price."""

import numpy as np
import pytest

from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.measure.decoder import NumpyDecoder, llama_like, sized_for_cache


def tiny(nq=4, nkv=2, layers=2):
    return llama_like("tiny", hidden_size=32, num_hidden_layers=layers, num_attention_heads=nq,
                      num_key_value_heads=nkv, head_dim=8, intermediate_size=48, vocab_size=50, max_context_tokens=64)


def tokens(batch, t, seed=1, vocab=50):
    return np.random.default_rng(seed).integers(0, vocab, size=(batch, t))


def test_decode_with_the_cache_equals_a_full_recompute():
    dec = NumpyDecoder(tiny())
    seq = tokens(2, 9)
    full = dec.logits_without_cache(seq)
    cache = dec.new_cache(2, 16)
    got = [dec.prefill(seq[:, :5], cache)]
    for i in range(5, 9):
        got.append(dec.decode(seq[:, i], cache))
    assert cache.length == 9
    np.testing.assert_allclose(np.stack(got, axis=1), full[:, 4:], rtol=2e-4, atol=2e-4)


def test_causal_a_later_token_never_changes_an_earlier_position():
    dec = NumpyDecoder(tiny())
    a = tokens(1, 8)
    b = a.copy()
    b[0, 6] = (b[0, 6] + 1) % 50
    la, lb = dec.logits_without_cache(a), dec.logits_without_cache(b)
    np.testing.assert_allclose(la[:, :6], lb[:, :6], rtol=1e-5, atol=1e-5)
    assert not np.allclose(la[:, 6:], lb[:, 6:])


def test_grouped_query_attention_equals_repeating_the_kv_heads():
    """GQA with 2 KV heads for 4 query heads = multi-head attention whose K/V heads are repeated."""
    gqa = NumpyDecoder(tiny(nq=4, nkv=2), seed=3)
    mha = NumpyDecoder(tiny(nq=4, nkv=4), seed=3)
    d = 8
    for lg, lm in zip(gqa.layers, mha.layers):
        for name in lm:
            if name not in ("wk", "wv"):
                lm[name] = lg[name]
        for name in ("wk", "wv"):  # KV head j serves query heads 2j and 2j + 1
            heads = lg[name].reshape(32, 2, d)
            lm[name] = np.repeat(heads, 2, axis=1).reshape(32, 4 * d)
    mha.embed, mha.lm_head, mha.final_norm = gqa.embed, gqa.lm_head, gqa.final_norm
    seq = tokens(1, 6)
    np.testing.assert_allclose(gqa.logits_without_cache(seq), mha.logits_without_cache(seq), rtol=1e-5, atol=1e-5)


def test_batch_rows_are_independent():
    dec = NumpyDecoder(tiny())
    seq = tokens(3, 5)
    together = dec.new_cache(3, 8)
    dec.prefill(seq[:, :4], together)
    both = dec.decode(seq[:, 4], together)
    for row in range(3):
        alone = dec.new_cache(1, 8)
        dec.prefill(seq[row:row + 1, :4], alone)
        np.testing.assert_allclose(dec.decode(seq[row:row + 1, 4], alone)[0], both[row], rtol=1e-5, atol=1e-5)


def test_its_weights_are_the_models_parameters_and_the_cost_model_prices_it():
    model = tiny()
    dec = NumpyDecoder(model)
    assert dec.parameter_count() == model.parameter_count()
    cost = model_cost(model, phase="decode", batch=1, context_tokens=8, weights_dtype="fp32",
                      activations_dtype="fp32", kv_dtype="fp32", compute_dtype="fp32")
    assert cost.weight_bytes > 0.9 * dec.weight_bytes()  # decode reads (nearly) every weight once


def test_sized_for_cache_streams_from_dram():
    from roofline_lessons.measure.decoder import streamed_weight_bytes

    llc = 32 * 2**20
    model = sized_for_cache(llc)
    assert streamed_weight_bytes(model) >= 8 * llc  # the bytes a step reads, not the embedding table
    smaller = llama_like("x", hidden_size=1024, num_hidden_layers=model.num_hidden_layers - 1, num_attention_heads=8,
                         num_key_value_heads=2, head_dim=128, intermediate_size=2816, vocab_size=8192)
    assert streamed_weight_bytes(smaller) < 8 * llc  # the smallest such model, not a larger one
    assert streamed_weight_bytes(model) < model.parameter_count() * 4  # one embedding row, not the table


@pytest.mark.parametrize("bad", [dict(num_attention_heads=3, num_key_value_heads=2), dict(head_dim=7),
                                 dict(hidden_size=0)])
def test_bad_shapes_are_refused_with_the_reason(bad):
    fields = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                  intermediate_size=48, vocab_size=50)
    with pytest.raises(RooflineInputError):
        llama_like("bad", **{**fields, **bad})


def test_a_full_cache_and_bad_tokens_are_refused():
    dec = NumpyDecoder(tiny())
    cache = dec.new_cache(1, 4)
    with pytest.raises(RooflineInputError, match="would not fit"):
        dec.prefill(tokens(1, 5), cache)
    with pytest.raises(RooflineInputError, match="token ids"):
        dec.prefill(np.array([[50]]), dec.new_cache(1, 4))


def test_numpy_calls_per_layer_is_counted_from_the_code_and_is_not_about_ten():
    """Lesson 9 quotes this count for the per-step overhead; it once said "about ten" (issue 25, item 2)."""
    import roofline_lessons.measure.decoder as decoder_module
    from roofline_lessons.measure.decoder import numpy_calls_per_layer

    calls = numpy_calls_per_layer()
    # by hand, batch-1 decode: RMSNorm 7 ×2, 3 projections (fold, matmul, unfold, reshape, transpose) 15,
    # RoPE 16 ×2, cache writes and reads 4, scores 6, softmax 5, probs @ V and merge 5, wo 3, SwiGLU 13
    # (+ gate 4), 2 residual adds: about 103, of them about 39 reshapes, slices and cache writes
    assert 95 <= calls.total <= 110, calls
    assert 32 <= calls.views <= 45 and calls.compute == calls.total - calls.views
    assert calls.compute > 40  # well above "about ten" even counting only the calls that compute
    assert numpy_calls_per_layer(batch=3, cached_tokens=5) == calls  # the code's count, not the sizes'
    assert decoder_module.np is np  # the counter puts numpy back
    with pytest.raises(RooflineInputError):
        numpy_calls_per_layer(batch=0)


def test_lesson_9_quotes_the_counted_calls_not_a_typed_number():
    from pathlib import Path

    lesson = (Path(__file__).resolve().parents[1] / "py" / "notebooks" / "09_reality_check.py").read_text()
    assert "numpy_calls_per_layer()" in lesson and "{calls.total} numpy calls per layer" in lesson
    assert "ten numpy calls" not in lesson


def test_every_weight_product_is_one_2d_matmul_whatever_the_batch():
    """numpy's matmul loops a 3-D left operand's leading dimension: (b, 1, h) @ W would run b
    matrix–vector products and read W b times (issue 25, item 1). Each weight must meet one 2-D
    operand of batch × t rows, once per step."""
    from roofline_lessons.measure.decoder import NumpyDecoder, llama_like

    seen = []

    class Weight(np.ndarray):
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            plain = [a.view(np.ndarray) if isinstance(a, np.ndarray) else a for a in inputs]
            if ufunc is np.matmul:
                seen.append(tuple(a.shape for a in plain))
            return getattr(ufunc, method)(*plain, **kwargs)

    model = llama_like("fold", hidden_size=16, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                       head_dim=4, intermediate_size=32, vocab_size=32)
    dec = NumpyDecoder(model, seed=0)
    prompt = np.arange(12).reshape(3, 4) % 32
    full = dec.logits_without_cache(np.concatenate([prompt, [[4], [5], [6]]], axis=1))
    cache = dec.new_cache(3, 5)
    dec.prefill(prompt, cache)
    dec.lm_head = dec.lm_head.view(Weight)
    dec.layers = [{k: (a.view(Weight) if a.ndim == 2 else a) for k, a in layer.items()} for layer in dec.layers]
    logits = dec.decode(np.array([4, 5, 6]), cache)
    assert len(seen) == 2 * 7 + 1  # seven weight matrices per layer and the lm_head, each once
    for left, right in seen:  # (3 sequences × 1 new token, fan_in) @ (fan_in, fan_out)
        assert len(left) == 2 and left[0] == 3 and left[1] == right[0], seen
    np.testing.assert_allclose(logits, full[:, -1], rtol=1e-4, atol=1e-5)  # folding changed no result
