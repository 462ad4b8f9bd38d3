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
# # Lesson 2 — The ridge point, and the hedges around it
#
# **By the end of this lesson you can**
#
# 1. compute the ridge point $I^* = P_\text{peak} / \beta$ of any part, in any number format, and
#    read it off a chart of several parts;
# 2. tell a datasheet roof from the roof real kernels reach, and say how far apart they are;
# 3. spot a with-sparsity headline posing as a dense figure, and a format mix-up in a popular
#    interview flashcard;
# 4. add the third number under the roofs, memory capacity, and say what H100 → H200 → B200 does
#    to a 70B model.

# %%
# %matplotlib inline
from roofline_lessons import get_model, get_part, list_parts
from roofline_lessons.core.hardware import RATE_NO_UNITS, RATE_NOT_IN_CATALOG, RATE_NOT_PUBLISHED
from roofline_lessons.viz.charts import roofline_chart, roofs_for
from roofline_lessons.topics.datasheets import (best_measurement, capacity_side_by_side, headline_kind, measured_roof,
                                         ridge_table)
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.core.memory import max_batch_that_fits, weight_bytes
from roofline_lessons.core.units import percent, si

# %% [markdown]
# ## One number per part and format
#
# Lesson 1 found the H100's ridge from two datasheet figures. The same division works for every
# part and every number format the part supports. Reading the table: a kernel whose intensity is
# below a part's ridge is memory-bound on that part; above it, compute-bound. Where a part has no
# ridge for a format, the cell says why, from the catalog: *no units* — the chip has no arithmetic
# in that format (its datasheet lists none, and the format came with a later generation: the A100
# has no FP8); *not published* — the vendor gives no figure for it; *not in catalog* — a figure may
# exist, but this catalog has not taken one in from a source. An empty cell is never a claim that
# the part lacks the units. The fp32 column is the **non-tensor** FP32 rate (NVIDIA's CUDA cores,
# not TF32 on the tensor cores) unless the catalog's note on the part says its FP32 figure is a
# *matrix* rate; the cell then says so. A tensor-core rate also depends on the format the products
# are summed in: where a part's note says its rate is the one with FP32 accumulation (a GeForce
# card's tensor cores sum in FP16 at twice that rate), the cell says that too. The notes behind
# every marked cell are printed under the table. The int8 column is in integer operations per byte
# (the datasheets' TOPS).

# %%
import re

DTYPES_SHOWN = ("fp32", "bf16", "fp8", "fp4", "int8")
rows = ridge_table(DTYPES_SHOWN)


def note_sentences(part_id, *words):
    """The sentences of a part's catalog note that contain every one of ``words``."""
    return [s for s in re.split(r"(?<=\.)\s+", get_part(part_id).notes) if all(w in s for w in words)]


# the catalog's fp32 is the non-tensor (vector) rate "unless the note says otherwise"
FP32_MARK = {}
for r in rows:
    said = note_sentences(r["part"], "FP32", "matrix")
    # a matrix rate; where the note also gives the vector rate as the same figure, the cell says both
    if said and r["fp32"] is not None:
        FP32_MARK[r["part"]] = " (vector = matrix)" if any("vector" in s for s in said) else " (matrix)"
# rates the note gives with FP32 accumulation (float tensor formats only: integers accumulate in INT32)
ACCUMULATE = {(r["part"], dt) for r in rows for dt in ("bf16", "fp8", "fp4")
              if r[dt] is not None and note_sentences(r["part"], dt.upper(), "FP32 accumulate")}

GAP_CELL = {RATE_NO_UNITS: "no units", RATE_NOT_PUBLISHED: "not published", RATE_NOT_IN_CATALOG: "not in catalog"}


def ridge_cell(r, dt):
    if r[dt] is None:  # why the part has no rate: from the catalog, never a bare dash
        return GAP_CELL[get_part(r["part"]).rate_status(dt)]
    mark = FP32_MARK.get(r["part"], "") if dt == "fp32" else ""
    return f"{r[dt]:,.0f}" + mark + (" (FP32 accumulate)" if (r["part"], dt) in ACCUMULATE else "")


