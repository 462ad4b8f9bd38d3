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
# # Lesson 10 — Exercises: serving a request
#
# Every checker recomputes its answer from the package when you run it, so a catalog update never
# leaves an answer stale. Times in **seconds**, rates in **tokens per second**.

# %%
from roofline_lessons import get_part
from roofline_lessons.core.costs import model_cost
from roofline_lessons.course.checks import lesson10 as grade
from roofline_lessons.topics.serving import request_timeline

h100 = get_part("h100-sxm")

# %% [markdown]
# ## Exercise 10.1 — TTFT by hand
#
# Llama-3.1-8B on an H100 SXM, batch 1, a 2,048-token prompt, BF16. The prefill step produces the
# first token. From `model_cost(...)` (its `.flops` and `.bytes`) and the part's BF16 peak
# (`h100.peak_flops_per_s("bf16")`) and bandwidth (`h100.memory_bandwidth_bytes_per_s`), compute the
# time to first token as the estimate prices it — max(FLOPs ÷ peak, bytes ÷ bandwidth), with `.bytes`
# the unfused count — in **seconds**. Which roof binds?

# %%
prefill = ...  # your answer here
compute_s = ...  # your answer here
memory_s = ...  # your answer here
ttft_s = ...  # your answer here
grade.ttft_by_hand_s(ttft_s)

# %% [markdown]
# ## Exercise 10.2 — TPOT from a timeline
#
# A short answer: 16 output tokens for the same prompt, at batch 8. From the timeline's `e2e_s`,
# `ttft_s` and `output_tokens`, compute TPOT — the mean gap between tokens after the first — in
# **seconds**.

# %%
short = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=16, batch=8)
tpot_s = ...  # your answer here
grade.short_answer_tpot_s(tpot_s)

# %% [markdown]
# ## Exercise 10.3 — expected tokens per verify step, by hand
#
# A draft proposes k = 3 tokens, each accepted with probability α = 0.8 (independently; the first
# rejection ends the run, and the target always adds one token of its own). How many tokens does
# one verify step yield on average?

# %%
k = ...  # your answer here
alpha = ...  # your answer here
tokens_per_verify = ...  # your answer here
grade.tokens_per_verify_step(tokens_per_verify)

# %% [markdown]
# ## Exercise 10.4 — a draft model's speed-up
#
# Llama-3.1-70B on an H200, batch 1, 8,192 tokens in, 128 out, drafted by Llama-3.1-8B with
# k = 4 and α = 0.7, **both with FP8 weights** (`weights_dtype="fp8"`): in BF16 the pair does not fit
# one H200 (lesson 10). Using `request_timeline` (its `draft_model=` and `speculative_tokens=` and
# `acceptance=`), what is the **TPOT speed-up**: plain TPOT ÷ speculative TPOT?

# %%
plain = ...  # your answer here
drafted = ...  # your answer here
speedup = ...  # your answer here
grade.draft_model_speedup(speedup)

# %% [markdown]
# ## Exercise 10.5 — dollars per million tokens
#
# Llama-3.1-8B on an H100 SXM at batch 32, 2,048 tokens in, 256 out. The chip-hour price below is an
# **assumption** (set your own; the checker follows it). What do a million output tokens cost, in
# **US dollars**, at the static batch's estimated throughput (`output_tokens_per_s`)? (A blended figure:
# the prefill's time is included, where API prices split input and output tokens.)

# %%
PRICE_PER_HOUR_USD = 2.50  # ASSUMPTION: an example rental price, US dollars per chip-hour
batch32 = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256, batch=32)
usd_per_million = ...  # your answer here
grade.usd_per_million_tokens(usd_per_million, PRICE_PER_HOUR_USD)
