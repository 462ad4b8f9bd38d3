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
# # Lesson 13 — How close do real engines get?
#
# Twelve lessons built a **lower bound**: the time no implementation can beat on a given part, in
# given number formats. It counts only the compulsory bytes and FLOPs at the datasheet's peaks, lets
# the units and the links overlap, and assumes no latency. Engine teams publish what their engines
# reach: vendor performance tables, MLPerf results, blog posts. This lesson puts the two side by side.
# Each published run is priced for its own workload, and the published figure is read as a
# **fraction of the bound**.
#
# **By the end of this lesson you can**
#
# 1. price a published run against its bound, and read the result as a fraction at most 1;
# 2. say how far below the bound each regime runs (batch-1 latency, maximum throughput, prefill,
#    many chips, MoE, 4-bit weights), and name what the gap is made of;
# 3. spot what a published setup leaves unsaid, and what that does to any comparison;
# 4. calibrate an efficiency on some runs, forecast others, and report the error honestly;
# 5. size a deployment from the bound and a calibrated efficiency, with an error bar.
#
# > **Conventions.** Every run is priced by `roofline_lessons.topics.real_engines` (its docstring
# > lists the rules). In short:
# >
# > - The **bound** is the course's lower bound for the run's own part, model, formats, lengths,
# >   batch and split over chips. For a maximum-throughput run it takes the largest batch that fits
# >   the whole memory with every request at the mean context of its life, and prefills ride inside
# >   the decode steps (continuous batching's steady state).
# >   The **estimate** adds the course's conventions: unfused operators, a static batch, an assumed
# >   per-call latency on every collective, and 90 % of memory.
# > - For a mixture of experts, bound and estimate alike assume the tokens of a step route uniformly
# >   and independently (a property of the traffic). A speculative run's bound assumes every drafted
# >   token is accepted, the most a verify step can yield.
# > - **Fraction of the bound** = measured ÷ bound for a rate, bound ÷ measured for a time. Either
# >   way it is at most 1 wherever the bound holds.
# > - Where a source leaves a figure unsaid (a length, a KV format, the split), the course fills the
# >   gap with an **assumption that keeps the bound loose**: the shortest prompt, the smallest KV
# >   format the part offers, the split with the highest bound. Every assumption is listed (section 1).
# > - Figures are per chip where the source gives them per chip (a per-node figure over its stated 8
# >   GPUs). Otherwise they are for all the run's chips, and the table says which.
# > - Parts are the catalog's, at their datasheet figures (dense, no sparsity). A run on a part with a
# >   lower power cap (gpt-fast's A100s at 330 W) is held to the uncapped part's bound: still a bound,
# >   only a looser one.

# %%
# %matplotlib inline
import numpy as np

from roofline_lessons.core.engine_runs import list_engine_runs
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.units import count, duration, num, percent, quantity
from roofline_lessons.topics.real_engines import (
    calibrate,
    engine_family,
    half_batch_bound_drop,
    leave_one_out,
    priced_runs,
    range_coverage,
    runs_table,
    size_deployment,
    spread_by_regime,
)
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.viz.engines import engines_vs_bound_chart, regime_name, regime_table

priced = priced_runs()
by_id = {p.run.id: p for p in priced}

# %% [markdown]
# ## 1. The runs
#
# Each row is one figure a primary source published, with the conditions it states (the catalog,
# `roofline_lessons/data/engine_runs.toml`, keeps every field: engine version, power cap,
# scheduler settings, and what the source leaves unsaid). Beside it is the course's bound for the
# same workload.

# %%
headers, rows = runs_table(priced)
show_table(headers, rows)

# %% jupyter={"source_hidden": true}
assert len(priced) == len(list_engine_runs()) >= 20  # "at least 20 published measurements"
engines = sorted({engine_family(p.run) for p in priced})
parts = sorted({p.run.part for p in priced})
md(f"{count(len(priced))} runs from {count(len(engines))} engines ({', '.join(engines)}) on "
   f"{count(len(parts))} kinds of part. A `*` beside a format marks one the source does not state.")

# %% [markdown]
# Some sources leave out a figure the bound needs, and some state a detail the catalog's columns do
# not hold (which layers stay in BF16). The table lists how the course prices each such run. Where
# the source is silent, the assumption keeps the bound **loose** (the engine gets the benefit of the
# doubt: the shortest prompt, the smallest KV format, any batch), unless the source's own recipe
# fixes the choice; each entry says which.

