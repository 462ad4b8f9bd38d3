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
# # Lesson 14 — Serving engines
#
# Lesson 10 priced one request, or one static batch, on an idle server. A real engine (vLLM,
# SGLang, TensorRT-LLM) never sees that. Requests arrive at random and wait in a queue. Every
# **iteration** the scheduler builds a batch under a token budget, slots prompt chunks in beside
# the running requests' decode tokens, and allocates KV-cache blocks. When the blocks run out it
# preempts someone. This lesson plays that loop out, step by step, on the course's own step costs.
#
# **By the end of this lesson you can**
#
# 1. say what one scheduler iteration does, and why continuous batching beats static batching;
# 2. read goodput against request rate and find where it falls off (DistServe's definition);
# 3. trade TTFT against TPOT with the prefill chunk size;
# 4. explain preemption when the KV cache fills, and what prefix caching's hit rate buys;
# 5. say when separate prefill and decode pools beat one pool, and what the KV transfer costs;
# 6. explain why a long-context, small-batch decode needs its KV split across many thread blocks
#    (flash-decoding), and why GQA heads are packed together.
#
# > **Conventions.** `roofline_lessons.topics.engine.simulate` runs an iteration-level scheduler. Each
# > step's seconds come from the course's per-operator cost model at that step's own mix of decode
# > tokens and prompt chunks. By default the step is priced by the **estimate** (unfused operators,
# > dequantisation in series); with `cost="lower_bound"` it is priced at its lower bound. Either way,
# > **every figure this lesson prints is an estimate** of one scheduling policy. Another policy can
# > serve a given request sooner, so a simulated TTFT is never a bound. The policy's conventions
# > are printed in the first cell below. The defaults are vLLM's class fallbacks (16-token blocks,
# > 2,048 tokens and 128 sequences per step) and its long-standing 90 % memory utilisation (0.92 in
# > current releases; `vllm serve` on an H100 raises the step to 8,192 tokens and 1,024 sequences).
# > The whole utilised share minus the weights goes to the KV cache (vLLM also keeps activations and
# > CUDA graphs in it), so the block counts here are generous.

# %%
# %matplotlib inline
import numpy as np

from roofline_lessons.core.hardware import get_part
from roofline_lessons.core.models import get_model
from roofline_lessons.core.units import binary, count, duration, percent
from roofline_lessons.topics import kernels
from roofline_lessons.topics.engine import (CONVENTIONS, DEFAULT_MAX_RUNNING, DEFAULT_TOKEN_BUDGET, EngineConfig,
                                            Requests, goodput_curve, poisson_requests, simulate)
from roofline_lessons.topics.serving import littles_law, request_timeline
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.viz.serving_engines import goodput_chart, iterations_timeline_chart, kv_use_chart

MODEL, PART = "llama-3.1-8b", "h100-sxm"
model, part = get_model(MODEL), get_part(PART)
md("**The scheduler's conventions** (the package's `CONVENTIONS`):\n\n" + "\n".join(f"- {c}" for c in CONVENTIONS))

# %% [markdown]
# ## 1. One iteration, and why continuous batching wins
#
# One scheduler iteration does four things:
#
# 1. it admits waiting requests while seats (`max_running`), token budget and free KV blocks last;
# 2. it schedules one decode token for every running request, plus prompt chunks;
# 3. it runs **one forward pass** over all of those tokens, reading the weights once;
# 4. it appends a token to each request, and frees the blocks of those that have finished.
#
# **Static batching** admits a batch only when the previous one has completely finished. A request
# that arrives just after a batch starts waits for the whole batch. **Continuous batching**
# (iteration-level scheduling, Orca, OSDI 2022) admits at every iteration. Below, the same eight
# requests arrive at random and are served both ways, with at most four in a step.

# %%
few = poisson_requests(40, 8, 512, 32, seed=3)
static = simulate(MODEL, PART, few, EngineConfig(scheduler="static", max_running=4))
continuous = simulate(MODEL, PART, few, EngineConfig(max_running=4))
fig = iterations_timeline_chart({"static batching (4 per batch)": static,
                                 "continuous batching (at most 4 per step)": continuous})
fig

# %%
rows = [[name, duration(float(np.mean(s.queue_s))), duration(float(np.mean(s.ttft_s))),
         duration(float(np.mean(s.e2e_s))), duration(s.span_s)]
        for name, s in (("static", static), ("continuous", continuous))]