header = {"fp32": "ridge fp32 (non-tensor)"}
show_table(["part", "bandwidth"] + [header.get(dt, f"ridge {dt}") for dt in DTYPES_SHOWN],
           [[r["part"], si(r["bandwidth_bytes_per_s"], "B/s")] + [ridge_cell(r, dt) for dt in DTYPES_SHOWN]
            for r in rows])

# %% jupyter={"source_hidden": true}
# the RTX 4090's whitepaper rates in the catalog are its FP32-accumulate ones
assert ("rtx-4090", "bf16") in ACCUMULATE and ("rtx-4090", "fp8") in ACCUMULATE
assert "mi300x" in FP32_MARK

# %%
gaps = {}
for r in rows:
    for dt in DTYPES_SHOWN:
        if r[dt] is None:
            gaps.setdefault(GAP_CELL[get_part(r["part"]).rate_status(dt)], {}).setdefault(dt, []).append(r["part"])
md("Cells without a ridge, by reason: " + "; ".join(
    f"**{kind}**: " + ", ".join(f"{dt} ({', '.join(pids)})" for dt, pids in by_dtype.items())
    for kind, by_dtype in gaps.items()) + ".")
marked = {pid: note_sentences(pid, "FP32", "matrix") for pid in FP32_MARK}
for pid in sorted({pid for pid, _ in ACCUMULATE}):
    marked[pid] = marked.get(pid, []) + note_sentences(pid, "is with FP32 accumulate")
md("The catalog's notes behind the marked cells: " + "; ".join(
    f"**{pid}**: “{' '.join(said)}”" for pid, said in marked.items()) + ".")

# %% jupyter={"source_hidden": true}
assert all(marked.values())

# %% [markdown]
# A few things worth noticing, each computed below rather than asserted:
# the spread of BF16 ridges across the catalog, and what halving the bytes per value (FP8, FP4) does.

# %% jupyter={"source_hidden": true}
bf16 = {r["part"]: r["bf16"] for r in rows}
lo, hi = min(bf16, key=bf16.get), max(bf16, key=bf16.get)
b200 = get_part("b200")
md(f"BF16 ridges run from **{bf16[lo]:,.0f}** FLOP/byte ({lo}) to **{bf16[hi]:,.0f}** ({hi}). "
   f"On the B200, each halving of the format doubles the ridge: "
   f"BF16 {b200.ridge_point_flop_per_byte('bf16'):,.0f} → FP8 {b200.ridge_point_flop_per_byte('fp8'):,.0f} → "
   f"FP4 {b200.ridge_point_flop_per_byte('fp4'):,.0f}. The faster the arithmetic relative to memory, the more "
   "work a kernel must do per byte before compute becomes the limit.")

# %% [markdown]
# Even one part's datasheet figures can come in two versions. The catalog keeps the second one
# beside the figure the course uses, with its source:

# %% jupyter={"source_hidden": true}
alt_bw = b200.alternatives("memory_bandwidth_bytes_per_s")[0]
alt_ridge = b200.peak_flops_per_s("bf16") / alt_bw.value
assert alt_bw.used_value == b200.memory_bandwidth_bytes_per_s and alt_ridge > b200.ridge_point_flop_per_byte("bf16")
md(f"The B200's bandwidth is {si(alt_bw.used_value, 'B/s')} in the DGX B200 datasheet (the course's figure) and "
   f"{si(alt_bw.value, 'B/s')} in NVIDIA's HGX B200 table. With the second, its BF16 ridge would be "
   f"{alt_ridge:,.0f} instead of {b200.ridge_point_flop_per_byte('bf16'):,.0f} FLOP/byte and every memory-bound "
   f"B200 time {percent(alt_bw.used_value / alt_bw.value - 1, 0)} longer. The catalog's note on the choice: "
   f"*{alt_bw.why_not_used}*")

# %% [markdown]
# Several parts on one chart make the same point visually: each part is a bend at a different
# place. On log–log axes every bandwidth roof is a line of slope 1; more bandwidth moves the line
# up, not steeper.

