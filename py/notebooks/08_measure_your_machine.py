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
from fractions import Fraction

from roofline_lessons import get_part
from roofline_lessons.measure import results
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.topics.flash import (attention_flops, compulsory_hbm_bytes, flash2_hbm_bytes, flash_hbm_bytes,
                                           l2_bandwidth_figures)
from roofline_lessons.measure.probes import (ATTENTION_HEAD_DIM, ATTENTION_SRAM_BYTES, MODES, NEAR_ROOF, NOISY_SPREAD,
                                             READ_BEATS_TRIAD, STREAM_ARRAYS, STREAM_WRITES, attention_tiles,
                                             break_even_m_over_d_squared, cache_capacity_bytes, dram_roof_check,
                                             fp_pipe_flops, is_monotone, l1_attempt, largest_spread, limiting_roof,
                                             m_over_d_squared, measure, roofline_top_index, shape_against_roofline,
                                             tensor_instruction_flops, trend_words, write_allocate_factor)
from roofline_lessons.measure.gpu import gpu_status
from roofline_lessons.viz.plots import bandwidth_sweep_chart, measured_roofline
from roofline_lessons.core.units import binary, num, percent, si

MODE = "quick"  # "full" measures larger sizes with more repeats: a minute or two instead of seconds

# %% [markdown]
# ## Measure
#
# One call runs every probe: a bandwidth sweep (read, copy and a STREAM-style triad, written so
# numpy makes no temporaries, each core working on its own slice, its bytes counted STREAM's way —
# what that count leaves out comes further down), matrix multiplies in float64 and
# float32, and the kernels. Every timing — each kernel, the tiled attention ones included — is the best of
# several runs (`MODES[MODE]["repeats"]`), and the spread (median and worst against best) is kept: a large
# spread means something else was using the cores, and the figures are noisy. The result is saved to a new
# file in your data folder — an earlier measurement is never overwritten.

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

# %% jupyter={"source_hidden": true}
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


def noise_warning(samples, what):
    """A warning line when the runs of ``samples`` disagreed by more than NOISY_SPREAD."""
    worst = largest_spread(s.timing for s in samples)
    if worst > NOISY_SPREAD:
        md(f"**Warning: noisy timings.** Among the {what}, the median or slowest run was up to "
           f"{percent(worst, 0)} slower than the best (above {percent(NOISY_SPREAD, 0)}): the machine was busy "
           "while they ran, so these figures are noisy. Close other programs and measure again before reading "
           "small differences.")


print(f"{MODES[MODE]['repeats']} runs per timing ({MODE} mode)")
show_table(["matmul", "n", "GFLOP/s", "spread (median vs best)", "spread (worst vs best)"],
           [[s.dtype, s.n, f"{s.flops_per_s / 1e9:,.1f}", percent(s.timing.spread, 1), percent(s.timing.worst_spread, 1)]
            for s in mine.matmul])
noise_warning(mine.matmul, "matrix multiplies")

# %% [markdown]
# ## Your ridge, next to the catalog's

# %% jupyter={"source_hidden": true}
# NBVAL_IGNORE_OUTPUT
ridge = mine.ridge_point_flop_per_byte("float64")
ridge32 = mine.ridge_point_flop_per_byte("float32")
h100 = get_part("h100-sxm")
h100_ridge32 = h100.ridge_point_flop_per_byte("fp32")
h100_ridge = h100.ridge_point_flop_per_byte("bf16")


def ratio_words(a, b, words=("more", "less")):
    """'N× more' or 'N× less': a against b."""
    return f"{a / b:,.1f}× {words[0]}" if a >= b else f"{b / a:,.1f}× {words[1]}"


