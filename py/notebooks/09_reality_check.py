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
# 3. compare the lower bound's knee with the measured one, and state a hypothesis for the gap;
# 4. add the third term — a fixed overhead per step — and say where it dominates.

# %%
# %matplotlib inline
from roofline_lessons import get_model, get_part, place
from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.units import binary, count, duration, num, percent, si
from roofline_lessons.measure import reality
from roofline_lessons.measure.decoder import CACHE_MULTIPLE, numpy_calls_per_layer, streamed_weight_bytes
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
# operating system reports it). Two more budgets hold the run itself: a step whose KV cache and scratch
# arrays, with the weights, would need more than `BUFFER_SHARE` of the free memory, or whose predicted
# time would carry the run past the mode's `run_budget_s`, is skipped — and listed below. Its weights are seeded random numbers — a step's time does not depend
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
llc_name = max(check.machine.get("caches", {"LLC": 0}), key=lambda k: check.machine.get("caches", {}).get(k, 0))
sharing = check.machine.get("cache_shared_cpus", {}).get(llc_name)
md(f"**A shared cache.** The {llc_name} this machine reports, {binary(check.last_level_cache_bytes)}, is "
   + (f"shared by {count(sharing)} of the CPUs it can see ({count(check.machine.get('cores', 0))} cores here). "
      if sharing else "reported without how many cores share it. ")
   + "On a slice of a large server — a cloud machine with a few of the host's cores — the operating system shows "
   "the whole cache of the chip (or chiplet) those cores sit on, and the host's other cores, running other "
   "people's programs, use it too: this slice's share is smaller than reported, and it changes with their load. "
   f"Sizing the weights at {CACHE_MULTIPLE}× the *reported* size therefore errs towards DRAM, which is the side "
   "the bound assumes; what it cannot promise is that the roofs this run measured (lesson 8's probes, run again at "
   "the start of the same call) and these steps ran under the same neighbours' load (the spread column below shows "
   "when a timing was disturbed).")
if check.skipped:
    md(f"**{len(check.skipped)} planned steps were not run**, to stay within this run's budgets "
       f"({percent(reality.BUFFER_SHARE, 0)} of the free memory for the weights and one step's buffers; "
       f"{duration(reality.MODES[MODE]['run_budget_s'])} for the whole run):\n\n"
       + "\n".join(f"- {s['phase']}, batch {count(s['batch'])}, {count(s['tokens'])} tokens: {s['reason']} "
                    f"({s['why']})" for s in check.skipped))

# %% [markdown]
# ## Every step against its bound
#
# For each step the **lower bound** is max(FLOPs ÷ measured matmul rate, compulsory bytes ÷
# measured DRAM bandwidth), priced by `model_cost` for the very model that ran: float32, eager
# attention (prefill computes the whole score square and then masks it, as this decoder does). So
# a prefill's bound is a bound on *this algorithm* — eager attention over the full square — not on
# every implementation: a causal kernel skips the masked half of the scores (the cell after the
# tables says how many FLOPs that is here). The **achieved fraction** is bound ÷ measured: 1 is on
# the roof.
#
# Which bytes? The compulsory ones (`cost.compulsory_bytes`, lesson 3): the weights, the KV cache
# read and written, the tokens in and the logits out. This loop also writes every operator's output
# as a new array and the next operator reads it back — lesson 3's unfused *estimate*
# (`cost.bytes`), shown beside the bound. The bound leaves those arrays out at every batch and
# every length: a fused implementation need not write them at all, and a bound counts only what no
# implementation avoids. The cell after the tables says how far apart the two counts are here.