# %% jupyter={"source_hidden": true}
h100_, h200_ = get_part("h100-sxm"), get_part("h200")
same_peak = h200_.peak_flops_per_s("bf16") == h100_.peak_flops_per_s("bf16")
bw_word = "higher" if h200_.memory_bandwidth_bytes_per_s > h100_.memory_bandwidth_bytes_per_s else "lower"
side_word = "left" if h200_.ridge_point_flop_per_byte() < h100_.ridge_point_flop_per_byte() else "right"
md(f"The H200 {'shares' if same_peak else 'does not share'} the H100's BF16 compute ceiling; its bandwidth line sits "
   f"{bw_word} ({si(h200_.memory_bandwidth_bytes_per_s, 'B/s')} against {si(h100_.memory_bandwidth_bytes_per_s, 'B/s')}), "
   f"so its ridge sits further {side_word}: {h200_.ridge_point_flop_per_byte():,.0f} against "
   f"{h100_.ridge_point_flop_per_byte():,.0f} FLOP/byte.")

# %%
chart_parts = ["a100-80gb", "h100-sxm", "h200", "b200", "mi300x"]
roofs = [roof for p in chart_parts for roof in roofs_for(p, ["bf16"])]
roofline_chart(roofs, title="Five parts, dense BF16 (datasheet figures)", intensity_range=(0.1, 1e4));

# %% [markdown]
# ## Hedge 1: the datasheet roof is not the roof kernels reach
#
# Vendor peaks assume every unit busy every cycle; vendor bandwidth is the pin rate, printed
# rounded. How close real kernels come is a measurement, made under conditions that belong beside
# it. The catalog keeps measured figures next to the datasheet ones, each with its source and
# conditions. On the H100 SXM, the best measured BF16 matmul:

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.published import provenance

h100 = get_part("h100-sxm")
mamf = best_measurement(h100, "matmul_flops_per_s", "bf16")
md(f"Best measured BF16 matmul on the H100 SXM: **{si(mamf.value, 'FLOP/s')}**, "
   f"{percent(mamf.value / h100.peak_flops_per_s('bf16'), 0)} of the {si(h100.peak_flops_per_s('bf16'), 'FLOP/s')} "
   f"datasheet peak, at its best shape (M×N×K = {mamf.shape}). Conditions: {mamf.conditions}. "
   f"Source: {provenance(mamf)}.")

# %% [markdown]
# And on the H100 PCIe, where a stream benchmark has been published, the bandwidth side:

# %%
pcie = get_part("h100-pcie")
# every streaming row: reads and read-write kernels, and any store-only one (kept under its own quantity)
STREAM_QUANTITIES = ("bandwidth_bytes_per_s", "store_bandwidth_bytes_per_s")
streams = [m for q in STREAM_QUANTITIES for m in pcie.measurements(q)]
for m in streams:
    print(f"{m.kernel:26}: {si(m.value, 'B/s')} = {percent(m.value / pcie.memory_bandwidth_bytes_per_s, 0)} "
          f"of the {si(pcie.memory_bandwidth_bytes_per_s, 'B/s')} datasheet figure ({m.source})")

# %% jupyter={"source_hidden": true}
def _and_words(items):
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


low, high = min(streams, key=lambda m: m.value), max(streams, key=lambda m: m.value)
share = {m.kernel: m.value / pcie.memory_bandwidth_bytes_per_s for m in (low, high)}
above = [m for m in streams if m.value > pcie.memory_bandwidth_bytes_per_s]
stores_only = all(m.quantity == "store_bandwidth_bytes_per_s" for m in above)
md(f"The {len(streams)} streaming kernels the catalog records on the {pcie.name} reach from "
   f"{percent(share[low.kernel], 0)} ({low.kernel}) to {percent(share[high.kernel], 0)} ({high.kernel}) of "
   f"{si(pcie.memory_bandwidth_bytes_per_s, 'B/s')}, the datasheet's rounded figure. "
   + (f"The {_and_words([m.kernel for m in above])} {'runs' if len(above) == 1 else 'run'} above it: the datasheet "
      "figure is a rounded rate, not a ceiling no kernel passes"
      + (" (though a kernel that only writes is not what a decode step does: it reads)" if stores_only else "")
      + ". " if above else "None reaches it. ")
   + "How close a kernel comes depends on its access pattern (reads, writes, how many streams), so a measured roof "
   "is the one to hold kernels against.")