md(f"This machine: {si(mine.peak_flops_per_s('float64'), 'FLOP/s')} (its best float64 matrix multiply: "
   f"{mine.peak_source('float64')}) over {si(mine.dram_bytes_per_s(), 'B/s')} (DRAM triad) = **ridge {ridge:,.1f} "
   f"FLOP/byte** in float64; with the best float32 one ({si(mine.peak_flops_per_s('float32'), 'FLOP/s')}) it is "
   f"**{ridge32:,.1f}**.\n\n"
   f"Like for like in format — float32 on both, no tensor cores on the GPU — an H100 SXM's FP32 ridge (catalog "
   f"{si(h100.peak_flops_per_s('fp32'), 'FLOP/s')} over {si(h100.memory_bandwidth_bytes_per_s, 'B/s')}) is "
   f"{h100_ridge32:,.1f} FLOP/byte, {ratio_words(h100_ridge32, ridge32)} than this CPU's float32 ridge. Not like for "
   "like in kind, though: the GPU's two figures are datasheet peaks, this machine's are what numpy and its BLAS "
   "reached — lower bounds on what its cores and memory can do (the DRAM one more so, as *What the DRAM roof "
   "counts* below shows) — so this ridge is an estimate and the ratio says roughly, not exactly, how the two "
   "machines' balances compare. "
   f"The ridge LLM inference meets on that GPU is BF16 on tensor cores, {h100_ridge:,.0f} FLOP/byte — "
   f"{ratio_words(h100_ridge, h100_ridge32)} than its own FP32 ridge. That further factor is the format and the "
   "tensor cores, not the memory system, so setting the GPU's BF16 ridge beside this CPU's float32 or float64 one "
   "would mix the two: to compare the machines for a model, measure this CPU in the format the model runs in.")

# %% [markdown]
# ## Kernels on the measured roofline
#
# Each kernel's intensity is **estimated** from its operands (each read or written once); its
# performance is **measured**. A kernel above the DRAM roof is being fed from a cache, or the roof
# drawn is lower than what the memory can deliver (*What the DRAM roof counts*, below); one far
# below both roofs is losing time to something the roofline does not model.

# %%
# NBVAL_IGNORE_OUTPUT
show_table(["kernel", "shape of", "FLOPs", "bytes (estimated)", "FLOP/byte", "achieved", "spread (median vs best)",
            "spread (worst vs best)"],
           [[k.name, k.shape, si(k.flops, "FLOP"), si(k.bytes_estimated, "B"), f"{num(k.intensity)}",
             si(k.flops_per_s, "FLOP/s"), percent(k.timing.spread, 0), percent(k.timing.worst_spread, 0)]
            for k in mine.kernels])
noise_warning(mine.kernels, "kernels")
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
big_feed = mine.feeding_roof(kern[f"gemv {big_n}×{big_n}"].bytes_estimated)  # the roof that feeds its calls
fits = llc is not None and small_n * small_n * 8 <= llc
md(f"- **Cache against DRAM.** The {small_n}×{small_n} matrix–vector product reads a "
   f"{binary(small_n * small_n * 8)} matrix; the last-level cache here is {binary(llc) if llc else 'unknown'}"
   + (", so the matrix fits and repeated calls need not touch DRAM" if fits else ", so the matrix does not fit")
   + f". It moved {si(small_rate, 'B/s')}, **{small_word}** the DRAM roof ({si(dram, 'B/s')})"
   + (": a cache is feeding it, so it sits under a higher, cache-level roof. " if small_word == "above" else
      ". A hypothesis to test: something other than DRAM — BLAS's matrix–vector kernel, its threads or its "
      "per-call cost — limits it, since a cache only lifts a kernel whose own code can go faster. ")
   + f"The {big_n}×{big_n} one ({binary(big_n * big_n * 8)}) "
   + ("fits in no cache reported here" if big_feed.name == "DRAM" else
      f"still fits in the {big_feed.name} as this measurement counts it, so it too may be cache-fed")
   + f": {si(big_rate, 'B/s')}, {percent(big_rate / dram, 0)} of the DRAM roof. Batch-1 decode on a GPU is the "
   "DRAM case: its weights never fit in any cache.")
