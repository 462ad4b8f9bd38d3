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
# # Lesson 7 — The FP8 knee shift
#
# **By the end of this lesson you can**
#
# 1. say what a faster number format does to the ridge point, with the numbers for the H100 and
#    the B200;
# 2. separate the real configurations that all get called "FP8" — weight-only quantisation,
#    W8A8 FP8, an FP8 KV cache — and say which helps prefill, which helps decode, and by how much,
#    on the A100, H100, H200 and B200;
# 3. hold the datasheet FP8 roof against the FP8 rates real matmuls reach, with the conditions of
#    the measurement, and say which explanations of the gap are hypotheses and how to test each;
# 4. answer "what happens to the knee when you move from FP16 to FP8 on an H100?" with more than
#    "it doubles".

# %%
# %matplotlib inline
from roofline_lessons import get_part, place
from roofline_lessons.viz.charts import roofline_chart, roofs_for
from roofline_lessons.topics.datasheets import best_measurement
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.core.costs import DEQUANT_FLOPS_PER_WEIGHT
from roofline_lessons.core.hardware import RATE_IN_CATALOG
from roofline_lessons.core.dtypes import DEFAULT_WEIGHT_GROUP, bytes_per_element, weight_bytes_per_element
from roofline_lessons.topics.levers import (AT_RIDGE_TOLERANCE, BASELINE, FP8_GAP_HYPOTHESES, LEVER_SPECS, LEVERS,
                                     MEASUREMENT_PROTOCOL, NOT_IN_THE_MATMUL_MEASUREMENT,
                                     RESOLVABLE_GAP_PERCENTAGE_POINTS, SOURCE_NOTES_ONLY, gap_verdict, lever_speedups,
                                     operand_bytes_per_s_ratio, per_channel_scale_share, ridge_shift)
from roofline_lessons.core.units import binary, duration, percent, si

MODEL = "qwen3.8-27b"
PARTS = ("a100-80gb", "h100-sxm", "h200", "b200")

# %% [markdown]
# ## At fixed bytes, a faster format moves the knee right
#
# Memory bandwidth does not depend on the format of the arithmetic; the tensor-core rate does. So
# the compute ceiling rises and the ridge $I^* = P_\text{peak}/\beta$ moves right by the same
# factor as the peak:

# %%
rows = []
for pid in PARTS:
    p, ridges = get_part(pid), ridge_shift(pid, ("bf16", "fp8", "fp4", "int8"))
    rows.append([pid] + [f"{ridges[dt]:,.0f}" if dt in ridges else p.rate_status(dt)
                         for dt in ("bf16", "fp8", "fp4", "int8")]
                + [f"{p.peak_flops_per_s('fp8') / p.peak_flops_per_s('bf16'):.1f}×" if "fp8" in ridges
                   else f"no FP8 rate ({p.rate_status('fp8')})"])
show_table(["part", "BF16 ridge (FLOP/byte)", "FP8 ridge", "FP4 ridge", "INT8 ridge", "FP8 peak ÷ BF16 peak"], rows)
gaps = [(pid, dt, get_part(pid).rate_status(dt), get_part(pid).rate_gaps[dt].why if dt in get_part(pid).rate_gaps else "")
        for pid in PARTS for dt in ("bf16", "fp8", "fp4", "int8") if dt not in get_part(pid).dense_flops_per_s]
md("A cell without a ridge says why the catalog has no dense rate for that format on that part: "
   + "; ".join(f"{dt.upper()} on the {pid}, {kind}" + (f" ({why})" if why else "") for pid, dt, kind, why in gaps)
   + "." if gaps else "Every part here has a dense rate for every format in the table.")
roofline_chart(roofs_for("b200", ["bf16", "fp8", "fp4"]), title="B200: one compute ceiling per format (dense)",
               intensity_range=(1, 1e5));

# %% [markdown]
# Read that right: **at fixed bytes**. A kernel whose bytes stay the same needs that factor more
# intensity to use the faster roof, and a memory-bound kernel gains nothing from it. The A100 has
# no FP8 tensor cores at all: an FP8 matmul is not available there, but its INT8 tensor cores
# have a rate in the catalog (the INT8 column).
#
# ## What "use FP8" can mean
#
# An FP8 tensor-core matmul takes both operands in 8 bits (or fewer): FP8 weights **and** FP8
# activations. "FP8 compute over BF16 weights" is therefore not a configuration. The real ones:

# %%
show_table(["lever", "which weights take the narrow format (the recipe)", "what is stored and computed in which format",
            "not charged for by the cost model"],
           [[lev.name, lev.recipe, lev.what, lev.not_counted or "—"] for lev in LEVER_SPECS])