# %% [markdown]
# Put the measured figures in place of the datasheet ones and the roof drops and the ridge moves.
# The measured roof is the honest one to judge a kernel against: a kernel close to the measured
# roof is excellent, even when it looks mediocre against the datasheet one.

# %%
measured = measured_roof("h100-sxm", "bf16")
datasheet = roofs_for("h100-sxm", ["bf16"])[0]
roofline_chart([datasheet, measured.roof], title="H100 SXM, BF16: datasheet vs measured", intensity_range=(1, 1e4));
md(f"Datasheet ridge {datasheet.ridge_point_flop_per_byte:,.0f} FLOP/byte; with the measured matmul rate "
   f"{measured.roof.ridge_point_flop_per_byte:,.0f} — a ridge for that measurement's conditions (its best shape, "
   f"{mamf.shape}, with {mamf.software}; the rest above), not for every matmul. (No measured HBM "
   "bandwidth for the SXM part is in the catalog, so the bandwidth stays the datasheet's — the label says which "
   "figures are measured.)")

# %% [markdown]
# ## Hedge 2: dense or with sparsity?
#
# NVIDIA and AMD headline their tensor-core rates **with 2:4 structured sparsity**: two of every
# four weights zero, in a pattern the hardware can skip. Dense inference gets half. Some sheets
# print the two side by side (the A100's, AMD's MI300X: dense, then with sparsity). NVIDIA's H100,
# H200 and B200 tables print only the sparse figure, with a footnote saying so: the dense rate is
# on none of them, and you halve the printed one yourself. The catalog keeps the sparse headlines
# separately so you can check any figure you meet:

# %%
HEADLINES = [("h100-sxm", 1979e12), ("h100-sxm", 989.4e12), ("h100-pcie", 3026e12), ("l4", 485e12),
             ("mi300x", 2614.9e12), ("a100-80gb", 624e12), ("b200", 4.5e15), ("b200", 9e15)]
kinds = {(part_id, figure): headline_kind(part_id, figure) for part_id, figure in HEADLINES}
for (part_id, figure), what in kinds.items():
    print(f"{part_id:9} {si(figure, 'FLOP/s'):>13}  is  {' / '.join(what) or 'not in the catalog'}")

# %% [markdown]
# Read the list slowly: a figure can be two things at once. (INT8 rates are integer operations per
# second, TOPS, printed beside FLOP/s.)

# %% jupyter={"source_hidden": true}
def _and(items):
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


formats_held = sorted({dt for pid in list_parts() for table in (get_part(pid).dense_flops_per_s,
                                                                get_part(pid).sparse_flops_per_s) for dt in table})
assert "tf32" not in formats_held
md(f"The catalog lists every kind a figure is **among the formats it holds**: {_and(formats_held)}. It holds no "
   f"TF32 rates, so a TF32 match goes unlisted: the H100 SXM's {si(h100.peak_flops_per_s('bf16'), 'FLOP/s')} is also "
   "its TF32 tensor-core rate with sparsity (NVIDIA's H100 datasheet, whose tensor-core rows are all shown with "
   "sparsity), and NVIDIA's HGX B200 table prints the B200's TF32 rate with sparsity as \"2.2 PFLOPS\".")

both = {key: k for key, k in kinds.items() if any(x.endswith(" dense") for x in k)
        and any(x.endswith(" with sparsity") for x in k)}
