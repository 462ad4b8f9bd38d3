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
# # Lesson 1 — The roofline model: two numbers for the machine, one for the kernel
#
# **By the end of this lesson you can**
#
# 1. write down attainable performance, $P = \min(P_\text{peak},\ \beta \cdot I)$, and say what each
#    symbol is and in which unit;
# 2. compute a part's ridge point from its datasheet and say which side of it a kernel sits on;
# 3. place a batch-1 decode step, a batch-32 decode step and a long prefill of a real model on an
#    H100 and explain, with numbers, why a decode kernel at a fraction of a percent of peak is
#    not broken;
# 4. say what to buy for each: bytes or FLOPs.
#
# Every number below is computed by the `roofline_lessons` package from its catalogs (each figure
# carries its source and date), so when a figure is corrected, the lesson corrects itself.

# %%
# %matplotlib inline
from roofline_lessons import get_model, get_part, place
from roofline_lessons.viz.charts import Roof, point_on_roof, roofline_chart
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.core.roofline import attainable_flops_per_s, bound
from roofline_lessons.core.units import GB, TERA, percent, si

# %% [markdown]
# ## A profiling report lands on your desk
#
# The decode kernel of a 27-billion-parameter model reaches a few tenths of one percent of the
# GPU's peak arithmetic rate. The tempting conclusion: someone wrote a terrible kernel, and a
# rewrite will win back two orders of magnitude.
#
# The roofline model (Williams, Waterman and Patterson, 2009) lets you test that conclusion in
# half a minute without opening the code. It needs three numbers:
#
# - from the machine, its **peak arithmetic rate** $P_\text{peak}$ (FLOP/s) and its **memory
#   bandwidth** $\beta$ (bytes/s);
# - from the kernel, its **arithmetic intensity** $I$: the FLOPs it performs per byte it must move
#   to or from memory (FLOP/byte).
#
# Here are the machine's two numbers for an H100 SXM.

# %% jupyter={"source_hidden": true}
h100 = get_part("h100-sxm")
peak_bf16 = h100.peak_flops_per_s("bf16")
bandwidth = h100.memory_bandwidth_bytes_per_s
md(f"**{h100.name}** — dense BF16 peak **{si(peak_bf16, 'FLOP/s')}**, "
   f"{h100.memory_type} bandwidth **{si(bandwidth, 'B/s')}** "
   f"(source: {h100.source}; as of {h100.as_of}). "
   f"The with-sparsity headline, {si(h100.sparse_headline_flops_per_s('bf16'), 'FLOP/s')}, "
   "is twice the dense rate and does not apply to dense inference.")

# %% [markdown]
# ## The model in one line
#
# A kernel cannot compute faster than the arithmetic units allow, and it cannot compute faster
# than memory can deliver its operands. If every byte fetched feeds $I$ FLOPs, memory can sustain
# at most $\beta \cdot I$ FLOP/s. So
#
# $$P_\text{attainable} = \min\left(P_\text{peak},\ \beta \cdot I\right).$$
#
# Try it on a few intensities. Watch the answer grow in proportion to $I$, then stop.

# %%
for intensity in [1, 10, 100, 1_000, 10_000]:
    p = attainable_flops_per_s(intensity, peak_bf16, bandwidth)
    print(f"I = {intensity:>6,} FLOP/byte -> {si(p, 'FLOP/s'):>13}  "
          f"({percent(p / peak_bf16)} of peak, {bound(intensity, peak_bf16, bandwidth)}-bound)")

# %% [markdown]
# ## The ridge point
#
# The two limits are equal where $\beta \cdot I = P_\text{peak}$, at the **ridge point**
# (also called the knee) $I^* = P_\text{peak} / \beta$. Left of it a kernel is memory-bound; right
# of it, compute-bound.

# %% jupyter={"source_hidden": true}
ridge = h100.ridge_point_flop_per_byte("bf16")
md(f"H100 SXM, BF16: $I^* = \\text{{{si(peak_bf16, 'FLOP/s')}}} \\,/\\, \\text{{{si(bandwidth, 'B/s')}}} "
   f"\\approx$ **{ridge:,.0f} FLOP/byte**. A kernel must do about {ridge:,.0f} FLOPs for every byte "
   "it moves before the tensor cores, not the memory, set its speed.")

# %% [markdown]
# Drawn on log-log axes, the bandwidth limit is a line of slope one and the compute limit a flat
# ceiling; the bend is the ridge.

