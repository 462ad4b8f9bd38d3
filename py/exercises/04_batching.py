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
# # Lesson 4 — Exercises: batching
#
# Replace each `...` with your answer and run the cell. Exercise 4.1 is for pencil and paper.

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
critical = ...  # your answer here
check.weight_lens_critical_batch(critical)

# %% [markdown]
# ## Exercise 4.2 — throughput at batch 64
#
# Llama-3.1-8B in BF16 on an H100 SXM, batch 64, each sequence with 4,096 tokens cached. Give the
# upper bound on throughput in tokens per second (within 6 %).

# %%
llama = ...  # your answer here
embedding_bytes = ...  # your answer here
step_bytes = ...  # your answer here
tokens_per_s = ...  # your answer here
check.llama8b_batch64_throughput(tokens_per_s)

# %% [markdown]
# ## Exercise 4.3 — what fits at 128K tokens
#
# Qwen3.8-27B in BF16 on one H200, each sequence with 131,072 tokens of history. How many sequences
# fit at most? Count weights, KV cache (64 KiB per token) and each sequence's recurrent state.

# %%
qwen = ...  # your answer here
per_sequence = ...  # your answer here
fit = ...  # your answer here
check.qwen38_fit_on_h200(fit)

# %% [markdown]
# ## Exercise 4.4 — experts touched
#
# Qwen3-30B-A3B routes each token to 8 of 128 experts. With 16 tokens in a decode step and uniform
# routing, how many distinct experts per layer are touched on average?

# %%
E = ...  # your answer here
k = ...  # your answer here
B = ...  # your answer here
experts = ...  # your answer here
check.experts_at_batch16(experts)

# %% [markdown]
# ## Exercise 4.5 — batching prefill
#
# Llama-3.1-8B on an H100: eight 2,048-token prompts prefilled together instead of one. By what
# factor does the upper bound on prefill throughput (tokens/s) rise?

# %%
one = ...  # your answer here
eight = ...  # your answer here
prefill_gain = ...  # your answer here
check.prefill_batching_gain(prefill_gain)
