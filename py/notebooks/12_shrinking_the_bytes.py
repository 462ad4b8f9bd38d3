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
# Below its critical batch a decode step is memory-bound: its time is the bytes it moves divided
# by the bandwidth. The way to a faster step is to **move fewer bytes**: store the weights in 4
# bits, the KV cache in 8 or 4, or build a model whose tokens leave less behind. This lesson prices
# each lever, one idea per section.
#
# **By the end of this lesson you can**
#
# 1. split a decode step's bytes into weights, KV cache, recurrent state and activations, and say
#    which lever moves which part;
# 2. compute the KV bytes per token of GQA, MQA, MLA, sliding-window and hybrid models;
# 3. say why MLA runs absorbed in decode and expanded in prefill;
# 4. compute what a 4-bit weight costs, the batch-1 speed-up it buys and how it moves the critical
#    batch;
# 5. explain why a paged KV allocator must allocate per layer kind for a sliding-window model.
#
# > **Conventions.** One chip, decode. Every step has two figures (lesson 3); the text calls them
# > the **bound** and the **estimate**.
# >
# > - The **lower bound** (`time_lower_bound_s`) counts compulsory traffic only — the weights once,
# >   the KV cache and recurrent state, the token ids and logits — at each format's peak FLOP/s;
# >   independent units overlap (a weight-only dequantisation runs beside the matmuls); no latency
# >   is assumed. Nothing on that part, in those formats, is faster. The dequantisation's price is a
# >   convention (FLOPs per weight at the part's FP32 rate), so every weight-only step in this lesson
# >   is checked to be one where it sets no bound.
# > - The **estimate** (`time_estimate_s`) adds two conventions: operators are not fused (every
# >   activation is written to HBM and read back) and the dequantisation runs **in series** with the
# >   matmuls. A real kernel is never faster than the bound; the estimate is not a ceiling.
# >
# > Memory capacity is binary (GiB); bytes moved are SI (GB), as bandwidth is. A part's capacity is
# > the vendor's nominal figure read as GiB (a vendor's "80 GB" is taken as 80 GiB); a driver reports
# > somewhat less as usable, so every count of what fits is **at most** what fits under that figure.
# > Weight formats follow the package's default recipe: the linear layers of the transformer blocks
# > take the format, the embedding, the lm_head and the norms stay BF16. KV caches are BF16 unless a
# > row says otherwise. An architecture changed for a comparison, or a context past a model's
# > `max_context_tokens`, is a **what-if**. The counting rules are in the docstring of
# > `roofline_lessons.core.costs`.

# %%
# %matplotlib inline
from roofline_lessons import get_model, get_part
from roofline_lessons.core.dtypes import weight_bytes_per_element
from roofline_lessons.core.units import binary, count, duration, num, percent, si
from roofline_lessons.topics.shrinking import (
    DEFAULT_PAGE_TOKENS,
    byte_budget,
    byte_levers,
    critical_batches,
    format_speedup,
    kv_curves,
    mla_forms,
    paged_capacity,
)
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.viz.plots import byte_budget_chart, kv_bytes_vs_context_chart

MODEL, PART = "llama-3.1-70b", "b200"  # the B200 has an FP4 tensor-core rate (section 6)
CONTEXT = 8192  # tokens cached before each decode step
SHORT_CONTEXT = 128  # a short context, where a large batch can turn a decode step compute-bound
KV_CONTEXT = 32768  # the context of the KV comparison
model, part = get_model(MODEL), get_part(PART)

# %% [markdown]
# ## 1. Decode is shopping for bytes
#
# Every decode step reads all the weights once (the whole batch shares them), reads every
# sequence's KV cache and writes one token of it, and moves a little activation traffic.

# %%
setups = {"batch 1": (1, {}), "batch 16": (16, {}), "batch 64": (64, {}),
          "batch 64, int4 weights, FP8 KV": (64, {"weights_dtype": "int4", "kv_dtype": "fp8"})}
budgets = [byte_budget(MODEL, PART, b, CONTEXT, **f) for b, f in setups.values()]
byte_budget_chart([x.placement for x in budgets], list(setups),
                  title=f"{model.name} decode on one {part.name}, {count(CONTEXT)} tokens cached: bytes per step")

# %% jupyter={"source_hidden": true}
one, b16, b64, shrunk = budgets
agree = max(x.step_estimate_s / x.step_lower_bound_s for x in budgets) - 1
assert all(x.placement.bound == x.placement.lower_bound_roof == "memory" for x in budgets)  # by both figures
assert agree < 0.05  # "bound and estimate agree within …"
assert one.shares()["weights"] > b16.shares()["weights"] > b64.shares()["weights"]
assert b64.kv_bytes > b64.weight_bytes and shrunk.placement.fits_in_memory and not b64.placement.fits_in_memory
weights_alone_s = one.weight_bytes / part.memory_bandwidth_bytes_per_s
assert abs(one.step_lower_bound_s * part.memory_bandwidth_bytes_per_s / one.compulsory_bytes - 1) < 1e-9  # memory
md(f"At batch 1 the weights are {percent(one.shares()['weights'], 0)} of the bytes: reading their "
   f"{si(one.weight_bytes, 'B')} at {si(part.memory_bandwidth_bytes_per_s, 'B/s')} takes "
   f"{duration(weights_alone_s)}, and the whole step's {si(one.compulsory_bytes, 'B')} of compulsory bytes take "
   f"{duration(one.step_lower_bound_s)}, its bound. The batch shares the weights but not the KV cache, which at "
   "batch 64 is "
   f"{percent(b64.shares()['KV cache'], 0)} of the bytes — and weights plus cache no longer fit the chip's "
   f"{binary(part.memory_capacity_bytes)}. Every step here is memory-bound, and bound and estimate agree within "
   f"{percent(agree, 0)}. Three levers cut the bytes **per generated token**: a narrower weight format; a smaller "
   "KV cache (a narrower format, or an architecture that caches less per token); more tokens per weight read (a "
   "bigger batch, which shrinks no part of the step but shares the weights among more tokens). The "
   f"last bar pulls two of them: {si(shrunk.total_bytes, 'B')} per step instead of {si(b64.total_bytes, 'B')}, "
   "and it fits.")

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
# Each attention layer caches every token's keys and values so that later tokens can attend to
# them. Five designs keep that history at very different prices:
#
# - **GQA** (grouped-query attention, Llama 3): a few KV heads, each shared by a group of query
#   heads; 2 × KV heads × head_dim elements per token and layer.
# - **MQA** (multi-query attention): one KV head. No catalog model uses it; here it is a
#   **what-if**, Llama-3.1-8B with one KV head.
# - **MLA** (multi-head latent attention, DeepSeek-V3): one compressed **latent** per token and
#   layer (kv_lora_rank elements) plus a small key part that carries the rotary position
#   (qk_rope_head_dim), shared by every head.
# - **Sliding windows** (Gemma 3, gpt-oss): local layers cache only the last `sliding_window`
#   tokens; the global layers between them keep everything.
# - **Hybrid linear attention** (Qwen3.8-27B): most layers are Gated DeltaNet layers whose
#   recurrent state has a fixed size; only the others cache tokens.

# %%
curves = kv_curves(contexts=[2 ** k for k in range(8, 21)])  # 256 → 1M tokens: below and above Gemma's window
kv_bytes_vs_context_chart(curves, title="KV cache per sequence against context, BF16: one panel per idea")

# %% jupyter={"source_hidden": true}
at_kv = {c.label: c.kv_bytes_at(KV_CONTEXT) for c in curves}
gqa8, mqa8 = get_model("llama-3.1-8b"), next(c for c in curves if c.kind == "MQA")
dsv3, gemma, qwen = get_model("deepseek-v3"), get_model("gemma-3-27b"), get_model("qwen3.8-27b")
from roofline_lessons.topics.shrinking import mla_per_head_kv_elements

per_head_kv = mla_per_head_kv_elements(dsv3)  # were K and V cached per head
qwen_state = next(c for c in curves if c.label == qwen.name).state_bytes
state_equals_kv_tokens = qwen_state / qwen.kv_bytes_per_token("bf16")
near = dsv3.kv_bytes_per_token("bf16") / qwen.kv_bytes_per_token("bf16")
assert dsv3.kv_bytes_per_token_per_layer("bf16") == (dsv3.kv_lora_rank + dsv3.qk_rope_head_dim) * 2
assert per_head_kv / dsv3.mla_cache_elements_per_token > 50 and dsv3.head_dim != dsv3.v_head_dim
assert 1 < near < 1.1  # "end up within … of each other"
assert qwen.source.startswith("primary source NOT read") and "third-party transcription" in qwen.source
md(f"One KV head instead of {count(gqa8.num_key_value_heads)} divides the cache by "
   f"{num(at_kv[gqa8.name] / at_kv[mqa8.label])}: {binary(at_kv[mqa8.label])} per {count(KV_CONTEXT)}-token "
   f"sequence against {binary(at_kv[gqa8.name])}. DeepSeek-V3 caches {count(dsv3.kv_lora_rank)} + "
   f"{count(dsv3.qk_rope_head_dim)} = {count(dsv3.mla_cache_elements_per_token)} elements per token and layer, "
   f"{count(dsv3.kv_bytes_per_token_per_layer('bf16'))} bytes in BF16. Per-head K and V — "
   f"{count(dsv3.num_attention_heads)} heads × (a key {count(dsv3.head_dim)} wide + a value "
   f"{count(dsv3.v_head_dim)} wide) — would be {count(per_head_kv)} elements, "
   f"{num(per_head_kv / dsv3.mla_cache_elements_per_token)}× as many: the classic mistake in counting MLA's cache.\n\n"
   "A cache grows in proportion to the context, so its line is straight on log-log axes unless some layers stop "
   f"growing. Gemma-3-27B's bends at its window: below {count(gemma.sliding_window)} tokens all "
   f"{count(gemma.num_hidden_layers)} layers grow, above it only the {count(gemma.num_full_attention_layers)} "
   f"global ones. (Qwen3.8-27B's figures carry a caveat: its catalog entry notes that its primary source, the "
   "model's own config.json, was **not read**; its sizes follow a third-party transcription of that file and a "
   f"sibling model's config.) Its Gated DeltaNet state, {binary(qwen_state)} per sequence, is the flat band: larger "
   f"than the cache of its {count(qwen.num_full_attention_layers)} attention layers up to "
   f"{count(state_equals_kv_tokens)} tokens, negligible beside it at long context. DeepSeek-V3 and Qwen3.8-27B end "
   f"up within {percent(near - 1, 0)} of each other — {count(dsv3.kv_bytes_per_token('bf16'))} and "
   f"{count(qwen.kv_bytes_per_token('bf16'))} bytes per token — by very different routes.")

