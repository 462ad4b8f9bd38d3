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
# # Lesson 12 — Exercises: shrinking the bytes
#
# Every checker recomputes its answer from the package when you run it, so a catalog update never
# leaves an answer stale. Memory in **GiB** (2^30 bytes), bytes per token in **bytes**, speed-ups as
# a plain ratio. KV caches in **BF16** unless an exercise says otherwise. The int4 format here is the
# course's: groups of 128 weights, one bf16 scale per group, symmetric (no zero point: the minimum;
# a 4-bit zero point per group, as AWQ stores by default, would add 0.5/128 byte per weight); the
# embedding, the lm_head and the norms stay BF16 (the package's default recipe, the linear layers of
# the transformer blocks, for 8-bit and 4-bit weights alike). A step's time has two figures
# (lesson 3): the **lower bound** (`time_lower_bound_s`, with `lower_bound_roof`) and the
# **estimate** (`time_estimate_s`, with `bound`: every operator's activations through HBM, a
# weight-only dequantisation added in series to the matmuls). Each exercise names the one it asks for.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/12_shrinking_the_bytes.ipynb` is generated from it.*

# %%
import numpy as np

from roofline_lessons import get_model, get_part, place
from roofline_lessons.course.checks import lesson12 as grade

# %% [markdown]
# ## Exercise 12.1 — MLA's KV bytes per token
#
# DeepSeek-V3 uses multi-head latent attention. From `get_model("deepseek-v3")` (`num_hidden_layers`,
# `kv_lora_rank`, `qk_rope_head_dim`, `num_attention_heads`, `head_dim`), how many **bytes** does one
# token add to its KV cache over all its layers, in BF16?

# %%
dsv3 = get_model("deepseek-v3")
# BEGIN SOLUTION
latent_elements = dsv3.kv_lora_rank + dsv3.qk_rope_head_dim  # one latent per token and layer, shared by every head
mla_bytes_per_token = dsv3.num_hidden_layers * latent_elements * 2
# END SOLUTION
grade.mla_kv_bytes_per_token(mla_bytes_per_token)

# %% [markdown] tags=["solution"]
# The cache holds the compressed latent (`kv_lora_rank` elements) and the shared rope key
# (`qk_rope_head_dim`), not per-head K and V. Per-head K and V would be heads × (a key of
# qk_nope + qk_rope = `head_dim` elements + a value of `v_head_dim`) per layer:
# `mla_per_head_kv_elements()` in `roofline_lessons.topics.shrinking` gives it, tens of times the
# latent (lesson 12, section 2, computes the ratio, and the DeepSeek-V2 paper's smaller one, which
# uses 2 × heads × 128). In decode no per-head K or V is formed at all: W_UK is absorbed into the
# query and W_UV applied after attention, which runs on the latent. Counting the
# multi-token-prediction layer too is a named mistake: it caches only when used for speculative
# decoding. So is giving the paper's multi-head-attention baseline: it is what MLA is compared
# against, not what it caches.

# %% [markdown]
# ## Exercise 12.2 — int4 weights in GiB
#
# Store Llama-3.1-70B's weights in int4: groups of 128 weights share one bf16 scale (2 bytes); the
# embedding (`vocab_size` × `hidden_size`), the lm_head (the same size, not tied) and the norms
# (2 per layer plus the final one, `hidden_size` each) stay in BF16. How many **GiB** do the stored
# weights take? (`parameter_count()` counts every weight.)

# %%
llama = get_model("llama-3.1-70b")
# BEGIN SOLUTION
h = llama.hidden_size
kept_bf16 = 2 * llama.vocab_size * h + (2 * llama.num_hidden_layers + 1) * h
quantised = llama.parameter_count() - kept_bf16
int4_bytes_per_weight = 0.5 + 2 / 128
int4_weights_gib = (quantised * int4_bytes_per_weight + kept_bf16 * 2) / 2**30
# END SOLUTION
grade.int4_weights_gib(int4_weights_gib)

# %% [markdown] tags=["solution"]
# Each int4 weight costs 0.515625 bytes, not 0.5: its share of the group's bf16 scale. The BF16
# embedding and lm_head are about 3 % of the parameters but about a tenth of these bytes.

# %% [markdown]
# ## Exercise 12.3 — the batch-1 speed-up of 4-bit weights
#
# Llama-3.1-70B decodes one sequence (batch 1, 4,096 tokens cached) on a B200. Place the step twice
# with `place(...)`: in BF16, and with `weights_dtype="int4"` (weight-only: the matmuls stay BF16).
# What speed-up does the estimate give: the BF16 step's `time_estimate_s` ÷ the int4 step's?

# %%
# BEGIN SOLUTION
bf16_step = place("llama-3.1-70b", "b200", phase="decode", context_tokens=4096)
int4_step = place("llama-3.1-70b", "b200", phase="decode", context_tokens=4096, weights_dtype="int4")
speedup = float(bf16_step.time_estimate_s / int4_step.time_estimate_s)
# END SOLUTION
grade.int4_batch1_speedup(speedup)

# %% [markdown] tags=["solution"]
# Not 4: the scales cost 2/128 byte per weight, the embedding and lm_head stay BF16, and the KV
# cache and the activations are not touched by the weight format. The step stays memory-bound, so
# the dequantisation (hidden under the memory time at batch 1) does not lower it further. The
# ratio of the lower bounds (`time_lower_bound_s`) is within a fraction of a per cent of it here:
# at batch 1 nearly every byte is a weight or the KV cache, which both figures read. Neither ratio
# is a bound on the speed-up: it is what int4 gains if both kernels reach the same figure.

