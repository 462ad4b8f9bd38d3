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
# 1. say what tensor parallelism splits, replicates and sends (all-reduces at the **per-direction** bandwidth);
# 2. give a multi-chip step two figures per chip, the **lower bound** and the **estimate** (and its assumed latency);
# 3. split communication into latency and bytes, compute the third ridge, and find where tensor parallelism stops;
# 4. compare 70B on two H100s, one H200 or FP8 weights; split an MoE by experts; say what pipelining buys;
# 5. set a published multi-chip measurement against both figures and state hypotheses for the gap.
#
# > **Conventions.** With more than one chip, every FLOP, byte and second below is **per chip** (the
# > busiest chip's); tokens per second count all chips together. Every step gets two figures (lesson
# > 3); below, "bound" and "estimate" mean these, without repeating the rules:
# >
# > - the **lower bound** (`time_lower_bound_s`): compulsory traffic only, the least bytes the link
# >   allows (each byte once where the switch adds the partial sums, the ring elsewhere), communication
# >   and independent units (pipeline stages) overlapped, no assumed latency, no bytes for the logits
# >   all-gather (it **assumes** vocabulary-parallel sampling: each chip sends only its top
# >   candidates). No implementation with that split, formats, kernels' FLOPs and sampling beats it.
# > - the **estimate** (`time_estimate_s`): operators unfused; collectives by the ring; a fixed
# >   latency per collective call, **assumed** (the catalog's order of magnitude, the same at any
# >   number of chips); communication **not overlapped**, max(compute, memory) + communication, unless
# >   a row says "overlapped" (the estimate's best case); pipeline stages one after another.
# >
# > For a mixture of experts both figures **assume** uniform routing (the mean step): the bound
# > holds under it only, and routing that sends the tokens to fewer experts can beat it. The rates follow: an upper bound and an estimate. The rules: the
# > docstring of `roofline_lessons.core.parallel`.

# %%
# %matplotlib inline
from roofline_lessons import get_model, get_part, place
from roofline_lessons.core.parallel import Parallelism, bubble_fraction, steady_state_idle_fraction
from roofline_lessons.core.units import binary, count, duration, num, percent, si
from roofline_lessons.topics.many_chips import (activation_message_bytes, comm_split, gpt_fast_70b,
                                                latency_sensitivity, link_ridges, one_all_reduce, pipeline_vs_tensor,
                                                tensor_parallel_sweep)
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.viz.plots import interconnect_roofline_chart, time_breakdown_chart

MODEL, PART = "llama-3.1-70b", "h100-sxm"
CONTEXT = 4096  # tokens cached before each decode step
PREFILL_TOKENS = 1024  # a prompt for the prefill examples
model, part = get_model(MODEL), get_part(PART)

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

# %% jupyter={"source_hidden": true}
import math

assert not single.fits_in_memory  # the lesson's premise
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
from roofline_lessons.core.parallel import max_batch_that_fits_on_chips
from roofline_lessons.core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION as VLLM_UTILIZATION  # the share vLLM lets itself use
from roofline_lessons.topics.many_chips import Setup, compare_setups, seventy_b_setups


def fits_at(row, utilization):
    """Largest batch whose weights + KV cache fit every chip of a SplitRow's setup at ``utilization``."""
    p, w = row.placement, row.placement.workload
    return max_batch_that_fits_on_chips(p.model, p.part, w.cached_tokens_after, p.parallelism,
                                        weights_dtype=w.weights_dtype, kv_dtype=w.kv_dtype,
                                        memory_utilization=utilization)


on_h200 = compare_setups(MODEL, seventy_b_setups(), context_tokens=CONTEXT)[1]
h200_vllm = fits_at(on_h200, VLLM_UTILIZATION)
md("<details><summary>Answer</summary>\n\n"
   + (f"Only just: one sequence needs {binary(on_h200.memory_per_chip_bytes)} of its "
      f"{binary(on_h200.capacity_per_chip_bytes)}, and at most **{count(on_h200.max_batch)} sequences** fit if every "
      "byte of the chip may hold weights and KV cache, with nothing kept back for activations or fragmentation. "
      f"A server such as vLLM uses {percent(VLLM_UTILIZATION, 0)} of the memory by default "
      f"({binary(VLLM_UTILIZATION * on_h200.capacity_per_chip_bytes)}), less than the weights' "
      f"{binary(on_h200.placement.footprint.weight_bytes)}: **{count(h200_vllm)} sequences** there. Section 9 "
      "prices it."
      if on_h200.fits else
      f"No: it needs {binary(on_h200.memory_per_chip_bytes)} of {binary(on_h200.capacity_per_chip_bytes)}.")
   + "\n\n</details>")

# %% [markdown]
# ## 2. Tensor parallel: what each chip holds
#
# **Tensor parallelism** (Megatron-LM's scheme) splits every layer n ways: the attention heads and
# the MLP's columns are divided among the chips, so each chip holds and reads **1/n of those
# weights** and does 1/n of their FLOPs; the embedding and the lm_head are split over the
# vocabulary. The norms, the residual adds and an MoE's router are **replicated**, and the KV cache
# is split by **KV head**: when n exceeds the number of KV heads, each KV head is stored on
# n / KV-heads chips.
# Llama-3.1-70B decode at batch 1, 4,096 tokens cached, on H100 SXMs joined by NVLink:

# %%
tp = tensor_parallel_sweep(MODEL, PART, context_tokens=CONTEXT)
show_table(["split", "weights per chip", "KV cache per chip", "memory per chip", "largest batch that fits (all chips)"],
           [[r.parallelism.label, binary(r.placement.footprint.weight_bytes),
             binary(r.placement.footprint.kv_cache_bytes),
             binary(r.memory_per_chip_bytes) + ("" if r.fits else " — **does not fit**"), count(r.max_batch)]
            for r in tp])

# %% jupyter={"source_hidden": true}
MOE = "qwen3-235b-a22b"
moe = get_model(MOE)
KV_BATCH, KV_CONTEXT = 16, 8192
md(f"**Question.** {moe.name} (section 10) has only {count(moe.num_key_value_heads)} KV heads; {model.name} has "
   f"{count(model.num_key_value_heads)}. With {count(KV_BATCH)} sequences of {count(KV_CONTEXT)} tokens on H200s, how "
   "much KV cache does each chip hold under TP 8, against TP 4?")

# %% jupyter={"source_hidden": true}
kv_rows = [place(MOE, "h200", phase="decode", batch=KV_BATCH, context_tokens=KV_CONTEXT,
                 parallelism=Parallelism(tensor=t)) for t in (1, 2, 4, 8)]
whole_kv = kv_rows[0].footprint.kv_cache_bytes
assert kv_rows[-1].footprint.kv_cache_bytes == kv_rows[-2].footprint.kv_cache_bytes  # TP 8 stores what TP 4 does
md(f"<details><summary>Answer</summary>\n\nThe same: {binary(kv_rows[-1].footprint.kv_cache_bytes)} per chip at TP 8 "
   f"and at TP 4. Each chip keeps whole KV heads; with {count(moe.num_key_value_heads)} of them, TP 8 stores each on "
   f"{count(8 // moe.num_key_value_heads)} chips. Dividing the whole cache ({binary(whole_kv)}) by 8 would give "
   f"{binary(whole_kv / 8)} and overstate how many sequences fit. The package says so when it happens: "
   f"*{kv_rows[-1].warnings[0]}*\n\n</details>")

# %% [markdown]
# ## 3. One step on n chips: the bound and the estimate
#
# Each chip reads its share of the weights in parallel, so the memory time per chip falls as 1/n,
# but the chips must now talk. Both figures, per chip:

# %%
show_table(["split", "estimate, per chip", "of which assumed latency", "lower bound, per chip",
            "tokens/s (all chips): estimate / upper bound"],
           [[r.parallelism.label, duration(r.step_s), f"{duration(r.latency_s)} ({percent(r.latency_share, 0)})",
             duration(r.lower_bound_s), f"{num(r.tokens_per_s)} / {num(r.tokens_per_s_upper_bound)}"] for r in tp])

# %% jupyter={"source_hidden": true}
one, two, last = tp[0], tp[1], tp[-1]
assert two.step_s < one.step_s and last.step_s < two.step_s  # more chips, shorter decode step
assert last.step_s > one.step_s / last.chips  # ... but the estimate is less than n times shorter
assert math.isclose(last.comm_s, two.comm_s, rel_tol=0.1)  # the estimate's communication barely changes with n
assert all(r.lower_bound_s <= r.step_s for r in tp)
assert two.latency_share < last.latency_share  # the same latency is a larger share of a shorter step
assert last.comm_lower_bound_s < 0.01 * last.lower_bound_s  # the bound's bytes at batch 1: a sliver of its step
bound_speedup, estimate_speedup = one.lower_bound_s / last.lower_bound_s, one.step_s / last.step_s
md(f"From one chip to {count(last.chips)}, the **bound** falls {num(bound_speedup)}×, the **estimate** only "
   f"{num(estimate_speedup)}×. The difference: the communication the estimate adds, about {duration(last.comm_s)} "
   "per chip at every n, "
   f"{duration(last.latency_s)} of it assumed latency: {percent(last.latency_share, 0)} of the "
   f"{last.parallelism.label} estimate. The bound counts no latency, and its bytes at batch 1 take microseconds, so "
   "it " + ("keeps falling almost as 1/n" if bound_speedup > 0.9 * last.chips else "falls more slowly than 1/n")
   + ". (The one-chip row is a what-if: it does not fit.)")

# %% jupyter={"source_hidden": true}
assert float(last.placement.comm.bytes) > float(two.placement.comm.bytes)  # "more bytes at TP 8"
assert float(last.placement.comm.calls) == float(two.placement.comm.calls)  # "the same number of calls"
md(f"**Question.** Each chip sends more bytes at TP 8 than at TP 2, yet the estimate's communication is about "
   f"{duration(two.comm_s)} at both. What kind of cost is the same at every n?")

