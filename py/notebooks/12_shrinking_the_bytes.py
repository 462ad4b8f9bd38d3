# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 12 — Shrinking the bytes: 4-bit weights, smaller KV caches, sliding windows and MLA
#
# A decode step below its critical batch (section 6 computes it for each format and context) is
# memory-bound: its time is the bytes it moves divided by the bandwidth. Decode there is shopping
# for bytes, and the field's answer is to **move fewer of them**: store the weights in 4
# bits, store the KV cache in 8 or 4, or change the architecture so that each token leaves less
# behind — fewer KV heads, one compressed latent, windows, or a constant recurrent state.
#
# **By the end of this lesson you can**
#
# 1. split a decode step's bytes into weights, KV cache, recurrent state and activations, and say
#    which lever moves which part;
# 2. compute the KV bytes per token of GQA, MQA, MLA, sliding-window and hybrid linear-attention
#    models, and the cache of one sequence at any context;
# 3. say which form of MLA runs in decode (absorbed) and in prefill (expanded), and why;
# 4. compute what a 4-bit weight costs in bytes, the batch-1 speed-up of 4-bit weights, and how
#    the critical batch moves for weight-only int4 and for W4A4 — through the lower bound and
#    through the estimate, and why they differ;
# 5. explain why a paged KV allocator must allocate per layer kind for a sliding-window model.
#
# **Conventions.** One chip. A decode step has two figures (lesson 3): the **lower bound**
# (`time_lower_bound_s`: only the bytes no implementation can avoid and the FLOPs at each format's
# peak; a weight-only dequantisation, priced by a convention — FLOPs per weight at the part's FP32
# rate, section 5 — is overlapped with the matmuls, and every weight-only step in this lesson is
# checked to have it set no bound: nothing on that part, with those formats, is faster)
# and the **estimate** (`time_estimate_s`: every operator's activations written to HBM and read back,
# and the dequantisation *added* to the matmuls' time). Each is max(compute time, memory time) under
# its own rules; every table says which it shows, and shows both where they differ. Memory capacity
# is binary (GiB); the bytes a step moves are SI (GB), as bandwidth is. Weight formats follow the
# package's default recipe: FP8, INT8 and the 4-bit formats quantise the linear layers of the
# transformer blocks, and the embedding, the lm_head and the norms stay BF16 (section 4). KV caches
# are BF16 unless a row says otherwise. A model the catalog does not hold (an architecture changed for the
# comparison) is a **what-if** and says so; so is any context past a model's `max_context_tokens`.
# The counting rules are in the docstring of `roofline_lessons.core.costs`.

# %%
# %matplotlib inline
import itertools
import math

import numpy as np

from roofline_lessons import get_model, get_part, place
from roofline_lessons.core.costs import DEQUANT_FLOPS_PER_WEIGHT, model_cost
from roofline_lessons.core.dtypes import (
    DEFAULT_WEIGHT_GROUP,
    WEIGHT_SCALE_BYTES,
    bytes_per_element,
    weight_bytes_per_element,
)
from roofline_lessons.core.parallel import Parallelism, max_batch_that_fits_on_chips
from roofline_lessons.core.units import binary, count, duration, num, percent, si
from roofline_lessons.topics.batching import critical_batch
from roofline_lessons.topics.shrinking import (
    BUDGET_PARTS,
    DEFAULT_PAGE_TOKENS,
    MOVE_THRESHOLD,
    WEIGHT_FORMATS,
    byte_budget,
    byte_levers,
    critical_batches,
    format_speedup,
    int4_bytes_per_weight,
    kv_curves,
    kv_table,
    mla_forms,
    mla_per_head_kv_elements,
    nvfp4_bytes_per_weight,
    paged_capacity,
    stored_weights,
    weight_only_crossover,
)
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.viz.plots import byte_budget_chart, kv_bytes_vs_context_chart

MODEL, PART = "llama-3.1-70b", "b200"  # the B200 has an FP4 tensor-core rate (section 6)
CONTEXT = 8192  # tokens cached before each decode step
SHORT_CONTEXT = 128  # a short context, where a large batch can turn a decode step compute-bound
KV_CONTEXT = 32768  # the context of the KV comparison
model, part = get_model(MODEL), get_part(PART)


def change_text(value):
    """A lever's change in one part of the byte budget, as a person reads it."""
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "appears"
    if abs(value) < 0.005:
        return "0 %"
    return ("+" if value > 0 else "−") + percent(abs(value), 0)

# %% [markdown]
# ## 1. Decode is shopping for bytes
#
# Every decode step reads all the weights once (the whole batch shares them) and every sequence's
# KV cache; it writes one token of KV per sequence; it moves a little activation traffic.

# %% jupyter={"source_hidden": true}
md(f"{model.name} on one {part.name}, {count(CONTEXT)} tokens cached per sequence:")

# %%
setups = [("batch 1", 1, {}), ("batch 16", 16, {}), ("batch 64", 64, {}),
          ("batch 64, int4 weights (linear layers), FP8 KV", 64, {"weights_dtype": "int4", "kv_dtype": "fp8"})]
budgets = [byte_budget(MODEL, PART, b, CONTEXT, label=name, **f) for name, b, f in setups]
show_table(["setup", "weights", "KV cache (read + written)", "activations (unfused)", "bytes per step",
            "compulsory bytes", "step: lower bound", "step: estimate", f"fits {binary(part.memory_capacity_bytes)}"],
           [[x.label, si(x.weight_bytes, "B"), si(x.kv_bytes, "B"), si(x.activation_bytes, "B"),
             si(x.total_bytes, "B"), si(x.compulsory_bytes, "B"), duration(x.step_lower_bound_s),
             duration(x.step_estimate_s), "yes" if x.placement.fits_in_memory else "**no** (a what-if)"]
            for x in budgets])
one, b16, b64, shrunk = budgets
assert all(x.placement.bound == x.placement.lower_bound_roof == "memory" for x in budgets)  # memory-bound by both
assert all(x.step_estimate_s / x.step_lower_bound_s < 1.05 for x in budgets)  # here the two figures are close
assert one.shares()["weights"] > b16.shares()["weights"] > b64.shares()["weights"]
assert b64.kv_bytes > b64.weight_bytes and shrunk.placement.fits_in_memory and not b64.placement.fits_in_memory

# %%
byte_budget_chart([x.placement for x in budgets], [x.label for x in budgets],
                  title=f"{model.name} decode on a {part.name}, {count(CONTEXT)} tokens cached: bytes per step")

# %% jupyter={"source_hidden": true}
md(f"At batch 1 the weights are {percent(one.shares()['weights'], 0)} of the bytes: the step is the time to read "
   f"{si(one.weight_bytes, 'B')} at {si(part.memory_bandwidth_bytes_per_s, 'B/s')}. The batch shares the weights, "
   f"so their share falls as it grows; the KV cache does not share: at batch 64 it is "
   f"{percent(b64.shares()['KV cache'], 0)} of the bytes, and the weights and the cache no longer fit the "
   f"{binary(part.memory_capacity_bytes)} of the chip. Every step here is memory-bound, by the lower bound and by "
   "the estimate alike, and the two figures lie within "
   f"{percent(max(x.step_estimate_s / x.step_lower_bound_s for x in budgets) - 1, 0)} of each other: the "
   "activations the estimate adds are a small share of the bytes at this context. Shrinking the bytes means "
   "shrinking each part: the weights (a narrower format), the KV cache (a narrower format, or an architecture that "
   "caches less per token), or the weights **per token** (a bigger batch). The last row does two of those at once: "
   f"{si(shrunk.total_bytes, 'B')} per step instead of {si(b64.total_bytes, 'B')}, and it fits.")

# %% jupyter={"source_hidden": true}
md("**Question.** At batch 64, which saves more bytes per step: int4 weights with a BF16 KV cache, or BF16 weights "
   "with an FP8 KV cache?")

# %% jupyter={"source_hidden": true}
int4_only = byte_budget(MODEL, PART, 64, CONTEXT, weights_dtype="int4")
fp8_kv_only = byte_budget(MODEL, PART, 64, CONTEXT, kv_dtype="fp8")
md("<details><summary>Answer</summary>\n\n"
   f"int4 weights save {si(b64.total_bytes - int4_only.total_bytes, 'B')} per step (the weights shrink by "
   f"{num(b64.weight_bytes / int4_only.weight_bytes)}×); an FP8 KV cache saves "
   f"{si(b64.total_bytes - fp8_kv_only.total_bytes, 'B')} (the cache halves). "
   + ("The KV cache is the bigger part at this batch and context, so halving it saves more."
      if fp8_kv_only.total_bytes < int4_only.total_bytes else
      "The weights shrink by more than the cache, so int4 saves more even though the cache is the bigger part.")
   + " Which lever wins depends on the batch and the context: they set the parts' sizes.\n\n</details>")