gemms = sorted((k for k in mine.kernels if k.name.startswith("gemm")), key=lambda k: k.intensity)
peak64 = mine.peak_flops_per_s("float64")
rows_of = {k.name: k.name.split('×')[0].removeprefix('gemm ') for k in gemms}
labels = [f"{rows_of[k.name]} rows" for k in gemms]
rates = [k.flops_per_s for k in gemms]
rate_fmt = lambda r: si(r, "FLOP/s")  # noqa: E731
# the roof that feeds each product, called again and again: the smallest cache holding its whole working set
feeds = [mine.feeding_roof(k.bytes_estimated) for k in gemms]
attainable = [min(peak64, f.bytes_per_s * k.intensity) for f, k in zip(feeds, gemms)]
fracs = [r / a for r, a in zip(rates, attainable)]
levels = list(dict.fromkeys(f.name for f in feeds))
span = f"{si(gemms[0].bytes_estimated, 'B')} at {labels[0]} to {si(gemms[-1].bytes_estimated, 'B')} at {labels[-1]}"
text = (f"- **Matrix–matrix with more rows.** Rows are the batch: each weight is reused once per row, so the "
        f"intensity grows from {num(gemms[0].intensity)} to {num(gemms[-1].intensity)} FLOP/byte over "
        f"{', '.join(rows_of.values())} rows, and the achieved rate {trend_words(labels, rates, rate_fmt)}. "
        f"Every product reads the same {binary(8 * MODES[MODE]['gemm_k'] ** 2)} weight matrix, call after call, "
        "so which memory feeds it decides its bandwidth roof: ")
if levels == ["DRAM"]:
    text += (f"its working set ({span}) fits in no cache reported here, so DRAM feeds every call and the DRAM roof "
             f"applies ({si(dram, 'B/s')}, ridge {peak64 / dram:,.1f} FLOP/byte). ")
elif len(levels) == 1:
    lvl = feeds[0]
    text += (f"its whole working set ({span}) fits in the {lvl.name} "
             f"({binary(cache_capacity_bytes(lvl.name, caches, threads, shared))} for {threads} thread(s)), so after "
             f"the first call the {lvl.name} feeds it, not DRAM. The roof that applies is the {lvl.name} one "
             f"({si(lvl.bytes_per_s, 'B/s')}, against DRAM's {si(dram, 'B/s')}), and its ridge is "
             f"{peak64 / lvl.bytes_per_s:,.2f} FLOP/byte, not the DRAM ridge's {ridge:,.1f}. ")
else:
    text += ("the products do not all fit the same level — "
             + ", ".join(f"{lab} from the {f.name}" for lab, f in zip(labels, feeds))
             + " — so each is judged against its own level's roof. ")
text += (f"Against the roof that applies — the lower of the compute roof ({rate_fmt(peak64)}) and that bandwidth × "
         "intensity — they reach " + ", ".join(f"{lab} {percent(f, 0)}" for lab, f in zip(labels, fracs)) + ". ")
bw_side = [i for i, (k, f) in enumerate(zip(gemms, feeds)) if k.intensity < peak64 / f.bytes_per_s]
if not bw_side:
    text += ("Every one sits right of that ridge: all are compute-side, so no bandwidth roof binds them and the "
             "question is how close each comes to the compute roof. ")
elif all(fracs[i] >= NEAR_ROOF for i in bw_side):
    text += (f"Left of the ridge ({', '.join(labels[i] for i in bw_side)}) the bandwidth roof is the one that "
             f"binds, and each reaches at least {percent(NEAR_ROOF, 0)} of it: near that roof"
             + (" (above 100 %: something fed it faster than the roof drawn — a faster level, or a roof measured "
                "low)" if any(fracs[i] > 1 for i in bw_side) else "") + ". ")
else:
    text += (f"Left of the ridge ({', '.join(labels[i] for i in bw_side)}) the bandwidth roof is the one that binds, "
             f"and below {percent(NEAR_ROOF, 0)} of it a point is not on that roof: something the roofline does not "
             "model sets its time. A hypothesis to test: a fixed cost per call — BLAS's dispatch and waking its "
             "threads — or another program on the cores. ")
noisy = largest_spread(k.timing for k in gemms) > NOISY_SPREAD
again = ("These timings were noisy (a spread above " + percent(NOISY_SPREAD, 0) + " in the table), so measure "
         "again on an idle machine before reading a mechanism into them." if noisy else
         "The runs of each agreed, so a hypothesis to test: BLAS runs different code for short and tall "
         "matrices (its blocking and threading change with the shape), which no roofline models.")
if any(b < a for a, b in zip(attainable, attainable[1:])):  # different levels feed different products
    text += ("\n\n  Their attainable rates come from different roofs, so they are not one curve whose shape the "
             "measured rates could follow: read each product's fraction above instead.")
