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
# # Lesson 7 — The FP8 knee shift
#
# **By the end of this lesson you can**
#
# 1. say what a faster number format does to the ridge point, with the numbers for the H100 and
#    the B200;
# 2. separate three levers that all get called "FP8" — FP8 compute, FP8 weights, an FP8 KV cache —
#    and say which helps prefill, which helps decode, and by how much, on the H100, H200 and B200;
# 3. hold the datasheet FP8 roof against the FP8 rates real matmuls reach;
# 4. answer "what happens to the knee when you move from FP16 to FP8 on an H100?" with more than
#    "it doubles".

# %%
# %matplotlib inline
from roofline_lessons import get_part
from roofline_lessons.charts import roofline_chart, roofs_for
from roofline_lessons.datasheets import best_measurement
from roofline_lessons.display import md, show_table
from roofline_lessons.levers import LEVERS, lever_speedups, ridge_shift
from roofline_lessons.units import percent, si

PARTS = ("h100-sxm", "h200", "b200")

# %% [markdown]
# ## At fixed bytes, a faster format moves the knee right
#
# Tensor cores do twice as many FP8 operations per cycle as BF16 ones, and (on Blackwell) twice
# as many FP4 as FP8. Memory bandwidth does not change. So the compute ceiling rises and the
# ridge $I^* = P_\text{peak}/\beta$ moves right by the same factor:

# %%
show_table(["part", "BF16 ridge", "FP8 ridge", "FP4 ridge"],
           [[pid] + [f"{ridge_shift(pid).get(dt):,.0f}" if dt in ridge_shift(pid) else "—" for dt in ("bf16", "fp8", "fp4")]
            for pid in PARTS])
roofline_chart(roofs_for("b200", ["bf16", "fp8", "fp4"]), title="B200: one compute ceiling per format (dense)",
               intensity_range=(1, 1e5));

# %% [markdown]
# Read that right: **at fixed bytes**. A kernel whose bytes stay the same needs twice the
# intensity to use FP8's roof. A memory-bound kernel gains nothing from it.
#
# ## Three levers called "FP8"
#
# "Use FP8" can mean three different changes, and they move different numbers:
#
# - **FP8 compute**: the matmuls run on FP8 tensor cores — the compute ceiling doubles;
# - **FP8 weights**: the weights are stored in one byte instead of two — weight bytes halve;
# - **FP8 KV cache**: cached keys and values in one byte — KV bytes halve.
#
# Their speed-ups (ratio of time lower bounds against all-BF16) for Qwen3.8-27B, for an
# 8,192-token prefill, a batch-1 decode and a batch-64 decode (8,192 tokens cached):

# %%
workloads = [("prefill 8,192", "prefill", 8192, 1), ("decode, batch 1", "decode", 8192, 1),
             ("decode, batch 64", "decode", 8192, 64), ("prefill 512", "prefill", 512, 1)]
for pid in PARTS:
    rows = []
    for label, phase, tokens, batch in workloads:
        results = lever_speedups("qwen3.8-27b", pid, phase, tokens, batch)
        rows.append([label] + [f"{r.speedup:.2f}× ({r.bound})" for r in results[1:]])
    md(f"**{pid}** — speed-up over all-BF16 (and the roof that binds after the change)")
    show_table(["workload"] + list(LEVERS)[1:], rows)

# %% [markdown]
# The pattern, as the tables compute it:
#
# - **Prefill** is compute-bound: only FP8 compute helps, by the factor the roof rises. FP8 weights
#   or KV cache save bytes a compute-bound step was not waiting for.
# - **Batch-1 decode** is memory-bound on weights: FP8 weights nearly halve the step. FP8 compute
#   changes nothing — decode gets faster through **bytes**, not FLOPs.
# - **Batched decode at long context** splits its bytes between weights and KV caches, so each
#   byte lever buys part of the gain and the two together buy most of it.
# - **A short prefill** sits near the ridge: FP8 compute lifts the ceiling and the step runs into
#   the bandwidth slope, so it keeps only part of the 2× — more of it on the part with more
#   bandwidth per FLOP.
#
# The ratios are the same on the three parts whenever the binding roof does not change; the
# absolute times are not:

# %%
rows = []
for pid in PARTS:
    base, fp8w = (r for r in lever_speedups("qwen3.8-27b", pid, "decode", 8192, 1) if r.lever in
                  ("baseline (all BF16)", "FP8 weights"))
    rows.append([pid, f"{float(base.placement.time_lower_bound_s) * 1e3:,.2f} ms",
                 f"{float(fp8w.placement.time_lower_bound_s) * 1e3:,.2f} ms",
                 f"{float(fp8w.placement.tokens_per_s_upper_bound):,.0f}"])