show_table(["batching", "mean queue", "mean TTFT", "mean E2E", "last token at"], rows)
faster = np.mean(continuous.e2e_s) < np.mean(static.e2e_s)
assert faster  # the sentence below says so
md(f"Continuous batching cuts the mean E2E from {duration(float(np.mean(static.e2e_s)))} to "
   f"{duration(float(np.mean(continuous.e2e_s)))}: a request that arrives mid-batch joins at the next "
   "iteration instead of waiting for the whole batch to drain.")

# %% [markdown]
# *Question.* In the static row, which requests waited longest, and for what?

# %% [markdown]
# ## 2. Goodput against request rate
#
# A deployment is judged by what it delivers within its objectives, not by raw tokens per second.
# DistServe (Zhong et al., OSDI 2024) defines **goodput** as the highest request rate at which a
# target share of requests (here 90 %) meets both the TTFT and the TPOT objective. Below, 1,024-token
# prompts with 256-token answers arrive as a Poisson process on one H100. Prompts are chunked at 512
# tokens, against SLOs of 500 ms TTFT and 25 ms TPOT.

# %%
TTFT_SLO_S, TPOT_SLO_S, PROMPT, OUTPUT = 0.5, 0.025, 1024, 256
chunked = EngineConfig(chunk_tokens=512)
curve = goodput_curve(MODEL, PART, rates_per_s=[2, 5, 10, 15, 20, 25, 30, 40, 60], requests=600,
                      prompt_tokens=PROMPT, output_tokens=OUTPUT, ttft_slo_s=TTFT_SLO_S, tpot_slo_s=TPOT_SLO_S,
                      config=chunked, refine=3)
goodput_chart(curve, title="Llama-3.1-8B on one H100: SLO attainment against request rate (600 requests each)")

# %% jupyter={"source_hidden": true}
falls = curve.rates_per_s[curve.attainment < curve.target]
md(f"Goodput is **{curve.goodput_requests_per_s:.3g} requests/s**. Above it, attainment falls "
   f"from {percent(float(curve.attainment[curve.rates_per_s == curve.goodput_requests_per_s][0]), 0)} "
   f"to {percent(float(curve.attainment[-1]), 0)} at {curve.rates_per_s[-1]:.3g} requests/s. Past capacity, the "
   "queue grows without limit, and every later request's TTFT grows with it. Each rate is a finite run of "
   "600 requests, and a short run flatters an overloaded rate because its queue has not yet built up.")

# %% [markdown]
# **Little's law** ties the three numbers a sizing question uses. L = λ × W: the requests in the
# system on average equal the rate they complete times the mean time each spends. λ is measured as
# completions over the run's span, from the first arrival to the last token, so it differs a little
# from the offered rate: a finite Poisson draw, and the drain after the last arrival. The simulation
# checks it on its own bookkeeping. The time-average of the running batch, read off the step log,
# equals completions per second times each request's time from admission to its last token.

# %% jupyter={"source_hidden": true}
at = simulate(MODEL, PART, poisson_requests(20, 600, PROMPT, OUTPUT, seed=0), chunked)
w_running = float(np.mean(at.e2e_s - at.queue_s))
L_from_law = littles_law(throughput_per_s=at.completed_requests_per_s, latency_s=w_running)
assert abs(L_from_law - at.mean_running_requests) < 1e-6 * at.mean_running_requests
md(f"Offered 20 requests/s: {at.mean_running_requests:.1f} requests run on average (step log). "
   f"Little's law gives {L_from_law:.1f} = {at.completed_requests_per_s:.2f} requests/s × "
   f"{duration(w_running)}. To serve a rate λ at a latency W, you need seats for λ × W requests, "
   "not λ ÷ W.")

# %% [markdown]
# How high can throughput go at all? Lesson 10's continuous-batching **upper bound** is the batch's
# tokens over the cycle's largest unit time. It is a ceiling for any scheduler, given that batch and
# no speculation. Below, the same engine is saturated at 128 sequences, with its steps priced at
# their lower bound. Two workloads are shown: section 2's, and a decode-heavy one.

# %%
rows = []
for prompt, output, chunk in ((PROMPT, OUTPUT, 512), (128, 512, 64)):
    sat = simulate(MODEL, PART, poisson_requests(1000, 1500, prompt, output, seed=2),
                   EngineConfig(cost="lower_bound", chunk_tokens=chunk, max_running=128))
    upper = request_timeline(MODEL, PART, prompt_tokens=prompt, output_tokens=output,
                             batch=128).output_tokens_per_s_upper_bound
    assert sat.output_tokens_per_s <= upper
    rows.append([f"{count(prompt)} in, {count(output)} out, chunks of {chunk}", f"{sat.output_tokens_per_s:,.0f}",
                 f"{upper:,.0f}", percent(sat.output_tokens_per_s / upper, 0)])