# %% [markdown]
# ## 2. What a token leaves behind: KV bytes per token
#
# Each attention layer caches every token's keys and values so later tokens can attend to them.
# Five designs keep that history at very different prices:
#
# - **GQA** (grouped-query attention, Llama 3): a few KV heads shared by groups of query heads;
#   2 × KV heads × head_dim elements per token and layer.
# - **MQA** (multi-query attention): one KV head. No model in the catalog uses it; below it is a
#   labelled **what-if**, Llama-3.1-8B with one KV head.
# - **MLA** (multi-head latent attention, DeepSeek-V3): one compressed **latent** per token and
#   layer, kv_lora_rank elements, plus a small key part that carries the rotary position
#   (qk_rope_head_dim), shared by every head. Per-head keys and values *can* be rebuilt from it
#   (the expanded form); in decode, attention typically runs on the latent itself and no per-head
#   K or V is ever formed (the absorbed form, section 3).
# - **Sliding windows** (Gemma 3, gpt-oss): local layers attend to, and cache, only the last
#   `sliding_window` tokens; the global layers between them keep everything.
# - **Hybrid linear attention** (Qwen3.8-27B): three layers in four are Gated DeltaNet layers
#   whose recurrent state has a fixed size whatever the context; only the rest cache tokens.

# %%
rows = kv_table(context_tokens=KV_CONTEXT)
show_table(["model", "kind", "layers caching every token", "window layers (window)", "Gated DeltaNet layers",
            "bytes per token per caching layer", "bytes per token, all caching layers",
            f"KV at {count(KV_CONTEXT)} tokens", "recurrent state per sequence (DeltaNet + conv)"],
           [[r.label, r.kind, count(r.full_layers),
             f"{count(r.window_layers)} ({count(r.window_tokens)} tokens)" if r.window_layers else "—",
             count(r.deltanet_layers) if r.deltanet_layers else "—", count(r.bytes_per_token_per_layer),
             count(r.bytes_per_token), binary(r.kv_bytes), binary(r.state_bytes) if r.state_bytes else "—"]
            for r in rows])
by_label = {r.label: r for r in rows}
assert not any(r.beyond_limit for r in rows)  # 32K is within every model's limit
dsv3 = get_model("deepseek-v3")
mla_row = by_label[dsv3.name]
assert mla_row.bytes_per_token_per_layer == (dsv3.kv_lora_rank + dsv3.qk_rope_head_dim) * 2
per_head_kv = mla_per_head_kv_elements("deepseek-v3")  # heads × (K width + V width), were K and V cached per head
paper_mha = 2 * dsv3.num_attention_heads * dsv3.v_head_dim  # the DeepSeek-V2 paper's MHA baseline, d_h = 128
assert per_head_kv == dsv3.num_attention_heads * (dsv3.head_dim + dsv3.v_head_dim) and dsv3.head_dim != dsv3.v_head_dim

# %% jupyter={"source_hidden": true}
gqa8 = by_label[get_model("llama-3.1-8b").name]
mqa8 = next(r for r in rows if r.kind == "MQA")
md(f"One KV head instead of {count(get_model('llama-3.1-8b').num_key_value_heads)} divides the cache by "
   f"{num(gqa8.bytes_per_token / mqa8.bytes_per_token)}: the MQA what-if keeps {binary(mqa8.kv_bytes)} per "
   f"{count(KV_CONTEXT)}-token sequence against {binary(gqa8.kv_bytes)}. DeepSeek-V3 caches "
   f"{count(dsv3.kv_lora_rank)} + {count(dsv3.qk_rope_head_dim)} = {count(dsv3.mla_cache_elements_per_token)} "
   f"elements per token and layer, {count(mla_row.bytes_per_token_per_layer)} bytes in BF16. Had it cached per-head "
   f"K and V like ordinary attention — {count(dsv3.num_attention_heads)} heads × (a key {count(dsv3.head_dim)} wide, "
   f"qk_nope + qk_rope, + a value {count(dsv3.v_head_dim)} wide) — each layer would hold {count(per_head_kv)} "
   f"elements per token, {num(per_head_kv / dsv3.mla_cache_elements_per_token)} times as many: that is the classic "
   "mistake in counting MLA's cache. (The DeepSeek-V2 paper's comparison with multi-head attention uses "
   f"2 × heads × d_h with d_h = {count(dsv3.v_head_dim)}: {count(paper_mha)} elements, "
   f"{num(paper_mha / dsv3.mla_cache_elements_per_token, 2)}×. The config's "
   f"`num_key_value_heads = {count(dsv3.num_key_value_heads)}` is the heads its keys are expanded to, not what is "
   "cached.)")

# %%
curves = kv_curves(contexts=[2 ** k for k in range(8, 21)])  # 256 → 1M tokens, below and above Gemma's window
LONG = 131072
gemma = get_model("gemma-3-27b")
gemma_long = float(gemma.kv_cache_bytes_per_sequence(LONG))
dsv3_long = float(dsv3.kv_cache_bytes_per_sequence(LONG))
assert gemma_long > dsv3_long  # the question in this section rests on it
kv_bytes_vs_context_chart(curves, title="KV cache per sequence against context, BF16, one line per design")

# %% jupyter={"source_hidden": true}
qwen = get_model("qwen3.8-27b")
qwen_curve = next(c for c in curves if c.label == qwen.name)
state_equals_kv_tokens = qwen_curve.state_bytes / qwen.kv_bytes_per_token("bf16")
md(f"The lines are straight on log-log axes because a cache grows in proportion to the context. Gemma-3-27B's "
   f"bends: below {count(gemma.sliding_window)} tokens all {count(gemma.num_hidden_layers)} of its layers grow, "
   f"above it only its {count(gemma.num_full_attention_layers)} global ones. Qwen3.8-27B's Gated DeltaNet state, "
   f"{binary(qwen_curve.state_bytes)} per sequence, is the flat band: it is larger than the KV cache of its "
   f"{count(qwen.num_full_attention_layers)} attention layers up to {count(state_equals_kv_tokens)} tokens, and "
   "negligible beside it at long context. Dotted segments are past a model's max context: what-ifs. DeepSeek-V3's "
   f"and Qwen3.8-27B's lines nearly coincide: {count(dsv3.kv_bytes_per_token('bf16'))} and "
   f"{count(qwen.kv_bytes_per_token('bf16'))} bytes per token, by very different routes.")

# %% jupyter={"source_hidden": true}
md(f"**Question.** At {count(LONG)} tokens, Gemma-3-27B's cache ({binary(gemma_long)}) is larger than "
   f"DeepSeek-V3's ({binary(dsv3_long)}), a model {num(dsv3.parameter_count() / gemma.parameter_count())} times its "
   "size with windows in none of its layers. Why?")

# %% jupyter={"source_hidden": true}
gemma_per_layer = gemma.kv_bytes_per_token_per_layer("bf16")
global_long = gemma.num_full_attention_layers * gemma_per_layer * LONG
md("<details><summary>Answer</summary>\n\n"
   f"Windows cap only the local layers. Gemma's {count(gemma.num_full_attention_layers)} global layers each cache "
   f"{count(gemma_per_layer)} bytes per token ({count(gemma.num_key_value_heads)} KV heads × "
   f"{count(gemma.head_dim)} × 2 for K and V × 2 bytes), {num(gemma_per_layer / mla_row.bytes_per_token_per_layer)} "
   f"times DeepSeek-V3's latent per layer; at {count(LONG)} tokens those global layers alone hold "
   f"{binary(global_long)}, {percent(global_long / gemma_long, 0)} of its cache. DeepSeek-V3 has "
   f"{count(dsv3.num_mla_layers)} layers, but each is cheap per token.\n\n</details>")

# %% [markdown]
# ## 3. MLA in decode: absorbed, not expanded
#
# MLA's attention can run two ways. **Expanded**: `kv_b_proj` turns every cached latent into
# per-head keys (the no-rope part) and values, then ordinary attention runs over all the heads.
# **Absorbed**: the key up-projection W_UK is folded into each head's query, and the value
# up-projection W_UV is applied after attention; attention then runs **in the latent space** and
# reads only the latent. The two give the same answer and cost very different work. One decode step
# of DeepSeek-V3's attention (all layers, batch 1):

# %%
forms = mla_forms("deepseek-v3", contexts=(1024, 4096, 32768, 131072))
show_table(["tokens cached", "absorbed: FLOPs", "expanded: FLOPs", "expanded ÷ absorbed",
            "absorbed: bytes (attention weights included)", "expanded: bytes"],
           [[count(t), si(fa, "FLOP"), si(fe, "FLOP"), f"{num(r)}×", si(ba, "B"), si(be, "B")]
            for t, fa, fe, r, ba, be in zip(forms.context_tokens, forms.absorbed_flops, forms.expanded_flops,
                                            forms.flops_ratio, forms.absorbed_bytes, forms.expanded_bytes)])
assert np.all(forms.expanded_flops > forms.absorbed_flops) and np.all(forms.expanded_bytes > forms.absorbed_bytes)
assert np.all(np.diff(forms.flops_ratio) > 0)  # the gap widens with context

