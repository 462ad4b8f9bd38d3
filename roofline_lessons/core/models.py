"""The model catalog: architectures from published config.json files.

Shapes live in ``data/models.toml``. Parameter counts are derived from the shapes (through the
same operator list the cost model uses), never typed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from ._catalog import load_catalog
from .dtypes import bytes_per_element, check_dtype, kv_bytes_per_element
from .errors import RooflineInputError, unknown_name_error

FULL_ATTENTION = "full_attention"
SLIDING_ATTENTION = "sliding_attention"
#: chunked local attention (Llama 4): a token attends only to the tokens of its own chunk
CHUNKED_ATTENTION = "chunked_attention"
GATED_DELTANET = "gated_deltanet"
MLA = "mla"  #: multi-head latent attention (DeepSeek-V2/V3): the cache holds a compressed latent


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer, described by its config.json fields."""

    id: str
    name: str
    source: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int  #: its own field: Qwen3 and Qwen3.8-27B do not have head_dim = hidden / heads
    intermediate_size: int
    vocab_size: int
    max_context_tokens: int  #: config.json max_position_embeddings: the longest context it was built for
    tie_word_embeddings: bool = False
    qk_norm: bool = False
    #: True: one RMSNorm weight of head_dim shared by every head (Qwen3, Gemma 3: 2 × head_dim weights).
    #: False: one norm over the whole q and k projections, a weight per element (OLMo 2:
    #: (heads + KV heads) × head_dim weights)
    qk_norm_per_head: bool = True
    attn_output_gate: bool = False
    partial_rotary_factor: float = 1.0
    sliding_window: int | None = None  #: tokens a sliding-window layer attends to (and caches)
    #: with a window: layer i (0-based) is global (full) attention when (i + 1) % pattern == 0, the
    #: others slide (Gemma 3: 6, five local then one global; gpt-oss: 2, alternating). Without a
    #: pattern a window applies to every layer (Mistral-7B-v0.1).
    sliding_window_pattern: int | None = None
    #: Chunked local attention (Llama 4): the sequence is cut into chunks of attention_chunk_size
    #: tokens; in a chunked layer the token at position p (0-based) attends only to the tokens of its
    #: own chunk, positions C·⌊p/C⌋ … p (p mod C + 1 of them), so an engine keeps only the current
    #: chunk's K and V. Not a sliding window: right after a chunk boundary a token sees one key.
    attention_chunk_size: int | None = None
    #: with a chunk size: layer i (0-based) is global (full) attention when (i + 1) % pattern == 0,
    #: the others are chunked (Llama 4: 4, three chunked RoPE layers then one global NoPE layer)
    chunked_attention_pattern: int | None = None
    # Multi-head latent attention (DeepSeek-V3): queries through a rank-q_lora_rank bottleneck; keys
    # and values from one kv_lora_rank latent per token (cached) plus a shared qk_rope_head_dim key part
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # Hybrid models (Gated DeltaNet + full attention)
    full_attention_interval: int | None = None
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel_dim: int = 0
    state_dtype: str = "fp32"
    # Mixture of experts
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    n_shared_experts: int = 0  #: always-on experts of moe_intermediate_size each (DeepSeek-V3: 1)
    #: width of the always-on expert(s) together where it is not n_shared_experts × moe_intermediate_size
    #: (Qwen2-MoE: one shared expert of shared_expert_intermediate_size 5,632); 0: that product
    shared_expert_intermediate_size: int = 0
    #: a sigmoid gate (one hidden_size → 1 projection) scales the shared expert's output (Qwen2-MoE)
    shared_expert_gate: bool = False
    first_k_dense_replace: int = 0  #: the first k layers keep a dense MLP of intermediate_size
    #: past the first k: layer i (0-based) has a routed MoE when (i + 1) % interval == 0 and a dense
    #: MLP of intermediate_size otherwise (Llama 4 Maverick's interleave_moe_layer_step 2; Qwen-MoE's
    #: decoder_sparse_step). 1: every layer past the first k.
    moe_layer_interval: int = 1
    mtp_layers: int = 0  #: multi-token-prediction layers shipped beside the model (not counted here)
    #: Group-limited routing (DeepSeek-V2's group_limited_greedy, DeepSeek-V3's noaux_tc): the routed
    #: experts in n_group contiguous groups of num_experts / n_group (expert i in group
    #: i ÷ (num_experts / n_group), as the gate views its scores), and a token's num_experts_per_tok
    #: experts chosen from at most topk_group of them. DeepSeek places the groups on nodes to cap the
    #: nodes a token reaches (DeepSeek-V3: 8 groups, at most 4 per token). 0 and 0: routing not
    #: group-limited (every other model, and DeepSeek-V2-Lite's greedy routing).
    n_group: int = 0
    topk_group: int = 0
    # Reference figures for the tests only (never used in a computation)
    published_total_params: float | None = None
    published_active_params: float | None = None
    #: a finer published active count than the headline one, and the embedding share it says it
    #: includes (DeepSeek-V3's README_WEIGHTS.md: 36.7 B with 0.9 B of embedding), with where it is from
    published_active_params_detail: float | None = None
    published_embedding_params: float | None = None
    published_detail_source: str = ""

    def __post_init__(self) -> None:
        if not (self.n_group or self.topk_group):
            return
        E, k, g, tg = self.num_experts, self.num_experts_per_tok, self.n_group, self.topk_group
        ok = (E > 0 and isinstance(g, int) and isinstance(tg, int) and g >= 1 and 1 <= tg <= g and E % g == 0
              and k <= tg * (E // g))
        if not ok:
            raise RooflineInputError(
                f"model {self.id!r}: group-limited routing needs n_group >= 1 dividing the {E} routed experts, "
                f"1 <= topk_group <= n_group, and room for the {k} experts per token in topk_group groups "
                f"(k <= topk_group × experts per group); got n_group {g!r}, topk_group {tg!r}")

    # ---- layout -------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def group_limited_routing(self) -> bool:
        """True when a token's experts come from fewer than all of the routing groups
        (``topk_group`` < ``n_group``): DeepSeek-V2 and V3."""
        return self.n_group > 1 and self.topk_group < self.n_group

    @property
    def is_hybrid(self) -> bool:
        return self.full_attention_interval is not None

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def num_moe_layers(self) -> int:
        """Layers with a routed MoE block (0 for a dense model): past the first k dense layers, every
        ``moe_layer_interval``-th one."""
        if not self.is_moe:
            return 0
        k = self.moe_layer_interval
        return sum(1 for i in range(self.first_k_dense_replace, self.num_hidden_layers) if (i + 1) % k == 0)

    @property
    def shared_expert_width(self) -> int:
        """Intermediate width of the always-on expert(s) together (0: none)."""
        if self.shared_expert_intermediate_size:
            return self.shared_expert_intermediate_size
        return self.n_shared_experts * self.moe_intermediate_size

    @property
    def num_dense_mlp_layers(self) -> int:
        return self.num_hidden_layers - self.num_moe_layers

    def layer_types(self) -> tuple[str, ...]:
        """Token mixer of every layer, in order: ``"full_attention"``, ``"sliding_attention"``,
        ``"chunked_attention"``, ``"mla"`` or ``"gated_deltanet"``."""
        if self.is_mla:
            return (MLA,) * self.num_hidden_layers
        if self.attention_chunk_size is not None:
            k = self.chunked_attention_pattern or self.num_hidden_layers + 1
            return tuple(FULL_ATTENTION if (i + 1) % k == 0 else CHUNKED_ATTENTION
                         for i in range(self.num_hidden_layers))
        if self.sliding_window_pattern is not None:
            k = self.sliding_window_pattern
            return tuple(FULL_ATTENTION if (i + 1) % k == 0 else SLIDING_ATTENTION
                         for i in range(self.num_hidden_layers))
        if self.full_attention_interval is None:
            return (FULL_ATTENTION,) * self.num_hidden_layers
        k = self.full_attention_interval
        return tuple(
            FULL_ATTENTION if (i + 1) % k == 0 else GATED_DELTANET for i in range(self.num_hidden_layers)
        )

    @property
    def num_full_attention_layers(self) -> int:
        return self.layer_types().count(FULL_ATTENTION)

    @property
    def num_sliding_attention_layers(self) -> int:
        return self.layer_types().count(SLIDING_ATTENTION)

    @property
    def num_chunked_attention_layers(self) -> int:
        return self.layer_types().count(CHUNKED_ATTENTION)

    @property
    def num_mla_layers(self) -> int:
        return self.layer_types().count(MLA)

    @property
    def num_deltanet_layers(self) -> int:
        return self.layer_types().count(GATED_DELTANET)

    @property
    def full_attention_window(self) -> int | None:
        """The window of the ``full_attention`` layers: None, except a model whose every layer slides
        (no pattern: Mistral-7B-v0.1), which keeps them under the ``full_attention`` name."""
        return self.sliding_window if self.sliding_window_pattern is None else None

    @property
    def mla_cache_elements_per_token(self) -> int:
        """Elements one token adds to one MLA layer's cache: kv_lora_rank + qk_rope_head_dim."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    # ---- derived sizes ------------------------------------------------------------------
    @property
    def deltanet_key_dim(self) -> int:
        """Width of all key (and query) heads of a Gated DeltaNet layer together."""
        return self.linear_num_key_heads * self.linear_key_head_dim

    @property
    def deltanet_value_dim(self) -> int:
        """Width of all value heads of a Gated DeltaNet layer together."""
        return self.linear_num_value_heads * self.linear_value_head_dim

    @property
    def deltanet_conv_dim(self) -> int:
        """Channels through the short convolution: q, k and v together."""
        return 2 * self.deltanet_key_dim + self.deltanet_value_dim

    def kv_bytes_per_token(self, kv_dtype: str = "bf16") -> float:
        """KV-cache bytes one token adds, over every layer that caches tokens (before any window cap).

        Per attention layer: 2 (K and V) × KV heads × head_dim elements; per MLA layer the latent,
        kv_lora_rank + qk_rope_head_dim elements; each element in ``kv_dtype`` plus its share of a
        scale (:func:`~roofline_lessons.core.dtypes.kv_bytes_per_element`). Gated DeltaNet layers
        keep no per-token history, so they add nothing here. A sliding-window layer stops growing at
        its window and a chunked layer keeps only its current chunk:
        :func:`~roofline_lessons.core.memory.kv_cache_bytes_per_sequence` applies those caps.
        """
        layers = (self.num_full_attention_layers + self.num_sliding_attention_layers
                  + self.num_chunked_attention_layers + self.num_mla_layers)
        return layers * self.kv_bytes_per_token_per_layer(kv_dtype) if layers else 0.0

    def kv_bytes_per_token_per_layer(self, kv_dtype: str = "bf16") -> float:
        """KV-cache bytes one token adds to one attention layer (an MLA layer: its latent)."""
        if self.is_mla:
            return self.mla_cache_elements_per_token * kv_bytes_per_element(kv_dtype, self.mla_cache_elements_per_token)
        return 2.0 * self.num_key_value_heads * self.head_dim * kv_bytes_per_element(kv_dtype, self.head_dim)

    def kv_cache_bytes_per_sequence(self, cached_tokens, kv_dtype: str = "bf16"):
        """KV cache of one sequence holding ``cached_tokens`` tokens: full and MLA layers hold every
        token, sliding-window layers at most their window, chunked layers (Llama 4) only the tokens
        the next token will attend to: those of the current chunk, ``cached_tokens`` mod
        ``attention_chunk_size`` (none right at a chunk boundary, where the next token starts a new
        chunk). That is what the sequence holds at that length, not the most it held on the way: a
        sequence that decoded past a boundary held chunk size − 1 tokens per chunked layer just
        before it (numpy arrays welcome)."""
        t = np.asarray(cached_tokens, dtype=float)
        per_layer = self.kv_bytes_per_token_per_layer(kv_dtype)
        full = (self.num_full_attention_layers + self.num_mla_layers) * per_layer
        window = self.full_attention_window
        held_full = t if window is None else np.minimum(t, window)
        out = full * held_full
        if self.num_sliding_attention_layers:
            out = out + self.num_sliding_attention_layers * per_layer * np.minimum(t, self.sliding_window)
        if self.num_chunked_attention_layers:
            out = out + self.num_chunked_attention_layers * per_layer * np.mod(t, self.attention_chunk_size)
        return float(out) if np.ndim(out) == 0 else out

    def deltanet_state_bytes_per_layer(self, state_dtype: str | None = None) -> float:
        """Recurrent state S of one Gated DeltaNet layer for one sequence, in bytes.

        value heads × value head dim × key head dim × bytes per element (d_v × d_k per head).
        """
        dt = check_dtype(state_dtype or self.state_dtype)
        return (
            self.linear_num_value_heads * self.linear_value_head_dim * self.linear_key_head_dim
            * bytes_per_element(dt)
        )

    def deltanet_state_bytes(self, state_dtype: str | None = None) -> float:
        """Recurrent state of all Gated DeltaNet layers for one sequence, in bytes."""
        return self.num_deltanet_layers * self.deltanet_state_bytes_per_layer(state_dtype)

    def conv_state_bytes(self, activation_dtype: str = "bf16") -> float:
        """Short-convolution state of all Gated DeltaNet layers for one sequence, in bytes.

        The last (kernel − 1) inputs of every conv channel, kept in the activation dtype.
        """
        if not self.is_hybrid:
            return 0.0
        return (
            self.num_deltanet_layers * self.deltanet_conv_dim * (self.linear_conv_kernel_dim - 1)
            * bytes_per_element(activation_dtype)
        )

    def parameter_count(self) -> int:
        """Total parameters from the config's shapes (all experts counted)."""
        return self._parameter_counts()[0]

    def active_parameter_count(self) -> int:
        """Parameters one token uses (routed experts only, for MoE); equals the total if dense."""
        return self._parameter_counts()[1]

    def _parameter_counts(self) -> tuple[int, int]:
        """(total, active), weight matrix by weight matrix. The cost model builds the same weights
        into its operators; ``costs.parameter_counts`` sums those, and a test holds the two equal."""
        h, hd = self.hidden_size, self.head_dim
        nq, nkv = self.num_attention_heads, self.num_key_value_heads
        table = self.vocab_size * h
        shared = table + (0 if self.tie_word_embeddings else table) + h  # embedding, lm_head, final norm
        q_out = nq * hd * (2 if self.attn_output_gate else 1)
        full = h + h * q_out + 2 * h * nkv * hd + self.qk_norm_parameters + nq * hd * h
        nv, dv = self.linear_num_value_heads, self.linear_value_head_dim
        vd, conv = self.deltanet_value_dim, self.deltanet_conv_dim
        deltanet = (h + h * conv + h * vd + h * 2 * nv + conv * self.linear_conv_kernel_dim + 2 * nv + dv
                    + vd * h) if self.is_hybrid else 0
        attention = ((self.num_full_attention_layers + self.num_sliding_attention_layers
                      + self.num_chunked_attention_layers) * full
                     + self.num_deltanet_layers * deltanet + self.num_mla_layers * self.mla_layer_parameters)
        dense_mlp = h + 3 * h * self.intermediate_size
        if self.is_moe:
            e, k, ie = self.num_experts, self.num_experts_per_tok, self.moe_intermediate_size
            shared_experts = 3 * h * self.shared_expert_width + (h if self.shared_expert_gate else 0)
            mlp_total = h + h * e + e * 3 * h * ie + shared_experts
            mlp_active = h + h * e + k * 3 * h * ie + shared_experts
        else:
            mlp_total = mlp_active = dense_mlp
        moe, dense = self.num_moe_layers, self.num_dense_mlp_layers
        mlps_total = moe * mlp_total + dense * dense_mlp if self.is_moe else self.num_hidden_layers * dense_mlp
        mlps_active = moe * mlp_active + dense * dense_mlp if self.is_moe else mlps_total
        return shared + attention + mlps_total, shared + attention + mlps_active

    @property
    def qk_norm_parameters(self) -> int:
        """Weights of one attention layer's q and k norms (0 without them)."""
        if not self.qk_norm:
            return 0
        if self.qk_norm_per_head:
            return 2 * self.head_dim
        return (self.num_attention_heads + self.num_key_value_heads) * self.head_dim

    @property
    def mla_layer_parameters(self) -> int:
        """Weights of one MLA attention block (norms included): the query bottleneck (or a plain
        query projection), the latent down-projection with its rope key, the latent's up-projection
        to per-head keys and values, the output projection."""
        if not self.is_mla:
            return 0
        h, nh = self.hidden_size, self.num_attention_heads
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        if self.q_lora_rank:
            q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * nh * qk
        else:
            q = h * nh * qk
        kv = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
        kv += self.kv_lora_rank * nh * (self.qk_nope_head_dim + self.v_head_dim)
        return h + q + kv + nh * self.v_head_dim * h


_FIELDS = set(Model.__dataclass_fields__)


@cache
def _models() -> dict[str, Model]:
    raw = load_catalog("models.toml")["models"]
    out = {}
    for mid, entry in raw.items():
        unknown = set(entry) - _FIELDS
        if unknown:
            raise ValueError(f"models.toml: model {mid!r} has unknown fields {sorted(unknown)}")
        out[mid] = Model(id=mid, **entry)
    return out


def list_models() -> tuple[str, ...]:
    """All model ids in catalog order."""
    return tuple(_models())


def get_model(model_id: str | Model) -> Model:
    """Look a model up by id (``"qwen3.8-27b"``); an unknown id names the closest ids."""
    if isinstance(model_id, Model):
        return model_id
    models = _models()
    if isinstance(model_id, str) and model_id.strip().lower() in models:
        return models[model_id.strip().lower()]
    raise unknown_name_error("model id", model_id, models)