else:
    top = roofline_top_index(attainable)  # where the attainable rate stops rising
    if attainable[top] == peak64:
        reach = (f"is the compute roof, {rate_fmt(peak64)}, for every product: all sit right of the ridge"
                 if top == 0 else
                 f"rises from {rate_fmt(attainable[0])} at {labels[0]} along the bandwidth slope and reaches the "
                 f"compute roof, {rate_fmt(peak64)}, at {labels[top]}, where it stays")
    else:
        reach = (f"rises along the bandwidth slope from {rate_fmt(attainable[0])} at {labels[0]} to "
                 f"{rate_fmt(attainable[-1])} at {labels[-1]}, under the compute roof throughout")
    words, agree = shape_against_roofline(labels, rates, attainable, rate_fmt)
    text += (f"\n\n  The measured roofline's attainable rate at these intensities {reach}. {words}"
             + ("" if agree else " " + again))
md(text)
dot_rate, _ = vs_dram(kern["dot"])
axpy_rate, _ = vs_dram(kern["axpy"])
md(f"- **Large vectors.** dot moved {si(dot_rate, 'B/s')} ({percent(dot_rate / dram, 0)} of the DRAM roof) and "
   f"axpy {si(axpy_rate, 'B/s')} ({percent(axpy_rate / dram, 0)}). On tiny vectors, timed one call at a time, "
   "numpy's fixed cost per call would dominate — the reason the bandwidth probe amortises it. (axpy is two numpy "
   "passes per block, and its estimate counts one.)")

# %% jupyter={"source_hidden": true}
assert all(a.intensity < b.intensity for a, b in zip(gemms, gemms[1:]))  # more rows, more reuse per byte
assert all(k.flops_per_s <= peak64 for k in gemms)  # the compute roof is the best matmul measured, these included

# %% [markdown]
# ### What the DRAM roof counts
#
# The triad's bytes are counted STREAM's way: each array read or written once per pass — read b,
# read c, write a. A CPU core, though, writes into a cache line only after reading that line in
# (**write-allocate**), unless the code uses non-temporal stores that bypass the caches, and numpy
# does not promise those. Then a is read as well as written, and the bus carries one more array per
# element than the count credits. dot is the clean witness: it reads two vectors and stores nothing,
# so its byte count is its traffic. Here it is against the DRAM roof counted both ways, for the
# course's shipped example measurement and for yours:

# %%
# NBVAL_IGNORE_OUTPUT
example = results.example()
factor = write_allocate_factor("triad")
counted, on_bus = STREAM_ARRAYS["triad"], STREAM_ARRAYS["triad"] + STREAM_WRITES["triad"]
checks = {"shipped example": dram_roof_check(example), "this machine": dram_roof_check(mine)}
show_table(["dot (reads two vectors, stores nothing)", *checks],
           [["bytes read per call", *[binary(c.working_set_bytes) for c in checks.values()]],
            ["largest cache reported", *[binary(c.last_level_cache_bytes) if c.last_level_cache_bytes else "unknown"
                                         for c in checks.values()]],
            [f"DRAM roof, STREAM count ({counted} × 8 B per element)",
             *[si(c.stream_roof_bytes_per_s, "B/s") for c in checks.values()]],
            [f"DRAM roof, write-allocate count ({on_bus} × 8 B per element: × {factor})",
             *[si(c.write_allocate_roof_bytes_per_s, "B/s") for c in checks.values()]],
            ["dot, best run", *[si(c.best_bytes_per_s, "B/s") for c in checks.values()]],
            ["best run ÷ STREAM-counted roof",
             *[percent(c.best_bytes_per_s / c.stream_roof_bytes_per_s, 0) for c in checks.values()]],
            ["best run ÷ write-allocate roof",
             *[percent(c.best_bytes_per_s / c.write_allocate_roof_bytes_per_s, 0) for c in checks.values()]],
            ["median run ÷ write-allocate roof",
             *[percent(c.median_bytes_per_s / c.write_allocate_roof_bytes_per_s, 0) for c in checks.values()]]])


