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
# # Lesson 11 — Many chips: tensor, expert and pipeline parallel, and the interconnect roof
#
# A 70B model does not fit one H100, and a 235B mixture-of-experts model does not fit one H200.
# Everything people run at scale is split across chips, and the roofline gains a third
# roof: the **interconnect**, the link the chips talk over.
#
# **By the end of this lesson you can**
#
# 1. say what tensor parallelism splits, what it replicates, and what it sends: two all-reduces per
#    layer, each chip sending 2(n − 1)/n of the message by a ring, or each byte once where the
#    switch adds the partial sums itself, at the link's **per-direction** bandwidth;
# 2. give a step on several chips two figures per chip, the **lower bound** and the **estimate**,
#    name the assumed per-call latency inside the estimate and compute its share;
# 3. compute the interconnect intensity (FLOPs per byte sent) and the third ridge (peak ÷ link
#    bandwidth), and split a step's communication into its latency and bandwidth terms;
# 4. find where tensor parallelism stops helping: the batch, prompt or split size at which the
#    communication takes longer than the compute and the memory traffic;
# 5. compare 70B on two H100s, one H200 and one H100 with FP8 weights; split an MoE by experts;
#    say why pipeline parallelism does not cut one sequence's latency;
# 6. set a published multi-chip measurement against both figures and state hypotheses for the gap.
#
# **Conventions.** With more than one chip, every FLOP, byte and second below is **per chip** (the
# busiest chip's), and the tables say so; tokens per second count all chips together. Every step
# gets two figures (lesson 3):
#
# - the **lower bound** (`time_lower_bound_s`): compulsory bytes only; the least bytes any
#   algorithm the link supports sends (each byte once where the switch reduces in the switch, the
#   ring elsewhere); communication overlapped with compute and memory; no per-call latency. No
#   implementation with that split, those formats and those kernels' FLOPs beats it.
# - the **estimate** (`time_estimate_s`): operators unfused, collectives by the ring, a fixed
#   latency per collective call that is **assumed**, and communication **not overlapped** with
#   compute unless a row says "overlapped": a chip's step takes max(compute, memory) +
#   communication. Overlap is the estimate's best case, max of the three.
#
# The rates follow: an upper bound and an estimate. The rules are in the docstring of
# `roofline_lessons.core.parallel`.

# %%
# %matplotlib inline
import math

import numpy as np

from roofline_lessons import get_model, get_part, place
from roofline_lessons.core.parallel import (Parallelism, bubble_fraction, max_batch_that_fits_on_chips,
                                            remote_groups_per_token, steady_state_idle_fraction)
from roofline_lessons.core.units import binary, count, duration, num, percent, si
from roofline_lessons.topics.many_chips import (Setup, activation_message_bytes, comm_crossover, comm_split,
                                                compare_setups, expert_parallel_compare, gpt_fast_70b,
                                                gpt_fast_empirical_bandwidth_bytes_per_s, latency_sensitivity,
                                                link_ridges, NVLS_ALGBW_PART, nvls_all_reduce_measurement,
                                                one_all_reduce, pipeline_vs_tensor,
                                                seventy_b_setups, tensor_parallel_sweep, three_roofs)
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.viz.plots import interconnect_roofline_chart, time_breakdown_chart

MODEL, PART = "llama-3.1-70b", "h100-sxm"
CONTEXT = 4096  # tokens cached before each decode step
PREFILL_TOKENS = 1024  # a prompt for the prefill examples
VLLM_UTILIZATION = 0.9  # vLLM's long-standing default gpu_memory_utilization: the share of memory it lets itself use
model, part = get_model(MODEL), get_part(PART)


def fits_at(row, utilization):
    """Largest batch whose weights + KV cache fit every chip of a SplitRow's setup at ``utilization``."""
    p, w = row.placement, row.placement.workload
    return max_batch_that_fits_on_chips(p.model, p.part, w.cached_tokens_after, p.parallelism,
                                        weights_dtype=w.weights_dtype, kv_dtype=w.kv_dtype,
                                        memory_utilization=utilization)

# %% [markdown]
# ## 1. Why split
#
# A decode step must hold the weights and the KV cache in the chip's memory (lesson 2). For
# Llama-3.1-70B in BF16 on one H100 SXM:

# %%
single = place(MODEL, PART, phase="decode", context_tokens=CONTEXT)
show_table(["", "bytes"],
           [["weights (BF16)", binary(single.footprint.weight_bytes)],
            [f"KV cache, one sequence of {count(CONTEXT + 1)} tokens", binary(single.footprint.kv_cache_bytes)],
            ["memory required", binary(single.memory_required_bytes)],
            [f"{part.name} capacity", binary(part.memory_capacity_bytes)]])
assert not single.fits_in_memory  # the lesson's premise

# %% jupyter={"source_hidden": true}
chips_for_weights = math.ceil(single.footprint.weight_bytes / part.memory_capacity_bytes)
md(f"The weights alone are {binary(single.footprint.weight_bytes)}, more than the chip's "
   f"{binary(part.memory_capacity_bytes)}: at least **{count(chips_for_weights)} chips** must share them, before any "
   f"KV cache. (Capacity is binary: for the {part.name} here, the vendor's \"{num(part.memory_capacity_bytes / 2**30)} "
   f"GB\" of HBM is {binary(part.memory_capacity_bytes)}; check each part, since some vendors' \"GB\" are not.) "
   "Three ways to split: **tensor parallel** "
   "(every layer split across the chips), **expert parallel** (an MoE's experts spread over them) and **pipeline "
   "parallel** (the layers cut into consecutive stages).")

# %% jupyter={"source_hidden": true}
md(f"**Question.** An H200 holds {binary(get_part('h200').memory_capacity_bytes)}. Does {model.name} fit one, and "
   f"with how many sequences of {count(CONTEXT)} tokens?")

# %% jupyter={"source_hidden": true}
on_h200 = compare_setups(MODEL, seventy_b_setups(), context_tokens=CONTEXT)[1]
h200_vllm = fits_at(on_h200, VLLM_UTILIZATION)
md("<details><summary>Answer</summary>\n\n"
   + (f"Only just: one sequence needs {binary(on_h200.memory_per_chip_bytes)} of its "
      f"{binary(on_h200.capacity_per_chip_bytes)}, and at most **{count(on_h200.max_batch)} sequences** fit if every "
      "byte of the chip may hold weights and KV cache, with nothing kept back for activations or fragmentation. "
      f"A server such as vLLM uses {percent(VLLM_UTILIZATION, 0)} of the memory by default "
      f"({binary(VLLM_UTILIZATION * on_h200.capacity_per_chip_bytes)}), less than the weights' "
      f"{binary(on_h200.placement.footprint.weight_bytes)}: **{count(h200_vllm)} sequences** there. Section 6 "
      "prices it."
      if on_h200.fits else
      f"No: it needs {binary(on_h200.memory_per_chip_bytes)} of {binary(on_h200.capacity_per_chip_bytes)}.")
   + "\n\n</details>")

# %% [markdown]
# ## 2. Tensor parallel
#
# **Tensor parallelism** (Megatron-LM's scheme) splits every layer n ways. The attention heads are
# divided among the chips, and so are the MLP's columns: each chip holds and reads **1/n of those
# weights** and does 1/n of their FLOPs. The embedding and the lm_head are split over the
# vocabulary. Some things are **replicated**: the norms, the residual adds and (in an MoE) the
# router run whole on every chip, and the KV cache is split by **KV head**, so past n = the
# number of KV heads each KV head is stored on several chips.
#
# Per chip, Llama-3.1-70B decode at batch 1 with 4,096 tokens cached, on H100 SXMs joined by NVLink:

# %%
tp = tensor_parallel_sweep(MODEL, PART, context_tokens=CONTEXT)
show_table(["split", "weights per chip", "KV cache per chip", "memory per chip",
            f"fits {binary(part.memory_capacity_bytes)}",
            "largest batch that fits (all chips)"],
           [[r.parallelism.label, binary(r.placement.footprint.weight_bytes),
             binary(r.placement.footprint.kv_cache_bytes), binary(r.memory_per_chip_bytes),
             "yes" if r.fits else "**no**", count(r.max_batch)] for r in tp])

# %% [markdown]
# Splitting the weights splits the time to read them. Each chip reads its share in parallel, so the
# memory time per chip falls as 1/n — but the chips must now talk. Both figures, per chip (the
# estimate's terms first, then how much of the estimate is assumed latency, then the bound):

# %%
show_table(["split", "compute, per chip (estimate)", "memory, per chip (estimate)",
            "communication, per chip (estimate: ring + assumed latency)", "estimate, per chip",
            "of which assumed latency", "lower bound, per chip", "estimate's roof",
            "tokens/s (all chips): estimate", "tokens/s (all chips): upper bound"],
           [[r.parallelism.label, duration(r.compute_s), duration(r.memory_s), duration(r.comm_s), duration(r.step_s),
             f"{duration(r.latency_s)} ({percent(r.latency_share, 0)})", duration(r.lower_bound_s), r.bound,
             num(r.tokens_per_s), num(r.tokens_per_s_upper_bound)] for r in tp])
one, two, last = tp[0], tp[1], tp[-1]
assert two.step_s < one.step_s and last.step_s < two.step_s  # more chips, shorter decode step
assert last.step_s > one.step_s / last.chips  # ... but the estimate is less than n times shorter
assert math.isclose(last.comm_s, two.comm_s, rel_tol=0.1)  # the estimate's communication barely changes with n
assert all(r.lower_bound_s <= r.step_s for r in tp)
assert two.latency_share < last.latency_share  # the same latency is a larger share of a shorter step
assert last.comm_lower_bound_s < 0.01 * last.lower_bound_s  # the bound's bytes at batch 1: a sliver of its step

# %% jupyter={"source_hidden": true}
bound_speedup, estimate_speedup = one.lower_bound_s / last.lower_bound_s, one.step_s / last.step_s
md(f"From one chip to {count(last.chips)}, the memory time per chip falls {num(one.memory_s / last.memory_s)}× "
   f"({duration(one.memory_s)} → {duration(last.memory_s)}). The **lower bound** falls "
   f"{num(bound_speedup)}× ({duration(one.lower_bound_s)} → {duration(last.lower_bound_s)}); the **estimate** only "
   f"{num(estimate_speedup)}× ({duration(one.step_s)} → {duration(last.step_s)}). The difference is the "
   f"communication the estimate adds on top, about {duration(last.comm_s)} per chip at every n in this table, and "
   f"{duration(last.latency_s)} of it is the assumed latency: {percent(last.latency_share, 0)} of the "
   f"{last.parallelism.label} estimate. It barely changes with n because the estimate charges one fixed latency "
   "per call whatever n — an assumption examined below. The bound counts no latency, and its bytes at batch 1 "
   "take microseconds, so it "
   + ("keeps falling almost as 1/n" if bound_speedup > 0.9 * last.chips else "falls more slowly than 1/n")
   + ". (The one-chip row is a what-if: it does not fit.)")

