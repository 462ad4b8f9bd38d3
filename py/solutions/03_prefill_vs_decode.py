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
# # Lesson 3 — Exercises: prefill vs decode
#
# Replace each `...` with your answer and run the cell. Do exercise 3.1 by hand, with the 2·P·T
# rule, before you touch the package. Every time asked for here is the **lower bound** (lesson 3's
# "A bound and an estimate"): the checkers compare with `time_lower_bound_s` and
# `tokens_per_s_upper_bound`.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/03_prefill_vs_decode.ipynb` is generated from it.*

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
# BEGIN SOLUTION
ttft_ms = 2 * 8.03e9 * 8192 / 989.4e12 * 1e3
# END SOLUTION
check.llama8b_ttft_ms(ttft_ms)

# %% [markdown] tags=["solution"]
# 2 × 8.03 × 10⁹ × 8,192 ≈ 1.3 × 10¹⁴ FLOPs; ÷ 989 TFLOP/s ≈ 133 ms. The package adds attention
# (which grows with the prompt squared) and reads only the looked-up embedding rows, and computes the lm_head (read in full) for the last position only.

# %% [markdown]
# ## Exercise 3.2 — time per output token
#
# Same model and part, batch 1, with 32,768 tokens already cached. Decode is memory-bound: each
# step reads the weights and the whole KV cache. What is the lower bound on the time per output
# token, in **milliseconds** (within 3 %)? Careful with the embedding table: a decode step looks
# up one row of it, not all of it (the lm_head is a separate matrix and is read in full).

# %%
# BEGIN SOLUTION
embedding_bytes = llama.vocab_size * llama.hidden_size * 2
step_bytes = llama.parameter_count() * 2 - embedding_bytes + 32768 * llama.kv_bytes_per_token()
tpot_ms = step_bytes / h100.memory_bandwidth_bytes_per_s * 1e3
# END SOLUTION
check.llama8b_tpot_ms(tpot_ms)

# %% [markdown] tags=["solution"]
# About 15.0 GB of weights read (16.1 GB minus the 1.05 GB embedding table) + 4.3 GB of KV cache
# ≈ 19.3 GB; ÷ 3.35 TB/s ≈ 5.8 ms. Forgetting the KV cache gives about 4.5 ms — a quarter too
# fast; the checker names that mistake.

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
# BEGIN SOLUTION
bound = place(gpt_fast.model, "a100-80gb", phase="decode", context_tokens=GPT_FAST_CONTEXT_TOKENS)
percent_of_bound = 100 * gpt_fast.tokens_per_s / float(bound.tokens_per_s_upper_bound)
# END SOLUTION
check.gpt_fast_percent_of_bound(percent_of_bound)

# %% [markdown] tags=["solution"]
# This fraction is the run's model bandwidth utilisation (MBU). gpt-fast's printed "bandwidth
# achieved" is model bytes × tokens/s — the same measurement times nearly the same constant — so
# their agreement proves nothing about *where* the rest of the time goes:
# the memory system, launch gaps, sampling, the prefill generate.py times with the decode steps
# and the power cap all look the same through tokens/s.
# A profiler's DRAM counters during the kernels would separate them.

# %% [markdown]
# ## Exercise 3.4 — memory-bound inside a compute-bound step
#
# In an 8,192-token prefill of Qwen3.8-27B on an H100, the whole step is compute-bound. Which one of
# these operators of a full-attention layer is memory-bound: `"q_proj (+ output gate)"`, `"input_norm"` or
# `"gate_proj"`?

# %%
# BEGIN SOLUTION
memory_bound_op = "input_norm"
# END SOLUTION
check.memory_bound_op_in_prefill(memory_bound_op)

# %% [markdown] tags=["solution"]
# A norm does about four FLOPs per element and reads and writes every element: about one FLOP per
# byte whatever the prompt length. Fusing it into the next matmul removes its traffic.

# %% [markdown]
# ## Exercise 3.5 — the two lenses at long context
#
# Llama-3.1-8B, batch-1 decode at the model's full context: 131,071 tokens cached, so that with
# the new token the sequence holds 131,072, the most the model was built for. What is the
# intensity per byte of **all** traffic (FLOP/byte, within 10 %)? Hint: attention over the cache
# does FLOPs too, and, as in 3.2, the step looks up one row of the embedding table.

# %%
# BEGIN SOLUTION
ctx = 131071
embedding_bytes = llama.vocab_size * llama.hidden_size * 2
matmul_flops = 2 * (llama.parameter_count() - llama.vocab_size * llama.hidden_size)
attention_flops = 4 * llama.head_dim * llama.num_attention_heads * ctx * llama.num_hidden_layers
all_bytes = llama.parameter_count() * 2 - embedding_bytes + ctx * llama.kv_bytes_per_token()
all_traffic_intensity = (matmul_flops + attention_flops) / all_bytes
# END SOLUTION
check.long_context_decode_intensity(all_traffic_intensity)

# %% [markdown] tags=["solution"]
# Attention does about (query heads ÷ KV heads) = 4 FLOPs per byte of KV it reads, so at long
# context the step's intensity drifts from ~1 towards ~4 — still far left of the ridge. The
# embedding lookup does no FLOPs and reads one row: 15.0 GB of weights, not 16.1. Counting the
# whole table gives an intensity about 3 % low; the checker names that mistake.