scale_share = per_channel_scale_share(MODEL)
md("The recipe is the default for 8-bit weights, as published FP8 checkpoints are made (NVIDIA ModelOpt, "
   "llm-compressor: the linear layers of the blocks, lm_head ignored). `quantized_weights=\"all\"` quantises "
   "every weight instead; a matmul whose weights stay BF16 runs at the BF16 rate.\n\n"
   "What the cost model *does* charge: dequantising weight-only weights "
   f"({DEQUANT_FLOPS_PER_WEIGHT:g} FLOPs a weight on the vector units: convert, multiply by the scale — once per "
   "weight per step, where a tiled kernel repeats it for each block of token rows), and a 4-bit format's block scales: "
   f"FP4, modelled as MXFP4 (one 8-bit E8M0 scale per {DEFAULT_WEIGHT_GROUP['fp4']} weights), costs "
   f"{weight_bytes_per_element('fp4'):g} bytes a weight, not {bytes_per_element('fp4'):g}; NVFP4 (one FP8 scale per "
   f"16) would cost {weight_bytes_per_element('fp4', group_size=16):g}. What it leaves out "
   "of the 8-bit formats' bytes, the per-channel scales, is under a thousandth of them for Qwen3.8-27B: one BF16 "
   f"scale per output channel adds at most {percent(scale_share, 3)} to a weight matrix's bytes.")

# %% jupyter={"source_hidden": true}
assert scale_share < 1e-3  # "under a thousandth" below

# %% [markdown]
# Each lever's speed-up is a ratio, all-BF16 ÷ lever, with the roof that binds after the change,
# and there are two of them:
#
# - the **lower bound**'s (`time_lower_bound_s`): compulsory bytes only, and the vector units that
#   dequantise weight-only weights overlapped with the tensor cores — the ratio an ideal
#   implementation of both steps would see (a ratio of two bounds, not a bound on the speed-up);
# - the **estimate**'s (`time_estimate_s`), by its conventions: every operator's activations go
#   through HBM (unfused), and weight-only dequantisation is added in series with the matmuls.
#
# A cell shows one figure, marked *both*, where the two read the same; otherwise both. Weight
# matmuls run at their format's rate; attention, softmax, norms and the Gated DeltaNet recurrence
# keep the BF16 rate. Qwen3.8-27B, five steps; a cell says so when weights + KV cache + state do
# not fit in the part's whole memory (its figures are then of a configuration that cannot run on
# one GPU; a serving engine also keeps headroom, so "fits" is optimistic):

# %%
workloads = [("prefill 8,192", "prefill", 8192, 1), ("prefill 512", "prefill", 512, 1),
             ("decode, batch 1, 8,192 cached", "decode", 8192, 1),
             ("decode, batch 32, 8,192 cached", "decode", 8192, 32),
             ("decode, batch 16, 65,536 cached", "decode", 65536, 16)]
results = {(pid, label): {r.lever: r for r in lever_speedups(MODEL, pid, phase, tokens, batch)}
           for pid in PARTS for label, phase, tokens, batch in workloads}


def cell(r):
    return r.label_both if r.fits in (True, None) else f"{r.label_both}, does not fit"


for pid in PARTS:
    md(f"**{pid}** — speed-up over all-BF16: of the lower bound, and of the estimate where it differs")
    show_table(["lever"] + [w[0] for w in workloads],
               [[name] + [cell(results[pid, w[0]][name]) for w in workloads] for name in LEVERS])

# %% [markdown]
# The pattern, as the tables compute it (H100 figures; the others follow). Each speed-up below is
# the lower bound's, with the estimate's beside it where the two differ:

# %% jupyter={"source_hidden": true}
h = {label: results["h100-sxm", label] for label, *_ in workloads}
W8, W8A8, I8, KV8 = "weight-only 8-bit (W8A16)", "W8A8 FP8", "W8A8 INT8", "FP8 KV cache"
W8KV, BOTH = "weight-only 8-bit + FP8 KV cache", "W8A8 FP8 + FP8 KV cache"
assert {W8, W8A8, I8, KV8, W8KV, BOTH} <= set(LEVERS)
pf, short, one, b32, long = (h[w[0]] for w in workloads)
_w8a8_prefill = pf[W8A8].placement
attn_share = float(_w8a8_prefill.cost.other_flops / _w8a8_prefill.cost.flops)
lm_head_share = float(_w8a8_prefill.cost.unquantized_matmul_flops / _w8a8_prefill.cost.flops)
# the recipe keeps the lm_head in BF16, but prefill computes logits for the last position only: negligible
assert 0 < lm_head_share < 1e-3 * attn_share


def gb(n):
    return f"{float(n) / 1e9:,.1f} GB"


def same(a, b):
    return "the same" if abs(a - b) < 0.005 else ("more" if a > b else "less")


