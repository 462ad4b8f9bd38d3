"""Bring your own model: a Hugging Face ``config.json`` → a :class:`~roofline_lessons.core.models.Model`.

``model_from_config("path/to/config.json")`` (or a folder holding one, or the parsed dict) reads
the architecture fields of the families the cost model knows and maps them exactly as
``data/models.toml`` does, so a catalog model's own config gives the catalog's numbers:

============================  ================================================================
family (``model_type``)       fields read beyond the common ones
============================  ================================================================
``llama``, ``mistral``        ``sliding_window`` (Mistral-7B-v0.1: every layer slides)
``granite``                   as ``llama``; its ``embedding_multiplier``, ``residual_multiplier``,
                              ``attention_multiplier`` and ``logits_scaling`` scale activations
                              and change no count
``phi3``                      as ``llama`` (its fused ``qkv_proj`` and ``gate_up_proj`` hold the same
                              weights); ``sliding_window`` applies to every layer, as in Mistral, and
                              is dropped when it is at least ``max_position_embeddings`` (Phi-3-128k's
                              262,144). Convention: the window is applied, as the config says and as
                              transformers and vLLM do (Phi-3-mini-4k: 2,047; vLLM's FlashAttention
                              path sees 2,048 keys, its other backends 2,047, vLLM PR #4380), while
                              llama.cpp ignores it for Phi models (PR #13676, 2025-05): the smaller
                              count keeps a lower bound below every engine
``olmo2``                     ``qk_norm`` on, one norm over all heads (a weight per element of the
                              q and k projections, not per head)
``gemma2``                    ``sliding_window`` (or ``sliding_window_size``) on every other layer,
                              layer 0 first (``layer_types`` where given); ``head_dim``; embeddings
                              tied unless told otherwise. Its two extra norms per layer (before and
                              after the MLP) are not counted (hidden_size weights each)
``qwen2``, ``qwen3``          ``qk_norm`` on for Qwen3; ``use_sliding_window`` must be off
``qwen3_moe``, ``qwen2_moe``  ``num_experts``, ``num_experts_per_tok``, ``moe_intermediate_size``,
                              ``mlp_only_layers`` (only a leading run: the first k layers dense),
                              ``decoder_sparse_step`` (MoE every k-th layer, a dense MLP of
                              ``intermediate_size`` between); Qwen2-MoE adds
                              ``shared_expert_intermediate_size``: one always-on expert of that
                              width, scaled by a sigmoid gate (hidden_size → 1)
``mixtral``                   ``num_local_experts``, ``num_experts_per_tok``; every expert is
                              ``intermediate_size`` wide; ``sliding_window`` as in Mistral (null in
                              Mixtral-8x7B-v0.1's published file)
``llama4`` / ``llama4_text``  ``text_config``: ``num_local_experts``, ``num_experts_per_tok`` (top-1
                              routing), one shared expert, experts and shared expert
                              ``intermediate_size`` wide; ``moe_layers`` or
                              ``interleave_moe_layer_step`` (MoE every k-th layer, a dense MLP of
                              ``intermediate_size_mlp`` elsewhere); ``layer_types``, else
                              ``no_rope_layers`` (1: a RoPE layer with chunked local attention, 0: a
                              global NoPE layer), else ``no_rope_layer_interval`` (default 4), with
                              ``attention_chunk_size``. ``use_qk_norm`` is a weightless L2 norm
                              (no count); the vision tower is not read
``qwen3_5`` / ``qwen3_5_text``  the Gated DeltaNet hybrid (Qwen3.8-27B): ``layer_types``
                              (``linear_attention`` / ``full_attention``) or
                              ``full_attention_interval``, ``linear_*``, ``attn_output_gate``,
                              ``partial_rotary_factor`` (also inside ``rope_parameters``),
                              ``mamba_ssm_dtype`` → the recurrent state's dtype
``gemma3`` / ``gemma3_text``  ``text_config``; ``sliding_window`` and ``layer_types`` or
                              ``sliding_window_pattern`` / ``_sliding_window_pattern``
``gpt_oss``                   ``num_local_experts``, ``num_experts_per_tok`` (or
                              ``experts_per_token``), ``layer_types``, ``sliding_window``; every
                              expert is ``intermediate_size`` wide
``deepseek_v3``,              MLA (``q_lora_rank``, ``kv_lora_rank``, ``qk_nope_head_dim``,
``deepseek_v2``               ``qk_rope_head_dim``, ``v_head_dim``; the per-head query/key width is
                              nope + rope; ``q_lora_rank`` null, as in DeepSeek-V2-Lite: a plain
                              query projection), ``n_routed_experts``, ``n_shared_experts``,
                              ``first_k_dense_replace``, ``num_nextn_predict_layers``; group-limited
                              routing ``n_group``, ``topk_group`` (a token's experts from at most
                              topk_group of n_group contiguous groups): DeepSeek-V3 always routes so
                              (transformers' DeepseekV3Config defaults 8 and 4 where the fields are
                              absent), DeepSeek-V2 when ``topk_method`` is ``group_limited_greedy``
                              (``greedy``, transformers' default and DeepSeek-V2-Lite's: not limited)
============================  ================================================================

Common fields: ``hidden_size``, ``num_hidden_layers``, ``num_attention_heads``,
``intermediate_size``, ``vocab_size`` and ``max_position_embeddings`` (→ ``max_context_tokens``)
are required; ``num_key_value_heads`` defaults to the attention heads, ``head_dim`` to
hidden_size // heads and ``tie_word_embeddings`` to the family's own default, as transformers reads
them. Gemma 3's published ``text_config`` leaves out fields that its transformers class fills in
(``vocab_size``, ``max_position_embeddings``, the sliding-window pattern): those defaults are
applied the same way (:data:`GEMMA3_TEXT_DEFAULTS`).

Anything else (an unknown architecture, a missing or malformed field, a layer layout the cost model
cannot represent, a file that is not JSON) raises :class:`RooflineInputError` with one line naming
the problem. Biases, attention sinks and vision towers are not modelled (as in the catalog).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from .errors import RooflineInputError
from .models import Model

#: ``model_type`` (of the text config) → family
MODEL_TYPES: dict[str, str] = {
    "llama": "llama", "mistral": "mistral", "qwen2": "qwen2", "qwen3": "qwen3", "qwen3_moe": "qwen3_moe",
    "qwen3_5": "qwen3_5", "qwen3_5_text": "qwen3_5", "gemma3": "gemma3", "gemma3_text": "gemma3",
    "gpt_oss": "gpt_oss", "deepseek_v3": "deepseek_v3", "deepseek_v2": "deepseek_v2", "mixtral": "mixtral",
    "llama4": "llama4", "llama4_text": "llama4", "qwen2_moe": "qwen2_moe", "phi3": "phi3", "gemma2": "gemma2",
    "olmo2": "olmo2", "granite": "granite",
}
#: ``architectures[0]`` → family, for a config without ``model_type``
ARCHITECTURES: dict[str, str] = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3", "Qwen3MoeForCausalLM": "qwen3_moe", "Qwen3_5ForCausalLM": "qwen3_5",
    "Qwen3_5ForConditionalGeneration": "qwen3_5", "Gemma3ForCausalLM": "gemma3",
    "Gemma3ForConditionalGeneration": "gemma3", "GptOssForCausalLM": "gpt_oss",
    "DeepseekV3ForCausalLM": "deepseek_v3", "DeepseekV2ForCausalLM": "deepseek_v2",
    "MixtralForCausalLM": "mixtral", "Llama4ForConditionalGeneration": "llama4", "Llama4ForCausalLM": "llama4",
    "Qwen2MoeForCausalLM": "qwen2_moe", "Phi3ForCausalLM": "phi3", "Gemma2ForCausalLM": "gemma2",
    "Olmo2ForCausalLM": "olmo2", "GraniteForCausalLM": "granite",
}
#: families whose transformers config ties the embedding to the lm_head unless told otherwise
TIED_BY_DEFAULT = frozenset({"gemma3", "gemma2"})
#: transformers' Llama4TextConfig default: a global NoPE layer every 4th layer
LLAMA4_NO_ROPE_LAYER_INTERVAL = 4
#: transformers' Gemma3TextConfig defaults for fields gemma-3's published ``text_config`` omits
GEMMA3_TEXT_DEFAULTS = {"vocab_size": 262_208, "max_position_embeddings": 131_072, "sliding_window_pattern": 6}
#: transformers' DeepseekV3Config defaults for the group-limited routing fields (its gate always limits)
DEEPSEEK_V3_ROUTING_DEFAULTS = {"n_group": 8, "topk_group": 4}
#: DeepSeek-V2 ``topk_method`` values: which limit routing to ``topk_group`` of ``n_group`` groups
#: ("gready" is the default, misspelt, of DeepSeek's own configuration_deepseek.py; it routes greedily)
DEEPSEEK_V2_TOPK_METHODS = {"greedy": False, "gready": False, "group_limited_greedy": True}

#: config.json dtype names → the course's dtype names (the recurrent state's ``mamba_ssm_dtype``)
TORCH_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}

REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
            "max_position_embeddings")


def model_from_config(config: str | os.PathLike | Mapping, id: str | None = None) -> Model:
    """A :class:`Model` from a Hugging Face ``config.json``: a path to the file, a folder holding
    ``config.json``, or the already-parsed dict. ``id`` names the model in reports (default, lower-cased:
    the repo name of a Hugging Face cache path ``models--org--name/snapshots/<sha>/config.json``,
    else the last part of the config's ``_name_or_path`` where it names something (not ``"./"``),
    else the folder the file sits in, else ``"custom-model"``).

    Units follow the catalog: counts of layers, heads and elements; ``max_context_tokens`` in
    tokens. Raises :class:`RooflineInputError` (one line) for a file that is missing, not a file,
    not JSON or not a JSON object; for an architecture outside :data:`MODEL_TYPES`; for a missing or
    malformed field; for a layer layout the cost model cannot represent.
    """
    raw, where = _load(config)
    family, cfg = _family(raw, where)
    mid = _model_id(raw, where, id)
    fields = _read(family, cfg, where)
    name = _name(raw, where) or mid
    source = f"{where} (Hugging Face config.json, model_type {cfg.get('model_type', raw.get('model_type', '?'))!s})"
    return Model(id=mid, name=name, source=source, **fields)


def model_config_notes(config: str | os.PathLike | Mapping) -> tuple[str, ...]:
    """Notes (one line each) on what :func:`model_from_config` reads but the placement does not
    take from the file: a checkpoint whose ``quantization_config`` or ``torch_dtype``/``dtype``
    declares 8- or 4-bit weights (DeepSeek-V3's fp8, a GPTQ/AWQ int4 copy) is still placed with
    bf16 weights unless ``--weights`` (``weights_dtype``) says otherwise. Empty when there is
    nothing to say. Raises :class:`RooflineInputError` as :func:`model_from_config` does for a
    file it cannot read."""
    raw, where = _load(config)
    _, cfg = _family(raw, where)
    declared = _declared_weights(cfg)
    if declared is None:
        return ()
    what, suggestion = declared
    note = (f"{where} declares weights stored in 8 or 4 bits ({what}); the placement uses bf16 weights "
            f"unless you give --weights (weights_dtype=...), e.g. --weights {suggestion}")
    return (note,)


def _declared_weights(cfg: dict) -> tuple[str, str] | None:
    """(what the config says, the course's dtype name nearest to it), or None for 16/32-bit weights."""
    quant = cfg.get("quantization_config")
    if isinstance(quant, dict):
        method = str(quant.get("quant_method", "")).lower()
        bits = quant.get("bits") or quant.get("weight_bits")
        if quant.get("load_in_4bit"):
            bits = 4
        elif quant.get("load_in_8bit"):
            bits = 8
        label = f"quantization_config quant_method {method!r}" if method else "quantization_config"
        if bits in (4, 8):
            label += f", {bits}-bit"
        if "fp4" in method:
            return label, "fp4"
        if "fp8" in method or str(quant.get("fmt", "")).lower().startswith("e4m3") or bits == 8:
            return label, "fp8"
        if bits == 4 or method in ("gptq", "awq", "bitsandbytes"):
            return label, "int4"
        return label, "fp8"
    for key in ("torch_dtype", "dtype"):
        value = cfg.get(key)
        if isinstance(value, str) and value.startswith("float8"):
            return f"{key} {value!r}", "fp8"
    return None


# ---- reading --------------------------------------------------------------------------------------


def _load(config) -> tuple[dict, str]:
    if isinstance(config, Mapping):
        return dict(config), "the config dict"
    if not isinstance(config, (str, os.PathLike)):
        raise RooflineInputError(f"model config must be a path to a config.json or a dict, got {type(config).__name__}")
    path = Path(config)
    if path.is_dir() and (path / "config.json").is_file():
        path = path / "config.json"
    if not path.exists():
        raise RooflineInputError(f"model config {str(path)!r} does not exist")
    if not path.is_file():
        raise RooflineInputError(f"model config {str(path)!r} is not a file (give the path of a config.json)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RooflineInputError(f"model config {str(path)!r} cannot be read: {_one_line(exc)}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RooflineInputError(f"model config {str(path)!r} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                                 f"column {exc.colno}") from None
    if not isinstance(data, dict):
        raise RooflineInputError(f"model config {str(path)!r} is JSON but not an object ({{...}}), "
                                 f"got a {type(data).__name__}")
    return data, str(path)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _family(raw: dict, where: str) -> tuple[str, dict]:
    """The family, and the text config its fields are read from (``text_config`` merged over the
    top level for multimodal wrappers such as Gemma 3 and Qwen3.5)."""
    cfg = dict(raw)
    text = raw.get("text_config")
    if text is not None:
        if not isinstance(text, dict):
            raise RooflineInputError(f"{where}: text_config must be an object, got {text!r}")
        cfg = {k: v for k, v in raw.items() if k not in ("text_config", "vision_config")}
        cfg.update(text)
    archs = raw.get("architectures") or []
    if not isinstance(archs, list):
        archs = [archs]
    for model_type in (cfg.get("model_type"), raw.get("model_type")):
        if isinstance(model_type, str) and model_type in MODEL_TYPES:
            return MODEL_TYPES[model_type], cfg
    for arch in archs:
        if isinstance(arch, str) and arch in ARCHITECTURES:
            return ARCHITECTURES[arch], cfg
    said = [f"model_type {m!r}" for m in dict.fromkeys((raw.get("model_type"), cfg.get("model_type"))) if m]
    said += [f"architectures {archs!r}"] if archs else []
    raise RooflineInputError(
        f"{where}: unsupported architecture ({', '.join(said) or 'neither model_type nor architectures given'}); "
        f"the cost model knows model_type {', '.join(sorted(MODEL_TYPES))}")


def supported_model_types() -> tuple[str, ...]:
    """The ``model_type`` values :func:`model_from_config` reads, sorted."""
    return tuple(sorted(MODEL_TYPES))


def _last_part(path: str) -> str | None:
    """The last component of a path or repo id (``"meta-llama/Llama-3.1-8B"`` → ``"Llama-3.1-8B"``);
    None for one that names nothing (``"./"``, ``"."``, ``""``)."""
    part = path.strip().replace("\\", "/").rstrip("/").split("/")[-1]
    return part if part not in ("", ".", "..") else None


def _hub_cache_name(where: str) -> str | None:
    """``.../models--org--name/snapshots/<sha>/config.json`` (the Hugging Face cache) → ``"name"``."""
    parts = Path(where).parts
    if len(parts) >= 4 and parts[-3] == "snapshots" and parts[-4].startswith("models--"):
        repo = parts[-4][len("models--"):].split("--")
        if len(repo) >= 2 and all(repo):
            return repo[-1]
    return None


def _name(raw: dict, where: str = "the config dict") -> str | None:
    """The model's name: from the Hugging Face cache folder the file sits in, else the config's
    ``_name_or_path`` (a fine-tune's may name its base model, so the cache folder comes first)."""
    if where != "the config dict":
        cached = _hub_cache_name(where)
        if cached:
            return cached
    name = raw.get("_name_or_path")
    return _last_part(name) if isinstance(name, str) else None


def _model_id(raw: dict, where: str, given: str | None) -> str:
    if given is not None:
        if not isinstance(given, str) or not given.strip():
            raise RooflineInputError(f"id must be a non-empty string, got {given!r}")
        return given.strip()
    name = _name(raw, where)
    if name:
        return name.lower()
    if where != "the config dict":
        path = Path(where)
        folder = _last_part(str(path.parent)) if path.name == "config.json" else None
        return (folder or path.stem).lower()
    return "custom-model"


class _Fields:
    """Typed reads of one config, each error naming the file and the field."""

    def __init__(self, cfg: dict, where: str):
        self.cfg, self.where = cfg, where

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def count(self, key: str, default=None, minimum: int = 1) -> int:
        value = self.cfg.get(key)
        if value is None:
            if default is None:
                raise RooflineInputError(f"{self.where}: missing field {key!r} (a whole number >= {minimum})")
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() \
                or value < minimum:
            raise RooflineInputError(f"{self.where}: field {key!r} must be a whole number >= {minimum}, got {value!r}")
        return int(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise RooflineInputError(f"{self.where}: field {key!r} must be true or false, got {value!r}")
        return value

    def fraction(self, key: str, value) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise RooflineInputError(f"{self.where}: field {key!r} must be a number in (0, 1], got {value!r}")
        return float(value)

    def layer_types(self, num_layers: int, allowed: tuple[str, str]) -> list[str] | None:
        """``layer_types`` checked against ``allowed`` (the local kind, then ``full_attention``)."""
        types = self.cfg.get("layer_types")
        if types is None:
            return None
        if not isinstance(types, list) or len(types) != num_layers or any(t not in allowed for t in types):
            raise RooflineInputError(
                f"{self.where}: field 'layer_types' must list one of {', '.join(allowed)} for each of the "
                f"{num_layers} layers, got {_short(types)}")
        return types

    def period(self, types: list[str], key: str) -> int:
        """k such that layer i is ``full_attention`` exactly when (i + 1) % k == 0 (the only layouts
        the cost model represents); an error otherwise."""
        full = [i for i, t in enumerate(types) if t == "full_attention"]
        k = full[0] + 1 if full else len(types) + 1
        if [t == "full_attention" for t in types] != [(i + 1) % k == 0 for i in range(len(types))]:
            local = next(t for t in types if t != "full_attention")
            raise RooflineInputError(
                f"{self.where}: layer_types {_short(types)} is not a layout the cost model represents; it needs "
                f"full attention on every k-th layer only (layers k-1, 2k-1, ...; its {key}) and {local} elsewhere")
        return k


def _short(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _read(family: str, cfg: dict, where: str) -> dict:
    f = _Fields(cfg, where)
    if family == "gemma3":
        for key, default in GEMMA3_TEXT_DEFAULTS.items():
            if key not in cfg and not (key == "sliding_window_pattern" and
                                       ("_sliding_window_pattern" in cfg or "layer_types" in cfg)):
                cfg = {**cfg, key: default}
        f = _Fields(cfg, where)
    h, layers, heads = f.count("hidden_size"), f.count("num_hidden_layers"), f.count("num_attention_heads")
    out = dict(
        hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=f.count("num_key_value_heads", default=heads),
        head_dim=f.count("head_dim", default=h // heads if h >= heads else None),
        intermediate_size=f.count("intermediate_size"), vocab_size=f.count("vocab_size"),
        max_context_tokens=f.count("max_position_embeddings"),
        tie_word_embeddings=f.flag("tie_word_embeddings", family in TIED_BY_DEFAULT),
    )
    if family in ("qwen2", "qwen3", "qwen3_moe", "qwen2_moe") and f.flag("use_sliding_window", False):
        raise RooflineInputError(f"{where}: use_sliding_window true (sliding attention from layer "
                                 f"max_window_layers on) is not a layout the cost model represents")
    if family in ("qwen3", "qwen3_moe", "qwen3_5", "gemma3", "olmo2"):
        out["qk_norm"] = True  # these families always normalise q and k
    if family == "olmo2":
        out["qk_norm_per_head"] = False  # one norm over the whole projection (a weight per element)
    if family in ("mistral", "mixtral", "phi3") and f.has("sliding_window"):
        window = f.count("sliding_window")
        if family != "phi3" or window < out["max_context_tokens"]:
            out["sliding_window"] = window
    if family in ("qwen3_moe", "qwen2_moe"):
        out.update(_qwen_moe(f, layers, shared=family == "qwen2_moe"))
    elif family == "mixtral":
        out.update(num_experts=f.count("num_local_experts"), num_experts_per_tok=f.count("num_experts_per_tok"),
                   moe_intermediate_size=out["intermediate_size"])  # every expert is intermediate_size wide
    elif family == "llama4":
        out.update(_llama4(f, out))
    elif family == "gemma2":
        out.update(_gemma2(f, layers))
    elif family == "qwen3_5":
        out.update(_hybrid(f, layers))
    elif family == "gemma3":
        out.update(_sliding_pattern(f, layers, pattern_keys=("sliding_window_pattern", "_sliding_window_pattern")))
    elif family == "gpt_oss":
        out.update(_sliding_pattern(f, layers, pattern_keys=()))
        per_token = "experts_per_token" if f.has("experts_per_token") and not f.has("num_experts_per_tok") \
            else "num_experts_per_tok"
        out.update(num_experts=f.count("num_local_experts"), num_experts_per_tok=f.count(per_token),
                   moe_intermediate_size=out["intermediate_size"])  # every expert is intermediate_size wide
    elif family in ("deepseek_v3", "deepseek_v2"):
        out.update(_deepseek_v3(f, out, family))
    _check_shapes(out, where)
    return out


def _check_shapes(out: dict, where: str) -> None:
    """Shapes no model can have: grouped-query heads that do not divide the attention heads, more
    experts per token than experts, value heads that do not group over the key heads."""
    heads, kv = out["num_attention_heads"], out["num_key_value_heads"]
    if kv > heads:
        raise RooflineInputError(f"{where}: num_key_value_heads {kv} is more than num_attention_heads {heads}; "
                                 f"it must be at most the attention heads and divide them")
    if heads % kv:
        raise RooflineInputError(f"{where}: num_attention_heads {heads} is not a multiple of num_key_value_heads "
                                 f"{kv}; each key/value head must serve the same number of query heads")
    if "num_experts" in out and out["num_experts_per_tok"] > out["num_experts"]:
        raise RooflineInputError(f"{where}: num_experts_per_tok {out['num_experts_per_tok']} is more than the "
                                 f"{out['num_experts']} experts; it must be at most the number of experts")
    if "linear_num_key_heads" in out and out["linear_num_value_heads"] % out["linear_num_key_heads"]:
        raise RooflineInputError(f"{where}: linear_num_value_heads {out['linear_num_value_heads']} is not a multiple "
                                 f"of linear_num_key_heads {out['linear_num_key_heads']}")


def _qwen_moe(f: _Fields, layers: int, shared: bool) -> dict:
    """Qwen3-MoE and Qwen2-MoE: layer i is MoE when it is not in ``mlp_only_layers`` and
    (i + 1) % ``decoder_sparse_step`` == 0 (transformers' rule), a dense MLP otherwise."""
    step = f.count("decoder_sparse_step", default=1)
    dense = f.cfg.get("mlp_only_layers") or []
    if not isinstance(dense, list) or dense != list(range(len(dense))) or len(dense) >= layers:
        raise RooflineInputError(f"{f.where}: mlp_only_layers {_short(dense)} is not a layout the cost model "
                                 f"represents; it needs the dense layers first: [0, 1, ..., k-1]")
    if not any((i + 1) % step == 0 for i in range(len(dense), layers)):
        raise RooflineInputError(f"{f.where}: decoder_sparse_step {step} with mlp_only_layers {_short(dense)} "
                                 f"leaves no MoE layer of {layers}")
    out = dict(num_experts=f.count("num_experts"), num_experts_per_tok=f.count("num_experts_per_tok"),
               moe_intermediate_size=f.count("moe_intermediate_size"), first_k_dense_replace=len(dense),
               moe_layer_interval=step)
    if shared:
        width = f.count("shared_expert_intermediate_size", default=0, minimum=0)
        if width:  # one always-on expert of its own width, behind a sigmoid gate
            out.update(n_shared_experts=1, shared_expert_intermediate_size=width, shared_expert_gate=True)
    return out


def _llama4(f: _Fields, out: dict) -> dict:
    """Llama 4's text model (module table): MoE layers, chunked and global attention layers."""
    layers = out["num_hidden_layers"]
    step = f.count("interleave_moe_layer_step", default=1)
    moe = f.cfg.get("moe_layers")
    if moe is not None:
        if not isinstance(moe, list) or not moe or any(isinstance(i, bool) or not isinstance(i, int) for i in moe):
            raise RooflineInputError(f"{f.where}: field 'moe_layers' must list the MoE layers' indices, "
                                     f"got {_short(moe)}")
        step = moe[0] + 1
        if moe != list(range(step - 1, layers, step)):
            raise RooflineInputError(f"{f.where}: moe_layers {_short(moe)} is not a layout the cost model represents; "
                                     f"it needs MoE on every k-th layer (layers k-1, 2k-1, ...)")
    types = f.layer_types(layers, ("chunked_attention", "full_attention"))
    key = "layer_types"
    if types is None:
        rope = f.cfg.get("no_rope_layers")
        if rope:  # a list (an empty one means the default, as transformers reads it)
            if not isinstance(rope, list) or len(rope) != layers or any(r not in (0, 1) or isinstance(r, bool)
                                                                         for r in rope):
                raise RooflineInputError(f"{f.where}: field 'no_rope_layers' must give 1 (RoPE, chunked attention) "
                                         f"or 0 (NoPE, global attention) for each of the {layers} layers, "
                                         f"got {_short(rope)}")
            key = "no_rope_layers"
        else:
            k = f.count("no_rope_layer_interval", default=LLAMA4_NO_ROPE_LAYER_INTERVAL)
            rope = [int((i + 1) % k != 0) for i in range(layers)]
        types = ["chunked_attention" if r else "full_attention" for r in rope]
    pattern = f.period(types, key)
    fields = dict(num_experts=f.count("num_local_experts"), num_experts_per_tok=f.count("num_experts_per_tok"),
                  moe_intermediate_size=out["intermediate_size"], n_shared_experts=1,  # experts: intermediate_size
                  moe_layer_interval=step)
    dense_layers = any((i + 1) % step for i in range(layers))
    # the dense MLP layers' width (unused where every layer is MoE, as in Scout)
    fields["intermediate_size"] = (f.count("intermediate_size_mlp") if dense_layers
                                   else f.count("intermediate_size_mlp", default=out["intermediate_size"]))
    if "chunked_attention" in types:
        fields.update(attention_chunk_size=f.count("attention_chunk_size"),
                      chunked_attention_pattern=pattern if pattern <= layers else None)
    return fields


def _gemma2(f: _Fields, layers: int) -> dict:
    """Gemma 2: sliding-window and global layers alternate, layer 0 sliding."""
    types = f.layer_types(layers, ("sliding_attention", "full_attention"))
    pattern = f.period(types, "sliding_window_pattern") if types is not None else 2
    key = "sliding_window" if f.has("sliding_window") or not f.has("sliding_window_size") else "sliding_window_size"
    return dict(sliding_window=f.count(key), sliding_window_pattern=pattern)


def _hybrid(f: _Fields, layers: int) -> dict:
    types = f.layer_types(layers, ("linear_attention", "full_attention"))
    if types is not None:
        interval = f.period(types, "full_attention_interval")
        if f.has("full_attention_interval") and f.count("full_attention_interval") != interval:
            raise RooflineInputError(f"{f.where}: full_attention_interval {f.cfg['full_attention_interval']!r} "
                                     f"disagrees with layer_types, which put full attention every {interval} layers")
    else:
        interval = f.count("full_attention_interval")
    rope = f.cfg.get("rope_parameters") or f.cfg.get("rope_scaling") or {}
    rotary = f.cfg.get("partial_rotary_factor")
    if rotary is None and isinstance(rope, dict):
        rotary = rope.get("partial_rotary_factor")
    state = f.cfg.get("mamba_ssm_dtype", "float32")
    if state not in TORCH_DTYPES:
        raise RooflineInputError(f"{f.where}: field 'mamba_ssm_dtype' must be one of {', '.join(TORCH_DTYPES)}, "
                                 f"got {state!r}")
    return dict(
        attn_output_gate=f.flag("attn_output_gate", True),
        partial_rotary_factor=1.0 if rotary is None else f.fraction("partial_rotary_factor", rotary),
        full_attention_interval=interval,
        linear_num_key_heads=f.count("linear_num_key_heads"), linear_num_value_heads=f.count("linear_num_value_heads"),
        linear_key_head_dim=f.count("linear_key_head_dim"), linear_value_head_dim=f.count("linear_value_head_dim"),
        linear_conv_kernel_dim=f.count("linear_conv_kernel_dim"), state_dtype=TORCH_DTYPES[state],
        mtp_layers=f.count("mtp_num_hidden_layers", default=0, minimum=0),
    )


def _sliding_pattern(f: _Fields, layers: int, pattern_keys: tuple[str, ...]) -> dict:
    """Sliding window every layer but each k-th (Gemma 3, gpt-oss): ``layer_types`` or a pattern field."""
    types = f.layer_types(layers, ("sliding_attention", "full_attention"))
    if types is not None:
        pattern = f.period(types, "sliding_window_pattern")
    else:
        key = next((k for k in pattern_keys if f.has(k)), None)
        if key is None:
            raise RooflineInputError(f"{f.where}: missing field 'layer_types' (which layers slide"
                                     + (f"; or {' or '.join(repr(k) for k in pattern_keys)})" if pattern_keys else ")"))
        pattern = f.count(key)
    return dict(sliding_window=f.count("sliding_window"), sliding_window_pattern=pattern)


def _deepseek_v3(f: _Fields, out: dict, family: str) -> dict:
    if f.count("moe_layer_freq", default=1) != 1:
        raise RooflineInputError(f"{f.where}: moe_layer_freq {f.cfg['moe_layer_freq']!r} is not a layout the cost "
                                 f"model represents; it needs 1 (every layer after first_k_dense_replace is MoE)")
    nope, rope = f.count("qk_nope_head_dim"), f.count("qk_rope_head_dim")
    first_dense = f.count("first_k_dense_replace", default=0, minimum=0)
    if first_dense >= out["num_hidden_layers"]:
        raise RooflineInputError(f"{f.where}: first_k_dense_replace {first_dense} leaves no MoE layer of "
                                 f"{out['num_hidden_layers']}")
    return dict(
        head_dim=nope + rope,  # the per-head query/key width, as the catalog counts it (config's head_dim is rope's)
        q_lora_rank=f.count("q_lora_rank", default=0, minimum=0), kv_lora_rank=f.count("kv_lora_rank"),
        qk_nope_head_dim=nope, qk_rope_head_dim=rope, v_head_dim=f.count("v_head_dim"),
        num_experts=f.count("n_routed_experts"), num_experts_per_tok=f.count("num_experts_per_tok"),
        moe_intermediate_size=f.count("moe_intermediate_size"),
        n_shared_experts=f.count("n_shared_experts", default=0, minimum=0), first_k_dense_replace=first_dense,
        mtp_layers=f.count("num_nextn_predict_layers", default=0, minimum=0),
        **_routing_groups(f, family),
    )


def _routing_groups(f: _Fields, family: str) -> dict:
    """``n_group`` and ``topk_group`` where the family's gate limits a token to topk_group groups
    (DeepSeek-V3 always, with transformers' defaults; DeepSeek-V2 under ``group_limited_greedy``),
    else 0 and 0; checked against the experts."""
    if family == "deepseek_v2":
        method = f.cfg.get("topk_method", "greedy")
        if method not in DEEPSEEK_V2_TOPK_METHODS:
            raise RooflineInputError(f"{f.where}: topk_method {method!r} is not a routing the cost model knows; "
                                     f"allowed: {', '.join(DEEPSEEK_V2_TOPK_METHODS)}")
        if not DEEPSEEK_V2_TOPK_METHODS[method]:
            return {}
        groups, top = f.count("n_group"), f.count("topk_group")
    else:
        groups = f.count("n_group", default=DEEPSEEK_V3_ROUTING_DEFAULTS["n_group"])
        top = f.count("topk_group", default=DEEPSEEK_V3_ROUTING_DEFAULTS["topk_group"])
    E, k = f.count("n_routed_experts"), f.count("num_experts_per_tok")
    if k > E:
        return {}  # more experts per token than experts: the shape check names that
    if E % groups or top > groups or k > top * (E // groups):
        raise RooflineInputError(
            f"{f.where}: n_group {groups} and topk_group {top} do not fit {E} routed experts with {k} per token "
            "(n_group must divide the experts, topk_group be at most n_group, and topk_group groups hold at least "
            "num_experts_per_tok experts)")
    return dict(n_group=groups, topk_group=top)


__all__ = ["ARCHITECTURES", "MODEL_TYPES", "model_config_notes", "model_from_config", "supported_model_types"]
