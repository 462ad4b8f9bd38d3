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
# # Lesson 4 — Batching: the cheapest way up the slope
#
# **By the end of this lesson you can**
#
# 1. draw decode intensity against batch through both lenses and explain why one is a straight
#    line and the other bends;
# 2. find the critical batch size — where decode would reach the ridge — and say when it does not
#    exist;
# 3. explain in numbers why batching helps decode far more than prefill;
# 4. read the throughput–latency curve a serving system trades along, and say what memory capacity
#    does to it;
# 5. say how a mixture-of-experts model changes the picture.

# %%
# %matplotlib inline
import numpy as np

from roofline_lessons import get_model, get_part, place
from roofline_lessons.topics.batching import (critical_batch, decode_sweep, experts_touched, intensity_ceiling,
                                       largest_batch, moe_weight_bytes_per_token, throughput_limit_tokens_per_s)
from roofline_lessons.viz.display import alt_of, md, show_table
from roofline_lessons.viz.plots import intensity_vs_batch, throughput_vs_latency
from roofline_lessons.core.units import count, percent, si

h100 = get_part("h100-sxm")

# %% [markdown]
# ## One pass over the weights, many tokens
#
# In decode every sequence needs the same weights. Batching B sequences reads each weight once and
# uses it B times, so the **weight lens** — FLOPs of the weight matmuls per weight byte — grows in
# proportion to B (2 FLOPs per weight per token over 2 bytes per BF16 weight: about B). It leaves
# out attention's FLOPs and every byte that is not a weight. Qwen3.8-27B on an H100 SXM, with an
# empty KV cache:

# %%
short = decode_sweep("qwen3.8-27b", h100, [1, 8, 32, 128], context_tokens=0)
show_table(["batch", "FLOP / weight byte", "attainable by that lens", "FLOP / byte (all)", "attainable (all)"],
           [[int(b), f"{w:,.1f}", si(min(h100.peak_flops_per_s('bf16'), w * h100.memory_bandwidth_bytes_per_s), "FLOP/s"),
             f"{a:,.1f}", si(min(h100.peak_flops_per_s('bf16'), a * h100.memory_bandwidth_bytes_per_s), "FLOP/s")]
            for b, w, a in zip(short.batch, short.intensity_per_weight_byte, short.intensity)])

# %% [markdown]
# Even at zero context the two lenses part ways for this model: every sequence carries its own
# Gated DeltaNet state, read and written every step. Add a history and the KV cache joins in.
#
# ## Two curves: straight and bent
#
# Per weight byte, intensity is a straight line in batch. Per byte of all traffic, it bends over:
# each new sequence adds its FLOPs **and** its own KV cache and state, so as B grows the ratio
# approaches a ceiling set by one sequence's FLOPs per byte of its private data. The chart runs to
# batches that do not fit in an H100: each curve is solid up to the largest batch that fits at its
# context (the dot) and faint beyond it.

# %%
fig = intensity_vs_batch("qwen3.8-27b", "h100-sxm", contexts=(1024, 8192, 32768, 131072))
fig

# %% jupyter={"source_hidden": true}
# its alt text gives critical_batch's figure, the one the table below and the checker use (not a grid point)
assert f"reach the ridge at batch {critical_batch('qwen3.8-27b', h100, 131072, lens='weights only'):,}." in alt_of(fig)

# %% [markdown]
# ## The critical batch size
#
# The **critical batch** is the smallest batch whose intensity reaches the ridge: below it,
# decode is memory-bound; above it, compute-bound. By the weight lens it is about the ridge
# itself, whatever the context, because that lens sees neither the KV cache nor attention: it
# answers "when do the weight matmuls alone stop being memory-bound?". By the all-traffic lens —
# the one that places the step — it may not exist at all. The table puts the hybrid model next to
# Llama-3.1-8B (all traffic here counts every operator's activations as memory traffic, as if
# nothing were fused):

