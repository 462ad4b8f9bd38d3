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
# # Lesson 5 — Exercises: KV growth in a hybrid model
#
# Replace each `...` with your answer and run the cell. 5.1 and 5.2 are pencil-and-paper: the
# config fields you need are printed below.

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
kv_kib = ...  # your answer here
check.kv_kib_per_token(kv_kib)

# %% [markdown]
# ## Exercise 5.2 — the fixed state, by hand
#
# How many MiB of float32 Gated DeltaNet state does one sequence carry, over all 48 such layers?

# %%
state_mib = ...  # your answer here
check.state_mib_total(state_mib)

# %% [markdown]
# ## Exercise 5.3 — when KV traffic overtakes the weights
#
# At batch 16, how many tokens must each sequence have cached before a decode step reads as many
# KV bytes as weight bytes? (Within 3 %.)

# %%
weights_read = ...  # your answer here
crossing_tokens = ...  # your answer here
check.crossing_at_batch16(crossing_tokens)

# %% [markdown]
# ## Exercise 5.4 — the counterfactual on an H200
#
# Suppose all 64 layers were full attention (four times the KV cache per token, no recurrent
# state). How many sequences of 131,072 tokens would fit on one H200?

# %%
variant = ...  # your answer here
free = ...  # your answer here
variant_batch = ...  # your answer here
check.all_attention_batch_on_h200(variant_batch)

# %% [markdown]
# ## Exercise 5.5 — which dot moves?
#
# On the roofline, as the context grows at batch 16, which layer kind's dot moves:
# `"full attention"` or `"gated deltanet"`?

# %%
moving_dot = ...  # your answer here
check.which_dot_moves(moving_dot)