def x(r):
    """The lower bound's speed-up, and the estimate's beside it where they differ (two decimals)."""
    if f"{r.speedup_lower_bound:.2f}" == f"{r.speedup_estimate:.2f}":
        return f"{r.speedup_lower_bound:.2f}×"
    return f"{r.speedup_lower_bound:.2f}× (estimate {r.speedup_estimate:.2f}×)"


def compulsory(r):
    return float(r.placement.cost.compulsory_bytes)


# the claims of the prose below and of the summary, checked against the tables
assert pf[W8A8].speedup_lower_bound > 1.5 and max(pf[W8].speedup_lower_bound, pf[KV8].speedup_lower_bound) < 1.01
# batch-1 decode is memory-bound on weights: the bound's speed-up is the ratio of compulsory bytes
assert one[BASELINE].lower_bound_roof == one[W8].lower_bound_roof == "memory"
assert abs(one[W8].speedup_lower_bound - compulsory(one[BASELINE]) / compulsory(one[W8])) < 1e-9
assert one[KV8].speedup_lower_bound < 1.05
assert long[BASELINE].placement.cost.kv_bytes > long[BASELINE].placement.cost.weight_bytes
every = place(MODEL, "h100-sxm", phase="decode", context_tokens=8192, weights_dtype="fp8", quantized_weights="all")
every_x = float(one[BASELINE].placement.time_lower_bound_s / every.time_lower_bound_s)
head = next(op for op in one[W8].placement.cost.ops if op.name == "lm_head")
short_parts = {pid: results[pid, "prefill 512"][W8A8] for pid in PARTS
               if results[pid, "prefill 512"][W8A8].speedup_lower_bound}
# weight-only + FP8 KV and W8A8 FP8 + FP8 KV store the same bytes, so in memory-bound decode they have one bound
same_bytes = all(compulsory(w[W8KV]) == compulsory(w[BOTH]) for w in (b32, long))
assert same_bytes and b32[W8KV].lower_bound_roof == b32[BOTH].lower_bound_roof == "memory"
fits_long = [n for n in LEVERS if long[n].fits]
a100_pf, h100_pf = results["a100-80gb", "prefill 8,192"], results["h100-sxm", "prefill 8,192"]
a100 = get_part("a100-80gb")
no_int8 = [pid for pid in PARTS if "int8" not in get_part(pid).dense_flops_per_s]
h100_ratio = get_part("h100-sxm").peak_flops_per_s("fp8") / get_part("h100-sxm").peak_flops_per_s("bf16")
assert abs(a100.peak_flops_per_s("int8") / a100.peak_flops_per_s("bf16") - h100_ratio) < 1e-3  # "the same peak ratio"
# weight-only prefill: the estimate's dequantisation in series against the bound's overlap
w8_short = short[W8].placement
assert w8_short.lower_bound_roof == "compute" and float(w8_short.dequant_time_s) < float(w8_short.tensor_time_s)
# "the estimates sit a little lower" in batch-32 decode
assert all(b32[n].speedup_lower_bound > b32[n].speedup_estimate > 0.98 * b32[n].speedup_lower_bound
           for n in (W8, W8KV, BOTH))


def pace(speedup):
    """``"slower than all-BF16"``, ``"as fast as all-BF16"`` (within 0.5 %) or ``"faster than all-BF16"``."""
    return "as fast as all-BF16" if abs(speedup - 1) < 0.005 else (
        "slower than all-BF16" if speedup < 1 else "faster than all-BF16")


def bound_ridge(r):
    """The ridge of the lower bound's compute time (FLOPs ÷ compute lower bound ÷ bandwidth), FLOP/byte."""
    p = r.placement
    return float(p.cost.flops / p.compute_lower_bound_s / p.bandwidth_bytes_per_s)


