"""Bring your own model (issue 17, part 3): a Hugging Face config.json read as the catalog reads it.

Every catalog model, written back out as its family's config.json, must come back as the same
Model, with the same parameter count and the same placement numbers; bad input is one line.
"""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import roofline_lessons
from roofline_lessons.cli import main
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.memory import kv_cache_bytes_per_sequence, max_batch_that_fits
from roofline_lessons.core.model_config import (MODEL_TYPES, model_config_notes, model_from_config,
                                                supported_model_types)
from roofline_lessons.core.models import CHUNKED_ATTENTION, FULL_ATTENTION, Model, get_model, list_models
from roofline_lessons.core.placement import place

STATE = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}

def hf_config(m: Model) -> dict:
    """A Hugging Face config.json (as a dict) rebuilt from a catalog entry, in its family's naming."""
    c = {"hidden_size": m.hidden_size, "num_hidden_layers": m.num_hidden_layers,
         "num_attention_heads": m.num_attention_heads, "num_key_value_heads": m.num_key_value_heads,
         "head_dim": m.head_dim, "intermediate_size": m.intermediate_size, "vocab_size": m.vocab_size,
         "max_position_embeddings": m.max_context_tokens, "tie_word_embeddings": m.tie_word_embeddings}
    if m.is_mla:
        c.update(model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"], head_dim=m.qk_rope_head_dim,
                 q_lora_rank=m.q_lora_rank, kv_lora_rank=m.kv_lora_rank, qk_nope_head_dim=m.qk_nope_head_dim,
                 qk_rope_head_dim=m.qk_rope_head_dim, v_head_dim=m.v_head_dim, n_routed_experts=m.num_experts,
                 num_experts_per_tok=m.num_experts_per_tok, moe_intermediate_size=m.moe_intermediate_size,
                 n_shared_experts=m.n_shared_experts, first_k_dense_replace=m.first_k_dense_replace,
                 num_nextn_predict_layers=m.mtp_layers, moe_layer_freq=1)
        return c
    if m.attention_chunk_size:
        text = {**c, "model_type": "llama4_text", "intermediate_size": m.moe_intermediate_size,
                "intermediate_size_mlp": m.intermediate_size, "num_local_experts": m.num_experts,
                "num_experts_per_tok": m.num_experts_per_tok, "interleave_moe_layer_step": m.moe_layer_interval,
                "attention_chunk_size": m.attention_chunk_size,
                "no_rope_layers": [int(t == "chunked_attention") for t in m.layer_types()]}
        del text["tie_word_embeddings"]
        return {"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
                "tie_word_embeddings": m.tie_word_embeddings, "text_config": text}
    if m.sliding_window_pattern and m.is_moe:
        c.update(model_type="gpt_oss", architectures=["GptOssForCausalLM"], num_local_experts=m.num_experts,
                 num_experts_per_tok=m.num_experts_per_tok, sliding_window=m.sliding_window,
                 layer_types=list(m.layer_types()))
        return c
    if m.sliding_window_pattern:
        return {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
                "text_config": {**c, "model_type": "gemma3_text", "sliding_window": m.sliding_window,
                                "sliding_window_pattern": m.sliding_window_pattern}}
    if m.is_hybrid:
        text = {**c, "model_type": "qwen3_5_text", "attn_output_gate": m.attn_output_gate,
                "layer_types": ["linear_attention" if t == "gated_deltanet" else t for t in m.layer_types()],
                "full_attention_interval": m.full_attention_interval,
                "linear_num_key_heads": m.linear_num_key_heads, "linear_num_value_heads": m.linear_num_value_heads,
                "linear_key_head_dim": m.linear_key_head_dim, "linear_value_head_dim": m.linear_value_head_dim,
                "linear_conv_kernel_dim": m.linear_conv_kernel_dim, "mamba_ssm_dtype": STATE[m.state_dtype],
                "mtp_num_hidden_layers": m.mtp_layers,
                "rope_parameters": {"rope_type": "default", "partial_rotary_factor": m.partial_rotary_factor}}
        return {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"], "text_config": text}
    if m.is_moe and not m.qk_norm:
        c.update(model_type="mixtral", architectures=["MixtralForCausalLM"], num_local_experts=m.num_experts,
                 num_experts_per_tok=m.num_experts_per_tok, intermediate_size=m.moe_intermediate_size,
                 sliding_window=m.sliding_window)
        return c
    if m.is_moe:
        c.update(model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"], num_experts=m.num_experts,
                 num_experts_per_tok=m.num_experts_per_tok, moe_intermediate_size=m.moe_intermediate_size,
                 decoder_sparse_step=m.moe_layer_interval, mlp_only_layers=list(range(m.first_k_dense_replace)))
        return c
    if m.qk_norm:
        c.update(model_type="qwen3", architectures=["Qwen3ForCausalLM"], use_sliding_window=False)
        return c
    if m.sliding_window:
        c.update(model_type="mistral", architectures=["MistralForCausalLM"], sliding_window=m.sliding_window)
        return c
    c.update(model_type="llama", architectures=["LlamaForCausalLM"])
    return c


def _same_but_labels(got: Model, want: Model) -> Model:
    """``got`` with ``want``'s name, source and published reference figures (not in a config.json)."""
    return dataclasses.replace(got, name=want.name, source=want.source,
                               published_total_params=want.published_total_params,
                               published_active_params=want.published_active_params,
                               published_active_params_detail=want.published_active_params_detail,
                               published_embedding_params=want.published_embedding_params,
                               published_detail_source=want.published_detail_source)


@pytest.mark.parametrize("mid", list_models())
def test_a_catalog_model_read_from_its_config_is_the_catalog_model(mid):
    want = get_model(mid)
    config = json.loads(json.dumps(hf_config(want)))  # what a config.json file holds
    got = model_from_config(config, id=mid)
    assert _same_but_labels(got, want) == want
    assert (got.parameter_count(), got.active_parameter_count()) == (want.parameter_count(),
                                                                      want.active_parameter_count())
    for phase, tokens in (("decode", {"context_tokens": 4096}), ("prefill", {"prompt_tokens": 2048})):
        assert (place(got, "h100-sxm", phase=phase, batch=8, **tokens).to_dict()
                == place(want, "h100-sxm", phase=phase, batch=8, **tokens).to_dict())


#: families the reader knows that no catalog model stands for (each is tested below on a published config)
NOT_IN_THE_CATALOG = {"qwen2", "qwen2_moe", "deepseek_v2", "phi3", "gemma2", "olmo2", "granite"}


def test_the_catalog_covers_every_family_but_those_tested_on_their_own_configs():
    families = {MODEL_TYPES[(c.get("text_config") or c)["model_type"]]
                for c in (hf_config(get_model(m)) for m in list_models())}
    assert families == set(MODEL_TYPES.values()) - NOT_IN_THE_CATALOG


def test_qwen2_reads_like_llama_and_ignores_an_unused_window():
    llama = hf_config(get_model("llama-3.1-8b"))
    qwen2 = {**llama, "model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "sliding_window": 131072,
             "use_sliding_window": False}
    got, want = model_from_config(qwen2, id="x"), model_from_config(llama, id="x")
    assert dataclasses.replace(got, source=want.source) == want and "qwen2" in got.source


def test_omitted_fields_take_transformers_defaults():
    want = get_model("llama-2-7b")
    config = {k: v for k, v in hf_config(want).items() if k not in ("num_key_value_heads", "head_dim",
                                                                     "tie_word_embeddings")}
    assert _same_but_labels(model_from_config(config, id=want.id), want) == want


def test_gemma3_published_text_config_leaves_fields_to_its_class():
    """google/gemma-3-27b-it's text_config gives no vocab_size, max_position_embeddings or pattern."""
    want = get_model("gemma-3-27b")
    text = {"model_type": "gemma3_text", "hidden_size": want.hidden_size, "intermediate_size": want.intermediate_size,
            "num_attention_heads": want.num_attention_heads, "num_hidden_layers": want.num_hidden_layers,
            "num_key_value_heads": want.num_key_value_heads, "head_dim": want.head_dim,
            "sliding_window": want.sliding_window, "query_pre_attn_scalar": 168}
    got = model_from_config({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
                             "text_config": text}, id=want.id)
    assert _same_but_labels(got, want) == want


@pytest.mark.parametrize("layout", ["layer_types", "_sliding_window_pattern"])
def test_gemma3_layouts(layout):
    want = get_model("gemma-3-27b")
    text = dict(hf_config(want)["text_config"])
    del text["sliding_window_pattern"]
    text[layout] = list(want.layer_types()) if layout == "layer_types" else want.sliding_window_pattern
    assert _same_but_labels(model_from_config({"text_config": text}, id=want.id), want) == want


@pytest.mark.parametrize("keep", ["layer_types", "full_attention_interval"])
def test_the_hybrid_layout_from_either_field(keep):
    want = get_model("qwen3.8-27b")
    text = dict(hf_config(want)["text_config"])
    del text["full_attention_interval" if keep == "layer_types" else "layer_types"]
    assert _same_but_labels(model_from_config(text, id=want.id), want) == want


def test_gpt_oss_experts_per_token_spelling():
    want = get_model("gpt-oss-120b")
    config = dict(hf_config(want))
    config["experts_per_token"] = config.pop("num_experts_per_tok")
    assert _same_but_labels(model_from_config(config, id=want.id), want) == want


def test_a_file_or_its_folder_names_the_model(tmp_path):
    folder = tmp_path / "Llama-3.1-8B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(hf_config(get_model("llama-3.1-8b"))), encoding="utf-8")
    by_file, by_folder = model_from_config(folder / "config.json"), model_from_config(str(folder))
    assert by_file == by_folder and by_file.id == "llama-3.1-8b" and str(folder) in by_file.source
    named = model_from_config({**hf_config(get_model("llama-3.1-8b")), "_name_or_path": "meta-llama/Llama-3.1-8B"})
    assert (named.id, named.name) == ("llama-3.1-8b", "Llama-3.1-8B")
    assert model_from_config(hf_config(get_model("llama-3.1-8b")), id="mine").id == "mine"


def test_the_public_api_exports_it():
    assert roofline_lessons.model_from_config is model_from_config
    assert "model_from_config" in roofline_lessons.__all__


def _llama() -> dict:
    return hf_config(get_model("llama-3.1-8b"))


def _without(config: dict, key: str) -> dict:
    return {k: v for k, v in config.items() if k != key}


def _hybrid(**change) -> dict:
    return {**hf_config(get_model("qwen3.8-27b"))["text_config"], **change}


BAD_CONFIGS = [
    ({**_llama(), "model_type": "falcon", "architectures": ["FalconForCausalLM"]}, "unsupported architecture"),
    (_without(_without(_llama(), "model_type"), "architectures"), "neither model_type nor architectures"),
    (_without(_llama(), "hidden_size"), "missing field 'hidden_size'"),
    (_without(_llama(), "max_position_embeddings"), "missing field 'max_position_embeddings'"),
    ({**_llama(), "num_hidden_layers": "32"}, "'num_hidden_layers' must be a whole number"),
    ({**_llama(), "vocab_size": 0}, "'vocab_size' must be a whole number >= 1, got 0"),
    ({**_llama(), "tie_word_embeddings": "no"}, "'tie_word_embeddings' must be true or false"),
    ({**_llama(), "model_type": "qwen3", "use_sliding_window": True}, "use_sliding_window"),
    ({**hf_config(get_model("qwen3-30b-a3b")), "decoder_sparse_step": 49}, "decoder_sparse_step 49"),
    ({**hf_config(get_model("qwen3-30b-a3b")), "mlp_only_layers": [5]}, "mlp_only_layers"),
    (_without(hf_config(get_model("qwen3-30b-a3b")), "num_experts"), "missing field 'num_experts'"),
    (_hybrid(full_attention_interval=3), "disagrees with layer_types"),
    (_hybrid(layer_types=["full_attention", "linear_attention"] * 32), "full attention on every k-th layer only"),
    (_hybrid(layer_types=["linear_attention"] * 3), "for each of the 64 layers"),
    (_hybrid(mamba_ssm_dtype="float8"), "mamba_ssm_dtype"),
    (_hybrid(rope_parameters={"partial_rotary_factor": 2}), "partial_rotary_factor"),
    ({**hf_config(get_model("gpt-oss-120b")), "layer_types": ["full_attention"] + ["sliding_attention"] * 35},
     "full attention on every k-th layer only"),
    (_without(hf_config(get_model("gpt-oss-120b")), "layer_types"), "missing field 'layer_types'"),
    ({**hf_config(get_model("deepseek-v3")), "moe_layer_freq": 2}, "moe_layer_freq"),
    (_without(hf_config(get_model("deepseek-v3")), "kv_lora_rank"), "missing field 'kv_lora_rank'"),
    ({"model_type": "gemma3", "text_config": [1, 2]}, "text_config must be an object"),
    ({**_llama(), "num_key_value_heads": 5}, "num_attention_heads 32 is not a multiple of num_key_value_heads 5"),
    ({**_llama(), "num_key_value_heads": 64}, "num_key_value_heads 64 is more than num_attention_heads 32"),
    ({**hf_config(get_model("qwen3-30b-a3b")), "num_experts_per_tok": 200}, "num_experts_per_tok 200 is more than"),
    ({**hf_config(get_model("gpt-oss-120b")), "num_experts_per_tok": 129}, "num_experts_per_tok 129 is more than"),
    ({**hf_config(get_model("deepseek-v3")), "n_routed_experts": 4}, "num_experts_per_tok 8 is more than the 4"),
    (_hybrid(linear_num_value_heads=47), "linear_num_value_heads 47 is not a multiple of linear_num_key_heads"),
    ({**_llama(), "hidden_size": -4096}, "'hidden_size' must be a whole number >= 1, got -4096"),
    ({**_llama(), "head_dim": 0}, "'head_dim' must be a whole number >= 1, got 0"),
    ({**_llama(), "intermediate_size": -1}, "'intermediate_size' must be a whole number >= 1"),
    ({**_llama(), "num_attention_heads": 0}, "'num_attention_heads' must be a whole number >= 1"),
    ({**hf_config(get_model("qwen3-30b-a3b")), "moe_intermediate_size": 0}, "'moe_intermediate_size' must be"),
]


@pytest.mark.parametrize("config, needle", BAD_CONFIGS, ids=[n for _, n in BAD_CONFIGS])
def test_bad_configs_are_one_line_naming_the_problem(config, needle):
    with pytest.raises(RooflineInputError) as info:
        model_from_config(config)
    message = str(info.value)
    assert needle in message and "\n" not in message


@pytest.mark.parametrize("content, needle", [
    ("{\"hidden_size\": 4096,,}", "is not valid JSON"),
    ("[1, 2, 3]", "not an object"),
    (b"\xff\xfe\x00{", "cannot be read"),
])
def test_broken_files_are_one_line(tmp_path, content, needle):
    path = tmp_path / "config.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(RooflineInputError, match=needle) as info:
        model_from_config(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_path_that_is_not_a_file(tmp_path):
    with pytest.raises(RooflineInputError, match="does not exist"):
        model_from_config(tmp_path / "nowhere.json")
    with pytest.raises(RooflineInputError, match="is not a file"):
        model_from_config(tmp_path)  # a folder without a config.json
    with pytest.raises(RooflineInputError, match="a path to a config.json or a dict"):
        model_from_config(42)


# ---- the command line -----------------------------------------------------------------------------

def _config_file(tmp_path, mid: str):
    folder = tmp_path / mid
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(hf_config(get_model(mid))), encoding="utf-8")
    return path


def _json(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("mid", ["llama-3.1-8b", "qwen3.8-27b", "deepseek-v3"])
def test_place_and_serve_with_model_config_give_the_catalog_numbers(tmp_path, capsys, mid):
    path = _config_file(tmp_path, mid)
    place_args = ("place", "--hardware", "h200", "--phase", "decode", "--batch", "16", "--context", "8192", "--json")
    assert (_json(capsys, *place_args, "--model-config", str(path))
            == _json(capsys, *place_args, "--model", mid))
    serve_args = ("serve", "--hardware", "h200", "--prompt", "2048", "--output", "128", "--batch", "4", "--json")
    assert (_json(capsys, *serve_args, "--model-config", str(path))
            == _json(capsys, *serve_args, "--model", mid))
    assert main(["place", "--hardware", "h200", "--phase", "decode", "--model-config", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"{mid} on NVIDIA H200")


@pytest.mark.parametrize("command", ["place", "serve"])
def test_model_and_model_config_exactly_one(tmp_path, capsys, command):
    path = _config_file(tmp_path, "llama-3.1-8b")
    rest = ["--phase", "decode"] if command == "place" else ["--prompt", "10", "--output", "5"]
    for which in (["--model", "llama-3.1-8b", "--model-config", str(path)], []):
        assert main([command, "--hardware", "h200", *rest, *which]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--model-config" in err and "--model" in err


@pytest.mark.parametrize("command", ["place", "serve"])
def test_a_bad_model_config_is_one_line_and_exit_2(tmp_path, capsys, command):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**_llama(), "model_type": "mamba", "architectures": ["MambaForCausalLM"]}))
    rest = ["--phase", "decode"] if command == "place" else ["--prompt", "10", "--output", "5"]
    assert main([command, "--hardware", "h200", *rest, "--model-config", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "unsupported architecture" in err and "'mamba'" in err


# ---- published config.json files (tests/data/hf_configs, as published on the Hub) ------------------

HF_CONFIGS = Path(__file__).parent / "data" / "hf_configs"
PUBLISHED = {"mistralai--Mistral-7B-v0.1": "mistral-7b", "meta-llama--Llama-3.1-8B": "llama-3.1-8b",
             "Qwen--Qwen3-30B-A3B": "qwen3-30b-a3b", "deepseek-ai--DeepSeek-V3": "deepseek-v3",
             "mistralai--Mixtral-8x7B-v0.1": "mixtral-8x7b"}
#: published configs of families no catalog model stands for (tested on their own further down)
PUBLISHED_ONLY = ("microsoft--Phi-3-mini-4k-instruct", "google--gemma-2-9b-it", "allenai--OLMo-2-1124-7B-Instruct",
                  "ibm-granite--granite-3.3-8b-instruct")


@pytest.mark.parametrize("folder, mid", PUBLISHED.items())
def test_a_published_config_gives_the_catalog_numbers(folder, mid):
    """Not rebuilt from the catalog: the model's own config.json, read as a learner would."""
    want = get_model(mid)
    got = model_from_config(HF_CONFIGS / folder / "config.json")
    assert _same_but_labels(dataclasses.replace(got, id=want.id), want) == want
    assert (got.parameter_count(), got.active_parameter_count()) == (want.parameter_count(),
                                                                      want.active_parameter_count())
    named = dataclasses.replace(got, id=want.id, name=want.name)  # the numbers, not the labels, are compared
    for phase, tokens in (("decode", {"context_tokens": 4096}), ("prefill", {"prompt_tokens": 2048})):
        assert (place(named, "h100-sxm", phase=phase, batch=8, **tokens).to_dict()
                == place(want, "h100-sxm", phase=phase, batch=8, **tokens).to_dict())


def test_the_published_configs_are_untouched_json():
    """The copies stay as published: the fields the course ignores are still there."""
    for folder in (*PUBLISHED, *PUBLISHED_ONLY):
        raw = json.loads((HF_CONFIGS / folder / "config.json").read_text(encoding="utf-8"))
        assert "transformers_version" in raw and "rms_norm_eps" in raw, folder


# ---- naming the model from where its config sits --------------------------------------------------

def test_the_hugging_face_cache_layout_names_the_model(tmp_path):
    snapshot = tmp_path / "hub" / "models--mistralai--Mistral-7B-v0.1" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    published = (HF_CONFIGS / "mistralai--Mistral-7B-v0.1" / "config.json").read_text(encoding="utf-8")
    (snapshot / "config.json").write_text(published, encoding="utf-8")
    got = model_from_config(snapshot / "config.json")
    assert (got.id, got.name) == ("mistral-7b-v0.1", "Mistral-7B-v0.1")  # not the commit hash
    # a fine-tune's _name_or_path names its base model: the cache folder wins
    config = {**json.loads(published), "_name_or_path": "someone/other-model"}
    (snapshot / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert model_from_config(snapshot).id == "mistral-7b-v0.1"


@pytest.mark.parametrize("name_or_path", ["./", ".", "", "/", "  "])
def test_a_name_or_path_that_names_nothing_is_ignored(tmp_path, name_or_path):
    folder = tmp_path / "My-Finetune"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**_llama(), "_name_or_path": name_or_path}), encoding="utf-8")
    got = model_from_config(folder / "config.json")
    assert (got.id, got.name) == ("my-finetune", "my-finetune")
    assert model_from_config({**_llama(), "_name_or_path": name_or_path}).id == "custom-model"


def test_a_local_path_in_name_or_path_gives_its_last_part():
    got = model_from_config({**_llama(), "_name_or_path": "/home/ubuntu/llm/Mistral-7B-v0.1/"})
    assert (got.id, got.name) == ("mistral-7b-v0.1", "Mistral-7B-v0.1")


# ---- notes on what the placement does not take from the file ---------------------------------------

@pytest.mark.parametrize("change, suggestion", [
    ({"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}}, "fp8"),
    ({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}, "int4"),
    ({"quantization_config": {"quant_method": "awq", "bits": 4}}, "int4"),
    ({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}}, "int4"),
    ({"quantization_config": {"quant_method": "mxfp4"}}, "fp4"),
    ({"torch_dtype": "float8_e4m3fn"}, "fp8"),
])
def test_quantized_weights_in_the_config_get_a_note(change, suggestion):
    (note,) = model_config_notes({**_llama(), **change})
    assert "bf16" in note and f"--weights {suggestion}" in note and "\n" not in note


def test_the_published_deepseek_config_notes_its_fp8_weights_and_bf16_ones_do_not():
    (note,) = model_config_notes(HF_CONFIGS / "deepseek-ai--DeepSeek-V3")
    assert "'fp8'" in note and "--weights fp8" in note and str(HF_CONFIGS / "deepseek-ai--DeepSeek-V3") in note
    for folder in ("mistralai--Mistral-7B-v0.1", "meta-llama--Llama-3.1-8B", "Qwen--Qwen3-30B-A3B",
                   "mistralai--Mixtral-8x7B-v0.1", *PUBLISHED_ONLY):
        assert model_config_notes(HF_CONFIGS / folder) == ()


# ---- issue 28: families read from their own configs ------------------------------------------------

def _published(folder: str) -> Model:
    return model_from_config(HF_CONFIGS / folder / "config.json")


def _embedding(m: Model) -> int:
    return m.vocab_size * m.hidden_size


def test_mixtral_is_a_top_2_of_8_moe_with_full_attention():
    """Mistral AI, "Mixtral of experts" (2023-12-11): 46.7B total, 12.9B used per token."""
    m = _published("mistralai--Mixtral-8x7B-v0.1")
    assert (m.num_experts, m.num_experts_per_tok, m.moe_intermediate_size) == (8, 2, 14336)
    assert m.sliding_window is None and set(m.layer_types()) == {FULL_ATTENTION}  # "sliding_window": null
    assert m.num_moe_layers == 32 and m.n_shared_experts == 0
    assert m.parameter_count() == pytest.approx(46.7e9, abs=0.05e9)
    assert m.active_parameter_count() == pytest.approx(12.9e9, abs=0.05e9)


def test_phi3_fused_projections_count_as_llama_and_its_window_applies():
    """Phi-3 technical report (arXiv 2404.14219): phi-3-mini, 3.8 billion parameters. Its fused
    qkv_proj and gate_up_proj hold the same weights as separate projections."""
    m = _published("microsoft--Phi-3-mini-4k-instruct")
    assert m.id == "phi-3-mini-4k-instruct"  # from its _name_or_path
    assert (m.head_dim, m.num_key_value_heads, m.tie_word_embeddings) == (96, 32, False)
    assert m.parameter_count() == pytest.approx(3.8e9, abs=0.05e9)
    # the convention: the window applies to every layer, as in Mistral-7B-v0.1 (2,047 keys at most)
    assert m.sliding_window == 2047 and m.full_attention_window == 2047
    assert kv_cache_bytes_per_sequence(m, 4096) == kv_cache_bytes_per_sequence(m, 2047) < kv_cache_bytes_per_sequence(
        dataclasses.replace(m, sliding_window=None), 4096)
    # a window at least the context (Phi-3-mini-128k's 262,144) is no window
    raw = json.loads((HF_CONFIGS / "microsoft--Phi-3-mini-4k-instruct" / "config.json").read_text())
    assert model_from_config({**raw, "sliding_window": 262144}).sliding_window is None


def test_gemma2_alternates_sliding_and_global_layers():
    """Gemma 2 report (arXiv 2408.00118): 9B: 8,324,201,984 non-embedding parameters; embedding
    256,000 x 3,584 (tied). The two extra norms per layer are not counted: 2 x 3,584 x 42 fewer."""
    m = _published("google--gemma-2-9b-it")
    assert m.layer_types()[:4] == ("sliding_attention", "full_attention") * 2  # layer 0 slides
    assert (m.num_sliding_attention_layers, m.num_full_attention_layers, m.sliding_window) == (21, 21, 4096)
    assert m.tie_word_embeddings and m.head_dim == 256 and not m.qk_norm
    non_embedding = m.parameter_count() - _embedding(m)
    assert non_embedding + 2 * 3584 * 42 == 8_324_201_984
    # layer_types, where a config gives it, is read instead of the default
    raw = json.loads((HF_CONFIGS / "google--gemma-2-9b-it" / "config.json").read_text())
    types = ["sliding_attention", "sliding_attention", "full_attention"] * 14
    assert model_from_config({**raw, "layer_types": types}).sliding_window_pattern == 3


def test_olmo2_normalises_q_and_k_over_the_whole_projection():
    """OLMo 2's q_norm and k_norm hold one weight per element of the q and k projections (4,096
    each here, not 2 x 128): the model card names the size 7B and gives no finer count."""
    m = _published("allenai--OLMo-2-1124-7B-Instruct")
    assert m.qk_norm and not m.qk_norm_per_head
    assert m.qk_norm_parameters == (32 + 32) * 128
    assert 7.0e9 < m.parameter_count() < 7.5e9  # 7.30B: the card's "7B" size class
    from roofline_lessons.core.costs import parameter_counts
    assert parameter_counts(m) == (m.parameter_count(), m.active_parameter_count())


def test_granite_multipliers_change_no_count():
    """granite-3.3-8b-instruct: an 8B dense model (model card), embeddings tied."""
    raw = json.loads((HF_CONFIGS / "ibm-granite--granite-3.3-8b-instruct" / "config.json").read_text())
    m = model_from_config(raw)
    plain = model_from_config({k: v for k, v in raw.items() if not k.endswith(("_multiplier", "_scaling"))},
                              id=m.id)
    assert dataclasses.replace(plain, name=m.name, source=m.source) == m
    assert m.tie_word_embeddings and m.max_context_tokens == 131_072
    assert m.parameter_count() == pytest.approx(8.17e9, abs=0.01e9)


#: Qwen/Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4's config.json as transcribed in a public note (its
#: quantization_config, which the note abridges with "...", left out). No verbatim copy of
#: Qwen1.5-MoE-A2.7B's own file was found; the architecture fields are the same model's.
QWEN15_MOE = {
    "architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "decoder_sparse_step": 1, "hidden_act": "silu", "hidden_size": 2048,
    "initializer_range": 0.02, "intermediate_size": 5632, "max_position_embeddings": 32768, "max_window_layers": 21,
    "model_type": "qwen2_moe", "moe_intermediate_size": 1408, "norm_topk_prob": False, "num_attention_heads": 16,
    "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 16,
    "output_router_logits": False, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
    "shared_expert_intermediate_size": 5632, "sliding_window": 32768, "tie_word_embeddings": False,
    "torch_dtype": "float16", "transformers_version": "4.39.0.dev0", "use_cache": True, "use_sliding_window": False,
    "vocab_size": 151936}


def test_qwen2_moe_has_a_gated_shared_expert_of_its_own_width():
    """Qwen1.5-MoE-A2.7B's model card: 14.3B parameters in total, 2.7B activated."""
    m = model_from_config(QWEN15_MOE)
    assert (m.n_shared_experts, m.shared_expert_intermediate_size, m.shared_expert_gate) == (1, 5632, True)
    assert m.shared_expert_width == 5632 != m.moe_intermediate_size * m.n_shared_experts
    assert m.sliding_window is None  # use_sliding_window false: the window field is unused
    assert m.parameter_count() == pytest.approx(14.3e9, abs=0.05e9)
    assert m.active_parameter_count() == pytest.approx(2.7e9, abs=0.05e9)
    from roofline_lessons.core.costs import parameter_counts
    assert parameter_counts(m) == (m.parameter_count(), m.active_parameter_count())
    c = model_cost(m, phase="decode", batch=4, context_tokens=100)
    names = [op.name for op in c.ops if op.block == "moe"]
    assert "shared_expert_gate_up" in names and "shared_expert_down" in names
    router = next(op for op in c.ops if op.name == "router")
    assert router.weight_params == 2048 * (60 + 1)  # the experts' logits and the shared expert's gate


def test_decoder_sparse_step_interleaves_moe_and_dense_layers():
    """transformers' rule: layer i is MoE when (i + 1) % decoder_sparse_step == 0 (and not in
    mlp_only_layers), a dense MLP of intermediate_size otherwise."""
    m = model_from_config({**QWEN15_MOE, "decoder_sparse_step": 2})
    assert (m.moe_layer_interval, m.num_moe_layers, m.num_dense_mlp_layers) == (2, 12, 12)
    dense_mlp = 2048 + 3 * 2048 * 5632
    every = model_from_config(QWEN15_MOE)
    per_moe = (every.parameter_count() - m.parameter_count()) / 12 + dense_mlp
    assert per_moe == 2048 + 2048 * 61 + 60 * 3 * 2048 * 1408 + 3 * 2048 * 5632  # one MoE block
    first_dense = model_from_config({**QWEN15_MOE, "decoder_sparse_step": 2, "mlp_only_layers": [0, 1, 2]})
    assert first_dense.num_moe_layers == len([i for i in range(3, 24) if (i + 1) % 2 == 0]) == 11


#: DeepSeek-V2-Lite's config.json as a public C++ test fixture copies it "verbatim except for HF
#: bookkeeping keys" (auto_map, use_cache, transformers_version, ... dropped there). No complete copy
#: of the file was found.
DEEPSEEK_V2_LITE = {
    "architectures": ["DeepseekV2ForCausalLM"], "attention_bias": False, "aux_loss_alpha": 0.001,
    "bos_token_id": 100000, "eos_token_id": 100001, "first_k_dense_replace": 1, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 10944, "kv_lora_rank": 512,
    "max_position_embeddings": 163840, "model_type": "deepseek_v2", "moe_intermediate_size": 1408,
    "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2, "norm_topk_prob": False,
    "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 27, "num_key_value_heads": 16,
    "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.707,
                     "original_max_position_embeddings": 4096, "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax", "seq_aux": True,
    "tie_word_embeddings": False, "topk_group": 1, "topk_method": "greedy", "torch_dtype": "bfloat16",
    "v_head_dim": 128, "vocab_size": 102400}
#: DeepSeek-V2 (236B), its architecture fields as public copies of its config.json give them
DEEPSEEK_V2 = {**DEEPSEEK_V2_LITE, "hidden_size": 5120, "intermediate_size": 12288, "moe_intermediate_size": 1536,
               "n_group": 8, "n_routed_experts": 160, "num_attention_heads": 128, "num_hidden_layers": 60,
               "num_key_value_heads": 128, "q_lora_rank": 1536, "topk_group": 3}


def test_deepseek_v2_lite_has_mla_without_a_query_bottleneck():
    """DeepSeek-V2-Lite's model card: 15.7B total, 2.4B activated per token. As for DeepSeek-V3,
    the activated figure leaves the embedding lookup out: 2.45B here, 2.66B with the table."""
    m = model_from_config(DEEPSEEK_V2_LITE)
    assert m.is_mla and m.q_lora_rank == 0 and m.mla_cache_elements_per_token == 512 + 64
    assert (m.n_shared_experts, m.first_k_dense_replace, m.num_moe_layers) == (2, 1, 26)
    assert m.parameter_count() == pytest.approx(15.7e9, abs=0.05e9)
    assert m.active_parameter_count() - _embedding(m) == pytest.approx(2.4e9, abs=0.1e9)
    names = [op.name for op in model_cost(m, phase="decode").ops if op.block == "mla"]
    assert "q_proj" in names and "q_a_proj" not in names  # a plain query projection


def test_deepseek_v2_counts_236b_with_21b_activated():
    """DeepSeek-V2 paper (arXiv 2405.04434): 236B total, 21B activated for each token."""
    m = model_from_config(DEEPSEEK_V2)
    assert m.parameter_count() == pytest.approx(236e9, abs=0.5e9)
    assert m.active_parameter_count() - _embedding(m) == pytest.approx(21e9, abs=0.5e9)


#: Llama-4-Scout-17B-16E-Instruct's config.json, assembled: no verbatim copy was found. The
#: text_config fields are those public transcriptions of the file agree on (a printed Llama4Config of
#: Llama-4-Scout-17B-16E, a fine-tune's text-only config in vLLM issue #20581, test fixtures of
#: vLLM-style planners giving max_position_embeddings 10485760 for the Instruct model); the vision
#: fields are the printed Llama4Config's.
LLAMA4_SCOUT = {
    "architectures": ["Llama4ForConditionalGeneration"], "boi_token_index": 200080, "eoi_token_index": 200081,
    "image_token_index": 200092, "model_type": "llama4",
    "text_config": {
        "attention_bias": False, "attention_chunk_size": 8192, "attention_dropout": 0.0, "attn_scale": 0.1,
        "attn_temperature_tuning": 4, "bos_token_id": 200000, "eos_token_id": [200001, 200007, 200008],
        "floor_scale": 8192, "for_llm_compressor": False, "head_dim": 128, "hidden_act": "silu",
        "hidden_size": 5120, "initializer_range": 0.02, "interleave_moe_layer_step": 1, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "max_position_embeddings": 10485760, "model_type": "llama4_text",
        "moe_layers": list(range(48)), "no_rope_layers": [1, 1, 1, 0] * 12, "num_attention_heads": 40,
        "num_experts_per_tok": 1, "num_hidden_layers": 48, "num_key_value_heads": 8, "num_local_experts": 16,
        "output_router_logits": False, "pad_token_id": 200018, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
        "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0, "torch_dtype": "bfloat16", "use_cache": True,
        "use_qk_norm": True, "vocab_size": 202048},
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
    "vision_config": {
        "attention_dropout": 0.0, "hidden_act": "gelu", "hidden_size": 1408, "image_size": 336,
        "initializer_range": 0.02, "intermediate_size": 5632, "model_type": "llama4_vision_model",
        "multi_modal_projector_bias": False, "norm_eps": 1e-05, "num_attention_heads": 16, "num_channels": 3,
        "num_hidden_layers": 34, "patch_size": 14, "pixel_shuffle_ratio": 0.5, "projector_dropout": 0.0,
        "projector_input_dim": 4096, "projector_output_dim": 4096, "rope_theta": 10000, "vision_feature_layer": -1,
        "vision_feature_select_strategy": "default", "vision_output_dim": 4096}}


def _llama4_vision_parameters(config: dict) -> int:
    """The vision encoder and projector of a Llama 4 checkpoint, from the module shapes a printed
    Llama4ForConditionalGeneration lists: class and position embeddings, the patch projection, pre
    and post LayerNorms, each layer's q/k/v/o (with biases), fc1/fc2 (with biases) and two
    LayerNorms, the pixel-shuffle adapter's two matrices, the projector into the text model."""
    v, h_text = config["vision_config"], config["text_config"]["hidden_size"]
    h, inner, c = v["hidden_size"], v["intermediate_size"], v["num_channels"]
    patches = (v["image_size"] // v["patch_size"]) ** 2
    shuffled = int(h / v["pixel_shuffle_ratio"] ** 2)
    layer = 4 * (h * h + h) + (h * inner + inner) + (inner * h + h) + 2 * 2 * h
    return (h + (patches + 1) * h + c * v["patch_size"] ** 2 * h + 2 * 2 * h + v["num_hidden_layers"] * layer
            + shuffled * v["projector_input_dim"] + v["projector_input_dim"] * v["projector_output_dim"]
            + v["vision_output_dim"] * h_text)


def test_llama4_scout_reads_as_the_catalog_entry():
    got = model_from_config(LLAMA4_SCOUT, id="llama-4-scout")
    assert _same_but_labels(got, get_model("llama-4-scout")) == get_model("llama-4-scout")


def test_llama4_scout_counts():
    """Meta's model card: 17B activated, 109B total. The 109B counts the vision encoder, which is
    not modelled: 0.87B from its module shapes. Text 107.77B + vision 0.87B = 108.64B."""
    m = get_model("llama-4-scout")
    vision = _llama4_vision_parameters(LLAMA4_SCOUT)
    assert vision == 871_932_416
    assert m.parameter_count() == 107_769_861_120
    assert m.parameter_count() + vision == pytest.approx(109e9, rel=0.005)
    assert m.active_parameter_count() == pytest.approx(17e9, rel=0.015)  # 17.17B: top-1 + the shared expert
    assert (m.num_experts_per_tok, m.n_shared_experts, m.shared_expert_width) == (1, 1, 8192)


def test_llama4_layers_chunked_and_global():
    m = get_model("llama-4-scout")
    types = m.layer_types()
    assert [i for i, t in enumerate(types) if t == FULL_ATTENTION] == list(range(3, 48, 4))  # NoPE layers 3, 7, ...
    assert types.count(CHUNKED_ATTENTION) == m.num_chunked_attention_layers == 36
    assert (m.attention_chunk_size, m.chunked_attention_pattern) == (8192, 4)


@pytest.mark.parametrize("keep", ["layer_types", "no_rope_layers", "no_rope_layer_interval"])
def test_llama4_layout_from_any_of_its_fields(keep):
    text = {k: v for k, v in LLAMA4_SCOUT["text_config"].items() if k != "no_rope_layers"}
    if keep == "layer_types":
        text["layer_types"] = ["chunked_attention", "chunked_attention", "chunked_attention", "full_attention"] * 12
    elif keep == "no_rope_layers":
        text["no_rope_layers"] = [1, 1, 1, 0] * 12
    # no_rope_layer_interval absent: transformers' default 4 (an empty no_rope_layers list means the same)
    got = model_from_config({**LLAMA4_SCOUT, "text_config": text}, id="llama-4-scout")
    assert _same_but_labels(got, get_model("llama-4-scout")) == get_model("llama-4-scout")
    empty = model_from_config({**LLAMA4_SCOUT, "text_config": {**text, "no_rope_layers": []}}, id="llama-4-scout")
    assert empty.layer_types() == get_model("llama-4-scout").layer_types()


def test_llama4_maverick_style_interleaved_moe():
    """interleave_moe_layer_step 2 (Maverick): MoE on layers 1, 3, 5, ...; a dense MLP of
    intermediate_size_mlp on the others."""
    text = {**LLAMA4_SCOUT["text_config"], "interleave_moe_layer_step": 2, "num_local_experts": 128,
            "moe_layers": list(range(1, 48, 2))}
    m = model_from_config({**LLAMA4_SCOUT, "text_config": text})
    assert (m.moe_layer_interval, m.num_moe_layers, m.num_dense_mlp_layers) == (2, 24, 24)
    assert (m.intermediate_size, m.moe_intermediate_size) == (16384, 8192)
    from roofline_lessons.core.costs import parameter_counts
    assert parameter_counts(m) == (m.parameter_count(), m.active_parameter_count())


def test_unknown_model_type_names_the_supported_ones():
    with pytest.raises(RooflineInputError) as info:
        model_from_config({**_llama(), "model_type": "falcon", "architectures": ["FalconForCausalLM"]})
    message = str(info.value)
    assert "'falcon'" in message and "\n" not in message
    for family in ("mixtral", "llama4", "qwen2_moe", "deepseek_v2", "phi3", "gemma2", "olmo2", "granite"):
        assert family in message and family in supported_model_types()


_L4 = LLAMA4_SCOUT["text_config"]
BAD_NEW_CONFIGS = [
    ({**LLAMA4_SCOUT, "text_config": {**_L4, "moe_layers": [0, 2, 5]}}, "moe_layers [0, 2, 5] is not a layout"),
    ({**LLAMA4_SCOUT, "text_config": {**_L4, "no_rope_layers": [1, 0] * 3}}, "field 'no_rope_layers' must give"),
    ({**LLAMA4_SCOUT, "text_config": {**_L4, "no_rope_layers": [0, 1, 1, 1] * 12}},
     "full attention on every k-th layer only"),
    ({**LLAMA4_SCOUT, "text_config": {k: v for k, v in _L4.items() if k != "attention_chunk_size"}},
     "missing field 'attention_chunk_size'"),
    ({**LLAMA4_SCOUT, "text_config": {k: v for k, v in _L4.items() if k != "num_local_experts"}},
     "missing field 'num_local_experts'"),
    ({**LLAMA4_SCOUT, "text_config": {**_L4, "interleave_moe_layer_step": 2, "moe_layers": None,
                                      "intermediate_size_mlp": None}}, "missing field 'intermediate_size_mlp'"),
    ({**QWEN15_MOE, "shared_expert_intermediate_size": -1}, "'shared_expert_intermediate_size' must be"),
    ({**QWEN15_MOE, "use_sliding_window": True}, "use_sliding_window"),
    ({**DEEPSEEK_V2_LITE, "kv_lora_rank": None}, "missing field 'kv_lora_rank'"),
    (_without(json.loads((HF_CONFIGS / "mistralai--Mixtral-8x7B-v0.1" / "config.json").read_text()),
              "num_local_experts"), "missing field 'num_local_experts'"),
    ({**json.loads((HF_CONFIGS / "google--gemma-2-9b-it" / "config.json").read_text()), "sliding_window": None,
      "sliding_window_size": None}, "missing field 'sliding_window'"),
]


@pytest.mark.parametrize("config, needle", BAD_NEW_CONFIGS, ids=[n for _, n in BAD_NEW_CONFIGS])
def test_bad_configs_of_the_new_families_are_one_line(config, needle):
    with pytest.raises(RooflineInputError) as info:
        model_from_config(config)
    assert needle in str(info.value) and "\n" not in str(info.value)


# ---- chunked local attention (Llama 4): priced per chunk, not as a window ---------------------------

C = 8192  # Llama 4 Scout's attention_chunk_size


def _scout_block(cost, field_name):
    return cost.block_total("chunked_attention", field_name)


def _per_token_layer_bytes(m: Model) -> float:
    return m.kv_bytes_per_token_per_layer("bf16")


def test_decode_reads_only_the_tokens_of_the_current_chunk():
    """A token at position p attends to p mod C + 1 keys in a chunked layer: p mod C of them are
    history (compulsory), one is its own (it can stay on chip)."""
    m = get_model("llama-4-scout")
    ctx = np.array([0, 100, C - 1, C, C + 5, 3 * C + 17, 100_000])
    batch = 3
    c = model_cost(m, phase="decode", batch=batch, context_tokens=ctx)
    per = _per_token_layer_bytes(m)
    keys = ctx % C + 1
    np.testing.assert_allclose(_scout_block(c, "kv_read_bytes"), 36 * batch * keys * per)
    np.testing.assert_allclose(_scout_block(c, "kv_read_bytes") - _scout_block(c, "kv_scratch_bytes"),
                               36 * batch * (ctx % C) * per)
    # the 12 global layers read the whole history
    np.testing.assert_allclose(c.block_total("full_attention", "kv_read_bytes"), 12 * batch * (ctx + 1) * per)
    # attention FLOPs follow the keys: 2 matmuls of 2·head_dim FLOPs per pair and head, 5 for softmax
    att = next(op for op in c.ops if op.block == "chunked_attention" and op.name.startswith("attention"))
    np.testing.assert_allclose(att.flops, (4 * 128 + 5) * 40 * batch * keys)


def test_decode_writes_a_token_only_if_a_later_one_reads_it():
    """The token that closes a chunk (p mod C == C - 1) is never attended to again in a chunked
    layer: its K and V are scratch, not compulsory; the others are kept."""
    m = get_model("llama-4-scout")
    ctx = np.array([0, C - 2, C - 1, C, 2 * C - 1])
    c = model_cost(m, phase="decode", batch=2, context_tokens=ctx)
    write = next(op for op in c.ops if op.block == "chunked_attention" and op.name == "kv_cache_write")
    kept = np.where((ctx + 1) % C == 0, 0.0, 1.0)
    np.testing.assert_allclose(write.kv_write_bytes, 2 * kept * _per_token_layer_bytes(m))
    full = next(op for op in c.ops if op.block == "full_attention" and op.name == "kv_cache_write")
    np.testing.assert_allclose(write.bytes, full.bytes)  # the unfused view still writes every new K and V


def _brute_force_pairs(prompt: int, chunk: int) -> int:
    return sum(p % chunk + 1 for p in range(prompt))


@pytest.mark.parametrize("prompt", [1, 5, 8, 9, 23, 24, 25])
def test_prefill_attends_within_each_chunk_of_the_prompt(prompt):
    m = dataclasses.replace(get_model("llama-4-scout"), attention_chunk_size=8)
    c = model_cost(m, phase="prefill", batch=2, prompt_tokens=prompt)
    att = next(op for op in c.ops if op.block == "chunked_attention" and op.name.startswith("attention"))
    assert att.flops == (4 * 128 + 5) * 40 * 2 * _brute_force_pairs(prompt, 8)
    write = next(op for op in c.ops if op.block == "chunked_attention" and op.name == "kv_cache_write")
    assert write.kv_write_bytes == 2 * (prompt % 8) * _per_token_layer_bytes(m)  # only the open chunk is kept


def test_prefill_arrays_of_prompts_match_scalars():
    m = get_model("llama-4-scout")
    prompts = np.array([1000, C, C + 1, 20_000, 131_072])
    arr = model_cost(m, phase="prefill", batch=2, prompt_tokens=prompts)
    for i, t in enumerate(prompts):
        one = model_cost(m, phase="prefill", batch=2, prompt_tokens=int(t))
        assert arr.flops[i] == pytest.approx(one.flops)
        assert arr.compulsory_bytes[i] == pytest.approx(one.compulsory_bytes)
        assert arr.bytes[i] == pytest.approx(one.bytes)


def test_within_the_first_chunk_a_chunked_layer_costs_what_a_full_layer_does():
    """Before the first chunk boundary nothing is cut off: the same FLOPs and bytes as full attention."""
    chunked = get_model("llama-4-scout")
    full = dataclasses.replace(chunked, id="scout-all-global", attention_chunk_size=None,
                               chunked_attention_pattern=None)
    for kwargs in ({"phase": "decode", "context_tokens": C - 2}, {"phase": "prefill", "prompt_tokens": C - 1}):
        a, b = model_cost(chunked, batch=4, **kwargs), model_cost(full, batch=4, **kwargs)
        assert (a.flops, a.bytes, a.compulsory_bytes) == pytest.approx((b.flops, b.bytes, b.compulsory_bytes))
    # past it the chunked model is cheaper: never more than a full model
    for kwargs in ({"phase": "decode", "context_tokens": 5 * C + 3}, {"phase": "prefill", "prompt_tokens": 3 * C}):
        a, b = model_cost(chunked, batch=4, **kwargs), model_cost(full, batch=4, **kwargs)
        assert a.flops < b.flops and a.compulsory_bytes < b.compulsory_bytes


def test_the_kv_cache_keeps_only_the_open_chunk():
    m = get_model("llama-4-scout")
    t = np.array([0, 1, C - 1, C, C + 1, 100_000])
    per = _per_token_layer_bytes(m)
    np.testing.assert_allclose(kv_cache_bytes_per_sequence(m, t), per * (12 * t + 36 * (t % C)))
    assert kv_cache_bytes_per_sequence(m, 5) == per * 48 * 5
    assert m.kv_bytes_per_token("bf16") == 48 * per  # before any cap, as for a sliding window
    # the compulsory decode read at a context equals what the cache held before the step (the open
    # chunk and the global layers), and the footprint after it is what the next step reads
    ctx = np.array([10, C - 1, C, 3 * C + 4])
    c = model_cost(m, phase="decode", context_tokens=ctx)
    np.testing.assert_allclose(c.kv_read_bytes - c.kv_scratch_bytes, kv_cache_bytes_per_sequence(m, ctx))
    fits = max_batch_that_fits(m, "h200", np.array([C - 1, C]), weights_dtype="fp8")  # 108 GB of weights
    assert fits[1] > fits[0]  # at a chunk boundary the chunked layers hold nothing