# %%
show_table(["run", "assumed"], [[p.run.id, "; ".join(p.pricing.assumed)] for p in priced if p.pricing.assumed])

# %% [markdown]
# **Question.** MLPerf's Llama-2-70B prompts come from a dataset, and their lengths are not stated.
# Why does pricing them as 1-token prompts give a bound that still holds, and what does it do to the
# fraction you read?

# %% [markdown]
# ## 2. Does any engine beat the bound?
#
# The chart puts every run at (bound, measured). Time figures (TTFT, TPOT) appear as their
# reciprocals, so up always means faster. The diagonal y = x is the bound; a point above it would
# mean the bound, or one of its stated conditions (uniform routing for an MoE, every draft accepted for
# a speculative run, the priced lengths), was wrong.

# %%
engines_vs_bound_chart(priced)

# %% jupyter={"source_hidden": true}
beaten = [p.run.id for p in priced if p.beats_bound]
assert not beaten, beaten  # "no run beats its bound"
best = max(priced, key=lambda p: p.fraction_of_bound)
worst = min(priced, key=lambda p: p.fraction_of_bound)
median = float(np.median([p.fraction_of_bound for p in priced]))
md(f"None of the {count(len(priced))} runs beats its bound. The closest is **{best.run.id}** at "
   f"{num(best.fraction_of_bound, 2)} of it; the farthest is **{worst.run.id}** at "
   f"{num(worst.fraction_of_bound, 2)} (its conditions are in the table: read them before reading the fraction). "
   f"The median run reaches {num(median, 3)} of its bound.")

# %% [markdown]
# **Question.** A colleague shows you a run at 1.3× the course's bound. Before doubting the bound,
# which three things about the run would you check first?

# %% [markdown]
# ## 3. How far below, regime by regime
#
# Each run is filed under the one regime it mainly illustrates (the catalog's `regime` field, chosen
# by hand: a speculative MoE decode is "MoE", a production EP deployment "many chips"), so a regime's
# median is a summary of its handful of runs, not a law. Each regime has its own reasons for the gap.

# %%
show_table(*regime_table(priced))

# %% jupyter={"source_hidden": true}
spread = {s.regime: s for s in spread_by_regime(priced)}
b1, tput, pre, many, moe, w4 = (spread[r] for r in ("batch-1 latency", "max throughput", "prefill and TTFT",
                                                      "many chips", "moe", "4-bit weights"))
gf = by_id["gpt-fast-llama-2-7b-bf16-a100-bs1"]
r1 = by_id["trtllm-deepseek-r1-b200x8-bs1-no-mtp"]
assert tput.lowest > b1.lowest and tput.median > moe.median
v405 = by_id["vllm-llama-3.1-405b-fp8-mi300x8-bs1"]
assert r1.fraction_of_bound < v405.fraction_of_bound < gf.fraction_of_bound
md(f"**Batch-1 latency** (median {num(b1.median, 2)}). One chip at batch 1 comes closest: gpt-fast's Llama-2-7B "
   f"reaches {num(gf.fraction_of_bound, 2)} of its bound. On eight chips at batch 1, vLLM's dense "
   f"Llama-3.1-405B on 8 × MI300X reaches {num(v405.fraction_of_bound, 2)}, and TensorRT-LLM's DeepSeek-R1, an MoE, "
   f"on 8 × B200 without MTP {num(r1.fraction_of_bound, 2)} (different engines, models and formats: not a rule "
   f"about chip counts). The R1 run's bound is {num(r1.bound)} tok/s, because "
   "each of the eight chips reads only its share of the weights and no time is charged per call. The course's "
   f"estimate, which charges an assumed 10 µs per collective call, gives {num(r1.estimate)} tok/s, "
   f"{num(r1.bound / r1.estimate, 2)}× below the bound and {num(r1.estimate / r1.measured, 2)}× above the run. "
   "Hypothesis: at batch 1 on many chips the gap is per-call latency (collectives, kernel launches), not bandwidth.")