# %% jupyter={"source_hidden": true}
md(f"Expanded decode re-expands **every cached token's latent, every step**: the work grows with the context, "
   f"{num(forms.flops_ratio[-1])}× the absorbed FLOPs at {count(forms.context_tokens[-1])} tokens, and the expanded "
   "keys and values are written out and read back (under the course's rule that operators are not fused; a fused "
   "kernel could keep them on chip, but not avoid the FLOPs). Absorbed decode also grows with the context — "
   "attention itself does — but reads only the latent and expands nothing. So the course prices MLA decode "
   "**absorbed** (`mla_absorbed=None`: absorbed in decode, expanded in prefill), as serving engines typically run "
   "it: the docstring at the top of vLLM's MLA common module (`mla/common.py`) calls the absorbed form \"data-movement friendly\" and uses it for decode, "
   "and the expanded form \"compute friendly\", for prefill (it may switch forms for small prefill chunks).\n\n"
   "A third option is to cache the expanded per-head K and V themselves, as Hugging Face's reference modelling code "
   f"does: no re-expansion, but a cache {num(per_head_kv / dsv3.mla_cache_elements_per_token)}× the latent "
   "(section 2) — it gives up what MLA was built for.")

# %%
PROMPT = 4096
pre_absorbed = model_cost(dsv3, phase="prefill", prompt_tokens=PROMPT, mla_absorbed=True)
pre_expanded = model_cost(dsv3, phase="prefill", prompt_tokens=PROMPT, mla_absorbed=False)
absorbed_pair = 2 * dsv3.mla_cache_elements_per_token + 2 * dsv3.kv_lora_rank  # FLOPs per head per query-key pair
expanded_pair = 2 * (dsv3.qk_nope_head_dim + dsv3.qk_rope_head_dim) + 2 * dsv3.v_head_dim
show_table(["prefill, all MLA layers", "absorbed", "expanded"],
           [[f"FLOPs, a {count(PROMPT)}-token prompt", si(pre_absorbed.block_total("mla", "flops"), "FLOP"),
             si(pre_expanded.block_total("mla", "flops"), "FLOP")],
            [f"bytes, a {count(PROMPT)}-token prompt", si(pre_absorbed.block_total("mla", "bytes"), "B"),
             si(pre_expanded.block_total("mla", "bytes"), "B")],
            ["matmul FLOPs per head per query–key pair", count(absorbed_pair), count(expanded_pair)]])
assert pre_expanded.block_total("mla", "flops") < pre_absorbed.block_total("mla", "flops")
assert pre_expanded.block_total("mla", "bytes") < pre_absorbed.block_total("mla", "bytes")

# %% jupyter={"source_hidden": true}
active_no_embedding = dsv3.active_parameter_count() - dsv3.vocab_size * dsv3.hidden_size
# DeepSeek's README_WEIGHTS.md figures, from the model catalog (published_detail_source names the file)
README_ACTIVE, README_EMBEDDING = dsv3.published_active_params_detail, dsv3.published_embedding_params
assert "README_WEIGHTS.md" in dsv3.published_detail_source
readme_gap = dsv3.active_parameter_count() - README_ACTIVE
assert abs(dsv3.vocab_size * dsv3.hidden_size - README_EMBEDDING) < 0.05e9  # its 0.9B is this table, rounded
assert readme_gap > 0.05e9  # more than the README's rounding (0.05B): a real difference, said below
assert abs(active_no_embedding - README_ACTIVE) < 0.1e9  # "dropping the embedding would nearly close the gap"
md(f"Prefill turns the choice around. There every prompt token's latent is expanded **once** and then serves every "
   f"later query, while each query–key pair costs {count(absorbed_pair)} FLOPs per head in the latent space "
   f"against {count(expanded_pair)} expanded. With thousands of queries per key, the cheaper pairs win: "
   f"{si(pre_expanded.block_total('mla', 'flops'), 'FLOP')} expanded against "
   f"{si(pre_absorbed.block_total('mla', 'flops'), 'FLOP')} absorbed for a {count(PROMPT)}-token prompt, and fewer "
   "bytes too (the absorbed form writes every head's query and output at the latent's width).\n\n"
   f"A note on DeepSeek-V3's size: {num(dsv3.parameter_count() / 1e9, 5)} B parameters in all (its "
   f"{count(dsv3.mtp_layers)} multi-token-prediction layer, shipped beside it, is not counted: that is why the "
   "Hugging Face model page shows a larger total, which includes the MTP module). When the MTP layer drafts tokens "
   "for speculative decoding it caches its own latent too, "
   f"{count(dsv3.kv_bytes_per_token_per_layer('bf16') * dsv3.mtp_layers)} more bytes per token in BF16. Its **active** count "
   f"depends on whether the embedding table counts: {num(dsv3.active_parameter_count() / 1e9, 4)} B with it, "
   f"{num(active_no_embedding / 1e9, 4)} B without. The technical report's \"37B activated\" is close to both; "
   "quote which one you mean. DeepSeek's own weight notes (README_WEIGHTS.md) are more precise: "
   f"{num(README_ACTIVE / 1e9)} B activated *including* {num(README_EMBEDDING / 1e9)} B of embedding and "
   f"{num(README_EMBEDDING / 1e9)} B of output head. The count here, from config.json (8 routed and 1 shared expert "
   f"per token, MLA, the first {count(dsv3.first_k_dense_replace)} layers dense), exceeds it by "
   f"{num(readme_gap / 1e9, 2)} B; dropping the embedding would nearly close the gap, but the README says it is "
   "included, so the difference is **unexplained** here.")

# %% jupyter={"source_hidden": true}
md("**Question.** An engine that runs MLA expanded in decode, as in prefill, serves a long-context chat. What "
   "happens to its decode steps as the conversation grows, compared with absorbed decode?")

# %% jupyter={"source_hidden": true}
md("<details><summary>Answer</summary>\n\n"
   f"Each step re-expands the whole history: its FLOPs grow with the context ({si(forms.expanded_flops[0], 'FLOP')} "
   f"at {count(forms.context_tokens[0])} tokens, {si(forms.expanded_flops[-1], 'FLOP')} at "
   f"{count(forms.context_tokens[-1])}, all layers, batch 1) and so do its bytes, since the expanded keys and "
   "values go through memory. Absorbed decode reads only the latent: the cache MLA was designed to "
   "shrink.\n\n</details>")

# %% [markdown]
# ## 4. Weight formats: what a 4-bit weight costs
#
# A 4-bit weight needs a scale: sixteen levels cannot span a layer's range on their own, so small
# groups of weights share one.

# %% jupyter={"source_hidden": true}
md(f"**int4**, as the course prices it: weights in groups of {count(DEFAULT_WEIGHT_GROUP['int4'])} along the input "
   f"dimension, each group sharing **one bf16 scale** ({num(WEIGHT_SCALE_BYTES['int4'])} bytes; GPTQ and AWQ "
   "checkpoints store FP16 scales, the same size) and **symmetric**: no zero point. That is the minimum. "
   "Real checkpoints often carry a 4-bit zero point per group as well — AWQ is asymmetric by default, and GPTQ "
   "checkpoints store `qzeros` even when quantised symmetrically — which adds 0.5 / group bytes per weight "
   f"({num(int4_bytes_per_weight(DEFAULT_WEIGHT_GROUP['int4'], zero_point=True), 4)} bytes at group "
   f"{count(DEFAULT_WEIGHT_GROUP['int4'])}). The **embedding, the lm_head and the norms stay BF16**: they "
   "are a small share of most models' parameters, sensitive to error, and the embedding is read a row at a time "
   "anyway. **MXFP4** (the OCP microscaling format, `fp4` here) stores E2M1 4-bit floats in blocks of "
   f"{count(DEFAULT_WEIGHT_GROUP['fp4'])} with one power-of-two scale of {num(WEIGHT_SCALE_BYTES['fp4'])} byte. "
   "A weight's cost is its bits plus its share of the scale:")

# %%
formats = [("bf16", None), ("fp8", None), ("int4", 128), ("int4", 64), ("int4", 32), ("fp4", 32)]
nvfp4_b = nvfp4_bytes_per_weight()
show_table(["format", "group", "bytes per weight", "of which the scale", "BF16 ÷ it"],
           [[("MXFP4 (fp4)" if d == "fp4" else d), count(g) if g else "—", num(weight_bytes_per_element(d, g), 6),
             num(weight_bytes_per_element(d, g) - bytes_per_element(d), 6) if g else "—",
             f"{num(2 / weight_bytes_per_element(d, g))}×"] for d, g in formats]
           + [["int4 with a 4-bit zero point (asymmetric)", count(128), num(int4_bytes_per_weight(128, True), 6),
               num(int4_bytes_per_weight(128, True) - 0.5, 6), f"{num(2 / int4_bytes_per_weight(128, True))}×"],
              ["NVFP4 (not priced by the placements)", count(16), num(nvfp4_b, 6), num(nvfp4_b - 0.5, 6),
               f"{num(2 / nvfp4_b)}×"]])
int4_b = weight_bytes_per_element("int4", DEFAULT_WEIGHT_GROUP["int4"])
assert int4_b == 0.5 + WEIGHT_SCALE_BYTES["int4"] / DEFAULT_WEIGHT_GROUP["int4"]
assert int4_b < int4_bytes_per_weight(128, True) < nvfp4_b  # the zero point and NVFP4's smaller blocks cost bytes

