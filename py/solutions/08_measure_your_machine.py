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
# # Lesson 8 — Exercises: measure your own machine
#
# These exercises use the example measurement that ships with the course, so they run anywhere.
# To use your own, replace `results.example()` with `results.load(path)` for a file you saved in
# the lesson (`results.saved()` lists them). 8.1 and 8.3 are pencil-and-paper.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/08_measure_your_machine.ipynb` is generated from it.*

# %%
from roofline_lessons.measure import results
from roofline_lessons.course.checks import lesson08 as check
from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.units import si

measurement = results.example()
print(f"{measurement.machine['cpu']}, {measurement.machine['cores']} cores ({measurement.mode} mode): "
      f"float64 matmul {si(measurement.peak_flops_per_s('float64'), 'FLOP/s')}, "
      f"DRAM triad {si(measurement.dram_bytes_per_s(), 'B/s')}")

# %% [markdown]
# ## Exercise 8.1 — what a triad moves, by hand
#
# STREAM's triad computes `a = b + s * c` over arrays of 10,000,000 float64. How many **MB** (10⁶
# bytes) does one pass move, by STREAM's convention (each array read or written once)?

# %%
# BEGIN SOLUTION
triad_mb = 3 * 10_000_000 * 8 / 1e6
# END SOLUTION
check.triad_megabytes(triad_mb)

# %% [markdown] tags=["solution"]
# Read b, read c, write a: 3 × 80 MB = 240 MB. (A real cache also reads a before writing it —
# "write-allocate" — which STREAM does not count.)

# %% [markdown]
# ## Exercise 8.2 — the measured ridge
#
# From `measurement`, compute the ridge of the measured roofline: the float64 matmul rate over the
# DRAM bandwidth. Pass the measurement to the checker too.

# %%
# BEGIN SOLUTION
ridge = measurement.peak_flops_per_s("float64") / measurement.dram_bytes_per_s()
# END SOLUTION
check.measured_ridge(ridge, measurement)

# %% [markdown] tags=["solution"]
# A few FLOPs per byte on a CPU, against hundreds on a GPU: the CPU is far more "balanced", so many
# more kernels are compute-bound on it.

# %% [markdown]
# ## Exercise 8.3 — a matrix–vector product's intensity, by hand
#
# A 4096×4096 float64 matrix times a vector. Estimated FLOPs per byte, with every operand read or
# written once?

# %%
# BEGIN SOLUTION
n = 4096
gemv_i = 2 * n * n / (8 * (n * n + 2 * n))
# END SOLUTION
check.gemv_intensity(gemv_i)

# %% [markdown] tags=["solution"]
# 2 FLOPs per matrix element, 8 bytes per matrix element: 0.25 FLOP/byte — the same shape as
# batch-1 decode in float64 (in BF16 it would be 1).

# %% [markdown]
# ## Exercise 8.4 — an LLM on this CPU
#
# Llama-2-7B in BF16, batch-1 decode with a short context, on the measured machine. Upper bound on
# tokens per second? (Decode is memory-bound: the bytes a token must move over DRAM bandwidth.)

# %%
# BEGIN SOLUTION
bytes_per_token = float(model_cost("llama-2-7b", phase="decode", context_tokens=256).compulsory_bytes)
cpu_tokens_per_s = measurement.dram_bytes_per_s() / bytes_per_token
# END SOLUTION
check.cpu_decode_tokens_per_s(cpu_tokens_per_s, measurement)

# %% [markdown] tags=["solution"]
# About 13.3 GB per token (`compulsory_bytes`: the weights once, the KV cache, the token in and
# the logits out) at a few tens of GB/s: an upper bound of a couple of tokens per second. A GPU's
# HBM is two orders of magnitude faster, and that — not its FLOPs — is why it decodes faster.

# %% [markdown]
# ## Exercise 8.5 — above the roof
#
# A kernel's measured point sits above the DRAM bandwidth roof. Which is it:
# `"the roofline is wrong"`, `"a cache is feeding it"` or `"it is compute-bound"`?

# %%
# BEGIN SOLUTION
why = "a cache is feeding it"
# END SOLUTION
check.above_the_roof(why)

# %% [markdown] tags=["solution"]
# The DRAM roof assumes every byte comes from DRAM. A working set that fits in a cache is served
# faster: the kernel is under a higher, cache-level roof.
