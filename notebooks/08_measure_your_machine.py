# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
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
from roofline_lessons.datasheets import best_measurement
from roofline_lessons.display import md, show_table
from roofline_lessons.flash import attention_flops, compulsory_hbm_bytes, flash_hbm_bytes
from roofline_lessons.measure import (ATTENTION_HEAD_DIM, ATTENTION_SRAM_BYTES, MODES, cache_capacity_bytes,
                                      fp_pipe_flops, is_monotone, l1_attempt, limiting_roof, m_over_d_squared,
                                      measure, tensor_instruction_flops)
from roofline_lessons.measure_gpu import gpu_status
from roofline_lessons.plots import bandwidth_sweep_chart, measured_roofline
from roofline_lessons.units import binary, percent, si

MODE = "quick"  # "full" measures larger sizes with more repeats: a minute or two instead of seconds

# %% [markdown]
# ## Measure
#
# One call runs every probe: a bandwidth sweep (read, copy and a STREAM-style triad, written so
# numpy makes no temporaries, each core working on its own slice), matrix multiplies in float64 and
# float32, and the kernels. Each timing is the best of several runs; the spread is kept. The result is saved
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
# the cache levels (the dotted lines are this CPU's cache sizes, per core for L1/L2 — with every
# core working, each holds its own slice, so a private level holds that size once per core).
#
# A cache-sized array is over in microseconds, and a numpy call (and waking the threads) has a fixed
# cost of its own. Timed one call per pass, the smallest working sets measure that cost, not the
# cache. So the probe **amortises** it: one numpy call per thread walks the same slice many times
# over (a view that repeats it, no copy), and every timed call moves at least a fixed number of bytes:

# %%
# NBVAL_IGNORE_OUTPUT
triad = sorted((s for s in mine.bandwidth if s.kernel == "triad"), key=lambda s: s.working_set_bytes)
threads = max(s.threads for s in triad)
md(f"Each timed call here moves at least **{binary(MODES[MODE]['bytes_per_call'])}**: the smallest triad working "
   f"set, {binary(triad[0].working_set_bytes)}, is walked {triad[0].passes:,} times per call by {threads} "
   f"thread(s); the largest, {binary(triad[-1].working_set_bytes)}, once.")
bandwidth_sweep_chart(mine)

# %% [markdown]
# The triad plateaus become the bandwidth roofs of this machine. A level's roof is the best rate
# among working sets that fit in half of what that level holds for the threads that ran, and do
# not fit in the level below:

# %%
# NBVAL_IGNORE_OUTPUT
caches = {k: int(v) for k, v in mine.machine["caches"].items()}
shared = mine.machine.get("cache_shared_cpus")
roofs = mine.roofs()
show_table(["roof", f"holds, for {threads} thread(s)", "bandwidth"],
           [[r.name, binary(cache_capacity_bytes(r.name, caches, threads, shared)) if r.name in caches else "—",
             si(r.bytes_per_s, "B/s")] for r in roofs])
order = " ≥ ".join(f"{r.name} {si(r.bytes_per_s, 'B/s')}" for r in roofs)
if is_monotone(roofs):
    md(f"Each roof is at least the one below it — {order} — as a memory hierarchy should be.")
else:
    listing = ", ".join(f"{r.name} {si(r.bytes_per_s, 'B/s')}" for r in roofs)
    md(f"Here the roofs are **not** in order ({listing}). "
       "The probe amortises per-call cost, so what is left is usually another program using the cores while one "
       "level was measured, or two levels whose bandwidths are close for a numpy kernel (one numpy add per core "
       "can be the limit before the cache is). Measure again, or in full mode, before reading the order.")
l1_sample = l1_attempt(MODE)
l2_roof = next((r for r in roofs if r.name == "L2"), None)
if l1_sample and l2_roof:
    n_l1 = l1_sample.working_set_bytes // (3 * 8 * l1_sample.threads)
    word = "below" if l1_sample.bytes_per_s < l2_roof.bytes_per_s else "at or above"
    md(f"**L1 has no roof here.** A triad slice that fits in half of a {binary(caches['L1'])} L1 holds {n_l1:,} "
       f"float64 per array per thread; walked the same amortised way it measured {si(l1_sample.bytes_per_s, 'B/s')}, "
       f"**{word}** the L2 roof ({si(l2_roof.bytes_per_s, 'B/s')}). "
       + ("Rows that short leave numpy's fixed cost per row and per call comparable to the work, so from numpy an "
          "\"L1 roof\" would be a roof of overhead — the sweep starts at slices of twice L1 per thread instead."
          if word == "below" else
          "On this run L1 came out in order; the sweep still starts at slices of twice L1 per thread, because on "
          "many machines rows this short measure numpy's fixed cost per row, not L1."))