show_table(["workload", "simulated tokens/s (bound step costs)", "continuous-batching upper bound", "share"], rows)

# %% [markdown]
# The share is higher where decode dominates. There, each step's compute hides under its weight
# read. Where prompts are long, the steps that carry chunks are compute-bound and the decode-only
# steps memory-bound. The cycle bound lets those two overlap across steps, but a real step cannot.
#
# *Question.* Which of the two workloads would gain more from a larger `max_running`, and why?

# %% [markdown]
# ## 3. The chunk size: TTFT against TPOT
#
# Without chunking, a whole prompt runs in one step, and every running request's next token waits
# behind it: TPOT spikes. Chunked prefill (Sarathi-Serve, Agrawal et al., OSDI 2024) splits the prompt
# across steps, so each decode step carries at most one chunk's extra work. Each extra chunk re-reads
# the weights and the prompt's KV so far, so a prompt takes more steps to finish, and with small
# chunks TTFT grows.

# %%
load = poisson_requests(4, 300, 4096, 128, seed=5)
chunk_rows, by_chunk = [], {}
for chunk in (None, 2048, 512, 128):
    # the budget holds a whole chunk beside every running decode token, so each chunk is full-size
    s = simulate(MODEL, PART, load, EngineConfig(chunk_tokens=chunk, token_budget=8192 if chunk is None else
                                                 chunk + DEFAULT_MAX_RUNNING))
    by_chunk[chunk] = s
    chunk_rows.append(["whole prompt" if chunk is None else count(chunk),
                       duration(float(np.percentile(s.ttft_s, 50))), duration(float(np.percentile(s.ttft_s, 99))),
                       duration(float(np.percentile(s.tpot_s, 50))), duration(float(np.percentile(s.tpot_s, 99)))])
