# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
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
latent_elements = ...  # your answer here
mla_bytes_per_token = ...  # your answer here
grade.mla_kv_bytes_per_token(mla_bytes_per_token)

# %% [markdown]
# ## Exercise 12.2 — int4 weights in GiB
#
# Store Llama-3.1-70B's weights in int4: groups of 128 weights share one bf16 scale (2 bytes); the
# embedding (`vocab_size` × `hidden_size`), the lm_head (the same size, not tied) and the norms
# (2 per layer plus the final one, `hidden_size` each) stay in BF16. How many **GiB** do the stored
# weights take? (`parameter_count()` counts every weight.)

# %%
llama = get_model("llama-3.1-70b")
h = ...  # your answer here
kept_bf16 = ...  # your answer here
quantised = ...  # your answer here
int4_bytes_per_weight = ...  # your answer here
int4_weights_gib = ...  # your answer here
grade.int4_weights_gib(int4_weights_gib)

# %% [markdown]
# ## Exercise 12.3 — the batch-1 speed-up of 4-bit weights
#
# Llama-3.1-70B decodes one sequence (batch 1, 4,096 tokens cached) on a B200. Place the step twice
# with `place(...)`: in BF16, and with `weights_dtype="int4"` (weight-only: the matmuls stay BF16).
# What speed-up does the estimate give: the BF16 step's `time_estimate_s` ÷ the int4 step's?

# %%
bf16_step = ...  # your answer here
int4_step = ...  # your answer here
speedup = ...  # your answer here
grade.int4_batch1_speedup(speedup)

# %% [markdown]
# ## Exercise 12.4 — a sliding-window model's KV cache
#
# Gemma-3-27B alternates five local layers (each attends to and caches at most `sliding_window`
# tokens) with one global layer (every token): `num_sliding_attention_layers` and
# `num_full_attention_layers`. How many **GiB** of KV cache does one sequence of 32,768 tokens hold,
# in BF16 (`kv_bytes_per_token_per_layer("bf16")` per token and layer)?

# %%
gemma = get_model("gemma-3-27b")
tokens = ...  # your answer here
per_layer = ...  # your answer here
gemma_kv_gib = ...  # your answer here
grade.gemma_kv_gib(gemma_kv_gib)

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
page_bytes = ...  # your answer here
pool = ...  # your answer here
full_pages = ...  # your answer here
local_pages = ...  # your answer here
layers = ...  # your answer here
uniform = ...  # your answer here
per_kind = ...  # your answer here
uniform_loss = ...  # your answer here
grade.paged_uniform_loss(uniform_loss)

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
sweep = ...  # your answer here
int4_critical = ...  # your answer here
grade.int4_critical_batch(int4_critical)