show_table(["part", "batch-1 decode, BF16", "with FP8 weights", "tokens/s ≤ (FP8 weights)"], rows)

# %% [markdown]
# ## Datasheet FP8 vs measured FP8
#
# The measured FP8 matmul rates in the catalog, against each part's dense FP8 roof:

# %%
rows = []
for pid in PARTS:
    p = get_part(pid)
    fp8 = best_measurement(p, "matmul_flops_per_s", "fp8")
    bf16 = best_measurement(p, "matmul_flops_per_s", "bf16")
    rows.append([pid, si(p.peak_flops_per_s("fp8"), "FLOP/s"), si(fp8.value, "FLOP/s"),
                 percent(fp8.value / p.peak_flops_per_s("fp8"), 0),
                 percent(bf16.value / p.peak_flops_per_s("bf16"), 0) if bf16 else "—",
                 f"{fp8.value / p.memory_bandwidth_bytes_per_s:,.0f}"])
show_table(["part", "FP8 datasheet (dense)", "FP8 measured", "of datasheet", "BF16 measured, of datasheet",
            "measured FP8 ridge"], rows)

# %% [markdown]
# FP8 matmuls reach a smaller fraction of their roof than BF16 ones where both are measured: the
# arithmetic got twice as fast, the data movement around it (scaling factors, conversions,
# epilogues) did not.
#
# ## The interview answer
#
# *"What happens to the knee when you move from FP16 to FP8 on an H100?"*

# %%
h100 = get_part("h100-sxm")
fp8_meas = best_measurement(h100, "matmul_flops_per_s", "fp8")
decode = {r.lever: r for r in lever_speedups("qwen3.8-27b", "h100-sxm", "decode", 8192, 1)}
md(f"1. **At fixed bytes the ridge doubles**: {h100.ridge_point_flop_per_byte('fp16'):,.0f} → "
   f"{h100.ridge_point_flop_per_byte('fp8'):,.0f} FLOP/byte (dense figures; the with-sparsity headline would double "
   "both again).\n"
   "2. **But FP8 usually halves the bytes too**: a matmul whose operands are all FP8 doubles its own intensity, so "
   "it keeps its place relative to the knee.\n"
   f"3. **Which side of the knee you are on decides the gain**: prefill (compute-bound) up to 2× from the higher roof; "
   f"batch-1 decode (memory-bound) {decode['FP8 weights'].speedup:.2f}× from FP8 **weights**, "
   f"{decode['FP8 compute'].speedup:.2f}× from FP8 compute.\n"
   f"4. **Measured, not datasheet**: the best FP8 matmul measured on an H100 is {si(fp8_meas.value, 'FLOP/s')}, "
   f"a measured ridge of about {fp8_meas.value / h100.memory_bandwidth_bytes_per_s:,.0f}.\n"
   "5. **What it costs**: accuracy (scaling per tensor or block, outliers), conversions, and a KV cache or state "
   "that may need to stay in higher precision.")

# %% [markdown]
# ## Explore
#
# Choose a part, a phase and a format for each of compute, weights and KV cache. The open square is
# all-BF16; the filled dot is your choice; the text gives the speed-up. Try: FP4 weights with BF16
# compute on a B200 in decode; FP8 compute alone in decode; any FP8 on the A100.

# %%
from roofline_lessons.dashboards import lesson07_dashboard

dashboard = lesson07_dashboard()

# %% [markdown]
# ## Summary
#
# - A faster format raises the compute ceiling and moves the ridge right by the same factor — at
#   fixed bytes.
# - FP8 compute helps compute-bound work (prefill). FP8 weights and an FP8 KV cache help
#   memory-bound work (decode) by cutting bytes. Know which lever you are pulling.
# - Measured FP8 rates sit further below their roof than BF16 ones.
#
# **A question to leave with.** The B200 adds FP4. For a batch-1 decode, which helps more: FP4
# compute or FP4 weights — and why is the answer the same as for FP8?
#
# **Interview questions this lesson prepares you for**
#
# - "What happens to the knee when you move from FP16 to FP8 on an H100?"
# - "Will FP8 speed up our decode? Our prefill? By how much?"
# - "Weight-only quantization vs full FP8: which one for a latency-bound chatbot?"
# - "Why do FP8 kernels reach a lower fraction of peak?"
#
# The exercises for this lesson are in `exercises/07_fp8_knee_shift.ipynb`.
