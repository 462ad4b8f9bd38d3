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
# # Lesson 9 — Reality check: a real decode loop on your machine against the roofline
#
# Lesson 8 measured this machine's roofs. Here a real transformer — a Llama-architecture decoder in
# numpy — decodes on it, and every step is held against the bound the cost model gives from those
# measured roofs.
#
# **By the end of this lesson you can**
#
# 1. compute a decode step's roofline bound from measured roofs and say which roof binds;
# 2. report the achieved fraction, MBU and MFU of a step, and say what each one measures;
# 3. compare the cost model's knee with the measured one, and state a hypothesis for the gap;
# 4. add the third term — a fixed overhead per step — and say where it dominates.

# %%
# %matplotlib inline
from roofline_lessons import get_model, get_part, place
from roofline_lessons.core.units import binary, count, duration, num, percent, si
from roofline_lessons.measure import reality
from roofline_lessons.measure.decoder import CACHE_MULTIPLE, streamed_weight_bytes
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.viz.plots import decode_vs_bound_chart

MODE = "quick"  # "full" runs more batches, contexts and prompts with more repeats: about a minute

# %% [markdown]
# ## The model that runs
#
# The decoder is sized from this machine's last-level cache: the float32 weights a decode step
# reads (all of them but the embedding table, of which it reads one row per token) aim at
# `CACHE_MULTIPLE` times the cache, so every step streams them from DRAM instead of finding them in a
# cache (lesson 8: a working set that fits is fed by a faster, cache-level roof). Two budgets can hold
# it smaller, and the lesson says when one did: in quick mode a batch-1 step's weights aim to take at most
# `step_budget_s` to stream at the measured bandwidth (so the lesson runs in seconds on a machine with a
# huge cache), and in every mode the weights aim at most at `MEMORY_SHARE` of the free memory (where the
# operating system reports it). Its weights are seeded random numbers — a step's time does not depend
# on trained values.
#
# ## Measure
#
# One call measures the roofs (lesson 8's probes), builds the decoder and times decode over batch
# and over context, and prefill over prompt length. Each time is the median of several runs of the
# step after a warm-up (the count is printed below); the tables show the spread (median ÷ best) so a
# disturbed measurement shows itself.

# %%
# NBVAL_IGNORE_OUTPUT
check = reality.run(MODE)
path = reality.save(check)
model = check.model_config()
print(f"saved to {path}; {reality.MODES[MODE]['steps']} timed runs per step ({MODE} mode)")
md(f"**{model.name}**: {model.num_hidden_layers} layers, hidden size {count(model.hidden_size)}, "
   f"{model.num_attention_heads} query and {model.num_key_value_heads} key/value heads of {model.head_dim}, "
   f"MLP {count(model.intermediate_size)}, vocabulary {count(model.vocab_size)}: "
   f"{num(model.parameter_count() / 1e6)} million parameters, {binary(check.weight_bytes)} of float32 weights, of "
   f"which a decode step reads **{binary(streamed_weight_bytes(model))}** against a "
   f"{binary(check.last_level_cache_bytes)} last-level cache — "
   f"{num(streamed_weight_bytes(model) / check.last_level_cache_bytes)}× (the target is {CACHE_MULTIPLE}×). "
   f"Measured roofs: DRAM {si(check.bandwidth_bytes_per_s, 'B/s')}, float32 matmul "
   f"{si(check.peak_flops_per_s, 'FLOP/s')}.")
sizing = check.model_sizing()
if sizing and not sizing.reached:
    from roofline_lessons.measure.machine import available_memory_bytes

    held = {"time": f"{MODE} mode's time budget ({duration(reality.MODES[MODE]['step_budget_s'])} of weight stream "
                    f"per batch-1 step at the measured bandwidth)",
            "memory": f"the memory budget ({percent(reality.MEMORY_SHARE, 0)} of the free memory)",
            "family": "the size of the model family (its largest model)"}[sizing.limited_by]
    full_reaches = reality.size_model(check.last_level_cache_bytes, "full", check.bandwidth_bytes_per_s,
                                      available_memory_bytes())[1].reached
    md(f"**The model is smaller than the target:** {held} "
       + ("is less than even one layer, so the smallest model ran" if sizing.over_budget else "holds it")
       + f" — {num(sizing.multiple)}× the cache, not {sizing.target_multiple}×. A step may then find part of its "
       "weights still in the cache from the step before, and run faster than a DRAM bound allows: if a step below "
       "beats its bound, that is the first hypothesis. "
       + ("Full mode has no time budget and would reach the target here: run it for the full-size model."
          if sizing.limited_by == "time" and full_reaches else
          "Closing other programs frees memory for a larger model." if sizing.limited_by == "memory" else ""))