sparse_only = [key for key, k in kinds.items() if k and all(x.endswith(" with sparsity") for x in k)]
a100_kinds = kinds["a100-80gb", 624e12]
# the A100 sentence below: its 624 is INT8 dense and BF16 with sparsity, and the part has no FP8 units
assert "int8 dense" in a100_kinds and "bf16 with sparsity" in a100_kinds
assert get_part("a100-80gb").rate_status("fp8") == RATE_NO_UNITS
md("Dense and with sparsity at once: " + "; ".join(
    f"{pid}'s {si(f, 'FLOP/s')} is {_and(k)}" for (pid, f), k in both.items())
   + ". Only with sparsity: " + _and(f"{pid}'s {si(f, 'FLOP/s')}" for pid, f in sparse_only)
   + " — halve them for dense inference. The A100's 624 is its dense INT8 rate, which some tables print under "
   "\"FP8\" (the A100 has no FP8 units), and just as well its BF16 rate with sparsity.")

# %% [markdown]
# The flashcard this course grew from says the B200 has "around 2.2 PFLOPS FP8". Check it:

# %% jupyter={"source_hidden": true}
md(f"2.25 PFLOPS on the B200 is: **{', '.join(headline_kind('b200', 2.25e15))}**. The dense FP8 rate is "
   f"{si(b200.peak_flops_per_s('fp8'), 'FLOP/s')}, so the card's FP8 ridge would be off by a factor of "
   f"{b200.peak_flops_per_s('fp8') / 2.25e15:.0f}. A \"2.2 PFLOPS\" may also have come from the TF32 row of NVIDIA's "
   "HGX B200 table, a rate with sparsity, which this catalog does not hold.")

# %% [markdown]
# ## The third number: memory capacity
#
# The roofline has two numbers per machine, but a workload must also **fit**. Capacity does not
# move either roof; it decides whether you can run at all, and how large a batch (lesson 4) you
# can afford.
#
# **A trap in the units.** A datasheet writes "3.35 TB/s" and "80 GB" side by side, and the two
# "G"s are not the same. Bandwidth is SI: 3.35 × 10¹² bytes per second. Device memory is binary:
# DRAM dies and HBM stacks are sized in binary units (an H100 carries five 16 GiB stacks; 24 GiB
# HBM3E stacks show the count need not be a power of two, but the unit is still GiB), so the
# "80 GB" is 80 GiB = 80 × 2³⁰ bytes. **GB of bandwidth is SI; GB of capacity is GiB.** Read the
# capacity as SI and you lose a slice of every chip:

# %% jupyter={"source_hidden": true}
from roofline_lessons.core.units import GB, GiB, binary

h200 = get_part("h200")
shown_gb = h200.memory_capacity_bytes / GiB  # the number printed on the datasheet
md(f"The H200's \"{shown_gb:,.0f} GB\" is {h200.memory_capacity_bytes:,.0f} bytes ({binary(h200.memory_capacity_bytes)}); "
   f"read as SI it would be {shown_gb * GB:,.0f} bytes — {si(h200.memory_capacity_bytes - shown_gb * GB, 'B')} "
   f"({percent(1 - GB / GiB, 1)}) short.")

# %% [markdown]
# That GiB figure is the vendor's **nominal** capacity. What the driver hands out is a little less:
# `nvidia-smi` shows each card's total in MiB, and part of the nominal memory is reserved on the
# card and never handed out. The course computes every fit with the nominal figure, so a fit it
# reports is an upper bound on what fits on the card. The totals `nvidia-smi` prints:

# %%
from roofline_lessons.core.units import MiB

# nvidia-smi's memory total on an idle card, in MiB, as public nvidia-smi printouts show it (the H200's
# 143,771 and the B200's 183,359 also sit in comments beside those parts in the catalog, the H100's 81,559 in
# its header: comments, not data, so the lesson takes them from here)
NVIDIA_SMI_TOTAL_MIB = {"h100-sxm": 81_559, "h200": 143_771, "b200": 183_359}
device_bytes = {pid: mib * MiB for pid, mib in NVIDIA_SMI_TOTAL_MIB.items()}


def gib(n_bytes):  # two decimals: the nominal and device figures differ in the first
    return f"{n_bytes / GiB:,.2f} GiB"