# %%
rows = []
for ctx in (0, 1024, 8192, 32768, 131072):
    row = [f"{ctx:,}"]
    for model in ("qwen3.8-27b", "llama-3.1-8b"):
        cb_w = critical_batch(model, h100, ctx, lens="weights only")
        cb_a = critical_batch(model, h100, ctx, lens="all traffic")
        row += [f"{cb_w:,}" if cb_w else "never", f"{cb_a:,}" if cb_a else "never",
                f"{intensity_ceiling(model, ctx):,.0f}"]
    rows.append(row)
show_table(["tokens cached", "Qwen3.8-27B: weight lens", "all traffic", "ceiling as B → ∞",
            "Llama-3.1-8B: weight lens", "all traffic", "ceiling as B → ∞"], rows)

# %% [markdown]
# When the ceiling is below the ridge, no batch makes decode compute-bound: the private bytes of
# each sequence keep it on the slope. For Llama-3.1-8B those are its KV cache and activations, so a
# critical batch exists only when very little is cached (the table's first row). For Qwen3.8-27B
# even an empty cache is not enough:
# every sequence reads and writes its float32 Gated DeltaNet state on every step, and those bytes
# are never shared. That is why serving systems shrink per-sequence bytes — grouped-query
# attention, KV and state quantization — and not only the weights. (A paged KV cache is a
# different lever: it removes fragmentation, so more sequences *fit*; each step still reads the
# same bytes per sequence.)

# %% [markdown]
# ## Why batching helps decode far more than prefill
#
# Prefill is already on the flat roof: batching more prompts adds FLOPs and time in proportion,
# and tokens per second barely move. Decode is on the slope: batching adds FLOPs while the weight
# bytes stay put, so the step time grows far less than the batch (each sequence adds only its own
# KV cache) and tokens per second climb.

# %%
rows = []
for b in (1, 8, 32):
    pf = place("llama-3.1-8b", h100, phase="prefill", prompt_tokens=2048, batch=b)
    dc = place("llama-3.1-8b", h100, phase="decode", context_tokens=2048, batch=b)
    rows.append([b, f"{float(pf.time_lower_bound_s) * 1e3:,.1f} / {float(pf.time_estimate_s) * 1e3:,.1f} ms",
                 f"{float(pf.tokens_per_s_upper_bound):,.0f} / {float(pf.tokens_per_s_estimate):,.0f}",
                 f"{float(dc.time_lower_bound_s) * 1e3:,.2f} / {float(dc.time_estimate_s) * 1e3:,.2f} ms",
                 f"{float(dc.tokens_per_s_upper_bound):,.0f} / {float(dc.tokens_per_s_estimate):,.0f}"])
show_table(["batch", "prefill step (2,048-token prompts): bound / estimate", "prefill tokens/s: bound / estimate",
            "decode step (2,048 cached): bound / estimate", "decode tokens/s: bound / estimate"], rows)

# %% jupyter={"source_hidden": true}
pf1, pf32 = (place("llama-3.1-8b", h100, phase="prefill", prompt_tokens=2048, batch=b) for b in (1, 32))
dc1, dc32 = (place("llama-3.1-8b", h100, phase="decode", context_tokens=2048, batch=b) for b in (1, 32))
md(f"By the lower bound, batch 1 → 32 multiplies Llama-3.1-8B prefill throughput by "
   f"**{float(pf32.tokens_per_s_upper_bound / pf1.tokens_per_s_upper_bound):.2f}×** and decode throughput by "
   f"**{float(dc32.tokens_per_s_upper_bound / dc1.tokens_per_s_upper_bound):.1f}×**, while the decode step's bound only "
   f"grows from {float(dc1.time_lower_bound_s) * 1e3:.2f} ms to {float(dc32.time_lower_bound_s) * 1e3:.2f} ms. "
   f"The estimate (operators unfused, so each sequence's activations through HBM too) gives "
   f"{float(pf32.tokens_per_s_estimate / pf1.tokens_per_s_estimate):.2f}× and "
   f"{float(dc32.tokens_per_s_estimate / dc1.tokens_per_s_estimate):.1f}×.")