def verdict_words(verdict, rate, c):
    """What one run at ``rate`` bytes/s says about the roof, for its verdict (the rule in DramRoofCheck)."""
    return {
        "under the roof": "under both counts: no sign that the roof is low",
        "a cache may feed it": "its vectors fit in the reported cache, so a cache may feed it: no test of the DRAM roof",
        "within the write-allocate gap": f"above the STREAM count, within the write-allocate one: the convention alone "
                                         f"explains it — the triad moved up to {factor}× the bytes it was credited with",
        READ_BEATS_TRIAD: f"above both counts, {num(rate / c.write_allocate_roof_bytes_per_s, 2)}× the roof even counted "
                          f"with write-allocate, which explains at most a factor {factor}: DRAM delivered at least "
                          f"{si(rate, 'B/s')} to this read-only kernel, so the triad roof **understates what this memory "
                          "delivers to read-only traffic** (unless the caches are larger than the ones reported)",
    }[verdict]


def dram_words(who, c):
    """What one dot-against-the-roof check says, every word chosen from its numbers: the best run and the median
    run judged by the same rule, and where they disagree, said so."""
    head = (f"**{who}**: dot read {binary(c.working_set_bytes)} per call"
            + (f" ({num(c.working_set_bytes / c.last_level_cache_bytes, 2)}× the largest cache reported)"
               if c.last_level_cache_bytes else "")
            + f". Best run {si(c.best_bytes_per_s, 'B/s')}, "
            f"{percent(c.best_bytes_per_s / c.write_allocate_roof_bytes_per_s, 0)} of the write-allocate count; median "
            f"run {si(c.median_bytes_per_s, 'B/s')}, {percent(c.median_bytes_per_s / c.write_allocate_roof_bytes_per_s, 0)}. ")
    if c.verdict == c.median_verdict:
        body = f"Both runs say the same: {verdict_words(c.verdict, c.median_bytes_per_s, c)}."
    else:
        body = (f"The best run: {verdict_words(c.verdict, c.best_bytes_per_s, c)}. The median run: "
                f"{verdict_words(c.median_verdict, c.median_bytes_per_s, c)}. They disagree (the median took "
                f"{num(c.best_bytes_per_s / c.median_bytes_per_s, 3)}× as long as the best), so the first reading rests "
                "on one fast run: measure again on an idle machine before relying on it.")
    why = (" A read-only stream beating a triad's rate need not mean numpy ran the triad badly: reads alone commonly "
           "stream faster than mixed reads and writes even in tuned code (the memory bus turns around between the "
           "two) — so it says the triad roof is not the roof for read-only traffic."
           if READ_BEATS_TRIAD in (c.verdict, c.median_verdict) else "")
    return head + body + why


md(f"STREAM's count over the count with write-allocate: {counted} arrays against {on_bus}, so a roof counted "
   f"STREAM's way understates a write-allocating machine's traffic by up to a factor **{factor}** "
   f"({float(factor):.3f}).\n\n" + "\n\n".join(f"- {dram_words(who, c)}" for who, c in checks.items()))
llc_reach = max(cache_capacity_bytes(level, caches, threads, shared) for level in caches) if caches else None
if llc_reach and not any(s.working_set_bytes >= 4 * llc_reach for s in triad):
    md(f"**Caution:** no triad working set in this sweep reached 4× the {binary(llc_reach)} of cache its threads can "
       f"fill (the largest was {binary(triad[-1].working_set_bytes)}), so this machine's \"DRAM\" roof is the largest "
       "sizes' rate, and a cache may serve part of it. Full mode sweeps further.")

# %% jupyter={"source_hidden": true}
assert factor == Fraction(on_bus, counted) and factor > 1

# %% [markdown]
# So read every numpy plateau as a **lower bound** on what that level of memory can deliver. It is
# what numpy reached — one library pass per call, threads from a Python pool, no tuning for the
# machine — with its bytes counted STREAM's way; it is not an optimised STREAM run. A kernel plotted
# above it has two honest explanations: a cache fed it, or the roof drawn is lower than what the
# memory delivers to that kernel's traffic (a read-only stream commonly beats a triad's mix of reads
# and writes, tuned or not). Anything built on the roof inherits that: the ridge above is an estimate, and a
# tokens-per-second bound divided out of this bandwidth is a bound only for code that streams no
# faster than numpy's triad did.

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
n_att = MODES[MODE]["attention_n"]
tiles = [attention_tiles(n_att, ATTENTION_HEAD_DIM, sram) for sram in ATTENTION_SRAM_BYTES]
rows = [["naive (S and P in HBM)", "—", "—", "—", si(naive.bytes_estimated, "B"), "1", "1"]]
for sram, k, t in zip(ATTENTION_SRAM_BYTES, tiled, tiles):
    rows.append([f"tiled, SRAM {binary(sram)}", f"{sram // 8:,}", f"{m_over_d_squared(sram, ATTENTION_HEAD_DIM):g}",
                 f"{t:,}", si(k.bytes_estimated, "B"), f"{k.bytes_estimated / naive.bytes_estimated:.2f}",
                 f"{num(k.timing.best_s / naive.timing.best_s, 2)}"])