md(f"- **Prefill** is compute-bound: only W8A8 helps, {x(pf[W8A8])} for 8,192 tokens — not the "
   f"{h100_ratio:.0f}× the roof rises, because {percent(attn_share, 1)} of the FLOPs keep the BF16 rate: attention, "
   "softmax, norms and the recurrence. (The lm_head the recipe keeps in BF16 adds a negligible share in prefill, "
   f"{percent(lm_head_share, 4)} of the FLOPs: it computes logits for the last position only.) Weight-only quantisation and the FP8 KV cache save bytes a compute-bound step "
   f"was not waiting for: {pf[W8].speedup_lower_bound:.2f}× and {pf[KV8].speedup_lower_bound:.2f}× for the bound. "
   f"The estimate gives weight-only {pf[W8].speedup_estimate:.2f}× at 8,192 tokens and "
   f"{short[W8].speedup_estimate:.2f}× at 512 ({pace(short[W8].speedup_estimate)}): it adds dequantising the "
   f"weights on the vector units ({duration(float(w8_short.dequant_time_s))} at 512 tokens) *in series* with the "
   f"matmuls ({duration(float(w8_short.tensor_time_s))}), where the bound overlaps the two. "
   + ("So whether weight-only makes a short prefill slower is for measurement: the bound says it need not be, "
      "and real kernels do more dequantisation than either figure counts — both charge each weight once per step, "
      "while a tiled GEMM dequantises each weight tile again for every block of token rows it multiplies. "
      if short[W8].speedup_estimate < 0.995 else "")
   + "How much of the dequantisation a well-pipelined weight-only kernel (Marlin-style) hides is a *hypothesis* "
   "to measure: Marlin's README reports close-to-ideal speed-ups for its 4-bit kernel only up to batches of 16-32 "
   "tokens, on Ampere and Ada GPUs, and says it is not yet optimised for Hopper. A real step is never "
   "faster than the bound, but the estimate is a convention, not a ceiling: kernels below their roofs can be "
   "slower than it, so measure.\n"
   f"- **Batch-1 decode** is memory-bound on weights: weight-only 8-bit gives {x(one[W8])} and W8A8 "
   f"{x(one[W8A8])} — {same(one[W8A8].speedup_lower_bound, one[W8].speedup_lower_bound)}, because decode gets faster "
   f"through **bytes**, not FLOPs: the bound's speed-up is the ratio of compulsory bytes, "
   f"{gb(compulsory(one[BASELINE]))} → {gb(compulsory(one[W8]))}. Not 2×: the recipe keeps the lm_head "
   f"({gb(float(head.weight_bytes) * head.layers)}) in BF16 (quantising it and the embedding too would give "
   f"{every_x:.2f}×), and the KV cache and float32 state keep their size. The FP8 KV cache gives "
   f"{x(one[KV8])}: one conversation's cache is {gb(one[BASELINE].placement.cost.kv_bytes)} against "
   f"{gb(one[BASELINE].placement.cost.weight_bytes)} of weights.\n"
   f"- **Batch-32 decode** splits its bytes between weights and KV caches: weight-only 8-bit gives "
   f"{x(b32[W8])}, the FP8 KV cache {x(b32[KV8])}; weight-only 8-bit + FP8 KV cache gives "
   f"{x(b32[W8KV])} and W8A8 FP8 + FP8 KV cache {x(b32[BOTH])} — "
   f"{same(b32[W8KV].speedup_lower_bound, b32[BOTH].speedup_lower_bound)}, because the two move "
   f"{'the same' if same_bytes else 'different'} compulsory bytes ({gb(compulsory(b32[W8KV]))} per step) and the "
   "step is memory-bound. (The estimates sit a little lower: they also count each operator's activations through "
   "HBM, which the formats do not shrink.)\n"
   f"- **Batch-16 decode at 65,536 cached** reads {gb(long[BASELINE].placement.cost.kv_bytes)} of KV cache and "
   f"{gb(long[BASELINE].placement.cost.weight_bytes)} of weights per step: the FP8 KV cache "
   f"({x(long[KV8])}) "
   f"{'beats' if long[KV8].speedup_lower_bound > long[W8].speedup_lower_bound else 'does not beat'} weight-only "
   f"({x(long[W8])}). On the H100, of these levers only "
   f"{' and '.join(fits_long) or 'none'} {'make' if len(fits_long) > 1 else 'makes'} it fit "
   f"({binary(long[W8KV].placement.memory_required_bytes)} of weights, KV cache and state against "
   f"{binary(get_part('h100-sxm').memory_capacity_bytes)}): any 8-bit weights plus the FP8 KV cache.\n"
   f"- **A short prefill** (512 tokens) is where the two figures part. W8A8 moves its compulsory intensity from "
   f"{float(short[BASELINE].placement.compulsory_intensity):,.0f} to "
   f"{float(short[W8A8].placement.compulsory_intensity):,.0f} FLOP/byte against a ridge of its FLOP mix of "
   + ", ".join(f"{bound_ridge(r):,.0f} on the {pid}" for pid, r in short_parts.items())
   + ". Left of its ridge a step is on the bandwidth slope (memory-bound), right of it compute-bound; within "
   f"{percent(AT_RIDGE_TOLERANCE, 0)} of it we say *at the ridge* (both roofs bind). The bound: "
   + ", ".join(f"{r.label_lower_bound} on the {pid}" for pid, r in short_parts.items())
   + ". The estimate also sends every operator's activations through HBM, so its intensity is "
   f"{float(short[W8A8].placement.intensity):,.0f} FLOP/byte and it gives "
   + ", ".join(f"{r.label} on the {pid}" for pid, r in short_parts.items())
   + ": the bound's figure is what a kernel that keeps the activations on chip could approach.\n"
   f"- **The A100** runs weight-only quantisation and the FP8 KV cache (both only change bytes), but "
   f"W8A8 FP8 is {a100_pf[W8A8].label}: {a100_pf[W8A8].unavailable}. Its prefill lever is **W8A8 INT8**: the "
   f"catalog gives it {si(a100.peak_flops_per_s('int8'), 'OP/s')} INT8 against {si(a100.peak_flops_per_s('bf16'), 'FLOP/s')} "
   f"BF16 ({a100.peak_flops_per_s('int8') / a100.peak_flops_per_s('bf16'):.0f}×), and an 8,192-token prefill "
   f"gains {x(a100_pf[I8])} ({a100_pf[I8].regime_lower_bound}) — "
   f"{same(a100_pf[I8].speedup_lower_bound, h100_pf[W8A8].speedup_lower_bound)} as W8A8 FP8 on the H100 "
   f"({x(h100_pf[W8A8])}), because the peak ratio and the FLOP mix are the same. W8A8 INT8 is "
   + ("not available on " + " and ".join(f"the {pid}" for pid in no_int8)
      + " here: there is no sourced INT8 rate in the catalog for them (which does not say the parts lack INT8 "
      "tensor cores)." if no_int8 else "available on every part here."))