show_table(["part", "nominal (datasheet)", "nvidia-smi total", "kept back"],
           [[pid, gib(get_part(pid).memory_capacity_bytes), f"{mib:,} MiB = {gib(device_bytes[pid])}",
             binary(get_part(pid).memory_capacity_bytes - device_bytes[pid])]
            for pid, mib in NVIDIA_SMI_TOTAL_MIB.items()])

# %% jupyter={"source_hidden": true}
assert all(device_bytes[pid] < get_part(pid).memory_capacity_bytes for pid in device_bytes)

# %% [markdown]
# A serving engine does not get all of that either. vLLM's `gpu_memory_utilization` (0.9 by
# default) is the engine's *budget*: the share of the device's total (as the driver reports it) it
# may use, the rest left for other processes. Out of that budget come the weights, the peak
# activations it profiles, CUDA graphs and the memory outside PyTorch that the instance adds once
# it has started (NCCL's buffers, for one); the KV cache gets what is left. The CUDA context is
# not in the budget: it exists before vLLM takes its baseline snapshot of the device, so it sits in
# the other share, with other processes' memory. So every "does it fit?" has two answers — with the
# whole capacity (the optimistic bound) and with the engine's share (still an upper bound here,
# since activations and graphs are not subtracted). Compare three generations on a 70B model in
# BF16, with an 8,192-token context, both ways, on the nominal capacities:

# %%
llama70 = get_model("llama-3.1-70b")
side = capacity_side_by_side("llama-3.1-70b", ["h100-sxm", "h200", "b200"], context_tokens=8192)
util = side[0].memory_utilization
show_table(["part", "BF16 peak", "bandwidth", "ridge", "capacity (nominal)", "BF16 weights", "weights fit?",
            "largest batch at 8K", f"fit at {util:.0%}?", f"largest batch at {util:.0%}", "batch-1 decode step: lower bound", "… estimate"],
           [[r.part, si(r.peak_flops_per_s, "FLOP/s"), si(r.bandwidth_bytes_per_s, "B/s"),
             f"{r.peak_flops_per_s / r.bandwidth_bytes_per_s:,.0f}", binary(r.capacity_bytes), binary(r.weight_bytes),
             "yes" if r.weights_fit else "no", f"{r.max_batch:,}",
             "yes" if r.weights_fit_with_headroom else "no", f"{r.max_batch_with_headroom:,}",
             f"{r.decode_step_lower_bound_s * 1e3:,.1f} ms" if r.weights_fit else "— (does not fit)",
             f"{r.decode_step_estimate_s * 1e3:,.1f} ms" if r.weights_fit else "—"] for r in side])

# %% [markdown]
# H100 → H200 keeps the compute roof and raises bandwidth and capacity; H200 → B200 raises all
# three. For a 70B model in BF16 the capacity columns decide more than either roof:

# %% jupyter={"source_hidden": true}
w70 = weight_bytes(llama70, "bf16")
rows = {r.part: r for r in side}
h100_free = h100.memory_capacity_bytes - w70
h200_free = h200.memory_capacity_bytes - w70
h200_free_90 = h200.memory_capacity_bytes * util - w70
h200_device_free = device_bytes["h200"] - w70
# the same fits on the device's own total: a memory_utilization of (device ÷ nominal) scales the nominal capacity to it
on_device = {pid: device_bytes[pid] / get_part(pid).memory_capacity_bytes for pid in device_bytes}
h200_device_batch = max_batch_that_fits(llama70, "h200", 8192, memory_utilization=on_device["h200"])


def _fits(free):  # a sentence fragment from the sign of the free bytes, never typed by hand
    return f"fits with {gib(free)} to spare" if free >= 0 else f"misses by {gib(-free)}"


b200_device = {u: max_batch_that_fits(llama70, "b200", 8192, memory_utilization=u * on_device["b200"])
               for u in (1.0, util)}