show_table(["chunk (tokens)", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"], chunk_rows)
p99 = lambda s, key: float(np.percentile(getattr(s, key), 99))  # noqa: E731
order = [by_chunk[c] for c in (None, 2048, 512, 128)]  # whole prompt, then ever smaller chunks
assert all(p99(a, "tpot_s") > p99(b, "tpot_s") for a, b in zip(order, order[1:]))
assert all(np.median(a.ttft_s) < np.median(b.ttft_s) for a, b in zip(order, order[1:]))
md(f"Row by row, as the chunk shrinks, TPOT p99 falls and TTFT p50 rises. From whole prompts to 128-token "
   f"chunks, TPOT p99 falls from {duration(p99(by_chunk[None], 'tpot_s'))} to "
   f"{duration(p99(by_chunk[128], 'tpot_s'))}, and TTFT p50 rises from "
   f"{duration(float(np.median(by_chunk[None].ttft_s)))} to {duration(float(np.median(by_chunk[128].ttft_s)))}. "
   "These are 4,096-token prompts at 4 requests/s on one H100. The chunk sets which objective gives way. "
   f"TPOT here is each request's mean gap after its first token, so one long stall is averaged over its "
   f"{count(int(load.output_tokens[0]) - 1)} gaps.")

# %% [markdown]
# *Question.* Why does a chunk much smaller than the part's ridge point (lesson 2) waste the step?

# %% [markdown]
# ## 4. When the KV cache fills: preemption
#
# The engine carves the memory left after the weights, at its memory utilisation (vLLM's default is
# 90 %), into blocks of a few tokens (16 by default; PagedAttention, Kwon et al., SOSP 2023). A request holds only the blocks its tokens fill.
# When a running request needs a new block and none is free, the newest request is **preempted**.
# With *recompute*, its blocks are freed and it prefills prompt + generated tokens again later. With
# *swap*, its blocks go to host memory over PCIe and come back. Below, 4,096-token prompts with
# 1,024-token answers arrive at 3 requests/s, close to what one H100 completes, served at 60 % memory
# utilisation with up to 512 sequences per step, so the cache runs out before the seats do.

# %%
tight = poisson_requests(3, 400, 4096, 1024, seed=2)
recompute = simulate(MODEL, PART, tight, EngineConfig(max_running=512, memory_utilization=0.6))
swap = simulate(MODEL, PART, tight, EngineConfig(max_running=512, memory_utilization=0.6, preemption="swap"))
kv_use_chart({"recompute": recompute, "swap": swap},
             title="Llama-3.1-8B on one H100 at 60 % memory: KV blocks in use (4,096 + 1,024 tokens each)")

# %% jupyter={"source_hidden": true}
assert recompute.preemptions > 0 and swap.preemptions > 0
blocks, block_tokens = recompute.kv_blocks, recompute.config.block_tokens
full_request = 4096 + 1024
md(f"The cache holds {count(blocks)} blocks ({count(blocks * block_tokens)} tokens, "
   f"{binary(blocks * recompute.kv_block_bytes)}): {count(blocks * block_tokens // full_request)} requests at "
   f"their full {count(full_request)} tokens. Recompute preempts {count(recompute.preemptions)} times and "
   f"prefills {count(recompute.recomputed_tokens)} tokens a second time; swap preempts {count(swap.preemptions)} "
   f"times and spends {duration(swap.swap_s)} moving blocks over PCIe ({binary(recompute.kv_block_bytes)} per "
   f"block at {part.host_link.per_direction_bytes_per_s / 1e9:.0f} GB/s each way), in series with the steps. "
   f"Mean E2E: {duration(float(np.mean(recompute.e2e_s)))} with recompute, {duration(float(np.mean(swap.e2e_s)))} "
   f"with swap ({'swap' if np.mean(swap.e2e_s) < np.mean(recompute.e2e_s) else 'recompute'} is quicker here). "
   + ("Why swap preempts more often here is a hypothesis: a swapped request comes back with all its blocks at "
      "once, so the cache refills sooner." if swap.preemptions > recompute.preemptions else ""))

# %% [markdown]
# *Question.* Why does a preemption policy pick the **newest** request as its victim?

# %% [markdown]
# ## 5. Prefix caching: hit rate against TTFT
#
# Many requests share a system prompt. A prefix cache (vLLM's automatic prefix caching, SGLang's
# RadixAttention) keeps that prefix's KV blocks, so a request that starts with it skips the
# prefix's prefill. Only full blocks can be shared. Below, prompts of 2,048 tokens share a
# 1,536-token prefix, at a moderate load of 5 requests/s.

# %%
shared = poisson_requests(5, 400, 2048, 64, seed=6)
hit_rows, ttft_by_hit, p99_by_hit = [], {}, {}
fastest_miss_below_p99 = []
for hit in (0.0, 0.25, 0.5, 0.75, 1.0):
    s = simulate(MODEL, PART, shared, EngineConfig(prefix_cached_tokens=1536 if hit else 0, prefix_hit_rate=hit))
    misses = s.ttft_s[s.prefix_hit_tokens == 0]
    if 0 < hit < 1:  # with misses among the slowest 1 %, the p99 is at or above the fastest miss
        fastest_miss_below_p99.append(float(misses.min()) <= float(np.percentile(s.ttft_s, 99)))
    ttft_by_hit[hit] = float(np.mean(s.ttft_s))
    p99_by_hit[hit] = float(np.percentile(s.ttft_s, 99))
    hit_rows.append([percent(hit, 0), duration(ttft_by_hit[hit]), duration(float(np.percentile(s.ttft_s, 99)))])
show_table(["hit rate", "mean TTFT", "TTFT p99"], hit_rows)
means = [ttft_by_hit[h] for h in sorted(ttft_by_hit)]
assert all(a > b for a, b in zip(means, means[1:]))
assert all(fastest_miss_below_p99)  # "the tail stays with the misses"
tails = [p99_by_hit[h] for h in sorted(p99_by_hit)]
assert all(a > b for a, b in zip(tails, tails[1:]))  # "the p99 still falls as hits rise"
md(f"Mean TTFT falls at every step up in hit rate, from {duration(means[0])} with no hits to {duration(means[-1])} "
   "when every request hits. A miss still prefills its whole prompt. At every partial hit rate the p99 is "
   "at or above the fastest miss's TTFT: the tail stays with the misses until nearly every request hits. "
   "The p99 still falls as hits rise (a hypothesis for why: fewer full prefills leave the misses a less busy "
   "engine).")

# %% [markdown]
# ## 6. Disaggregation: one pool, or separate prefill and decode pools?
#
# In one pool, prefill chunks share steps with decode tokens. Each prompt that arrives lengthens
# everyone's next token. DistServe and Splitwise (Patel et al., ISCA 2024) instead run prefill on
# some GPUs and decode on others, and send each request's KV cache across when its prefill ends.
# Decode steps then carry no prefill work. The costs: the transfer, and a fixed split of GPUs that
# may not match the load. Below, two H100s serve long prompts either way.

# %%
pool_rows, pools = [], {}
for label, cfg in (("one pool: 2 instances", EngineConfig(chips=2)),
                   ("1 prefill + 1 decode", EngineConfig(prefill_chips=1, decode_chips=1))):
    for rate in (3, 6, 10):
        s = simulate(MODEL, PART, poisson_requests(rate, 600, 4096, 256, seed=7), cfg,
                     ttft_slo_s=1.0, tpot_slo_s=0.010)
        pools[label, rate] = s
        pool_rows.append([label, f"{rate}/s", duration(float(np.percentile(s.ttft_s, 90))),
                          duration(float(np.percentile(s.tpot_s, 90))), percent(s.slo_attainment, 0)])
show_table(["deployment (2 × H100)", "rate", "TTFT p90", "TPOT p90", "meet TTFT ≤ 1 s and TPOT ≤ 10 ms"], pool_rows)

# %% jupyter={"source_hidden": true}
split, colo = pools["1 prefill + 1 decode", 10], pools["one pool: 2 instances", 10]
tpot_better = np.percentile(split.tpot_s, 90) < np.percentile(colo.tpot_s, 90)
ttft_better = np.percentile(split.ttft_s, 90) < np.percentile(colo.ttft_s, 90)
both_met = all(pools[key].slo_attainment == 1.0 for key in pools if key[1] < 10)
winner = "separate pools" if split.slo_attainment > colo.slo_attainment else "one pool"
assert both_met  # the sentence below says so
md(f"At 3 and 6 requests/s every request meets both objectives either way. At 10 requests/s, TPOT p90 is "
   f"{'lower' if tpot_better else 'higher'} with separate pools "
   f"({duration(float(np.percentile(split.tpot_s, 90)))} against {duration(float(np.percentile(colo.tpot_s, 90)))}) "
   f"and TTFT p90 is {'lower' if ttft_better else 'higher'} "
   f"({duration(float(np.percentile(split.ttft_s, 90)))} against {duration(float(np.percentile(colo.ttft_s, 90)))}); "
   f"{percent(split.slo_attainment, 0)} of requests meet both objectives with separate pools against "
   f"{percent(colo.slo_attainment, 0)} with one pool, so **{winner}** serve this long-prompt, tight-TPOT "
   f"workload better at that rate. Each request's {count(4096)}-token KV cache crosses {split.kv_link_name} in "
   f"{duration(split.kv_transfer_s)}. DistServe's other regime, where one pool wins (short prompts, or a "
   "prefill share that swings too much for a fixed split), is not run here: try it in the dashboard.")

# %% [markdown]
# *Question.* With 1 prefill GPU and 1 decode GPU, which pool saturates first as the rate grows here?
# Compare how TTFT p90 (the prefill pool's) and TPOT p90 (the decode pool's) grow from 6 to 10
# requests/s. What split would you try next?

# %% [markdown]
# ## 7. Flash-decoding and GQA packing: the SM count as a second limit
#
# A decode attention kernel gives each thread block (CTA) one sequence and one KV head, with the
# query heads that share that KV head packed into it. At batch 1, Llama-3.1-8B launches one CTA per KV
# head, far fewer than an H100 has SMs (the numbers are below). Most SMs sit idle, and a few SMs
# cannot pull HBM's full bandwidth.
# **Flash-decoding** (Dao et al., 2023) splits the KV sequence across more CTAs, and a small reduction
# combines their partial softmax results.

# %%
CONTEXT = 32_768
heads, sms = model.num_key_value_heads, part.compute_units
kv_read = float(model.kv_cache_bytes_per_sequence(CONTEXT, "bf16"))
split_rows, read_s = [], {}
for rule, n_splits in (("no split", 1),
                       ("fewest splits giving every SM a CTA",
                        kernels.flash_decoding_splits(part, batch=1, kv_heads=heads, context_tokens=CONTEXT)),
                       ("wave-efficient count (FlashAttention's rule)",
                        kernels.wave_efficient_splits(part, batch=1, kv_heads=heads, context_tokens=CONTEXT))):
    n_ctas = kernels.decode_attention_ctas(1, heads, n_splits)
    waves = kernels.wave_quantization(n_ctas, sms)
    read_s[rule] = float(kernels.decode_attention_time_with_sm_limit_s(part, kv_bytes=kv_read, ctas=n_ctas))
    split_rows.append([rule, count(n_splits), count(n_ctas), count(waves.waves),
                       percent(kernels.sm_fill(part, n_ctas), 0), duration(read_s[rule])])
show_table(["KV splits", "splits", "CTAs", "waves", "SMs busy in the first wave", "KV read (estimate)"], split_rows)
fewest, one_wave = (read_s[r] for r in list(read_s)[1:])
spill = fewest / one_wave
assert spill > 1  # the last sentence says the second wave costs time
md(f"Batch 1 of Llama-3.1-8B at {count(CONTEXT)} tokens on the {count(sms)} SMs of an H100: {count(heads)} KV "
   f"heads, so {count(heads)} CTAs unsplit. The times are an **estimate** under a convention (each SM pulls its "
   f"share of the bandwidth, the CTAs run in waves), not a bound; one SM can pull more than its share, so the "
   f"unsplit figure likely overstates the slowdown. The roofline alone promises "
   f"{duration(kv_read / part.memory_bandwidth_bytes_per_s)} for the {binary(kv_read)} of KV at any split: the "
   f"SM count is a second limit beside it. A split count that spills into a second wave takes {spill:.2g}× as "
   "long as one that stays within a single wave.")

# %% jupyter={"source_hidden": true}
group = model.num_attention_heads // model.num_key_value_heads
packed = kernels.gqa_mma_m_fill(group)
alone = kernels.gqa_mma_m_fill(group, packed=False)
md(f"**GQA packing.** A Hopper tensor-core matrix-multiply-accumulate (MMA, `wgmma`) tile is 64 rows (M) tall. A decode step has one query token per "
   f"head. Packing the {group} query heads that share a KV head into one tile fills {percent(packed, 1)} "
   f"of its rows; one head at a time fills {percent(alone, 1)}. Packing also reads each KV block once for "
   f"all {group} heads. Either way decode attention stays memory-bound, but packing stops the tile's "
   "FLOPs and the KV reads from being multiplied by the group size.")

# %% [markdown]
# ## 8. The dashboard
#
# Pick a request rate, prompt and output lengths, a chunk size and a deployment of two H100s. The
# dashboard simulates Llama-3.1-8B at a fixed grid of rates (1 to 96 requests/s), with 300 requests each. It draws
# SLO attainment against rate, marks your rate, and reports TTFT and TPOT percentiles there against
# the SLOs (500 ms TTFT, 25 ms TPOT). Moving only the rate reuses the curve already simulated.

# %%
from roofline_lessons.viz.dashboards.lesson14 import lesson14_dashboard  # noqa: E402

lesson14_dashboard();

# %% [markdown]
# ## Answers to the section questions
#
# 1. **Static batching.** The requests that arrived just after a batch had started: they waited for
#    that whole batch, its prefill and every decode step of its longest request, before their own
#    prefill could begin.
# 2. **A larger `max_running`.** The decode-heavy workload. Its steps are memory-bound, so more
#    sequences share each weight read nearly for free, until compute or the KV cache binds. The
#    long-prompt workload's chunk steps are already compute-bound.
# 3. **Tiny chunks.** Every step reads all the weights, whatever it carries. A chunk far below the
#    ridge point's tokens adds too few FLOPs per weight byte to use the compute, so the prompt pays a
#    whole weight read per small chunk.
# 4. **The newest victim.** It has done the least work: the fewest tokens to recompute or swap. And
#    first-come-first-served order finishes the older requests first (vLLM pops the last running
#    request).
# 5. **Which pool saturates first.** Read it from the section's table: the figure that grows faster
#    from 6 to 10 requests/s (TTFT p90 for the prefill pool, TPOT p90 for the decode pool) marks the
#    pool nearer its limit. Give that pool more GPUs next, for example 2 prefill + 1 decode.

# %% [markdown]
# ## What to remember
#
# - One iteration: admit, schedule a decode token for each running request plus prompt chunks, run one
#   pass over the weights, append, free. Continuous batching admits at every iteration.
# - Goodput is the highest rate at which the target share of requests meets both SLOs. Past it,
#   queueing, not the step time, sets TTFT.
# - L = λ × W sizes the seats. Chunk size trades TTFT for TPOT. Preemption trades FLOPs (recompute)
#   against PCIe time (swap). A prefix cache's gain follows its hit rate.
# - Separate pools protect TPOT from prefill interference, at the price of a KV transfer and a fixed
#   split.
# - At small batch and long context, the SM count is a second limit: split the KV (flash-decoding) and
#   pack GQA heads.
#
# Exercises: `exercises/14_serving_engines.ipynb`.