# %% jupyter={"source_hidden": true}
md(f"**NVFP4**, NVIDIA's 4-bit float for Blackwell, uses smaller blocks than MXFP4: 16 E2M1 values share one 8-bit "
   f"E4M3 scale, plus one FP32 scale per tensor, {num(nvfp4_b, 4)} bytes per weight (the per-tensor scale is "
   "negligible). The course's placements price MXFP4 (`fp4`); NVFP4 would read "
   f"{percent(nvfp4_b / weight_bytes_per_element('fp4') - 1, 1)} more weight bytes. In W4A4 either format also "
   "quantises the **activations** on the fly before each matmul — work the course does not count.")

# %%
MODELS = ("llama-3.1-70b", "gemma-3-27b", "deepseek-v3", "gpt-oss-120b")
stored = [stored_weights(m, "int4") for m in MODELS]
oss_shipped = stored_weights("gpt-oss-120b", "fp4", quantized_weights="experts")
show_table(["model", "BF16", "int4 (linear layers; embedding, lm_head, norms BF16)", "BF16 ÷ int4",
            "embedding (+ lm_head unless tied): share of the parameters"],
           [[s.label, binary(s.bf16_bytes), binary(s.bytes), f"{num(s.ratio)}×",
             percent(get_model(m).vocab_size * get_model(m).hidden_size
                     * (1 if get_model(m).tie_word_embeddings else 2) / get_model(m).parameter_count(), 1)]
            for m, s in zip(MODELS, stored)]
           + [["gpt-oss-120b as shipped (MXFP4 experts only)", binary(oss_shipped.bf16_bytes), binary(oss_shipped.bytes),
               f"{num(oss_shipped.ratio)}×", "—"]])
assert all(s.ratio < 2 / int4_b for s in stored)  # the BF16 layers keep every model under the per-weight ratio
assert min(stored, key=lambda s: s.ratio).label == gemma.name
assert oss_shipped.bytes < get_part("h100-sxm").memory_capacity_bytes

# %% jupyter={"source_hidden": true}
gemma_stored = stored[1]
md(f"No model reaches the per-weight ratio of {num(2 / int4_b)}×, because of the layers kept in BF16. Gemma-3-27B "
   f"gains least: its {count(gemma.vocab_size)}-token vocabulary makes the embedding a large share of a small "
   f"model ({binary(gemma_stored.bytes)} in int4 against {binary(gemma_stored.bf16_bytes)}). gpt-oss-120b is "
   "**released** with MXFP4 weights for its MoE experts only — attention, the router, the embedding and the "
   f"lm_head stay BF16 — which is {binary(oss_shipped.bytes)}, and why its weights fit one "
   f"{binary(get_part('h100-sxm').memory_capacity_bytes)} H100.")

# %% jupyter={"source_hidden": true}
h200 = get_part("h200")
NODE = 8
md(f"**Question.** Do DeepSeek-V3's weights fit one node of {count(NODE)} H200s ({binary(h200.memory_capacity_bytes)} "
   "each) in BF16? In int4?")

# %% jupyter={"source_hidden": true}
node_bytes = NODE * h200.memory_capacity_bytes
dsv3_stored = stored[2]
dsv3_fp8 = stored_weights("deepseek-v3", "fp8")
assert dsv3_fp8.recipe == "linear"
# the package's per-chip footprints: TP 8 replicates the query and latent down-projections (every head needs the
# whole latent); EP 8 is lesson 11's layout, attention data-parallel across the chips, only the routed experts split
layouts = {label: place("deepseek-v3", h200, phase="decode", context_tokens=KV_CONTEXT, weights_dtype="int4",
                        parallelism=par) for label, par in (("TP", Parallelism(tensor=NODE)),
                                                            ("DP", Parallelism(expert=NODE)))}
tp_weights, dp_weights = (layouts[k].footprint.weight_bytes for k in ("TP", "DP"))
tp_extra = tp_weights - dsv3_stored.bytes / NODE  # beyond an even eighth: the down-projections, computed whole
free_per_chip = h200.memory_capacity_bytes - tp_weights
tp_sequences, dp_sequences = (max_batch_that_fits_on_chips(dsv3, h200, KV_CONTEXT, layouts[k].parallelism,
                                                           weights_dtype="int4") for k in ("TP", "DP"))
assert tp_sequences == math.floor(free_per_chip / float(dsv3.kv_cache_bytes_per_sequence(KV_CONTEXT)))
routed_per_chip = sum(op.weight_params * op.layers * op.bytes_per_weight
                      for op in layouts["DP"].cost.ops if op.name.startswith("experts_"))
whole_per_chip = dp_weights - routed_per_chip  # attention, router, shared expert, dense MLPs, embedding, lm_head
dp_gain = dp_sequences / tp_sequences
assert tp_extra > 0 and dp_weights > tp_weights
assert NODE - 1 < dp_gain < NODE  # "not quite N× as many": the weights every chip keeps whole take the rest
md("<details><summary>Answer</summary>\n\n"
   f"The node holds {binary(node_bytes)}. BF16 needs {binary(dsv3_stored.bf16_bytes)}: "
   + ("it fits" if dsv3_stored.bf16_bytes < node_bytes else "**it does not fit**")
   + f". int4 needs {binary(dsv3_stored.bytes)}: "
   + (f"it fits, leaving {binary(node_bytes - dsv3_stored.bytes)} of memory (before the runtime's share). That is "
      "not all KV room: under tensor parallel 8 every chip needs every head's view of the latent, so each sequence's "
      f"latent is **replicated on all {count(NODE)} chips**, and the distinct cache the node holds is one chip's "
      f"free memory, {binary(free_per_chip)} (each chip holds {binary(tp_weights)} of weights, "
      f"{binary(tp_extra)} more than an even eighth: the query and latent down-projections run whole on every chip) "
      f"— **{count(tp_sequences)} sequences** of {count(KV_CONTEXT)} tokens. "
      "Data-parallel attention (each chip runs attention for its own sequences; lesson 11's expert-parallel layout, "
      f"EP {count(NODE)}, which splits only the routed experts) stores each latent once, but each chip then keeps "
      f"{binary(whole_per_chip)} whole — the attention, the router, the shared expert, the dense MLPs, the "
      f"embedding and the lm_head — and {binary(dp_weights)} in all: **{count(dp_sequences)} sequences**, "
      f"{num(dp_gain, 2)}× as many, not quite {count(NODE)}×."
      if dsv3_stored.bytes < node_bytes else "it does not fit either.")
   + f" DeepSeek released FP8 weights: under the default 8-bit recipe (`weights_dtype=\"fp8\"`: the linear layers in "
   f"FP8; the embedding, the lm_head, the norms and the router BF16) they take {binary(dsv3_fp8.bytes)}, which "
   + ("fits the node" + (" too." if dsv3_stored.bytes < node_bytes else ".") if dsv3_fp8.bytes < node_bytes
      else "does not fit the node.") + "\n\n</details>")

# %% [markdown]
# ## 5. 4-bit weights at batch 1: the speed-up
#
# With **weight-only** int4 (W4A16) the weights are read in 4 bits and **dequantised to BF16 on the
# fly**; the matmuls still run on BF16 tensor cores.

# %% jupyter={"source_hidden": true}
md(f"The course counts the dequantisation as {num(DEQUANT_FLOPS_PER_WEIGHT)} FLOPs per weight read (convert, "
   "scale) on the vector units, at the part's FP32 rate — a **convention**, not a measured cost: a kernel may "
   "convert with fewer or more instructions. The lower bound overlaps that work with the matmuls: the vector "
   "units and the tensor cores are separate units that can run at once, and a bound must take that optimistic case. "
   "Since its price is a convention, the bound is only a bound where the dequantisation does not set it: in every "
   "weight-only step this lesson's tables show it is shorter than the step's tensor-core time or its compulsory memory time "
   "(asserted beside each table), so the bound rests on the FLOPs and the compulsory bytes alone. How much of the "
   "dequantisation a real kernel hides — it issues both kinds of work from the same streaming multiprocessors — is "
   "for measurement, not for this model; Marlin's README reports \"close to ideal (4x) speedups up to batchsizes "
   "of 16-32 tokens\" for its FP16×INT4 kernel, on Ampere and Ada GPUs. The estimate adds the dequantisation to the "
   "matmuls. One batch-1 decode step, both from `place()`:")

# %%
sb = format_speedup(MODEL, PART, CONTEXT)
show_table(["batch 1", "weights read", "KV + activations", "compute, estimate (of which dequant)", "memory, estimate",
            "step: lower bound",
            "step: estimate", "binding roof (both)"],
           [[name, si(p.cost.weight_bytes, "B"), si(p.cost.bytes - p.cost.weight_bytes, "B"),
             f"{duration(p.compute_time_s)} ({duration(p.dequant_time_s) if p.dequant_time_s else 'none'})",
             duration(p.memory_time_s), duration(p.time_lower_bound_s), duration(p.time_estimate_s), p.bound]
            for name, p in (("BF16", sb.bf16), ("int4, weight-only", sb.quantized))])
ladder = [("16 bits ÷ 4 bits", 4.0), ("bytes per weight, its scale included", sb.element_ratio),
          ("weight bytes read per step (BF16 lm_head and norms; the embedding reads one row per token)", sb.weight_bytes_ratio),
          ("the step, lower bound ÷ lower bound (KV cache unchanged)", sb.speedup_of_bounds),
          ("the step, estimate ÷ estimate (KV cache and unfused activations unchanged)", sb.speedup_estimate)]