# %% jupyter={"source_hidden": true}
LONG = 131072
gemma_long = float(gemma.kv_cache_bytes_per_sequence(LONG))
dsv3_long = float(dsv3.kv_cache_bytes_per_sequence(LONG))
assert gemma_long > dsv3_long  # the question rests on it
md(f"**Question.** At {count(LONG)} tokens, Gemma-3-27B's cache ({binary(gemma_long)}) is larger than "
   f"DeepSeek-V3's ({binary(dsv3_long)}), a model {num(dsv3.parameter_count() / gemma.parameter_count())} times its "
   "size with windows in none of its layers. Why?")

# %% jupyter={"source_hidden": true}
gemma_per_layer = gemma.kv_bytes_per_token_per_layer("bf16")
global_long = gemma.num_full_attention_layers * gemma_per_layer * LONG
md("<details><summary>Answer</summary>\n\n"
   f"Windows cap only the local layers. Gemma's {count(gemma.num_full_attention_layers)} global layers each cache "
   f"{count(gemma_per_layer)} bytes per token ({count(gemma.num_key_value_heads)} KV heads × "
   f"{count(gemma.head_dim)} × 2 for K and V × 2 bytes), "
   f"{num(gemma_per_layer / dsv3.kv_bytes_per_token_per_layer('bf16'))} times DeepSeek-V3's latent per layer; at "
   f"{count(LONG)} tokens those global layers alone hold {binary(global_long)}, "
   f"{percent(global_long / gemma_long, 0)} of its cache. DeepSeek-V3 has {count(dsv3.num_mla_layers)} layers, "
   "but each is cheap per token.\n\n</details>")

# %% [markdown]
# ## 3. MLA in decode: absorbed, not expanded
#
# MLA's attention can run two ways. **Expanded**: `kv_b_proj` turns every cached latent into
# per-head keys (their no-rope part) and values, and ordinary attention runs over all the heads.
# **Absorbed**: the key up-projection is folded into each head's query and the value
# up-projection is applied after attention, so attention runs **in the latent space** and reads
# only the latent. Both give the same answer. One decode step of DeepSeek-V3's attention, all
# layers, batch 1:

# %%
forms = mla_forms("deepseek-v3", contexts=(1024, 32768, 131072))
show_table(["tokens cached", "absorbed: FLOPs", "expanded: FLOPs", "absorbed: bytes (unfused, estimate)",
            "expanded: bytes (unfused, estimate)"],
           [[count(t), si(fa, "FLOP"), si(fe, "FLOP"), si(ba, "B"), si(be, "B")] for t, fa, fe, ba, be
            in zip(forms.context_tokens, forms.absorbed_flops, forms.expanded_flops, forms.absorbed_bytes,
                   forms.expanded_bytes)])

# %% jupyter={"source_hidden": true}
from roofline_lessons.core.costs import model_cost

PROMPT = 4096
pre_absorbed = model_cost(dsv3, phase="prefill", prompt_tokens=PROMPT, mla_absorbed=True)
pre_expanded = model_cost(dsv3, phase="prefill", prompt_tokens=PROMPT, mla_absorbed=False)
absorbed_pair = 2 * dsv3.mla_cache_elements_per_token + 2 * dsv3.kv_lora_rank  # FLOPs per head per query-key pair
expanded_pair = 2 * (dsv3.qk_nope_head_dim + dsv3.qk_rope_head_dim) + 2 * dsv3.v_head_dim
assert (forms.expanded_flops > forms.absorbed_flops).all() and (forms.expanded_bytes > forms.absorbed_bytes).all()
assert (forms.flops_ratio[1:] > forms.flops_ratio[:-1]).all()  # the gap widens with context
assert pre_expanded.block_total("mla", "flops") < pre_absorbed.block_total("mla", "flops")
assert (abs(forms.expanded_compulsory_bytes / forms.absorbed_compulsory_bytes - 1) < 1e-9).all()  # the same bytes
md(f"Expanded decode re-expands **every cached latent, every step**: {num(forms.flops_ratio[0])}× the absorbed "
   f"FLOPs at {count(forms.context_tokens[0])} tokens, {num(forms.flops_ratio[-1])}× at "
   f"{count(forms.context_tokens[-1])}. The bytes in the table are the estimate's unfused view, in which the "
   "expanded keys and values also go through HBM; the compulsory bytes — the latents and the block's weights — are "
   f"the same in both forms ({si(forms.absorbed_compulsory_bytes[-1], 'B')} at the longest): a fused kernel keeps "
   "the expanded keys and values on chip, but cannot avoid the FLOPs. Absorbed decode grows with the context "
   "too — attention itself does — but reads only the latent. So decode runs **absorbed**, as serving engines run "
   "it; the package does the same (`mla_absorbed=None`: absorbed in decode, expanded in prefill).\n\n"
   "Prefill turns the choice around: each prompt token's latent is expanded **once** and then serves every later "
   f"query, and an expanded query–key pair costs {count(expanded_pair)} FLOPs per head against "
   f"{count(absorbed_pair)} in the latent space. For a {count(PROMPT)}-token prompt that is "
   f"{si(pre_expanded.block_total('mla', 'flops'), 'FLOP')} expanded against "
   f"{si(pre_absorbed.block_total('mla', 'flops'), 'FLOP')} absorbed.")

# %% jupyter={"source_hidden": true}
md("**Question.** An engine that runs MLA expanded in decode, as in prefill, serves a long-context chat. What "
   "happens to its decode steps as the conversation grows, compared with absorbed decode?")

# %% jupyter={"source_hidden": true}
exp_compute, exp_memory = (t[-1] for t in (forms.compute_time_s(part, "expanded"),
                                             forms.memory_lower_bound_s(part, "expanded")))
abs_bound, exp_bound = forms.lower_bound_s(part)[-1], forms.lower_bound_s(part, "expanded")[-1]
assert abs_bound == forms.memory_lower_bound_s(part)[-1] and exp_bound == exp_compute  # memory- / compute-bound
md("<details><summary>Answer</summary>\n\n"
   f"Each step re-expands the whole history: its FLOPs grow with the context ({si(forms.expanded_flops[0], 'FLOP')} "
   f"at {count(forms.context_tokens[0])} tokens, {si(forms.expanded_flops[-1], 'FLOP')} at "
   f"{count(forms.context_tokens[-1])}, all layers, batch 1). Its compulsory bytes are absorbed decode's: the "
   f"same latents and weights, {si(forms.expanded_compulsory_bytes[-1], 'B')} at the longest (the "
   f"table's {si(forms.expanded_bytes[-1], 'B')} is the estimate's unfused view, the expanded keys and values "
   "written to HBM and read back). The cost is time. Priced on one chip, the "
   f"{part.name} (the whole model needs several; one chip's rates show which time binds), the block's FLOPs at its "
   f"dense BF16 peak take {duration(exp_compute)} against {duration(exp_memory)} for its compulsory bytes at "
   f"{si(part.memory_bandwidth_bytes_per_s, 'B/s')}: the block's bound rises from {duration(abs_bound)} absorbed "
   f"(memory-bound) to {duration(exp_bound)} expanded (compute-bound), {num(exp_bound / abs_bound)}×. Absorbed "
   "decode reads only the latent: the cache MLA was designed to shrink.\n\n</details>")

# %% [markdown]
# ## 4. What a 4-bit weight costs
#
# A 4-bit weight needs a scale: sixteen levels cannot span a layer's range on their own, so small
# groups of weights share one.

# %% jupyter={"source_hidden": true}
from roofline_lessons.core.dtypes import DEFAULT_WEIGHT_GROUP, WEIGHT_SCALE_BYTES

md(f"**int4**, as the package prices it: groups of {count(DEFAULT_WEIGHT_GROUP['int4'])} weights along the input "
   f"dimension, each sharing **one bf16 scale** ({num(WEIGHT_SCALE_BYTES['int4'])} bytes), **symmetric**: no zero "
   f"point. **MXFP4** (`fp4`, the OCP microscaling format) stores E2M1 4-bit floats (1 sign, 2 exponent and 1 "
   f"mantissa bit) in blocks of "
   f"{count(DEFAULT_WEIGHT_GROUP['fp4'])} with one power-of-two scale of {num(WEIGHT_SCALE_BYTES['fp4'])} byte. "
   "The **embedding, the lm_head and the norms stay BF16**: a small share of most models' parameters, sensitive to "
   "error, and the embedding is read a row at a time anyway. A weight costs its bits plus its share of a scale:")

# %%
formats = [("bf16", None), ("fp8", None), ("int4", 128), ("int4", 32), ("fp4", 32)]
show_table(["format", "group", "bytes per weight", "BF16 ÷ it"],
           [["MXFP4 (fp4)" if d == "fp4" else d, count(g) if g else "—", num(weight_bytes_per_element(d, g), 6),
             f"{num(2 / weight_bytes_per_element(d, g))}×"] for d, g in formats])

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.shrinking import stored_weights

