# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 7 — Exercises: the FP8 knee shift
#
# Replace each `...` with your answer and run the cell. 7.1 and 7.2 are pencil-and-paper.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/07_fp8_knee_shift.ipynb` is generated from it.*

# %%
from roofline_lessons import get_part, place
from roofline_lessons.checks import lesson07 as check
from roofline_lessons.datasheets import best_measurement
from roofline_lessons.units import si

for pid in ("h100-sxm", "b200"):
    p = get_part(pid)
    print(f"{pid}: " + ", ".join(f"{dt} {si(v, 'FLOP/s')}" for dt, v in p.dense_flops_per_s.items())
          + f"; bandwidth {si(p.memory_bandwidth_bytes_per_s, 'B/s')}")
fp8 = best_measurement("h100-sxm", "matmul_flops_per_s", "fp8")
print(f"best measured FP8 matmul on the H100 SXM: {si(fp8.value, 'FLOP/s')} ({fp8.source})")

# %% [markdown]
# ## Exercise 7.1 — the H100's FP8 ridge, by hand

# %%
# BEGIN SOLUTION
h100_fp8 = 1978.9e12 / 3.35e12
# END SOLUTION
check.h100_fp8_ridge(h100_fp8)

# %% [markdown] tags=["solution"]
# ≈ 591 FLOP/byte: twice the BF16 ridge, because the bandwidth did not change.

# %% [markdown]
# ## Exercise 7.2 — the B200's FP4 ridge, by hand

# %%
# BEGIN SOLUTION
b200_fp4 = 9000e12 / 8e12
# END SOLUTION
check.b200_fp4_ridge(b200_fp4)

# %% [markdown] tags=["solution"]
# 1,125 FLOP/byte: a kernel needs over a thousand FLOPs per byte to use FP4's roof.

# %% [markdown]
# ## Exercise 7.3 — FP8 weights in decode
#
# Qwen3.8-27B, batch-1 decode with 8,192 tokens cached, H100 SXM. Keep compute and KV cache in
# BF16 and store only the weights in FP8. By what factor does the step's time bound shrink?

# %%
# BEGIN SOLUTION
base = place("qwen3.8-27b", "h100-sxm", phase="decode", context_tokens=8192)
fp8_weights = place("qwen3.8-27b", "h100-sxm", phase="decode", context_tokens=8192, weights_dtype="fp8")
decode_speedup = float(base.time_lower_bound_s / fp8_weights.time_lower_bound_s)
# END SOLUTION
check.decode_fp8_weights_speedup(decode_speedup)

# %% [markdown] tags=["solution"]
# Nearly 2×: the step is memory-bound and almost all its bytes are weights, which halve.

# %% [markdown]
# ## Exercise 7.4 — FP8 compute in prefill
#
# Same model and part, an 8,192-token prefill. Switch only the compute to FP8 (weights and KV stay
# BF16). Speed-up of the time bound?

# %%
# BEGIN SOLUTION
base = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192)
fp8_compute = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192, compute_dtype="fp8")
prefill_speedup = float(base.time_lower_bound_s / fp8_compute.time_lower_bound_s)
# END SOLUTION
check.prefill_fp8_compute_speedup(prefill_speedup)

# %% [markdown] tags=["solution"]
# 2×: the step stays compute-bound, so it follows the ceiling, which doubled.

# %% [markdown]
# ## Exercise 7.5 — the right lever for a chatbot
#
# For batch-1 decode, which single lever helps most: `"FP8 compute"`, `"FP8 weights"` or
# `"FP8 KV cache"`?

# %%
# BEGIN SOLUTION
best_lever = "FP8 weights"
# END SOLUTION
check.best_lever_for_decode(best_lever)

# %% [markdown] tags=["solution"]
# FP8 weights: the bytes a batch-1 step waits for are mostly weights. FP8 compute raises a ceiling
# the step never touches; the KV cache of one conversation is small beside 51 GB of weights.

# %% [markdown]
# ## Exercise 7.6 — the measured FP8 ridge
#
# With the best measured FP8 matmul rate (printed above) and the datasheet bandwidth, where is the
# H100's FP8 ridge?

# %%
# BEGIN SOLUTION
measured_ridge = fp8.value / get_part("h100-sxm").memory_bandwidth_bytes_per_s
# END SOLUTION
check.measured_fp8_ridge(measured_ridge)

# %% [markdown] tags=["solution"]
# ≈ 419 FLOP/byte: the roof real FP8 matmuls reach is lower, so the measured knee sits well left of
# the datasheet's 591.
