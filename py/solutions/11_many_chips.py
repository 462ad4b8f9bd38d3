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
# # Lesson 11 — Exercises: many chips
#
# Every checker recomputes its answer from the package when you run it, so a catalog update never
# leaves an answer stale. With more than one chip every figure is **per chip**. Times in
# **seconds**, memory in **GiB** (2^30 bytes), intensities in **FLOP/byte**. Each exercise says
# which figure it asks for: the **estimate** (collectives by the ring, the catalog's **assumed**
# latency per call, communication and pipeline stages one after another, not overlapped) or the
# **lower bound** (the least bytes the link allows, no per-call latency).

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/11_many_chips.ipynb` is generated from it.*

# %%
from roofline_lessons import get_model, get_part, place
from roofline_lessons.core.parallel import Parallelism
from roofline_lessons.course.checks import lesson11 as grade

h100 = get_part("h100-sxm")
link = h100.scale_up_link  # NVLink: .per_direction_bytes_per_s, .bidirectional_bytes_per_s, .latency_s

# %% [markdown]
# ## Exercise 11.1 — memory per chip, past the KV heads
#
# Qwen3-235B-A22B in BF16 under **tensor parallel 8** on H200s holds 64 sequences of 8,192 tokens
# each. Tensor parallelism divides the weights by 8 (the norms and the router it replicates are
# negligible here) and splits the KV cache **by KV head**. From `get_model(...)`
# (`parameter_count()`, `kv_bytes_per_token("bf16")`, `num_key_value_heads`), how many **GiB** does
# one chip hold (weights + KV cache)?

# %%
qwen = get_model("qwen3-235b-a22b")
# BEGIN SOLUTION
weights_per_chip = qwen.parameter_count() * 2 / 8
kv_whole = 64 * 8192 * qwen.kv_bytes_per_token("bf16")
kv_per_chip = kv_whole / min(8, qwen.num_key_value_heads)  # 4 KV heads: each chip holds 1/4, not 1/8
memory_per_chip_gib = (weights_per_chip + kv_per_chip) / 2**30
# END SOLUTION
grade.moe_memory_per_chip_gib(memory_per_chip_gib)

# %% [markdown] tags=["solution"]
# With 4 KV heads over 8 chips, each KV head lives on 2 chips: the cache divides by 4, not 8.
# Dividing by 8 overstates how many sequences fit. And a GiB is 2^30 bytes, not 10^9.

# %% [markdown]
# ## Exercise 11.2 — one all-reduce, by the estimate
#
# A 1,024-token prefill of Llama-3.1-70B under tensor parallel 8 on H100 SXMs all-reduces its
# activations twice per layer: 1,024 tokens × `hidden_size` × 2 bytes each time. The **estimate**
# uses a ring, in which each chip sends 2(n − 1)/n of the message, and charges each call the
# catalog's assumed `link.latency_s`. By the estimate, how many **seconds** does one such
# all-reduce take, the call's latency included?

# %%
llama = get_model("llama-3.1-70b")
# BEGIN SOLUTION
n = 8
message_bytes = 1024 * llama.hidden_size * 2
sent_bytes = 2 * (n - 1) / n * message_bytes
all_reduce_s = link.latency_s + sent_bytes / link.per_direction_bytes_per_s
# END SOLUTION
grade.one_all_reduce_s(all_reduce_s)

# %% [markdown] tags=["solution"]
# The per-direction rate is half the datasheet's bidirectional figure: a chip sends its share out
# one way while it receives the same amount the other way. The headline makes the bytes look twice
# as fast. The lower bound is smaller again: the H100's NVSwitch reduces in the switch, so each
# byte goes once, and it counts no latency (`one_all_reduce(...).bound_time_s`).

# %% [markdown]
# ## Exercise 11.3 — a decode step's communication, by the estimate
#
# The same model decodes a **batch of 64** sequences (4,096 tokens cached each) under tensor
# parallel 8. Per step, each chip takes part in **2 all-reduces per layer** of the batch's
# activations (64 × `hidden_size` × 2 bytes), **1 all-reduce** after the embedding (the same size),
# and **1 all-gather** of the logits, in which each chip sends (n − 1)/n of 64 × `vocab_size` × 2
# bytes. In the **estimate** the all-reduces go by the ring (2(n − 1)/n of the message per chip),
# every call costs `link.latency_s` (one fixed cost per call, whatever n: an assumption), and every
# byte sent moves at the per-direction bandwidth. How many **seconds** of communication per chip
# per step, by the estimate? (Answer within 1 %: the calls and the bytes both matter.)

# %%
# BEGIN SOLUTION
n, batch = 8, 64
message_bytes = batch * llama.hidden_size * 2
all_reduces = 2 * llama.num_hidden_layers + 1
sent = all_reduces * 2 * (n - 1) / n * message_bytes + (n - 1) / n * batch * llama.vocab_size * 2
calls = all_reduces + 1
decode_comm_s = calls * link.latency_s + sent / link.per_direction_bytes_per_s
# END SOLUTION
grade.decode_comm_s(decode_comm_s)

# %% [markdown] tags=["solution"]
# About two thirds of it is the per-call latency and a third the bytes; at batch 1 the bytes would
# shrink 64-fold and the calls alone would set the cost. The catalog's latency is an assumption (an
# order of magnitude): measure your own with nccl-tests before you trust the figure.

# %% [markdown]
# ## Exercise 11.4 — the third ridge
#
# Eight L4s have no chip-to-chip link: they talk over PCIe (`l4.host_link`). What is their
# **interconnect ridge**, in FLOP/byte: the dense BF16 peak (`l4.peak_flops_per_s("bf16")`) ÷ the
# link's bandwidth? Which bandwidth?

# %%
l4 = get_part("l4")
# BEGIN SOLUTION
link_ridge = l4.peak_flops_per_s("bf16") / l4.host_link.per_direction_bytes_per_s
# END SOLUTION
grade.l4_link_ridge(link_ridge)

# %% [markdown] tags=["solution"]
# Per direction: a chip pushes its bytes out one way. A tensor-parallel step of a 70B model does
# roughly as many FLOPs per byte sent as this ridge, so on eight L4s the link can bind: compare
# `place("llama-3.1-70b", "l4", phase="prefill", prompt_tokens=1024,
# parallelism=Parallelism(tensor=8)).interconnect_intensity`.

# %% [markdown]
# ## Exercise 11.5 — a pipeline and one sequence, by the estimate
#
# Llama-3.1-70B decodes one sequence (batch 1, 4,096 tokens cached) over a **4-stage pipeline** of
# H100 SXMs. Use `place(..., parallelism=Parallelism(pipeline=4))`: its `stage_time_s` is the
# busiest stage's estimate, `other_stages_s` the other three stages' estimates added up, and
# `pipeline_send_s` one send between stages (with its assumed latency). By the **estimate**, how
# many **seconds** does one decode step take?

# %%
# BEGIN SOLUTION
pipe = place("llama-3.1-70b", "h100-sxm", phase="decode", context_tokens=4096,
             parallelism=Parallelism(pipeline=4))
pipeline_step_s = float(pipe.stage_time_s) + float(pipe.other_stages_s) + 3 * float(pipe.pipeline_send_s)
# END SOLUTION
grade.pipeline_step_s(pipeline_step_s)

# %% [markdown] tags=["solution"]
# The step crosses the 4 stages one after another: about one chip's time for the whole model
# plus three short sends, not a quarter of it. (The stages are not equal: the last also holds the
# lm_head, so 4 × the busiest stage overstates it.) Pipelining adds capacity (each chip holds a
# quarter of the layers), not speed for one sequence; tensor parallelism is what cuts one step's
# latency. The package's `time_lower_bound_s` for this placement is one token's crossing of the
# stages, one after another (`pipeline_lower_bound_basis` says so): about one chip's lower bound.
# Only with enough independent sequences to keep every stage busy can the busiest stage's bound
# (`busiest_stage_lower_bound_s`) bind instead.

# %% [markdown]
# ## Exercise 11.6 — the bubble
#
# A 4-stage pipeline runs **one batch split into 8 micro-batches that must all finish before the
# next step** starts (a flushed pipeline, as in GPipe training or one long prefill). What
# **fraction** of the stages' time is idle (the bubble)?

# %%
# BEGIN SOLUTION
p, m = 4, 8
bubble = (p - 1) / (m + p - 1)
# END SOLUTION
grade.pipeline_bubble(bubble)

# %% [markdown] tags=["solution"]
# The m micro-batches take m + p − 1 stage-times to drain through p stages, and each stage works
# for m of them. More micro-batches shrink the bubble, at the cost of smaller matmuls per
# micro-batch. A server that keeps 8 *independent* batches circulating in steady decode (no flush)
# idles max(0, 1 − m/p) instead: none here. That is a different question.

# %% [markdown]
# ## Exercise 11.7 — the same step's communication, by the lower bound
#
# Take 11.3's step again (Llama-3.1-70B, batch 64, 4,096 cached, tensor parallel 8 on H100 SXMs).
# The **lower bound** counts the least bytes any algorithm the link supports sends, and no
# per-call latency. The H100's NVSwitch reduces in the switch (`link.in_switch_reduction`), so an
# all-reduce sends each byte of its message once per chip; and the bound counts no logits
# all-gather (vocab-parallel sampling exchanges each chip's top candidates, not its logits). How
# many **seconds** of communication per chip does the lower bound count? (Within 1 %.)

# %%
# BEGIN SOLUTION
message_bytes = 64 * llama.hidden_size * 2
least_bytes = (2 * llama.num_hidden_layers + 1) * message_bytes  # once each, in the switch
bound_comm_s = least_bytes / link.per_direction_bytes_per_s
# END SOLUTION
grade.bound_comm_s(bound_comm_s)

# %% [markdown] tags=["solution"]
# Several times less than 11.3's estimate, which sends the ring's 2(n − 1)/n of every message,
# gathers the logits and charges every call the assumed latency. The bound is what no
# implementation can beat; the estimate is what a plain ring implementation at that latency would
# take. Quote both, and say which.

# %% [markdown]
# ## Exercise 11.8 — how much of the estimate is an assumption?
#
# Llama-3.1-70B decodes one sequence (batch 1, 4,096 cached) under **tensor parallel 8** on H100
# SXMs. What **fraction** of the step's **estimate** (`time_estimate_s`) is the assumed per-call
# latency (every collective call × `link.latency_s`)?

# %%
# BEGIN SOLUTION
tp8 = place("llama-3.1-70b", "h100-sxm", phase="decode", context_tokens=4096, parallelism=Parallelism(tensor=8))
latency_share = float(tp8.comm.calls) * tp8.link.latency_s / float(tp8.time_estimate_s)
# END SOLUTION
grade.latency_share(latency_share)

# %% [markdown] tags=["solution"]
# About a quarter of the estimate is a figure nobody measured on your machine. The lower bound
# (`time_lower_bound_s`) counts none of it, so it does not move with the latency; the estimate
# does. Measure a small-message all-reduce (nccl-tests) before you trust the estimate's share.