# %% jupyter={"source_hidden": true}
md("<details><summary>Answer</summary>\n\nA cost per call. The step makes the same number of collective calls at "
   f"any n (two per layer, plus two), and the estimate charges each call one fixed latency: {duration(two.latency_s)} "
   f"of TP 2's {duration(two.comm_s)}. Section 5 splits the communication into that term and the bytes."
   "\n\n</details>")

# %% [markdown]
# ## 4. What each chip sends: two all-reduces per layer
#
# A column-split matmul followed by a row-split one (attention's Q/K/V then its output projection;
# the MLP's gate/up then down) leaves each chip a **partial sum** of the layer's output. Summing
# them is an **all-reduce** of the activations (tokens × hidden × 2 bytes), twice per layer, plus
# one after the vocab-split embedding and an all-gather of the logits (the bound counts none,
# **assuming** vocabulary-parallel sampling).
#
# A **ring all-reduce** makes each chip send, and receive, **2(n − 1)/n of the message**: 1 × at
# n = 2, towards 2 × as n grows, at the link's **per-direction** bandwidth (vendors quote NVLink and
# PCIe as the *bidirectional* total, twice that). Where the switch adds the partial sums itself
# (NVLink SHARP on H100-generation NVSwitch and later; NCCL's NVLS) each chip sends the message only
# **once**: the bound counts that, the estimate keeps the ring. One all-reduce of a 1,024-token
# prefill's activations on H100 SXMs, by the estimate:

# %%
message = activation_message_bytes(MODEL, PREFILL_TOKENS)
reduces = [one_all_reduce(PART, n, message) for n in (2, 4, 8)]
show_table(["chips n", "2(n − 1)/n", "bytes each chip sends (ring)", "estimate at the per-direction rate",
            "at the bidirectional headline (wrong)"],
           [[count(a.tensor), num(a.ring_factor), si(a.sent_bytes, "B"), duration(a.time_s),
             duration(a.headline_time_s)] for a in reduces])

# %% jupyter={"source_hidden": true}
assert all(a.headline_time_s < a.time_s for a in reduces)  # the headline always flatters
link = reduces[-1].link
md(f"The message is {si(message, 'B')} ({count(PREFILL_TOKENS)} tokens × {count(model.hidden_size)} × 2 bytes); "
   f"{link.name} moves {si(link.per_direction_bytes_per_s, 'B/s')} per direction (datasheet: "
   f"{si(link.bidirectional_bytes_per_s, 'B/s')}, both ways); each time holds one assumed "
   f"{duration(link.latency_s)} call.")

# %% jupyter={"source_hidden": true}
md(f"**Question.** A colleague prices the TP {count(reduces[-1].tensor)} all-reduce with the "
   f"{si(link.bidirectional_bytes_per_s, 'B/s')} headline. How far off is the time, and which way?")

# %% jupyter={"source_hidden": true}
wrong = reduces[-1]
assert math.isclose(wrong.time_s - wrong.latency_s, 2 * (wrong.headline_time_s - wrong.latency_s))  # "exactly halved"
md(f"<details><summary>Answer</summary>\n\n{duration(wrong.headline_time_s)} instead of {duration(wrong.time_s)}: "
   f"{num(wrong.time_s / wrong.headline_time_s)}× too fast. The bytes' time is exactly halved "
   f"({duration(wrong.headline_time_s - wrong.latency_s)} instead of {duration(wrong.time_s - wrong.latency_s)}); the "
   f"{duration(wrong.latency_s)} per call stays. The headline makes communication look cheap, which is why it is "
   "the classic error.\n\n</details>")

# %% [markdown]
# ## 5. Latency against bandwidth
#
# Every collective call also pays a fixed cost (launching it, synchronising the chips, the hops)
# whatever its size. The estimate's communication is the calls times the assumed latency, plus the
# ring's bytes divided by the per-direction bandwidth; the bound's is the least bytes alone:

# %%
TP2, TP8 = Parallelism(tensor=2), Parallelism(tensor=8)
steps = [("decode, batch 1, TP 2", place(MODEL, PART, context_tokens=CONTEXT, parallelism=TP2)),
         ("decode, batch 64, TP 8", place(MODEL, PART, batch=64, context_tokens=CONTEXT, parallelism=TP8)),
         (f"prefill of {count(PREFILL_TOKENS)} tokens, TP 8",
          place(MODEL, PART, phase="prefill", prompt_tokens=PREFILL_TOKENS, parallelism=TP8))]
splits = [(name, comm_split(p)) for name, p in steps]
show_table(["step", "calls × latency (assumed)", "ring bytes ÷ bandwidth", "communication: estimate",
            "communication: bound"],
           [[name, f"{count(s.calls)} × {duration(s.latency_per_call_s)} = {duration(s.latency_s)}",
             duration(s.bandwidth_s), f"{duration(s.total_s)} ({percent(s.latency_share, 1)} latency)",
             duration(s.bound_s)] for name, s in splits])

# %% jupyter={"source_hidden": true}
assert splits[0][1].latency_share > 0.5 > splits[-1][1].latency_share  # batch 1: latency; prefill: bandwidth
assert all(s.bound_s < s.bandwidth_s for _, s in splits[1:])  # TP 8 in the switch: fewer bytes than the ring
b1 = splits[0][1]
logits = next(c for c in steps[0][1].comm.parts if c.name == "logits all-gather")
logits_s = float(logits.bytes) / b1.per_direction_bytes_per_s
assert math.isclose(b1.bandwidth_s - b1.bound_s, logits_s) and float(logits.bound_bytes) == 0  # TP 2: only the logits
md(f"At batch 1 the {count(b1.calls)} calls cost {duration(b1.latency_s)} at {duration(b1.latency_per_call_s)} "
   f"each (the catalog's figure, latency_basis = \"{b1.latency_basis}\") against {duration(b1.bandwidth_s)} for the "
   "bytes: by the estimate a batch-1 decode's all-reduces are **latency-bound**. The bound's communication is "
   f"{duration(b1.bound_s)} (the ring's bytes less the {si(float(logits.bytes), 'B')} of logits it assumes away): "
   "what the estimate charges here is almost all assumed, so measure your own small-message all-reduce. A prefill "
   f"sends many bytes per call and is **bandwidth-bound**: latency is {percent(splits[-1][1].latency_share, 1)} of it.")

# %% jupyter={"source_hidden": true}
md(f"**Question.** Going from TP 2 to TP 8, each chip's share of every message grows from 2(n − 1)/n = "
   f"{num(reduces[0].ring_factor)} to {num(reduces[-1].ring_factor)} by the ring. Why, then, did the estimate's "
   "communication per chip in section 3 barely change? What would change that?")

# %% jupyter={"source_hidden": true}
md("<details><summary>Answer</summary>\n\nBecause at batch 1 the estimate's communication is almost all latency: "
   f"the number of calls, {count(b1.calls)}, does not depend on n, and the estimate charges each call the same "
   f"assumed cost at any n. The bytes grow {num(reduces[-1].ring_factor / reduces[0].ring_factor)}×, but at TP 2 they "
   f"were only {percent(1 - b1.latency_share, 1)} of the time. Whether a real all-reduce's latency grows with n "
   "depends on the algorithm: a ring pays 2(n − 1) hops (NCCL's low-latency protocols, LL and LL128, make each "
   "hop cheaper, not fewer), and NCCL's tree is a chain inside a node, linear in the GPUs per node; NVLS in the "
   "switch and one-shot kernels (each chip reads every other chip's partial sums directly, in one step) stay "
   "roughly flat. With a ring or the tree inside a node the communication would rise with n on real hardware; with "
   "NVLS or a one-shot kernel it would stay near the estimate's flat line. \"Going further: how much rests on the "
   "assumed latency\" reprices the whole sweep at other per-call figures.\n\n</details>")

# %% [markdown]
# ## 6. The interconnect roof: a third ridge
#
# Lesson 1's roofline compares FLOPs with bytes from memory. Split over chips, a step also moves
# bytes over the link, so it gets a second intensity and a third roof:
#
# - **interconnect intensity** = FLOPs per chip ÷ bytes that chip sends (FLOP/byte);
# - **the third ridge** = peak FLOP/s ÷ the link's per-direction bandwidth.
#
# Left of that ridge, the link cannot deliver the bytes as fast as the chip does the FLOPs. Per
# token, a chip does 2 FLOPs per parameter ÷ n and, by the ring, sends 2 all-reduces × layers ×
# 2(n − 1)/n × hidden × 2 bytes: the intensity is about parameters ÷ (4 × layers × hidden × (n − 1)),
# nearly the same at any batch or prompt (attention's FLOPs add a little at long prompts). (This
# counts the ring's bytes; where the switch reduces, a chip sends fewer.) Eight chips of each part:

# %%
ridges = link_ridges(["h100-sxm", "b200", "a100-80gb", "h100-pcie", "l4"], chips=8)
show_table(["part (8 chips)", "link used", "per direction", "HBM ridge", "link ridge (per direction)"],
           [[r.part_id, r.link.name, si(r.link.per_direction_bytes_per_s, "B/s"), num(r.hbm_ridge), num(r.link_ridge)]
            for r in ridges])

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.many_chips import three_roofs