show_table([f"attention, {naive.shape}", "M (elements)", "M/d²", "tiles", "HBM bytes (Algorithm 1 order)",
            "bytes ÷ naive", "time ÷ naive"], rows)
noise_warning([naive, *tiled], "attention kernels")
parts = []
for sram, k in zip(ATTENTION_SRAM_BYTES, tiled):
    ratio = k.bytes_estimated / naive.bytes_estimated
    parts.append(f"with M/d² = {m_over_d_squared(sram, ATTENTION_HEAD_DIM):g} the tiled kernel moves "
                 + (f"{1 / ratio:.1f}× **fewer** bytes than the naive one" if ratio < 1 else
                    f"{ratio:.1f}× **more** bytes than the naive one"))
times = [f"M/d² = {m_over_d_squared(sram, ATTENTION_HEAD_DIM):g}: "
         + (f"{num(k.timing.best_s / naive.timing.best_s, 2)}× **slower**" if k.timing.best_s > naive.timing.best_s
            else f"{num(naive.timing.best_s / k.timing.best_s, 2)}× **faster**")
         for sram, k in zip(ATTENTION_SRAM_BYTES, tiled)]
by_tiles = sorted(zip(tiles, tiled))
(few, k_few), (many, k_many) = by_tiles[0], by_tiles[-1]
att = [naive, *tiled]
att_feeds = [mine.feeding_roof(k.bytes_estimated) for k in att]  # bytes moved ≥ bytes touched: an upper bound
att_ridges = [peak64 / f.bytes_per_s for f in att_feeds]
compute_side = [k.intensity >= r for k, r in zip(att, att_ridges)]
cached = [f.name != "DRAM" for f in att_feeds]
intensities = ", ".join(f"{num(k.intensity)}" for k in att)
if all(compute_side) and all(cached):
    feed_names = " and ".join(dict.fromkeys(f.name for f in att_feeds))
    regime = (f"On this machine all {len(att)} kernels are **compute-side and cache-resident**: their intensities "
              f"({intensities} FLOP/byte) sit right of the ridge of the memory that feeds them (at most "
              f"{max(att_ridges):,.2f} FLOP/byte), and each moves at most {si(max(k.bytes_estimated for k in att), 'B')}, "
              f"which the {feed_names} hold{'s' if ' and ' not in feed_names else ''}. Bytes do not limit them here, "
              "so this experiment shows what tiling does to the byte counts, not to the time: saved bytes speed up "
              "only a kernel that bytes limit, which is lesson 6's GPU case, not this one. ")
else:
    limited = [k.name for k, c, h in zip(att, compute_side, cached) if not c or not h]
    regime = (f"Here bytes can set the time of {', '.join(limited)}: left of the ridge of the memory that feeds it, "
              f"or fed from DRAM (intensities {intensities} FLOP/byte; ridges "
              + ", ".join(f"{r:,.2f}" for r in att_ridges) + " FLOP/byte). ")
if k_many.timing.best_s > k_few.timing.best_s:
    loop = (f"The kernel with more tiles ({many:,}) took {num(k_many.timing.best_s / k_few.timing.best_s, 2)}× as long "
            f"as the one with fewer ({few:,}). The hypothesis: the time pays for work that grows with the number of "
            "tiles and that neither the byte count nor the 4·N²·d FLOP count sees — a Python loop step per tile, and "
            "in each separate numpy passes for the row maxima, the exponentials and the rescaling — and this run's "
            "order agrees with it.")
else:
    loop = (f"**This run is noisy or something else dominated:** the kernel with more tiles ({many:,}) ran "
            f"{num(k_few.timing.best_s / k_many.timing.best_s, 2)}× *faster* than the one with fewer ({few:,}), the "
            "opposite of what a cost per tile (a Python loop over tiles, which the byte count does not see) predicts. "
            "Don't read a mechanism from these times; measure again on an idle machine.")