# %%
h100_roof = Roof("H100 SXM, BF16 dense", peak_bf16, bandwidth)
roofline_chart([h100_roof], title="The roofline of an H100 SXM (dense BF16)", intensity_range=(0.1, 1e5));

# %% [markdown]
# ## Placing a real model: Qwen3.8-27B on an H100
#
# The kernel's number, $I$, comes from counting. The package counts the FLOPs and bytes of every
# operator of every layer (embedding, norms, projections, attention, Gated DeltaNet, MLP, lm_head)
# for one step. Three steps of Qwen3.8-27B, all in BF16:
#
# - **batch-1 decode**: one new token for one conversation;
# - **batch-32 decode**: one new token for each of 32 conversations at once;
# - **prefill** of an 8,192-token prompt: every prompt position goes through the model together.
#
# Both decode steps start from an **empty KV cache** (`context_tokens=0`): they read the weights
# and the recurrent state but no cached keys and values yet. A cache that grows with the
# conversation is lesson 3's subject.
#
# Intensity can be measured two ways, and both are worth knowing. **The weight lens**: FLOPs of
# the weight matmuls per weight byte (how many times each fetched weight is used). **All
# traffic**: every FLOP per byte of all traffic (weights, activations, KV cache and recurrent
# state) — the one that places a step on the roofline.

# %%
model = get_model("qwen3.8-27b")
steps = {
    "decode, batch 1": place(model, h100, phase="decode", batch=1, context_tokens=0),
    "decode, batch 32": place(model, h100, phase="decode", batch=32, context_tokens=0),
    "prefill, 8,192 tokens": place(model, h100, phase="prefill", prompt_tokens=8192),
}
show_table(
    ["step", "FLOPs", "bytes moved", "FLOP / weight byte", "FLOP / byte (all)", "attainable", "of peak", "bound"],
    [[name + (", empty KV cache" if s.workload.phase == "decode" and s.workload.context_tokens == 0 else ""),
      si(s.cost.flops, "FLOP"), si(s.cost.bytes, "B"), f"{s.intensity_per_weight_byte:,.1f}",
      f"{s.intensity:,.1f}", si(s.attainable_flops_per_s, "FLOP/s"), percent(s.fraction_of_peak), s.bound]
     for name, s in steps.items()],
)

# %% [markdown]
# Read the first row against the profiling report. Batch-1 decode has to stream every weight
# through the GPU to produce one token, and each weight of a matmul (two bytes in BF16) takes part
# in one multiply-add (two FLOPs): about **one FLOP per byte**. (Every parameter but the embedding
# table: that one is only looked up, one row per token, and costs neither FLOPs nor a full read.)

# %% jupyter={"source_hidden": true}
d1 = steps["decode, batch 1"]
md(f"At I ≈ {d1.intensity:.2f} FLOP/byte the bandwidth roof allows "
   f"{si(bandwidth, 'B/s')} × {d1.intensity:.2f} ≈ **{si(d1.attainable_flops_per_s, 'FLOP/s')}**, "
   f"which is **{percent(d1.fraction_of_peak)}** of the {si(peak_bf16, 'FLOP/s')} peak. "
   f"The step cannot take less than {float(d1.time_lower_bound_s) * 1e3:.2f} ms "
   f"({si(float(d1.cost.compulsory_bytes), 'B')} it must move ÷ {si(bandwidth, 'B/s')}), so at most "
   f"{float(d1.tokens_per_s_upper_bound):,.0f} tokens/s for this conversation: a **lower bound** on time. "
   f"(An implementation that writes every operator's output to memory and reads it back moves "
   f"{si(float(d1.cost.bytes), 'B')}, an **estimate** of {float(d1.time_estimate_s) * 1e3:.2f} ms; lesson 3 sets the "
   "two side by side.)")

# %% [markdown]
# That is the report's "few tenths of one percent". The roof is the best any kernel can do, so the
# bound alone cannot say the kernel is *on* it. Read the report's figure against the roof, say
# 0.3 % of peak:

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.datasheets import best_measurement
from roofline_lessons.topics.published import provenance

