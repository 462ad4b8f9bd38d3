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
# # Lesson 8 — Exercises: measure your own machine
#
# These exercises use the example measurement that ships with the course, so they run anywhere.
# To use your own, replace `results.example()` with `results.load(path)` for a file you saved in
# the lesson (`results.saved()` lists them). 8.1 and 8.3 are pencil-and-paper.

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
triad_mb = ...  # your answer here
check.triad_megabytes(triad_mb)

# %% [markdown]
# ## Exercise 8.2 — the measured ridge
#
# From `measurement`, compute the ridge of the measured roofline: the float64 matmul rate over the
# DRAM bandwidth. Pass the measurement to the checker too.

# %%
ridge = ...  # your answer here
check.measured_ridge(ridge, measurement)

# %% [markdown]
# ## Exercise 8.3 — a matrix–vector product's intensity, by hand
#
# A 4096×4096 float64 matrix times a vector. Estimated FLOPs per byte, with every operand read or
# written once?

# %%
n = ...  # your answer here
gemv_i = ...  # your answer here
check.gemv_intensity(gemv_i)

# %% [markdown]
# ## Exercise 8.4 — an LLM on this CPU
#
# Llama-2-7B in BF16, batch-1 decode with a short context, on the measured machine. The bound on
# tokens per second at the measured DRAM roof? (Decode is memory-bound: the bytes a token must move
# over DRAM bandwidth.)

# %%
bytes_per_token = ...  # your answer here
cpu_tokens_per_s = ...  # your answer here
check.cpu_decode_tokens_per_s(cpu_tokens_per_s, measurement)

# %% [markdown]
# ## Exercise 8.5 — above the roof
#
# A kernel's measured point sits above the DRAM bandwidth roof you measured with numpy. Which
# explains it: `"the roofline is wrong"`, `"a cache is feeding it"`, `"the measured roof is too
# low"` or `"it is compute-bound"`? (More than one may be right; give one.)

# %%
why = ...  # your answer here
check.above_the_roof(why)
