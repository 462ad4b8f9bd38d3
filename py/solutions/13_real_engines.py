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

# %%

# %% [markdown]
# # Lesson 13 — Exercises: how close do real engines get?
#
# Every checker recomputes its answer from the package when you run it, so a catalog update never
# leaves an answer stale. A **fraction of the bound** is a plain number at most 1: measured ÷ bound
# for a rate, bound ÷ measured for a time. Rates are in **tokens/s**, times in **seconds**. The
# priced runs come from `priced_runs()` (lesson 13's conventions; `p.bound`, `p.estimate`,
# `p.measured`, `p.run.regime`).

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/13_real_engines.ipynb` is generated from it.*

# %%
import numpy as np

from roofline_lessons.course.checks import lesson13 as grade
from roofline_lessons.topics.real_engines import price_run, priced_runs, size_deployment
from roofline_lessons.topics.serving import request_timeline

# %% [markdown]
# ## Exercise 13.1 — a time's fraction of the bound
#
# TensorRT-LLM published a mean TTFT of 53 ms for Llama-3.1-70B on 4 × H100 (tensor parallel 4,
# 467-token prompts, at 2 requests/s). `price_run("trtllm-0.14-llama-3.1-70b-h100x4-ttft-467")` gives
# the course's bound for it. What fraction of the bound does the run reach?

# %%
# BEGIN SOLUTION
ttft = price_run("trtllm-0.14-llama-3.1-70b-h100x4-ttft-467")
ttft_fraction = ttft.bound / ttft.measured
# END SOLUTION
grade.ttft_fraction(ttft_fraction)

# %% [markdown]
# ## Exercise 13.2 — the bound on a user's decode rate
#
# One request to Llama-3.1-8B in BF16 on one H100 SXM: a 16,384-token prompt, 512 output tokens.
# What decode rate per user (tokens/s) can no engine beat without speculative decoding? Use
# `request_timeline(...)` and its lower bounds; the per-user decode rate is one token per TPOT. (On one
# chip at batch 1 the estimate's TPOT is within 0.1 % of the bound's here; the checker asks for the bound's.)

# %%
# BEGIN SOLUTION
timeline = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=16384, output_tokens=512)
rate_bound = 1.0 / timeline.tpot_lower_bound_s
# END SOLUTION
grade.long_prompt_rate_bound(rate_bound)

# %% [markdown]
# ## Exercise 13.3 — a held-out forecast
#
# Hold out the run `"trtllm-0.17-llama-3.1-70b-h200-fp8-128-2048"`. Calibrate an efficiency on the
# **other** maximum-throughput runs (the median of their fraction of the bound), and forecast the
# held-out run's output tokens/s from its bound.

# %%
# BEGIN SOLUTION
held = price_run("trtllm-0.17-llama-3.1-70b-h200-fp8-128-2048")
others = [p.fraction_of_bound for p in priced_runs()
          if p.run.regime == "max throughput" and p.run.id != held.run.id]
forecast = float(np.median(others)) * held.bound
# END SOLUTION
grade.held_out_forecast(forecast)

# %% [markdown] tags=["solution"]
# Compare the forecast with what was measured (`held.measured`): the error is the honest test of the
# method. A median over a handful of runs moves with every run added, so quote the regime's range too.

# %% [markdown]
# ## Exercise 13.4 — how many H200s?
#
# Serve 25,000 output tokens/s of Llama-3.1-70B in FP8 (weights, KV and matmuls) with every
# request's TPOT at most 40 ms, 1,000-token prompts and 1,000-token answers, in copies of TP 4. Use
# the maximum-throughput runs' median fraction of the bound as the efficiency. How many H200s?
# `size_deployment(...)` does the search (the largest batch meeting the TPOT limit, then whole copies).

# %%
# BEGIN SOLUTION
efficiency = float(np.median([p.fraction_of_bound for p in priced_runs() if p.run.regime == "max throughput"]))
sizing = size_deployment("llama-3.1-70b", "h200", target_output_tokens_per_s=25_000, tpot_slo_s=0.040,
                         prompt_tokens=1000, output_tokens=1000, efficiency=efficiency, tensor=4,
                         weights_dtype="fp8", kv_dtype="fp8", compute_dtype="fp8")
h200s = sizing.chips
# END SOLUTION
grade.h200s_needed(h200s)

# %% [markdown] tags=["solution"]
# Repeat with the regime's lowest and highest fraction
# (`roofline_lessons.topics.real_engines.calibrate(priced_runs(), "max throughput")`)
# for the error bar, and quote the range.