int4_b = weight_bytes_per_element("int4", DEFAULT_WEIGHT_GROUP["int4"])
llama_int4 = stored_weights(MODEL, "int4")
assert int4_b == 0.5 + WEIGHT_SCALE_BYTES["int4"] / DEFAULT_WEIGHT_GROUP["int4"]
assert llama_int4.ratio < 2 / int4_b  # the BF16 layers keep the model under the per-weight ratio
md(f"A whole model gains less than one weight: {model.name} takes {binary(llama_int4.bf16_bytes)} in BF16 and "
   f"{binary(llama_int4.bytes)} in int4, {num(llama_int4.ratio)}× rather than {num(2 / int4_b)}×, because its "
   "embedding, lm_head and norms are still BF16.")

# %% jupyter={"source_hidden": true}
h200 = get_part("h200")
NODE = 8
md(f"**Question.** Do DeepSeek-V3's weights fit one node of {count(NODE)} H200s ({binary(h200.memory_capacity_bytes)} "
   "each) in BF16? In int4?")

# %% jupyter={"source_hidden": true}
node_bytes = NODE * h200.memory_capacity_bytes
dsv3_stored, dsv3_fp8 = stored_weights("deepseek-v3", "int4"), stored_weights("deepseek-v3", "fp8")
assert dsv3_fp8.recipe == "linear"
md("<details><summary>Answer</summary>\n\n"
   f"The node holds {binary(node_bytes)}. BF16 needs {binary(dsv3_stored.bf16_bytes)}: "
   + ("it fits" if dsv3_stored.bf16_bytes < node_bytes else "**it does not fit**")
   + f". int4 needs {binary(dsv3_stored.bytes)}: "
   + (f"it fits, leaving {binary(node_bytes - dsv3_stored.bytes)} (before the runtime's share) for the KV cache"
      if dsv3_stored.bytes < node_bytes else "it does not fit either")
   + f". DeepSeek released FP8 weights; under the default 8-bit recipe they take {binary(dsv3_fp8.bytes)}, which "
   + ("fits" if dsv3_fp8.bytes < node_bytes else "does not fit")
   + ". How many sequences that room holds depends on the layout: *Going further* works it out.\n\n</details>")

# %% [markdown]
# ## 5. 4-bit weights at batch 1: the speed-up
#
# With **weight-only** int4 (W4A16) the weights are read in 4 bits and dequantised to BF16 on the
# fly; the matmuls still run in BF16. BF16 ÷ int4 at batch 1, counting more and more of what the
# step reads:

# %%
sb = format_speedup(MODEL, PART, CONTEXT)  # batch 1, BF16 and int4 weights, both from place()
ladder = [("16 bits ÷ 4 bits", 16 / 4), ("bytes per weight, its scale included", sb.element_ratio),
          ("weight bytes read per step (BF16 embedding row, lm_head and norms)", sb.weight_bytes_ratio),
          ("the step, bound ÷ bound (KV cache, token ids and logits unchanged)", sb.speedup_of_bounds)]
show_table(["BF16 ÷ int4, counting …", "ratio"], [[what, f"{num(r)}×"] for what, r in ladder])

# %% jupyter={"source_hidden": true}
assert all(a[1] > b[1] for a, b in zip(ladder, ladder[1:]))  # each honest step lowers the ratio
assert all(p.bound == p.lower_bound_roof == "memory" for p in (sb.bf16, sb.quantized))
assert float(sb.quantized.dequant_time_s) < float(sb.quantized.memory_lower_bound_s)  # it sets no bound
assert float(sb.quantized.compute_time_s) < float(sb.quantized.memory_lower_bound_s)  # hidden even added in series
assert abs(sb.speedup_of_bounds / sb.speedup_estimate - 1) < 0.01  # at batch 1 the two figures agree
md(f"The speed-up is **{num(sb.speedup_of_bounds)}×** bound against bound (the estimates give "
   f"{num(sb.speedup_estimate)}×), not 16 ÷ 4: the scales cost {num(int4_b - 0.5, 3)} byte per weight, the BF16 "
   f"layers are read at full width, and int4 weights leave the rest of the compulsory bytes — the KV cache, the "
   f"token ids and the logits — as they were ({si(sb.other_bytes(compulsory=True), 'B')} per step). The "
   f"dequantisation, {duration(sb.quantized.dequant_time_s)}, hides "
   f"under the {duration(sb.quantized.memory_lower_bound_s)} of memory time whether overlapped or added: at batch 1 "
   "it is free. A ratio of two bounds is not itself a bound: it is what int4 gains when both kernels reach their "
   "bounds.")

# %% jupyter={"source_hidden": true}
LONG_CHAT = model.max_context_tokens - 1  # the new token is the last the model's context holds
md(f"**Question.** The same batch-1 step with {count(LONG_CHAT)} tokens cached, the longest context at which "
   f"{model.name}'s limit of {count(model.max_context_tokens)} tokens still holds the new one: does the speed-up of "
   "int4 weights rise or fall?")

# %% jupyter={"source_hidden": true}
sb_long = format_speedup(MODEL, PART, LONG_CHAT)
assert float(sb_long.quantized.dequant_time_s) < float(sb_long.quantized.memory_lower_bound_s)  # sets no bound
assert not (sb_long.bf16.context_beyond_model or sb_long.quantized.context_beyond_model)  # within the limit
long_other = sb_long.other_bytes(compulsory=True)
md("<details><summary>Answer</summary>\n\n"
   f"It {'falls' if sb_long.speedup_of_bounds < sb.speedup_of_bounds else 'rises'}, to "
   f"{num(sb_long.speedup_of_bounds)}× bound against bound ({num(sb_long.speedup_estimate)}× by the estimates): the "
   f"KV cache, the token ids and the logits, {si(long_other, 'B')} per step, are now "
   f"{percent(long_other / float(sb_long.quantized.cost.compulsory_bytes), 0)} of the int4 step's compulsory bytes, "
   "and the weight format does not touch them. At long context the KV levers matter more.\n\n</details>")

# %% [markdown]
# ## 6. The critical batch moves — in opposite directions
#
# The critical batch is the first batch at which the step turns compute-bound (lesson 4). Two
# 4-bit recipes move it in opposite directions:
#
# - **weight-only int4** (W4A16): fewer weight bytes, the **same** BF16 matmul roof;
# - **W4A4** (MXFP4 weights and FP4 matmuls, on a part with an FP4 tensor-core rate): fewer bytes
#   **and** a higher roof.
#
# The **weight lens** counts only the weight matmuls' FLOPs per weight byte; **all traffic**
# counts every byte the step moves.

# %%
sweeps = critical_batches(MODEL, PART, SHORT_CONTEXT)  # BF16, int4 weight-only and W4A4, batch 1 … 4,096
show_table(["format", "matmul roof (dense, no sparsity)", "weight lens: bound",
            f"all traffic, {count(SHORT_CONTEXT)} cached: bound",
            "… estimate"],
           [[s.label, si(s.matmul_peak_flops_per_s, "FLOP/s"), count(s.weight_lens_critical_batch_lower_bound),
             count(s.critical_batch_lower_bound), count(s.critical_batch_estimate)] for s in sweeps])

# %% jupyter={"source_hidden": true}
bf16_sw, int4_sw, w4a4_sw = sweeps
wl_bf16, wl_int4, wl_w4a4 = (s.weight_lens_critical_batch_lower_bound for s in sweeps)
lb_bf16, lb_int4, lb_w4a4 = (s.critical_batch_lower_bound for s in sweeps)
weight_ratio = sb.weight_bytes_ratio  # BF16 weight bytes ÷ int4's (section 5)
w4a4_at_lb = byte_budget(MODEL, PART, lb_w4a4, SHORT_CONTEXT, weights_dtype="fp4", compute_dtype="fp4")
bf16_at_lb = byte_budget(MODEL, PART, lb_bf16, SHORT_CONTEXT)
not_weights = lambda x: 1 - x.weight_bytes / x.compulsory_bytes  # KV cache, ids and logits: compulsory, not weights
# the bound: int4's matmul roof and ridge are BF16's ("the same roof"), so only the weight bytes moved
assert int4_sw.matmul_peak_flops_per_s == bf16_sw.matmul_peak_flops_per_s < w4a4_sw.matmul_peak_flops_per_s
assert int4_sw.ridge_point_lower_bound_flop_per_byte[wl_int4 - 1] == bf16_sw.ridge_point_lower_bound_flop_per_byte[0]
assert abs(wl_int4 - wl_bf16 / weight_ratio) < 1.5
assert abs(wl_w4a4 / wl_bf16 - 1) < 0.25  # weight lens: W4A4 stays near BF16
never = critical_batches(MODEL, PART, CONTEXT)  # the same three at 8,192 tokens cached
assert lb_int4 < lb_bf16 < lb_w4a4 and not_weights(w4a4_at_lb) > not_weights(bf16_at_lb) + 0.1
assert all(s.critical_batch_estimate != s.critical_batch_lower_bound for s in sweeps)  # "move every figure"
assert all(s.memory_bound_at_every_batch_lower_bound and s.critical_batch_estimate is None for s in never)
md(f"**Through the weight lens**, int4's critical batch falls from {count(wl_bf16)} to **{count(wl_int4)}** by the "
   f"bound: its weight bytes fell {num(weight_ratio)}× ({count(wl_bf16)} ÷ {num(weight_ratio)} ≈ "
   f"{num(wl_bf16 / weight_ratio, 3)}) under the same ridge, so the matmuls reach it sooner. W4A4 stays near BF16, "
   f"**{count(wl_w4a4)}**: its weight bytes fell about as much as its roof rose "
   f"({num(w4a4_sw.matmul_peak_flops_per_s / bf16_sw.matmul_peak_flops_per_s)}×).\n\n"
   f"**Through all the traffic**, by the bound, int4 turns at {count(lb_int4)}, BF16 at {count(lb_bf16)} and W4A4 "
   f"at **{count(lb_w4a4)}**: W4A4's rises because the BF16 KV cache, which it does not shrink, grows with the "
   f"batch — with the ids and logits, {percent(not_weights(w4a4_at_lb), 0)} of the compulsory bytes at W4A4's "
   f"critical batch against {percent(not_weights(bf16_at_lb), 0)} at BF16's. The estimate's conventions move every "
   f"figure (the last column); at {count(CONTEXT)} tokens cached no format turns compute-bound at any batch. "
   "*Going further* takes both apart.")