break_even = break_even_m_over_d_squared(n_att, ATTENTION_HEAD_DIM, 8)
md("Read the table: " + "; ".join(parts) + ". A small SRAM means small tiles, so every query block and its running "
   "output are re-read once per key block: the N²·d²/M term is then no smaller than the N² it replaced. "
   f"For this N = {n_att:,} and d = {ATTENTION_HEAD_DIM}, the byte counts break even at **M/d² ≈ "
   f"{break_even:.2f}** (the smallest SRAM at which the Algorithm 1 order moves no more than the naive kernel); "
   f"the experiment's two sizes, M/d² = "
   + " and ".join(f"{m_over_d_squared(s_, ATTENTION_HEAD_DIM):g}" for s_ in ATTENTION_SRAM_BYTES)
   + ", sit on either side of it.\n\n"
   f"Time against the naive kernel — {'; '.join(times)}. " + regime + loop)

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
#   1 per add or multiply. Tensor-pipe instructions (`sm__inst_executed_pipe_tensor…`) are matrix
#   multiply-accumulates: one SASS instruction of shape m×n×k — on Ampere, `HMMA.16816` is one warp's
#   m16n8k16 — is m·n·k multiply-adds, 2·m·n·k FLOPs, never 2. The shape is the SASS instruction's,
#   and it differs by architecture: Hopper's warpgroup `HGMMA` (four warps, larger shapes) is counted
#   differently, so don't multiply an instruction count by a shape you assumed. Nsight Compute's own
#   roofline sections (`SpeedOfLight_RooflineChart`, and `SpeedOfLight_HierarchicalTensorRooflineChart`
#   for tensor cores) turn the counts into FLOPs for the GPU being profiled;
# - **bytes at each level** — DRAM (`dram__bytes_read.sum`, `dram__bytes_write.sum`), L2
#   (`lts__t_bytes.sum`), L1 for global and local memory (`l1tex__t_bytes.sum`: global, local and
#   texture traffic through L1/TEX — not shared memory), and shared memory on its own
#   (`smsp__sass_data_bytes_mem_shared.sum`, or `l1tex__data_pipe_lsu_wavefronts_mem_shared.sum`
#   in wavefronts);
# - **elapsed cycles** (`sm__cycles_elapsed.avg`) and the clock, for achieved rates.

# %% jupyter={"source_hidden": true}
md(f"For example, one Ampere `HMMA.16816` instruction (m16n8k16, per warp) is "
   f"{tensor_instruction_flops(1, 16, 8, 16):,.0f} FLOPs; "
   f"counted as if it were one FMA it would be {fp_pipe_flops(fma=1):,.0f}, "
   f"{tensor_instruction_flops(1, 16, 8, 16) / fp_pipe_flops(fma=1):,.0f}× too few.")

# %% [markdown]
# Achieved intensity **at each level** is FLOPs divided by that level's bytes; achieved
# performance is FLOPs over elapsed time. One kernel becomes a dot per level — against the DRAM, L2,
# L1 (global/local) and shared-memory roofs — and the attainable rate is the **lowest** of the compute
# roof and every level's bandwidth × its intensity. Lesson 6's tiled attention, with its numbers, in
# both loop orders lesson 6 features: Algorithm 1 (outer loop over key blocks, so O and Q are re-read
# once per key block) and FlashAttention-2 (outer loop over query blocks, so K and V are re-read once
# per query block):

# %%
d6, n6 = 128, 32768
peak6 = h100.peak_flops_per_s("bf16")
f6 = float(attention_flops(n6, d6, causal=True))
smem6 = h100.shared_memory_per_sm_bytes
i_tiled6 = f6 / flash_hbm_bytes(n6, d6, smem6, 2, causal=True)  # Algorithm 1 order
i_fa2_6 = f6 / flash2_hbm_bytes(n6, d6, smem6, 2, causal=True)  # FlashAttention-2 order
i_ideal6 = f6 / float(compulsory_hbm_bytes(n6, d6))
l2_figs6 = l2_bandwidth_figures(h100)  # the near-partition and the whole-L2 read figures, highest first
hbm6 = h100.memory_bandwidth_bytes_per_s
kind = {"compute": "compute-bound", "L2": "L2-bound", "HBM": "HBM-bound"}
fig6 = lambda m: f"{si(m.value, 'B/s')}, {m.kernel.removeprefix('read, ')}"  # noqa: E731
rows = [["compute", "—", "—", si(peak6, "FLOP/s")],
        ["HBM (Q, K, V, O once)", si(hbm6, "B/s"), f"{i_ideal6:,.0f}", si(hbm6 * i_ideal6, "FLOP/s")]]