# %% [markdown]
# ## Every step against its bound
#
# For each step the **lower bound** is max(FLOPs ÷ measured matmul rate, compulsory bytes ÷
# measured DRAM bandwidth), priced by `model_cost` for the very model that ran: float32, eager
# attention (prefill computes the whole score square and then masks it, as this decoder does). The
# **achieved fraction** is bound ÷ measured: 1 is on the roof.
#
# Which bytes? The compulsory ones (`cost.compulsory_bytes`, lesson 3): the weights, the KV cache
# read and written, the tokens in and the logits out. This loop also writes every operator's output
# as a new array and the next operator reads it back — lesson 3's unfused *estimate*
# (`cost.bytes`), shown beside the bound. Those arrays are small enough at batch 1 to stay in the
# cache, so they need not reach DRAM, and a bound may not count them. The cell after the tables says
# how far apart the two counts are here.

# %%
# NBVAL_IGNORE_OUTPUT
def step_rows(samples):
    return [[s.phase, count(s.batch), count(s.tokens), duration(s.measured_s), num(s.spread, 2),
             duration(s.bound_s), duration(s.estimate_s), s.binds, percent(s.achieved, 0), num(s.tokens_per_s)]
            for s in samples]


headers = ["phase", "batch", "context / prompt", "measured", "spread", "lower bound", "estimate (unfused)",
           "binds (bound)", "achieved (bound ÷ measured)", "tokens/s"]
for caption, samples in ((f"Decode by batch, {count(check.decode_by_batch[0].tokens)} tokens cached",
                          check.decode_by_batch),
                         ("Decode at batch 1, by context", check.decode_by_context),
                         ("Prefill at batch 1, by prompt length", check.prefill)):
    md(f"**{caption}**")
    show_table(headers, step_rows(samples))


def compulsory_share(sample):
    """The compulsory bytes of a step as a fraction of the loop's (unfused) bytes."""
    return sample.compulsory_bytes / sample.bytes


decode1, longest = check.decode_by_batch[0], check.prefill[-1]
md(f"The lower bound's compulsory bytes are {percent(compulsory_share(decode1), 1)} of the loop's bytes for the "
   f"batch-{count(decode1.batch)} decode step and {percent(compulsory_share(longest), 0)} for the "
   f"{count(longest.tokens)}-token prefill: the activations weigh "
   f"{'little' if compulsory_share(decode1) > 0.95 else 'much'} in decode and "
   f"{'little' if compulsory_share(longest) > 0.95 else 'more'} in a long prefill.")
beaten = [s for s in check.samples if s.measured_s <= s.bound_s]
if beaten:
    kinds = {s.binds for s in beaten}
    md(f"**{len(beaten)} of {len(check.samples)} steps ran at or under their bound** (achieved 100 % or more), which "
       "a bound forbids on the roofs and counts it was priced with. So either those roofs are not those steps' roofs, or "
       "the bound's counts are not this loop's. "
       "Hypotheses to test: "
       + ("part of the weights was served from a cache (see the model's size against the cache above), or lesson 8's "
          "triad, counted STREAM-style, reads low for a step that mostly *reads* (a triad also writes, and a write "
          "first reads its cache line: traffic the triad's byte count leaves out); "
          if "memory" in kinds else "")
       + ("the matmul roof was measured low (the best square matmul measured is not every shape's best rate); "
          if "compute" in kinds else "")
       + "or the cost model counts more bytes or FLOPs than this loop moves.")
noisy = check.noisy_samples()
if noisy:
    md(f"**Warning: {len(noisy)} of {len(check.samples)} timings spread more than {num(reality.NOISY_SPREAD)}× "
       "between their best and median run** — probably something else used the cores, or the clock changed. Run the measurement cell again "
       "before reading the numbers below.")

