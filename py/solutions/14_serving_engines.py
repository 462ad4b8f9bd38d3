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
# # Lesson 14 — Exercises: serving engines
#
# Every checker recomputes its answer from the package when you run it (the simulations are
# seeded). Times are in **seconds**, rates in **requests/s**. Every simulated figure is an estimate
# of the course's scheduler (lesson 14's conventions).

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/14_serving_engines.ipynb` is generated from it.*

# %%
import numpy as np

from roofline_lessons.core.models import get_model
from roofline_lessons.course.checks import lesson14 as grade
from roofline_lessons.topics import kernels
from roofline_lessons.topics.engine import EngineConfig, goodput_curve, poisson_requests, simulate

# %% [markdown]
# The run for 14.1 and 14.2: Llama-3.1-8B on one H100 SXM, 600 requests of 1,024 tokens in and 256
# out arriving at 40 requests/s (Poisson, seed 0), prompts chunked at 512 tokens.

# %%
run = simulate("llama-3.1-8b", "h100-sxm", poisson_requests(40, 600, 1024, 256, seed=0),
               EngineConfig(chunk_tokens=512))

# %% [markdown]
# ## Exercise 14.1 — Little's law
#
# How many requests are in the system (waiting or running) on average? Use Little's law with the
# run's completions per second (`run.completed_requests_per_s`) and each request's time in the system.

# %%
# BEGIN SOLUTION
in_system = run.completed_requests_per_s * float(np.mean(run.e2e_s))
# END SOLUTION
grade.requests_in_system(in_system)

# %% [markdown]
# ## Exercise 14.2 — TTFT under load
#
# What is the run's mean time to first token, in seconds?

# %%
# BEGIN SOLUTION
mean_ttft = float(np.mean(run.ttft_s))
# END SOLUTION
grade.mean_ttft_under_load(mean_ttft)

# %% [markdown] tags=["solution"]
# Compare it with lesson 10's TTFT for the same request on an idle server
# (`request_timeline(...).ttft_s`): the difference is queueing and sharing steps with the running batch.

# %% [markdown]
# ## Exercise 14.3 — goodput per chip
#
# Two H100s as one pool (`EngineConfig(chips=2)`: two instances, each prefilling whole prompts, no
# chunking) serve 4,096-token prompts with 256-token answers,
# 400 requests per rate at 4, 8, 12, 16, 24, 32 and 48 requests/s. The objectives: TTFT at most 1 s and
# TPOT at most 25 ms for 90 % of requests. What is the goodput **per chip**, in requests/s?

# %%
# BEGIN SOLUTION
curve = goodput_curve("llama-3.1-8b", "h100-sxm", rates_per_s=[4, 8, 12, 16, 24, 32, 48], requests=400,
                      prompt_tokens=4096, output_tokens=256, ttft_slo_s=1.0, tpot_slo_s=0.025, slo_attainment=0.9,
                      config=EngineConfig(chips=2))
per_chip = curve.goodput_requests_per_s / curve.chips
# END SOLUTION
grade.goodput_per_chip(per_chip)

# %% [markdown]
# ## Exercise 14.4 — how many KV splits?
#
# Llama-3.1-70B decodes at batch 2 with 65,536 tokens of context on an H100 SXM. A decode attention
# kernel launches one CTA per (sequence, KV head, KV split). What is the fewest number of splits that
# gives every SM at least one CTA? (`get_part("h100-sxm").compute_units` is the SM count.)

# %%
# BEGIN SOLUTION
m = get_model("llama-3.1-70b")
splits = kernels.flash_decoding_splits("h100-sxm", batch=2, kv_heads=m.num_key_value_heads, context_tokens=65_536)
# END SOLUTION
grade.flash_decoding_splits(splits)
