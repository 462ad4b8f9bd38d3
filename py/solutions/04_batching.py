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
# # Lesson 4 — Exercises: batching
#
# Replace each `...` with your answer and run the cell. Exercise 4.1 is for pencil and paper.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/04_batching.ipynb` is generated from it.*

# %%
import math

from roofline_lessons import get_model, get_part, place
from roofline_lessons.course.checks import lesson04 as check
from roofline_lessons.core.memory import state_bytes_per_sequence, weight_bytes
from roofline_lessons.core.units import binary, si

h100 = get_part("h100-sxm")
print(f"H100 SXM: {si(h100.peak_flops_per_s('bf16'), 'FLOP/s')} dense BF16, {si(h100.memory_bandwidth_bytes_per_s, 'B/s')}, "
      f"{binary(h100.memory_capacity_bytes)}")

# %% [markdown]
# ## Exercise 4.1 — by hand: the critical batch by the weight lens
#
# Per weight byte, decode intensity is about the batch size. At what batch does it first reach
# the H100 SXM's BF16 ridge? (A batch is a whole number of sequences.)

# %%
# BEGIN SOLUTION
critical = math.ceil(989.4e12 / 3.35e12)
# END SOLUTION
check.weight_lens_critical_batch(critical)

# %% [markdown] tags=["solution"]
# 989.4 ÷ 3.35 = 295.3, so batch 296 — the ridge itself, rounded up. (The all-traffic lens, with
# KV caches, says much later or never.)

# %% [markdown]
# ## Exercise 4.2 — throughput at batch 64
#
# Llama-3.1-8B in BF16 on an H100 SXM, batch 64, each sequence with 4,096 tokens cached. Give the
# upper bound on throughput in tokens per second (within 6 %).

# %%
# BEGIN SOLUTION
llama = get_model("llama-3.1-8b")
embedding_bytes = llama.vocab_size * llama.hidden_size * 2  # a step looks up 64 rows of it, not all of it
step_bytes = weight_bytes(llama) - embedding_bytes + 64 * 4097 * llama.kv_bytes_per_token()
tokens_per_s = 64 / (step_bytes / h100.memory_bandwidth_bytes_per_s)
# END SOLUTION
check.llama8b_batch64_throughput(tokens_per_s)

# %% [markdown] tags=["solution"]
# Weights 15.0 GB once (16.1 GB less the 1.05 GB embedding table, of which the step reads one
# row per token) plus 64 × 0.54 GB of KV cache ≈ 49 GB per step: about 15 ms, so about 4,300
# tokens/s in all — and about 68 tokens/s for each user. Counting the whole table gives about
# 2 % less; the checker names that mistake.

# %% [markdown]
# ## Exercise 4.3 — what fits at 128K tokens
#
# Qwen3.8-27B in BF16 on one H200, each sequence with 131,072 tokens of history. How many sequences
# fit at most? Count weights, KV cache (64 KiB per token) and each sequence's recurrent state.

# %%
# BEGIN SOLUTION
qwen = get_model("qwen3.8-27b")
per_sequence = 131072 * qwen.kv_bytes_per_token() + state_bytes_per_sequence(qwen)
fit = int((get_part("h200").memory_capacity_bytes - weight_bytes(qwen)) // per_sequence)
# END SOLUTION
check.qwen38_fit_on_h200(fit)

# %% [markdown] tags=["solution"]
# Each sequence needs 8 GiB of KV cache plus about 0.14 GiB of state; about 91 GiB are free after
# the weights (141 GiB is 151.4 × 10⁹ bytes): 11 sequences. Reading "141 GB" as 141 × 10⁹ bytes
# gives 9 — the SI trap the checker names. (9 is also what fits in vLLM's long-standing default 90 % of the
# memory: `max_batch_that_fits("qwen3.8-27b", "h200", 131072, memory_utilization=0.9)`.)

# %% [markdown]
# ## Exercise 4.4 — experts touched
#
# Qwen3-30B-A3B routes each token to 8 of 128 experts. With 16 tokens in a decode step and uniform
# routing, how many distinct experts per layer are touched on average?

# %%
# BEGIN SOLUTION
E, k, B = 128, 8, 16
experts = E * (1 - (1 - k / E) ** B)
# END SOLUTION
check.experts_at_batch16(experts)

# %% [markdown] tags=["solution"]
# 128 × (1 − (15/16)¹⁶) ≈ 82 experts: 16 tokens already wake most of the model, so their weight
# bytes per token fall only about 2.4× from batch 1, not 16×.

# %% [markdown]
# ## Exercise 4.5 — batching prefill
#
# Llama-3.1-8B on an H100: eight 2,048-token prompts prefilled together instead of one. By what
# factor does the upper bound on prefill throughput (tokens/s) rise?

# %%
# BEGIN SOLUTION
one = place("llama-3.1-8b", h100, phase="prefill", prompt_tokens=2048, batch=1)
eight = place("llama-3.1-8b", h100, phase="prefill", prompt_tokens=2048, batch=8)
prefill_gain = float(eight.tokens_per_s_upper_bound / one.tokens_per_s_upper_bound)
# END SOLUTION
check.prefill_batching_gain(prefill_gain)

# %% [markdown] tags=["solution"]
# 1.0×: a 2,048-token prefill is already on the compute roof, so eight of them take eight times as
# long. Batching pays where the step is on the slope — decode.