for order, i_l2 in (("Algorithm 1 order", i_tiled6), ("FlashAttention-2 order", i_fa2_6)):
    rows += [[f"L2, {order} (L2 {fig6(m)}: measured on an H100 PCIe)", si(m.value, "B/s"), f"{i_l2:,.0f}",
              si(m.value * i_l2, "FLOP/s")] for m in l2_figs6]
show_table(["roof (H100 SXM, BF16)", "bandwidth", "FLOP/byte at that level", "attainable"], rows)


def placed(i_tiled, order):
    """One loop order's sentence: HBM-only, then with the re-reads served by L2, at each L2 figure."""
    hbm_only, hbm_only_rate = limiting_roof(peak6, {"HBM": (hbm6, i_tiled)})
    out = [f"**{order}**: charging every tiled byte to HBM it is {kind[hbm_only]} at {si(hbm_only_rate, 'FLOP/s')}"]
    for m in l2_figs6:
        limit, rate = limiting_roof(peak6, {"HBM": (hbm6, i_ideal6), "L2": (m.value, i_tiled)})
        out.append(f"with the re-reads served by L2 at {fig6(m)}, the lowest roof is **{limit}**: {kind[limit]}, at "
                   f"{si(rate, 'FLOP/s')} = {percent(rate / peak6, 0)} of peak"
                   + (", still a memory roof but higher than the HBM-only count gave" if limit != "compute" and
                      rate > hbm_only_rate else ", the compute roof" if limit == "compute" else ""))
    return "; ".join(out) + "."


md(f"Causal attention, N = {n6:,}, d = {d6}, tiled in {binary(smem6)} of shared memory; HBM supplying only Q, K, V "
   "and O once; L2 at each of the catalog's two figures, " + " and ".join(fig6(m) for m in l2_figs6) + " ("
   + "; ".join(dict.fromkeys(f"{m.source}, {m.date}" for m in l2_figs6))
   + "): both measured on an H100 PCIe, not the SXM, and the catalog holds no SXM figure, so the roofs are drawn at "
   "both.\n\n"
   f"- {placed(i_tiled6, 'Algorithm 1 order')}\n- {placed(i_fa2_6, 'FlashAttention-2 order')}\n\n"
   f"At the L2 the FlashAttention-2 order's intensity is {ratio_words(i_fa2_6, i_tiled6, ('higher', 'lower'))} "
   "than Algorithm 1's for this N, d and SRAM.")

# %% jupyter={"source_hidden": true}
assert all("H100 PCIe" in m.conditions for m in l2_figs6)  # the labels say where they were measured

# %% [markdown]
# ## Summary
#
# - A measured roofline has one compute roof (your best matmul) and one bandwidth roof per level of
#   memory; the sweep shows them as plateaus.
# - Estimated intensity is a model; a kernel above the DRAM roof is being fed by a cache or the roof
#   drawn is below what the memory delivers to its traffic (a read-only stream commonly beats a
#   triad), and a kernel far below both roofs is paying overhead the roofline does not model.
# - Judge a kernel against the roof of the memory that feeds it: a working set that fits a cache,
#   called again and again, is under that cache's roof, not DRAM's.
# - The bandwidth roofs are what numpy reached, counted STREAM's way (no write-allocate read): lower
#   bounds on what each level of memory can deliver, not its peak.
# - Small working sets need amortised timing: one call per pass measures numpy's overhead, not the
#   cache.
# - Tiling saves HBM bytes only when M/d² is large; below the break-even M/d² computed above for the
#   experiment's N and d (Algorithm 1 order), it moves more than the naive kernel.
# - On a GPU, profiler counters give FLOPs (a tensor instruction at 2·m·n·k for its SASS shape) and
#   bytes per level, shared memory counted on its own, and so a dot per level; the lowest of those
#   roofs is the limit.
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