# %% [markdown]
# **MBU** (model bandwidth utilisation) = the bytes the step must move ÷ its measured time ÷ the
# bandwidth. Its numerator is the *model's* byte count, not bytes a counter saw cross the bus: MBU is
# not a measured bandwidth. So when memory binds, MBU is the achieved fraction under another name.
# **MFU** (model FLOP utilisation) = the step's FLOPs ÷ its time ÷ the peak. Two conventions to
# know before comparing with published figures: here both are taken against this machine's
# *measured* roofs (triad bandwidth, best square matmul), where published MBU and MFU use the
# datasheet's; and MFU here counts every FLOP of the step, attention and norms included, where many
# reports count only the weight matmuls (about 2 × parameters per token).

# %%
# NBVAL_IGNORE_OUTPUT
show_table(["step", "binds", "achieved", "MBU", "MFU"],
           [[f"{s.phase}, batch {count(s.batch)}, {count(s.tokens)} tokens", s.binds, percent(s.achieved, 1),
             percent(reality.mbu(s.compulsory_bytes, s.measured_s, check.bandwidth_bytes_per_s), 1),
             percent(reality.mfu(s.flops, s.measured_s, check.peak_flops_per_s), 1)]
            for s in check.decode_by_batch + check.prefill[-1:]])

# %% [markdown]
# ## The knee
#
# Lesson 4: decode throughput grows almost linearly with batch until compute time reaches memory
# time. The cost model puts that knee where it happens on the measured roofs. The measurement shows
# the first batch at which throughput stopped nearly doubling — the first *sub-linear* step, which
# is the knee only if nothing else grows with the batch.

# %% jupyter={"source_hidden": true}
# NBVAL_IGNORE_OUTPUT
predicted = check.critical_batch()
measured = reality.measured_knee(check.decode_by_batch)
first, last = check.decode_by_batch[0], check.decode_by_batch[-1]
md(f"Cost model's knee on the measured roofs: **batch {count(predicted) if predicted else 'none up to 4,096'}**. "
   f"First sub-linear step measured: "
   f"**{('batch ' + count(measured)) if measured else 'none within the batches run'}**. Achieved fraction: "
   f"{percent(first.achieved, 0)} at batch {count(first.batch)}, {percent(last.achieved, 0)} at batch "
   f"{count(last.batch)}; measured − bound "
   f"{'grows' if last.measured_s - last.bound_s > first.measured_s - first.bound_s else 'does not grow'} from "
   f"{duration(first.measured_s - first.bound_s)} to {duration(last.measured_s - last.bound_s)}.\n\n"
   "If the measured step comes well before the cost model's knee, it is not compute meeting memory: something "
   "else grows with the batch. A **hypothesis**: the matrix library runs a one-row `x @ W` with a "
   "matrix–vector kernel, but two or more rows with a matrix–matrix kernel that is slower at so few rows. The "
   "cell below tests the kernel switch (not its mechanism) on weights too large for the cache.")

# %%
# NBVAL_IGNORE_OUTPUT
import time

import numpy as np

