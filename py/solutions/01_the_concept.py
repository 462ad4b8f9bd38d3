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
# # Lesson 1 — Exercises: the concept
#
# Replace each `...` with your answer and run the cell: the checker under it says ✓ or ✗ with a
# hint. Try each one with pencil and paper first; the package is there to check you, not to
# answer for you. The datasheet figures you need are printed in the first cell.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. The exercise notebook `exercises/01_the_concept.ipynb` is
# generated from it; do not edit that one by hand.*

# %%
from roofline_lessons import get_part
from roofline_lessons.course.checks import lesson01 as check
from roofline_lessons.core.units import si

h100 = get_part("h100-sxm")
print(f"{h100.name}: dense BF16 {si(h100.peak_flops_per_s('bf16'), 'FLOP/s')}, "
      f"bandwidth {si(h100.memory_bandwidth_bytes_per_s, 'B/s')} ({h100.source}, as of {h100.as_of})")

# %% [markdown]
# ## Exercise 1.1 — the ridge point, by hand
#
# Without the package: from the two figures above, what is the H100 SXM's BF16 ridge point in
# FLOP/byte? (Within 3 % is fine — round the figures if you like.)

# %%
# BEGIN SOLUTION
ridge_flop_per_byte = 989.4e12 / 3.35e12
# END SOLUTION
check.ridge_point(ridge_flop_per_byte)

# %% [markdown] tags=["solution"]
# Peak over bandwidth: 989.4 × 10¹² FLOP/s ÷ 3.35 × 10¹² bytes/s ≈ 295 FLOP/byte. The units
# divide to FLOP per byte, which is what makes the ridge comparable with a kernel's intensity.

# %% [markdown]
# ## Exercise 1.2 — the profiling report
#
# Batch-1 decode of Qwen3.8-27B in BF16, from an empty KV cache as in the lesson's table, does
# about 2 FLOPs per weight and reads each weight (2 bytes) once. What is the highest fraction of
# the H100's BF16 peak it can reach? Give a **percentage** (for 0.5 % write `0.5`).

# %%
# BEGIN SOLUTION
intensity = 2 / 2  # FLOPs per weight byte
percent_of_peak = 100 * min(989.4e12, 3.35e12 * intensity) / 989.4e12
# END SOLUTION
check.decode_percent_of_peak(percent_of_peak)

# %% [markdown] tags=["solution"]
# With I ≈ 1 the bandwidth roof gives 3.35 TFLOP/s, about 0.34 % of 989 TFLOP/s. That is the
# roof, the best any kernel can do there, so the big fix is in the workload (batching, fewer bytes
# per weight), not the kernel. A real kernel is near that roof only if its measured bandwidth
# confirms it.

# %% [markdown]
# ## Exercise 1.3 — batching to 32
#
# Thirty-two conversations decode together, sharing one pass over the weights. Using FLOPs per
# weight byte as the intensity, what performance can the step attain, in **TFLOP/s**?

# %%
# BEGIN SOLUTION
attainable_tflops = min(989.4e12, 3.35e12 * 32) / 1e12
# END SOLUTION
check.batch32_attainable_tflops(attainable_tflops)

# %% [markdown] tags=["solution"]
# 32 FLOP/byte × 3.35 TB/s ≈ 107 TFLOP/s: 32 times batch 1, still far left of the ridge at 295,
# so the step is still memory-bound.

# %% [markdown]
# ## Exercise 1.4 — which roof?
#
# An 8,192-token prompt is prefilled in one pass. Which roof binds: `"memory"` or `"compute"`?

# %%
# BEGIN SOLUTION
prefill_roof = "compute"
# END SOLUTION
check.prefill_bound(prefill_roof)

# %% [markdown] tags=["solution"]
# Each weight byte serves all 8,192 positions: nearly 8,192 FLOP per weight byte (the lesson
# computes the exact figure), over twenty times the ridge. The flat compute roof binds, so prefill speed is bought with FLOPs.

# %% [markdown]
# ## Exercise 1.5 — the model as code
#
# Write `attainable(intensity, peak_flops_per_s, bandwidth_bytes_per_s)` that returns the attainable
# FLOP/s. The checker calls it on five cases, some left of the ridge and some right of it.

# %%
# BEGIN SOLUTION
def attainable(intensity, peak_flops_per_s, bandwidth_bytes_per_s):
    """Attainable FLOP/s for a kernel of this intensity (FLOP/byte)."""
    return min(peak_flops_per_s, bandwidth_bytes_per_s * intensity)
# END SOLUTION
check.attainable_function(attainable)

# %% [markdown] tags=["solution"]
# The smaller of the two ceilings. `numpy.minimum` does the same for whole arrays of intensities,
# which is how `roofline_lessons.core.roofline.attainable_flops_per_s` is written.