REPORTED_SHARE_OF_PEAK = 0.003   # an example reading of the report's "a few tenths of one percent"
share_of_roof_reported = REPORTED_SHARE_OF_PEAK / float(d1.fraction_of_peak)
study = best_measurement(h100, "decode_fraction_of_memory_floor")
graphs = best_measurement(h100, "cuda_graphs_decode_speedup")  # the same study's A/B: without ÷ with CUDA Graphs
# one stack, one study: the 27 % run is the A/B's "without" arm, as its catalog conditions say
assert graphs.source == study.source and "no CUDA Graphs" in study.conditions, "one stack, one study"
assert study.conditions.split(", no CUDA Graphs")[0] in graphs.conditions
study_conditions = study.conditions
with_graphs = study.value * graphs.value        # the share of the floor the same stack reaches with CUDA Graphs
removed = (1 - 1 / graphs.value) / (1 - study.value)  # the share of the step's time above its floor that graphs remove
most_gain = 1 / study.value
assert study.value < with_graphs < 1 and 0 < removed < 1
assert most_gain < 100, "the study's gap is not the two orders of magnitude the tempting conclusion hopes for"
md(f"{percent(REPORTED_SHARE_OF_PEAK, 1)} of peak against a roof of {percent(float(d1.fraction_of_peak))} is "
   f"**{percent(share_of_roof_reported, 0)} of the roof** by FLOP/s. Yet the kernel is "
   "near its roof only if its measured bandwidth confirms it: "
   f"bytes moved ÷ time, against {si(bandwidth, 'B/s')}. Real stacks can fall "
   f"short of it: the catalog's batch-1 study records **{percent(study.value, 0)}** of the analytic memory floor on "
   f"an {h100.name} ({study_conditions}; {provenance(study)}). The study traces that gap to the runtime more than "
   f"to slow kernels: launching hundreds of small kernels one by one from the CPU. CUDA Graphs alone, on the same "
   f"stack, make the step {graphs.value:.3f}× faster (the same source), so {percent(study.value, 0)} × "
   f"{graphs.value:.3f} ≈ **{percent(with_graphs, 0)}** of the floor: they remove {percent(removed, 0)} of the "
   f"time the step spends above its floor; the catalog records no breakdown of the rest. Whatever closes it, the "
   f"step can run at most {most_gain:.1f}× faster there, not two orders of magnitude: the floor is set by the "
   "bytes, and the arithmetic units were never the scarce resource.")

# %% [markdown]
# To go past the bandwidth roof, the workload, not the kernel, has to change.
#
# **Batching** is such a change. Thirty-two conversations share one pass over the weights, so each
# weight byte now feeds about 32 FLOPs.

# %% jupyter={"source_hidden": true}
d32 = steps["decode, batch 32"]
per_weight_32 = attainable_flops_per_s(d32.intensity_per_weight_byte, peak_bf16, bandwidth)
md(f"By the weight-byte lens, I ≈ {d32.intensity_per_weight_byte:.1f} FLOP/byte allows "
   f"**{si(per_weight_32, 'FLOP/s')}**, about {per_weight_32 / d1.attainable_flops_per_s:.0f}× batch 1 — "
   f"and still {ridge / d32.intensity_per_weight_byte:.0f}× short of the ridge. "
   f"Counting all traffic, I = {d32.intensity:.1f}: each of the 32 conversations also reads and writes "
   f"its own recurrent state ({si(d32.cost.state_bytes / 32, 'B')} per step per conversation), which "
   f"trims the attainable rate to {si(d32.attainable_flops_per_s, 'FLOP/s')}. Either way the point stays on "
   "the slanted roof, and the gain came from the workload, not the kernel.")

# %% [markdown]
# **Prefill** is the opposite case. Each weight fetched serves all 8,192 prompt positions at once.

# %% jupyter={"source_hidden": true}
pf = steps["prefill, 8,192 tokens"]
md(f"FLOPs per weight byte: **{pf.intensity_per_weight_byte:,.0f}**, about "
   f"{pf.intensity_per_weight_byte / ridge:.0f}× the ridge; even counting every activation read and "
   f"written by an unfused implementation, I = {pf.intensity:,.0f}, still {pf.intensity / ridge:.1f}× past it. "
   f"Prefill rides the flat compute roof: the time to first token is at least "
   f"{float(pf.time_lower_bound_s) * 1e3:,.0f} ms ({si(pf.cost.flops, 'FLOP')} ÷ {si(peak_bf16, 'FLOP/s')}), "
   f"a lower bound. "
   "Here FLOPs are what to buy: better tensor-core use, tiling, a faster number format.")

# %% jupyter={"source_hidden": true}
lm_head = next(op for op in pf.cost.ops if op.name == "lm_head")
embed = next(op for op in pf.cost.ops if op.name == "embed_tokens")
md(f"(Why is the weight-lens figure a little under 8,192? Two kinds of weight bytes feed no matmul FLOPs at the "
   f"prompt's scale: the lm_head's {si(lm_head.weight_bytes, 'B')} are read once but used for the last position only, "
   f"since generation needs one row of logits; and the {si(embed.weight_bytes, 'B')} of embedding rows looked up are "
   "read and copied, not multiplied. Attention's FLOPs are not in this lens at all.)")