# %% [markdown]
# ### What each chip sends: two all-reduces per layer
#
# A column-split matmul followed by a row-split one (attention's Q/K/V then its output projection;
# the MLP's gate/up then its down projection) leaves every chip with a **partial sum** of the
# layer's output. Adding them up across chips is an **all-reduce** of the activations (tokens ×
# hidden × 2 bytes), twice per layer: after the attention block and after the MLP. (Plus one after
# the vocab-split embedding and an all-gather of the logits.)
#
# A **ring all-reduce** does it in 2(n − 1) hops: a reduce-scatter, then an all-gather. Each chip
# sends — and receives — **2(n − 1)/n of the message**: 1 × at n = 2, rising towards but never
# more than 2 × as n grows. And it sends at the link's **per-direction** bandwidth: vendors quote
# NVLink and PCIe as the *bidirectional* total (both directions added), twice what one chip can
# push out in one direction. Using the headline is the classic error — it makes communication look
# twice as fast. One all-reduce of a 1,024-token prefill's activations on H100 SXMs, by the
# estimate's rules (ring, one assumed latency per call), both ways:

# %%
message = activation_message_bytes(MODEL, PREFILL_TOKENS)
reduces = [one_all_reduce(PART, n, message) for n in (2, 4, 8)]
show_table(["chips n", "2(n − 1)/n", "bytes each chip sends (ring)", "estimate at the per-direction rate",
            "at the bidirectional headline (wrong)"],
           [[count(a.tensor), num(a.ring_factor), si(a.sent_bytes, "B"), duration(a.time_s),
             duration(a.headline_time_s)] for a in reduces])
assert all(a.headline_time_s < a.time_s for a in reduces)  # the headline always flatters

# %% jupyter={"source_hidden": true}
link = reduces[-1].link
md(f"The message is {si(message, 'B')} ({count(PREFILL_TOKENS)} tokens × {count(model.hidden_size)} × 2 bytes). The "
   f"{link.name} moves {si(link.per_direction_bytes_per_s, 'B/s')} per direction; its datasheet says "
   f"{si(link.bidirectional_bytes_per_s, 'B/s')}, both directions added. Each time also holds one call's fixed "
   f"cost of {duration(link.latency_s)}, assumed (below).")

# %% [markdown]
# ### Ring or in-switch: the least bytes
#
# The ring is not the least traffic everywhere. The NVSwitch of NVLink 4 and later (H100, H200,
# B200, GB200) can add the chips' partial sums **inside the switch** (NVLink SHARP; NCCL calls the
# algorithm NVLS): each chip sends its whole message to the switch once and receives the sum once.
# That is **1 × the message** per chip, against the ring's 2(n − 1)/n — the same at n = 2, fewer
# bytes beyond. The lower bound counts the least bytes the link allows; the estimate keeps the
# ring. On parts whose switch does not reduce (A100's NVLink 3, PCIe, the L4) both count the ring.

# %%
show_table(["chips n", "ring: share sent", "least: share sent", "ring: most algorithm bandwidth",
            "least: most algorithm bandwidth", "bound: bytes ÷ bandwidth, no latency"],
           [[count(a.tensor), num(a.ring_factor), num(a.least_factor), si(a.ring_algorithm_bytes_per_s, "B/s"),
             si(a.least_algorithm_bytes_per_s, "B/s"), duration(a.bound_time_s)] for a in reduces])
assert all(a.in_switch for a in reduces) and reduces[0].least_factor == reduces[0].ring_factor  # same at n = 2
measured = nvls_all_reduce_measurement()  # from the catalog, with its conditions and source
nvls = one_all_reduce(NVLS_ALGBW_PART, measured.chips, message)
assert nvls.ring_algorithm_bytes_per_s < measured.value <= nvls.least_algorithm_bytes_per_s

# %% jupyter={"source_hidden": true}
md(f"*Algorithm bandwidth* is what nccl-tests prints as algbw: the message ÷ the all-reduce's time. A ring can "
   f"reach at most the per-direction rate ÷ 2(n − 1)/n: {si(nvls.link.per_direction_bytes_per_s, 'B/s')} ÷ "
   f"{num(nvls.ring_factor)} = **{si(nvls.ring_algorithm_bytes_per_s, 'B/s')}** on {count(measured.chips)} H100s. "
   f"An NCCL maintainer gives about **{si(measured.value, 'B/s')}** for NVLS on {count(measured.chips)} "
   f"H100s ({measured.source}, {measured.date}; {measured.conditions}). That is above what any ring can do, so the ring cannot be a lower bound there. "
   f"It is below the in-switch limit of {si(nvls.least_algorithm_bytes_per_s, 'B/s')}, as a "
   "measurement under a bound must be (the same thread puts part of the gap down to NCCL's protocol overhead).")

# %% [markdown]
# ### Latency against bandwidth
#
# Every collective call also pays a fixed cost — launching it, synchronising the chips, the hops —
# whatever its size. The catalog gives each link a per-call latency, and marks it as an
# **assumption**: an order of magnitude (NCCL's small-message all-reduce inside one 8-GPU node), not
# a measurement of your system. **The estimate's rule: one fixed cost per call, the same whatever
# the number of chips n** — a one-shot, switch-style model. That is itself an assumption: a
# textbook ring pays 2(n − 1) hop latencies (NCCL's low-latency protocols, LL and LL128, cut the
# cost of each hop, not the number of hops). NCCL's tree is a chain inside a node: its latency is
# linear in the GPUs per node and logarithmic only in the number of nodes (NCCL's own cost model,
# `ncclTopoTuneModel` in its `src/graph/tuning.cc`, charges a tree all-reduce
# 2 × ((GPUs per node − 1) × one intra-node hop + log2(nodes) × one inter-node hop)). NVLS, the
# reduction in the switch, and custom one-shot all-reduce kernels (a few µs) stay roughly flat in
# n. So every time that includes it is an **estimate at the assumed latency**. The lower bound
# counts no latency at all (no physical law fixes one), only the least bytes. The estimate's
# communication is the calls times the latency, plus the ring's bytes divided by the per-direction
# bandwidth:

# %%
steps = [("decode, batch 1, TP 2", place(MODEL, PART, phase="decode", context_tokens=CONTEXT,
                                          parallelism=Parallelism(tensor=2))),
         ("decode, batch 64, TP 8", place(MODEL, PART, phase="decode", batch=64, context_tokens=CONTEXT,
                                          parallelism=Parallelism(tensor=8))),
         (f"prefill of {count(PREFILL_TOKENS)} tokens, TP 8", place(MODEL, PART, phase="prefill",
                                                                    prompt_tokens=PREFILL_TOKENS,
                                                                    parallelism=Parallelism(tensor=8)))]
splits = [(name, comm_split(p)) for name, p in steps]
show_table(["step", "calls", "calls × latency (assumed)", "ring bytes ÷ bandwidth",
            "communication, per chip (estimate)", "latency's share of it",
            "communication, per chip (lower bound: least bytes, no latency)"],
           [[name, count(s.calls), duration(s.latency_s), duration(s.bandwidth_s), duration(s.total_s),
             percent(s.latency_share, 1), duration(s.bound_s)] for name, s in splits])
assert splits[0][1].latency_share > 0.5 > splits[-1][1].latency_share  # batch 1: latency; prefill: bandwidth
assert all(s.bound_s < s.bandwidth_s for _, s in splits[1:])  # TP 8 in the switch: fewer bytes than the ring

# %% jupyter={"source_hidden": true}
b1 = splits[0][1]
md(f"At batch 1 the {count(b1.calls)} calls cost {duration(b1.latency_s)} at {duration(b1.latency_per_call_s)} "
   f"each — the catalog's figure, with latency_basis = \"{b1.latency_basis}\" — against "
   f"{duration(b1.bandwidth_s)} for the bytes. By the estimate, a batch-1 decode's all-reduces are "
   "**latency-bound**: the link's bandwidth hardly matters, the number of calls and their fixed cost do. The lower "
   f"bound's communication is {duration(b1.bound_s)}: what the estimate charges here is almost all an assumption. "
   "Replace the assumed latency with your own small-message measurement (nccl-tests) before quoting such a figure.")

# %% jupyter={"source_hidden": true}
md(f"**Question.** Going from TP 2 to TP 8, each chip's share of every message grows from 2(n − 1)/n = "
   f"{num(reduces[0].ring_factor)} to {num(reduces[-1].ring_factor)} by the ring. Why, then, did the estimate's "
   "communication per chip in the first table barely change? What would change that?")

# %% jupyter={"source_hidden": true}
md("<details><summary>Answer</summary>\n\nBecause at batch 1 the estimate's communication is almost all latency: "
   f"the number of calls, {count(b1.calls)}, does not depend on n, and the estimate charges each call the same "
   f"assumed cost at any n. The bytes grow {num(reduces[-1].ring_factor / reduces[0].ring_factor)}×, but at TP 2 they "
   f"were only {percent(1 - b1.latency_share, 1)} of the time. Whether a real all-reduce's latency grows with n "
   "depends on the algorithm: a ring pays 2(n − 1) hops (LL and LL128 make each hop cheaper, not fewer), and "
   "NCCL's tree is a chain inside a node, linear in the GPUs per node; NVLS in the switch and one-shot kernels stay "
   "roughly flat. With a ring or the tree inside a node the communication would rise with n on real hardware; with "
   "NVLS or a one-shot kernel it would stay near the estimate's flat line. The table below shows how much the "
   "conclusion rests on the per-call figure.\n\n</details>")

# %% [markdown]
# How sensitive is the tensor-parallel sweep to that assumed latency? The same decode step per chip
# at four per-call latencies. The estimate moves with the latency; the lower bound, in the last
# row, counts no latency and does not move. A latency of 0 still leaves the estimate above the
# bound: the ring's bytes added after the compute, and the unfused activations.

# %%
LATENCIES_S = (0.0, 5e-6, 10e-6, 20e-6)
TP_SIZES = tuple(r.parallelism.tensor for r in tp if r.chips > 1)
sens = latency_sensitivity(MODEL, PART, TP_SIZES, LATENCIES_S, context_tokens=CONTEXT)
show_table(["per-call latency"] + [f"TP {count(t)}, per chip" for t in TP_SIZES]
           + [f"TP {count(TP_SIZES[-1])} speed-up over 1 chip"],
           [[f"estimate at {duration(lat)}"] + [duration(r.step_s) for r in sens if r.latency_s == lat]
            + [f"{num([r for r in sens if r.latency_s == lat][-1].speedup)}×"] for lat in LATENCIES_S]
           + [["lower bound (any latency)"] + [duration(r.lower_bound_s) for r in sens[:len(TP_SIZES)]]
              + [f"{num(sens[len(TP_SIZES) - 1].lower_bound_speedup)}×"]])