# the TP 8 prefill's FLOPs per byte sent lie between NVLink's ridge and the H100 PCIe's (the claims below)
assert ridges[0].link_ridge < three_roofs(steps[-1][1]).link_intensity < ridges[3].link_ridge
prefill8 = steps[-1][1]
roofs8 = three_roofs(prefill8)
formula_intensity = model.parameter_count() / (4 * model.num_hidden_layers * model.hidden_size * (8 - 1))
pcie_ridge, l4_ridge = (next(r for r in ridges if r.part_id == pid) for pid in ("h100-pcie", "l4"))
md(f"{model.name}'s prefill under TP 8 does **{num(roofs8.link_intensity)} FLOPs per byte sent** (the formula: "
   f"{num(formula_intensity)}), "
   + ("right of" if not roofs8.link_limits_compute else "left of")
   + f" NVLink's ridge ({num(roofs8.link_ridge)})"
   + (": the link's bytes never outlast the compute, though the estimate, not overlapping them, adds them "
      f"({percent(prefill8.comm_time_s / prefill8.time_estimate_s, 0)} of its {duration(prefill8.time_estimate_s)}); "
      f"the bound overlaps them, each byte sent once through the switch: {duration(prefill8.time_lower_bound_s)}, "
      f"{prefill8.lower_bound_roof}-bound. " if not roofs8.link_limits_compute else ". ")
   + f"For 8 H100 PCIe cards over {pcie_ridge.link.name}, the link ridge, {num(pcie_ridge.link_ridge)}, is "
   f"{num(pcie_ridge.link_ridge / roofs8.link_intensity)}× the step's intensity: there the link takes longer than the "
   f"compute. The L4's, {num(l4_ridge.link_ridge)}, is within "
   f"{percent(abs(l4_ridge.link_ridge / roofs8.link_intensity - 1), 0)} of it: neck and neck. (Dense BF16 peaks; "
   "the bidirectional headline would halve each link ridge.) On the chart, "
   "each step is a circle at its FLOPs per HBM byte and a triangle at its FLOPs per byte sent, at the FLOP/s one "
   "chip achieves over the estimate's step:")

# %%
decode8 = place(MODEL, PART, phase="decode", context_tokens=CONTEXT, parallelism=Parallelism(tensor=8))
interconnect_roofline_chart([decode8, prefill8],
                            labels=["decode, batch 1", f"prefill, {count(PREFILL_TOKENS)} tokens"],
                            title=f"{model.name} on 8 × H100 SXM (TP 8): three roofs, per chip")

# %% jupyter={"source_hidden": true}
dec_roofs = three_roofs(decode8)
md(f"**Question.** The decode step's triangle sits at {num(dec_roofs.link_intensity)} FLOP/byte, "
   + ("right of" if not dec_roofs.link_limits_compute else "left of")
   + f" the link ridge. Yet in the estimate its communication takes {duration(decode8.comm_time_s)} of its "
   f"{duration(decode8.time_estimate_s)}. How?")

# %% jupyter={"source_hidden": true}
assert comm_split(decode8).latency_share > 0.9  # "almost all assumed per-call latency"
md("<details><summary>Answer</summary>\n\nThe roof prices bytes. A batch-1 decode's communication in the estimate is "
   f"almost all assumed per-call latency ({duration(comm_split(decode8).latency_s)} of it), which no roof shows, and "
   f"which the bound does not count: {duration(decode8.comm_lower_bound_s)} of communication, a step of "
   f"{duration(decode8.time_lower_bound_s)}. Read the link roof for bandwidth, and count the calls for latency."
   "\n\n</details>")

# %% [markdown]
# ## 7. Where tensor parallelism stops helping
#
# ### Decode at batch 1: a floor in the estimate; the bound keeps falling

# %% jupyter={"source_hidden": true}
rack_link = get_part("gb200").scale_up_link
md("A batch-1 decode is memory-bound, so splitting the weights cuts it; the estimate's communication does not "
   f"shrink with n, because its calls do not. A GB200 NVL72 rack joins {count(rack_link.max_chips)} GPUs in one "
   f"{rack_link.name} domain, so the split can go as far as {model.name}'s {count(model.num_attention_heads)} "
   "attention heads allow:")

# %%
rack = tensor_parallel_sweep(MODEL, "gb200", context_tokens=CONTEXT)
show_table(["split", "estimate, per chip", "estimate's roof", "of which assumed latency", "lower bound, per chip"],
           [[r.parallelism.label, duration(r.step_s), r.roof,
             f"{duration(r.latency_s)} ({percent(r.latency_share, 0)})", duration(r.lower_bound_s)] for r in rack])

# %% jupyter={"source_hidden": true}
takeover = next(r for r in rack if r.bound == "interconnect")
assert rack[-1].bound == "interconnect" and rack[-1].step_s > rack[-1].comm_s  # the estimate's floor: communication
assert all(r.lower_bound_roof == "memory" for r in rack)  # the bound stays memory-bound
top_split = rack[-1]
top_comm = comm_split(top_split.placement)
after = [r for r in rack if r.chips >= takeover.chips]
est_gains = [a.step_s / b.step_s for a, b in zip(after, after[1:])]
assert est_gains == sorted(est_gains, reverse=True)  # "each doubling buys less"
assert all(comm_split(r.placement).latency_share > 0.5 for r in after)  # "(latency)": mostly per-call latency
kv_heads = model.num_key_value_heads
lb_gains = [a.lower_bound_s / b.lower_bound_s for a, b in zip(rack, rack[1:])]  # per doubling of the chips
assert all(g > 1 for g in lb_gains)  # the bound keeps falling
assert all(g > 1.99 for r, g in zip(rack[1:], lb_gains) if r.chips <= kv_heads)  # as 1/n up to the KV heads ...
assert all(g < 1.99 for r, g in zip(rack[1:], lb_gains) if r.chips > kv_heads)  # ... more slowly past them
# a whole KV head per chip in what the estimate reads; the bound shards it over the TP group
assert len({float(r.placement.cost.kv_read_bytes) for r in rack if r.chips >= kv_heads}) == 1
md(f"By the **estimate**, from **{takeover.parallelism.label}** on the communication ({duration(takeover.comm_s)} "
   f"per chip) outlasts the memory time, and each doubling buys less: {count(top_split.chips)} GPUs give "
   f"{num(rack[0].step_s / top_split.step_s)}× one GPU's speed. But {percent(top_comm.latency_share, 1)} of that "
   f"communication is per-call latency ({count(top_comm.calls)} calls × {duration(top_comm.latency_per_call_s)}), "
   "not bytes: hence \"interconnect (latency)\", a cost no roof draws. The **bound** keeps falling, memory-bound at "
   f"every n: {duration(top_split.lower_bound_s)} at {top_split.parallelism.label}, "
   f"{num(rack[0].lower_bound_s / top_split.lower_bound_s)}× one GPU's; as 1/n up to the {count(kv_heads)} KV heads, "
   "more slowly past them, where each chip still holds and reads some weights whole (a KV head's K and V "
   "projections, the norms). The bound shards the replicated KV read over the group, as decode context parallel "
   "does; the estimate keeps each chip reading a whole KV head (section 2).")

# %% [markdown]
# ### Prefill: the link's bandwidth
#
# A prefill sends many bytes per call, so bandwidth takes over from latency, and the part and n
# decide (section 6). The prompts for which a TP 8 prefill's communication outlasts max(compute,
# memory), searched over whole numbers, by each figure's own terms:

# %% jupyter={"source_hidden": true}
import numpy as np

from roofline_lessons.topics.many_chips import comm_crossover

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
# at the crossover the link binds
assert all(not c.found or c.placement.bound == "interconnect" for _, pre, dec in crossings for c in (pre, dec))
assert not crossings[0][1].found  # NVLink: the prefill never becomes interconnect-bound
l4_pre = crossings[-1][1]
# the decode stretches are capped by the package's capacity count
assert all(min(dec.last, largest_that_fits(dec)) == min(dec.last, max_batch_that_fits_on_chips(
    model, get_part(dec.part_id), SHORT_CONTEXT + 1, dec.parallelism))
    for _, _, dec in crossings + bound_crossings if dec.found and largest_that_fits(dec) is not None)
assert largest_that_fits(crossings[1][2]) < crossings[1][2].last  # H100 PCIe: the stretch runs past what fits
assert l4_pre.found and l4_pre.last < l4_pre.searched_up_to  # on L4s the stretch ends (the question below)
assert not bound_crossings[0][1].found and all(pre.found for _, pre, _ in bound_crossings[1:])  # prefill: same verdicts
nvlink_pre = crossings[0][1]
l4_pre_b = bound_crossings[-1][1]
assert l4_pre_b.found and (l4_pre_b.first, l4_pre_b.last) != (l4_pre.first, l4_pre.last)  # same verdict, not stretch
prompts = np.arange(1, nvlink_pre.searched_up_to + 1)
nvlink_sweep = place(MODEL, nvlink_pre.part_id, phase="prefill", prompt_tokens=prompts,
                     parallelism=Parallelism(tensor=8))
est_compute_from = int(prompts[nvlink_sweep.bound == "compute"][0])
lb_compute_from = int(prompts[nvlink_sweep.lower_bound_roof == "compute"][0])
assert all(set(roofs[:start - 1]) == {"memory"} and set(roofs[start - 1:]) == {"compute"}  # never the link
           for roofs, start in ((nvlink_sweep.bound, est_compute_from),
                                (nvlink_sweep.lower_bound_roof, lb_compute_from)))

# %%
show_table(["8 chips of", "link", "prefill interconnect-bound for prompts of (tokens): estimate", "… bound"],
           [[pid, pre.placement.link.name, stretch(pre), stretch(pre_b)]
            for (pid, pre, _), (_, pre_b, _) in zip(crossings, bound_crossings)])

# %% jupyter={"source_hidden": true}
md(f"On NVLink the prefill is memory-bound up to {count(est_compute_from - 1)} tokens by the estimate "
   f"({count(lb_compute_from - 1)} by the bound), compute-bound beyond: never the link. Over PCIe (past the H100 "
   "PCIe's pairwise bridge; the L4 has no chip-to-chip link) the all-reduce takes over by both figures, the bound "
   "counting the ring's bytes too; on the L4 only for a stretch, neck and neck (a verdict resting on the datasheet "
   "peak and PCIe Gen4's raw rate, which real transfers do not reach), and not the same stretch: "
   f"{count(l4_pre.first)}–{count(l4_pre.last)} tokens by the estimate, "
   f"{count(l4_pre_b.first)}–{count(l4_pre_b.last)} by the bound.")