# %% [markdown]
# ## Exercise 12.4 — a sliding-window model's KV cache
#
# Gemma-3-27B alternates five local layers (each attends to and caches at most `sliding_window`
# tokens) with one global layer (every token): `num_sliding_attention_layers` and
# `num_full_attention_layers`. How many **GiB** of KV cache does one sequence of 32,768 tokens hold,
# in BF16 (`kv_bytes_per_token_per_layer("bf16")` per token and layer)?

# %%
gemma = get_model("gemma-3-27b")
# BEGIN SOLUTION
tokens = 32768
per_layer = gemma.kv_bytes_per_token_per_layer("bf16")
gemma_kv_gib = (gemma.num_full_attention_layers * tokens
                + gemma.num_sliding_attention_layers * min(tokens, gemma.sliding_window)) * per_layer / 2**30
# END SOLUTION
grade.gemma_kv_gib(gemma_kv_gib)

# %% [markdown] tags=["solution"]
# The ten global layers hold most of it: the 52 local layers stop at 1,024 tokens each. Windowing
# every layer would understate the cache 6-fold; windowing none would overstate it 5-fold.

# %% [markdown]
# ## Exercise 12.5 — paged KV: what a uniform allocator loses
#
# A serving engine stores KV in **pages** of 16 tokens of one layer's K and V. Serve Gemma-3-27B in
# BF16 on one H200 (`memory_capacity_bytes`) with 90 % of its memory for weights and KV (vLLM's
# default), every sequence holding 32,768 tokens. A **uniform** allocator gives every layer
# ceil(32,768 / 16) pages per sequence; allocating **per layer kind** gives a local layer only the
# pages its window spans (here exactly `sliding_window` / 16, because 32,768 cached tokens fill whole
# pages; the next token needs one page more in every layer — leave that out). How many whole
# sequences fit each way,
# and what **fraction** of the per-kind capacity does the uniform allocator lose?

# %%
h200 = get_part("h200")
# BEGIN SOLUTION
page_bytes = 16 * gemma.kv_bytes_per_token_per_layer("bf16")
pool = 0.9 * h200.memory_capacity_bytes - gemma.parameter_count() * 2
full_pages, local_pages = -(-32768 // 16), -(-gemma.sliding_window // 16)
layers = gemma.num_full_attention_layers + gemma.num_sliding_attention_layers
uniform = int(pool // (layers * full_pages * page_bytes))
per_kind = int(pool // ((gemma.num_full_attention_layers * full_pages
                         + gemma.num_sliding_attention_layers * local_pages) * page_bytes))
uniform_loss = 1 - uniform / per_kind
# END SOLUTION
grade.paged_uniform_loss(uniform_loss)

# %% [markdown] tags=["solution"]
# A uniform allocator reserves 32,768 tokens of pages in every local layer that will only ever
# hold 1,024: most of the pool goes to pages no token will fill. Allocating per layer kind is what
# lets a sliding-window model's small cache turn into more sequences.

# %% [markdown]
# ## Exercise 12.6 — the critical batch of weight-only int4
#
# Llama-3.1-70B decodes with 128 tokens cached on a B200 (a short context, so the KV cache stays
# small). With int4 weights dequantised on the fly (`weights_dtype="int4"`, matmuls in BF16), what
# is the smallest batch whose **estimate** is **compute-bound**? The estimate's conventions: the
# dequantisation (2 FLOPs per weight on the vector units) is added **in series** to the matmuls'
# compute time, and every operator's activations go through HBM; `.bound` is the estimate's binding
# roof. The answer is an exact whole number. Sweep `place(...)` over `batch=np.arange(1, 4097)` and
# read `.bound`.

# %%
# BEGIN SOLUTION
sweep = place("llama-3.1-70b", "b200", phase="decode", batch=np.arange(1, 4097), context_tokens=128,
              weights_dtype="int4")
int4_critical = int(np.arange(1, 4097)[np.asarray(sweep.bound) == "compute"][0])
# END SOLUTION
grade.int4_critical_batch(int4_critical)

# %% [markdown] tags=["solution"]
# Far below BF16's critical batch: the weight bytes fell nearly 4× but the matmuls still run at the
# BF16 rate, so the matmul roof did not move and the step reaches it sooner — and the dequantisation
# added in series lowers the roof the estimate meets, sooner still. The lower bound
# (`.lower_bound_roof`) overlaps the dequantisation with the matmuls and counts only compulsory
# bytes: its critical batch is larger (lesson 12, section 6, gives both). The weight lens's batches
# (by the bound and by the estimate) count only the weight bytes: this exercise asks for all the
# traffic, so both are named mistakes. A real weight-only kernel
# (Marlin-style) takes at least the bound's time; the estimate is a convention, not a ceiling, and a
# real kernel may be slower or faster than it: measure. Only W4A4 (fp4
# matmuls on a part that has them) raises the roof: by the weight lens its critical batch stays
# near BF16's; by all the traffic it rises, because the BF16 KV cache it does not shrink grows with
# the batch (and, in the estimate, the unfused activations too).