show_table(["BF16 ÷ int4, counting …", "ratio"], [[what, f"{num(r)}×"] for what, r in ladder])
assert all(a[1] > b[1] for a, b in itertools.pairwise(ladder))  # each honest step lowers the ratio
assert all(p.bound == p.lower_bound_roof == "memory" for p in (sb.bf16, sb.quantized))
assert float(sb.quantized.dequant_time_s) < float(sb.quantized.memory_time_s)
# the dequantisation's price is a convention: it must set no bound (below the compulsory memory time here)
assert float(sb.quantized.dequant_time_s) < float(sb.quantized.memory_lower_bound_s)
assert abs(sb.speedup_of_bounds / sb.speedup_estimate - 1) < 0.01  # at batch 1 the two figures agree

# %% jupyter={"source_hidden": true}
md(f"The speed-up is **{num(sb.speedup_of_bounds)}×** bound against bound and {num(sb.speedup_estimate)}× estimate "
   "against estimate — at batch 1 the two agree, because the weights and the KV cache, which both figures read, are "
   f"nearly all the bytes — not 16 ÷ 4: the scales cost {num(int4_b - 0.5, 3)} byte per weight, the BF16 layers are "
   "read at full width, and int4 weights do nothing to the KV cache and the activations "
   f"({si(sb.other_bytes(), 'B')} per step here, which now weigh more). The dequantisation, "
   f"{duration(sb.quantized.dequant_time_s)}, hides under the {duration(sb.quantized.memory_time_s)} of memory time "
   "whether it is overlapped or added: at batch 1 it is free. A ratio of two bounds is not itself a bound: it is "
   "what int4 gains if both kernels reach their bounds. *Hypothesis:* a real int4 kernel reaches a smaller share "
   "of the bandwidth than a BF16 one and gains less; lesson 9's method measures it.")

# %% jupyter={"source_hidden": true}
LONG_CHAT = 131072
md(f"**Question.** The same batch-1 step with {count(LONG_CHAT)} tokens cached: does the speed-up of int4 weights "
   "rise or fall?")

# %% jupyter={"source_hidden": true}
sb_long = format_speedup(MODEL, PART, LONG_CHAT)
assert float(sb_long.quantized.dequant_time_s) < float(sb_long.quantized.memory_lower_bound_s)  # sets no bound
md("<details><summary>Answer</summary>\n\n"
   f"It {'falls' if sb_long.speedup_of_bounds < sb.speedup_of_bounds else 'rises'}, to "
   f"{num(sb_long.speedup_of_bounds)}× bound against bound ({num(sb_long.speedup_estimate)}× by the estimates): the "
   f"KV cache and the activations, {si(sb_long.other_bytes(), 'B')} per step, are now "
   f"{percent(sb_long.other_bytes() / float(sb_long.quantized.cost.bytes), 0)} of the int4 step's bytes, and the "
   "weight format does not touch them. At long context the KV levers matter more.\n\n</details>")


# %% [markdown]
# ## 6. The critical batch moves — in opposite directions
#
# The critical batch is the first batch at which the step turns compute-bound. Lesson 4 found it
# for BF16. What do 4-bit weights do to it? Two very different 4-bit recipes:
#
# - **weight-only int4** (W4A16): fewer bytes, the **same** matmul roof (BF16 matmuls, plus the
#   dequantisation on the vector units);
# - **W4A4** (FP4 weights and FP4 matmuls, MXFP4 on a part with an FP4 tensor-core rate): fewer bytes
#   **and** a higher compute roof.
#
# Lesson 4 read the critical batch through two lenses: the **weight lens** (FLOPs of the weight
# matmuls per weight byte against the ridge) and the **all-traffic lens** (every byte the step moves).
# Each lens now has two figures. The **lower bound**'s critical batch overlaps the dequantisation
# with the matmuls, so a weight-only step meets the matmuls' own ridge, and counts only compulsory
# bytes (weights, KV cache, ids and logits). The **estimate**'s adds the dequantisation in series to
# the matmuls and sends every operator's activations through HBM. Sweeping the batch at a short
# context (at a long one no format turns compute-bound anywhere in the sweep, as the last column shows; the
# end of this section says why none ever does):

# %%
sweeps = critical_batches(MODEL, PART, SHORT_CONTEXT)
long_sweeps = critical_batches(MODEL, PART, CONTEXT)
W4A4_FIELDS = WEIGHT_FORMATS["fp4 W4A4 (MXFP4 weights and matmuls)"]
fp8_kv_w4a4 = critical_batches(MODEL, PART, SHORT_CONTEXT, formats={"W4A4": W4A4_FIELDS}, kv_dtype="fp8")[0]
max_swept = int(sweeps[0].batch[-1])
none_up_to = f"none up to {count(max_swept)}"
crit = lambda b: count(b) if b else none_up_to
show_table(["format", "matmul roof", "weight lens: lower bound (dequant overlapped)",
            "weight lens: estimate (dequant in series)",
            f"all traffic, {count(SHORT_CONTEXT)} cached: lower bound (compulsory bytes, dequant overlapped)",
            f"all traffic, {count(SHORT_CONTEXT)} cached: estimate (unfused, dequant in series)",
            f"all traffic, {count(CONTEXT)} cached: lower bound / estimate"],
           [[s.label, si(s.matmul_peak_flops_per_s, "FLOP/s"), crit(s.weight_lens_critical_batch_lower_bound),
             crit(s.weight_lens_critical_batch_estimate), crit(s.critical_batch_lower_bound),
             crit(s.critical_batch_estimate),
             f"{crit(ls.critical_batch_lower_bound)} / {crit(ls.critical_batch_estimate)}"]
            for s, ls in zip(sweeps, long_sweeps)])
bf16_sw, int4_sw, w4a4_sw = sweeps
wl_bf16, wl_int4, wl_w4a4 = (s.weight_lens_critical_batch_lower_bound for s in sweeps)
wl_int4_est = int4_sw.weight_lens_critical_batch_estimate
weight_ratio = sb.weight_bytes_ratio  # BF16 weight bytes ÷ int4's (section 5)
eff_roof = float(int4_sw.ridge_point_flop_per_byte[wl_int4_est - 1]) * part.memory_bandwidth_bytes_per_s
lb_bf16, lb_int4, lb_w4a4 = (s.critical_batch_lower_bound for s in sweeps)
est_bf16, est_int4, est_w4a4 = (s.critical_batch_estimate for s in sweeps)
# the weight lens: BF16 and W4A4 have no dequantisation, so their two figures agree
assert all(s.weight_lens_critical_batch_lower_bound == s.weight_lens_critical_batch_estimate for s in (bf16_sw, w4a4_sw))
assert critical_batch(MODEL, PART, SHORT_CONTEXT, lens="weights only", weights_dtype="int4") == wl_int4_est  # lesson 4's
# the bound: int4's matmul roof and ridge are BF16's ("the roof stayed"), so only the weight bytes moved
assert int4_sw.ridge_point_lower_bound_flop_per_byte[wl_int4 - 1] == bf16_sw.ridge_point_lower_bound_flop_per_byte[0]
assert abs(wl_int4 - wl_bf16 / weight_ratio) < 1.5
# the estimate: the dequantisation in series lowers the roof the step meets, so it turns sooner still
assert eff_roof < int4_sw.matmul_peak_flops_per_s and wl_int4_est < wl_int4 < wl_bf16 / 2
assert abs(wl_w4a4 / wl_bf16 - 1) < 0.25  # weight lens: W4A4 stays near BF16
# all traffic: the order is the same by both figures, and the estimate's two conventions pull opposite ways
assert lb_int4 < lb_bf16 < lb_w4a4 and est_int4 < est_bf16 < est_w4a4
assert est_int4 < lb_int4 and lb_bf16 < est_bf16 and lb_w4a4 < est_w4a4
assert est_int4 < int4_sw.critical_batch_without_dequant  # the dequant in series alone lowers it
assert int4_sw.matmul_peak_flops_per_s == bf16_sw.matmul_peak_flops_per_s < w4a4_sw.matmul_peak_flops_per_s
assert all(s.critical_batch_estimate is None and s.critical_batch_lower_bound is None for s in long_sweeps)
# the dequantisation's price is a convention: at no batch of either context does it set the bound
assert not any(s.dequant_sets_lower_bound.any() for s in sweeps + long_sweeps)