assert all(a.step_s < b.step_s for a, b in zip(sens, sens[len(TP_SIZES):]))  # more latency, slower estimates
assert all(math.isclose(a.lower_bound_s, b.lower_bound_s) for a, b in zip(sens, sens[len(TP_SIZES):]))  # bound fixed
assert all(r.lower_bound_s < r.step_s for r in sens)

# %% jupyter={"source_hidden": true}
tp_last = [r for r in sens if r.tensor == TP_SIZES[-1]]
md(f"With free calls, the estimate puts TP {count(TP_SIZES[-1])} at {num(tp_last[0].speedup)}× one chip; at "
   f"{duration(LATENCIES_S[-1])} per call, {num(tp_last[-1].speedup)}×. The lower bound's speed-up, "
   f"{num(tp_last[0].lower_bound_speedup)}×, is the same at every latency: no implementation of TP "
   f"{count(TP_SIZES[-1])} on these chips, in BF16 and with this split, can be faster than "
   f"{duration(tp_last[0].lower_bound_s)} per step. "
   + ("The estimate's diminishing returns — more chips, less gained per chip — are the assumed latency's doing: "
      "with free calls they all but vanish. How much you lose is what your own all-reduce costs per call."
      if tp_last[0].speedup > 0.95 * TP_SIZES[-1] else
      "The estimate's diminishing returns hold at every latency; their size rests on the per-call figure."))

# %% [markdown]
# ### What is replicated: the KV cache past the KV heads
#
# Grouped-query attention keeps few KV heads. Tensor parallelism splits the KV cache by KV head, so
# it divides the cache by n only up to the number of KV heads; past that, each KV head is **stored
# on several chips**.

# %% jupyter={"source_hidden": true}
MOE = "qwen3-235b-a22b"
moe = get_model(MOE)
KV_BATCH, KV_CONTEXT = 16, 8192
md(f"{model.name} has {count(model.num_key_value_heads)} KV heads, {moe.name} {count(moe.num_key_value_heads)}. "
   f"{moe.name}, {count(KV_BATCH)} sequences of {count(KV_CONTEXT)} tokens, on H200s:")

# %%
kv_rows = [place(MOE, "h200", phase="decode", batch=KV_BATCH, context_tokens=KV_CONTEXT,
                 parallelism=Parallelism(tensor=t)) for t in (1, 2, 4, 8)]