# %% [markdown]
# More modelling choices sit under these numbers. Two make the gains best cases: the cost model
# charges nothing for quantising activations (amax, scale, cast) or for the activations' scales
# (see the table of levers);
# and it times every FLOP that is not a weight matmul at the BF16 tensor-core rate, while softmax,
# norms and the recurrence run partly on slower units — the slower they run, the less a faster
# matmul buys (Amdahl). Weight-only dequantisation is charged: overlapped in the bound, in series
# in the estimate, as above. The last leans the other way, and only in the estimate: its W8A8 byte count keeps
# every operator's activations at BF16 (the residual stream and the matmul outputs stay BF16).
# Counting every activation byte at FP8 instead:

# %%
fields = {"phase": "prefill", "prompt_tokens": 512}
rows, moved, est_moved = [], [], []
for pid in ("h100-sxm", "b200"):
    base = place(MODEL, pid, **fields)
    by_acts = {acts: place(MODEL, pid, **fields, **LEVERS[W8A8], activations_dtype=acts) for acts in ("bf16", "fp8")}
    for acts, p in by_acts.items():
        rows.append([pid, acts, f"{float(base.time_lower_bound_s / p.time_lower_bound_s):.2f}× ({p.lower_bound_roof})",
                     f"{float(base.time_estimate_s / p.time_estimate_s):.2f}× ({p.bound})"])
    moved.append(abs(float(by_acts["bf16"].time_lower_bound_s / by_acts["fp8"].time_lower_bound_s) - 1) > 0.005)
    est_moved.append(abs(float(by_acts["bf16"].time_estimate_s / by_acts["fp8"].time_estimate_s) - 1) > 0.005)
show_table(["part", "activation bytes counted as", "W8A8 speed-up of the lower bound, prefill 512 (roof)",
            "W8A8 speed-up of the estimate (roof)"], rows)
md("The estimate moves; the bound " + ("moves too" if any(moved) else "does not")
   + ": its compulsory bytes hold no activations, only the weights, the KV cache and state read and written, "
   "the token ids in and the logits out.")

# %% jupyter={"source_hidden": true}
assert all(est_moved), "the prose below says the estimate moves"

# %% [markdown]
# Batch-1 decode is memory-bound on every part here, both before and after the lever, so its
# lower bound's speed-up is a ratio of bytes and the same on every part (asserted below); the
# absolute times are not. A lever that moves a step across the ridge on one part and not on
# another would give different ratios.

# %%
rows = []
for pid in PARTS:
    base, w8 = (results[pid, "decode, batch 1, 8,192 cached"][n] for n in (BASELINE, W8))
    rows.append([pid, f"{float(base.placement.time_lower_bound_s) * 1e3:,.2f} ms",
                 f"{float(base.placement.time_estimate_s) * 1e3:,.2f} ms",
                 f"{float(w8.placement.time_lower_bound_s) * 1e3:,.2f} ms",
                 f"{float(w8.placement.time_estimate_s) * 1e3:,.2f} ms",
                 f"{float(w8.placement.tokens_per_s_upper_bound):,.0f}",
                 f"{float(w8.placement.tokens_per_s_estimate):,.0f}"])
show_table(["part", "batch-1 decode, BF16: lower bound", "BF16: estimate", "weight-only 8-bit: lower bound",
            "weight-only 8-bit: estimate", "tokens/s ≤ (weight-only 8-bit, upper bound)",
            "tokens/s (weight-only 8-bit, estimate)"], rows)

# %% jupyter={"source_hidden": true}
assert all(results[pid, "decode, batch 1, 8,192 cached"][n].placement.lower_bound_roof == "memory"
           for pid in PARTS for n in (BASELINE, W8)), "the prose above says memory-bound on every part"
assert max(results[pid, "decode, batch 1, 8,192 cached"][W8].speedup_lower_bound for pid in PARTS) - min(
    results[pid, "decode, batch 1, 8,192 cached"][W8].speedup_lower_bound for pid in PARTS) < 1e-3