# %% jupyter={"source_hidden": true}
SERVICE_BATCH = 256
md(f"**Question.** A short-prompt service runs {model.name} at batch {count(SERVICE_BATCH)} with about "
   f"{count(SHORT_CONTEXT)} tokens cached on B200s. Should it switch from BF16 to weight-only int4 weights for speed?")

# %% jupyter={"source_hidden": true}
i = SERVICE_BATCH - 1
gain_est = bf16_sw.step_estimate_s[i] / int4_sw.step_estimate_s[i]
gain_lb = bf16_sw.step_lower_bound_s[i] / int4_sw.step_lower_bound_s[i]
gain_1 = bf16_sw.step_lower_bound_s[0] / int4_sw.step_lower_bound_s[0]
tensor_share = bf16_sw.tensor_time_s[i] / bf16_sw.step_lower_bound_s[i]
BARELY = 1.1  # "barely faster": under a 10 % gain
assert max(gain_est, gain_lb) < gain_1 / 2  # "far less than at batch 1": under half its speed-up
assert tensor_share > 0.8  # "close to its compute roof"
assert not int4_sw.dequant_sets_lower_bound[i]  # the dequantisation's convention sets no bound here
md("<details><summary>Answer</summary>\n\n"
   + ("Barely" if max(gain_est, gain_lb) < BARELY else "It gains far less than at batch 1")
   + f". By the bounds the step goes from {duration(bf16_sw.step_lower_bound_s[i])} to "
   f"{duration(int4_sw.step_lower_bound_s[i])}, {num(gain_lb)}×; by the estimates from "
   f"{duration(bf16_sw.step_estimate_s[i])} to {duration(int4_sw.step_estimate_s[i])}, {num(gain_est)}× — against "
   f"{num(gain_1)}× at batch 1 with the same {count(SHORT_CONTEXT)} tokens cached (section 5's "
   f"{num(sb.speedup_of_bounds)}× was at {count(CONTEXT)}). The BF16 step is close to its compute roof there — its "
   f"tensor-core time is {percent(tensor_share, 0)} of its lower bound — and int4 does not raise that roof. Beyond "
   "that gain, the reasons to switch at this batch are memory (room for more sequences) or W4A4 on a part with FP4 "
   "tensor cores.\n\n</details>")

# %% [markdown]
# ## 7. Which lever moves which part
#
# Each lever alone, and what it does to the bytes **per generated token** (the step's bytes ÷ the
# batch). The architecture levers are what-ifs built on the same model: they would need retraining.

# %%
LEVER_BATCH = 16
levers = byte_levers(MODEL, PART, batch=LEVER_BATCH, context_tokens=CONTEXT)  # BF16 weights and KV cache
show_table(["lever", "moves", "largest cut, per token", "faster per token (bounds)"],
           [[lv.display_name, ", ".join(lv.moves),
             f"{lv.main_part} −{percent(-lv.change()[lv.main_part], 0)}", f"{num(lv.speedup_of_bounds)}×"]
            for lv in levers])

# %% jupyter={"source_hidden": true}
hybrid = next(lv for lv in levers if lv.lever.startswith("hybrid"))
batching = next(lv for lv in levers if lv.lever.startswith("batching"))
assert all(lv.moves == ("weights",) for lv in levers if "weights" in lv.lever or lv.lever.startswith("batching"))
assert all(lv.moves == ("KV cache",) for lv in levers if "KV cache" in lv.lever)
assert all(lv.main_part == "KV cache" for lv in levers if lv.what_if) and "state" in hybrid.moves
assert all(lv.change()[lv.main_part] < 0 for lv in levers)  # the "largest cut" is a cut
assert all(lv.fits_in_memory for lv in levers if lv is not batching) and not batching.fits_in_memory
assert batching.after.step_lower_bound_s > batching.before.step_lower_bound_s  # "each step is slower"
batch_fp = batching.after.placement.footprint
md(f"The baseline is {model.name} on the {part.name}, BF16, batch {count(LEVER_BATCH)}, {count(CONTEXT)} tokens "
   "cached. Weight formats move the weights, KV formats the cache. The architecture what-ifs all cut the KV cache "
   "most, and the hybrid one trades part of it for a recurrent state, read and written every step "
   f"({si(hybrid.after.parts_per_token()['state'], 'B')} per token). Batching shrinks nothing: it spreads the same "
   f"weights over more tokens, {percent(-batching.change()['weights'], 0)} fewer weight bytes per token, and leaves "
   f"each sequence's cache as it was. Its {num(batching.speedup_of_bounds)}× is throughput, tokens per second "
   f"across the batch; each step is slower, {duration(batching.before.step_lower_bound_s)} → "
   f"{duration(batching.after.step_lower_bound_s)} by the bound. And it is a what-if here: batch "
   f"{count(batching.after.batch)} at {count(CONTEXT)} tokens cached needs {binary(batch_fp.weight_bytes)} of "
   f"weights and {binary(batch_fp.kv_cache_bytes)} of KV cache on a {binary(part.memory_capacity_bytes)} chip.")

# %% jupyter={"source_hidden": true}
md("**Question.** Batching aside, which lever helps this baseline most, and why does it beat every KV lever here "
   "(the architecture what-ifs included)?")

# %% jupyter={"source_hidden": true}
deployable = lambda effects: [lv for lv in effects if not lv.lever.startswith("batching") and not lv.what_if]
ranked = lambda effects, figure: max(effects, key=lambda lv: getattr(lv, figure))
bigger_levers = byte_levers(MODEL, PART, batch=4 * LEVER_BATCH, context_tokens=CONTEXT)
best = ranked(deployable(levers), "speedup_of_bounds")
bigger_batch = ranked(deployable(bigger_levers), "speedup_of_bounds")
best_what_if = ranked([lv for lv in bigger_levers if lv.what_if], "speedup_of_bounds")
base_shares = levers[0].before.shares()
assert best.speedup_of_bounds >= max(lv.speedup_of_bounds for lv in levers if not lv.lever.startswith("batching"))
assert best.main_part == "weights" and bigger_batch.main_part == "KV cache"  # the order flips with the batch
assert not bigger_batch.before.placement.fits_in_memory  # the bigger batch's baseline is itself a what-if
md("<details><summary>Answer</summary>\n\n"
   f"**{best.lever}**, {num(best.speedup_of_bounds)}× per token by the bounds: at batch {count(LEVER_BATCH)} and "
   f"{count(CONTEXT)} tokens the weights are {percent(base_shares['weights'], 0)} of the step's bytes and the KV "
   f"cache {percent(base_shares['KV cache'], 0)}, so shrinking the weights removes more bytes than even the largest "
   f"KV cut. The order depends on the batch: at batch {count(bigger_batch.before.batch)} — a what-if on one "
   f"{part.name}, where BF16 weights and that cache do not fit (section 1) — the best format lever is "
   f"**{bigger_batch.lever}**, {num(bigger_batch.speedup_of_bounds)}×, because the cache has become the larger part "
   f"(of the retraining what-ifs, {best_what_if.lever}, {num(best_what_if.speedup_of_bounds)}×).\n\n</details>")

# %% [markdown]
# ## 8. Paged KV and sliding windows: allocate per layer kind
#
# Serving engines store the KV cache in **pages** (vLLM's PagedAttention: blocks of a few tokens of
# one layer's K and V), so that sequences of any length share one pool with little fragmentation
# (the last page of each sequence is half-filled on average). A
# **uniform** allocator gives every layer of a sequence the same pages, ceil(context ÷ page) of
# them; a local layer never holds more than its window, so for a sliding-window model it reserves
# pages that stay empty. Allocating **per layer kind** gives each local layer only the pages its
# window spans.

# %% jupyter={"source_hidden": true}
from roofline_lessons.core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION as UTILIZATION  # vLLM's default share
md(f"Pages of {count(DEFAULT_PAGE_TOKENS)} tokens and {percent(UTILIZATION, 0)} of the memory, vLLM's defaults; "
   "gpt-oss-120b stored as shipped (MXFP4 experts):")

# %%
cases = [("gemma-3-27b", "h100-sxm", {}),
         ("gpt-oss-120b", "h200", {"weights_dtype": "fp4", "quantized_weights": "experts"})]
paged = [paged_capacity(m, p, t, DEFAULT_PAGE_TOKENS, memory_utilization=UTILIZATION, **f)
         for m, p, f in cases for t in (8192, KV_CONTEXT, 131072)]
show_table(["model on part", "tokens per sequence", "sequences: uniform", "sequences: per kind", "uniform loses"],
           [[f"{c.model.name} on {c.part.name}", count(c.context_tokens), count(c.uniform_sequences),
             count(c.per_kind_sequences), percent(c.uniform_loss, 0)] for c in paged])

# %% jupyter={"source_hidden": true}
gemma_losses = [c.uniform_loss for c in paged[:3]]
oss_losses = [c.uniform_loss for c in paged[3:]]
g32 = paged[1]
assert all(c.uniform_sequences <= c.per_kind_sequences and c.uniform_loss > 0 for c in paged)
assert min(gemma_losses) > 0.5 and all(0.35 < x < 0.6 for x in oss_losses)  # "most" for Gemma, "about half" for gpt-oss
md(f"At {count(g32.context_tokens)} tokens a uniform allocator fits {count(g32.uniform_sequences)} Gemma-3-27B "
   f"sequence{'s' if g32.uniform_sequences != 1 else ''} on the {g32.part.name}; per layer kind, "
   f"{count(g32.per_kind_sequences)}. A small cache only turns into more sequences when the allocator knows which "
   f"layers slide. The uniform allocator loses {percent(min(gemma_losses), 0)} to {percent(max(gemma_losses), 0)} "
   f"of Gemma's sequences — most of them — but {percent(min(oss_losses), 0)} to {percent(max(oss_losses), 0)} of "
   "gpt-oss's, about half. The per-kind counts are at most what these settings allow under the nominal capacity; "
   "a real engine fits fewer (*Going further*).")

