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
# # Lesson 5 — Exercises: KV growth in a hybrid model
#
# Replace each `...` with your answer and run the cell. 5.1 and 5.2 are pencil-and-paper: the
# config fields you need are printed below.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/05_hybrid_kv_growth.ipynb` is generated from it.*

# %%
from roofline_lessons import get_model, get_part
from roofline_lessons.course.checks import lesson05 as check
from roofline_lessons.topics.hybrid import all_full_attention
from roofline_lessons.core.memory import state_bytes_per_sequence, weight_bytes

qwen = get_model("qwen3.8-27b")
for field in ("num_hidden_layers", "full_attention_interval", "num_key_value_heads", "head_dim",
              "linear_num_value_heads", "linear_value_head_dim", "linear_key_head_dim", "state_dtype"):
    print(f"{field:24} {getattr(qwen, field)}")

# %% [markdown]
# ## Exercise 5.1 — KV cache per token, by hand
#
# How many KiB of BF16 KV cache does one token add to Qwen3.8-27B, over all its layers? (Only the
# full-attention layers — every fourth — keep one.)

# %%
# BEGIN SOLUTION
kv_kib = 2 * (64 // 4) * 4 * 256 * 2 / 1024
# END SOLUTION
check.kv_kib_per_token(kv_kib)

# %% [markdown] tags=["solution"]
# 2 × 16 layers × 4 KV heads × 256 × 2 bytes = 65,536 bytes = 64 KiB.

# %% [markdown]
# ## Exercise 5.2 — the fixed state, by hand
#
# How many MiB of float32 Gated DeltaNet state does one sequence carry, over all 48 such layers?

# %%
# BEGIN SOLUTION
state_mib = 48 * 48 * 128 * 128 * 4 / 2**20
# END SOLUTION
check.state_mib_total(state_mib)

# %% [markdown] tags=["solution"]
# 48 value heads × 128 × 128 × 4 bytes = 3 MiB per layer; × 48 layers = 144 MiB, at any context.

# %% [markdown]
# ## Exercise 5.3 — when KV traffic overtakes the weights
#
# At batch 16, how many tokens must each sequence have cached before a decode step reads as many
# KV bytes as weight bytes? (Within 3 %.)

# %%
# BEGIN SOLUTION
weights_read = weight_bytes(qwen) - qwen.vocab_size * qwen.hidden_size * 2  # decode reads 16 embedding rows, not all
crossing_tokens = weights_read / (16 * qwen.kv_bytes_per_token())
# END SOLUTION
check.crossing_at_batch16(crossing_tokens)

# %% [markdown] tags=["solution"]
# About 51 GB of weights ÷ (16 × 64 KiB) ≈ 49,000 tokens. Compare it with `qwen.max_context_tokens`, the
# longest context in the model's config.json (`max_position_embeddings`).

# %% [markdown]
# ## Exercise 5.4 — the counterfactual on an H200
#
# Suppose all 64 layers were full attention (four times the KV cache per token, no recurrent
# state). How many sequences of 131,072 tokens would fit on one H200?

# %%
# BEGIN SOLUTION
variant = all_full_attention(qwen)
free = get_part("h200").memory_capacity_bytes - weight_bytes(variant)
variant_batch = int(free // (131072 * variant.kv_bytes_per_token() + state_bytes_per_sequence(variant)))
# END SOLUTION
check.all_attention_batch_on_h200(variant_batch)

# %% [markdown] tags=["solution"]
# 256 KiB per token × 131,072 tokens = 32 GiB per sequence: two sequences in the H200's 141 GiB,
# against eleven for the hybrid.

# %% [markdown]
# ## Exercise 5.5 — which dot moves?
#
# On the roofline, as the context grows at batch 16, which layer kind's dot moves:
# `"full attention"` or `"gated deltanet"`?

# %%
# BEGIN SOLUTION
moving_dot = "full attention"
# END SOLUTION
check.which_dot_moves(moving_dot)

# %% [markdown] tags=["solution"]
# The full-attention layers read a history that grows with every token; the Gated DeltaNet layers
# read and write the same fixed state at any context, so their dot stays put.
