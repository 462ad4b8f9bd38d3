import pytest

from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.models import FULL_ATTENTION, GATED_DELTANET, get_model, list_models
from roofline_lessons.core.units import KiB, MiB

IDS = ["llama-2-7b", "llama-3.1-8b", "llama-3.1-70b", "mistral-7b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b",
       "qwen3.8-27b"]


def test_every_issue_model_is_in_the_catalog():
    assert set(IDS) <= set(list_models())


@pytest.mark.parametrize("mid", [m for m in IDS if m != "qwen3.8-27b"])
def test_parameter_count_within_half_a_percent_of_published(mid):
    m = get_model(mid)
    assert m.parameter_count() == pytest.approx(m.published_total_params, rel=0.005)


def test_llama_exact_counts():
    assert get_model("llama-3.1-8b").parameter_count() == 8_030_261_248
    assert get_model("llama-3.1-70b").parameter_count() == 70_553_706_496


def test_moe_active_parameters():
    m = get_model("qwen3-30b-a3b")
    assert m.active_parameter_count() == pytest.approx(3.3e9, rel=0.02)
    assert m.active_parameter_count() < m.parameter_count() / 8


# KV bytes per token in bf16 = 2 x full-attention layers x KV heads x head_dim x 2 bytes
KV_PER_TOKEN = {"llama-2-7b": 2 * 32 * 32 * 128 * 2, "llama-3.1-8b": 2 * 32 * 8 * 128 * 2,
                "llama-3.1-70b": 2 * 80 * 8 * 128 * 2, "mistral-7b": 2 * 32 * 8 * 128 * 2,
                "qwen3-8b": 2 * 36 * 8 * 128 * 2, "qwen3-32b": 2 * 64 * 8 * 128 * 2,
                "qwen3-30b-a3b": 2 * 48 * 4 * 128 * 2, "qwen3.8-27b": 2 * 16 * 4 * 256 * 2}


@pytest.mark.parametrize("mid", IDS)
def test_kv_bytes_per_token(mid):
    m = get_model(mid)
    assert m.kv_bytes_per_token("bf16") == KV_PER_TOKEN[mid]
    assert m.kv_bytes_per_token("fp8") == KV_PER_TOKEN[mid] / 2


def test_qwen38_hybrid_numbers():
    m = get_model("qwen3.8-27b")
    types = m.layer_types()
    assert [i for i, t in enumerate(types) if t == FULL_ATTENTION] == list(range(3, 64, 4))
    assert types.count(GATED_DELTANET) == 48
    assert m.kv_bytes_per_token("bf16") == 64 * KiB
    assert m.kv_bytes_per_token_per_layer("bf16") == 4 * KiB
    assert m.deltanet_state_bytes_per_layer() == 3 * MiB  # float32 reference state
    assert m.deltanet_state_bytes() == 144 * MiB
    assert m.deltanet_state_bytes("bf16") == 72 * MiB
    assert m.parameter_count() == pytest.approx(27e9, rel=0.01)
    assert m.head_dim != m.hidden_size // m.num_attention_heads


def test_head_dim_is_its_own_field_for_qwen3():
    m = get_model("qwen3-32b")
    assert m.head_dim == 128 and m.hidden_size // m.num_attention_heads == 80


def test_unknown_model_names_close_matches():
    with pytest.raises(RooflineInputError, match="qwen3.8-27b"):
        get_model("qwen3-27b")


def test_parameter_counts_from_config_equal_the_operator_sum():
    """The model counts its weights from the config; the cost model builds the same weights into its
    operators. Every weight an operator holds must be counted once, and no weight left out."""
    from roofline_lessons.core.costs import parameter_counts

    for mid in list_models():
        m = get_model(mid)
        assert (m.parameter_count(), m.active_parameter_count()) == parameter_counts(m), mid


def test_deepseek_v3_active_count_is_set_beside_deepseeks_readme_figure():
    """README_WEIGHTS.md: 36.7B activated including 0.9B embedding and 0.9B head; the count here is
    ~0.85B more (issue 25, item 25): the catalog cites the README and lesson 12 states the gap."""
    from pathlib import Path

    m = get_model("deepseek-v3")
    embedding = m.vocab_size * m.hidden_size
    assert "README_WEIGHTS.md" in m.source and "36.7B activated" in m.source
    assert m.published_active_params_detail == 36.7e9 and m.published_embedding_params == 0.9e9
    assert "36.7B" in m.published_detail_source and "0.9B" in m.published_detail_source
    assert embedding == pytest.approx(m.published_embedding_params, abs=0.05e9)  # the README's 0.9B, rounded
    gap = m.active_parameter_count() - m.published_active_params_detail
    assert 0.8e9 < gap < 0.9e9  # if the count changes, the lesson's sentence and the catalog note must be rechecked
    lesson = (Path(__file__).resolve().parents[1] / "py" / "notebooks" / "12_shrinking_the_bytes.py").read_text()
    assert "36.7e9" not in lesson and "dsv3.published_active_params_detail" in lesson and "readme_gap" in lesson
    assert "**unexplained**" in lesson