# %% jupyter={"source_hidden": true}
tput_runs = sorted((p for p in priced if p.run.regime == "max throughput"), key=lambda p: p.fraction_of_bound)
lowest_tput = tput_runs[0]
drops = sorted(half_batch_bound_drop(p) for p in tput_runs)
md(f"**Maximum throughput** (median {num(tput.median, 2)}, from {num(tput.lowest, 2)} to {num(tput.highest, 2)}). "
   "The bound takes the largest batch that fits *all* of memory with every request at the mean context of its "
   "life (continuous batching with a paged KV cache). An engine keeps a margin and often caps its batch lower; "
   f"but halving the batch lowers these bounds by {percent(drops[0], 0)} to {percent(drops[-1], 0)} (median "
   f"{percent(float(np.median(drops)), 0)}), so for most of them the batch explains little of the gap. The rest is a hypothesis: attention kernels at long KV, scheduling and "
   f"sampling overhead, prefills interrupting the decode steps. The lowest run, **{lowest_tput.run.id}** "
   f"({num(lowest_tput.fraction_of_bound, 2)}), is "
   + ("one whose lengths the source leaves unsaid and the course prices at the loosest case (section 1): part of "
      "its gap is the assumption's, not the engine's." if lowest_tput.pricing.assumed else
      "priced at its stated lengths."))

# %% jupyter={"source_hidden": true}
ttft = by_id["trtllm-0.14-llama-3.1-8b-h100-ttft-467"]
md(f"**Prefill and TTFT** (median {num(pre.median, 2)}). A client-measured TTFT includes the network, "
   f"tokenisation and any queueing. TensorRT-LLM's 467-token prompt on one H100 has a bound of "
   f"{duration(ttft.bound)} against a measured {duration(ttft.measured)}. The source does not split its time: the "
   "network, tokenisation, queueing and a prefill running below peak FLOP/s all take part (a hypothesis).")

# %% jupyter={"source_hidden": true}
md(f"**Many chips** (median {num(many.median, 2)}, {quantity(many.runs, 'run', whole=True)}) and **MoE** "
   f"(median {num(moe.median, 2)} over the runs filed as MoE). Two costs a one-chip dense run does not pay enter "
   "here. One is communication: the all-reduces and "
   "all-to-alls, their latency, and their imbalance. The other is the MoE routing itself: bound and estimate "
   "alike assume the tokens of a step route uniformly and independently, a property of the traffic. Real "
   "traffic loads some experts more than others (which is why DeepSeek and SGLang replicate hot experts, EPLB), "
   "and tokens that share experts read fewer weights: for an MoE the bound holds for traffic routed that way.")

# %% jupyter={"source_hidden": true}
q4 = by_id["gpt-fast-llama-2-7b-int4-a100-bs1"]
bound_speedup, measured_speedup = q4.bound / gf.bound, q4.measured / gf.measured
assert measured_speedup < bound_speedup
md(f"**4-bit weights** (median {num(w4.median, 2)}). The regime mixes two kinds: batch-1 runs with int4 weights "
   "dequantised in the kernel (gpt-fast) and maximum-throughput runs in FP4 on Blackwell, whose matmuls run in FP4. "
   f"At batch 1 a 4-bit weight saves bytes, but the kernel must unpack it: gpt-fast's int4 Llama-2-7B runs at "
   f"{num(q4.fraction_of_bound, 2)} of its bound, against {num(gf.fraction_of_bound, 2)} for the BF16 model on the "
   f"same chip. The bound's speed-up from BF16 to int4 is {num(bound_speedup, 2)}×; the measured one is "
   f"{num(measured_speedup, 2)}×. Hypothesis: the dequantisation and the smaller matmuls' fixed costs take a larger "
   "share once the bytes shrink.")

# %% [markdown]
# **Question.** Two runs of the same MoE model on the same part reach 0.6 and 0.1 of their bounds.
# One is batch 1 over eight chips, the other a maximum-throughput run on one. Which would you expect
# to be which, and what would you change to move the lower one?

# %% [markdown]
# ## 4. Does the estimate track better?
#
# The bound is a limit no run can pass. The estimate adds conventions (unfused operators, a static batch, an assumed
# per-call latency) that real engines partly share. If those conventions are close to the truth, a
# run's fraction of the estimate should vary less from run to run than its fraction of the bound.