# %% [markdown]
# Per chip, a 1,024-token prefill on each of the three, by the estimate (not overlapped). Read each
# bar left to right as one chip's step: the wide bar is the longer of compute and memory, the thin
# bar drawn over its start is the shorter one, running at the same time, and the communication
# follows after them. The key beside the chart draws one such pair.

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
l4_at_1024 = three_roofs(pre_steps[-1]).link_intensity
assert 0.95 < l4_at_1024 / long_l4.interconnect_ridge_point_flop_per_byte < 1  # "only a little below"
md("<details><summary>Answer</summary>\n\nThe all-reduces grow linearly with the prompt, but attention's FLOPs grow "
   f"with its square. At {count(long_l4.workload.prompt_tokens)} tokens the estimate's compute is "
   f"{duration(long_l4.compute_time_s)} per chip against {duration(long_l4.comm_time_s)} of communication: "
   f"{long_l4.bound}-bound (the lower bound: {long_l4.lower_bound_roof}-bound). The interconnect intensity rises "
   f"with the prompt, to {num(long_l4.interconnect_intensity)} "
   f"FLOP/byte here against the L4's link ridge of {num(long_l4.interconnect_ridge_point_flop_per_byte)}; at "
   f"{count(PREFILL_TOKENS)} tokens it sits only a little below ({num(l4_at_1024)}), so a small rise is "
   "enough.\n\n</details>")

# %% [markdown]
# ## 8. Overlap: the best case
#
# The next layer needs the all-reduced activations, so a plain implementation waits for them.
# Overlapping needs independent work (the next micro-batch, or a matmul streamed in chunks).
# `Parallelism(..., overlap_comm=True)` gives the estimate's **best case**: the longest of compute,
# memory and communication, still with the ring's bytes and the assumed latency.

# %% jupyter={"source_hidden": true}
def one_sequence_overlap(p):
    """What overlap needs at batch 1: the next weights read into L2 during each call, computed for ``p``."""
    s = comm_split(p)
    per_call_s = s.total_s / s.calls  # one call's time by the estimate (latency + ring bytes)
    bandwidth, l2 = p.part.memory_bandwidth_bytes_per_s, p.part.last_level_cache_bytes
    prefetch_bytes = per_call_s * bandwidth
    room = f"within the {binary(l2)} L2" if prefetch_bytes < l2 else f"more than the {binary(l2)} L2 holds"
    return (f"hard to reach with one sequence: only the next weights' reads, prefetched into L2, are independent "
            f"of the sum; one call's {duration(per_call_s)} × {si(bandwidth, 'B/s')} = {binary(prefetch_bytes)}, "
            f"{room}"), prefetch_bytes < l2


prefill_fields = {"phase": "prefill", "prompt_tokens": PREFILL_TOKENS}
cases = [("decode, batch 1, 2 × H100 SXM", PART, 2, {"phase": "decode", "context_tokens": CONTEXT}),
         (f"prefill of {count(PREFILL_TOKENS)}, 8 × H100 PCIe", "h100-pcie", 8, prefill_fields),
         (f"prefill of {count(PREFILL_TOKENS)}, 8 × L4", "l4", 8, prefill_fields)]
overlap_pairs = [(name, place(MODEL, pid, parallelism=Parallelism(tensor=n), **fields),
                  place(MODEL, pid, parallelism=Parallelism(tensor=n, overlap_comm=True), **fields))
                 for name, pid, n, fields in cases]
assert all(best.time_lower_bound_s <= best.time_estimate_s <= plain.time_estimate_s for _, plain, best in overlap_pairs)
decode_note, decode_fits_l2 = one_sequence_overlap(overlap_pairs[0][2])
assert overlap_pairs[0][1].workload.batch == 1 and decode_fits_l2  # the sentence says "within the L2"
assert [best.bound for _, _, best in overlap_pairs[1:]] == ["interconnect", "interconnect"]  # the link is longest

# %%
show_table(["step", "estimate (default)", "estimate, overlapped (best case)", "saved", "lower bound"],
           [[name, duration(plain.time_estimate_s), f"{duration(best.time_estimate_s)}, {best.bound}-bound",
             percent(1 - best.time_estimate_s / plain.time_estimate_s, 0), duration(best.time_lower_bound_s)]
            for name, plain, best in overlap_pairs])

# %% jupyter={"source_hidden": true}
md(f"For the batch-1 decode, overlap is {decode_note}: that prefetch is the overlap the bound assumes, and whether "
   "a given kernel does it is for measurement. Over PCIe the overlapped prefills stay interconnect-bound.")

# %% jupyter={"source_hidden": true}
l4_plain, l4_best = overlap_pairs[-1][1], overlap_pairs[-1][2]
md(f"**Question.** Overlapped, the 8 × L4 prefill still takes {duration(l4_best.time_estimate_s)} per chip. What "
   "would shorten it further?")

# %% jupyter={"source_hidden": true}
assert math.isclose(l4_best.time_estimate_s, l4_best.comm_time_s)  # overlapped and interconnect-bound: the link
l4_rest_s = max(l4_best.compute_time_s, l4_best.memory_time_s)  # what is left once the link is free
assert l4_best.compute_time_s > l4_best.memory_time_s
l4_tp4 = place(MODEL, "l4", parallelism=Parallelism(tensor=4, overlap_comm=True), **prefill_fields)
assert l4_tp4.time_estimate_s > l4_best.time_estimate_s and not l4_tp4.fits_in_memory  # a smaller n: no
l4_w8a8 = place(MODEL, "l4", parallelism=Parallelism(tensor=8, overlap_comm=True), weights_dtype="fp8",
                compute_dtype="fp8", **prefill_fields)
l4_w8a8_fp8_acts = place(MODEL, "l4", parallelism=Parallelism(tensor=8, overlap_comm=True), weights_dtype="fp8",
                         compute_dtype="fp8", activations_dtype="fp8", **prefill_fields)
assert math.isclose(l4_w8a8.time_estimate_s, l4_best.time_estimate_s)  # FP8 matmuls alone: the link still binds
assert l4_w8a8_fp8_acts.time_estimate_s < l4_rest_s  # faster compute and fewer bytes together go past it
md("<details><summary>Answer</summary>\n\nNot more overlap: it hides the shorter terms, and here the link is the "
   f"longest ({duration(l4_best.comm_time_s)} of communication against {duration(l4_best.compute_time_s)} of "
   f"compute). Not a smaller n: TP 4 overlapped takes {duration(l4_tp4.time_estimate_s)} per chip and needs "
   f"{binary(l4_tp4.memory_required_bytes)} of an L4's {binary(l4_tp4.part.memory_capacity_bytes)}. A faster link "
   f"or fewer bytes (a switch that reduces, FP8 activations) save at most {duration(l4_best.time_estimate_s)} → "
   f"{duration(l4_rest_s)}: then compute binds. Going further needs faster compute too: FP8 matmuls alone leave "
   f"{duration(l4_w8a8.time_estimate_s)} (the link), FP8 matmuls with FP8 activations give "
   f"{duration(l4_w8a8_fp8_acts.time_estimate_s)} by the estimate; both change the model's numbers, so check "
   "accuracy.\n\n</details>")

# %% [markdown]
# ## 9. Llama-3.1-70B: two H100s, one H200, or FP8 weights on one H100?
#
# Three ways to serve the 70B model at batch 1, 4,096 tokens cached, plus the pair overlapped and the
# pair with FP8 weights (like with like). Largest batch: every byte usable / vLLM's default memory cap.

# %% jupyter={"source_hidden": true}
setups = compare_setups(MODEL, seventy_b_setups() + (Setup("2 × H100 SXM, TP 2, FP8 weights", PART,
                                                           Parallelism(tensor=2), weights_dtype="fp8"),),
                        context_tokens=CONTEXT)
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
show_table(["setup", "estimate, per chip", "lower bound, per chip", "tokens/s per chip: estimate",
            f"largest batch: all memory / at {percent(VLLM_UTILIZATION, 0)}"],
           [[r.label, duration(r.step_s), duration(r.lower_bound_s), num(r.tokens_per_s / r.chips),
             f"{count(r.max_batch)} / {count(fits_at(r, VLLM_UTILIZATION))}"] for r in setups])

# %% jupyter={"source_hidden": true}
fastest = min(setups[:3], key=lambda r: r.step_s)
fastest_bound = min(setups[:3], key=lambda r: r.lower_bound_s)
runner = min((r for r in setups[:3] if r is not fastest), key=lambda r: r.step_s)
fp8_gap = runner.step_s / fastest.step_s - 1
short = dict(zip((tp2.label, h200.label, fp8.label), ("the H100 pair", "the H200", "the FP8 H100")))
md(f"All three are memory-bound, by both figures. Two H100s read half the weights each at "
   f"{si(part.memory_bandwidth_bytes_per_s, 'B/s')} and pay {duration(tp2.comm_s)} of communication "
   f"({duration(tp2.latency_s)} assumed latency); the H200 reads them all at "
   f"{si(get_part('h200').memory_bandwidth_bytes_per_s, 'B/s')}; FP8 halves the weight bytes on one chip. By the "
   f"estimate the fastest is **{fastest.label}** ({duration(fastest.step_s)}), {percent(fp8_gap, 0)} ahead of "
   f"{runner.label}; by the bound, **{fastest_bound.label}** ({duration(fastest_bound.lower_bound_s)}). "
   + (f"They disagree because {short[fastest_bound.label]}'s estimate holds "
      f"{duration(fastest_bound.latency_s)} of assumed latency "
      f"({percent(fastest_bound.latency_s / (fastest_bound.step_s - fastest_bound.lower_bound_s), 0)} of the "
      f"gap to its bound); without it, {duration(fastest_bound.step_s - fastest_bound.latency_s)}, "
      + ("below" if fastest_bound.step_s - fastest_bound.latency_s < fastest.step_s else "still above")
      + f" {short[fastest.label]}'s {duration(fastest.step_s)}: the ranking rests on what your all-reduce costs per "
      "call. "
      if fastest_bound is not fastest else "Both figures agree on the order. ")
   + "Capacity ranks them differently from the estimate's speed"
   + (" (in the bound's order)" if by_capacity == by_bound else ", and from the bound's")
   + f": at the {percent(VLLM_UTILIZATION, 0)} cap the H200 holds **{count(fits_at(h200, VLLM_UTILIZATION))}** "
   f"sequences (its {binary(h200.placement.footprint.weight_bytes)} of weights exceed "
   f"{binary(VLLM_UTILIZATION * h200.capacity_per_chip_bytes)}).")