show_table(["matmul", "n", "GFLOP/s", "spread (median vs best)"],
           [[s.dtype, s.n, f"{s.flops_per_s / 1e9:,.1f}", percent(s.timing.spread, 1)] for s in mine.matmul])

# %% [markdown]
# ## Your ridge, next to the catalog's

# %%
# NBVAL_IGNORE_OUTPUT
ridge = mine.ridge_point_flop_per_byte("float64")
h100 = get_part("h100-sxm")
h100_ridge = h100.ridge_point_flop_per_byte("bf16")
md(f"This machine: {si(mine.peak_flops_per_s('float64'), 'FLOP/s')} (float64 matmul) over "
   f"{si(mine.dram_bytes_per_s(), 'B/s')} (DRAM triad) = **ridge {ridge:,.1f} FLOP/byte**. An H100 SXM in BF16: "
   f"{h100_ridge:,.0f}, {h100_ridge / ridge:,.0f}× " + ("more" if h100_ridge > ridge else "less") + ". "
   + ("The GPU needs that much more work per byte before its arithmetic becomes the limit — which is why so much "
      "LLM inference on it is memory-bound." if h100_ridge > ridge else ""))

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
llc = max(caches.values()) if caches else None
dram = mine.dram_bytes_per_s()
kern = {k.name: k for k in mine.kernels}


def vs_dram(k):
    """A kernel's achieved bytes/s (estimated bytes over measured time) against the DRAM roof."""
    rate = k.bytes_estimated / k.timing.best_s
    return rate, ("above" if rate > dram else "below")


small_rate, small_word = vs_dram(kern[f"gemv {small_n}×{small_n}"])
big_rate, big_word = vs_dram(kern[f"gemv {big_n}×{big_n}"])
fits = llc is not None and small_n * small_n * 8 <= llc
md(f"- **Cache against DRAM.** The {small_n}×{small_n} matrix–vector product reads a "
   f"{binary(small_n * small_n * 8)} matrix; the last-level cache here is {binary(llc) if llc else 'unknown'}"
   + (", so the matrix fits and repeated calls need not touch DRAM" if fits else ", so the matrix does not fit")
   + f". It moved {si(small_rate, 'B/s')}, **{small_word}** the DRAM roof ({si(dram, 'B/s')})"
   + (": a cache is feeding it, so it sits under a higher, cache-level roof. " if small_word == "above" else
      ". A hypothesis to test: something other than DRAM — BLAS's matrix–vector kernel, its threads or its "
      "per-call cost — limits it, since a cache only lifts a kernel whose own code can go faster. ")
   + f"The "
   f"{big_n}×{big_n} one ({binary(big_n * big_n * 8)}) cannot hide in the cache: {si(big_rate, 'B/s')}, "
   f"{percent(big_rate / dram, 0)} of the DRAM roof. Batch-1 decode on a GPU is the second case: its weights "
   "never fit in any cache.")
gemms = [k for k in mine.kernels if k.name.startswith("gemm")]
climb = "rises" if gemms[-1].flops_per_s > gemms[0].flops_per_s else "does not rise"
md(f"- **Matrix–matrix with more rows.** Rows are the batch: each weight is reused once per row, so the "
   f"intensity goes from {gemms[0].intensity:.3g} to {gemms[-1].intensity:.3g} FLOP/byte over "
   f"{', '.join(k.name.split('×')[0].removeprefix('gemm ') for k in gemms)} rows, and the achieved rate {climb} from "
   f"{si(gemms[0].flops_per_s, 'FLOP/s')} to {si(gemms[-1].flops_per_s, 'FLOP/s')} "
   f"({percent(gemms[-1].flops_per_s / mine.peak_flops_per_s('float64'), 0)} of the float64 matmul roof) — "
   "lesson 4 on a CPU.")
dot_rate, _ = vs_dram(kern["dot"])
axpy_rate, _ = vs_dram(kern["axpy"])
md(f"- **Large vectors.** dot moved {si(dot_rate, 'B/s')} ({percent(dot_rate / dram, 0)} of the DRAM roof) and "
   f"axpy {si(axpy_rate, 'B/s')} ({percent(axpy_rate / dram, 0)}). On tiny vectors, timed one call at a time, "
   "numpy's fixed cost per call would dominate — the reason the bandwidth probe amortises it. (axpy is two numpy "
   "passes per block, and its estimate counts one.)")

