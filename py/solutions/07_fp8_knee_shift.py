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
# # Lesson 7 — Exercises: the FP8 knee shift
#
# Replace each `...` with your answer and run the cell. 7.1 and 7.2 are pencil-and-paper.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/07_fp8_knee_shift.ipynb` is generated from it.*

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
# BEGIN SOLUTION
h100_fp8 = 1978.9e12 / 3.35e12
# END SOLUTION
check.h100_fp8_ridge(h100_fp8)

# %% [markdown] tags=["solution"]
# The dense FP8 peak over the same bandwidth: the BF16 ridge times the FP8 ÷ BF16 peak ratio
# (the bandwidth does not depend on the format, so only the compute ceiling moves).

# %% [markdown]
# ## Exercise 7.2 — the B200's FP4 ridge, by hand

# %%
# BEGIN SOLUTION
b200_fp4 = 9000e12 / 8e12
# END SOLUTION
check.b200_fp4_ridge(b200_fp4)

# %% [markdown] tags=["solution"]
# A kernel needs over a thousand FLOPs per byte to use FP4's roof.

# %% [markdown]
# ## Exercise 7.3 — weight-only 8-bit in decode
#
# Qwen3.8-27B, batch-1 decode with 8,192 tokens cached, H100 SXM. Store the weights in 8 bits
# (FP8 or INT8: the same bytes) and keep everything else — matmuls, activations, KV cache — in
# BF16 (W8A16, dequantised on the fly). By what factor does the step's time bound shrink?

# %%
# BEGIN SOLUTION
base = place("qwen3.8-27b", "h100-sxm", phase="decode", context_tokens=8192)
weight_only = place("qwen3.8-27b", "h100-sxm", phase="decode", context_tokens=8192, weights_dtype="fp8")
decode_speedup = float(base.time_estimate_s / weight_only.time_estimate_s)
# END SOLUTION
check.decode_fp8_weights_speedup(decode_speedup)

# %% [markdown] tags=["solution"]
# Nearly 2×: the step is memory-bound and almost all its bytes are weights, which halve. Not
# quite 2×: the KV cache and the float32 recurrent state keep their size.

# %% [markdown]
# ## Exercise 7.4 — W8A8 FP8 in prefill
#
# Same model and part, an 8,192-token prefill. Switch to W8A8 FP8: FP8 weights, FP8 activations
# into the weight matmuls, weight matmuls at the FP8 rate; attention, softmax and norms stay BF16
# (`weights_dtype="fp8", compute_dtype="fp8"`; the KV cache stays BF16). Speed-up of the time
# bound?

# %%
# BEGIN SOLUTION
base = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192)
w8a8 = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192, weights_dtype="fp8",
             compute_dtype="fp8")
prefill_speedup = float(base.time_estimate_s / w8a8.time_estimate_s)
# END SOLUTION
check.prefill_w8a8_speedup(prefill_speedup)

# %% [markdown] tags=["solution"]
# A little under 2×: the step stays compute-bound, the weight matmuls follow their ceiling, which
# doubled, and the FLOPs that keep the BF16 rate (attention, softmax, norms, the recurrence) do
# not shrink.

# %% [markdown]
# ## Exercise 7.5 — W8A8 or weight-only for a chatbot?
#
# Batch-1 decode, 8,192 cached, H100 SXM. Divide W8A8 FP8's speed-up by weight-only 8-bit's
# speed-up: how much does the FP8 arithmetic add?

# %%
# BEGIN SOLUTION
kw = dict(phase="decode", context_tokens=8192)
base = place("qwen3.8-27b", "h100-sxm", **kw)
w8a16 = place("qwen3.8-27b", "h100-sxm", **kw, weights_dtype="fp8")
w8a8 = place("qwen3.8-27b", "h100-sxm", **kw, weights_dtype="fp8", compute_dtype="fp8")
fp8_arithmetic_gain = float((base.time_estimate_s / w8a8.time_estimate_s)
                            / (base.time_estimate_s / w8a16.time_estimate_s))
# END SOLUTION
check.w8a8_over_weight_only_decode(fp8_arithmetic_gain)

# %% [markdown] tags=["solution"]
# 1×: both store the same weight bytes, and a memory-bound step never reaches the compute roof
# that FP8 matmuls raise. For a latency-bound chatbot on a part without FP8 units (the A100),
# weight-only quantisation buys the same decode speed-up.

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

# %% tags=["solution"]
from roofline_lessons.viz.display import md

h100 = get_part("h100-sxm")
factor = fp8.value / h100.peak_flops_per_s("fp8")
assert factor < 1
md(f"The roof the best measured FP8 matmul reaches is lower than the datasheet's, so the measured knee sits left "
   f"of the datasheet ridge of 7.1 by the same factor, measured ÷ datasheet = {si(fp8.value, 'FLOP/s')} ÷ "
   f"{si(h100.peak_flops_per_s('fp8'), 'FLOP/s')} = {factor:.3f}: {h100.ridge_point_flop_per_byte('fp8'):,.0f} → "
   f"{fp8.value / h100.memory_bandwidth_bytes_per_s:,.0f} FLOP/byte.")

# %% [markdown]
# ## Exercise 7.7 — testing a hypothesis
#
# You sweep K at fixed M and N for the H100's FP8 matmul and find that the fraction of the FP8
# peak it reaches does not change with K. Which hypothesis for the FP8 gap does that weaken?
# Answer with one of the names printed below.

# %%
print([h.name for h in FP8_GAP_HYPOTHESES])

# %%
# BEGIN SOLUTION
weakened = "fixed per-tile epilogue"
# END SOLUTION
check.k_sweep_weakens(weakened)

# %% [markdown] tags=["solution"]
# A cost paid once per output tile is spread over K: if it mattered, a larger K would dilute it and
# the fraction would climb. A flat curve weakens that hypothesis; it says nothing for or against
# throttling, pipeline latency or kernel choice, which need their own measurements.
