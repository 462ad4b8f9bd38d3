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

# %% jupyter={"source_hidden": true} tags=["solution"]
from roofline_lessons.core.units import percent
from roofline_lessons.measure.probes import (READ_BEATS_TRIAD, STREAM_ARRAYS, STREAM_WRITES, dram_roof_check,
                                             write_allocate_factor)
from roofline_lessons.viz.display import md

factor = write_allocate_factor("triad")
assert STREAM_ARRAYS["triad"] * 10_000_000 * 8 / 1e6 == triad_mb
md(f"Read b, read c, write a: {STREAM_ARRAYS['triad']} arrays × {10_000_000 * 8 / 1e6:,.0f} MB = {triad_mb:,.0f} MB. "
   "Without non-temporal stores, a CPU also reads a's lines before writing them (**write-allocate**), which "
   f"STREAM does not count: {STREAM_ARRAYS['triad'] + STREAM_WRITES['triad']} arrays cross the bus, "
   f"{float(triad_mb * factor):,.0f} MB — {factor} of the count.")

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
# Llama-2-7B in BF16, batch-1 decode with a short context, on the measured machine. The bound on
# tokens per second at the measured DRAM roof? (Decode is memory-bound: the bytes a token must move
# over DRAM bandwidth.)

# %%
# BEGIN SOLUTION
bytes_per_token = float(model_cost("llama-2-7b", phase="decode", context_tokens=256).compulsory_bytes)
cpu_tokens_per_s = measurement.dram_bytes_per_s() / bytes_per_token
# END SOLUTION
check.cpu_decode_tokens_per_s(cpu_tokens_per_s, measurement)

# %% [markdown] tags=["solution"]
# About 13.3 GB per token (`compulsory_bytes`: the weights once, the KV cache, the token in and
# the logits out) at a few tens of GB/s: a couple of tokens per second. It is a bound for code that
# streams no faster than numpy's triad did; the triad's roof is a lower bound on the memory (8.5),
# so a faster decoder could beat it by as much as that roof is low. A GPU's HBM is two orders of
# magnitude faster, and that — not its FLOPs — is why it decodes faster.

# %% [markdown]
# ## Exercise 8.5 — above the roof
#
# A kernel's measured point sits above the DRAM bandwidth roof you measured with numpy. Which
# explains it: `"the roofline is wrong"`, `"a cache is feeding it"`, `"the measured roof is too
# low"` or `"it is compute-bound"`? (More than one may be right; give one.)

# %%
# BEGIN SOLUTION
why = "the measured roof is too low"
# END SOLUTION
check.above_the_roof(why)

# %% [markdown] tags=["solution"]
# Two are right. The DRAM roof assumes every byte comes from DRAM, at the rate numpy's triad
# reached. A working set that fits in a cache is served faster: the kernel is under a higher,
# cache-level roof. And the triad's rate can sit below what the memory delivers to another kernel's
# traffic — numpy is not an optimised STREAM, STREAM's count leaves out the write-allocate read,
# and a stream of reads alone commonly runs faster than a triad's mix of reads and writes even in
# tuned code — so a kernel that streams better than numpy's triad plots above it from DRAM. The
# example measurement's `dot`, which only reads, tests the second case:

# %% jupyter={"source_hidden": true} tags=["solution"]
from roofline_lessons.core.units import binary, num

dot = dram_roof_check(measurement, "dot")
assert dot.verdict == READ_BEATS_TRIAD and not dot.fits_in_cache  # its best run; the median run is judged below
median_words = {"under the roof": "under the triad roof even as STREAM counts it",
                "within the write-allocate gap": "above the STREAM count but within the write-allocate one",
                READ_BEATS_TRIAD: "above both counts too"}
md(f"It reads {binary(dot.working_set_bytes)} per call, {num(dot.working_set_bytes / dot.last_level_cache_bytes, 2)}× "
   f"the largest cache reported, so none of the caches reported can hold it. Its best run moved "
   f"{si(dot.best_bytes_per_s, 'B/s')}: {percent(dot.best_bytes_per_s / dot.stream_roof_bytes_per_s, 0)} of the triad "
   f"roof counted STREAM's way and {percent(dot.best_bytes_per_s / dot.write_allocate_roof_bytes_per_s, 0)} of it "
   f"counted with write-allocate (× {factor}). A read-only kernel's bytes are its traffic, so in that run DRAM "
   "delivered at least that much to read-only traffic: the triad roof understates what this memory delivers to it. "
   f"Its median run moved {si(dot.median_bytes_per_s, 'B/s')}, "
   f"{percent(dot.median_bytes_per_s / dot.stream_roof_bytes_per_s, 0)} of the STREAM-counted roof: "
   f"{median_words[dot.median_verdict]}. "
   + ("Both runs say the same." if dot.median_verdict == dot.verdict else
      f"So the example shows the second case in its fastest run only: its runs disagreed "
      f"{num(dot.best_bytes_per_s / dot.median_bytes_per_s, 3)}-fold, and a reading that rests on one fast run is one "
      "to confirm by measuring again. ")
   + "The two right answers stand either way: a point above the DRAM roof was fed by a cache, or the roof drawn is "
   "below what the memory delivers to that kernel's traffic.")