# %% [markdown]
# - **Threads.** The bandwidth probes and BLAS use every core; a single thread often cannot draw
#   the full DRAM bandwidth, so single-threaded code sits under a lower roof than the one drawn.
#
# ### Tiled attention and M/d²
#
# FlashAttention's Theorem 2 (Dao et al., 2022): standard attention makes Θ(N·d + N²) HBM
# accesses; the tiled kernel Θ(N²·d²/M), with M the SRAM size in elements. The N² term of the
# standard count becomes N²·d²/M — smaller only when **M/d² is large**. The experiment runs the
# same N and d with two simulated SRAM sizes (float64 here, so M is the SRAM in bytes over 8):

# %%
# NBVAL_IGNORE_OUTPUT
naive = kern["attention, naive"]
tiled = [k for k in mine.kernels if k.name.startswith("attention, tiled")]
rows = [["naive (S and P in HBM)", "—", "—", si(naive.bytes_estimated, "B"), "1", "1"]]
for sram, k in zip(ATTENTION_SRAM_BYTES, tiled):
    rows.append([f"tiled, SRAM {binary(sram)}", f"{sram // 8:,}", f"{m_over_d_squared(sram, ATTENTION_HEAD_DIM):g}",
                 si(k.bytes_estimated, "B"), f"{k.bytes_estimated / naive.bytes_estimated:.2f}",
                 f"{k.timing.best_s / naive.timing.best_s:,.2g}"])
show_table([f"attention, {naive.shape}", "M (elements)", "M/d²", "HBM bytes", "bytes ÷ naive", "time ÷ naive"], rows)
parts = []
for sram, k in zip(ATTENTION_SRAM_BYTES, tiled):
    ratio = k.bytes_estimated / naive.bytes_estimated
    parts.append(f"with M/d² = {m_over_d_squared(sram, ATTENTION_HEAD_DIM):g} the tiled kernel moves "
                 + (f"{1 / ratio:.1f}× **fewer** bytes than the naive one" if ratio < 1 else
                    f"{ratio:.1f}× **more** bytes than the naive one"))
times = [f"M/d² = {m_over_d_squared(sram, ATTENTION_HEAD_DIM):g}: "
         + (f"{k.timing.best_s / naive.timing.best_s:,.2g}× **slower**" if k.timing.best_s > naive.timing.best_s
            else f"{naive.timing.best_s / k.timing.best_s:,.2g}× **faster**")
         for sram, k in zip(ATTENTION_SRAM_BYTES, tiled)]
md("Read the table: " + "; ".join(parts) + ". A small SRAM means small tiles, so every query block and its running "
   "output are re-read once per key block: the N²·d²/M term is then no smaller than the N² it replaced. "
   f"Time against the naive kernel — {'; '.join(times)}. The time also pays for a Python loop over tiles, which "
   "the byte count does not see and which grows with the number of tiles; fewer bytes only pay when that loop is "
   "cheap — which is why FlashAttention is a fused GPU kernel, not a library call per tile.")

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
    print(f"L2 {binary(mine.gpu['l2_bytes'])} ({mine.gpu['l2_source']}); memory probes sized past it:")
    for probe in mine.gpu["probes"]:
        rate = probe["flops"] / probe["best_s"] if probe["flops"] else probe["bytes"] / probe["best_s"]
        unit = "FLOP/s" if probe["flops"] else "B/s"
        line = f"{probe['name']:28} {si(rate, unit):>14}"
        if part and probe["kind"] == "matmul":
            line += f"  = {percent(rate / part.peak_flops_per_s(probe['dtype']), 0)} of the {part.id} datasheet"
        if part and probe["kind"] == "bandwidth":
            line += f"  = {percent(rate / part.memory_bandwidth_bytes_per_s, 0)} of the {part.id} datasheet"
        if "working_set_bytes" in probe:
            line += f"  working set {probe['working_set_bytes'] / mine.gpu['l2_bytes']:,.0f}× the L2"
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
# - **FLOPs by precision**, from two kinds of instruction count. Per-thread floating-point
#   instructions (`sm__sass_thread_inst_executed_op_{f,d,h}{add,mul,fma}…`) count 2 FLOPs per FMA and
#   1 per add or multiply. Tensor-pipe instructions (`sm__inst_executed_pipe_tensor…`) are warp-level
#   matrix multiply-accumulates: each is m·n·k multiply-adds for its shape, so it counts 2·m·n·k
#   FLOPs, never 2;
# - **bytes at each level** — DRAM (`dram__bytes_read.sum`, `dram__bytes_write.sum`), L2
#   (`lts__t_bytes.sum`) and L1/shared memory (`l1tex__t_bytes.sum`);
# - **elapsed cycles** (`sm__cycles_elapsed.avg`) and the clock, for achieved rates.