whole_kv = kv_rows[0].footprint.kv_cache_bytes
show_table(["split", "KV cache per chip", "whole cache ÷ n (wrong past the KV heads)", "copies of each KV head"],
           [[p.parallelism.label, binary(p.footprint.kv_cache_bytes), binary(whole_kv / p.chips),
             count(max(1, p.chips // moe.num_key_value_heads))] for p in kv_rows])
assert kv_rows[-1].footprint.kv_cache_bytes == kv_rows[-2].footprint.kv_cache_bytes  # TP 8 stores what TP 4 does

# %% jupyter={"source_hidden": true}
md(f"The package says so when it happens: *{kv_rows[-1].warnings[0]}*. A capacity estimate that divides the cache "
   "by n past the KV heads overstates how many sequences fit.")

# %% [markdown]
# ## 3. The interconnect roof: a third ridge
#
# Lesson 1's roofline compares FLOPs with bytes from memory. Split over chips, a step also moves
# bytes over the link, so it gets a second intensity and a third roof:
#
# - **interconnect intensity** = FLOPs per chip ÷ bytes that chip sends (FLOP/byte);
# - **the third ridge** = peak FLOP/s ÷ the link's per-direction bandwidth.
#
# Left of that ridge, the link cannot deliver the bytes as fast as the chip does the FLOPs. In
# tensor parallelism both the FLOPs and the bytes sent grow with the tokens, so the interconnect
# intensity changes little with the batch or the prompt (attention's FLOPs add a little at long
# prompts). Per token, a chip does 2 FLOPs per parameter ÷ n and, by the ring, sends 2
# all-reduces × layers × 2(n − 1)/n × hidden × 2 bytes: the intensity is about parameters ÷ (4 ×
# layers × hidden × (n − 1)). This section counts the ring's bytes, as the estimate does; where
# the switch reduces, a chip sends fewer bytes and its intensity is higher. The ridges, for eight
# chips of each part:

# %%
ridges = link_ridges(["h100-sxm", "b200", "a100-80gb", "h100-pcie", "l4"], chips=8)
show_table(["part (8 chips)", "link used", "per direction", "bidirectional headline", "HBM ridge",
            "link ridge (per direction)", "link ridge with the headline (wrong)"],
           [[r.part_id, r.link.name, si(r.link.per_direction_bytes_per_s, "B/s"),
             si(r.link.bidirectional_bytes_per_s, "B/s"), num(r.hbm_ridge), num(r.link_ridge), num(r.headline_ridge)]
            for r in ridges])
# the TP 8 prefill's FLOPs per byte sent lie between NVLink's ridge and the H100 PCIe's (the claims below)
assert ridges[0].link_ridge < three_roofs(steps[-1][1]).link_intensity < ridges[3].link_ridge

# %% jupyter={"source_hidden": true}
prefill8 = steps[-1][1]
roofs8 = three_roofs(prefill8)
formula_intensity = model.parameter_count() / (4 * model.num_hidden_layers * model.hidden_size * (8 - 1))
pcie_ridge, l4_ridge = (next(r for r in ridges if r.part_id == pid) for pid in ("h100-pcie", "l4"))
md(f"{model.name}'s prefill under TP 8 does **{num(roofs8.link_intensity)} FLOPs per byte sent**, per chip (the "
   f"formula above gives {num(formula_intensity)}). That is "
   + ("right of" if not roofs8.link_limits_compute else "left of")
   + f" the H100 SXM's NVLink ridge ({num(roofs8.link_ridge)})"
   + (": the link's bytes never outlast the compute — but the estimate, not overlapping them, adds them on "
      f"top: {percent(prefill8.comm_time_s / prefill8.time_estimate_s, 0)} of its "
      f"{duration(prefill8.time_estimate_s)}. The lower bound overlaps them and sends each byte once through the "
      f"switch: {duration(prefill8.time_lower_bound_s)}, {prefill8.lower_bound_roof}-bound. "
      if not roofs8.link_limits_compute else ". ")
   + f"Eight H100 PCIe cards talk over PCIe past their pairwise bridges: their ridge of {num(pcie_ridge.link_ridge)} is "
   f"{num(pcie_ridge.link_ridge / roofs8.link_intensity)}× the step's intensity, so there the link takes longer than "
   f"the compute. Eight L4s have nothing but PCIe Gen4: a ridge of {num(l4_ridge.link_ridge)}, within "
   f"{percent(abs(l4_ridge.link_ridge / roofs8.link_intensity - 1), 0)} of the step's intensity — neck and neck. "
   "(All ridges here use the dense BF16 peak. The last column, \"link ridge with the headline (wrong)\", divides by the "
   "bidirectional figure and so shows half the true link ridge.)")

# %% [markdown]
# On the chart, per chip of an H100 SXM under TP 8: each step is a circle at its FLOPs per HBM
# byte and a triangle at its FLOPs per byte sent, both at the FLOP/s one chip achieves over the
# whole step (FLOPs ÷ step time).

# %%
decode8 = place(MODEL, PART, phase="decode", context_tokens=CONTEXT, parallelism=Parallelism(tensor=8))
interconnect_roofline_chart([decode8, prefill8],
                            labels=["decode, batch 1", f"prefill, {count(PREFILL_TOKENS)} tokens"],
                            title=f"{model.name} on 8 × H100 SXM (TP 8): three roofs, per chip")

# %% jupyter={"source_hidden": true}
dec_roofs = three_roofs(decode8)
md(f"The decode step's triangle sits at {num(dec_roofs.link_intensity)} FLOP/byte, "
   + ("right of" if not dec_roofs.link_limits_compute else "left of") + " the link ridge, yet in the estimate its "
   f"communication takes {duration(decode8.comm_time_s)} of its {duration(decode8.time_estimate_s)}: the roof "
   "prices bytes, and a batch-1 decode's communication in the estimate is almost all assumed per-call latency, "
   "which no roof shows (and the lower bound does not count: "
   f"{duration(decode8.comm_lower_bound_s)} of communication, a step of {duration(decode8.time_lower_bound_s)}). "
   "Read the link roof for bandwidth, and count the calls for latency.")

# %% [markdown]
# ## 4. Where tensor parallelism helps, and where the all-reduce takes over
#
# ### Decode at batch 1: a floor in the estimate, not in the bound
#
# Tensor parallelism cuts a batch-1 decode step because the step is memory-bound and each chip
# reads 1/n of the weights. The estimate's communication does not shrink with n: its calls do not.

# %% jupyter={"source_hidden": true}
rack_link = get_part("gb200").scale_up_link
md(f"A GB200 NVL72 rack joins {count(rack_link.max_chips)} GPUs in one {rack_link.name} domain, so the split can go "
   f"as far as {model.name}'s {count(model.num_attention_heads)} attention heads allow:")

# %%
rack = tensor_parallel_sweep(MODEL, "gb200", context_tokens=CONTEXT)
show_table(["split", "memory, per chip (estimate)", "communication, per chip (estimate)", "estimate, per chip",
            "of which assumed latency", "estimate's roof", "estimate: speed-up over 1 chip", "lower bound, per chip",
            "lower bound's roof", "lower bound: speed-up over 1 chip"],
           [[r.parallelism.label, duration(r.memory_s), duration(r.comm_s), duration(r.step_s),
             f"{duration(r.latency_s)} ({percent(r.latency_share, 0)})", r.bound,
             f"{num(rack[0].step_s / r.step_s)}×", duration(r.lower_bound_s), r.lower_bound_roof,
             f"{num(rack[0].lower_bound_s / r.lower_bound_s)}×"] for r in rack])
takeover = next(r for r in rack if r.bound == "interconnect")
assert rack[-1].bound == "interconnect" and rack[-1].step_s > rack[-1].comm_s  # the estimate's floor: communication
assert all(r.lower_bound_roof == "memory" for r in rack)  # the bound has no such floor

# %% jupyter={"source_hidden": true}
top_split = rack[-1]
top_comm = comm_split(top_split.placement)
md(f"By the **estimate**, from **{takeover.parallelism.label}** on the communication ({duration(takeover.comm_s)} "
   f"per chip) outlasts the memory time: the step is \"interconnect-bound\", and each doubling of the chips buys "
   f"less. At {top_split.parallelism.label}, {count(top_split.chips)} GPUs give "
   f"{num(rack[0].step_s / top_split.step_s)}× one GPU's speed. Past {count(model.num_key_value_heads)} chips the KV "
   f"cache is also replicated (section 2). But look at what that communication is: "
   f"{percent(top_comm.latency_share, 1)} of it is per-call latency ({count(top_comm.calls)} calls × "
   f"{duration(top_comm.latency_per_call_s)}, assumed), not bytes — {percent(top_split.latency_share, 0)} of the "
   f"whole estimate. The **lower bound** has no such floor: it stays memory-bound at every n, "
   f"{duration(top_split.lower_bound_s)} at {top_split.parallelism.label}, "
   f"{num(rack[0].lower_bound_s / top_split.lower_bound_s)}× one GPU's. The floor is the **assumed per-call "
   "latency**, not the link's bandwidth. How it moves with the latency:")

# %%
rack_sizes = (8, top_split.parallelism.tensor)
rack_sens = latency_sensitivity(MODEL, "gb200", rack_sizes, LATENCIES_S, context_tokens=CONTEXT)
show_table(["per-call latency"] + [f"TP {count(t)}, per chip, and the roof that binds" for t in rack_sizes],
           [[f"estimate at {duration(lat)}"] + [f"{duration(r.step_s)}, {r.bound}" for r in rack_sens
                                                 if r.latency_s == lat] for lat in LATENCIES_S]
           + [["lower bound (any latency)"] + [f"{duration(r.lower_bound_s)}, {r.lower_bound_roof}"
                                               for r in rack_sens[:len(rack_sizes)]]])
assert rack_sens[1].bound == "memory"  # with free calls TP 64's estimate is memory-bound: the floor is the latency

# %% jupyter={"source_hidden": true}
md(f"With free calls, the estimate of {top_split.parallelism.label} is memory-bound at "
   f"{duration(rack_sens[1].step_s)}; at {duration(LATENCIES_S[-1])} per call it is {duration(rack_sens[-1].step_s)}. "
   f"The lower bound, {duration(rack_sens[1].lower_bound_s)}, does not move. Measure the small-message all-reduce "
   "on the rack (nccl-tests, or the serving engine's own kernels) before you size one by the estimate.")

# %% [markdown]
# ### Prefill and large batches: bandwidth
#
# A prefill or a large batch sends many bytes per call, so bandwidth takes over from latency. Since
# the interconnect intensity changes little with the tokens, what decides is the part and n (the
# intensity falls as 1/(n − 1)): is the link ridge below the step's interconnect intensity
# (section 3)? The smallest prompt (prefill, batch 1) and batch (decode, 512 tokens cached) at
# which the communication outlasts max(compute, memory), for TP 8, searched over whole numbers, by
# each figure's own terms: the estimate's (ring bytes and the assumed latency, against unfused
# compute and memory) and the lower bound's (the least bytes, against compulsory traffic):

# %%
SHORT_CONTEXT = 512


def largest_that_fits(c, start=None, stop=None):
    """The largest value from ``start`` to ``stop`` (default: the crossover's stretch) whose step fits the chips
    (weights + KV), None if none does."""
    values = np.arange(c.first if start is None else start, (c.last if stop is None else stop) + 1)
    fields = ({"phase": "decode", "batch": values, "context_tokens": SHORT_CONTEXT} if c.phase == "decode"
              else {"phase": "prefill", "prompt_tokens": values})
    fits = np.asarray(place(MODEL, c.part_id, parallelism=c.parallelism, **fields).fits_in_memory, dtype=bool)
    n_fit = int(fits.sum())
    assert fits[:n_fit].all() and not fits[n_fit:].any()  # memory only grows along the stretch
    return int(values[n_fit - 1]) if n_fit else None


def stretch(c):
    if not c.found:
        top_fit = largest_that_fits(c, 1, c.searched_up_to)
        if top_fit is not None and top_fit < c.searched_up_to:
            return (f"none up to {count(c.searched_up_to)}; past {count(top_fit)} the step does not fit the "
                    "chips: a what-if")
        return f"none up to {count(c.searched_up_to)}"
    top_fit = largest_that_fits(c)
    if top_fit is None:
        return f"none that fits (only from {count(c.first)}, which does not fit the chips)"
    end = " (the end of the search)" if c.last == c.searched_up_to else ""
    if top_fit < c.last:
        return (f"{count(c.first)} to {count(top_fit)}, the largest that fits the chips; "
                f"{count(top_fit + 1)} to {count(c.last)}{end} do not fit: a what-if")
    return f"{count(c.first)} to {count(c.last)}{end}"


EIGHT = ("h100-sxm", "h100-pcie", "l4")
crossings = [(pid, comm_crossover(MODEL, pid, 8, phase="prefill"),
              comm_crossover(MODEL, pid, 8, phase="decode", context_tokens=SHORT_CONTEXT)) for pid in EIGHT]
bound_crossings = [(pid, comm_crossover(MODEL, pid, 8, phase="prefill", figure="bound"),
                    comm_crossover(MODEL, pid, 8, phase="decode", context_tokens=SHORT_CONTEXT, figure="bound"))
                   for pid in EIGHT]
show_table(["8 chips of", "link", "prefill: interconnect-bound for prompts of (tokens), estimate",
            "… lower bound", f"decode, {count(SHORT_CONTEXT)} cached: for batches of, estimate", "… lower bound"],
           [[pid, pre.placement.link.name, stretch(pre), stretch(pre_b), stretch(dec), stretch(dec_b)]
            for (pid, pre, dec), (_, pre_b, dec_b) in zip(crossings, bound_crossings)])
for _, pre, dec in crossings:
    for c in (pre, dec):
        assert not c.found or c.placement.bound == "interconnect"  # at the crossover the link binds
assert not crossings[0][1].found  # NVLink: the prefill never becomes interconnect-bound
l4_pre = crossings[-1][1]
for _, _, dec in crossings + bound_crossings:  # the decode stretches are capped by the package's capacity count
    if dec.found and largest_that_fits(dec) is not None:
        assert min(dec.last, largest_that_fits(dec)) == min(dec.last, max_batch_that_fits_on_chips(
            model, get_part(dec.part_id), SHORT_CONTEXT + 1, dec.parallelism))
assert largest_that_fits(crossings[1][2]) < crossings[1][2].last  # H100 PCIe: the stretch runs past what fits
assert l4_pre.found and l4_pre.last < l4_pre.searched_up_to  # on L4s the stretch ends (the question below)
assert not bound_crossings[0][1].found and all(pre.found for _, pre, _ in bound_crossings[1:])  # prefill: same verdicts
nvlink_pre = crossings[0][1]
prompts = np.arange(1, nvlink_pre.searched_up_to + 1)
nvlink_sweep = place(MODEL, nvlink_pre.part_id, phase="prefill", prompt_tokens=prompts,
                     parallelism=Parallelism(tensor=8))
est_compute_from = int(prompts[nvlink_sweep.bound == "compute"][0])
lb_compute_from = int(prompts[nvlink_sweep.lower_bound_roof == "compute"][0])
for roofs, start in ((nvlink_sweep.bound, est_compute_from), (nvlink_sweep.lower_bound_roof, lb_compute_from)):
    assert set(roofs[:start - 1]) == {"memory"} and set(roofs[start - 1:]) == {"compute"}  # never the link

# %% jupyter={"source_hidden": true}
pcie_dec = crossings[1][2]
one_seq = place(MODEL, "h100-pcie", phase="decode", batch=1, context_tokens=SHORT_CONTEXT,
                parallelism=Parallelism(tensor=8))
two_seq = place(MODEL, "h100-pcie", phase="decode", batch=2, context_tokens=SHORT_CONTEXT,
                parallelism=Parallelism(tensor=8))
md(f"On NVLink the prefill never becomes interconnect-bound, up to {count(nvlink_pre.searched_up_to)} tokens: it "
   f"is memory-bound for short prompts (up to {count(est_compute_from - 1)} tokens by the estimate, "
   f"{count(lb_compute_from - 1)} by the lower bound) and compute-bound for longer ones. Over PCIe — the H100 PCIe "
   "past its "
   "pairwise bridge, and the L4, which has no chip-to-chip link at all — the all-reduce takes over: from "
   f"{count(crossings[1][1].first)} tokens on the H100 PCIe, and "
   + (f"from {count(l4_pre.first)} to {count(l4_pre.last)} tokens on the L4 — but there it is neck and neck: the "
      f"step's FLOPs per byte sent sit within {percent(abs(l4_ridge.link_ridge / roofs8.link_intensity - 1), 0)} of "
      "the L4's link ridge, so the verdict rests on the datasheet peak and on PCIe Gen4's raw rate (real transfers "
      "reach less of it). " if l4_pre.found and l4_pre.last < l4_pre.searched_up_to else "on the L4 too. ")
   + (f"On the H100 PCIe a decode batch with a short context gets there too, from batch {count(pcie_dec.first)}: "
      f"each sequence adds {duration(two_seq.comm_time_s - one_seq.comm_time_s)} of link time per chip but only "
      f"{duration(two_seq.memory_time_s - one_seq.memory_time_s)} of HBM time, while the weight reads stay fixed. "
      if pcie_dec.found else "")
   + "Whether a prefill becomes interconnect-bound at all is the same by the lower bound: over PCIe there is no "
   "switch to reduce in, so the bound counts the ring's bytes too, and a prefill's calls are few. Where the stretches "
   "differ, the difference is the assumed latency and the unfused bytes the estimate counts; a verdict that only "
   "the estimate gives is an estimate's verdict.")

# %% [markdown]
# Per chip, a 1,024-token prefill on each of the three (not overlapped):

# %%
pre_steps = [place(MODEL, pid, phase="prefill", prompt_tokens=PREFILL_TOKENS, parallelism=Parallelism(tensor=8))
             for pid in EIGHT]
time_breakdown_chart(pre_steps, ["8 × H100 SXM", "8 × H100 PCIe", "8 × L4"],
                     title=f"{model.name}, prefill of {count(PREFILL_TOKENS)} tokens, TP 8: one step per chip")

# %% [markdown]
# **Question.** On eight L4s the prefill is interconnect-bound only for a stretch of prompt
# lengths. Why does it become compute-bound again for long prompts?

# %% jupyter={"source_hidden": true}
long_l4 = place(MODEL, "l4", phase="prefill", prompt_tokens=8 * PREFILL_TOKENS, parallelism=Parallelism(tensor=8))
md("<details><summary>Answer</summary>\n\nThe all-reduces grow linearly with the prompt, but attention's FLOPs grow "
   f"with its square. At {count(long_l4.workload.prompt_tokens)} tokens the estimate's compute is "
   f"{duration(long_l4.compute_time_s)} per chip against {duration(long_l4.comm_time_s)} of communication: "
   f"{long_l4.bound}-bound (the lower bound: {long_l4.lower_bound_roof}-bound). The interconnect intensity rises "
   f"with the prompt, to {num(long_l4.interconnect_intensity)} "
   f"FLOP/byte here against the L4's link ridge of {num(long_l4.interconnect_ridge_point_flop_per_byte)}; it "
   f"started only a little below that ridge ({num(three_roofs(pre_steps[-1]).link_intensity)} at "
   f"{count(PREFILL_TOKENS)} tokens), so a small rise is enough.\n\n</details>")

# %% [markdown]
# ## 5. Overlap: the best case
#
# By default the estimate adds the communication to the step: the next layer needs the all-reduced
# activations, so a plain implementation waits for them. Overlapping the two needs work that does not
# depend on the result (the next micro-batch, or a matmul cut into chunks that stream while the
# previous chunk is reduced). With one sequence the only such work is reading the next weights: a
# kernel can prefetch them into L2 while the sum is in flight, which is what the lower bound's
# overlap assumes; whether a given kernel does it is for measurement.
# `Parallelism(..., overlap_comm=True)` gives the estimate's **best case**: the step is the longest
# of compute, memory and communication — still with the ring's bytes, the assumed latency and
# unfused activations, so still above the lower bound, shown last.
# Per chip, not overlapped against overlapped:

# %%
def one_sequence_overlap(p):
    """What overlap needs at batch 1: the next weights read into L2 during each call, computed for ``p``."""
    s = comm_split(p)
    per_call_s = s.total_s / s.calls  # one call's time by the estimate (latency + ring bytes)
    bandwidth, l2 = p.part.memory_bandwidth_bytes_per_s, p.part.last_level_cache_bytes
    prefetch_bytes = per_call_s * bandwidth
    room = f"within the {binary(l2)} L2" if prefetch_bytes < l2 else f"more than the {binary(l2)} L2 holds"
    return (f"hard to reach with one sequence: only the next weights' reads, prefetched into L2, are independent "
            f"of the sum; one call's {duration(per_call_s)} × {si(bandwidth, 'B/s')} = {si(prefetch_bytes, 'B')}, "
            f"{room}"), prefetch_bytes < l2


prefill_fields = {"phase": "prefill", "prompt_tokens": PREFILL_TOKENS}
cases = [("decode, batch 1, 2 × H100 SXM", PART, 2, {"phase": "decode", "context_tokens": CONTEXT}),
         (f"prefill of {count(PREFILL_TOKENS)}, 8 × H100 PCIe", "h100-pcie", 8, prefill_fields),
         (f"prefill of {count(PREFILL_TOKENS)}, 8 × L4", "l4", 8, prefill_fields)]
overlap_rows = []
for name, pid, n, fields in cases:
    plain = place(MODEL, pid, parallelism=Parallelism(tensor=n), **fields)
    best = place(MODEL, pid, parallelism=Parallelism(tensor=n, overlap_comm=True), **fields)
    assert best.time_estimate_s <= plain.time_estimate_s
    if fields["phase"] == "decode" and plain.workload.batch == 1:
        note, fits_l2 = one_sequence_overlap(best)
        assert fits_l2  # the sentence says "within the L2"
        name += f" ({note})"
    assert best.time_lower_bound_s <= best.time_estimate_s
    overlap_rows.append([name, duration(plain.time_estimate_s), duration(best.time_estimate_s),
                         percent(1 - best.time_estimate_s / plain.time_estimate_s, 0), best.bound,
                         duration(best.time_lower_bound_s)])
show_table(["step", "estimate, not overlapped (default)", "estimate, overlapped (best case)", "saved",
            "overlapped estimate's roof", "lower bound"], overlap_rows)

# %% [markdown]
# Overlap hides the shorter of the two; it cannot hide a link that is the longest term. When the
# all-reduce takes over, overlap sets the step to the communication time, and only a faster link or
# fewer bytes (a smaller n, FP8 activations, reduction in the switch) goes further.

# %% [markdown]
# ## 6. Llama-3.1-70B: two H100s, one H200, or FP8 weights on one H100?
#
# Three ways to serve the 70B model at batch 1 with 4,096 tokens cached (per chip where there are
# two), plus the pair with overlap (its best case) and the pair with FP8 weights too, so that FP8 is
# compared like with like. "Largest batch" is given twice: with every byte of the chip usable, and
# at vLLM's long-standing default `gpu_memory_utilization` of 0.9.

# %%
setups = compare_setups(MODEL, seventy_b_setups() + (Setup("2 × H100 SXM, TP 2, FP8 weights", PART,
                                                           Parallelism(tensor=2), weights_dtype="fp8"),),
                        context_tokens=CONTEXT)
show_table(["setup", "chips", "memory per chip", "fits", "estimate, per chip", "of which assumed latency",
            "lower bound, per chip", "tokens/s (all chips): estimate", "… upper bound",
            "tokens/s per chip: estimate", "largest batch that fits (all chips), all memory",
            f"… at vLLM's {percent(VLLM_UTILIZATION, 0)}"],
           [[r.label + (f" — {one_sequence_overlap(r.placement)[0]}"
                        if r.parallelism.overlap_comm and r.placement.workload.batch == 1 else ""),
             count(r.chips), binary(r.memory_per_chip_bytes), "yes" if r.fits else "**no**",
             duration(r.step_s), duration(r.latency_s) if r.chips > 1 else "none", duration(r.lower_bound_s),
             num(r.tokens_per_s), num(r.tokens_per_s_upper_bound), num(r.tokens_per_s / r.chips), count(r.max_batch),
             count(fits_at(r, VLLM_UTILIZATION))] for r in setups])
tp2, h200, fp8, overlapped, tp2_fp8 = setups
assert all(r.bound == r.lower_bound_roof == "memory" for r in setups[:3])  # memory-bound by both figures
assert tp2.step_s < h200.step_s and fp8.step_s < h200.step_s  # both beat one H200 at batch 1
assert overlapped.step_s < tp2.step_s and tp2_fp8.step_s < tp2.step_s
assert fits_at(h200, VLLM_UTILIZATION) == 0 < h200.max_batch  # fits only with every byte in use
fp8_work = fp8.placement.workload
assert (fp8_work.weights_dtype, fp8_work.kv_dtype, fp8_work.activations_dtype) == ("fp8", "bf16", "bf16")
by_estimate = [r.label for r in sorted(setups[:3], key=lambda r: r.step_s)]
by_bound = [r.label for r in sorted(setups[:3], key=lambda r: r.lower_bound_s)]
by_capacity = [r.label for r in sorted(setups[:3], key=lambda r: -r.max_batch)]
assert by_capacity != by_estimate  # capacity ranks them differently from the estimate's speed

# %%
time_breakdown_chart([r.placement for r in setups[:4]],
                     ["2 × H100 SXM, TP 2", "1 × H200", "1 × H100 SXM, FP8 weights", "2 × H100 SXM, overlapped"],
                     title=f"{model.name} decode, batch 1, {count(CONTEXT)} cached: one step per chip")

# %% jupyter={"source_hidden": true}
fastest = min(setups[:3], key=lambda r: r.step_s)
fastest_bound = min(setups[:3], key=lambda r: r.lower_bound_s)
runner = min((r for r in setups[:3] if r is not fastest), key=lambda r: r.step_s)
fp8_gap = runner.step_s / fastest.step_s - 1
md(f"All three are memory-bound, by both figures. Two H100s read half the weights each at "
   f"{si(part.memory_bandwidth_bytes_per_s, 'B/s')}, and the estimate charges them {duration(tp2.comm_s)} of "
   f"communication per step ({duration(tp2.latency_s)} of it assumed latency); the H200 reads them all at "
   f"{si(get_part('h200').memory_bandwidth_bytes_per_s, 'B/s')} and sends nothing; FP8 weights halve the weight bytes "
   f"on one chip. By the estimate the fastest of the three is **{fastest.label}** ({duration(fastest.step_s)}), "
   f"{percent(fp8_gap, 0)} ahead of {runner.label}. By the lower bound it is **{fastest_bound.label}** "
   f"({duration(fastest_bound.lower_bound_s)}). "
   + (f"The two figures disagree. {fastest_bound.label}'s estimate, {duration(fastest_bound.step_s)}, holds "
      f"{duration(fastest_bound.latency_s)} of assumed per-call latency "
      f"({percent(fastest_bound.latency_s / (fastest_bound.step_s - fastest_bound.lower_bound_s), 0)} of the gap "
      f"between its estimate and its bound); without it the estimate is "
      f"{duration(fastest_bound.step_s - fastest_bound.latency_s)}, "
      + ("below" if fastest_bound.step_s - fastest_bound.latency_s < fastest.step_s else "still above")
      + f" the estimate for {fastest.label}, {duration(fastest.step_s)}. The ranking rests on what your all-reduce "
      "costs per call, "
      "and stays unsettled until that is measured. "
      if fastest_bound is not fastest else "Both figures agree on the order. ")
   + "Weight-only FP8 kernels (which convert the weights to BF16 on the fly) may also reach a lower share of the "
   "bandwidth than BF16 ones — a hypothesis to test, not a figure this course has a source for. Here FP8 is weight "
   "storage only: the placement keeps the KV "
   "cache in "
   f"{fp8_work.kv_dtype.upper()} and computes on {fp8_work.activations_dtype.upper()} activations. Compared like "
   f"with like, FP8 weights on the pair take {duration(tp2_fp8.step_s)} by the estimate "
   f"({duration(tp2_fp8.lower_bound_s)} lower bound). Per chip, the one FP8 H100 gives "
   f"{num(fp8.tokens_per_s / (tp2.tokens_per_s / tp2.chips))}× the estimated tokens/s of the BF16 pair — but FP8 "
   "weights "
   "change the model's numbers: check its accuracy on your task before you count the saving. Capacity ranks them "
   "differently from the estimate's speed"
   + (" (in the lower bound's order)" if by_capacity == by_bound else ", and from the lower bound's")
   + f": with every byte usable the pair holds {count(tp2.max_batch)} such sequences, the H200 "
   f"{count(h200.max_batch)}, the FP8 H100 {count(fp8.max_batch)}; at vLLM's long-standing default "
   f"{percent(VLLM_UTILIZATION, 0)} the H200 holds **{count(fits_at(h200, VLLM_UTILIZATION))}** (its "
   f"{binary(h200.placement.footprint.weight_bytes)} of weights exceed "
   f"{binary(VLLM_UTILIZATION * h200.capacity_per_chip_bytes)}).")

# %% [markdown]
# **Question.** For a throughput service at large batch rather than batch-1 latency, which of the
# three would you rather own, per chip? What would you compute to decide?

# %% jupyter={"source_hidden": true}
md("<details><summary>Answer</summary>\n\nTokens/s per chip at the largest batch each can hold (and within your "
   "latency objective, lesson 10): capacity sets the batch, and the batch sets the throughput. Rerun "
   "`compare_setups(MODEL, seventy_b_setups(), batch=...)` at each setup's own largest batch, and divide by the chips. "
   "Then price them: chip-hours differ.\n\n</details>")

# %% [markdown]
# ## 7. Expert parallel: a mixture of experts across a node

# %% jupyter={"source_hidden": true}
total_params, active_params = moe.parameter_count(), moe.active_parameter_count()
md(f"{moe.name} has {count(moe.num_experts)} experts in each of its {count(moe.num_hidden_layers)} layers, and routes "
   f"each token to {count(moe.num_experts_per_tok)} of them: {num(total_params / 1e9)} billion parameters held, "
   f"{num(active_params / 1e9)} billion active per token. It does not fit one chip:")

# %%
moe_one = place(MOE, "h200", phase="decode", context_tokens=CONTEXT)
show_table(["", "bytes"], [["memory required, one chip", binary(moe_one.memory_required_bytes)],
                           ["H200 capacity", binary(get_part("h200").memory_capacity_bytes)]])
assert not moe_one.fits_in_memory

# %% jupyter={"source_hidden": true}
node = get_part("h200").scale_up_link.max_chips
md(f"On one {count(node)}-GPU H200 node it can be split three ways. **Tensor parallel** cuts every expert into "
   f"{count(node)} column slices. **Expert parallel** puts {count(moe.num_experts // node)} whole experts on each chip "
   "instead: each chip (an \"expert group\") runs attention for its own share of the sequences, then every token is "
   "sent to the chips holding its experts and the results are sent back — **two all-to-alls per MoE layer** "
   "(dispatch and combine) instead of two all-reduces. **TP 2 × EP 4** and **TP 4 × EP 2** mix them.\n\n"
   "Three modelling choices of this course, not facts about every engine: (1) attention is **data-parallel across "
   "the expert groups** — each group holds all of the attention weights of its t-way slice and runs its own "
   "sequences (vLLM's `--enable-expert-parallel` instead keeps attention tensor-parallel); (2) the estimate's "
   "dispatch sends one copy per chosen expert, k·(e − 1)/e copies per token, with no merging of copies bound for "
   "the same chip; the lower bound sends one copy per other group the token's experts live on, as DeepEP's "
   "high-throughput kernels do (its low-latency decode kernels send one copy per chosen expert, the estimate's "
   f"convention): {num(remote_groups_per_token(moe.num_experts, moe.num_experts_per_tok, node))} copies per token "
   f"against {num(moe.num_experts_per_tok * (node - 1) / node)} under EP {count(node)}. Under TP t inside a group, "
   "each of the group's t chips receives every token routed to it whole (its expert slices are split by columns), "
   "so TP does not shrink a chip's all-to-all bytes, by either figure; (3) both figures assume **uniform "
   "routing** and price the busiest chip at the MEAN number of experts touched — optimistic at small batch, where "
   "routing is uneven and one chip draws more than its share. So for the expert-parallel rows the lower bound is "
   "a bound on the mean step under uniform routing, not on every step: one step's draw of experts can send more. "
   f"Per chip, {count(CONTEXT)} tokens cached:")

# %%
ep_rows = [(b, e) for b in (1, 256) for e in expert_parallel_compare(MOE, "h200", batch=b, context_tokens=CONTEXT)]
show_table(["batch", "split", "experts held per chip (a 1/t slice of each under TP t)", "experts touched per chip",
            "all-reduce bytes per chip (ring)",
            "all-to-all bytes per chip (estimate's one copy per expert, as received)",
            "communication, per chip (estimate)", "memory per chip",
            "estimate, per chip", "estimate's roof", "lower bound, per chip", "largest batch that fits"],
           [[count(b), e.row.parallelism.label, count(e.experts_held_per_chip), num(e.experts_touched_per_chip),
             si(e.all_reduce_bytes, "B"), si(e.all_to_all_bytes, "B"), duration(e.row.comm_s),
             binary(e.row.memory_per_chip_bytes), duration(e.row.step_s), e.row.bound, duration(e.row.lower_bound_s),
             count(e.row.max_batch)]
            for b, e in ep_rows])
best_small = min((e for b, e in ep_rows if b == 1), key=lambda e: e.row.step_s)
best_large = min((e for b, e in ep_rows if b == 256), key=lambda e: e.row.step_s)
best_small_lb = min((e for b, e in ep_rows if b == 1), key=lambda e: e.row.lower_bound_s)
best_large_lb = min((e for b, e in ep_rows if b == 256), key=lambda e: e.row.lower_bound_s)
assert best_small.row.parallelism.expert == 1 and best_large.row.parallelism.expert > 1  # the claim below
assert best_small_lb.row.parallelism.expert == 1 and best_large_lb.row.parallelism.expert > 1  # by both figures
tp8_large = next(e for b, e in ep_rows if b == 256 and e.row.parallelism.expert == 1)
hbm_bw = get_part("h200").memory_bandwidth_bytes_per_s
tp_cost, ep_cost = tp8_large.row.placement.cost, best_large.row.placement.cost
kv_saved_s = float(tp_cost.kv_bytes - ep_cost.kv_bytes) / hbm_bw
weights_extra_s = float(ep_cost.weight_bytes - tp_cost.weight_bytes) / hbm_bw
comm_saved_s = tp8_large.row.comm_s - best_large.row.comm_s
runner_up = sorted((e for b, e in ep_rows if b == 256), key=lambda e: e.row.step_s)[1]
assert kv_saved_s > max(weights_extra_s, comm_saved_s, 0)  # the KV replication is the largest term
assert comm_saved_s > 0  # the all-to-alls take less than TP 8's all-reduces
runner_gap = runner_up.row.step_s / best_large.row.step_s - 1
# the two figures' winners at batch 256, compared by each figure
est_gap = best_large_lb.row.step_s / best_large.row.step_s - 1  # ≥ 0: the estimate's winner ahead
lb_gap = best_large.row.lower_bound_s / best_large_lb.row.lower_bound_s - 1  # ≥ 0: the bound's winner ahead
assert est_gap >= 0 and lb_gap >= 0
# the estimate without its conventions: free calls, communication overlapped
free = {e.row.parallelism.label: place(MOE, "h200", phase="decode", batch=256, context_tokens=CONTEXT,
                                       parallelism=Parallelism(tensor=e.row.parallelism.tensor,
                                                               expert=e.row.parallelism.expert,
                                                               collective_latency_s=0.0,
                                                               overlap_comm=True)).time_estimate_s
        for b, e in ep_rows if b == 256}
free_winner = min(free, key=free.get)
# those two conventions are what separates the figures
assert best_large_lb is best_large or free_winner == best_large_lb.row.parallelism.label
calls = {e.row.parallelism.label: float(e.row.placement.comm.calls) for b, e in ep_rows if b == 256}
mixed_calls = min(c for label, c in calls.items() if "×" in label)
assert mixed_calls > max(c for label, c in calls.items() if "×" not in label)  # the mixed splits make the most calls
# TP 8 against the estimate's winner, term by term: both memory-bound, communication added after
assert tp8_large.row.bound == best_large.row.bound == "memory"
assert best_large.row.parallelism.tensor == 1  # no TP inside its groups: whole attention and lm_head per chip
head_extra_s = sum(float(o.weight_bytes) * o.layers for o in ep_cost.ops if o.block == "head") / hbm_bw \
    - sum(float(o.weight_bytes) * o.layers for o in tp_cost.ops if o.block == "head") / hbm_bw
activations_extra_s = float(tp_cost.activation_bytes - ep_cost.activation_bytes) / hbm_bw
step_gap_s = tp8_large.row.step_s - best_large.row.step_s
main_terms_s = kv_saved_s - weights_extra_s + comm_saved_s
assert activations_extra_s > 0 and head_extra_s > 0
assert math.isclose(step_gap_s - main_terms_s, activations_extra_s, rel_tol=1e-6)  # the fourth term closes it

# %% jupyter={"source_hidden": true}
same_small = best_small_lb is best_small
same_large = best_large_lb is best_large
md(f"At batch 1, **{best_small.row.parallelism.label}** is fastest by the estimate "
   f"({duration(best_small.row.step_s)})"
   + (f" and by the lower bound ({duration(best_small_lb.row.lower_bound_s)})" if same_small else
      f"; by the lower bound, **{best_small_lb.row.parallelism.label}** ({duration(best_small_lb.row.lower_bound_s)})")
   + ": each chip reads a slice of the few experts touched and 1/8 of the attention, while under expert "
   "parallelism the chip holding a sequence reads all of its attention weights. At batch 256, by the estimate, "
   f"**{best_large.row.parallelism.label}** is fastest here ({duration(best_large.row.step_s)} against "
   f"{duration(tp8_large.row.step_s)} for TP 8; next comes {runner_up.row.parallelism.label} at "
   f"{duration(runner_up.row.step_s)}, {percent(runner_gap, 0)} slower)"
   + (". The lower bound agrees. " if same_large else
      f"; by the lower bound **{best_large_lb.row.parallelism.label}** is "
      f"({duration(best_large_lb.row.lower_bound_s)} against {duration(best_large.row.lower_bound_s)} for "
      f"{best_large.row.parallelism.label}). The two figures rank these two the other way round: "
      f"{best_large.row.parallelism.label} is {percent(est_gap, 0)} ahead by the estimate, "
      f"{best_large_lb.row.parallelism.label} {percent(lb_gap, 0)} ahead by the bound. What separates the figures "
      "here is two of the estimate's conventions — its latency per call (the mixed splits make the most calls: "
      f"at least {count(mixed_calls)} per step, against {count(calls[best_large.row.parallelism.label])} for "
      f"{best_large.row.parallelism.label}) and the communication added after the compute: with free calls "
      f"and the communication overlapped, the estimate puts **{free_winner}** first"
      + ", as the bound does. That an expert-parallel split beats TP 8 holds by both figures. ")
   + f"Per chip, by the estimate, {best_large.row.parallelism.label} is {duration(step_gap_s)} faster than TP 8. "
   "Three main terms: TP 8 reads "
   f"{si(tp_cost.kv_bytes - ep_cost.kv_bytes, 'B')} more KV cache ({duration(kv_saved_s)} at the H200's bandwidth) "
   f"because 8 chips exceed the model's {count(moe.num_key_value_heads)} KV heads, so each KV head is stored and read "
   f"twice; {best_large.row.parallelism.label} reads {si(ep_cost.weight_bytes - tp_cost.weight_bytes, 'B')} more "
   f"weights ({duration(weights_extra_s)}): the whole attention on every chip, and the whole lm_head "
   f"({duration(head_extra_s)} of it); and its all-to-alls take {duration(comm_saved_s)} less than TP 8's "
   f"all-reduces. Together {duration(main_terms_s)}; the remaining {duration(activations_extra_s)} is activation "
   "traffic: under TP 8 the operators every chip runs whole (the expert combine, the norms, the residual adds, the "
   f"router) run on all {count(tp8_large.row.placement.workload.batch)} tokens on every chip, under "
   f"{best_large.row.parallelism.label} on its own "
   f"{count(math.ceil(best_large.row.placement.workload.batch / best_large.row.parallelism.expert))}. "
   "The KV replication is the largest term — a property "
   f"of this model's {count(moe.num_key_value_heads)} KV heads and this context, not a rule that expert "
   "parallelism wins at large batch. "
   "DeepSeek-V3 (671B) needs multi-head latent attention, which arrives with lesson 12; its "
   "capacity across a node is sized there.")

# %% jupyter={"source_hidden": true}
held = best_large.experts_held_per_chip
md(f"**Question.** Under EP {count(node)}, the experts touched per chip level off at {count(held)}. Why, and what "
   "does that mean for the expert bytes a chip reads per token as the batch grows?")

# %% jupyter={"source_hidden": true}
md(f"<details><summary>Answer</summary>\n\nA chip holds {count(held)} of the {count(moe.num_experts)} experts; once "
   f"the batch touches every one of them (at batch {count(best_large.row.placement.workload.batch)}: "
   f"{num(best_large.experts_touched_per_chip)} of {count(held)} per chip), more tokens read no more expert weights: "
   "the expert bytes per token fall as 1/batch, as a dense model's weight bytes do (lesson 4), and the KV cache "
   "becomes what grows.\n\n</details>")

# %% [markdown]
# ## 8. Pipeline parallel: capacity, not latency
#
# **Pipeline parallelism** cuts the layers into p consecutive stages, one per chip, and passes the
# activations from stage to stage. Each chip holds 1/p of the weights, and a send between stages is
# cheap (once per stage, not twice per layer). But one token of one sequence goes through the
# layers **in order**: layer 41 needs layer 40's output, so while stage 2 works, stage 1 waits. The
# estimate takes the sum of the stages' times plus the p − 1 sends (each with its assumed latency).
# The lower bound is the larger of two: the busiest stage's bound (every stage must do its share of
# the step, however the work is cut into micro-batches) and **one token's crossing**, the stages'
# bounds for one sequence added up (its next token needs this one, so it crosses every stage in
# turn, each reading its weights). With fewer sequences than stages the crossing is the larger.
# Two H100 SXMs, batch 1:

# %%
pipe = pipeline_vs_tensor(MODEL, PART, 2, context_tokens=CONTEXT)
show_table(["setup", "memory per chip", "fits", "estimate", "busiest stage (per chip, estimate)",
            "sends between stages (estimate)", "lower bound"],
           [[r.label, binary(r.memory_per_chip_bytes), "yes" if r.fits else "**no**", duration(r.step_s),
             duration(r.placement.stage_time_s),
             duration((r.chips - 1) * r.placement.pipeline_send_s) if r.parallelism.pipeline > 1 else "none",
             duration(r.lower_bound_s)]
            for r in pipe])
alone, tp_pair, pp_pair = pipe
pp_sends_s = (pp_pair.chips - 1) * pp_pair.placement.pipeline_send_s
assert pp_pair.step_s >= alone.step_s  # no faster than one chip would be (if it fitted)
assert math.isclose(pp_pair.step_s, alone.step_s + pp_sends_s, rel_tol=1e-3)  # one chip's time + the sends
assert tp_pair.step_s < pp_pair.step_s

# %% jupyter={"source_hidden": true}
pp_place = pp_pair.placement
assert pp_place.pipeline_lower_bound_basis == "crossing"  # batch 1: one token's crossing binds
assert pp_place.busiest_stage_lower_bound_s < pp_pair.lower_bound_s
assert math.isclose(pp_pair.lower_bound_s, alone.lower_bound_s, rel_tol=0.01)  # "one chip's lower bound"
md(f"By the estimate, the pipeline's step is one chip's time ({duration(alone.step_s)}, a what-if: it does not fit) "
   f"plus {duration(pp_sends_s)} of sending: {percent(pp_pair.step_s / alone.step_s - 1, 2)} slower, where tensor "
   f"parallel 2 takes {duration(tp_pair.step_s)}. The pipeline's lower bound is one token's crossing, "
   f"{duration(pp_pair.lower_bound_s)}: "
   + (f"the same as one chip's lower bound ({duration(alone.lower_bound_s)}) to the microsecond"
      if abs(pp_pair.lower_bound_s - alone.lower_bound_s) < 5e-7
      else f"within {percent(abs(pp_pair.lower_bound_s / alone.lower_bound_s - 1), 1)} of one chip's lower "
      f"bound, {duration(alone.lower_bound_s)}")
   + f". The busiest stage alone would allow {duration(pp_place.busiest_stage_lower_bound_s)}, the bound once "
   "enough independent sequences keep both stages busy. Tensor parallel 2's lower bound is "
   f"{duration(tp_pair.lower_bound_s)}: it splits every layer, so a chip's share of one token really is half.")

# %% [markdown]
# Pipelining pays off for **throughput**, when every stage has work. Two cases differ:
#
# - **Flushed** (GPipe training, or one long prefill split into m micro-batches that must all
#   finish before the next step): the idle share, the **bubble**, is (p − 1)/(m + p − 1).
# - **Steady decode** (a server keeping m independent batches circulating through the stages, as
#   vLLM's pipeline parallelism does): a stage idles only while fewer batches than stages are in
#   flight, max(0, 1 − m/p) — none once m ≥ p.

# %%
MICRO = (1, 4, 16, 64)
show_table(["stages p", "case"] + [f"m = {count(m)}" for m in MICRO],
           [[count(p), case] + [percent(f(p, m), 0) for m in MICRO]
            for p in (2, 4, 8)
            for case, f in (("flushed: (p − 1)/(m + p − 1)", bubble_fraction),
                            ("steady decode: max(0, 1 − m/p)", steady_state_idle_fraction))])
assert steady_state_idle_fraction(4, 4) == 0 < bubble_fraction(4, 4)  # the two cases differ

# %% [markdown]
# **Question.** A pipeline of 4 stages serves one user at batch 1. What does the user see, and what
# does the operator lose?

# %% jupyter={"source_hidden": true}
pp4 = place(MODEL, PART, phase="decode", context_tokens=CONTEXT, parallelism=Parallelism(pipeline=4))
md(f"<details><summary>Answer</summary>\n\nThe user sees the whole step: 4 stages one after another plus 3 sends, "
   f"{duration(pp4.time_estimate_s)} per token on 4 H100 SXMs by the estimate — one chip's estimate for the whole "
   f"model ({duration(alone.step_s)}) plus {duration(3 * pp4.pipeline_send_s)} of sends (PP 2 above: "
   f"{duration(pp_pair.step_s)}); no implementation gets one token through faster than one chip's lower bound, "
   f"{duration(alone.lower_bound_s)}. The operator leaves {percent(steady_state_idle_fraction(4, 1), 0)} of the chips' "
   "time idle: with one batch in flight, three of the four stages wait at any moment. Three more independent "
   "batches would fill the pipe.\n\n</details>")

# %% [markdown]
# ## 9. Measured against both figures: gpt-fast's 70B on 8 × A100
#
# The catalog holds one published multi-chip decode rate. As it records it:

# %%
gf = gpt_fast_70b()
ms = gf.measurement
show_table(["", ""], [["what", ms.what], ["conditions", ms.conditions], ["source", ms.source],
                      ["measured", f"{num(gf.measured_tokens_per_s)} tokens/s"]])

# %% jupyter={"source_hidden": true}
md(f"The catalog gives the prompt but not how many tokens were generated, so both figures below **assume** "
   f"{count(gf.context_tokens)} tokens cached, as lesson 3 did for gpt-fast's 7B figure. At batch 1 the guess "
   f"matters little: even {count(8 * gf.context_tokens)} tokens of KV cache are "
   f"{binary(model.kv_bytes_per_token('bf16') * 8 * gf.context_tokens)}, against "
   f"{binary(gf.placement.footprint.weight_bytes * gf.placement.chips)} of weights.")

# %% jupyter={"source_hidden": true}
vp = gf.vocab_parallel
head_calls = int(vp.comm.calls - gf.comm.calls)
md("**Like for like: priced as gpt-fast lays it out.** gpt-fast's `tp.py` shards only each layer's attention "
   "(the QKV projection by columns, the output projection by rows) and its MLP, each followed by one all-reduce: "
   f"{count(gf.comm.calls)} all-reduces per token. The token embedding and the output projection (lm_head) stay "
   "**whole on every GPU**: no embedding all-reduce and no logits all-gather "
   f"({head_calls} calls fewer than this lesson's layout), but every GPU reads the whole lm_head, "
   f"{si(gf.replicated_head_bytes, 'B')} more than its vocabulary-parallel share. Both figures below price that "
   f"layout: the estimate {duration(gf.estimate_step_s)} and the bound {duration(gf.lower_bound_step_s)} per token, "
   f"against {duration(vp.time_estimate_s)} and {duration(vp.time_lower_bound_s)} had the lm_head been split over "
   "the vocabulary as this lesson splits it (a better layout, not the one measured).")
assert head_calls > 0 and gf.replicated_head_bytes > 0
assert gf.estimate_step_s > vp.time_estimate_s and gf.lower_bound_step_s > vp.time_lower_bound_s

# %%
gp = gf.placement
show_table(["per chip (TP 8, gpt-fast's layout)", "estimate", "lower bound"],
           [["compute", duration(gp.compute_time_s), duration(gp.compute_lower_bound_s)],
            ["memory", duration(gp.memory_time_s), duration(gp.memory_lower_bound_s)],
            [f"communication: {count(gf.comm.calls)} calls × {duration(gf.comm.latency_per_call_s)} (assumed)",
             duration(gf.comm.latency_s), "none"],
            ["communication: bytes ÷ per-direction bandwidth", duration(gf.comm.bandwidth_s),
             duration(gf.comm.bound_s)],
            ["step", duration(gf.estimate_step_s), duration(gf.lower_bound_step_s)],
            ["tokens/s", num(gf.estimate_tokens_per_s), num(gf.upper_bound_tokens_per_s)],
            ["tokens/s, measured", num(gf.measured_tokens_per_s), num(gf.measured_tokens_per_s)],
            ["measured ÷ it", percent(gf.fraction_of_estimate, 0), percent(gf.fraction_of_upper_bound, 0)]])
assert gf.measured_tokens_per_s < gf.upper_bound_tokens_per_s  # a bound must never be beaten
assert gf.measured_tokens_per_s < gf.estimate_tokens_per_s  # nor, here, the estimate
assert not gp.link.in_switch_reduction  # A100: NVLink 3, no reduction in the switch: the bound counts the ring too

# %% [markdown]
# The catalog's A100 link is NVLink 3 behind NVSwitch, which does not reduce in the switch, so both
# figures count the ring's bytes (gpt-fast's machine is a hybrid cube mesh instead: a hypothesis
# below); the bound drops the assumed latency and overlaps the communication. The estimate rests on two figures
# the README itself qualifies: the HBM bandwidth (it notes the A100's empirical peak is below the
# datasheet's) and the per-call latency (assumed). What-ifs, per chip:

# %%
empirical_bw = gpt_fast_empirical_bandwidth_bytes_per_s()
a100_bw = gp.part.memory_bandwidth_bytes_per_s
what_ifs = [(f"datasheet HBM {si(a100_bw, 'B/s')}, {duration(lat)} per call", gpt_fast_70b(latency_s=lat))
            for lat in (0.0, gf.comm.latency_per_call_s)]
what_ifs += [(f"README's empirical HBM {si(empirical_bw, 'B/s')}, {duration(lat)} per call",
              gpt_fast_70b(memory_bandwidth_bytes_per_s=empirical_bw, latency_s=lat))
             for lat in (0.0, gf.comm.latency_per_call_s)]


def bound_cell(w):
    """The lower bound at the datasheet rate; at a measured rate it is only what the bound would be."""
    if w.placement.part.memory_bandwidth_bytes_per_s == a100_bw:
        return duration(w.lower_bound_step_s)
    rate = si(w.placement.part.memory_bandwidth_bytes_per_s, "B/s")
    return f"{duration(w.lower_bound_step_s)}: bound if {rate} were the roof (what-if)"


show_table(["what-if (gpt-fast's layout)", "estimate", "tokens/s, estimate", "measured ÷ it",
            "lower bound (any latency)"],
           [[name, duration(w.estimate_step_s), num(w.estimate_tokens_per_s), percent(w.fraction_of_estimate, 0),
             bound_cell(w)] for name, w in what_ifs])
assert [bound_cell(w).endswith("(what-if)") for _, w in what_ifs] == [False, False, True, True]
assert all(w.measured_tokens_per_s < w.estimate_tokens_per_s for _, w in what_ifs)
assert math.isclose(what_ifs[0][1].lower_bound_step_s, what_ifs[1][1].lower_bound_step_s)  # latency: no effect
tightest = what_ifs[-1][1]

# %% jupyter={"source_hidden": true}
gf_message = activation_message_bytes(MODEL, int(gp.workload.batch))  # one token's activations, BF16
md(f"gpt-fast reaches **{percent(gf.fraction_of_upper_bound, 0)} of the upper bound** and "
   f"**{percent(gf.fraction_of_estimate, 0)} of the estimate** at the datasheet bandwidth and the assumed latency: "
   f"{duration(gf.measured_step_s)} per token against {duration(gf.lower_bound_step_s)} and "
   f"{duration(gf.estimate_step_s)}; {percent(tightest.fraction_of_estimate, 0)} of the estimate at the README's "
   "empirical bandwidth. Where the rest goes is not measured here; these are **hypotheses**, each with the size it "
   "would need to explain the whole gap to the estimate alone where the model can say:\n\n"
   f"- *Hypothesis: the collectives cost more than the assumed {duration(gf.comm.latency_per_call_s)} per call.* "
   f"Alone, that would take about {duration(gf.latency_per_call_to_close_gap_s)} per call. Mind which all-reduce "
   "runs: the README launches tensor parallelism with `ENABLE_INTRA_NODE_COMM=1`, which sends these small BF16 "
   "sums through PyTorch's own intra-node all-reduce where it applies (one node, BF16, small messages; one-shot, "
   "two-shot, or an algorithm for the hybrid cube mesh, over direct GPU-to-GPU NVLink) instead of NCCL; "
   "nccl-tests would time NCCL's path, which these calls skip. "
   f"Test: time a {binary(gf_message)} BF16 `torch.distributed.all_reduce` over the 8 GPUs with "
   "`ENABLE_INTRA_NODE_COMM=1` on that machine, or read the all-reduce kernels' durations in a profile of the run.\n"
   f"- *Hypothesis: the HBM delivers less than its datasheet bandwidth.* Alone, that would mean "
   f"{percent(gf.hbm_fraction_to_close_gap, 0)} of {si(a100_bw, 'B/s')}; the README's own empirical figure, "
   f"{si(empirical_bw, 'B/s')}, is {percent(empirical_bw / a100_bw, 0)} of it, so this explains part of the gap. "
   "Test: lesson 8's bandwidth probe, or a profiler's DRAM byte counters during the decode kernels.\n"
   "- *Hypothesis: the power cap* in the benchmark's conditions (quoted above; below the A100 SXM's rated board "
   "power) lowers clocks, and with them the bandwidth the kernels reach. Test: rerun with the cap lifted, or read "
   "the clocks with nvidia-smi during the run.\n"
   "- *Hypothesis: the hybrid cube mesh, not NVSwitch,* gives each pair of GPUs fewer NVLink links than the "
   "catalog's all-to-all figure assumes, so the collectives are slower (bytes and latency). Test: the GPU-to-GPU "
   "bandwidth and latency of each pair on that machine (CUDA's p2pBandwidthLatencyTest), and the intra-node "
   "all-reduce above across message sizes.\n"
   "- *Hypothesis: per-step overheads* — synchronisation, sampling — the third term of lesson 9. gpt-fast runs "
   "under torch.compile, whose CUDA graphs remove most kernel-launch overhead, so launches alone are a weak "
   "suspect here. Test: a timeline of kernel time against wall-clock time.\n\n"
   "Probably several contribute — itself a hypothesis: only measurements can split the gap.")

# %% [markdown]
# ## Explore: the many-chips dashboard
#
# Pick a model and a part, how to split the step (tensor, pipeline or expert) and over how many
# chips; set the batch and the phase; tick the overlap box for the estimate's best case. The chart
# is the three-roof roofline per chip, with the step at its FLOPs per HBM byte and at its FLOPs per
# byte sent, and beneath it one chip's compute, memory and communication by the estimate; the text
# and the table give the lower bound beside it. Try: Llama-3.1-70B on H100 SXMs, tensor parallel
# over 1 → 8 chips at batch 1 (what stays constant in the estimate, and in the bound?); the same
# on L4s in prefill (which roof binds?); pipeline instead of tensor at batch 1 (what happens to the
# step?); Qwen3-235B-A22B on eight H200s, expert against tensor parallel at batch 1 and at batch
# 256.

# %%
from roofline_lessons.viz.dashboards import lesson11_dashboard

dashboard = lesson11_dashboard()

# %% [markdown]
# ## Summary
#
# - A 70B model in BF16 does not fit one H100's memory; splitting it is the first reason for many
#   chips. With more than one chip, every figure is per chip.
# - Tensor parallel: each chip holds and reads 1/n of the split weights; norms and the router are
#   replicated, and the KV cache divides only up to the KV heads. Two all-reduces per layer; a ring
#   makes each chip send 2(n − 1)/n of the message at the link's **per-direction** bandwidth, half
#   the vendor's bidirectional headline. A switch that reduces in the switch (NVLink SHARP, on
#   H100-generation NVSwitch and later) needs each byte sent only once: the ring is not the least
#   traffic there, and a measured all-reduce can beat the ring's limit.
# - Two figures per chip. The lower bound: least bytes, overlapped, no per-call latency. The
#   estimate: the ring, communication after the compute, an assumed latency per call. Say which
#   one you quote, and how much of the estimate is the assumed latency.
# - The estimate's communication is calls × latency + bytes ÷ bandwidth. In it a batch-1 decode's
#   all-reduces are latency-bound and a prefill's bandwidth-bound. One fixed latency per call
#   whatever n is an assumption; the bound does not move with it. Measure it before you rely on it.
# - The third ridge: peak ÷ link bandwidth. A tensor-parallel step's interconnect intensity changes
#   little with the tokens but falls as 1/(n − 1), so the part and n decide: over NVLink a 70B
#   prefill's link bytes never outlast its compute (though, not overlapped, they still add to the
#   step); over the H100 PCIe's PCIe they do; on L4s it is neck and neck.
# - By the estimate, tensor parallelism cuts decode latency until a communication floor, past which
#   each doubling buys less; that floor is the assumed latency, and the lower bound keeps falling.
#   The estimate does not overlap communication by default; overlap is its best case.
# - Expert parallelism keeps whole experts per chip and swaps all-reduces for all-to-alls. Whether
#   it beats tensor parallelism depends on the model, batch and context: compute the KV, weight and
#   communication terms. Pipeline parallelism adds capacity, not speed: one sequence crosses every
#   stage. A flushed pipeline of m micro-batches idles (p − 1)/(m + p − 1); a server keeping m
#   independent batches in steady decode idles max(0, 1 − m/p).
# - A published multi-chip figure sits below the upper bound (it must) and here below the estimate
#   too; the gap's causes are hypotheses until measured. Price it as the implementation lays the
#   model out (gpt-fast keeps the embedding and the lm_head whole on every GPU), and time the
#   collectives it actually runs (its README turns on PyTorch's intra-node all-reduce, not NCCL's).
#
# **Interview questions this lesson prepares you for**
#
# - "How much data does each GPU send in a ring all-reduce over n GPUs? Why is using NVLink's
#   headline bandwidth a mistake? What changes when the switch can reduce?"
# - "Going from 2 to 8 GPUs, a 70B model's batch-1 decode gets faster by less than the ratio of the
#   chips. Why, and where does it stop getting faster? How much of that rests on an assumption?"
# - "When is tensor parallelism interconnect-bound? Why is PCIe-only TP 8 a bad idea for prefill?"
# - "Tensor or expert parallelism for an MoE on one node, and when does the answer flip?"
# - "Does pipeline parallelism reduce the latency of a single request?"
#
# The exercises for this lesson are in `exercises/11_many_chips.ipynb`.