rng = np.random.default_rng(0)
# copies of one MLP weight matrix, cycled: 4× the cache or as many bytes as a decode step above streams,
# whichever is smaller — never a larger working set than the steps themselves ran on
matrix_bytes = 4 * model.hidden_size * model.intermediate_size
n_w = max(2, int(min(4 * check.last_level_cache_bytes, streamed_weight_bytes(model)) // matrix_bytes) + 1)
weights = [rng.random((model.hidden_size, model.intermediate_size), dtype=np.float32) for _ in range(n_w)]


def per_matrix_s(rows, calls=1, repeats=3):
    """Best time per weight matrix of ``calls`` products of ``rows`` rows each, W from DRAM."""
    x = np.ones((rows, model.hidden_size), dtype=np.float32)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for w in weights:
            for _ in range(calls):
                x @ w
        best = min(best, (time.perf_counter() - t0) / len(weights))
    return best


one, two, four, two_calls = per_matrix_s(1), per_matrix_s(2), per_matrix_s(4), per_matrix_s(1, calls=2)
extra_flops_s = 2 * model.hidden_size * model.intermediate_size / check.peak_flops_per_s  # one more row at peak
cycle_multiple = n_w * weights[0].nbytes / check.last_level_cache_bytes
extra_over_flops = (two - one) / extra_flops_s  # what the second row cost, in units of its FLOPs at the peak
switch = two > 1.3 * one + extra_flops_s
flat = four < 1.3 * two  # four rows within 30 % of two
md(f"`x @ W`, W {count(model.hidden_size)}×{count(model.intermediate_size)} float32, {n_w} matrices "
   f"({binary(n_w * weights[0].nbytes)}, {num(cycle_multiple)}× the cache) cycled "
   + ("so each comes from DRAM" if cycle_multiple >= 2 else
      "— **less than twice the cache, so some of them may come from it**: read the times with that in mind")
   + f": 1 row {duration(one)}, 2 rows {duration(two)}, 4 rows {duration(four)}; two separate 1-row calls "
   f"{duration(two_calls)}. A second row's FLOPs at the measured peak cost {duration(extra_flops_s)}.\n\n"
   + (f"Two rows in one call cost {num(two / one)}× one row — the second row cost {num(extra_over_flops)}× its "
      f"FLOPs at the peak — and {'more' if two > two_calls else 'less'} than two one-row calls; four rows cost "
      f"{num(four / two)}× two. "
      + ("Four rows cost within 30 % of two, so the price is paid per call by the kernel used for ≥ 2 rows, not "
         "per row: the hypothesis (a kernel switch) survives this test. "
         if flat else
         "Four rows cost clearly more than two, so part of the price grows with the rows: this test does not "
         "separate a kernel switch from a per-row cost. ")
      + "Why such a kernel is slower at few rows (packing W into blocks is one candidate) is a further hypothesis, "
        "not tested here."
      if switch else
      f"Two rows cost {num(two / one)}× one row, within 30 % of one row plus the second row's FLOPs at the peak (it "
      f"cost {num(extra_over_flops)}× them): this test does not support a kernel switch — look elsewhere."))

# %% [markdown]
# ## The third regime: overhead
#
# The roofline has two terms. A real step adds a third, a fixed cost per step: here Python
# dispatching about ten numpy calls per layer; on a GPU, kernel launches and the CPU scheduling
# them. It is measured, not fitted: the same layers and calls on a tiny model (arrays of a few
# dozen numbers) take, to a first approximation, only that fixed cost. What is left of the batch-1
# gap after it, if anything, is attributed by subtraction to the kernels themselves — a hypothesis:
# that they stream below the triad roof, time ≈ bytes ÷ (the bandwidth the kernels reach) + overhead.
#
# The split needs the fixed cost to be clearly smaller than the step: where the step's fastest run
# exceeds it by less than a tenth of the run, or by less than the two timings' own spread, the two
# cannot be separated on that run, and the table says so instead of printing a bandwidth.

# %%
# NBVAL_IGNORE_OUTPUT
overhead = check.overhead_s()
ones = [s for s in check.decode_by_batch + check.decode_by_context if s.batch == 1]
batch1 = next(s for s in check.decode_by_batch if s.batch == 1)


def reached(split):
    """The bandwidth the kernels reached, or why this run cannot say."""
    if split.effective_bandwidth_bytes_per_s is None:
        return ["cannot be separated", "—"]
    if split.binds != "memory":
        return ["— (compute binds)", "—"]
    return [si(split.effective_bandwidth_bytes_per_s, "B/s"), percent(split.fraction_of_roof, 0)]


show_table(["batch-1 step, context", "bound", "measured (fastest run)", "fixed cost", "bandwidth the kernels reached",
            "of the triad roof"],
           [[count(s.tokens), duration(s.bound_s), f"{duration(s.measured_s)} ({duration(s.best_s)})",
             duration(overhead), *reached(check.overhead_split(s))] for s in ones])
split = check.overhead_split(batch1)
text = reality.describe_split(split)
md(text + "\n\n"
   "In general, a fixed cost per step weighs most when the bound is small — small models, small batches, fast "
   "memory — which is why a small model on a big GPU can decode far below its roof. On a GPU, **CUDA graphs** record "
   "a step's kernel launches once and replay them with one launch, and **fused kernels** do the work of several in "
   "one, so fewer launches and fewer round trips through memory are paid per token.")

# %% [markdown]
# ## Published measurements against the course's bounds
#
# Others have made the same comparison on GPUs. Each figure comes from the catalog, with its source,
# date and conditions.

# %%
# NBVAL_IGNORE_OUTPUT
from roofline_lessons.topics.datasheets import best_measurement

GPT_FAST_CONTEXT = 128  # tokens cached: an assumption (short prompt, a few hundred tokens generated); the bound barely moves with it
# the GPU rows are held against the course's lower bound (compulsory bytes, lesson 3), not the estimate
a100 = get_part("a100-80gb")
gpt = best_measurement(a100, "decode_model_bytes_per_s")
gpt_bound = place(gpt.model, a100, phase="decode", context_tokens=GPT_FAST_CONTEXT)
gpt_bound_tps = float(gpt_bound.tokens_per_s_upper_bound)
h100, h100_pcie = get_part("h100-sxm"), get_part("h100-pcie")
fa3 = best_measurement(h100, "attention_flops_per_s", dtype="fp16")
triad = next(m for m in h100_pcie.measured if m.kernel == "stream triad")
published = [
    [f"gpt-fast, {get_model(gpt.model).name} BF16 batch-1 decode, A100-80GB", f"{num(gpt_bound_tps)} tokens/s",
     f"{num(gpt.tokens_per_s)} tokens/s", percent(gpt.tokens_per_s / gpt_bound_tps, 0), gpt.source],
    [f"FlashAttention-3 forward, FP16, head dim {fa3.head_dim}, {'causal' if fa3.causal else 'non-causal'}, "
     f"{count(fa3.sequence_length)} tokens, H100 SXM", si(h100.peak_flops_per_s("fp16"), "FLOP/s") + " (compute roof)",
     si(fa3.value, "FLOP/s"), percent(fa3.value / h100.peak_flops_per_s("fp16"), 0), fa3.source],
    [f"{triad.kernel}, H100 PCIe", si(h100_pcie.memory_bandwidth_bytes_per_s, "B/s") + " (datasheet)",
     si(triad.value, "B/s"), percent(triad.value / h100_pcie.memory_bandwidth_bytes_per_s, 0), triad.source],
]
for part_id in ("l4", "h100-sxm"):
    part = get_part(part_id)
    floor = best_measurement(part, "decode_fraction_of_memory_floor")
    published.append([f"batch-1 decode, {part.name} ({floor.conditions})", "the study's own memory floor", "—",
                      percent(floor.value, 0),
                 f"{floor.source}, {floor.date}"])
show_table(["measurement (conditions)", "bound (upper bound on the rate)", "measured", "achieved", "source"], published)

# %% jupyter={"source_hidden": true}
graphs = {p: best_measurement(p, "cuda_graphs_decode_speedup") for p in ("l4", "h100-sxm")}
h100_floor = best_measurement("h100-sxm", "decode_fraction_of_memory_floor").value
l4_floor = best_measurement("l4", "decode_fraction_of_memory_floor").value
md(f"What each gap teaches. **gpt-fast** reaches {percent(gpt.tokens_per_s / gpt_bound_tps, 0)} of the upper bound "
   f"the cost model gives at {count(GPT_FAST_CONTEXT)} cached tokens (its quoted 'bandwidth achieved', "
   f"{si(gpt.value, 'B/s')}, is model bytes × tokens/s: the same fraction times the bandwidth, not a measurement of "
   f"it; the catalog records the run as “{gpt.kernel}”). **FlashAttention-3** "
   f"reaches {percent(fa3.value / h100.peak_flops_per_s('fp16'), 0)} of the dense FP16 peak — only at these "
   f"conditions. A **stream triad** reaches {percent(triad.value / h100_pcie.memory_bandwidth_bytes_per_s, 0)} of "
   "the datasheet bandwidth: no real kernel gets all of it. The **batch-1 study** (its rows use its own memory "
   "floor — weights and KV cache over the datasheet bandwidth — for a model not in this course's catalog) finds "
   + (f"the GPU with more bandwidth ({get_part('h100-sxm').name}, {si(h100.memory_bandwidth_bytes_per_s, 'B/s')}) "
      f"further from its floor ({percent(h100_floor, 0)}) than the {get_part('l4').name} "
      f"({si(get_part('l4').memory_bandwidth_bytes_per_s, 'B/s')}, {percent(l4_floor, 0)}). "
      if h100_floor < l4_floor else
      f"the {get_part('h100-sxm').name} at {percent(h100_floor, 0)} of its floor and the {get_part('l4').name} at "
      f"{percent(l4_floor, 0)}. ")
   + f"Its CUDA Graphs A/B test, {num(graphs['h100-sxm'].value)}× on the H100 SXM against "
   f"{num(graphs['l4'].value)}× on the L4, shows launch overhead is "
   + ("*part* of the H100's gap" if h100_floor * graphs['h100-sxm'].value < 1 else "the H100's whole gap or more")
   + f": removing it lifts {percent(h100_floor, 0)} to at most "
   f"{percent(h100_floor * graphs['h100-sxm'].value, 0)} of the floor. What the rest is, the A/B test does not say. "
   + {"fixed cost and streaming": "On this CPU, what was left after the fixed cost was attributed to the kernels "
                                  "running below the roof — by subtraction, so a hypothesis, and one worth testing "
                                  "on the GPU.",
      "fixed cost covers the gap": "On this CPU the measured fixed cost was at least the whole batch-1 gap: no "
                                   "shortfall was left to attribute to the kernels (a hypothesis, since the tiny "
                                   "model's fixed cost may not carry over unchanged).",
      "beat the bound": "On this CPU the batch-1 step beat its bound, so the roofs or the counts, not a shortfall, are "
                        "what this run puts in question.",
      "not separable": "On this CPU this run cannot say either: its fixed cost and the kernels' own time could not be "
                       "separated."}[split.verdict])

# %% [markdown]
# ## On a GPU
#
# PyTorch is never a dependency of the course. When it and a CUDA device are present, the same
# comparison can run on the GPU; otherwise the CPU run above is the lesson.

# %%
# NBVAL_IGNORE_OUTPUT
gpu = reality.gpu_status()
print(gpu["why"])
if gpu["available"]:
    gpu_check = reality.run_gpu(MODE)  # the same loop in PyTorch, BF16, against the GPU probes' roofs
    reality.save(gpu_check, reality.data_dir() / f"reality-gpu-{gpu_check.created[:19].replace(':', '')}.json")
    show_table(["step", "batch", "tokens", "measured", "bound", "binds", "achieved"],
               [[s.phase, count(s.batch), count(s.tokens), duration(s.measured_s), duration(s.bound_s), s.binds,
                 percent(s.achieved, 0)] for s in gpu_check.samples])
else:
    print("GPU path skipped: everything above ran on the CPU.")

# %% [markdown]
# ## The picture
#
# Measured step time against the bound, over batch:

# %%
# NBVAL_IGNORE_OUTPUT
decode_vs_bound_chart(check)

# %% [markdown]
# ## Summary
#
# - A step's lower bound is max(FLOPs ÷ measured peak, compulsory bytes ÷ measured bandwidth) for the
#   model that ran; the unfused estimate (every operator's output through memory) sits beside it;
#   the achieved fraction is bound ÷ measured.
# - MBU uses the model's byte count: it equals the achieved fraction when memory binds, and it is not
#   a measured bandwidth (neither is gpt-fast's "bandwidth achieved").
# - The cost model's knee and the measured one need not agree; state a hypothesis and test it.
# - Above the bound, the gap has two parts where a run can separate them: a fixed cost per step
#   (measured with a tiny model) and the kernels' own shortfall against the roof (what is left: a
#   hypothesis about streaming, not a measurement). A fixed cost weighs most on small models at small
#   batch; CUDA graphs and fused kernels attack it on a GPU.
#
# **Interview questions this lesson prepares you for**
#
# - "Your batch-1 decode runs at 40 % of the memory roof. Where does the rest go?"
# - "What is MBU, and is it a bandwidth measurement?"
# - "Why would an H100 reach a smaller fraction of its memory floor than an L4 at batch 1?"
# - "What do CUDA graphs buy you in decode, and when do they matter?"
#
# The exercises for this lesson are in `exercises/09_reality_check.ipynb`.