md(f"The BF16 weights are {si(w70, 'B')} = {gib(w70)}. On the H100 ({gib(h100.memory_capacity_bytes)} nominal) "
   f"the model {_fits(h100_free)}. On the H200's {gib(h200.memory_capacity_bytes)} nominal it {_fits(h200_free)} — "
   f"room for {rows['h200'].max_batch} sequences of 8K tokens — and on the {gib(device_bytes['h200'])} "
   f"`nvidia-smi` reports it {_fits(h200_device_free)}, room for {h200_device_batch}. In vLLM's long-standing default {util:.0%} "
   f"share it {_fits(h200_free_90)} (of the nominal figure); on the device's figure it "
   f"{_fits(device_bytes['h200'] * util - w70)}. The B200 "
   f"{'holds it either way' if rows['b200'].weights_fit_with_headroom else 'holds it only with all its memory'}: "
   f"a batch of {rows['b200'].max_batch} (or {rows['b200'].max_batch_with_headroom} at {util:.0%}) on its nominal "
   f"{gib(b200.memory_capacity_bytes)}, {b200_device[1.0]} (or {b200_device[util]}) on the "
   f"{gib(device_bytes['b200'])} `nvidia-smi` reports.")
w70_fp8 = weight_bytes(llama70, "fp8")
w70_all_fp8 = weight_bytes(llama70, "fp8", quantized_weights="all")
kept_bf16_params = w70_fp8 - w70_all_fp8  # each parameter the recipe keeps in BF16 costs one byte more than in FP8
fp8_fits = [p for p in ("h100-sxm", "h200") if w70_fp8 <= get_part(p).memory_capacity_bytes * util]
fp8_fits_device = [p for p in ("h100-sxm", "h200") if w70_fp8 <= device_bytes[p] * util]
assert w70_fp8 / w70 > 0.5
md(f"In FP8 the weights fall to {gib(w70_fp8)}, {percent(w70_fp8 / w70, 1)} of the BF16 {gib(w70)} rather "
   f"than half: published FP8 checkpoints keep the embedding, the lm_head and the norms "
   f"({kept_bf16_params / 1e9:.1f} × 10⁹ parameters) in BF16. That fits within {util:.0%} of: "
   f"{', '.join(fp8_fits) or 'neither the H100 nor the H200'} "
   + ("(nominal and `nvidia-smi` totals alike)" if fp8_fits == fp8_fits_device else
      f"(nominal), {', '.join(fp8_fits_device) or 'neither the H100 nor the H200'} (the `nvidia-smi` totals)")
   + ". An exercise below asks how large a batch then fits on the H200.")

# %% [markdown]
# ## Explore
#
# Pick parts and a number format; slide the intensity. The chart marks where each part's roof
# sits at that intensity, and the text says which roof binds on each. Try: FP8 on the H100 vs
# BF16 on the B200 at I = 300; the TPUs in INT8; the A100 in FP8.

# %%
from roofline_lessons.viz.dashboards import lesson02_dashboard

dashboard = lesson02_dashboard()

# %% [markdown]
# ## Summary
#
# - The ridge $I^* = P_\text{peak} / \beta$ is one number per part **and** per format; smaller
#   formats push it right.
# - Judge kernels against measured roofs, not datasheet ones; they can differ by tens of percent.
# - Check every headline: with-sparsity rates are twice the dense rate; some tables mix up
#   formats (A100 "FP8", B200 "2.2 PFLOPS FP8").
# - Capacity is the third number: it decides whether a model runs on one chip and how large a
#   batch fits. GB of bandwidth is SI; GB of capacity is GiB, and the datasheet's GiB is nominal:
#   the driver hands out a little less. Ask both "does it fit?" questions: in the whole device,
#   and in the share a serving engine uses (vLLM: 0.9 for most of its history, 0.92 in current releases).
#
# **A question to leave with.** The H200 has the H100's compute with more bandwidth and more
# memory. For which workloads is it a better buy than a second H100, and for which is it not?
#
# **Interview questions this lesson prepares you for**
#
# - "What is the ridge point of an H200 in BF16? Of a B200 in FP4?"
# - "A vendor quotes 2 PFLOPS. What do you ask before using that number?"
# - "Why might a kernel at 70 % of datasheet peak be excellent?"
# - "You need to serve a 70B model. H100, H200 or B200 — what decides it?"
#
# The exercises for this lesson are in `exercises/02_the_ridge_point.ipynb`.