# %% [markdown]
# All three on one chart, each at its intensity over **all** traffic (the lens that places a step):

# %%
points = [point_on_roof(name, float(s.intensity), h100_roof) for name, s in steps.items()]
roofline_chart([h100_roof], points, title="Qwen3.8-27B on an H100 SXM (BF16): three steps",
               intensity_range=(0.1, 1e5));

# %% [markdown]
# ## Red flag: "high FLOP/s means good performance"
#
# A kernel's FLOP/s alone says nothing about its quality. What matters is how close it is to
# **its own** roof. Suppose a decode kernel (I ≈ 1) achieves 3.0 TFLOP/s and a prefill GEMM
# achieves 600 TFLOP/s. Which one has more room to improve?

# %%
achieved = {"decode kernel (I = 1)": (1.0, 3.0 * TERA), "prefill GEMM (I = 8,192)": (8192.0, 600 * TERA)}
share_of_roof = {}
for name, (intensity, got) in achieved.items():
    roof_here = attainable_flops_per_s(intensity, peak_bf16, bandwidth)
    share_of_roof[name] = got / roof_here
    print(f"{name:26} achieves {si(got, 'FLOP/s'):>14}; its roof is {si(roof_here, 'FLOP/s'):>14} "
          f"-> {percent(got / roof_here, 0)} of what it could reach")

# %% jupyter={"source_hidden": true}
slow, fast = share_of_roof.values()
md(f"The \"slow\" decode kernel is at {percent(slow, 0)} of its roof; the \"fast\" GEMM leaves "
   f"{percent(1 - fast, 0)} on the table. Quoting FLOP/s without intensity is the mistake interviewers "
   "listen for.")

# %% [markdown]
# ## An analogy: the exam marker and the rubric
#
# Picture an examiner who marks answers very fast but needs the full marking rubric — a thick
# book kept in an archive — open in front of them for every answer, and a clerk who can carry only
# so many pages a minute from the archive. The examiner's speed is the compute roof; the clerk's
# pace is the bandwidth; the answers marked per page carried is the intensity.
#
# - Batch-1 decode: the clerk carries the whole rubric in to mark **one** answer. The examiner
#   spends almost all the time waiting. A faster examiner changes nothing.
# - Batch 32: the rubric comes in once and 32 answers are marked against it. Same clerk, 32 times
#   the marking.
# - Prefill: 8,192 answers per trip through the rubric. Now the clerk waits for the examiner, and
#   only a faster examiner helps.
#
# ## Explore: the dashboard
#
# Pick a part, a number format, a phase, a batch and a length. The point moves; the verdict says
# which roof binds and what that means. Try: batch-1 decode on a B200 (what changes, and what
# does not?); prefill of 128 tokens (is a short prompt still compute-bound?); `fp8` on an H100.

# %%
from roofline_lessons.viz.dashboards import lesson01_dashboard

dashboard = lesson01_dashboard()

# %% [markdown]
# ## Summary
#
# - A machine is two numbers (peak FLOP/s, bandwidth); a kernel is one (FLOP/byte).
#   $P = \min(P_\text{peak}, \beta I)$, and the ridge $I^* = P_\text{peak}/\beta$ splits
#   memory-bound from compute-bound.
# - Batch-1 decode sits at about one FLOP per byte: a fraction of a percent of peak **is** its roof.
#   Whether a kernel is near that roof, only its measured bandwidth says.
#   Buy bytes: batching, smaller weights, smaller KV cache and state.
# - Prefill sits far right of the ridge: buy FLOPs.
# - Judge a kernel against its own roof, never by raw FLOP/s.
#
# **A question to leave with.** The H200 has the same compute as the H100 SXM but more bandwidth.
# Does its ridge move left or right, and which of the three steps above gets faster?
#
# **Interview questions this lesson prepares you for**
#
# - "Explain the roofline model in plain language, without the chart."
# - "Our decode kernel runs at 0.3 % of peak FLOP/s. Is it badly written?"
# - "Why is prefill compute-bound and decode memory-bound?"
# - "What is the ridge point of an H100 in BF16, and where does it come from?"
#
# The exercises for this lesson are in `exercises/01_the_concept.ipynb`.