# %% [markdown]
# ## Capacity caps the batch
#
# Every sequence in the batch keeps its KV cache (and, in the hybrid model, its recurrent state)
# in device memory. The largest batch that fits, Qwen3.8-27B in BF16, with all of each chip's
# nominal memory (binary: "80 GB" is 80 GiB; lesson 2 shows the driver hands out a little less)
# and with the share a serving engine such as vLLM uses by default (`gpu_memory_utilization`):

# %%
from roofline_lessons.core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION as UTIL

contexts = np.array([1024, 8192, 32768, 131072])
fits = largest_batch("qwen3.8-27b", ["h100-sxm", "h200", "b200"], contexts)
fits_90 = largest_batch("qwen3.8-27b", ["h100-sxm", "h200", "b200"], contexts, memory_utilization=UTIL)
show_table(["tokens cached"] + [f"{p} (all / {UTIL:.0%})" for p in fits],
           [[f"{c:,}"] + [f"{fits[p][i]:,} / {fits_90[p][i]:,}" for p in fits] for i, c in enumerate(contexts)])

# %%
ridge = h100.ridge_point_flop_per_byte("bf16")
ceilings = {c: (intensity_ceiling("qwen3.8-27b", c), intensity_ceiling("qwen3.8-27b", c, compulsory=True))
            for c in (0, *contexts)}
CTX = 8192
i = list(contexts).index(CTX)
parts_8k = {}
for pid in fits:
    cap = int(fits[pid][i])
    at_cap = decode_sweep("qwen3.8-27b", pid, [cap], CTX)
    assert bool(at_cap.fits_in_memory[0])  # the table's batch fits the step (its cache holds one more token after it)
    parts_8k[pid] = (cap, float(at_cap.tokens_per_s[0]), throughput_limit_tokens_per_s("qwen3.8-27b", pid, CTX))
h100_cap, h100_tps, h100_limit = parts_8k["h100-sxm"]
md(f"For Qwen3.8-27B there is no compute limit to reach: at every context in the table its ceiling as B → ∞ stays "
   f"below the H100's ridge ({ridge:,.0f} FLOP/byte) — from {min(a for a, _ in ceilings.values()):,.0f} to "
   f"{max(a for a, _ in ceilings.values()):,.0f} FLOP/byte counting every operator's activations, and from "
   f"{min(b for _, b in ceilings.values()):,.0f} to {max(b for _, b in ceilings.values()):,.0f} counting compulsory "
   f"bytes only. No batch makes this decode compute-bound. What capacity caps is throughput: on an H100 with "
   f"{count(CTX)} tokens cached, at most **{h100_cap}** sequences fit, and at that batch the bound allows "
   f"{h100_tps:,.0f} tokens/s, **{percent(h100_tps / h100_limit, 0)}** of the {h100_limit:,.0f} tokens/s it "
   "approaches as the batch grows without limit. More memory buys more of that limit: "
   + "; ".join(f"{pid}: {cap} sequences, {tps:,.0f} tokens/s, {percent(tps / limit, 0)} of {limit:,.0f}"
               for pid, (cap, tps, limit) in parts_8k.items() if pid != "h100-sxm") + ".")

# %% jupyter={"source_hidden": true}
# the table's "never" for Qwen3.8-27B, by the unfused count and by compulsory bytes alike
assert all(max(pair) < ridge for pair in ceilings.values())
# "more memory buys more of that limit": every larger part's share exceeds the H100's
assert all(tps / limit > h100_tps / h100_limit and cap > h100_cap for pid, (cap, tps, limit) in parts_8k.items()
           if pid != "h100-sxm")

# %% [markdown]
# ## Throughput against latency
#
# Each step produces one token per sequence, so the step time is every user's time per output
# token, and batch ÷ step time is the server's throughput. The chart plots the lower bound on the
# step (so the upper bound on throughput). Growing the batch slides along a curve:
# first nearly free throughput, then latency climbs for little gain. The dotted part does not fit
# on the chip.

