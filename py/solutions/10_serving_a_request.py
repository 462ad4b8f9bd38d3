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
# # Lesson 10 — Exercises: serving a request
#
# Every checker recomputes its answer from the package when you run it, so a catalog update never
# leaves an answer stale. Times in **seconds**, rates in **tokens per second**.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/10_serving_a_request.ipynb` is generated from it.*

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
# BEGIN SOLUTION
prefill = model_cost("llama-3.1-8b", phase="prefill", prompt_tokens=2048)
compute_s = float(prefill.flops) / h100.peak_flops_per_s("bf16")
memory_s = float(prefill.bytes) / h100.memory_bandwidth_bytes_per_s
ttft_s = max(compute_s, memory_s)
# END SOLUTION
grade.ttft_by_hand_s(ttft_s)

# %% [markdown] tags=["solution"]
# Compute binds: 2,048 tokens share each weight read, so the step's intensity is far above the
# ridge. So the lower bound (`compulsory_bytes` in place of `bytes`) gives the same TTFT: the FLOPs
# set it either way. "Two FLOPs per parameter per token" overcounts here: the lm_head runs for the last position
# only, and the embedding is a lookup.

# %% [markdown]
# ## Exercise 10.2 — TPOT from a timeline
#
# A short answer: 16 output tokens for the same prompt, at batch 8. From the timeline's `e2e_s`,
# `ttft_s` and `output_tokens`, compute TPOT — the mean gap between tokens after the first — in
# **seconds**.

# %%
short = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=16, batch=8)
# BEGIN SOLUTION
tpot_s = (short.e2e_s - short.ttft_s) / (short.output_tokens - 1)
# END SOLUTION
grade.short_answer_tpot_s(tpot_s)

# %% [markdown] tags=["solution"]
# The first token comes from the prefill, so 16 tokens leave 15 gaps. E2E ÷ 16 folds the prefill
# into every token — another tool's "TPOT", and a much larger number for a short answer.

# %% [markdown]
# ## Exercise 10.3 — expected tokens per verify step, by hand
#
# A draft proposes k = 3 tokens, each accepted with probability α = 0.8 (independently; the first
# rejection ends the run, and the target always adds one token of its own). How many tokens does
# one verify step yield on average?

# %%
# BEGIN SOLUTION
k, alpha = 3, 0.8
tokens_per_verify = sum(alpha**i for i in range(k + 1))  # = (1 - alpha**(k + 1)) / (1 - alpha)
# END SOLUTION
grade.tokens_per_verify_step(tokens_per_verify)

# %% [markdown] tags=["solution"]
# 1 + α + α² + α³: the target's own token always comes, the i-th draft only if all before it were
# accepted. Not k + 1 (every draft accepted), not (1 − α^k) ÷ (1 − α) (one term short).

# %% [markdown]
# ## Exercise 10.4 — a draft model's speed-up
#
# Llama-3.1-70B on an H200, batch 1, 8,192 tokens in, 128 out, drafted by Llama-3.1-8B with
# k = 4 and α = 0.7, **both with FP8 weights** (`weights_dtype="fp8"`): in BF16 the pair does not fit
# one H200 (lesson 10). Using `request_timeline` (its `draft_model=` and `speculative_tokens=` and
# `acceptance=`), what is the **TPOT speed-up**: plain TPOT ÷ speculative TPOT?

# %%
# BEGIN SOLUTION
plain = request_timeline("llama-3.1-70b", "h200", prompt_tokens=8192, output_tokens=128, weights_dtype="fp8")
drafted = request_timeline("llama-3.1-70b", "h200", prompt_tokens=8192, output_tokens=128, weights_dtype="fp8",
                           speculative_tokens=4, acceptance=0.7, draft_model="llama-3.1-8b")
speedup = plain.tpot_s / drafted.tpot_s
assert drafted.fits_in_memory  # target + draft, FP8 weights, on one H200
assert speedup < drafted.tokens_per_verify_step  # the draft's own steps cost something
# END SOLUTION
grade.draft_model_speedup(speedup)

# %% [markdown] tags=["solution"]
# Below the expected tokens per verify step: each verify step also pays k decode steps of the 8B
# draft, each costing about the 8B's share of the 70B's weight bytes (both are memory-bound at
# batch 1).

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
# BEGIN SOLUTION
usd_per_million = PRICE_PER_HOUR_USD / 3600 / batch32.output_tokens_per_s * 1e6
# END SOLUTION
grade.usd_per_million_tokens(usd_per_million, PRICE_PER_HOUR_USD)

# %% [markdown] tags=["solution"]
# The hour pays for all 32 users' tokens: divide by the total throughput, not one user's. This is an
# estimate of the static schedule's cost; priced at `batch32.output_tokens_per_s_upper_bound`
# (continuous batching's steady state) it would be the lower bound on the cost of any engine that
# does not speculate (the bound assumes one token per sequence per step).
