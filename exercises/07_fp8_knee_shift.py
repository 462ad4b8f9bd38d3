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
h100_fp8 = ...  # your answer here
check.h100_fp8_ridge(h100_fp8)

# %% [markdown]
# ## Exercise 7.2 — the B200's FP4 ridge, by hand

# %%
b200_fp4 = ...  # your answer here
check.b200_fp4_ridge(b200_fp4)

# %% [markdown]
# ## Exercise 7.3 — FP8 weights in decode
#
# Qwen3.8-27B, batch-1 decode with 8,192 tokens cached, H100 SXM. Keep compute and KV cache in
# BF16 and store only the weights in FP8. By what factor does the step's time bound shrink?

# %%
base = ...  # your answer here
fp8_weights = ...  # your answer here
decode_speedup = ...  # your answer here
check.decode_fp8_weights_speedup(decode_speedup)

# %% [markdown]
# ## Exercise 7.4 — FP8 compute in prefill
#
# Same model and part, an 8,192-token prefill. Switch only the compute to FP8 (weights and KV stay
# BF16). Speed-up of the time bound?

# %%
base = ...  # your answer here
fp8_compute = ...  # your answer here
prefill_speedup = ...  # your answer here
check.prefill_fp8_compute_speedup(prefill_speedup)

# %% [markdown]
# ## Exercise 7.5 — the right lever for a chatbot
#
# For batch-1 decode, which single lever helps most: `"FP8 compute"`, `"FP8 weights"` or
# `"FP8 KV cache"`?

# %%
best_lever = ...  # your answer here
check.best_lever_for_decode(best_lever)

# %% [markdown]
# ## Exercise 7.6 — the measured FP8 ridge
#
# With the best measured FP8 matmul rate (printed above) and the datasheet bandwidth, where is the
# H100's FP8 ridge?

# %%
measured_ridge = ...  # your answer here
check.measured_fp8_ridge(measured_ridge)