# %%
fig = throughput_vs_latency("qwen3.8-27b", ["h100-sxm", "h200", "b200"], context_tokens=8192)
fig

# %% jupyter={"source_hidden": true}
# its alt text states the capacity table's largest batches at 8,192 tokens, not points of the plotting grid
assert contexts[1] == 8192 and all(f"{p}: " in alt_of(fig) and f"the largest batch that fits, {fits[p][1]:,}:"
                                   in alt_of(fig) for p in fits)

# %% [markdown]
# ## Mixture of experts: batching buys less
#
# Qwen3-30B-A3B routes each token to 8 of 128 experts per layer. At batch 1 a decode step reads
# only those 8 experts' weights — a fraction of the model. But different tokens pick different
# experts: with B tokens in the step, the expected number of distinct experts touched under
# uniform routing is $E\,(1 - (1 - k/E)^B)$.

# %%
moe_batches = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])
touched = experts_touched("qwen3-30b-a3b", moe_batches)
moe_per_token = moe_weight_bytes_per_token("qwen3-30b-a3b", moe_batches)
dense_per_token = moe_weight_bytes_per_token("qwen3-32b", moe_batches)
show_table(["batch", "experts touched (of 128)", "MoE weight bytes / token", "relative to batch 1",
            "dense Qwen3-32B relative to batch 1"],
           [[int(b), f"{t:,.1f}", si(m, "B"), f"{m / moe_per_token[0]:.3f}", f"{d / dense_per_token[0]:.3f}"]
            for b, t, m, d in zip(moe_batches, touched, moe_per_token, dense_per_token)])

# %% jupyter={"source_hidden": true}
m = get_model("qwen3-30b-a3b")
md(f"A dense model's weight bytes per token fall as 1/B. The MoE's fall much more slowly at first: going "
   f"from batch 1 to 16 cuts them by {moe_per_token[0] / moe_per_token[4]:.1f}× (a dense model: "
   f"{dense_per_token[0] / dense_per_token[4]:.0f}×), because those 16 tokens wake about {touched[4]:.0f} experts "
   f"instead of {m.num_experts_per_tok}. Only once nearly all {m.num_experts} experts are touched does each extra "
   "token ride for free. MoE decode at small batch is cheap per token; it just gains less from batching.")

# %% [markdown]
# ## Explore
#
# Move the batch and context sliders. Left: where the step sits (filled dot: all traffic; open
# square: the weight lens). Middle: which bytes dominate as the batch grows. Right: the
# throughput–latency curve and where this batch sits on it (dotted: does not fit). Try: the MoE
# model; 131,072 tokens on the H100; the same on the B200.

# %%
from roofline_lessons.viz.dashboards import lesson04_dashboard

dashboard = lesson04_dashboard()

# %% [markdown]
# ## Summary
#
# - Per weight byte, decode intensity ≈ batch; per byte of all traffic it bends towards a ceiling
#   set by each sequence's private KV cache and state. Long contexts can keep decode memory-bound
#   at any batch.
# - Batching multiplies decode throughput cheaply while the weights dominate the bytes; it gets
#   dearer as each sequence's KV cache and state rival them. Prefill is already on the flat roof
#   and barely gains.
# - Where no batch reaches the ridge (Qwen3.8-27B at every context here), there is no compute limit
#   to meet: capacity caps the batch, and with it how close throughput gets to its limit.
# - MoE: small-batch decode reads only the routed experts, so batching recovers less.
#
# **A question to leave with.** If you halve the KV cache (FP8 KV, or fewer KV heads), which of the
# three curves above moves, and by how much?
#
# **Interview questions this lesson prepares you for**
#
# - "Why does batching help decode more than prefill, in roofline terms?"
# - "What is the critical batch size for decode on an H100, and why might it never be reached?"
# - "What limits the batch size in practice?"
# - "How does a mixture-of-experts model change the economics of batching?"
#
# The exercises for this lesson are in `exercises/04_batching.ipynb`.