# %% jupyter={"source_hidden": true}
oss = get_model("gpt-oss-120b")
md(f"**Question.** gpt-oss-120b's window is {count(oss.sliding_window)} tokens, Gemma-3-27B's "
   f"{count(gemma.sliding_window)}. Why then does the uniform allocator lose a smaller share of gpt-oss's "
   "capacity?")

# %% jupyter={"source_hidden": true}
byte_cut = lambda c: 1 - c.per_kind_bytes_per_sequence / c.uniform_bytes_per_sequence  # bytes per sequence saved
slide_share = lambda m: m.num_sliding_attention_layers / (m.num_sliding_attention_layers + m.num_full_attention_layers)
g_cuts = [byte_cut(c) for c in paged[:3]]
assert all(byte_cut(c) < slide_share(c.model) for c in paged)  # the cap holds on bytes per sequence
assert max(gemma_losses) > max(g_cuts) and paged[2].uniform_sequences == 0  # counts lose more: rounding down
md("<details><summary>Answer</summary>\n\n"
   "Because the saving is capped by the share of layers that slide — a cap on the **bytes per sequence**. gpt-oss "
   f"alternates: {count(oss.num_sliding_attention_layers)} of its {count(oss.num_hidden_layers)} layers are local, "
   "so even a zero-sized window could at most halve its cache; Gemma has "
   f"{count(gemma.num_sliding_attention_layers)} local layers in {count(gemma.num_hidden_layers)}, a cap of "
   f"{percent(slide_share(gemma), 0)}. Per sequence, Gemma's per-kind pages save {percent(min(g_cuts), 0)} to "
   f"{percent(max(g_cuts), 0)} of the uniform allocator's bytes. The table counts whole sequences, and rounding "
   "down makes the uniform count lose more than the bytes do: at "
   f"{count(paged[2].context_tokens)} tokens the pool holds "
   f"{num(paged[2].pool_bytes / paged[2].uniform_bytes_per_sequence, 2)} of a uniform sequence, so none fits, a "
   f"{percent(paged[2].uniform_loss, 0)} loss. A small window helps little when half the layers keep every "
   "token.\n\n</details>")

# %% [markdown]
# ## Explore: the byte-budget dashboard
#
# Pick a model, a part, the context, the weight format (BF16, FP8, int4, MXFP4 weight-only, FP4
# W4A4), the KV format and the batch. The chart stacks the bytes of one decode step against the
# BF16 step's and places both on the part's roofline. Try: Llama-3.1-70B on a B200 at batch 1
# through every weight format (how close to 4× does int4 get?); the same at batch 256 with 128
# tokens cached (which format is compute-bound?); Gemma-3-27B and DeepSeek-V3 at 64K tokens cached
# with BF16 and FP8 KV (which part is left?). At 128K cached the new token takes Gemma past its
# maximum context: the dashboard marks that a what-if.

# %%
from roofline_lessons.viz.dashboards import lesson12_dashboard

dashboard = lesson12_dashboard(MODEL, PART)  # the settings the prompt above names: Llama-3.1-70B on a B200

# %% [markdown]
# ## Summary
#
# - A decode step moves the weights once, every sequence's KV cache, any recurrent state and a
#   little activation traffic. At batch 1 the weights dominate; as the batch and the context grow,
#   the KV cache does.
# - KV bytes per token and layer: GQA 2 × KV heads × head_dim elements; MQA one KV head; MLA one
#   latent of kv_lora_rank + qk_rope_head_dim elements shared by every head (not per-head K and V);
#   a sliding-window layer caches at most its window, the global layers every token; a Gated
#   DeltaNet layer caches nothing and keeps a constant state instead.
# - MLA runs **absorbed** in decode (expanded decode re-expands the whole history every step) and
#   **expanded** in prefill (each latent expanded once; cheaper query–key pairs).
# - An int4 weight costs 0.5 byte plus its group's share of a scale; MXFP4 likewise, with a
#   power-of-two scale per block. The embedding, the lm_head and the norms usually stay BF16.
# - The batch-1 speed-up of 4-bit weights is below 16 bits ÷ 4 bits: scales, BF16 layers, and a KV
#   cache (with the token ids and logits) that the weight format does not touch.
# - Weight-only int4 keeps the matmul roof and lowers the critical batch (by the bound, BF16's ÷ the
#   weight-byte ratio); W4A4 raises the roof, keeps the weight lens near BF16's and raises the
#   all-traffic critical batch. The estimate, adding the dequantisation in series, turns int4
#   compute-bound sooner and, at short context, becomes slower than BF16 at a large enough batch; at
#   long context the KV cache keeps both memory-bound and it never does. By the bound int4 is never
#   the slower.
# - A paged KV allocator must allocate per layer kind: full-context pages for sliding-window layers
#   throw away the memory the windows saved.
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
# The exercises for this lesson are in `exercises/12_shrinking_the_bytes.ipynb`. The sections
# below go further: every column, both figures, and how vLLM implements what the main text prices.

# %% [markdown]
# ## Going further: the byte budget in numbers
#
# Section 1's bars, part by part, with both figures. The estimate reads every unfused byte; the
# bound reads only the compulsory ones:

# %%
show_table(["setup", "weights", "KV cache (read + written)", "activations (unfused)", "bytes per step",
            "compulsory bytes", "step: lower bound", "step: estimate", f"fits {binary(part.memory_capacity_bytes)}"],
           [[name, si(x.weight_bytes, "B"), si(x.kv_bytes, "B"), si(x.activation_bytes, "B"), si(x.total_bytes, "B"),
             si(x.compulsory_bytes, "B"), duration(x.step_lower_bound_s), duration(x.step_estimate_s),
             "yes" if x.placement.fits_in_memory else "**no** (a what-if)"] for name, x in zip(setups, budgets)])

# %% jupyter={"source_hidden": true}
assert all(x.compulsory_bytes < x.total_bytes for x in budgets)
md("The activations the estimate adds are a small share of the bytes at this context, "
   f"{percent(max(x.activation_bytes / x.total_bytes for x in budgets), 1)} at most, which is why the two figures "
   "lie so close here. At batch 64 the BF16 step does not fit the chip: its figures are a what-if.")

# %% [markdown]
# ## Going further: the KV comparison in full
#
# Every model's caching layers by kind, at 32K tokens (`kv_table`):

# %%
from roofline_lessons.topics.shrinking import kv_table, mla_per_head_kv_elements

rows = kv_table(context_tokens=KV_CONTEXT)
show_table(["model", "kind", "layers caching every token", "window layers (window)", "Gated DeltaNet layers",
            "bytes per token per caching layer", "bytes per token, all caching layers",
            f"KV at {count(KV_CONTEXT)} tokens", "recurrent state per sequence (DeltaNet + conv)"],
           [[r.label, r.kind, count(r.full_layers),
             f"{count(r.window_layers)} ({count(r.window_tokens)} tokens)" if r.window_layers else "—",
             count(r.deltanet_layers) if r.deltanet_layers else "—", count(r.bytes_per_token_per_layer),
             count(r.bytes_per_token), binary(r.kv_bytes), binary(r.state_bytes) if r.state_bytes else "—"]
            for r in rows])

# %% jupyter={"source_hidden": true}
mla_row = next(r for r in rows if r.label == dsv3.name)
paper_mha = 2 * dsv3.num_attention_heads * dsv3.v_head_dim  # the DeepSeek-V2 paper's MHA baseline, d_h = 128
assert not any(r.beyond_limit for r in rows)  # 32K is within every model's limit
assert mla_row.bytes_per_token_per_layer == (dsv3.kv_lora_rank + dsv3.qk_rope_head_dim) * 2
assert per_head_kv == dsv3.num_attention_heads * (dsv3.head_dim + dsv3.v_head_dim)  # K (nope + rope) and V
assert all(abs(r.kv_bytes - at_kv[r.label]) < 1 for r in rows)  # the table and the chart agree
md("Two more ways to miscount MLA. The DeepSeek-V2 paper compares MLA with multi-head attention at "
   f"2 × heads × d_h elements per token and layer, d_h = {count(dsv3.v_head_dim)}: {count(paper_mha)} elements, "
   f"{num(paper_mha / dsv3.mla_cache_elements_per_token, 2)}× the latent — a different baseline from the per-head "
   f"K and V of section 2, whose keys are wider than its values. And the config's `num_key_value_heads = "
   f"{count(dsv3.num_key_value_heads)}` is the number of heads the keys are expanded to, not what is cached. "
   "Hugging Face's reference modelling code does cache the expanded per-head K and V: no re-expansion, but a "
   f"cache {num(per_head_kv / dsv3.mla_cache_elements_per_token)}× the latent — it gives up what MLA was built for.")

# %% [markdown]
# ## Going further: MLA in prefill, vLLM's two forms, and DeepSeek-V3's size

# %%
def mla_block_bound_s(cost):
    """The MLA block's lower bound on one chip: its FLOPs at the dense BF16 peak or its compulsory bytes at the
    bandwidth, whichever takes longer (seconds)."""
    return max(cost.block_total("mla", "flops") / part.peak_flops_per_s("bf16"),
               cost.block_total("mla", "compulsory_bytes") / part.memory_bandwidth_bytes_per_s)