# %%
priced_with_estimate = [p for p in priced if np.isfinite(p.estimate)]
log_spread_bound = float(np.std(np.log([p.fraction_of_bound for p in priced_with_estimate])))
log_spread_estimate = float(np.std(np.log([p.fraction_of_estimate for p in priced_with_estimate])))
show_table(["against", "runs", "spread (std of log fraction)", "lowest", "highest"],
           [["the bound", count(len(priced_with_estimate)), num(log_spread_bound, 2),
             num(min(p.fraction_of_bound for p in priced_with_estimate), 2),
             num(max(p.fraction_of_bound for p in priced_with_estimate), 2)],
            ["the estimate", count(len(priced_with_estimate)), num(log_spread_estimate, 2),
             num(min(p.fraction_of_estimate for p in priced_with_estimate), 2),
             num(max(p.fraction_of_estimate for p in priced_with_estimate), 2)]])

# %% jupyter={"source_hidden": true}
tighter = log_spread_estimate < log_spread_bound
above = [p.run.id for p in priced_with_estimate if p.fraction_of_estimate > 1]
md(("The estimate tracks the runs a little more tightly" if tighter else
    "The estimate does not track the runs more tightly")
   + f": the spread of the log fraction is {num(log_spread_estimate, 2)} against {num(log_spread_bound, 2)} for "
   f"the bound, over {count(len(priced_with_estimate))} runs: too few to call the difference settled. "
   + (f"{quantity(len(above), 'run', whole=True)} beat the estimate ({', '.join(above)}). That is allowed: the "
      "estimate is not a bound, and a fused kernel or an overlapped collective does better than its conventions."
      if above else "No run beats the estimate here, but nothing guarantees that: it is not a bound."))

# %% [markdown]
# **Question.** Why can a run beat the estimate but never the bound? Name one convention in the
# estimate that a good engine does not pay.

# %% [markdown]
# ## 5. Forecasting: calibrate on some runs, predict the others
#
# To predict a new deployment, multiply its bound by an **efficiency**, the fraction of the bound
# that similar runs reach. To test this honestly, forecast each run from the *other* runs of its
# regime (their median fraction), so no run calibrates its own prediction. A regime with one run has
# nothing to calibrate on, so that run is left out.

# %%
forecasts = leave_one_out(priced)
show_table(["run", "regime", "efficiency (others' median)", "forecast ÷ measured − 1"],
           [[f.priced.run.id, regime_name(f.priced.run.regime), num(f.efficiency, 2), percent(f.error, 0)]
            for f in forecasts])

# %% jupyter={"source_hidden": true}
errors = np.abs([f.error for f in forecasts])
within_half = float(np.mean(errors <= 0.5))
held, tried = range_coverage(priced)
md(f"Over {quantity(len(forecasts), 'forecast', whole=True)}, the median error is {percent(float(np.median(errors)), 0)} "
   f"and the worst {percent(float(errors.max()), 0)}. {percent(within_half, 0)} of the forecasts land within ±50 % "
   "of what was measured. A regime's median is a first guess, not a forecast to plan on. Even the range of the "
   f"other runs of its regime (lowest to highest fraction) held the run only {count(held)} times out of "
   f"{count(tried)}: quote the spread of these leave-one-out errors with any forecast, not just the range.")

# %%
by_regime = {}
for f in forecasts:
    by_regime.setdefault(f.priced.run.regime, []).append(abs(f.error))
regime_errors = sorted(((float(np.median(e)), r) for r, e in by_regime.items()))
show_table(["regime", "forecasts", "median error", "worst error"],
           [[regime_name(r), count(len(by_regime[r])), percent(m, 0), percent(max(by_regime[r]), 0)]
            for m, r in regime_errors])

# %% jupyter={"source_hidden": true}
best_regime, worst_regime = regime_errors[0][1], regime_errors[-1][1]
md(f"The forecasts are best for **{regime_name(best_regime)}** (median error {percent(regime_errors[0][0], 0)}) and "
   f"worst for **{regime_name(worst_regime)}** ({percent(regime_errors[-1][0], 0)}).")

# %% [markdown]
# **Question.** Look at the worst regime's runs in the table above. What differs between them that a
# single efficiency number cannot capture?

# %% [markdown]
# ## 6. Sizing a deployment
#
# A typical interview question: *how many H200s do you need to serve 50,000 output tokens/s of
# Llama-3.1-70B in FP8, with every request's TPOT at most 50 ms?* The method:
#
# 1. Choose a split (here TP 4: one copy on four chips).
# 2. Forecast one copy's output rate at a batch: the continuous-batching bound × the efficiency.
# 3. Its TPOT is then batch ÷ rate (Little's law: each of the batch's sequences gets one token per
#    batch ÷ rate seconds). Take the largest batch whose TPOT meets the limit and whose KV fits in
#    memory (the whole memory: the efficiency already carries the engine's margin).
# 4. Divide the target by that rate and round up to whole copies.
#
# The efficiency comes from the maximum-throughput runs: their median, and their lowest and highest
# for a range. Those runs are all one-chip copies (TP 1): a TP 4 copy also pays per-call costs they do
# not capture. It is a forecast, not a bound.