# %% [markdown]
# ## Datasheet FP8 vs measured FP8
#
# The best measured matmul rates in the catalog, against each part's dense roof, with the
# conditions the source gives. Protocol for every row:

# %%
md(f"*{MEASUREMENT_PROTOCOL}.*")
rows, frac = [], {}
for pid in PARTS:
    p = get_part(pid)
    for dt in ("bf16", "fp8"):
        m = best_measurement(p, "matmul_flops_per_s", dt)
        if m is None:
            continue
        frac[pid, dt] = m.value / p.peak_flops_per_s(dt)
        shape, build = m.shape or "not recorded", m.software or "not recorded"
        assert m.date and "power cap" in m.conditions, (pid, dt)  # every row says when it was taken, and the power cap
        rows.append([pid, dt.upper(), si(p.peak_flops_per_s(dt), "FLOP/s"), si(m.value, "FLOP/s"),
                     percent(frac[pid, dt], 1), f"{m.value / p.memory_bandwidth_bytes_per_s:,.0f}", shape, build,
                     m.date])
show_table(["part", "format", "datasheet (dense)", "best measured", "of datasheet", "ridge at the measured rate (FLOP/byte; ÷ datasheet bandwidth)",
            "best shape M×N×K", "software", "taken from the source on"], rows)
md(f"The source, {best_measurement(get_part('h100-sxm'), 'matmul_flops_per_s', 'bf16').source}, is a page updated "
   "in place that dates neither its runs nor its table: the last column is when this catalog took each figure "
   "from it.")

# %% jupyter={"source_hidden": true}
both = [pid for pid in PARTS if (pid, "bf16") in frac and (pid, "fp8") in frac]
gaps = {pid: 100 * (frac[pid, "bf16"] - frac[pid, "fp8"]) for pid in both}
verdict = {pid: gap_verdict(gaps[pid]) for pid in both}
resolved = [pid for pid in both if verdict[pid] == "FP8 clearly lower"]
unresolved = [pid for pid in both if verdict[pid] == "not resolved"]
assert set(resolved) | set(unresolved) == set(both)  # the prose below names only these two outcomes
lines = [f"{pid}: FP8 reaches {percent(frac[pid, 'fp8'], 1)} of its roof, BF16 {percent(frac[pid, 'bf16'], 1)} — "
         f"FP8 {'lower' if gaps[pid] > 0 else 'not lower'} by {abs(gaps[pid]):.1f} percentage points "
         f"({verdict[pid]})" for pid in both]
missing = [pid for pid in PARTS if pid not in both]


def no_pair(pid):
    """Why a part has no BF16/FP8 pair here, format by format, from the catalog (and the source's notes)."""
    part, why = get_part(pid), []
    for dt in ("bf16", "fp8"):
        if (pid, dt) in frac:
            continue
        if part.rate_status(dt) != RATE_IN_CATALOG:
            why.append(f"{dt.upper()} has no rate ({part.rate_status(dt)})")
            continue
        why.append(f"{dt.upper()} has no measurement in the catalog")
        other_dt = "fp8" if dt == "bf16" else "bf16"
        if (pid, dt) in SOURCE_NOTES_ONLY and (pid, other_dt) in frac:
            other, note = SOURCE_NOTES_ONLY[pid, dt]
            theirs, ours = best_measurement(other, "matmul_flops_per_s", dt), best_measurement(part, "matmul_flops_per_s",
                                                                                               other_dt)
            read_as = {dt: theirs.value / part.peak_flops_per_s(dt), other_dt: frac[pid, other_dt]}
            gap = 100 * (read_as["bf16"] - read_as["fp8"])
            why[-1] += (f": the source's {other} {dt.upper()} row notes \"{note}\", a note rather than a run of its own. "
                        f"Read as an {pid} figure it would make the gap {gap:.1f} percentage points ({gap_verdict(gap)}), "
                        f"but the pair would set an {other} run ({theirs.software}) beside an {pid} run "
                        f"({ours.software}) — two parts and two software builds — so it is not counted here")
    return f"{pid}: " + "; ".join(why)


md("Where both formats are measured:\n\n" + "\n".join(f"- {line}" for line in lines)
   + ("\n\nNo pair to compare on:\n\n" + "\n".join(f"- {no_pair(pid)}." for pid in missing) if missing else "")
   + f"\n\nHow large a gap this source can resolve is an **assumption**, not a measured spread: each figure is one "
   "run per shape (the mean of 100 iterations), neither clocks nor power cap stated, the best of a shape search with a different "
   "best shape per format, and the source gives no run-to-run variation. We treat a gap under "
   f"{RESOLVABLE_GAP_PERCENTAGE_POINTS:.0f} percentage points as not resolved.")