# %% jupyter={"source_hidden": true}
md(f"**Through the weight lens**, by the lower bound, weight-only int4's critical batch falls from {count(wl_bf16)} "
   f"to **{count(wl_int4)}**: its weight bytes fell {num(weight_ratio)}× ({count(wl_bf16)} ÷ {num(weight_ratio)} ≈ "
   f"{num(wl_bf16 / weight_ratio, 3)}) and the matmul roof stayed where it was, "
   f"{si(int4_sw.matmul_peak_flops_per_s, 'FLOP/s')} — the matmuls still run in BF16, and the dequantisation, on "
   "other units, overlaps them — so the matmuls reach it sooner. The estimate says **"
   f"{count(wl_int4_est)}**: with the dequantisation added in series, the roof the step meets at that batch is "
   f"{si(eff_roof, 'FLOP/s')}, {percent(1 - eff_roof / int4_sw.matmul_peak_flops_per_s, 0)} below the matmul roof, "
   "so the step turns compute-bound sooner still. A real kernel is never faster than the bound, and the estimate "
   "is a convention, not a ceiling. How much of the dequantisation well-pipelined weight-only kernels "
   "(Marlin-style: the dequantisation interleaved with the tensor-core work) hide at these batches is a "
   "*hypothesis* to measure, not a figure of this model (section 5 quotes what Marlin's README reports). W4A4 keeps the weight lens near BF16's, "
   f"**{count(wl_w4a4)}** by both figures (no dequantisation): its weight bytes fell about as much as its roof rose "
   f"({num(w4a4_sw.matmul_peak_flops_per_s / bf16_sw.matmul_peak_flops_per_s)}×).")

# %%
w4a4_at_est = byte_budget(MODEL, PART, est_w4a4, SHORT_CONTEXT, **W4A4_FIELDS)
w4a4_at_lb = byte_budget(MODEL, PART, lb_w4a4, SHORT_CONTEXT, **W4A4_FIELDS)
bf16_at_lb = byte_budget(MODEL, PART, lb_bf16, SHORT_CONTEXT)
w4a4_split = w4a4_at_est.shares()
weights_of_compulsory = lambda x: x.weight_bytes / x.compulsory_bytes
assert w4a4_split["weights"] < w4a4_split["KV cache"] < w4a4_split["activations"]  # the estimate: activations dominate
assert weights_of_compulsory(w4a4_at_lb) < weights_of_compulsory(bf16_at_lb) - 0.1  # the bound: the KV cache weighs more
assert est_w4a4 / lb_w4a4 > max(est_bf16 / lb_bf16, est_int4 / lb_int4)  # "W4A4 shows that most"
# why no format turns at the long context: what each added sequence brings (FLOPs per compulsory byte) against
# the ridge of those FLOPs; the formats change only the weights, which the batch shares
per_seq = {ctx: [s.added_sequence_intensity_lower_bound for s in sw] for ctx, sw in ((SHORT_CONTEXT, sweeps),
                                                                                    (CONTEXT, long_sweeps))}
assert all(abs(v / vs[0] - 1) < 1e-9 for vs in per_seq.values() for v in vs)  # the same for every format
assert all(s.memory_bound_at_every_batch_lower_bound for s in long_sweeps)
assert all(s.added_sequence_intensity_estimate < s.added_sequence_ridge_flop_per_byte for s in long_sweeps)
assert all(s.added_sequence_intensity_lower_bound > s.added_sequence_ridge_flop_per_byte for s in sweeps)

# %% jupyter={"source_hidden": true}
md(f"**Through all the traffic** the two figures part further. By the lower bound, int4 turns compute-bound at "
   f"batch **{count(lb_int4)}**, BF16 at {count(lb_bf16)} and W4A4 at {count(lb_w4a4)}; by the estimate at "
   f"{count(est_int4)}, {count(est_bf16)} and {count(est_w4a4)}. The estimate's two conventions pull opposite ways. "
   "The dequantisation in series lengthens the compute time and brings the turn forward: int4's estimate turns at "
   f"{count(int4_sw.critical_batch_without_dequant)} with the dequantisation overlapped, {count(est_int4)} with it "
   "added. The unfused activations lengthen the memory time and push the turn back: BF16's "
   f"{count(lb_bf16)} becomes {count(est_bf16)}. W4A4 shows that most: at the estimate's critical batch its step's "
   f"unfused bytes are {percent(w4a4_split['activations'], 0)} activations, {percent(w4a4_split['KV cache'], 0)} KV "
   f"cache and only {percent(w4a4_split['weights'], 0)} weights, so the estimate needs batch {count(est_w4a4)} to "
   f"reach the higher roof — {num(est_w4a4 / lb_w4a4)}× the bound's {count(lb_w4a4)}. Kernels that keep the "
   "activations on chip (fused) approach the bound's figure.\n\n"
   f"Even by the bound, W4A4's critical batch is above BF16's ({count(lb_w4a4)} against {count(lb_bf16)}): the BF16 KV "
   "cache, which W4A4 does not shrink, grows with the batch: with the ids and logits it is "
   f"{percent(1 - weights_of_compulsory(w4a4_at_lb), 0)} of the compulsory bytes at W4A4's critical batch, against "
   f"{percent(1 - weights_of_compulsory(bf16_at_lb), 0)} at BF16's. With an FP8 KV cache W4A4's critical batch is "
   f"{crit(fp8_kv_w4a4.critical_batch_lower_bound)} by the bound ({crit(fp8_kv_w4a4.critical_batch_estimate)} by the "
   f"estimate).\n\n"
   f"At {count(CONTEXT)} tokens cached none of them turns compute-bound by either figure, and what decides it is what "
   "each **added sequence** brings: its FLOPs (attention over its cache, its row of every weight matmul) per "
   "compulsory byte it adds (its KV cache read and written, its token and logits; the weights are shared). That "
   f"is {num(per_seq[CONTEXT][0])} FLOP/byte at {count(CONTEXT)} tokens cached, the same in every format (the formats "
   f"change only the shared weights), against a ridge for those FLOPs of "
   + "; ".join(f"{num(s.added_sequence_ridge_flop_per_byte)} for {s.label}" for s in long_sweeps)
   + ". The step's compulsory intensity tends to that per-sequence figure as the batch grows, so each added "
   "sequence adds more memory time than compute time and, memory-bound at batch 1, no step turns at any batch: "
   f"by the bound none ever does (the estimate's unfused bytes give {num(long_sweeps[0].added_sequence_intensity_estimate)} "
   f"FLOP/byte, lower still). At {count(SHORT_CONTEXT)} tokens cached the same sequence brings "
   f"{num(per_seq[SHORT_CONTEXT][0])} FLOP/byte, above every format's ridge, and every format turns.")

# %% jupyter={"source_hidden": true}
at = est_int4
md(f"**Question.** At batch {count(at)} weight-only int4's estimate is compute-bound and BF16's is not. Is int4 the "
   "slower of the two there?")

# %% jupyter={"source_hidden": true}
md("<details><summary>Answer</summary>\n\n"
   f"No: its estimate is {duration(int4_sw.step_estimate_s[at - 1])} against BF16's "
   f"{duration(bf16_sw.step_estimate_s[at - 1])}, {num(bf16_sw.step_estimate_s[at - 1] / int4_sw.step_estimate_s[at - 1])}× "
   f"faster (by the lower bounds, {duration(int4_sw.step_lower_bound_s[at - 1])} against "
   f"{duration(bf16_sw.step_lower_bound_s[at - 1])}). Compute-bound says which of its own two times is longer, not "
   "how it compares with another format. Its memory time fell below its compute time, which did not fall — by the "
   f"estimate it rose, from BF16's {duration(bf16_sw.compute_time_s[at - 1])} to "
   f"{duration(int4_sw.compute_time_s[at - 1])}, by the dequantisation added in series. "
   + (f"By the lower bound int4 is still memory-bound at this batch: overlapped, the dequantisation adds no compute "
      f"time, and its bound turns at {count(lb_int4)}." if at < lb_int4 else "")
   + "\n\n</details>")

# %% [markdown]
# ## 7. The dequantisation that erodes the gain — in the estimate
#
# The estimate's convention: a weight-only step's compute time is the BF16 matmuls **plus** the
# dequantisation, in series. At batch 1 both hide under the memory time. As the batch grows, the
# BF16 step approaches its compute roof while the int4 step carries the dequantisation on top of the
# same matmuls. The lower bound takes the other extreme, a dequantisation completely overlapped with
# the matmuls — the optimistic case a bound has to take, since no kernel can do better than hide it
# entirely. The table gives BF16 ÷ int4 three ways: the estimate, the estimate with the
# dequantisation overlapped (the unfused bytes kept: only the dequant convention changes), and the
# lower bounds.