# %%
TARGET_TOKENS_PER_S, TPOT_SLO_S, PROMPT, OUTPUT = 50_000, 0.050, 1000, 1000
low, mid, high = calibrate(priced, "max throughput")
def sized(efficiency):
    """One sizing, or the reason there is none (the limit cannot be met even at batch 1)."""
    try:
        return size_deployment("llama-3.1-70b", "h200", target_output_tokens_per_s=TARGET_TOKENS_PER_S,
                               tpot_slo_s=TPOT_SLO_S, prompt_tokens=PROMPT, output_tokens=OUTPUT,
                               efficiency=efficiency, tensor=4, weights_dtype="fp8", kv_dtype="fp8",
                               compute_dtype="fp8")
    except RooflineInputError as err:
        return str(err)


sizes = {name: sized(eff) for name, eff in (("lowest", low), ("median", mid), ("highest", high))}
show_table(["efficiency", "fraction of the bound", "batch per copy", "forecast TPOT", "tok/s per copy", "copies",
            "H200s"],
           [[name, num(s.efficiency, 2), count(s.batch), duration(s.tpot_s), num(s.copy_output_tokens_per_s),
             count(s.copies), count(s.chips)] if not isinstance(s, str) else [name, num(eff, 2), "—", s, "—", "—", "—"]
            for (name, s), eff in zip(sizes.items(), (low, mid, high))])

# %%
lowest_run = min((p for p in priced if p.run.regime == "max throughput"), key=lambda p: p.fraction_of_bound)
infeasible = [name for name, s in sizes.items() if isinstance(s, str)]
bound_only = sized(1.0)
if not infeasible:
    assert sizes["lowest"].chips >= sizes["median"].chips >= sizes["highest"].chips
    md(f"With the median efficiency ({num(mid, 2)} of the bound), {count(sizes['median'].chips)} H200s. The range "
       f"runs from {count(sizes['highest'].chips)} (the best throughput run's efficiency) to "
       f"{count(sizes['lowest'].chips)} (the worst's, **{lowest_run.run.id}**"
       + (", a run whose unstated lengths the course prices at the loosest case" if lowest_run.pricing.assumed else "")
       + "). Quote the range, and section 5's errors with it. The bound alone (an efficiency of 1) would need only "
       + (f"{count(bound_only.chips)}: no deployment of this layout can do with fewer, and none should be planned "
          "on it." if not isinstance(bound_only, str) else "— none: even the bound misses the limit."))
else:
    md(f"At {duration(TPOT_SLO_S)} the {' and '.join(infeasible)} efficiency cannot meet the limit on TP 4 even at "
       "batch 1: a wider split or a faster part is needed.")

# %% [markdown]
# **Question.** Set `TPOT_SLO_S` to 0.020 and rerun the cell. Which rows can no longer meet the limit
# on TP 4, and why do the chip counts of the others barely move? (Compare the batch per copy with the
# batch at which one copy's rate stops rising.)

# %% [markdown]
# ## Going further
#
# - **What the setup leaves unsaid.** Open `list_engine_runs()` and read the `unsaid` field of the
#   MLPerf and DeepSeek rows. A production figure (DeepSeek's day of traffic) states no batch and
#   no prompt lengths (only a mean KV length per output token), so the course bounds it at any batch
#   and the shortest context: only the per-token costs remain. Which unit sets that bound for the
#   EP-144 decode (`by_id["deepseek-online-decode-h800-ep144"].bound_unit`), and why is it not the HBM?
# - **Speculative decoding.** The MTP rows are priced with every drafted token accepted, the most a
#   verify step can yield. Compare the B200 MTP row with its sibling without MTP: how much of the gap
#   does the drafting close? (The published MTP figure also adds other optimisations the blog lists.)
# - **Add a run.** Copy a row in the catalog, fill it from a primary source, and run
#   `python -m pytest tests/test_engine_runs.py tests/test_real_engines.py`: the test holds that it
#   does not beat its bound.
