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
# # Lesson 3 — Exercises: prefill vs decode
#
# Replace each `...` with your answer and run the cell. Do exercise 3.1 by hand, with the 2·P·T
# rule, before you touch the package. Every time asked for here is the **lower bound** (lesson 3's
# "A bound and an estimate"): the checkers compare with `time_lower_bound_s` and
# `tokens_per_s_upper_bound`.

# %%
from roofline_lessons import get_model, get_part, place
from roofline_lessons.course.checks import lesson03 as check
from roofline_lessons.core.units import si

h100 = get_part("h100-sxm")
llama = get_model("llama-3.1-8b")
print(f"H100 SXM: {si(h100.peak_flops_per_s('bf16'), 'FLOP/s')} dense BF16, {si(h100.memory_bandwidth_bytes_per_s, 'B/s')}")
print(f"Llama-3.1-8B: {llama.parameter_count():,} parameters, KV cache {llama.kv_bytes_per_token() / 1024:,.0f} KiB per token (BF16)")

# %% [markdown]
# ## Exercise 3.1 — the time to first token, by hand
#
# Llama-3.1-8B, one 8,192-token prompt, BF16, H100 SXM. Prefill is compute-bound and costs about
# 2 FLOPs per parameter per token. Work out the lower bound on the time to first token, in
# **milliseconds** (within 15 %).

# %%
ttft_ms = ...  # your answer here
check.llama8b_ttft_ms(ttft_ms)

# %% [markdown]
# ## Exercise 3.2 — time per output token
#
# Same model and part, batch 1, with 32,768 tokens already cached. Decode is memory-bound: each
# step reads the weights and the whole KV cache. What is the lower bound on the time per output
# token, in **milliseconds** (within 3 %)? Careful with the embedding table: a decode step looks
# up one row of it, not all of it (the lm_head is a separate matrix and is read in full).

# %%
embedding_bytes = ...  # your answer here
step_bytes = ...  # your answer here
tpot_ms = ...  # your answer here
check.llama8b_tpot_ms(tpot_ms)

# %% [markdown]
# ## Exercise 3.3 — a bound against a measurement
#
# The catalog's gpt-fast measurement (the cell below prints it with its conditions: the part, the
# power cap, the prompt) is a batch-1 decode rate of Llama-2-7B in BF16. Use the package's upper
# bound at `GPT_FAST_CONTEXT_TOKENS` tokens cached (the middle decode step of that run, an
# assumption: `roofline_lessons.topics.published`) and give the measured rate
# (`gpt_fast.tokens_per_s`) as a **percentage** of the bound.

# %%
from roofline_lessons.topics.published import GPT_FAST_CONTEXT_TOKENS, gpt_fast_7b_measurement

gpt_fast = gpt_fast_7b_measurement()
print(f"gpt-fast, {gpt_fast.kernel}: {gpt_fast.tokens_per_s} tokens/s ({gpt_fast.conditions}; {gpt_fast.source})")

# %%
bound = ...  # your answer here
percent_of_bound = ...  # your answer here
check.gpt_fast_percent_of_bound(percent_of_bound)

# %% [markdown]
# ## Exercise 3.4 — memory-bound inside a compute-bound step
#
# In an 8,192-token prefill of Qwen3.8-27B on an H100, the whole step is compute-bound. Which one of
# these operators of a full-attention layer is memory-bound: `"q_proj (+ output gate)"`, `"input_norm"` or
# `"gate_proj"`?

# %%
memory_bound_op = ...  # your answer here
check.memory_bound_op_in_prefill(memory_bound_op)

# %% [markdown]
# ## Exercise 3.5 — the two lenses at long context
#
# Llama-3.1-8B, batch-1 decode at the model's full context: 131,071 tokens cached, so that with
# the new token the sequence holds 131,072, the most the model was built for. What is the
# intensity per byte of **all** traffic (FLOP/byte, within 10 %)? Hint: attention over the cache
# does FLOPs too, and, as in 3.2, the step looks up one row of the embedding table.

# %%
ctx = ...  # your answer here
embedding_bytes = ...  # your answer here
matmul_flops = ...  # your answer here
attention_flops = ...  # your answer here
all_bytes = ...  # your answer here
all_traffic_intensity = ...  # your answer here
check.long_context_decode_intensity(all_traffic_intensity)
