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
# BEGIN SOLUTION
base = place("qwen3.8-27b", "h100-sxm", phase="decode", context_tokens=8192)
weight_only = place("qwen3.8-27b", "h100-sxm", phase="decode", context_tokens=8192, weights_dtype="fp8")
decode_speedup = float(base.time_lower_bound_s / weight_only.time_lower_bound_s)
# END SOLUTION
check.decode_fp8_weights_speedup(decode_speedup)

# %% jupyter={"source_hidden": true} tags=["solution"]
from roofline_lessons.viz.display import md

every = place("qwen3.8-27b", "h100-sxm", phase="decode", context_tokens=8192, weights_dtype="fp8",
              quantized_weights="all")
c0, c1 = base.cost, weight_only.cost
rest = float(c0.compulsory_bytes) - float(c0.weight_bytes)  # KV cache, recurrent state, ids and logits
bf16_kept = 2 * float(c1.weight_bytes) - float(c0.weight_bytes)  # kept BF16: x + (W − x)/2 = W1  →  x = 2·W1 − W
assert base.lower_bound_roof == weight_only.lower_bound_roof == "memory"
words = "nearly" if decode_speedup > 1.8 else "well under"
md(f"{decode_speedup:.2f}×, {words} 2×: the step is memory-bound, so its bound is the compulsory bytes ÷ the "
   f"bandwidth, and the speed-up is their ratio, {float(c0.compulsory_bytes) / 1e9:,.1f} GB → "
   f"{float(c1.compulsory_bytes) / 1e9:,.1f} GB. The blocks' linear weights halve; what does not halve is the "
   f"{bf16_kept / 1e9:,.2f} GB of weights the recipe keeps in BF16 (the lm_head, the norms, the embedding row "
   f"gathered) and {rest / 1e9:,.2f} GB of KV cache, float32 recurrent state, token ids and logits. Quantising the "
   f"embedding and the lm_head too (`quantized_weights=\"all\"`) would give "
   f"{float(base.time_lower_bound_s / every.time_lower_bound_s):.2f}× — not how published FP8 checkpoints are "
   f"made. The estimate gives {float(base.time_estimate_s / weight_only.time_estimate_s):.2f}×.")

# %% [markdown]
# ## Exercise 7.4 — W8A8 FP8 in prefill
#
# Same model and part, an 8,192-token prefill. Switch to W8A8 FP8 with the default recipe: FP8
# weights in the blocks' linear layers, FP8 activations into those matmuls, which run at the FP8
# rate; the lm_head keeps BF16 weights and the BF16 rate; attention, softmax and norms stay BF16
# (`weights_dtype="fp8", compute_dtype="fp8"`; the KV cache stays BF16). Speed-up of the step's
# lower bound?

# %%
# BEGIN SOLUTION
base = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192)
w8a8 = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192, weights_dtype="fp8",
             compute_dtype="fp8")
prefill_speedup = float(base.time_lower_bound_s / w8a8.time_lower_bound_s)
# END SOLUTION
check.prefill_w8a8_speedup(prefill_speedup)

# %% jupyter={"source_hidden": true} tags=["solution"]
c = w8a8.cost
fp8_share = float((c.weight_matmul_flops - c.unquantized_matmul_flops) / c.flops)
ratio = w8a8.matmul_peak_flops_per_s / get_part("h100-sxm").peak_flops_per_s("bf16")  # FP8 ÷ BF16 peak
amdahl = 1 / (1 - fp8_share + fp8_share / ratio)
assert abs(amdahl - prefill_speedup) < 0.005
estimate_speedup = float(base.time_estimate_s / w8a8.time_estimate_s)
assert base.lower_bound_roof == w8a8.lower_bound_roof == w8a8.bound == "compute" and 1.5 < prefill_speedup < 2
assert abs(ratio - 2) < 0.01  # "doubled"
md(f"{prefill_speedup:.2f}×, under 2×: the step stays compute-bound; the FP8 matmuls "
   f"({fp8_share:.1%} of the FLOPs) follow their ceiling, which doubled, while the rest — attention, softmax, norms, "
   f"the recurrence, and the lm_head the recipe keeps BF16 — keeps the BF16 rate (Amdahl: "
   f"1 ÷ ({1 - fp8_share:.3f} + {fp8_share:.3f} ÷ {ratio:.2f}) = {amdahl:.2f}). The estimate gives "
   f"{estimate_speedup:.2f}×{' too' if f'{estimate_speedup:.2f}' == f'{prefill_speedup:.2f}' else ''}: at 8,192 "
   "tokens even the unfused activations leave the step compute-bound.")

# %% [markdown]
# ## Exercise 7.5 — W8A8 or weight-only for a chatbot?
#
# Batch-1 decode, 8,192 cached, H100 SXM, default recipe. Divide W8A8 FP8's speed-up of the lower
# bound by weight-only 8-bit's: how much does the FP8 arithmetic add?

# %%
# BEGIN SOLUTION
kw = dict(phase="decode", context_tokens=8192)
base = place("qwen3.8-27b", "h100-sxm", **kw)
w8a16 = place("qwen3.8-27b", "h100-sxm", **kw, weights_dtype="fp8")
w8a8 = place("qwen3.8-27b", "h100-sxm", **kw, weights_dtype="fp8", compute_dtype="fp8")
fp8_arithmetic_gain = float((base.time_lower_bound_s / w8a8.time_lower_bound_s)
                            / (base.time_lower_bound_s / w8a16.time_lower_bound_s))
# END SOLUTION
check.w8a8_over_weight_only_decode(fp8_arithmetic_gain)

# %% jupyter={"source_hidden": true} tags=["solution"]
assert w8a16.lower_bound_roof == w8a8.lower_bound_roof == "memory"
assert float(w8a16.cost.compulsory_bytes) == float(w8a8.cost.compulsory_bytes)
md(f"{fp8_arithmetic_gain:.2f}×: both store the same weight bytes ({float(w8a8.cost.weight_bytes) / 1e9:,.1f} GB), "
   "and a memory-bound step never reaches the compute roof that FP8 matmuls raise (its FLOPs need "
   f"{float(w8a16.compute_lower_bound_s) * 1e6:,.0f} µs under weight-only, its bytes "
   f"{float(w8a16.memory_lower_bound_s) * 1e6:,.0f} µs). For a latency-bound chatbot on a part without FP8 units "
   "(the A100), weight-only quantisation buys the same decode speed-up.")

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

# %% jupyter={"source_hidden": true} tags=["solution"]
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