# %%
md(f"For example, one m16n8k16 tensor instruction is {tensor_instruction_flops(1, 16, 8, 16):,.0f} FLOPs; "
   f"counted as if it were one FMA it would be {fp_pipe_flops(fma=1):,.0f}, "
   f"{tensor_instruction_flops(1, 16, 8, 16) / fp_pipe_flops(fma=1):,.0f}× too few.")

# %% [markdown]
# Achieved intensity **at each level** is FLOPs divided by that level's bytes; achieved
# performance is FLOPs over elapsed time. One kernel becomes three dots — against the DRAM, L2 and
# L1 roofs — and the attainable rate is the **lowest** of the compute roof and every level's
# bandwidth × its intensity. Lesson 6's tiled attention, with its numbers:

# %%
d6, n6 = 128, 32768
peak6 = h100.peak_flops_per_s("bf16")
f6 = float(attention_flops(n6, d6, causal=True))
i_tiled6 = f6 / flash_hbm_bytes(n6, d6, h100.shared_memory_per_sm_bytes, 2, causal=True)
i_ideal6 = f6 / float(compulsory_hbm_bytes(n6, d6))
l2_6 = best_measurement(h100, "l2_bandwidth_bytes_per_s")
hbm_only, hbm_only_rate = limiting_roof(peak6, {"HBM": (h100.memory_bandwidth_bytes_per_s, i_tiled6)})
levels6 = {"HBM": (h100.memory_bandwidth_bytes_per_s, i_ideal6), "L2": (l2_6.value, i_tiled6)}
limit6, rate6 = limiting_roof(peak6, levels6)
show_table(["roof (H100 SXM, BF16)", "bandwidth", "FLOP/byte at that level", "attainable"],
           [["compute", "—", "—", si(peak6, "FLOP/s")]]
           + [[name, si(bw, "B/s"), f"{i:,.0f}", si(bw * i, "FLOP/s")] for name, (bw, i) in levels6.items()])
kind = {"compute": "compute-bound", "L2": "L2-bound", "HBM": "HBM-bound"}
md(f"Causal attention, N = {n6:,}, d = {d6}, tiled in {binary(h100.shared_memory_per_sm_bytes)} of shared memory. "
   f"Charging every tiled byte to HBM it is {kind[hbm_only]} at {si(hbm_only_rate, 'FLOP/s')}. With the re-reads "
   f"served by L2 ({si(l2_6.value, 'B/s')}, {l2_6.source}) and HBM supplying only Q, K, V and O once, the lowest "
   f"roof is **{limit6}**: {kind[limit6]}, at {si(rate6, 'FLOP/s')} = {percent(rate6 / peak6, 0)} of peak — "
   + ("still a memory roof, but a higher one than the HBM-only count gave." if limit6 != "compute" and
      rate6 > hbm_only_rate else "the dot has reached the compute roof." if limit6 == "compute" else ""))

# %% [markdown]
# ## Summary
#
# - A measured roofline has one compute roof (your best matmul) and one bandwidth roof per level of
#   memory; the sweep shows them as plateaus.
# - Estimated intensity is a model; a kernel above the DRAM roof is being fed by a cache, a kernel
#   far below both roofs is paying overhead the roofline does not model.
# - Small working sets need amortised timing: one call per pass measures numpy's overhead, not the
#   cache.
# - Tiling saves HBM bytes only when M/d² is large; with M ≈ d² it moves more than the naive kernel.
# - On a GPU, profiler counters give FLOPs (tensor instructions at 2·m·n·k each) and bytes per
#   level, and so a dot per level; the lowest of those roofs is the limit.
#
# **A question to leave with.** Your large matrix–vector product, once its matrix outgrew the
# caches, ran at the fraction of the DRAM roof shown above. What would you expect for a
# 7B-parameter model's decode step on this CPU, in tokens per second?
#
# **Interview questions this lesson prepares you for**
#
# - "How would you build an empirical roofline for a new machine?"
# - "Your kernel plots above the memory roof. Is the roofline wrong?"
# - "Which profiler metrics do you need to place a kernel on a hierarchical roofline?"
#
# The exercises for this lesson are in `exercises/08_measure_your_machine.ipynb`.