# %%
# NBVAL_IGNORE_OUTPUT
def step_rows(samples):
    return [[s.phase, count(s.batch), count(s.tokens), duration(s.measured_s), f"{s.spread:.2f}",
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


decode1, longest = check.decode_by_batch[0], max(check.prefill, key=lambda s: s.tokens)
activations = {s: 1 - compulsory_share(s) for s in (decode1, longest)}  # the unfused count's extra share
md(f"The lower bound's compulsory bytes are {percent(compulsory_share(decode1), 1)} of the loop's bytes for the "
   f"batch-{count(decode1.batch)} decode step and {percent(compulsory_share(longest), 0)} for the "
   f"{count(longest.tokens)}-token prefill (the longest prompt run): the activations are "
   f"{percent(activations[decode1], 1)} of the decode step's bytes and {percent(activations[longest], 0)} of the "
   f"prefill's, "
   + (f"{num(activations[longest] / activations[decode1])}× the decode step's share."
      if activations[longest] > activations[decode1] > 0 else
      "no larger a share than the decode step's." if activations[decode1] > 0 else "and none in decode."))
# the prefill's bound prices the loop's eager attention (the whole score square); a causal kernel skips the masked half
causal = model_cost(model, phase="prefill", prompt_tokens=longest.tokens,
                    **{**reality.FP32, **(check.dtypes or {}), "flash_attention": True})
md(f"The prefill bounds price this loop's eager attention, the whole score square: at {count(longest.tokens)} "
   f"tokens the step's FLOPs are {si(longest.flops, 'FLOP')}, where a causal kernel that skips the masked half "
   f"needs {si(float(causal.flops), 'FLOP')}, {percent(1 - float(causal.flops) / longest.flops, 1)} fewer. So "
   "these bounds hold for this algorithm (eager attention over the full square), not for every implementation "
   "of a prefill.")
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
# **MFU** (model FLOP utilisation) = the step's FLOPs ÷ its time ÷ the peak. Three conventions to
# know before comparing with published figures: here both are taken against this machine's
# *measured* roofs (triad bandwidth, best square matmul), where published MBU and MFU use the
# datasheet's; MFU here counts every FLOP of the step, attention and norms included, where many
# reports count only the weight matmuls (about 2 × parameters per token); and MBU's numerator here
# is the step's compulsory bytes (weights, KV cache, tokens and logits), where others count the
# weights alone — gpt-fast's README figures, for one, count every weight (the embedding table
# included: the generate.py that made them summed all parameters and buffers; today's leaves the
# table out) and no KV cache.

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
# time. The lower bound puts that knee where compute time reaches its compulsory bytes' time on the
# measured roofs (`check.critical_batch()`); the unfused estimate's knee, with every activation through
# memory as well, is shown beside it. The measurement shows
# the first batch at which throughput stopped nearly doubling ("nearly" = at least 1.5× the previous
# batch's tokens/s when the batch doubles: `reality.KNEE_FLAT_BELOW`) — the first *sub-linear*
# step. Two knees at the same batch do not make it the same knee: the cell compares how much the
# measured step time and the bound's grow across that step, and says which explains the bend.
#
# How the loop multiplies matters here. Each weight matrix meets all the batch's rows in **one**
# 2-D product, (batch × hidden) @ W, so W is read once per step whatever the batch — as a serving
# engine does, and as the cost model charges. (numpy's `@` on a 3-D array of shape (batch, 1, hidden)
# would instead run one matrix–vector product per sequence and read W batch times over; the decoder
# folds the rows into one matrix first, and a test holds it to that.)

# %%
# NBVAL_IGNORE_OUTPUT
predicted, predicted_estimate = check.critical_batch(), check.critical_batch(unfused=True)
measured = reality.measured_knee(check.decode_by_batch)
by_batch = sorted(check.decode_by_batch, key=lambda s: s.batch)
first, last = by_batch[0], by_batch[-1]
limit = 2 / reality.KNEE_FLAT_BELOW  # a doubled batch's step time growing more than this is sub-linear
text = (f"Lower bound's knee on the measured roofs (compulsory bytes): "
        f"**batch {count(predicted) if predicted else 'none up to 4,096'}**; the unfused estimate's: batch "
        f"{count(predicted_estimate) if predicted_estimate else 'none up to 4,096'}. First sub-linear step measured "
        f"(tokens/s less than {num(reality.KNEE_FLAT_BELOW)}× the previous batch's at double the batch, i.e. a step "
        f"time more than {num(limit)}× the previous one's): "
        f"**{('batch ' + count(measured)) if measured else 'none within the batches run'}**. Achieved fraction: "
        f"{percent(first.achieved, 0)} at batch {count(first.batch)}, {percent(last.achieved, 0)} at batch "
        f"{count(last.batch)}; measured − bound "
        f"{'grows' if last.measured_s - last.bound_s > first.measured_s - first.bound_s else 'does not grow'} from "
        f"{duration(first.measured_s - first.bound_s)} to {duration(last.measured_s - last.bound_s)}.\n\n")
if measured:
    at = next(i for i, s in enumerate(by_batch) if s.batch == measured)
    before, after = by_batch[at - 1], by_batch[at]
    measured_growth, bound_growth = after.measured_s / before.measured_s, after.bound_s / before.bound_s
    same = "the same batch as" if predicted == measured else "a different batch from"
    text += (f"Across that step (batch {count(before.batch)} → {count(after.batch)}, {same} the lower bound's knee) "
             f"the measured step time grew **{num(measured_growth)}×** and the lower bound's **{num(bound_growth)}×**. ")
    if bound_growth > limit:
        text += (f"The bound bends there too (more than {num(limit)}×): compute meeting memory explains the bend"
                 + (f", but not all of it — the measured growth is {num(measured_growth / bound_growth)}× the bound's, "
                    "so something else grows with the batch as well. " if measured_growth / bound_growth > limit else
                    f" (the measured growth is within {num(limit)}× of the bound's). "))
    else:
        text += (f"The bound does not bend there (at most {num(limit)}×), so compute meeting memory does not explain "
                 "the measured bend: something else grows with the batch. ")
unexplained = measured is not None and (bound_growth <= limit or measured_growth / bound_growth > limit)
# numpy's dispatch, read from its source (numpy/_core/src/umath/matmul.c.src, FLOAT_matmul): a left operand of
# one row is the `vector_matrix` case, sent to cblas_sgemv; two or more rows go to cblas_sgemm
dispatch = ("numpy's `matmul` sends a product whose left operand has one row to BLAS's matrix–vector kernel "
            "(`gemv`) and one of two or more rows to its matrix–matrix kernel (`gemm`) — a fact of numpy's source "
            "(`numpy/_core/src/umath/matmul.c.src`: the one-row case calls `gemv`), not a guess")
text += (f"What the bound does not explain meets a kernel switch at two rows: {dispatch}. The **hypothesis** is "
         "that gemm is slower than gemv at so few rows (packing W into blocks before multiplying is one candidate "
         "mechanism). The cell below tests whether the switch costs time, with the same 2-D products a decode step "
         "runs, on weights too large for the cache."
         if unexplained else
         f"Nothing here needs another explanation ({dispatch}); the cell below still times the 2-D products a "
         "decode step runs at 1, 2 and 4 rows, for comparison.")
md(text)

# %% jupyter={"source_hidden": true}
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
    """Best time per weight matrix of ``calls`` products of ``rows`` rows each. Each call cycles
    through all the matrices before the next one starts, so no call finds its W left in the cache
    by the call before: every product reads W from DRAM."""
    x = np.ones((rows, model.hidden_size), dtype=np.float32)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            for w in weights:
                x @ w
        best = min(best, (time.perf_counter() - t0) / len(weights))
    return best


one, two, four, two_calls = per_matrix_s(1), per_matrix_s(2), per_matrix_s(4), per_matrix_s(1, calls=2)
extra_flops_s = 2 * model.hidden_size * model.intermediate_size / check.peak_flops_per_s  # one more row at peak
cycle_multiple = n_w * weights[0].nbytes / check.last_level_cache_bytes
extra_over_flops = (two - one) / extra_flops_s  # what the second row cost, in units of its FLOPs at the peak
switch = two > 1.3 * one + extra_flops_s  # two rows cost more than one row + its FLOPs + 30 % of one row
four_vs_two = four / two
flat = abs(four_vs_two - 1) < 0.3  # four rows within 30 % of two, either way
contradicts = two < 0.7 * one or (switch and four_vs_two <= 0.7)  # more rows, clearly less time
md(f"`x @ W`, W {count(model.hidden_size)}×{count(model.intermediate_size)} float32, {n_w} matrices "
   f"({binary(n_w * weights[0].nbytes)}, {num(cycle_multiple)}× the cache) cycled "
   + ("so each comes from DRAM" if cycle_multiple >= 2 else
      "— **less than twice the cache, so some of them may come from it**: read the times with that in mind")
   + f": 1 row {duration(one)}, 2 rows {duration(two)}, 4 rows {duration(four)}; two separate 1-row calls "
   f"{duration(two_calls)} (all the matrices cycled between the two, so each call reads W afresh). A second row's "
   f"FLOPs at the measured peak cost {duration(extra_flops_s)}.\n\n"
   + (f"More rows took clearly less time than fewer (two rows {num(two / one)}× one row, four rows "
      f"{num(four_vs_two)}× two): the same work plus more cannot cost less on one kernel, so these timings "
      "contradict each other — most likely noise (another process, a clock change). On this run the hypothesis "
      "is neither supported nor refuted: run the cell again."
      if contradicts else
      f"Two rows in one call cost {num(two / one)}× one row — the second row cost {num(extra_over_flops)}× its "
      f"FLOPs at the peak — and {'more' if two > two_calls else 'less'} than two one-row calls; four rows cost "
      f"{num(four_vs_two)}× two. "
      + ("Four rows cost within 30 % of two, so the extra price is paid per call by gemm, not per row: the "
         "hypothesis (gemm slower than gemv at so few rows) survives this test. "
         if flat else
         "Four rows cost more than 1.3× two, so part of the price grows with the rows: this test does not "
         "separate a slower gemm from a per-row cost. ")
      + "Why gemm is slower at few rows (packing W into blocks is one candidate) is not tested here."
      if switch else
      f"Two rows cost {num(two / one)}× one row, no more than one row plus the second row's FLOPs at the peak plus "
      f"30 % of one row (the second row cost {num(extra_over_flops)}× its FLOPs): numpy switched from gemv to gemm, "
      "but this test does not show the switch costing time — look elsewhere."))

# %% [markdown]
# ## The third regime: overhead

# %% jupyter={"source_hidden": true}
calls = numpy_calls_per_layer()  # counted by running one decode step of the decoder, not typed in
md(f"The roofline has two terms. A real step adds a third, a fixed cost per step: here Python dispatching "
   f"{calls.total} numpy calls per layer (counted by running one decode step: {calls.compute} that compute — "
   f"matmuls, elementwise operations, reductions — and {calls.views} reshapes, slices and cache writes), plus the "
   "embedding, final norm and lm_head once per step; on a GPU, kernel launches and the CPU scheduling them. It is "
   "measured, not fitted: the same layers and calls on a tiny model (arrays of a few dozen numbers) take, to a first "
   "approximation, only that fixed cost. What is left of the batch-1 gap after it, if anything, is attributed by "
   "subtraction to the kernels themselves — a hypothesis: that they stream below the triad roof, time ≈ bytes ÷ "
   "(their effective bandwidth) + the fixed cost.")

# %% [markdown]
# The split needs the fixed cost to be clearly smaller than the step: where the step's fastest run
# exceeds it by less than a tenth of the run, or by less than the two timings' own spread, the two
# cannot be separated on that run, and the table says so instead of printing a bandwidth.

# %%
# NBVAL_IGNORE_OUTPUT
overhead = check.overhead_s()
ones = [s for s in check.decode_by_batch + check.decode_by_context if s.batch == 1]
batch1 = next(s for s in check.decode_by_batch if s.batch == 1)


def reached(split):
    """The effective bandwidth (compulsory bytes ÷ (measured − fixed cost)), or why this run cannot say."""
    if split.effective_bandwidth_bytes_per_s is None:
        return ["cannot be separated", "—"]
    if split.binds != "memory":
        return ["— (compute binds)", "—"]
    return [si(split.effective_bandwidth_bytes_per_s, "B/s"), percent(split.fraction_of_roof, 0)]


show_table(["batch-1 step, context", "bound", "measured (fastest run)", "fixed cost",
            "effective bandwidth (compulsory bytes ÷ (measured − fixed cost))", "of the triad roof"],
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
# Others have made the same comparison on GPUs. Each figure comes from the catalog, with its
# conditions, source, date and software — and "not recorded" where the catalog lacks one. gpt-fast's
# bound is priced at lesson 3's assumed context (`GPT_FAST_CONTEXT_TOKENS`: its README gives the
# prompt, to which generate.py adds a BOS token, not how many tokens each run generated).

# %%
# NBVAL_IGNORE_OUTPUT
from roofline_lessons.topics.datasheets import best_measurement
from roofline_lessons.topics.published import (GPT_FAST_CONTEXT_TOKENS, gpt_fast_7b_bound, gpt_fast_7b_measurement,
                                               provenance)

# the GPU rows are held against the course's lower bound (compulsory bytes, lesson 3), not the estimate
a100 = get_part("a100-80gb")
gpt = gpt_fast_7b_measurement()
gpt_bound_tps = float(gpt_fast_7b_bound(GPT_FAST_CONTEXT_TOKENS).tokens_per_s_upper_bound)
h100, h100_pcie = get_part("h100-sxm"), get_part("h100-pcie")
fa3 = best_measurement(h100, "attention_flops_per_s", dtype="fp16")
# every streaming kernel the catalog records on the H100 PCIe: reads (and a triad) and a store-only init
streams = sorted(h100_pcie.measurements("bandwidth_bytes_per_s") + h100_pcie.measurements("store_bandwidth_bytes_per_s"),
                 key=lambda m: m.value, reverse=True)
datasheet_bw = h100_pcie.memory_bandwidth_bytes_per_s
published = [
    [f"gpt-fast, {get_model(gpt.model).name} ({gpt.conditions}; bound at {count(GPT_FAST_CONTEXT_TOKENS)} tokens "
     "cached, an assumption)", f"{num(gpt_bound_tps)} tokens/s",
     f"{num(gpt.tokens_per_s)} tokens/s", percent(gpt.tokens_per_s / gpt_bound_tps, 0), provenance(gpt)],
    [f"FlashAttention-3 forward, FP16, H100 SXM ({fa3.conditions}; {count(fa3.sequence_length)} tokens)",
     si(h100.peak_flops_per_s("fp16"), "FLOP/s") + " (compute roof)",
     si(fa3.value, "FLOP/s"), percent(fa3.value / h100.peak_flops_per_s("fp16"), 0), provenance(fa3)],
] + [[f"{m.kernel}, {h100_pcie.name} ({m.conditions or 'conditions not recorded'})",
        si(datasheet_bw, "B/s") + " (datasheet figure, not a bound)", si(m.value, "B/s"),
        percent(m.value / datasheet_bw, 0), provenance(m)] for m in streams]
for part_id in ("l4", "h100-sxm"):
    part = get_part(part_id)
    floor = best_measurement(part, "decode_fraction_of_memory_floor")
    published.append([f"batch-1 decode, {part.name} ({floor.conditions})", "the study's own memory floor", "—",
                      percent(floor.value, 0), provenance(floor)])
show_table(["measurement (conditions)", "held against (a bound on the rate, or a datasheet figure)", "measured",
            "measured ÷ that", "source; date; software"], published)

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.many_chips import gpt_fast_empirical_bandwidth_bytes_per_s

graphs = {p: best_measurement(p, "cuda_graphs_decode_speedup") for p in ("l4", "h100-sxm")}


def stream_share(m):
    return f"the {m.kernel}, at {percent(m.value / datasheet_bw, 0)},"


at_or_above = [m for m in streams if m.value >= datasheet_bw]
below_sheet = [m for m in streams if m.value < datasheet_bw]
one_setup = len({(m.source, m.conditions) for m in streams}) == 1
stream_sentence = (
    ("(one source, one configuration), " if one_setup else "")
    + (f"{' and '.join(stream_share(m) for m in at_or_above)} reached the datasheet's {si(datasheet_bw, 'B/s')} (a "
       "rounded figure, not a ceiling a kernel cannot pass)" if at_or_above else
       f"none reached the datasheet's {si(datasheet_bw, 'B/s')}")
    + (f"; {' and '.join(stream_share(m) for m in below_sheet)} stayed below it" if below_sheet and at_or_above else
       f": {', '.join(f'{m.kernel} {percent(m.value / datasheet_bw, 0)}' for m in below_sheet)}" if below_sheet else "")
    + ". ")
empirical_bw = gpt_fast_empirical_bandwidth_bytes_per_s()
assert gpt_bound_tps > gpt.tokens_per_s  # the run is below its bound, at either bandwidth (checked in the text)
h100_floor = best_measurement("h100-sxm", "decode_fraction_of_memory_floor").value
l4_floor = best_measurement("l4", "decode_fraction_of_memory_floor").value
md(f"What each gap teaches. **gpt-fast** reaches {percent(gpt.tokens_per_s / gpt_bound_tps, 0)} of the upper bound "
   f"the cost model gives at {count(GPT_FAST_CONTEXT_TOKENS)} cached tokens, lesson 3's assumption (its README's "
   f"'Memory Bandwidth', {si(gpt.value, 'B/s')}, the 'Bandwidth achieved' generate.py prints, is a model size × "
   f"tokens/s: nearly the same fraction times the "
   f"bandwidth — lesson 3 compares the two byte counts — not a measurement of "
   f"it; the catalog records the run as “{gpt.kernel}”). Priced instead at the A100 bandwidth the same README calls "
   f"empirical, about {si(empirical_bw, 'B/s')} (an informal note, no method given), the run reaches "
   f"{percent(gpt.tokens_per_s / gpt_bound_tps * a100.memory_bandwidth_bytes_per_s / empirical_bw, 0)} of its "
   f"bound: how far from its roof a run looks depends on which roof it is held against. **FlashAttention-3** "
   f"reaches {percent(fa3.value / h100.peak_flops_per_s('fp16'), 0)} of the dense FP16 peak — only at these "
   f"conditions. Of the {count(len(streams))} **streaming kernels** the catalog records on the {h100_pcie.name} "
   + stream_sentence
   + "The **batch-1 study** (its rows use its own memory "
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
   + f": with CUDA Graphs, about {percent(h100_floor * graphs['h100-sxm'].value, 0)} of the floor "
   f"({percent(h100_floor, 0)} × {num(graphs['h100-sxm'].value)}). What the rest is, the A/B test does not say. "
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
# - The lower bound's knee and the measured one need not agree; state a hypothesis and test it.
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