show_table([f"prefill of a {count(PROMPT)}-token prompt, all MLA layers", "absorbed", "expanded"],
           [["FLOPs", si(pre_absorbed.block_total("mla", "flops"), "FLOP"),
             si(pre_expanded.block_total("mla", "flops"), "FLOP")],
            ["bytes (unfused, estimate)", si(pre_absorbed.block_total("mla", "bytes"), "B"),
             si(pre_expanded.block_total("mla", "bytes"), "B")],
            ["compulsory bytes", si(pre_absorbed.block_total("mla", "compulsory_bytes"), "B"),
             si(pre_expanded.block_total("mla", "compulsory_bytes"), "B")],
            [f"lower bound, priced on one {part.name}", duration(mla_block_bound_s(pre_absorbed)),
             duration(mla_block_bound_s(pre_expanded))],
            ["matmul FLOPs per head per query–key pair", count(absorbed_pair), count(expanded_pair)]])

# %% jupyter={"source_hidden": true}
active_no_embedding = dsv3.active_parameter_count() - dsv3.vocab_size * dsv3.hidden_size
# DeepSeek's README_WEIGHTS.md figures, from the model catalog (published_detail_source names the file)
README_ACTIVE, README_EMBEDDING = dsv3.published_active_params_detail, dsv3.published_embedding_params
assert "README_WEIGHTS.md" in dsv3.published_detail_source
readme_gap = dsv3.active_parameter_count() - README_ACTIVE
assert pre_expanded.block_total("mla", "bytes") < pre_absorbed.block_total("mla", "bytes")  # "fewer unfused bytes"
pre_compulsory = [c.block_total("mla", "compulsory_bytes") for c in (pre_absorbed, pre_expanded)]
assert abs(pre_compulsory[1] / pre_compulsory[0] - 1) < 1e-9  # "the same compulsory bytes"
assert all(mla_block_bound_s(c) == c.block_total("mla", "flops") / part.peak_flops_per_s("bf16")
           for c in (pre_absorbed, pre_expanded))  # "compute-bound either way"
assert abs(dsv3.vocab_size * dsv3.hidden_size - README_EMBEDDING) < 0.05e9  # its 0.9B is this table, rounded
assert readme_gap > 0.05e9  # more than the README's rounding (0.05B): a real difference, said below
assert abs(active_no_embedding - README_ACTIVE) < 0.1e9  # "dropping the embedding would nearly close the gap"
md("In prefill the expanded form also moves fewer unfused bytes (the absorbed one writes every head's query and "
   f"output at the latent's width), but both read the same {si(pre_compulsory[0], 'B')} of compulsory bytes. By the "
   "bound the block is compute-bound either way, so its time is its FLOPs: "
   f"{duration(mla_block_bound_s(pre_expanded))} expanded against {duration(mla_block_bound_s(pre_absorbed))} "
   f"absorbed, priced on one {part.name} for scale. Serving engines switch forms the same way: the docstring at the top of vLLM's MLA common "
   "module (`mla/common.py`) calls the absorbed form \"data-movement friendly\" and uses it for decode, and the "
   "expanded form \"compute friendly\", for prefill (it may switch forms for small prefill chunks).\n\n"
   f"DeepSeek-V3's size: {num(dsv3.parameter_count() / 1e9, 5)} B parameters in all. Its "
   f"{count(dsv3.mtp_layers)} multi-token-prediction layer, shipped beside it, is not counted — that is why the "
   "Hugging Face model page shows a larger total — and when it drafts tokens for speculative decoding it caches "
   f"its own latent too, {count(dsv3.kv_bytes_per_token_per_layer('bf16') * dsv3.mtp_layers)} more bytes per "
   "token in BF16. Its **active** count depends on whether the embedding table counts: "
   f"{num(dsv3.active_parameter_count() / 1e9, 4)} B with it, {num(active_no_embedding / 1e9, 4)} B without. The "
   "technical report's \"37B activated\" is close to both; quote which one you mean. DeepSeek's weight notes "
   f"(README_WEIGHTS.md) say {num(README_ACTIVE / 1e9)} B activated *including* {num(README_EMBEDDING / 1e9)} B of "
   f"embedding and {num(README_EMBEDDING / 1e9)} B of output head. The count here, from config.json "
   f"({count(dsv3.num_experts_per_tok)} routed and {count(dsv3.n_shared_experts)} shared expert per token, MLA, the "
   f"first {count(dsv3.first_k_dense_replace)} layers dense), exceeds it by "
   f"{num(readme_gap / 1e9, 2)} B; dropping the embedding would nearly close the gap, but the README says it is "
   "included, so the difference is **unexplained** here.")

# %% [markdown]
# ## Going further: zero points, NVFP4, and whole models in 4 bits

# %% jupyter={"source_hidden": true}
from roofline_lessons.core.dtypes import bytes_per_element
from roofline_lessons.topics.shrinking import NVFP4_BLOCK, int4_bytes_per_weight, nvfp4_bytes_per_weight

nvfp4_b = nvfp4_bytes_per_weight()
assert int4_b < int4_bytes_per_weight(128, True) < nvfp4_b  # the zero point and NVFP4's smaller blocks cost bytes
md("The int4 above is the minimum. Real checkpoints often carry a 4-bit zero point per group as well — AWQ is "
   "asymmetric by default, and GPTQ checkpoints store `qzeros` even when quantised symmetrically — which adds "
   f"0.5 ÷ group bytes per weight ({num(int4_bytes_per_weight(DEFAULT_WEIGHT_GROUP['int4'], zero_point=True), 4)} "
   f"bytes at group {count(DEFAULT_WEIGHT_GROUP['int4'])}); GPTQ and AWQ store FP16 scales, the size of the bf16 "
   "one. **NVFP4**, NVIDIA's 4-bit float for Blackwell, uses smaller blocks than MXFP4: 16 E2M1 values share one "
   f"8-bit E4M3 scale, plus one FP32 scale per tensor, {num(nvfp4_b, 4)} bytes per weight (the per-tensor scale is "
   "negligible). The placements price MXFP4 (`fp4`); NVFP4 would read "
   f"{percent(nvfp4_b / weight_bytes_per_element('fp4') - 1, 1)} more weight bytes. In W4A4 either format also "
   "quantises the **activations** on the fly before each matmul — work the package does not count.")

# %%
all_formats = formats[:3] + [("int4", 64)] + formats[3:]
BF16_BYTES, INT4_GROUP = bytes_per_element("bf16"), DEFAULT_WEIGHT_GROUP["int4"]
int4_zp = int4_bytes_per_weight(INT4_GROUP, True)  # with a 4-bit zero point per group
show_table(["format", "group", "bytes per weight", "of which the scale", "BF16 ÷ it"],
           [[("MXFP4 (fp4)" if d == "fp4" else d), count(g) if g else "—", num(weight_bytes_per_element(d, g), 6),
             num(weight_bytes_per_element(d, g) - bytes_per_element(d), 6) if g else "—",
             f"{num(BF16_BYTES / weight_bytes_per_element(d, g))}×"] for d, g in all_formats]
           + [["int4 with a 4-bit zero point (asymmetric)", count(INT4_GROUP), num(int4_zp, 6),
               num(int4_zp - bytes_per_element("int4"), 6), f"{num(BF16_BYTES / int4_zp)}×"],
              ["NVFP4 (not priced by the placements)", count(NVFP4_BLOCK), num(nvfp4_b, 6),
               num(nvfp4_b - bytes_per_element("fp4"), 6), f"{num(BF16_BYTES / nvfp4_b)}×"]])

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
           + [["gpt-oss-120b as shipped (MXFP4 experts only)", binary(oss_shipped.bf16_bytes),
               binary(oss_shipped.bytes), f"{num(oss_shipped.ratio)}×", "—"]])

# %% jupyter={"source_hidden": true}
gemma_stored = stored[1]
assert all(s.ratio < 2 / int4_b for s in stored)  # the BF16 layers keep every model under the per-weight ratio
assert min(stored, key=lambda s: s.ratio).label == gemma.name
assert oss_shipped.bytes < get_part("h100-sxm").memory_capacity_bytes
assert dsv3_stored.bytes == stored[2].bytes
md(f"No model reaches the per-weight ratio of {num(2 / int4_b)}×. Gemma-3-27B gains least: its "
   f"{count(gemma.vocab_size)}-token vocabulary makes the embedding a large share of a small model "
   f"({binary(gemma_stored.bytes)} in int4 against {binary(gemma_stored.bf16_bytes)}). gpt-oss-120b is "
   "**released** with MXFP4 weights for its MoE experts only — attention, the router, the embedding and the "
   f"lm_head stay BF16 — which is {binary(oss_shipped.bytes)}, and why its weights fit one "
   f"{binary(get_part('h100-sxm').memory_capacity_bytes)} H100.")

# %% jupyter={"source_hidden": true}
md(f"**Question.** DeepSeek-V3's int4 weights fit the node of {count(NODE)} H200s (section 4). How many "
   f"{count(KV_CONTEXT)}-token sequences does it hold beside them?")

# %% jupyter={"source_hidden": true}
import math

from roofline_lessons import place
from roofline_lessons.core.parallel import Parallelism, max_batch_that_fits_on_chips

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
routed_per_chip = sum(op.weight_params * op.layers * op.bytes_per_weight
                      for op in layouts["DP"].cost.ops if op.name.startswith("experts_"))