# %% jupyter={"source_hidden": true}
def parts(ps):
    return " and ".join(f"the {pid}" for pid in ps) or "none"


md(f"What these rows establish: with this software and these shapes, the best FP8 matmul found on {parts(resolved)} "
   f"reached a clearly smaller fraction of its datasheet roof than the best BF16 matmul found ("
   + ", ".join(f"{gaps[pid]:.1f} percentage points" for pid in resolved) + "). On "
   f"{parts(unresolved)} the gap ("
   + ", ".join(f"{gaps[pid]:.1f} percentage points" for pid in unresolved)
   + ") is within what one run per shape, clocks not stated, can resolve: these rows do not show FP8 lower there. "
   "What they do not establish anywhere is **why**. The two figures of one part come from different best shapes "
   "(and the source warns that its rows mix hardware, shape and software). The explanations below, for the gap on "
   f"{parts(resolved)}, are **hypotheses**, each with the measurement that would test it:")

# %%
show_table(["hypothesis", "mechanism", "how to test it"], [[h.name, h.mechanism, h.test] for h in FP8_GAP_HYPOTHESES])
md(f"The arithmetic behind the second one: operand bytes per second at peak, FP8 ÷ BF16, on the H100 = "
   f"(peak ratio) × (bytes per element ratio) = "
   f"{get_part('h100-sxm').peak_flops_per_s('fp8') / get_part('h100-sxm').peak_flops_per_s('bf16'):.0f} × "
   f"{bytes_per_element('fp8') / bytes_per_element('bf16'):.1f} = {operand_bytes_per_s_ratio('h100-sxm'):.1f}.\n\n"
   f"Not an explanation of this gap: {NOT_IN_THE_MATMUL_MEASUREMENT}.")

# %% jupyter={"source_hidden": true}
assert "h100-sxm" in resolved and "b200" in unresolved  # the summary's claims

# %% [markdown]
# ## The interview answer
#
# *"What happens to the knee when you move from FP16 to FP8 on an H100?"*

# %% jupyter={"source_hidden": true}
h100 = get_part("h100-sxm")
fp8_meas = best_measurement(h100, "matmul_flops_per_s", "fp8")
lens = {n: float(results["h100-sxm", "decode, batch 32, 8,192 cached"][n].placement.intensity_per_weight_byte)
        for n in (BASELINE, W8A8)}
# batch-1 decode: the bytes above half the BF16 step's, and the share of them the BF16 lm_head keeps (had it been
# quantised to 8 bits it would have read half its bytes)
excess = compulsory(one[W8]) - compulsory(one[BASELINE]) / 2
head_share = float(head.weight_bytes) * head.layers / 2 / excess
assert head_share > 0.5  # "chiefly"
md(f"1. **At fixed bytes the ridge moves right by the peak ratio**: {h100.ridge_point_flop_per_byte('fp16'):,.0f} → "
   f"{h100.ridge_point_flop_per_byte('fp8'):,.0f} FLOP/byte (dense figures; the with-sparsity headline would "
   f"multiply both by {h100.sparse_flops_per_s['fp8'] / h100.peak_flops_per_s('fp8'):.0f}).\n"
   f"2. **But FP8 weights halve the weight bytes too**: W8A8 moves the weight lens of intensity of a batch-32 decode "
   f"from {lens[BASELINE]:,.0f} to {lens[W8A8]:,.0f} FLOP per weight byte (×{lens[W8A8] / lens[BASELINE]:.1f}; the "
   f"ridge ×{h100.ridge_point_flop_per_byte('fp8') / h100.ridge_point_flop_per_byte('fp16'):.1f}"
   + ("; under ×2 because the lm_head keeps its BF16 weights" if lens[W8A8] / lens[BASELINE] < 1.95 else "")
   + "): the FP8 weight matmuls keep their place relative to the knee.\n"
   f"3. **Which side of the knee you are on decides the gain** (speed-ups of the lower bound): an 8,192-token "
   f"prefill (compute-bound) {x(pf[W8A8])} from W8A8 (attention stays BF16); batch-1 decode (memory-bound) "
   f"{x(one[W8])} from weight-only 8-bit and {x(one[W8A8])} from W8A8 — the FP8 arithmetic adds nothing there; "
   f"under 2× chiefly because the usual recipe keeps the lm_head in BF16 ({percent(head_share, 0)} of the bytes "
   f"above half the BF16 step's; quantising it and the embedding too: {every_x:.2f}×).\n"
   f"4. **Measured, not datasheet**: the best FP8 matmul measured on an H100 is {si(fp8_meas.value, 'FLOP/s')} "
   f"({percent(fp8_meas.value / h100.peak_flops_per_s('fp8'), 0)} of the dense roof, shape "
   f"{fp8_meas.shape}), a ridge of about "
   f"{fp8_meas.value / h100.memory_bandwidth_bytes_per_s:,.0f} FLOP/byte at that rate and the datasheet bandwidth. That fraction is {gaps['h100-sxm']:.1f} percentage "
   "points below BF16's; why is open — clocks and power, pipeline latency (if the K-tile is kept in elements), "
   "epilogue, kernel choice — each a hypothesis with a test.\n"
   "5. **What it costs**: accuracy (scaling per tensor, channel or block; outliers), quantising the activations "
   "(which neither figure charges), dequantising weight-only weights (the bound overlaps it with the rest of the "
   "step, the estimate adds it in series: a real kernel takes at least the bound's time, and may take longer than the estimate), and a KV cache or recurrent state that may "
   "need to stay in higher precision.")

