# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 8 — Measure your own machine
#
# Everything so far stood on datasheet figures and counted bytes. This lesson turns the sketch into
# evidence: you measure the ceilings of the computer in front of you, run real kernels, and place
# them on the roofline you measured.
#
# **By the end of this lesson you can**
#
# 1. measure achieved bandwidth across working-set sizes and read the cache plateaus and the DRAM
#    floor off the curve;
# 2. measure the matrix-multiply rate that serves as your compute roof, and say which BLAS and how
#    many threads produced it;
# 3. place dot, axpy, matrix–vector, matrix–matrix and attention kernels on your measured roofline
#    and explain every gap between estimate and measurement;
# 4. say what a GPU profiler's counters add: a roofline per level of memory.

# %%
# %matplotlib inline
from roofline_lessons import get_part
from roofline_lessons import results
from roofline_lessons.display import md, show_table
from roofline_lessons.measure import MODES, measure
from roofline_lessons.measure_gpu import gpu_status
from roofline_lessons.plots import bandwidth_sweep_chart, measured_roofline
from roofline_lessons.units import binary, percent, si

MODE = "quick"  # "full" measures larger sizes with more repeats: a minute or two instead of seconds

# %% [markdown]
# ## Measure
#
# One call runs every probe: a bandwidth sweep (read, copy and a STREAM-style triad, written so
# numpy makes no temporaries and spread over your cores), matrix multiplies in float64 and float32,
# and the kernels. Each timing is the best of several runs; the spread is kept. The result is saved
# to a new file in your data folder — an earlier measurement is never overwritten.

# %%
# NBVAL_IGNORE_OUTPUT
mine = measure(MODE)
path = results.save(mine, results.new_path(mine))
print(f"saved to {path}")
print(f"{mine.machine['cpu']}, {mine.machine['cores']} cores; numpy {mine.machine['numpy']} with "
      f"{mine.machine['blas']} on {mine.machine['blas_threads']} threads; caches: "
      + ", ".join(f"{k} {binary(v)}" for k, v in mine.machine['caches'].items()))

# %% [markdown]
# A saved file redraws without measuring again — here we load what was just written, exactly as
# you would load last week's file to compare machines:

# %%
again = results.load(path)
assert again.peak_flops_per_s() == mine.peak_flops_per_s()

# %% [markdown]
# ## Bandwidth: plateaus and a floor
#
# Small working sets live in the caches, large ones stream from DRAM. On a log axis the steps are
# the cache levels (the dotted lines are this CPU's cache sizes, per core for L1/L2).

# %%
# NBVAL_IGNORE_OUTPUT
bandwidth_sweep_chart(mine)

# %% [markdown]
# The smallest sizes often look *slow*, not fast: each call is over in microseconds and numpy's
# fixed per-call cost (and waking threads) is a large share of it. The triad plateaus become the
# bandwidth roofs of this machine:

# %%
# NBVAL_IGNORE_OUTPUT
show_table(["roof", "bandwidth"], [[r.name, si(r.bytes_per_s, "B/s")] for r in mine.roofs()])
show_table(["matmul", "n", "GFLOP/s", "spread (median vs best)"],
           [[s.dtype, s.n, f"{s.flops_per_s / 1e9:,.1f}", percent(s.timing.spread, 1)] for s in mine.matmul])

# %% [markdown]
# ## Your ridge, next to the catalog's

# %%
# NBVAL_IGNORE_OUTPUT
ridge = mine.ridge_point_flop_per_byte("float64")
h100 = get_part("h100-sxm")
md(f"This machine: {si(mine.peak_flops_per_s('float64'), 'FLOP/s')} (float64 matmul) over "
   f"{si(mine.dram_bytes_per_s(), 'B/s')} (DRAM triad) = **ridge {ridge:,.1f} FLOP/byte**. An H100 SXM in BF16: "
   f"{h100.ridge_point_flop_per_byte('bf16'):,.0f}. The GPU needs far more work per byte before its arithmetic "
   "becomes the limit — which is why so much LLM inference on it is memory-bound.")

# %% [markdown]
# ## Kernels on the measured roofline
#
# Each kernel's intensity is **estimated** from its operands (each read or written once); its
# performance is **measured**. A kernel above the DRAM roof is being fed from a cache; one far below
# both roofs is losing time to something the roofline does not model.

# %%
# NBVAL_IGNORE_OUTPUT
show_table(["kernel", "shape of", "FLOPs", "bytes (estimated)", "FLOP/byte", "achieved", "best vs median"],
           [[k.name, k.shape, si(k.flops, "FLOP"), si(k.bytes_estimated, "B"), f"{k.intensity:.3g}",
             si(k.flops_per_s, "FLOP/s"), percent(k.timing.spread, 0)] for k in mine.kernels])
measured_roofline(mine)

# %% [markdown]
# Reading the gaps — check each against your own chart. First, the two matrix–vector products:

# %%
small_n, big_n = MODES[MODE]["gemm_k"], MODES[MODE]["gemv_big"]
llc = max(mine.machine["caches"].values()) if mine.machine["caches"] else None
md(f"- **Cache makes a small working set look free.** The {small_n}×{small_n} matrix–vector product reads a "
   f"{binary(small_n * small_n * 8)} matrix; the last-level cache here is {binary(llc) if llc else 'unknown'}. When "
   "the matrix fits, repeated calls never touch DRAM and the dot sits *above* the DRAM roof. The "
   f"{big_n}×{big_n} one ({binary(big_n * big_n * 8)}) cannot hide and lands on it. Batch-1 decode on a GPU is "
   "the second case: its weights never fit in any cache.")

# %% [markdown]
# - **Matrix–matrix climbs with rows.** Rows are the batch: 4, 16, 64 … rows reuse each weight that
#   many times, so the intensity rises until the compute roof takes over — lesson 4 on a CPU.
# - **Per-call overhead.** dot and axpy on large vectors land near the DRAM roof; on tiny vectors they
#   would not, because numpy's fixed cost per call dominates.
# - **Threads.** The bandwidth probes and BLAS use every core; a single thread often cannot draw
#   the full DRAM bandwidth, so single-threaded code sits under a lower roof than the one drawn.
# - **Tiled attention in numpy** is exact and moves few "HBM" bytes, yet it is the slowest kernel:
#   its Python loop over tiles is pure overhead. Fewer bytes only pay when the loop is cheap — which
#   is why FlashAttention is a fused GPU kernel, not a library call per tile.

# %% [markdown]
# ## On a GPU
#
# When PyTorch with a CUDA device is importable, `measure()` also runs device probes: a device-memory
# copy, a BF16 matmul, an FP8 matmul where the GPU has FP8 tensor cores, and a BF16 matrix–vector
# product — and they can be placed against the measured roofline and the catalog roofline of that
# part. No GPU package is a dependency of this course.

# %%
# NBVAL_IGNORE_OUTPUT
usable, reason = gpu_status()
print(reason)
if mine.gpu and mine.gpu.get("available"):
    part_id = mine.gpu.get("catalog_part")
    part = get_part(part_id) if part_id else None
    for probe in mine.gpu["probes"]:
        rate = probe["flops"] / probe["best_s"] if probe["flops"] else probe["bytes"] / probe["best_s"]
        unit = "FLOP/s" if probe["flops"] else "B/s"
        line = f"{probe['name']:28} {si(rate, unit):>14}"
        if part and probe["kind"] == "matmul":
            line += f"  = {percent(rate / part.peak_flops_per_s(probe['dtype']), 0)} of the {part.id} datasheet"
        if part and probe["kind"] == "bandwidth":
            line += f"  = {percent(rate / part.memory_bandwidth_bytes_per_s, 0)} of the {part.id} datasheet"
        print(line)
else:
    print("GPU section skipped: everything above ran on the CPU.")

# %% [markdown]
# ### What real counters add
#
# Estimated intensity assumes each operand crosses the memory bus once. A profiler measures what
# actually crossed. NVIDIA's Nsight Compute reports, per kernel, the counts a **hierarchical
# roofline** is built from:
#
# - **FLOPs by precision** — the tensor-core and FMA instruction counts (e.g. the
#   `sm__inst_executed_pipe_tensor…` and `sm__sass_thread_inst_executed_op_{f,d,h}{add,mul,fma}…`
#   families), weighted 2 per FMA;
# - **bytes at each level** — DRAM (`dram__bytes_read.sum`, `dram__bytes_write.sum`), L2
#   (`lts__t_bytes.sum`) and L1/shared memory (`l1tex__t_bytes.sum`);
# - **elapsed cycles** (`sm__cycles_elapsed.avg`) and the clock, for achieved rates.
#
# Achieved intensity **at each level** is FLOPs divided by that level's bytes; achieved
# performance is FLOPs over elapsed time. One kernel becomes three dots — against the DRAM, L2 and
# L1 roofs — and the level where the dot sits closest to its roof is the one that limits it. That is
# how lesson 6's tiled attention, memory-bound by the HBM count, turns out compute-bound once the
# L2 is counted.

# %% [markdown]
# ## Summary
#
# - A measured roofline has one compute roof (your best matmul) and one bandwidth roof per level of
#   memory; the sweep shows them as plateaus.
# - Estimated intensity is a model; a kernel above the DRAM roof is being fed by a cache, a kernel
#   far below both roofs is paying overhead the roofline does not model.
# - On a GPU, profiler counters give FLOPs and bytes per level, and so a dot per level.
#
# **A question to leave with.** Your large matrix–vector product sat on the DRAM roof once its
# matrix outgrew the caches. What would you expect for a 7B-parameter model's decode step on this
# CPU, in tokens per second?
#
# **Interview questions this lesson prepares you for**
#
# - "How would you build an empirical roofline for a new machine?"
# - "Your kernel plots above the memory roof. Is the roofline wrong?"
# - "Which profiler metrics do you need to place a kernel on a hierarchical roofline?"
#
# The exercises for this lesson are in `exercises/08_measure_your_machine.ipynb`.