# %%
crossover = weight_only_crossover(MODEL, PART, SHORT_CONTEXT)
meet = weight_only_crossover(MODEL, PART, SHORT_CONTEXT, figure="lower bound")
long_crossover = weight_only_crossover(MODEL, PART, CONTEXT)
shown = [1, 16, est_int4, bf16_sw.critical_batch_estimate // 2, crossover]
overlapped = int4_sw.overlapped_step_time_s
show_table(["batch", "BF16 estimate", "int4 estimate", "int4 compute (estimate)", "of which dequant",
            "BF16 ÷ int4: estimate", "… estimate, dequant overlapped", "… lower bounds"],
           [[count(b), duration(bf16_sw.step_estimate_s[b - 1]), duration(int4_sw.step_estimate_s[b - 1]),
             duration(int4_sw.compute_time_s[b - 1]), percent(int4_sw.dequant_time_s[b - 1]
                                                             / int4_sw.compute_time_s[b - 1], 0),
             f"{num(bf16_sw.step_estimate_s[b - 1] / int4_sw.step_estimate_s[b - 1])}×",
             f"{num(bf16_sw.step_estimate_s[b - 1] / overlapped[b - 1])}×",
             f"{num(bf16_sw.step_lower_bound_s[b - 1] / int4_sw.step_lower_bound_s[b - 1])}×"] for b in shown])
assert crossover is not None and int4_sw.step_estimate_s[crossover - 1] >= bf16_sw.step_estimate_s[crossover - 1]
assert np.all(overlapped <= bf16_sw.step_estimate_s * (1 + 1e-12))  # overlapped: never slower, up to the sweep's end
assert np.all(int4_sw.step_lower_bound_s <= bf16_sw.step_lower_bound_s * (1 + 1e-12))  # nor by the bound
assert meet is not None and meet == lb_bf16  # by the bound they meet where BF16 turns compute-bound
assert long_crossover is None  # at 8,192 tokens int4 never stops winning up to the sweep's end

# %% jupyter={"source_hidden": true}
md(f"With {count(SHORT_CONTEXT)} tokens cached, weight-only int4's estimate stops beating BF16's at batch "
   f"**{count(crossover)}**: from there its dequantisation ({duration(int4_sw.dequant_time_s[crossover - 1])} per "
   "step, the same at any batch because the weights are read once — in this model: real GEMMs dequantise a tile "
   "once per M-tile, so the cost grows with the batch) makes the estimate longer than BF16's. At "
   f"{count(CONTEXT)} tokens cached it never does up to batch {count(max_swept)}: the KV cache keeps both steps "
   "memory-bound.\n\n"
   "That crossover is the estimate's **in-series** convention — "
   f"{num(DEQUANT_FLOPS_PER_WEIGHT)} FLOPs per weight on the FP32 vector units, added to the tensor-core time. It is "
   "a deduction within the roofline, not a hypothesis, that a dequantisation fully overlapped with the matmuls "
   f"leaves **no crossover at all**: int4's lower bound is never above BF16's up to batch {count(max_swept)} (the "
   f"last column), and equal to it from batch {count(meet)}, where both are compute-bound on the same matmul roof. "
   "A real kernel is never faster than the bound and can be slower than the estimate, so whether int4 is slower "
   "at large batch on real hardware is a "
   "question of kernel efficiency. *Hypothesis:* int4 GEMM kernels reach a smaller share of the tensor-core peak "
   "than BF16 ones at large batch; measure your kernel's step against the BF16 one (lesson 9's method) to find out.")

# %% jupyter={"source_hidden": true}
SERVICE_BATCH = 256
md(f"**Question.** A short-prompt service runs {model.name} at batch {count(SERVICE_BATCH)} with about "
   f"{count(SHORT_CONTEXT)} tokens cached on B200s. Should it switch from BF16 to weight-only int4 weights for speed?")

# %% jupyter={"source_hidden": true}
i = SERVICE_BATCH - 1
gain_est = bf16_sw.step_estimate_s[i] / int4_sw.step_estimate_s[i]
gain_lb = bf16_sw.step_lower_bound_s[i] / int4_sw.step_lower_bound_s[i]
gain_1 = bf16_sw.step_lower_bound_s[0] / int4_sw.step_lower_bound_s[0]
assert max(gain_est, gain_lb) < gain_1 / 2  # the gain at this batch is a fraction of batch 1's
tensor_share = bf16_sw.tensor_time_s[i] / bf16_sw.step_lower_bound_s[i]
assert tensor_share > 0.8  # "close to its compute roof"
md("<details><summary>Answer</summary>\n\n"
   + ("Barely" if max(gain_est, gain_lb) < 1.5 else "Less than at batch 1")
   + f": by the lower bounds the step goes from {duration(bf16_sw.step_lower_bound_s[i])} to "
   f"{duration(int4_sw.step_lower_bound_s[i])}, {num(gain_lb)}×; by the estimates (dequantisation in series) from "
   f"{duration(bf16_sw.step_estimate_s[i])} to {duration(int4_sw.step_estimate_s[i])}, {num(gain_est)}× — against "
   f"{num(gain_1)}× at batch 1. The BF16 step is close to its compute roof there — its tensor-core time is "
   f"{percent(tensor_share, 0)} of its lower bound — and int4 does not raise that roof. The "
   "reasons to switch at this batch are memory (room for more sequences) or W4A4 on a part with FP4 tensor cores, "
   "not weight-only speed.\n\n</details>")

# %% [markdown]
# ## 8. Which lever moves which part
#
# Each lever alone, and its effect on the bytes **per generated token** (the step's bytes ÷ the
# batch). The architecture levers are what-ifs built on the same model (they need retraining): the
# MQA, MLA and hybrid versions also change the attention weights' shapes (sliding windows do not),
# and the weights column shows by how much.

# %% jupyter={"source_hidden": true}
LEVER_BATCH = 16
md(f"The baseline: {model.name} on the {part.name}, BF16 weights and KV cache, batch {count(LEVER_BATCH)}, "
   f"{count(CONTEXT)} tokens cached.")

# %%
levers = byte_levers(MODEL, PART, batch=LEVER_BATCH, context_tokens=CONTEXT)
show_table(["lever"] + [f"{p} per token" for p in BUDGET_PARTS]
           + ["moves", "time per token, faster by: lower bounds", "… estimates"],
           [[lv.lever + (" — what-if" if lv.what_if else "")] + [change_text(lv.change()[p]) for p in BUDGET_PARTS]
            + [", ".join(lv.moves), f"{num(lv.speedup_of_bounds)}×", f"{num(lv.speedup_estimate)}×"] for lv in levers])
assert all(lv.moves == ("weights",) for lv in levers if "weights" in lv.lever or lv.lever.startswith("batching"))
assert all(lv.moves == ("KV cache",) for lv in levers if "KV cache" in lv.lever)
assert all(lv.main_part == "KV cache" for lv in levers if lv.what_if)
deployable = lambda effects: [lv for lv in effects if not lv.lever.startswith("batching") and not lv.what_if]
ranked = lambda effects, figure: max(effects, key=lambda lv: getattr(lv, figure))
bigger_levers = byte_levers(MODEL, PART, batch=4 * LEVER_BATCH, context_tokens=CONTEXT)
best, bigger_batch = ranked(deployable(levers), "speedup_of_bounds"), ranked(deployable(bigger_levers), "speedup_of_bounds")
best_what_if = ranked([lv for lv in bigger_levers if lv.what_if], "speedup_of_bounds")
for figure in ("speedup_of_bounds", "speedup_estimate"):  # both figures pick the same levers
    assert (ranked(deployable(levers), figure), ranked(deployable(bigger_levers), figure)) == (best, bigger_batch)
    assert ranked([lv for lv in bigger_levers if lv.what_if], figure) == best_what_if
    assert getattr(best, figure) >= max(getattr(lv, figure) for lv in levers if not lv.lever.startswith("batching"))
assert best.main_part == "weights" and bigger_batch.main_part == "KV cache"  # the order flips with the batch
assert not bigger_batch.before.placement.fits_in_memory  # the bigger batch's baseline is itself a what-if
assert all(float(q.dequant_time_s) < max(float(q.tensor_time_s), float(q.memory_lower_bound_s))
           for lv in levers + bigger_levers for q in (lv.after.placement,))  # the dequantisation sets no bound

# %% jupyter={"source_hidden": true}
hybrid = next(lv for lv in levers if lv.lever.startswith("hybrid"))
batching = next(lv for lv in levers if lv.lever.startswith("batching"))
md(f"The formats each move one part: weight formats the weights, KV formats the cache. The architecture what-ifs "
   f"all cut the KV cache most, and the hybrid one trades part of it for a recurrent state, read and written every "
   f"step ({si(hybrid.after.parts_per_token()['state'], 'B')} per token). Batching shrinks nothing: it spreads the same "
   f"weights over more tokens, {change_text(batching.change()['weights'])} weight bytes per token, and leaves each "
   f"sequence's cache as it was. \"Moves\" lists every part that changes by more than "
   f"{percent(MOVE_THRESHOLD, 0)}. The speed-up is the time per generated token, lower bound against lower bound "
   "(what the lever gives when both steps reach their bounds) and estimate against estimate; here they lie within "
   f"{percent(max(abs(lv.speedup_of_bounds / lv.speedup_estimate - 1) for lv in levers), 0)} of each other.")

# %% jupyter={"source_hidden": true}
md("**Question.** Batching aside, which lever helps this baseline most, and why does it beat every KV lever here "
   "(the architecture what-ifs included)?")

# %% jupyter={"source_hidden": true}
base_shares = levers[0].before.shares()
md("<details><summary>Answer</summary>\n\n"
   f"**{best.lever}**, {num(best.speedup_of_bounds)}× per token by the lower bounds ({num(best.speedup_estimate)}× "
   f"by the estimates): at batch {count(LEVER_BATCH)} and {count(CONTEXT)} tokens the "
   f"weights are {percent(base_shares['weights'], 0)} of the step's bytes and the KV cache "
   f"{percent(base_shares['KV cache'], 0)}, so shrinking the weights removes more bytes than even the largest KV "
   f"cut. The order depends on the batch: at batch {count(bigger_batch.before.batch)} — a what-if on one "
   f"{part.name}, where BF16 weights and that cache do not fit (section 1) — the best format lever is "
   f"**{bigger_batch.lever}**, {num(bigger_batch.speedup_of_bounds)}×, because the cache has become the larger part "
   f"(of the retraining what-ifs, {best_what_if.lever}, {num(best_what_if.speedup_of_bounds)}×; both figures rank "
   "them alike).\n\n</details>")

# %% [markdown]
# ## 9. Paged KV and sliding windows: allocate per layer kind
#
# Serving engines store the KV cache in **pages** (vLLM's PagedAttention: blocks of a few tokens of
# one layer's K and V) so that sequences of any length share one pool without fragmentation. A
# **uniform** allocator gives every layer of a sequence the same pages: ceil(context / page) of
# them. For a sliding-window model it reserves pages a local layer will never fill — a local layer
# never holds more than its window. This is what vLLM V1 does with its hybrid KV-cache manager
# disabled: its `FullAttentionSpec` docstring says a sliding-window layer is then "regarded as full
# attention in KV cache manager (blocks are allocated for all tokens)". Allocating **per layer kind**
# (vLLM's hybrid KV-cache manager, https://docs.vllm.ai/en/latest/design/hybrid_kv_cache_manager/)
# gives each local layer only the pages its window spans (one more when the window starts mid-page).

# %% jupyter={"source_hidden": true}
UTILIZATION = 0.9  # vLLM's long-standing default gpu_memory_utilization
md(f"Pages of {count(DEFAULT_PAGE_TOKENS)} tokens (vLLM's default block size); sequences that fit beside the "
   f"weights in {percent(UTILIZATION, 0)} of the memory (vLLM's long-standing default). gpt-oss-120b is stored as shipped, "
   "MXFP4 experts:")

# %%
cases = [("gemma-3-27b", "h100-sxm", {}), ("gpt-oss-120b", "h200", {"weights_dtype": "fp4",
                                                                    "quantized_weights": "experts"})]
paged = [paged_capacity(m, p, t, DEFAULT_PAGE_TOKENS, memory_utilization=UTILIZATION, **f)
         for m, p, f in cases for t in (8192, KV_CONTEXT, 131072)]
show_table(["model on part", "tokens per sequence", "pages per layer (global / local)", "KV pool",
            "per sequence: uniform", "per sequence: per kind", "sequences: uniform", "sequences: per kind",
            "uniform loses"],
           [[f"{c.model.name} on {c.part.name}", count(c.context_tokens), f"{count(c.full_pages)} / {count(c.window_pages)}",
             binary(c.pool_bytes), binary(c.uniform_bytes_per_sequence), binary(c.per_kind_bytes_per_sequence),
             count(c.uniform_sequences), count(c.per_kind_sequences), percent(c.uniform_loss, 0)] for c in paged])
assert all(c.uniform_sequences <= c.per_kind_sequences and c.uniform_loss > 0 for c in paged)
gemma_losses = [c.uniform_loss for c in paged[:3]]
oss_losses = [c.uniform_loss for c in paged[3:]]
assert min(gemma_losses) > 0.5 and all(0.35 < x < 0.6 for x in oss_losses)  # "most" for Gemma, "about half" for gpt-oss

# %% jupyter={"source_hidden": true}
g32 = paged[1]
md(f"At {count(g32.context_tokens)} tokens a uniform allocator fits {count(g32.uniform_sequences)} Gemma-3-27B "
   f"sequence{'s' if g32.uniform_sequences != 1 else ''} on the {g32.part.name}; per layer kind, "
   f"{count(g32.per_kind_sequences)}. The model's small cache only turns into more sequences when the allocator "
   f"knows which layers slide. The uniform allocator loses {percent(min(gemma_losses), 0)} to "
   f"{percent(max(gemma_losses), 0)} of Gemma's sequences here — most of them — but "
   f"{percent(min(oss_losses), 0)} to {percent(max(oss_losses), 0)} of gpt-oss's, about half (the question below "
   "says why).\n\n"
   "The per-kind counts are an **upper bound** at this memory utilisation and page size: a real engine also holds pages for the prefill chunk in flight, "
   "uses one page size across layer groups (padding), and pays activations and CUDA graphs out of the same "
   f"{percent(UTILIZATION, 0)} of memory.")

# %% jupyter={"source_hidden": true}
oss = get_model("gpt-oss-120b")
md(f"**Question.** gpt-oss-120b's window is {count(oss.sliding_window)} tokens, Gemma-3-27B's "
   f"{count(gemma.sliding_window)}. Why then does the uniform allocator lose a smaller share of gpt-oss's "
   "capacity?")

# %% jupyter={"source_hidden": true}
md("<details><summary>Answer</summary>\n\n"
   f"Because the loss is capped by the share of layers that slide. gpt-oss alternates: "
   f"{count(oss.num_sliding_attention_layers)} of its {count(oss.num_hidden_layers)} layers are local, so even a "
   f"zero-sized window could at most halve its cache; Gemma has {count(gemma.num_sliding_attention_layers)} local "
   f"layers in {count(gemma.num_hidden_layers)}. A small window helps little when half the layers keep every "
   "token.\n\n</details>")

# %% [markdown]
# ## Explore: the byte-budget dashboard
#
# Pick a model, a part, the context, the weight format (BF16, FP8, int4, MXFP4 weight-only, FP4 W4A4)
# and the KV format, and the batch. The chart stacks the bytes of one decode step against the BF16
# step's, and places both on the part's roofline. Try: Llama-3.1-70B on a B200 at batch 1 through
# every weight format (how close to 4× does int4 get?); the same at batch 256 with 128 tokens cached
# (which format is compute-bound?); Gemma-3-27B and DeepSeek-V3 at 64K tokens cached with BF16 and
# FP8 KV (which part is left?). (At 128K cached, the new token takes Gemma past its maximum context:
# the dashboard marks that a what-if.)

# %%
from roofline_lessons.viz.dashboards import lesson12_dashboard

dashboard = lesson12_dashboard(MODEL, PART)  # the settings the prompt above names: Llama-3.1-70B on a B200

# %% [markdown]
# ## Summary
#
# - A decode step moves the weights once, every sequence's KV cache, any recurrent state, and a
#   little activation traffic. At batch 1 the weights dominate; as the batch and the context grow,
#   the KV cache does.
# - KV bytes per token and layer: GQA 2 × KV heads × head_dim elements; MQA one KV head; MLA one
#   latent of kv_lora_rank + qk_rope_head_dim elements shared by every head (not per-head K and V);
#   a sliding-window layer caches at most its window while the global layers keep every token; a
#   Gated DeltaNet layer caches nothing and keeps a constant state instead.
# - MLA runs **absorbed** in decode (attention in the latent space: expanded decode re-expands the
#   whole history every step) and **expanded** in prefill (each latent expanded once; cheaper
#   query–key pairs in a compute-bound phase).
# - An int4 weight costs 0.5 byte plus its group's scale (0.5 + 2/128 with a bf16 scale per 128);
#   MXFP4 costs 0.5 + 1/32. The embedding, the lm_head and the norms usually stay BF16; gpt-oss
#   ships MXFP4 for its experts only.
# - Two figures for every step: the **lower bound** (compulsory bytes, the dequantisation
#   overlapped with the matmuls; nothing on that part with those formats is faster) and the
#   **estimate** (every operator's activations through HBM, the dequantisation in series). Say which
#   one you quote.
# - The batch-1 speed-up of 4-bit weights is below 16 bits ÷ 4 bits: scales, BF16 layers, and a KV cache and
#   activations that the weight format does not touch.
# - Weight-only int4 does not raise the matmul roof: it lowers the critical batch. By the lower
#   bound (weight lens) its critical batch is BF16's ÷ the weight-byte ratio: the same matmul ridge,
#   fewer bytes. The estimate, adding the dequantisation in series, turns compute-bound sooner and,
#   at short context, becomes slower than BF16 at a large enough batch; at long context the KV cache
#   keeps both memory-bound and it never does (section 7). With the dequantisation overlapped int4
#   is never the slower; a real (Marlin-style) kernel takes at least the bound's time and can take
#   longer than the estimate, so a real slowdown is a question of kernel efficiency. W4A4 raises the roof: through the weight lens
#   its critical batch stays near BF16's; through all the traffic it rises — by the bound because
#   the BF16 KV cache it does not shrink grows with the batch, and much further by the estimate,
#   whose unfused activations grow too.
# - A paged KV allocator must allocate per layer kind: giving sliding-window layers full-context
#   pages throws away all of the memory the windows saved (vLLM V1 does so with its hybrid KV-cache
#   manager disabled).
#
# **Interview questions this lesson prepares you for**
#
# - "How many bytes of KV cache does one token add in DeepSeek-V3? Why not 2 × heads × head_dim?"
# - "Absorbed or expanded MLA: which do you run in decode, which in prefill, and why?"
# - "You quantise a 70B model to 4 bits. How much faster is batch-1 decode, and why not four times?"
# - "Does weight-only int4 help at batch 256? What does W4A4 change?"
# - "Gemma 3 slides a short window over most of its layers. How much memory does that save, and
#   what must the serving engine do to cash it in?"
# - "Which lever would you pull first for a long-context chat service: weights, KV format, or
#   architecture?"
#
# The exercises for this lesson are in `exercises/12_shrinking_the_bytes.ipynb`.