# %% [markdown]
# **Question.** For a throughput service at large batch rather than batch-1 latency, which of the
# three would you rather own, per chip? What would you compute to decide?

# %% jupyter={"source_hidden": true}
own = seventy_b_setups()[:3]
assert [o.label for o in own] == [r.label for r in setups[:3]]


def at_largest(setup, row, utilization):
    """The setup's step at the largest batch that fits at ``utilization`` (None if none fits)."""
    b = fits_at(row, utilization)
    return compare_setups(MODEL, [setup], batch=b, context_tokens=CONTEXT)[0] if b else None


def per_chip(rows, rate=lambda r: r.tokens_per_s):
    return {r.label: rate(r) / r.chips for r in rows if r is not None}


full = [at_largest(o, r, 1.0) for o, r in zip(own, setups[:3])]
capped = [at_largest(o, r, VLLM_UTILIZATION) for o, r in zip(own, setups[:3])]
full_rate, capped_rate = per_chip(full), per_chip(capped)
owner = max(full_rate, key=full_rate.get)
assert owner == max(capped_rate, key=capped_rate.get)  # the same winner at either cap
assert owner == max(per_chip(full, lambda r: r.tokens_per_s_upper_bound), key=per_chip(
    full, lambda r: r.tokens_per_s_upper_bound).get)  # and by the upper bound
assert all(max((r for r in rows if r is not None), key=lambda r: r.placement.workload.batch).label == owner
           for rows in (full, capped))  # "it batches the most"


def rates(rows, rate):
    return ", ".join(f"{short[r.label]} {num(rate[r.label])} at batch {count(r.placement.workload.batch)}"
                     if r is not None else f"{short[s.label]} none (no sequence fits)" for r, s in zip(rows, own))


md("<details><summary>Answer</summary>\n\nCompute tokens/s per chip at the largest batch each can hold (within "
   "your latency objective, lesson 10): capacity sets the batch, and the batch sets the throughput. By the "
   f"estimate, with every byte usable: {rates(full, full_rate)}; at vLLM's {percent(VLLM_UTILIZATION, 0)}: "
   f"{rates(capped, capped_rate)}. **{short[owner][0].upper() + short[owner][1:]}** wins both ways (and by the upper "
   "bound): its two chips leave the most memory for KV cache, so it batches the most. Then price them: chip-hours "
   "differ.\n\n</details>")

# %% [markdown]
# ## 10. Expert parallel: a mixture of experts across a node

# %% jupyter={"source_hidden": true}
total_params, active_params = moe.parameter_count(), moe.active_parameter_count()
moe_one = place(MOE, "h200", phase="decode", context_tokens=CONTEXT)
assert not moe_one.fits_in_memory
node = get_part("h200").scale_up_link.max_chips
md(f"{moe.name} has {count(moe.num_experts)} experts in each of its {count(moe.num_hidden_layers)} layers, and routes "
   f"each token to {count(moe.num_experts_per_tok)} of them: {num(total_params / 1e9)} billion parameters held, "
   f"{num(active_params / 1e9)} billion active per token. It needs {binary(moe_one.memory_required_bytes)} on one "
   f"chip; an H200 holds {binary(get_part('h200').memory_capacity_bytes)}. On one {count(node)}-GPU H200 node, "
   f"**tensor parallel** cuts every expert into {count(node)} column slices. **Expert parallel** puts "
   f"{count(moe.num_experts // node)} whole experts on each chip instead: each chip runs attention for its own share "
   "of the sequences, then every token is sent to the chips holding its experts and the results are sent back: "
   "**two all-to-alls per MoE layer** instead of two all-reduces. **TP 2 × EP 4** and **TP 4 × EP 2** mix them. "
   f"Per chip, {count(CONTEXT)} tokens cached:")

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.many_chips import expert_parallel_compare

ep_rows = [(b, e) for b in (1, 256) for e in expert_parallel_compare(MOE, "h200", batch=b, context_tokens=CONTEXT)]
best_small = min((e for b, e in ep_rows if b == 1), key=lambda e: e.row.step_s)
best_large = min((e for b, e in ep_rows if b == 256), key=lambda e: e.row.step_s)
best_small_lb = min((e for b, e in ep_rows if b == 1), key=lambda e: e.row.lower_bound_s)
best_large_lb = min((e for b, e in ep_rows if b == 256), key=lambda e: e.row.lower_bound_s)
assert best_small.row.parallelism.expert == 1 and best_large.row.parallelism.expert > 1  # the claim below
assert best_small_lb.row.parallelism.expert == 1  # by both figures at batch 1
lb_ep_wins = best_large_lb.row.parallelism.expert > 1  # at batch 256 the bound's winner (it shards TP 8's KV read)
tp8_large = next(e for b, e in ep_rows if b == 256 and e.row.parallelism.expert == 1)
hbm_bw = get_part("h200").memory_bandwidth_bytes_per_s
tp_cost, ep_cost = tp8_large.row.placement.cost, best_large.row.placement.cost
# the KV the estimate reads and writes (past the KV heads the replicated reads are in kv_scratch_bytes, part of
# kv_bytes; the replicated writes are counted with the activations)
est_kv_bytes = lambda c: float(c.kv_bytes)  # noqa: E731
kv_saved_s = (est_kv_bytes(tp_cost) - est_kv_bytes(ep_cost)) / hbm_bw
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
assert best_large_lb is best_large or free_winner == best_large_lb.row.parallelism.label or not lb_ep_wins
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

# %%
show_table(["batch", "split", "experts touched per chip", "estimate; roof", "bound under uniform routing"],
           [[count(b), e.row.parallelism.label, num(e.experts_touched_per_chip),
             f"{duration(e.row.step_s)}, {e.row.roof}", duration(e.row.lower_bound_s)] for b, e in ep_rows])