whole_per_chip = dp_weights - routed_per_chip  # attention, router, shared expert, dense MLPs, embedding, lm_head
dp_gain = dp_sequences / tp_sequences
assert tp_sequences == math.floor(free_per_chip / float(dsv3.kv_cache_bytes_per_sequence(KV_CONTEXT)))
assert tp_extra > 0 and dp_weights > tp_weights
assert NODE - 1 < dp_gain < NODE  # "not quite N× as many": the weights every chip keeps whole take the rest
md("<details><summary>Answer</summary>\n\n"
   f"Not {binary(node_bytes - dsv3_stored.bytes)} of cache. Under tensor parallel {count(NODE)} every chip needs "
   f"every head's view of the latent, so an engine without decode context parallel (the package's memory "
   f"convention) keeps each sequence's latent **replicated on all {count(NODE)} chips**, and "
   f"the distinct cache the node holds is one chip's free memory, {binary(free_per_chip)} (each chip holds "
   f"{binary(tp_weights)} of weights, {binary(tp_extra)} more than an even eighth: the query and latent "
   f"down-projections run whole on every chip) — **{count(tp_sequences)} sequences** of {count(KV_CONTEXT)} tokens. "
   "Data-parallel attention (each chip runs attention for its own sequences; lesson 11's expert-parallel layout, "
   f"EP {count(NODE)}, which splits only the routed experts) stores each latent once, but each chip then keeps "
   f"{binary(whole_per_chip)} whole — the attention, the router, the shared expert, the dense MLPs, the embedding "
   f"and the lm_head — and {binary(dp_weights)} in all: **{count(dp_sequences)} sequences**, {num(dp_gain, 2)}× as "
   f"many, not quite {count(NODE)}×. (Decode context parallel, in vLLM and SGLang, shards the latents along the "
   "sequence inside the TP group instead, which stores each once too.)\n\n</details>")

# %% [markdown]
# ## Going further: the critical batch through both lenses and both figures
#
# The **lower bound**'s critical batch overlaps the dequantisation with the matmuls, so a
# weight-only step meets the matmuls' own ridge, and counts only compulsory bytes. The
# **estimate**'s adds the dequantisation in series and sends every operator's activations through
# HBM. Each lens, each figure, at a short and a long context:

# %%
from roofline_lessons.topics.shrinking import WEIGHT_FORMATS

long_sweeps = critical_batches(MODEL, PART, CONTEXT)
max_swept = int(sweeps[0].batch[-1])
crit = lambda b: count(b) if b else f"none up to {count(max_swept)}"
show_table(["format", "weight lens: bound (dequant overlapped)", "weight lens: estimate (dequant in series)",
            f"all traffic, {count(SHORT_CONTEXT)} cached: bound (compulsory bytes)",
            f"all traffic, {count(SHORT_CONTEXT)} cached: estimate (unfused, dequant in series)",
            f"all traffic, {count(CONTEXT)} cached: bound / estimate"],
           [[s.label, crit(s.weight_lens_critical_batch_lower_bound), crit(s.weight_lens_critical_batch_estimate),
             crit(s.critical_batch_lower_bound), crit(s.critical_batch_estimate),
             f"{crit(ls.critical_batch_lower_bound)} / {crit(ls.critical_batch_estimate)}"]
            for s, ls in zip(sweeps, long_sweeps)])

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.batching import critical_batch

W4A4_FIELDS = WEIGHT_FORMATS["fp4 W4A4 (MXFP4 weights and matmuls)"]
fp8_kv_w4a4 = critical_batches(MODEL, PART, SHORT_CONTEXT, formats={"W4A4": W4A4_FIELDS}, kv_dtype="fp8")[0]
wl_int4_est = int4_sw.weight_lens_critical_batch_estimate
eff_roof = float(int4_sw.ridge_point_flop_per_byte[wl_int4_est - 1]) * part.memory_bandwidth_bytes_per_s
est_bf16, est_int4, est_w4a4 = (s.critical_batch_estimate for s in sweeps)
w4a4_at_est = byte_budget(MODEL, PART, est_w4a4, SHORT_CONTEXT, **W4A4_FIELDS)
w4a4_split = w4a4_at_est.shares()
# the weight lens: BF16 and W4A4 have no dequantisation, so their two figures agree
assert all(s.weight_lens_critical_batch_lower_bound == s.weight_lens_critical_batch_estimate for s in (bf16_sw, w4a4_sw))
assert critical_batch(MODEL, PART, SHORT_CONTEXT, lens="weights only", weights_dtype="int4") == wl_int4_est  # lesson 4's
# the estimate: the dequantisation in series lowers the roof the step meets, so it turns sooner still
assert eff_roof < int4_sw.matmul_peak_flops_per_s and wl_int4_est < wl_int4 < wl_bf16 / 2
# all traffic: the order is the same by both figures, and the estimate's two conventions pull opposite ways
assert est_int4 < est_bf16 < est_w4a4
assert est_int4 < lb_int4 and lb_bf16 < est_bf16 and lb_w4a4 < est_w4a4
assert est_int4 < int4_sw.critical_batch_without_dequant  # the dequant in series alone lowers it
assert w4a4_split["weights"] < w4a4_split["KV cache"] < w4a4_split["activations"]  # the estimate: activations dominate
assert est_w4a4 / lb_w4a4 > max(est_bf16 / lb_bf16, est_int4 / lb_int4)  # "W4A4 shows that most"
# the dequantisation's price is a convention: at no batch of either context does it set the bound
assert not any(s.dequant_sets_lower_bound.any() for s in sweeps + long_sweeps)
md(f"**The weight lens by the estimate.** int4's figure is **{count(wl_int4_est)}**, not {count(wl_int4)}: with "
   f"the dequantisation added in series, the roof the step meets at that batch is {si(eff_roof, 'FLOP/s')}, "
   f"{percent(1 - eff_roof / int4_sw.matmul_peak_flops_per_s, 0)} below the matmul roof, so it turns sooner still "
   "(lesson 4's `critical_batch(..., lens=\"weights only\")` gives the same). BF16 and W4A4 have no dequantisation: "
   "their two figures agree.\n\n"
   "**All traffic by the estimate.** Its two conventions pull opposite ways. The dequantisation in series "
   "lengthens the compute time and brings the turn forward: int4's estimate turns at "
   f"{count(int4_sw.critical_batch_without_dequant)} with the dequantisation overlapped, {count(est_int4)} with it "
   f"added. The unfused activations lengthen the memory time and push the turn back: BF16's {count(lb_bf16)} "
   f"becomes {count(est_bf16)}. W4A4 shows that most: at the estimate's critical batch its step's unfused bytes are "
   f"{percent(w4a4_split['activations'], 0)} activations, {percent(w4a4_split['KV cache'], 0)} KV cache and only "
   f"{percent(w4a4_split['weights'], 0)} weights, so the estimate needs batch {count(est_w4a4)} to reach the higher "
   f"roof — {num(est_w4a4 / lb_w4a4)}× the bound's {count(lb_w4a4)}. Kernels that keep the activations on chip "
   f"approach the bound's figure. With an FP8 KV cache W4A4's critical batch is "
   f"{crit(fp8_kv_w4a4.critical_batch_lower_bound)} by the bound ({crit(fp8_kv_w4a4.critical_batch_estimate)} by "
   "the estimate).")

# %% jupyter={"source_hidden": true}
per_seq = {ctx: [s.added_sequence_intensity_lower_bound for s in sw] for ctx, sw in ((SHORT_CONTEXT, sweeps),
                                                                                    (CONTEXT, long_sweeps))}
assert all(abs(v / vs[0] - 1) < 1e-9 for vs in per_seq.values() for v in vs)  # the same for every format
assert all(s.critical_batch_estimate is None and s.critical_batch_lower_bound is None for s in long_sweeps)
assert all(s.memory_bound_at_every_batch_lower_bound for s in long_sweeps)
assert all(s.added_sequence_intensity_estimate < s.added_sequence_ridge_flop_per_byte for s in long_sweeps)
assert all(s.added_sequence_intensity_lower_bound > s.added_sequence_ridge_flop_per_byte for s in sweeps)
md(f"**Why nothing turns at {count(CONTEXT)} tokens cached.** What decides it is what each **added sequence** "
   "brings: its FLOPs (attention over its cache, its row of every weight matmul) per compulsory byte it adds (its KV "
   "cache read and written, its token and logits; the weights are shared). That is "
   f"{num(per_seq[CONTEXT][0])} FLOP/byte at {count(CONTEXT)} tokens cached, the same in every format (the formats "
   "change only the shared weights), against a ridge for those FLOPs of "
   + "; ".join(f"{num(s.added_sequence_ridge_flop_per_byte)} for {s.label}" for s in long_sweeps)
   + ". The step's compulsory intensity tends to that per-sequence figure as the batch grows, so each added "
   "sequence adds more memory time than compute time and, memory-bound at batch 1, no step turns at any batch: by "
   f"the bound none ever does (the estimate's unfused bytes give {num(long_sweeps[0].added_sequence_intensity_estimate)} "
   f"FLOP/byte, lower still). At {count(SHORT_CONTEXT)} tokens cached the same sequence brings "
   f"{num(per_seq[SHORT_CONTEXT][0])} FLOP/byte, above every format's ridge, and every format turns.")

# %% jupyter={"source_hidden": true}
at = est_int4
md(f"**Question.** At batch {count(at)} weight-only int4's estimate is compute-bound and BF16's is not. Is int4 the "
   "slower of the two there?")

# %% jupyter={"source_hidden": true}
md("<details><summary>Answer</summary>\n\n"
   f"No: its estimate is {duration(int4_sw.step_estimate_s[at - 1])} against BF16's "
   f"{duration(bf16_sw.step_estimate_s[at - 1])}, "
   f"{num(bf16_sw.step_estimate_s[at - 1] / int4_sw.step_estimate_s[at - 1])}× faster (by the bounds, "
   f"{duration(int4_sw.step_lower_bound_s[at - 1])} against {duration(bf16_sw.step_lower_bound_s[at - 1])}). "
   "Compute-bound says which of its own two times is longer, not how it compares with another format. Its memory "
   "time fell below its compute time, which did not fall — by the estimate it rose, from BF16's "
   f"{duration(bf16_sw.compute_time_s[at - 1])} to {duration(int4_sw.compute_time_s[at - 1])}, by the "
   "dequantisation added in series. "
   + (f"By the bound int4 is still memory-bound at this batch: overlapped, the dequantisation adds no compute "
      f"time, and its bound turns at {count(lb_int4)}." if at < lb_int4 else "")
   + "\n\n</details>")

