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
# # Lesson 7 — Exercises: the FP8 knee shift
#
# Replace each `...` with your answer and run the cell. 7.1 and 7.2 are pencil-and-paper.

# %%
from roofline_lessons import get_part, place
from roofline_lessons.course.checks import lesson07 as check
from roofline_lessons.topics.datasheets import best_measurement
from roofline_lessons.topics.levers import FP8_GAP_HYPOTHESES, LEVERS
from roofline_lessons.core.units import si

for pid in ("h100-sxm", "b200"):
    p = get_part(pid)
    print(f"{pid}: " + ", ".join(f"{dt} {si(v, 'FLOP/s')}" for dt, v in p.dense_flops_per_s.items())
          + f"; bandwidth {si(p.memory_bandwidth_bytes_per_s, 'B/s')}")
fp8 = best_measurement("h100-sxm", "matmul_flops_per_s", "fp8")
print(f"best measured FP8 matmul on the H100 SXM: {si(fp8.value, 'FLOP/s')} ({fp8.source})")
print("levers (workload fields each one changes from all-BF16):")
for name, change in LEVERS.items():
    print(f"  {name}: {change}")

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
# ## Exercises 7.3–7.5: which figure
#
# Each lever below uses the **default recipe** for 8-bit weights: the linear layers of the
# transformer blocks in 8 bits, the embedding, the lm_head and the norms in BF16 (as published FP8
# checkpoints are made). Each asks for the speed-up of the step's **lower bound**,
# `base.time_lower_bound_s / lever.time_lower_bound_s`: the ratio an ideal implementation of both
# would see. (The estimate, `time_estimate_s`, adds weight-only dequantisation in series and sends
# every activation through HBM; the solutions give its ratio beside the bound's.)

# %% [markdown]
# ## Exercise 7.3 — weight-only 8-bit in decode
#
# Qwen3.8-27B, batch-1 decode with 8,192 tokens cached, H100 SXM. Store the linear layers' weights in
# 8 bits (FP8 or INT8: the same bytes; `weights_dtype="fp8"` with its default recipe) and keep
# everything else — the embedding and lm_head, matmuls, activations, KV cache — in BF16 (W8A16,
# dequantised on the fly). By what factor does the step's lower bound shrink?

# %%
base = ...  # your answer here
weight_only = ...  # your answer here
decode_speedup = ...  # your answer here
check.decode_fp8_weights_speedup(decode_speedup)

# %% [markdown]
# ## Exercise 7.4 — W8A8 FP8 in prefill
#
# Same model and part, an 8,192-token prefill. Switch to W8A8 FP8 with the default recipe: FP8
# weights in the blocks' linear layers, FP8 activations into those matmuls, which run at the FP8
# rate; the lm_head keeps BF16 weights and the BF16 rate; attention, softmax and norms stay BF16
# (`weights_dtype="fp8", compute_dtype="fp8"`; the KV cache stays BF16). Speed-up of the step's
# lower bound?

# %%
base = ...  # your answer here
w8a8 = ...  # your answer here
prefill_speedup = ...  # your answer here
check.prefill_w8a8_speedup(prefill_speedup)

# %% [markdown]
# ## Exercise 7.5 — W8A8 or weight-only for a chatbot?
#
# Batch-1 decode, 8,192 cached, H100 SXM, default recipe. Divide W8A8 FP8's speed-up of the lower
# bound by weight-only 8-bit's: how much does the FP8 arithmetic add?

# %%
kw = ...  # your answer here
base = ...  # your answer here
w8a16 = ...  # your answer here
w8a8 = ...  # your answer here
fp8_arithmetic_gain = ...  # your answer here
check.w8a8_over_weight_only_decode(fp8_arithmetic_gain)

# %% [markdown]
# ## Exercise 7.6 — the measured FP8 ridge
#
# With the best measured FP8 matmul rate (printed above) and the datasheet bandwidth, where is the
# H100's FP8 ridge?

# %%
measured_ridge = ...  # your answer here
check.measured_fp8_ridge(measured_ridge)

# %% [markdown]
# ## Exercise 7.7 — testing a hypothesis
#
# You sweep K at fixed M and N for the H100's FP8 matmul and find that the fraction of the FP8
# peak it reaches does not change with K. Which hypothesis for the FP8 gap does that weaken?
# Answer with one of the names printed below.

# %%
print([h.name for h in FP8_GAP_HYPOTHESES])

# %%
weakened = ...  # your answer here
check.k_sweep_weakens(weakened)
