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
# # Lesson 1 — Exercises: the concept
#
# Replace each `...` with your answer and run the cell: the checker under it says ✓ or ✗ with a
# hint. Try each one with pencil and paper first; the package is there to check you, not to
# answer for you. The datasheet figures you need are printed in the first cell.

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
ridge_flop_per_byte = ...  # your answer here
check.ridge_point(ridge_flop_per_byte)

# %% [markdown]
# ## Exercise 1.2 — the profiling report
#
# Batch-1 decode of Qwen3.8-27B in BF16, from an empty KV cache as in the lesson's table, does
# about 2 FLOPs per weight and reads each weight (2 bytes) once. What is the highest fraction of
# the H100's BF16 peak it can reach? Give a **percentage** (for 0.5 % write `0.5`).

# %%
intensity = ...  # your answer here
percent_of_peak = ...  # your answer here
check.decode_percent_of_peak(percent_of_peak)

# %% [markdown]
# ## Exercise 1.3 — batching to 32
#
# Thirty-two conversations decode together, sharing one pass over the weights. Using FLOPs per
# weight byte as the intensity, what performance can the step attain, in **TFLOP/s**?

# %%
attainable_tflops = ...  # your answer here
check.batch32_attainable_tflops(attainable_tflops)

# %% [markdown]
# ## Exercise 1.4 — which roof?
#
# An 8,192-token prompt is prefilled in one pass. Which roof binds: `"memory"` or `"compute"`?

# %%
prefill_roof = ...  # your answer here
check.prefill_bound(prefill_roof)

# %% [markdown]
# ## Exercise 1.5 — the model as code
#
# Write `attainable(intensity, peak_flops_per_s, bandwidth_bytes_per_s)` that returns the attainable
# FLOP/s. The checker calls it on five cases, some left of the ridge and some right of it.

# %%
def attainable(intensity, peak_flops_per_s, bandwidth_bytes_per_s):
    """Attainable FLOP/s for a kernel of this intensity (FLOP/byte)."""
    return ...  # your code here

check.attainable_function(attainable)