# %% [markdown]
# ## Explore
#
# Choose a part, a phase, a recipe for the weights and matmuls, and the KV-cache format. Every
# recipe is a real configuration; one the part cannot run says so. The open square is all-BF16;
# the filled dot is your choice; the text gives the step's lower bound and estimate, the speed-up of
# each, and whether it fits. The dots sit at the estimate's (unfused) intensity. Try: weight-only
# 4-bit and then W4A4 FP4 on a B200 in decode; W8A8 FP8 on an A100; the FP8 KV cache at batch 64.

# %%
from roofline_lessons.viz.dashboards import lesson07_dashboard

dashboard = lesson07_dashboard()

# %% [markdown]
# ## Summary

# %% jupyter={"source_hidden": true}
w8a8_extra = {label: h[label][W8A8].speedup_lower_bound / h[label][W8].speedup_lower_bound for label, *_ in workloads}
assert all(abs(w8a8_extra[w[0]] - 1) < 0.005 for w in workloads if w[1] == "decode")
assert all(w8a8_extra[w[0]] > 1.5 for w in workloads if w[1] == "prefill")
# the two figures reach different conclusions for a short prefill only, not for 8,192 tokens
assert pace(short[W8].speedup_estimate) != pace(short[W8].speedup_lower_bound)
assert short[W8A8].regime != short[W8A8].regime_lower_bound
assert pace(pf[W8].speedup_estimate) == pace(pf[W8].speedup_lower_bound) and pf[W8A8].regime == pf[W8A8].regime_lower_bound
md("- A faster format raises the compute ceiling and moves the ridge right by the same factor — at fixed bytes.\n"
   "- 8-bit tensor-core matmuls need 8-bit operands: the levers are weight-only quantisation (bytes only, any part), "
   "W8A8 in FP8, or in INT8 where the catalog has an INT8 rate (as on the A100) — bytes and the matmul roof, with "
   "attention at BF16 unless stated — and an FP8 KV cache (KV bytes only). W8A8 halves the linear layers' weight bytes "
   "just as weight-only "
   f"does, so in decode it gains the same ({x(one[W8A8])} vs {x(one[W8])} at batch 1 on the H100, speed-ups of "
   "the lower bound, the usual recipe: linear layers in 8 bits, lm_head and embedding BF16); **W8A8's extra over "
   "weight-only helps only compute-bound work** (prefill, lower bounds: "
   + ", ".join(f"×{w8a8_extra[w[0]]:.2f} for {w[0]}" for w in workloads if w[1] == "prefill")
   + "). Know which lever you are pulling.\n"
   "- Two figures: the lower bound counts compulsory bytes and overlaps weight-only dequantisation; the estimate, by "
   "its conventions, adds the dequantisation in series and sends every activation through HBM. Where a conclusion "
   "differs between them (a short weight-only prefill, a short W8A8 prefill), a real kernel is never faster than the bound, and can be slower than the estimate (it is a convention, not a ceiling).\n"
   f"- The best measured FP8 matmul sits clearly further below its roof than BF16's on {parts(resolved)} ("
   + ", ".join(f"{gaps[pid]:.1f} percentage points" for pid in resolved) + f"); on {parts(unresolved)} the gap ("
   + ", ".join(f"{gaps[pid]:.1f} points" for pid in unresolved)
   + ") is within what a source with one run per shape and no stated clocks can resolve. Why the gap exists is a set of "
   "hypotheses with tests, not a known fact.")

# %% [markdown]
# **A question to leave with.** The B200 adds FP4. For a batch-1 decode, how much more does W4A4
# FP4 buy than weight-only 4-bit — and why is the answer the same as for FP8?
#
# **Interview questions this lesson prepares you for**
#
# - "What happens to the knee when you move from FP16 to FP8 on an H100?"
# - "Will FP8 speed up our decode? Our prefill? By how much?"
# - "Weight-only quantization vs W8A8: which one for a latency-bound chatbot?"
# - "Why do FP8 matmuls reach a lower fraction of peak, and how would you find out?"
#
# The exercises for this lesson are in `exercises/07_fp8_knee_shift.ipynb`.
