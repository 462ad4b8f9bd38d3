"""Bring your own model (issue 17, part 3): a Hugging Face config.json read as the catalog reads it.

Every catalog model, written back out as its family's config.json, must come back as the same
Model, with the same parameter count and the same placement numbers; bad input is one line.
"""

import dataclasses
import json
from pathlib import Path

import pytest

import roofline_lessons
from roofline_lessons.cli import main
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.model_config import MODEL_TYPES, model_config_notes, model_from_config
from roofline_lessons.core.models import Model, get_model, list_models
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
    if m.is_moe:
        c.update(model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"], num_experts=m.num_experts,
                 num_experts_per_tok=m.num_experts_per_tok, moe_intermediate_size=m.moe_intermediate_size,
                 decoder_sparse_step=1, mlp_only_layers=list(range(m.first_k_dense_replace)))
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


def test_the_catalog_covers_every_family_but_qwen2():
    families = {MODEL_TYPES[(c.get("text_config") or c)["model_type"]]
                for c in (hf_config(get_model(m)) for m in list_models())}
    assert families == set(MODEL_TYPES.values()) - {"qwen2"}


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
    ({**_llama(), "model_type": "phi3", "architectures": ["Phi3ForCausalLM"]}, "unsupported architecture"),
    (_without(_without(_llama(), "model_type"), "architectures"), "neither model_type nor architectures"),
    (_without(_llama(), "hidden_size"), "missing field 'hidden_size'"),
    (_without(_llama(), "max_position_embeddings"), "missing field 'max_position_embeddings'"),
    ({**_llama(), "num_hidden_layers": "32"}, "'num_hidden_layers' must be a whole number"),
    ({**_llama(), "vocab_size": 0}, "'vocab_size' must be a whole number >= 1, got 0"),
    ({**_llama(), "tie_word_embeddings": "no"}, "'tie_word_embeddings' must be true or false"),
    ({**_llama(), "model_type": "qwen3", "use_sliding_window": True}, "use_sliding_window"),
    ({**hf_config(get_model("qwen3-30b-a3b")), "decoder_sparse_step": 2}, "decoder_sparse_step"),
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
             "Qwen--Qwen3-30B-A3B": "qwen3-30b-a3b", "deepseek-ai--DeepSeek-V3": "deepseek-v3"}


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
    for folder in PUBLISHED:
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
    for folder in ("mistralai--Mistral-7B-v0.1", "meta-llama--Llama-3.1-8B", "Qwen--Qwen3-30B-A3B"):
        assert model_config_notes(HF_CONFIGS / folder) == ()