# %% [markdown]
# ## Going further: the dequantisation, in series or overlapped

# %% jupyter={"source_hidden": true}
from roofline_lessons.core.costs import DEQUANT_FLOPS_PER_WEIGHT

md(f"The package counts the dequantisation as {num(DEQUANT_FLOPS_PER_WEIGHT)} FLOPs per weight read (convert, "
   "scale) on the vector units, at the part's FP32 rate — a convention, not a measured cost: a kernel may convert "
   "with fewer or more instructions. The bound overlaps that work with the matmuls: the vector units and the "
   "tensor cores are separate units that can run at once, and a bound must take that optimistic case. Since the "
   "price is a convention, every weight-only step in this lesson is asserted to have a dequantisation shorter than "
   "its tensor-core time or its compulsory memory time: the bound rests on the FLOPs and the compulsory bytes alone. "
   "How much of the dequantisation a real kernel hides — it issues both kinds of work from the same "
   "streaming multiprocessors — is for measurement: Marlin's README reports \"close to ideal (4x) speedups up to "
   "batchsizes of 16-32 tokens\" for its FP16×INT4 kernel, on Ampere and Ada GPUs. The estimate adds the "
   "dequantisation to the matmuls. The batch-1 step of section 5, both figures:")

# %%
show_table(["batch 1", "weights read", "KV + activations", "compute, estimate (of which dequant)", "memory, estimate",
            "step: lower bound", "step: estimate", "binding roof (both)"],
           [[name, si(p.cost.weight_bytes, "B"), si(p.cost.bytes - p.cost.weight_bytes, "B"),
             f"{duration(p.compute_time_s)} ({duration(p.dequant_time_s) if p.dequant_time_s else 'none'})",
             duration(p.memory_time_s), duration(p.time_lower_bound_s), duration(p.time_estimate_s), p.bound]
            for name, p in (("BF16", sb.bf16), ("int4, weight-only", sb.quantized))])

# %% jupyter={"source_hidden": true}
assert float(sb.quantized.dequant_time_s) < float(sb.quantized.memory_time_s)
md("At batch 1 the two figures agree because the weights and the KV cache, which both read, are nearly all the "
   "bytes. *Hypothesis:* a real int4 kernel reaches a smaller share of the bandwidth than a BF16 one and gains less "
   "than the ratio of bounds; lesson 9's method measures it.\n\n"
   "As the batch grows, the BF16 step approaches its compute roof while the int4 step, by the estimate, carries the "
   "dequantisation on top of the same matmuls. BF16 ÷ int4 three ways — the estimate, the estimate with the "
   "dequantisation overlapped (the unfused bytes kept: only that convention changes), and the bounds — at "
   f"{count(SHORT_CONTEXT)} tokens cached:")

# %%
from roofline_lessons.topics.shrinking import weight_only_crossover

crossover = weight_only_crossover(MODEL, PART, SHORT_CONTEXT)
shown = [1, 16, est_int4, bf16_sw.critical_batch_estimate // 2, crossover]
overlapped = int4_sw.overlapped_step_time_s
show_table(["batch", "BF16 estimate", "int4 estimate", "int4 compute (estimate)", "of which dequant",
            "BF16 ÷ int4: estimate", "… estimate, dequant overlapped", "… lower bounds"],
           [[count(b), duration(bf16_sw.step_estimate_s[b - 1]), duration(int4_sw.step_estimate_s[b - 1]),
             duration(int4_sw.compute_time_s[b - 1]),
             percent(int4_sw.dequant_time_s[b - 1] / int4_sw.compute_time_s[b - 1], 0),
             f"{num(bf16_sw.step_estimate_s[b - 1] / int4_sw.step_estimate_s[b - 1])}×",
             f"{num(bf16_sw.step_estimate_s[b - 1] / overlapped[b - 1])}×",
             f"{num(bf16_sw.step_lower_bound_s[b - 1] / int4_sw.step_lower_bound_s[b - 1])}×"] for b in shown])

# %% jupyter={"source_hidden": true}
meet = weight_only_crossover(MODEL, PART, SHORT_CONTEXT, figure="lower bound")
long_crossover = weight_only_crossover(MODEL, PART, CONTEXT)
assert crossover is not None and int4_sw.step_estimate_s[crossover - 1] >= bf16_sw.step_estimate_s[crossover - 1]
assert (overlapped <= bf16_sw.step_estimate_s * (1 + 1e-12)).all()  # overlapped: never slower, up to the sweep's end
assert (int4_sw.step_lower_bound_s <= bf16_sw.step_lower_bound_s * (1 + 1e-12)).all()  # nor by the bound
assert meet is not None and meet == lb_bf16  # by the bound they meet where BF16 turns compute-bound
assert long_crossover is None  # at 8,192 tokens int4 never stops winning up to the sweep's end
md(f"With {count(SHORT_CONTEXT)} tokens cached, weight-only int4's estimate stops beating BF16's at batch "
   f"**{count(crossover)}**: from there its dequantisation ({duration(int4_sw.dequant_time_s[crossover - 1])} per "
   "step, the same at any batch because the weights are read once — in this model: real GEMMs dequantise a tile "
   "once per M-tile, so the cost grows with the batch) makes the estimate longer than BF16's. At "
   f"{count(CONTEXT)} tokens cached it never does up to batch {count(max_swept)}: the KV cache keeps both steps "
   "memory-bound.\n\n"
   "That crossover is the estimate's **in-series** convention. It is a deduction within the roofline that a "
   "dequantisation fully overlapped with the matmuls leaves **no crossover at all**: int4's bound is never above "
   f"BF16's up to batch {count(max_swept)} (the last column), and equal to it from batch {count(meet)}, where both "
   "are compute-bound on the same matmul roof. A real kernel is never faster than the bound and can be slower than "
   "the estimate, so whether int4 is slower at large batch on real hardware is a question of kernel efficiency. "
   "*Hypothesis:* int4 GEMM kernels reach a smaller share of the tensor-core peak than BF16 ones at large batch; "
   "measure your kernel's step against the BF16 one (lesson 9's method) to find out.")

# %% [markdown]
# ## Going further: every lever by both figures

# %%
import math

from roofline_lessons.topics.shrinking import BUDGET_PARTS


def change_text(value):
    """A lever's change in one part of the byte budget, as a person reads it."""
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "appears"
    if abs(value) < 0.005:
        return "0 %"
    return ("+" if value > 0 else "−") + percent(abs(value), 0)


show_table(["lever"] + [f"{p} per token" for p in BUDGET_PARTS] + ["faster per token: bounds", "… estimates"],
           [[lv.display_name] + [change_text(lv.change()[p]) for p in BUDGET_PARTS]
            + [f"{num(lv.speedup_of_bounds)}×", f"{num(lv.speedup_estimate)}×"] for lv in levers])

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.shrinking import MOVE_THRESHOLD

assert all(ranked(deployable(levers), figure) == best and ranked(deployable(bigger_levers), figure) == bigger_batch
           and ranked([lv for lv in bigger_levers if lv.what_if], figure) == best_what_if
           and getattr(best, figure) >= max(getattr(lv, figure) for lv in levers if not lv.lever.startswith("batching"))
           for figure in ("speedup_of_bounds", "speedup_estimate"))  # both figures pick the same levers
assert all(float(lv.after.placement.dequant_time_s) < max(float(lv.after.placement.tensor_time_s),
                                                          float(lv.after.placement.memory_lower_bound_s))
           for lv in levers + bigger_levers)  # the dequantisation sets no bound
md("\"Moves\" (section 7) lists every part that changes by more than "
   f"{percent(MOVE_THRESHOLD, 0)}. The architecture what-ifs also reshape the attention weights (MQA, MLA and the "
   "hybrid; sliding windows do not), and the weights column shows by how much. The bounds and the estimates lie "
   f"within {percent(max(abs(lv.speedup_of_bounds / lv.speedup_estimate - 1) for lv in levers), 0)} of each other "
   f"here, and rank the levers alike at batch {count(LEVER_BATCH)} and at batch {count(bigger_batch.before.batch)}.")

# %% [markdown]
# ## Going further: how vLLM pages a sliding-window model
#
# A uniform allocator is what vLLM V1 does with its hybrid KV-cache manager disabled: its
# `FullAttentionSpec` docstring says a sliding-window layer is then "regarded as full attention in
# KV cache manager (blocks are allocated for all tokens)". Its hybrid KV-cache manager
# (https://docs.vllm.ai/en/latest/design/hybrid_kv_cache_manager/) allocates per layer kind: each
# local layer gets the pages its window spans, one more when the window starts mid-page. The
# pages, the pool and the bytes per sequence behind section 8:

# %%
show_table(["model on part", "tokens per sequence", "pages per layer (global / local)", "KV pool",
            "per sequence: uniform", "per sequence: per kind", "sequences: uniform", "sequences: per kind"],
           [[f"{c.model.name} on {c.part.name}", count(c.context_tokens), f"{count(c.full_pages)} / {count(c.window_pages)}",
             binary(c.pool_bytes), binary(c.uniform_bytes_per_sequence), binary(c.per_kind_bytes_per_sequence),
             count(c.uniform_sequences), count(c.per_kind_sequences)] for c in paged])

# %% jupyter={"source_hidden": true}
assert all(c.per_kind_bytes_per_sequence < c.uniform_bytes_per_sequence for c in paged)
md(f"The per-kind counts are at most what fits the nominal capacity at {percent(UTILIZATION, 0)} memory "
   "utilisation and "
   f"{count(DEFAULT_PAGE_TOKENS)}-token pages: a real engine also holds pages for the prefill chunk in flight, uses "
   "one page size across layer groups (padding), and pays activations and CUDA graphs out of the same "
   f"{percent(UTILIZATION, 0)} of memory.")