# %% jupyter={"source_hidden": true}
same_small = best_small_lb is best_small
same_large = best_large_lb is best_large
md(f"At batch 1, **{best_small.row.parallelism.label}** is fastest by the estimate "
   f"({duration(best_small.row.step_s)})"
   + (f" and by the bound ({duration(best_small_lb.row.lower_bound_s)})" if same_small else
      f"; by the bound, **{best_small_lb.row.parallelism.label}** ({duration(best_small_lb.row.lower_bound_s)})")
   + ": each chip reads a slice of the few experts touched and 1/8 of the attention; under expert "
   "parallelism a sequence's chip reads all of the attention weights. At batch 256 an expert-parallel "
   f"split wins by the estimate: **{best_large.row.parallelism.label}** "
   f"({duration(best_large.row.step_s)} against {duration(tp8_large.row.step_s)} for TP 8)"
   + (". " if same_large else
      f"; by the bound **{best_large_lb.row.parallelism.label}** is fastest ({duration(best_large_lb.row.lower_bound_s)})"
      + (", expert-parallel too. " if lb_ep_wins else
         ", because the bound shards TP 8's replicated KV read over the chips, as decode context parallel does. "))
   + f"The estimate's largest term: under TP 8 each of the model's {count(moe.num_key_value_heads)} KV heads is "
   f"stored and read twice, {duration(kv_saved_s)} of extra reads per chip, a property of this model and context, "
   "not a rule. "
   "DeepSeek-V3 "
   "(671B) needs multi-head latent attention, which arrives with lesson 12; its "
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
# ## 11. Pipeline parallel: capacity, not latency
#
# **Pipeline parallelism** cuts the layers into p consecutive stages, one per chip; each chip holds
# 1/p of the weights and sends the activations on once per stage. But one token of one sequence
# goes through the layers **in order** (layer 41 needs layer 40's output), so while stage 2 works,
# stage 1 waits. The estimate adds the stages' times and the p − 1 sends; the bound is the larger of
# the busiest stage's bound and **one token's crossing** (the stages' bounds added up). Two H100
# SXMs, batch 1:

# %%
pipe = pipeline_vs_tensor(MODEL, PART, 2, context_tokens=CONTEXT)
show_table(["setup", "memory per chip", "estimate", "sends between stages (estimate)", "lower bound"],
           [[r.label, binary(r.memory_per_chip_bytes) + ("" if r.fits else " — **does not fit**"), duration(r.step_s),
             duration((r.chips - 1) * r.placement.pipeline_send_s) if r.parallelism.pipeline > 1 else "none",
             duration(r.lower_bound_s)] for r in pipe])

# %% jupyter={"source_hidden": true}
alone, tp_pair, pp_pair = pipe
pp_sends_s = (pp_pair.chips - 1) * pp_pair.placement.pipeline_send_s
assert pp_pair.step_s >= alone.step_s  # no faster than one chip would be (if it fitted)
assert math.isclose(pp_pair.step_s, alone.step_s + pp_sends_s, rel_tol=1e-3)  # one chip's time + the sends
assert tp_pair.step_s < pp_pair.step_s
pp_place = pp_pair.placement
assert pp_place.pipeline_lower_bound_basis == "crossing"  # batch 1: one token's crossing binds
assert pp_place.busiest_stage_lower_bound_s < pp_pair.lower_bound_s
assert math.isclose(pp_pair.lower_bound_s, alone.lower_bound_s, rel_tol=0.01)  # "one chip's lower bound"
md(f"By the estimate, the pipeline's step is one chip's time ({duration(alone.step_s)}, a what-if: it does not fit) "
   f"plus {duration(pp_sends_s)} of sending: {percent(pp_pair.step_s / alone.step_s - 1, 2)} slower, where tensor "
   f"parallel 2 takes {duration(tp_pair.step_s)}. The pipeline's bound is one token's crossing, "
   f"{duration(pp_pair.lower_bound_s)}: "
   + (f"the same as one chip's bound ({duration(alone.lower_bound_s)}) to the microsecond"
      if abs(pp_pair.lower_bound_s - alone.lower_bound_s) < 5e-7
      else f"within {percent(abs(pp_pair.lower_bound_s / alone.lower_bound_s - 1), 1)} of one chip's bound, "
      f"{duration(alone.lower_bound_s)}")
   + f". Tensor parallel 2's bound is {duration(tp_pair.lower_bound_s)}: it splits every layer, so a chip's share of "
   "one token really is half.")

# %% jupyter={"source_hidden": true}
stages, in_flight, many = 4, 4, 16
md("Pipelining pays off for **throughput**, when every stage has work. Two cases differ. **Flushed** (GPipe "
   "training, or one prefill split into m micro-batches that must all finish before the next step): the idle share, "
   "the **bubble**, is (p − 1)/(m + p − 1). **Steady decode** (a server keeping m independent batches circulating "
   "through the stages): a stage idles only while fewer batches than stages are in flight, max(0, 1 − m/p). With "
   f"p = {count(stages)} and m = {count(in_flight)}, a flushed pipeline idles "
   f"{percent(bubble_fraction(stages, in_flight), 0)} of the time and a steady decode "
   f"{percent(steady_state_idle_fraction(stages, in_flight), 0)}; a flush needs m = {count(many)} to get down to "
   f"{percent(bubble_fraction(stages, many), 0)}.")

# %% [markdown]
# **Question.** A pipeline of 4 stages serves one user at batch 1. What does the user see, and what
# does the operator lose?

# %% jupyter={"source_hidden": true}
assert steady_state_idle_fraction(4, 4) == 0 < bubble_fraction(4, 4)  # the two cases differ
pp4 = place(MODEL, PART, phase="decode", context_tokens=CONTEXT, parallelism=Parallelism(pipeline=4))
md(f"<details><summary>Answer</summary>\n\nThe user sees the whole step: 4 stages one after another plus 3 sends, "
   f"{duration(pp4.time_estimate_s)} per token on 4 H100 SXMs by the estimate — one chip's estimate for the whole "
   f"model ({duration(alone.step_s)}) plus {duration(3 * pp4.pipeline_send_s)} of sends (PP 2 above: "
   f"{duration(pp_pair.step_s)}); no implementation gets one token through faster than one chip's lower bound, "
   f"{duration(alone.lower_bound_s)}. The operator leaves {percent(steady_state_idle_fraction(4, 1), 0)} of the chips' "
   "time idle: with one batch in flight, three of the four stages wait at any moment. Three more independent "
   "batches would fill the pipe.\n\n</details>")

# %% [markdown]
# ## 12. Measured against both figures: gpt-fast's 70B on 8 × A100

# %% jupyter={"source_hidden": true}
gf = gpt_fast_70b()
ms = gf.measurement
vp = gf.vocab_parallel
head_calls = int(vp.comm.calls - gf.comm.calls)
assert head_calls > 0 and gf.replicated_head_bytes > 0
assert gf.estimate_step_s > vp.time_estimate_s and gf.lower_bound_step_s > vp.time_lower_bound_s
gf_weights = gf.placement.footprint.weight_bytes * gf.placement.chips  # summed over the GPUs
whole_ends = sum(o.weight_params * o.layers * o.bytes_per_weight for o in single.cost.ops
                 if o.name in ("embed_tokens", "lm_head"))  # the two matrices gpt-fast keeps whole on every GPU
assert math.isclose(gf_weights - single.footprint.weight_bytes, (gf.placement.chips - 1) * whole_ends, rel_tol=1e-3)
md(f"The catalog's one published multi-chip decode rate: {ms.what}, **{num(gf.measured_tokens_per_s)} tokens/s** "
   f"({ms.source}; conditions in \"Going further: gpt-fast's gap\"). Both figures **assume** "
   f"{count(gf.context_tokens)} tokens cached, as lesson 3 did (even {count(8 * gf.context_tokens)} tokens "
   f"of KV cache are {binary(model.kv_bytes_per_token('bf16') * 8 * gf.context_tokens)}, against "
   f"{binary(gf_weights)} of weights on the {count(gf.placement.chips)} GPUs together: the model's "
   f"{binary(single.footprint.weight_bytes)} plus {count(gf.placement.chips - 1)} extra copies of the embedding and "
   "lm_head). **Like for like:** gpt-fast's "
   f"`tp.py` shards only attention and the MLP ({count(gf.comm.calls)} all-reduces per token); the embedding and "
   f"the lm_head stay **whole on every GPU** ({head_calls} calls fewer, but {si(gf.replicated_head_bytes, 'B')} more "
   "lm_head read per GPU). Both figures price that layout.")

# %%
show_table(["TP 8, gpt-fast's layout", "estimate", "lower bound"],
           [["step, per chip", duration(gf.estimate_step_s), duration(gf.lower_bound_step_s)],
            ["tokens/s", num(gf.estimate_tokens_per_s), num(gf.upper_bound_tokens_per_s)],
            [f"measured ({num(gf.measured_tokens_per_s)} tokens/s) ÷ it", percent(gf.fraction_of_estimate, 0),
             percent(gf.fraction_of_upper_bound, 0)]])

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.many_chips import gpt_fast_empirical_bandwidth_bytes_per_s

assert gf.measured_tokens_per_s < gf.upper_bound_tokens_per_s  # a bound must never be beaten
assert gf.measured_tokens_per_s < gf.estimate_tokens_per_s  # nor, here, the estimate
gp = gf.placement
assert not gp.link.in_switch_reduction  # A100: NVLink 3, no reduction in the switch: the bound counts the ring too
empirical_bw = gpt_fast_empirical_bandwidth_bytes_per_s()
a100_bw = gp.part.memory_bandwidth_bytes_per_s
md(f"gpt-fast reaches **{percent(gf.fraction_of_upper_bound, 0)} of the upper bound** and "
   f"**{percent(gf.fraction_of_estimate, 0)} of the estimate** ({duration(gf.measured_step_s)} per token; the A100's "
   "NVLink 3 does not reduce in the switch, so both figures count the ring's bytes). The causes of the rest are "
   "**hypotheses** until measured; \"Going further: gpt-fast's gap\" sizes and tests each.")

# %% jupyter={"source_hidden": true}
md("**Question.** Which input of the estimate would you measure first on that machine, and how?")

# %% jupyter={"source_hidden": true}
assert gf.comm.latency_basis == "assumed"  # the latency is the input with no figure for that machine
assert empirical_bw / a100_bw > gf.hbm_fraction_to_close_gap  # the README's bandwidth alone: only part of the gap
md(f"<details><summary>Answer</summary>\n\nThe per-call latency. It is the one input with no figure for that "
   f"machine (assumed: {duration(gf.comm.latency_per_call_s)}), and alone it would have to be "
   f"{duration(gf.latency_per_call_to_close_gap_s)} per call to close the gap. The HBM bandwidth already has a "
   f"figure: gpt-fast's README notes an empirical peak of about {si(empirical_bw, 'B/s')} (no "
   f"method given), {percent(empirical_bw / a100_bw, 0)} of the datasheet's {si(a100_bw, 'B/s')}, while closing the "
   f"gap alone would take {percent(gf.hbm_fraction_to_close_gap, 0)}: if it holds, it explains only part. Time a "
   f"{binary(activation_message_bytes(MODEL, int(gp.workload.batch)))} BF16 all-reduce over the 8 GPUs the way "
   "gpt-fast runs it (\"Going further: gpt-fast's gap\"), or read the all-reduce kernels' durations in a profile of the run."
   "\n\n</details>")

# %% [markdown]
# ## Explore: the many-chips dashboard
#
# Pick a model, a part, the split, the chips, the batch and the phase; tick overlap for the estimate's
# best case. Try: Llama-3.1-70B on H100 SXMs, tensor parallel over 1 → 8 chips at batch 1 (what stays
# constant in the estimate, and in the bound?); the same on L4s in prefill (which roof binds?);
# pipeline instead of tensor (what happens to the step?); Qwen3-235B-A22B on eight H200s, expert
# against tensor parallel at batch 1 and at batch 256.

# %%
from roofline_lessons.viz.dashboards import lesson11_dashboard

dashboard = lesson11_dashboard()

# %% [markdown]
# ## Summary
#
# - A 70B model in BF16 does not fit one H100. Tensor parallel: each chip holds and reads 1/n of the
#   split weights (the KV cache only up to the KV heads) and sends two all-reduces per layer, by a
#   ring 2(n − 1)/n of the message, at the link's **per-direction** bandwidth, half the headline; a
#   switch that reduces needs each byte sent once, and a measured all-reduce can beat the ring's limit.
# - Two figures per chip: the lower bound (least bytes, overlapped, no per-call latency) and the
#   estimate (the ring, communication after the compute, an assumed latency per call). Say which one
#   you quote, and how much of the estimate is assumed latency.
# - The estimate's communication is calls × latency + bytes ÷ bandwidth: batch-1 decode is
#   latency-bound, prefill bandwidth-bound. The third ridge is peak ÷ link bandwidth, and a tensor-parallel
#   step's intensity falls as 1/(n − 1): over NVLink a 70B prefill's link bytes never outlast its
#   compute, over PCIe they do.
# - By the estimate, tensor parallelism cuts decode latency down to a floor that is the assumed
#   latency; the bound keeps falling. Overlap cannot hide a link that is the longest term. Expert
#   parallelism swaps all-reduces for all-to-alls (whether it wins depends on the model, batch and
#   context); pipeline parallelism adds capacity, not latency.
# - A published figure sits below the upper bound (it must); price it as the implementation lays the
#   model out, and treat the gap's causes as hypotheses until measured.
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
# The exercises for this lesson are in `exercises/11_many_chips.ipynb`. The sections below go
# further: every column of the tables above, and the details behind them.

# %% [markdown]
# ## Going further: the tensor-parallel tables in full
#
# Section 3's sweep with every term, per chip: the estimate's compute, memory and communication,
# the share of assumed latency, the bound, and each figure's roof.

# %%
show_table(["split", "compute, per chip (estimate)", "memory, per chip (estimate)",
            "communication, per chip (estimate: ring + assumed latency)", "estimate, per chip",
            "of which assumed latency", "lower bound, per chip", "estimate's roof",
            "tokens/s (all chips): estimate", "tokens/s (all chips): upper bound"],
           [[r.parallelism.label, duration(r.compute_s), duration(r.memory_s), duration(r.comm_s), duration(r.step_s),
             f"{duration(r.latency_s)} ({percent(r.latency_share, 0)})", duration(r.lower_bound_s), r.roof,
             num(r.tokens_per_s), num(r.tokens_per_s_upper_bound)] for r in tp])

# %% [markdown]
# Section 6's ridges beside the bidirectional headline; the last column divides by it, and so
# shows half the true link ridge:

# %%
show_table(["part (8 chips)", "link used", "per direction", "bidirectional headline", "HBM ridge",
            "link ridge (per direction)", "link ridge with the headline (wrong)"],
           [[r.part_id, r.link.name, si(r.link.per_direction_bytes_per_s, "B/s"),
             si(r.link.bidirectional_bytes_per_s, "B/s"), num(r.hbm_ridge), num(r.link_ridge), num(r.headline_ridge)]
            for r in ridges])

# %% [markdown]
# Section 7's rack with each figure's roof and its speed-up over one GPU:

# %%
show_table(["split", "memory, per chip (estimate)", "communication, per chip (estimate)", "estimate, per chip",
            "of which assumed latency", "estimate's roof", "estimate: speed-up over 1 chip", "lower bound, per chip",
            "lower bound's roof", "lower bound: speed-up over 1 chip"],
           [[r.parallelism.label, duration(r.memory_s), duration(r.comm_s), duration(r.step_s),
             f"{duration(r.latency_s)} ({percent(r.latency_share, 0)})", r.roof,
             f"{num(rack[0].step_s / r.step_s)}×", duration(r.lower_bound_s), r.lower_bound_roof,
             f"{num(rack[0].lower_bound_s / r.lower_bound_s)}×"] for r in rack])

# %% [markdown]
# ## Going further: ring or in-switch, the least bytes
#
# The NVSwitch of NVLink 4 and later (H100, H200, B200, GB200) can add the chips' partial sums
# **inside the switch** (NVLink SHARP; NCCL calls the algorithm NVLS): each chip sends its whole
# message to the switch once and receives the sum once. That is **1 × the message** per chip,
# against the ring's 2(n − 1)/n: the same at n = 2, fewer bytes beyond. The lower bound counts the
# least bytes the link allows; the estimate keeps the ring. On parts whose switch does not reduce
# (A100's NVLink 3, PCIe, the L4) both count the ring.

# %%
show_table(["chips n", "ring: share sent", "least: share sent", "ring: most algorithm bandwidth",
            "least: most algorithm bandwidth", "bound: bytes ÷ bandwidth, no latency"],
           [[count(a.tensor), num(a.ring_factor), num(a.least_factor), si(a.ring_algorithm_bytes_per_s, "B/s"),
             si(a.least_algorithm_bytes_per_s, "B/s"), duration(a.bound_time_s)] for a in reduces])

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.many_chips import NVLS_ALGBW_PART, nvls_all_reduce_measurement

assert all(a.in_switch for a in reduces) and reduces[0].least_factor == reduces[0].ring_factor  # same at n = 2
measured = nvls_all_reduce_measurement()  # from the catalog, with its conditions and source
nvls = one_all_reduce(NVLS_ALGBW_PART, measured.chips, message)
assert nvls.ring_algorithm_bytes_per_s < measured.value <= nvls.least_algorithm_bytes_per_s
md(f"*Algorithm bandwidth* is what nccl-tests prints as algbw: the message ÷ the all-reduce's time. A ring can "
   f"reach at most the per-direction rate ÷ 2(n − 1)/n: {si(nvls.link.per_direction_bytes_per_s, 'B/s')} ÷ "
   f"{num(nvls.ring_factor)} = **{si(nvls.ring_algorithm_bytes_per_s, 'B/s')}** on {count(measured.chips)} H100s. "
   f"An NCCL maintainer gives about **{si(measured.value, 'B/s')}** for NVLS on {count(measured.chips)} "
   f"H100s ({measured.source}, {measured.date}; {measured.conditions}). That is above what any ring can do, so the "
   f"ring cannot be a lower bound there. It is below the in-switch limit of "
   f"{si(nvls.least_algorithm_bytes_per_s, 'B/s')}, as a measurement under a bound must be (the same thread puts "
   "part of the gap down to NCCL's protocol overhead).")

# %% [markdown]
# ## Going further: how much rests on the assumed latency
#
# The catalog gives each link a per-call latency and marks it as an **assumption**: an order of
# magnitude (NCCL's small-message all-reduce inside one 8-GPU node), not a measurement of your
# system. The estimate charges **one fixed cost per call, the same whatever the number of chips n**:
# a one-shot, switch-style model. A textbook ring pays 2(n − 1) hop latencies (NCCL's low-latency
# protocols, LL and LL128, cut the cost of each hop, not the number of hops). NCCL's tree is a chain
# inside a node: its latency is linear in the GPUs per node and logarithmic only in the number of
# nodes (NCCL's own cost model, `ncclTopoTuneModel` in its `src/graph/tuning.cc`, charges a tree
# all-reduce 2 × ((GPUs per node − 1) × one intra-node hop + log2(nodes) × one inter-node hop)).
# NVLS, the reduction in the switch, and custom one-shot all-reduce kernels (a few µs)
# stay roughly flat in n. The lower bound counts no latency at all (no physical law fixes one), only
# the least bytes.
#
# The tensor-parallel sweep of section 3 at four per-call latencies. The estimate moves with the
# latency; the lower bound, in the last row, does not. A latency of 0 still leaves the estimate
# above the bound: the ring's bytes added after the compute, and the unfused activations.

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

# %% jupyter={"source_hidden": true}
assert all(a.step_s < b.step_s for a, b in zip(sens, sens[len(TP_SIZES):]))  # more latency, slower estimates
assert all(math.isclose(a.lower_bound_s, b.lower_bound_s) for a, b in zip(sens, sens[len(TP_SIZES):]))  # bound fixed
assert all(r.lower_bound_s < r.step_s for r in sens)
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
# Section 7's rack at the same latencies:

# %%
rack_sizes = (8, top_split.parallelism.tensor)
rack_sens = latency_sensitivity(MODEL, "gb200", rack_sizes, LATENCIES_S, context_tokens=CONTEXT)
show_table(["per-call latency"] + [f"TP {count(t)}, per chip, and the roof that binds" for t in rack_sizes],
           [[f"estimate at {duration(lat)}"] + [f"{duration(r.step_s)}, {r.roof}" for r in rack_sens
                                                 if r.latency_s == lat] for lat in LATENCIES_S]
           + [["lower bound (any latency)"] + [f"{duration(r.lower_bound_s)}, {r.lower_bound_roof}"
                                               for r in rack_sens[:len(rack_sizes)]]])

# %% jupyter={"source_hidden": true}
assert rack_sens[1].bound == "memory"  # with free calls TP 64's estimate is memory-bound: the floor is the latency
md(f"With free calls, the estimate of {top_split.parallelism.label} is memory-bound at "
   f"{duration(rack_sens[1].step_s)}; at {duration(LATENCIES_S[-1])} per call it is {duration(rack_sens[-1].step_s)}. "
   f"The lower bound, {duration(rack_sens[1].lower_bound_s)}, does not move. Measure the small-message all-reduce "
   "on the rack (nccl-tests, or the serving engine's own kernels) before you size one by the estimate.")

# %% [markdown]
# ## Going further: the KV cache past the KV heads
#
# Section 2's question in full: Qwen3-235B-A22B on H200s, 16 sequences of 8,192 tokens.

# %%
show_table(["split", "KV cache per chip", "whole cache ÷ n (wrong past the KV heads)", "copies of each KV head"],
           [[p.parallelism.label, binary(p.footprint.kv_cache_bytes), binary(whole_kv / p.chips),
             count(max(1, p.chips // moe.num_key_value_heads))] for p in kv_rows])

# %% [markdown]
# ## Going further: decode batches where the all-reduce takes over
#
# Section 7's search with decode added: the smallest batch (512 tokens cached) at which the
# communication outlasts max(compute, memory), for TP 8, by each figure's own terms: the estimate's
# (ring bytes and the assumed latency, against unfused compute and memory) and the lower bound's
# (the least bytes, against compulsory traffic).

# %%
show_table(["8 chips of", "link", "prefill: interconnect-bound for prompts of (tokens), estimate",
            "… lower bound", f"decode, {count(SHORT_CONTEXT)} cached: for batches of, estimate", "… lower bound"],
           [[pid, pre.placement.link.name, stretch(pre), stretch(pre_b), stretch(dec), stretch(dec_b)]
            for (pid, pre, dec), (_, pre_b, dec_b) in zip(crossings, bound_crossings)])

# %% jupyter={"source_hidden": true}
pcie_dec = crossings[1][2]
one_seq = place(MODEL, "h100-pcie", phase="decode", batch=1, context_tokens=SHORT_CONTEXT,
                parallelism=Parallelism(tensor=8))
two_seq = place(MODEL, "h100-pcie", phase="decode", batch=2, context_tokens=SHORT_CONTEXT,
                parallelism=Parallelism(tensor=8))
md((f"On the H100 PCIe a decode batch with a short context becomes interconnect-bound too, from batch "
    f"{count(pcie_dec.first)}: each sequence adds {duration(two_seq.comm_time_s - one_seq.comm_time_s)} of link time "
    f"per chip but only {duration(two_seq.memory_time_s - one_seq.memory_time_s)} of HBM time, while the weight reads "
    "stay fixed. " if pcie_dec.found else "")
   + "Where the two figures' stretches differ, the difference is the assumed latency and the unfused bytes the "
   "estimate counts; a verdict that only the estimate gives is an estimate's verdict.")

# %% [markdown]
# ## Going further: the 70B setups in full
#
# Section 9's setups as bars, one chip's step each (thin bars run at the same time as the wide bar
# under them), then its table with every column; the overlapped pair says what its overlap needs.

# %%
time_breakdown_chart([r.placement for r in setups[:4]],
                     ["2 × H100 SXM, TP 2", "1 × H200", "1 × H100 SXM, FP8 weights", "2 × H100 SXM, overlapped"],
                     title=f"{model.name} decode, batch 1, {count(CONTEXT)} cached: one step per chip")

# %%
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

# %% jupyter={"source_hidden": true}
md("Weight-only FP8 kernels (which convert the weights to BF16 on the fly) may reach a lower share of the "
   "bandwidth than BF16 ones: a hypothesis to test, not a figure this course has a source for. Here FP8 is weight "
   f"storage only: the placement keeps the KV cache in {fp8_work.kv_dtype.upper()} and computes on "
   f"{fp8_work.activations_dtype.upper()} activations. Compared like with like, FP8 weights on the pair take "
   f"{duration(tp2_fp8.step_s)} by the estimate ({duration(tp2_fp8.lower_bound_s)} lower bound). Per chip, the one "
   f"FP8 H100 gives {num(fp8.tokens_per_s / (tp2.tokens_per_s / tp2.chips))}× the estimated tokens/s of the BF16 "
   "pair, but FP8 weights change the model's numbers: check its accuracy on your task before you count the saving. "
   f"With every byte usable the pair holds {count(tp2.max_batch)} such sequences, the H200 {count(h200.max_batch)}, "
   f"the FP8 H100 {count(fp8.max_batch)}. The {percent(VLLM_UTILIZATION, 0)} is vLLM's long-standing default "
   "`gpu_memory_utilization`, the share of memory it lets itself use.")

# %% [markdown]
# ## Going further: expert parallel's modelling choices and its terms

# %% jupyter={"source_hidden": true}
from roofline_lessons.core.parallel import remote_groups_per_token

md("Three modelling choices of this course, not facts about every engine: (1) attention is **data-parallel across "
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
   "Section 10's table with every column, per chip:")

# %%
show_table(["batch", "split", "experts held per chip (a 1/t slice of each under TP t)", "experts touched per chip",
            "all-reduce bytes per chip (ring)",
            "all-to-all bytes per chip (estimate's one copy per expert, as received)",
            "communication, per chip (estimate)", "memory per chip",
            "estimate, per chip", "estimate's roof", "lower bound under uniform routing, per chip",
            "largest batch that fits"],
           [[count(b), e.row.parallelism.label, count(e.experts_held_per_chip), num(e.experts_touched_per_chip),
             si(e.all_reduce_bytes, "B"), si(e.all_to_all_bytes, "B"), duration(e.row.comm_s),
             binary(e.row.memory_per_chip_bytes), duration(e.row.step_s), e.row.roof, duration(e.row.lower_bound_s),
             count(e.row.max_batch)]
            for b, e in ep_rows])

# %% jupyter={"source_hidden": true}
md(f"At batch 256, by the estimate, **{best_large.row.parallelism.label}** is fastest here "
   f"({duration(best_large.row.step_s)} against {duration(tp8_large.row.step_s)} for TP 8; next comes "
   f"{runner_up.row.parallelism.label} at {duration(runner_up.row.step_s)}, {percent(runner_gap, 0)} slower)"
   + (". The lower bound agrees. " if same_large else
      f"; by the lower bound **{best_large_lb.row.parallelism.label}** is "
      f"({duration(best_large_lb.row.lower_bound_s)} against {duration(best_large.row.lower_bound_s)} for "
      f"{best_large.row.parallelism.label}). The two figures rank these two the other way round: "
      f"{best_large.row.parallelism.label} is {percent(est_gap, 0)} ahead by the estimate, "
      f"{best_large_lb.row.parallelism.label} {percent(lb_gap, 0)} ahead by the bound. What separates the figures "
      + ("" if lb_ep_wins else "here is first the bound's sharding of TP 8's replicated KV read (as decode context "
         "parallel does), which the estimate, like an engine without it, does not do; then ")
      + ("here is " if lb_ep_wins else "") + "two of the estimate's conventions — its latency per call (the mixed splits make the most calls: "
      f"at least {count(mixed_calls)} per step, against {count(calls[best_large.row.parallelism.label])} for "
      f"{best_large.row.parallelism.label}) and the communication added after the compute: with free calls "
      f"and the communication overlapped, the estimate puts **{free_winner}** first"
      + (", as the bound does. " if free_winner == best_large_lb.row.parallelism.label else ". ")
      + ("That an expert-parallel split beats TP 8 holds by both figures. " if lb_ep_wins else ""))
   + f"Per chip, by the estimate, {best_large.row.parallelism.label} is {duration(step_gap_s)} faster than TP 8. "
   "Three main terms: TP 8 reads "
   f"{si(est_kv_bytes(tp_cost) - est_kv_bytes(ep_cost), 'B')} more KV cache ({duration(kv_saved_s)} at the H200's bandwidth) "
   f"because 8 chips exceed the model's {count(moe.num_key_value_heads)} KV heads, so each KV head is stored and read "
   f"twice; {best_large.row.parallelism.label} reads {si(ep_cost.weight_bytes - tp_cost.weight_bytes, 'B')} more "
   f"weights ({duration(weights_extra_s)}): the whole attention on every chip, and the whole lm_head "
   f"({duration(head_extra_s)} of it); and its all-to-alls take {duration(comm_saved_s)} less than TP 8's "
   f"all-reduces. Together {duration(main_terms_s)}; the remaining {duration(activations_extra_s)} is activation "
   "traffic: under TP 8 the operators every chip runs whole (the expert combine, the norms, the residual adds, the "
   f"router) run on all {count(tp8_large.row.placement.workload.batch)} tokens on every chip, under "
   f"{best_large.row.parallelism.label} on its own "
   f"{count(math.ceil(best_large.row.placement.workload.batch / best_large.row.parallelism.expert))}. "
   "The KV replication is the largest term.")

# %% [markdown]
# ## Going further: pipeline bubbles and the busiest stage
#
# Section 11's idle shares for 2, 4 and 8 stages (a server such as vLLM keeps independent batches
# circulating through the stages, the steady-decode case), and the busiest stage of the 2-stage
# pipeline against the whole step:

# %%
MICRO = (1, 4, 16, 64)
show_table(["stages p", "case"] + [f"m = {count(m)}" for m in MICRO],
           [[count(p), case] + [percent(f(p, m), 0) for m in MICRO]
            for p in (2, 4, 8)
            for case, f in (("flushed: (p − 1)/(m + p − 1)", bubble_fraction),
                            ("steady decode: max(0, 1 − m/p)", steady_state_idle_fraction))])

# %% jupyter={"source_hidden": true}
md(f"In the PP 2 pipeline the busiest stage takes {duration(pp_place.stage_time_s)} per chip by the estimate, of a "
   f"step of {duration(pp_pair.step_s)}. Its bound alone would allow {duration(pp_place.busiest_stage_lower_bound_s)}: "
   "the bound once enough independent sequences keep both stages busy. With fewer sequences than stages, one "
   f"token's crossing is the larger ({duration(pp_pair.lower_bound_s)}).")

# %% [markdown]
# ## Going further: gpt-fast's gap, what-ifs and hypotheses
#
# Section 12's measurement, as the catalog records it:

# %%
show_table(["", ""], [["what", ms.what], ["conditions", ms.conditions], ["source", ms.source],
                      ["measured", f"{num(gf.measured_tokens_per_s)} tokens/s"]])

# %% jupyter={"source_hidden": true}
md("Section 12's two figures term by term, per chip, for gpt-fast's layout (section 2's vocabulary-parallel "
   f"layout of the same step would give {duration(vp.time_estimate_s)} and {duration(vp.time_lower_bound_s)}):")

# %%
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

# %% [markdown]
# The estimate rests on two figures gpt-fast's README itself qualifies: the HBM bandwidth (it notes
# the A100's empirical peak is below the datasheet's) and the per-call latency (assumed). The
# what-ifs, per chip:

# %%
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

# %% jupyter={"source_hidden": true}
assert [bound_cell(w).endswith("(what-if)") for _, w in what_ifs] == [False, False, True, True]
assert all(w.measured_tokens_per_s < w.estimate_tokens_per_s for _, w in what_ifs)
assert math.isclose(what_ifs[0][1].lower_bound_step_s, what_ifs[1][1].lower_bound_step_s)  # latency: no effect
tightest = what_ifs[-1][1]
gf_message = activation_message_bytes(MODEL, int(gp.workload.batch))  # one token's activations, BF16
md(f"At the README's empirical bandwidth gpt-fast reaches {percent(tightest.fraction_of_estimate, 0)} of the "
   "estimate. The hypotheses, each with the size it would need to explain the whole gap to the estimate alone "
   "where the model can say:\n\n"
   f"- *Hypothesis: the collectives cost more than the assumed {duration(gf.comm.latency_per_call_s)} per call.* "
   f"Alone, that would take about {duration(gf.latency_per_call_to_close_gap_s)} per call. Mind which all-reduce "
   "runs: the README launches tensor parallelism with `ENABLE_INTRA_NODE_COMM=1`, which sends these small BF16 "
   "sums through PyTorch's own intra-node all-reduce where it applies (one node, BF16, small messages; one-shot, "
   "two-shot, or an algorithm for the hybrid cube mesh, over direct GPU-to-GPU NVLink) instead of NCCL; "
   "nccl-tests would time NCCL's path, which these calls skip. "
   f"Test: time a {binary(gf_message)} BF16 `torch.distributed.all_reduce` over the 8 GPUs with "
   "`ENABLE_INTRA_NODE_COMM=1` on that machine, or read the all-reduce kernels' durations in a profile of the run.\n"
   f"- *Hypothesis: the HBM delivers less than its datasheet bandwidth.* Alone, that would mean "
   f"{percent(gf.hbm_fraction_to_close_gap, 0)} of {si(a100_bw, 'B/s')}; the README notes an empirical peak of about "
   f"{si(empirical_bw, 'B/s')} ({percent(empirical_bw / a100_bw, 0)} of it; no method given), which would explain "
   "part of the gap, if it holds. "
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
