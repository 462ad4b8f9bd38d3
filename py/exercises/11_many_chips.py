# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
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
weights_per_chip = ...  # your answer here
kv_whole = ...  # your answer here
kv_per_chip = ...  # your answer here
memory_per_chip_gib = ...  # your answer here
grade.moe_memory_per_chip_gib(memory_per_chip_gib)

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
n = ...  # your answer here
message_bytes = ...  # your answer here
sent_bytes = ...  # your answer here
all_reduce_s = ...  # your answer here
grade.one_all_reduce_s(all_reduce_s)

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
n = ...  # your answer here
batch = ...  # your answer here
message_bytes = ...  # your answer here
all_reduces = ...  # your answer here
sent = ...  # your answer here
calls = ...  # your answer here
decode_comm_s = ...  # your answer here
grade.decode_comm_s(decode_comm_s)

# %% [markdown]
# ## Exercise 11.4 — the third ridge
#
# Eight L4s have no chip-to-chip link: they talk over PCIe (`l4.host_link`). What is their
# **interconnect ridge**, in FLOP/byte: the dense BF16 peak (`l4.peak_flops_per_s("bf16")`) ÷ the
# link's bandwidth? Which bandwidth?

# %%
l4 = get_part("l4")
link_ridge = ...  # your answer here
grade.l4_link_ridge(link_ridge)

# %% [markdown]
# ## Exercise 11.5 — a pipeline and one sequence, by the estimate
#
# Llama-3.1-70B decodes one sequence (batch 1, 4,096 tokens cached) over a **4-stage pipeline** of
# H100 SXMs. Use `place(..., parallelism=Parallelism(pipeline=4))`: its `stage_time_s` is the
# busiest stage's estimate, `other_stages_s` the other three stages' estimates added up, and
# `pipeline_send_s` one send between stages (with its assumed latency). By the **estimate**, how
# many **seconds** does one decode step take?

# %%
pipe = ...  # your answer here
pipeline_step_s = ...  # your answer here
grade.pipeline_step_s(pipeline_step_s)

# %% [markdown]
# ## Exercise 11.6 — the bubble
#
# A 4-stage pipeline runs **one batch split into 8 micro-batches that must all finish before the
# next step** starts (a flushed pipeline, as in GPipe training or one long prefill). What
# **fraction** of the stages' time is idle (the bubble)?

# %%
p = ...  # your answer here
m = ...  # your answer here
bubble = ...  # your answer here
grade.pipeline_bubble(bubble)

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
message_bytes = ...  # your answer here
least_bytes = ...  # your answer here
bound_comm_s = ...  # your answer here
grade.bound_comm_s(bound_comm_s)

# %% [markdown]
# ## Exercise 11.8 — how much of the estimate is an assumption?
#
# Llama-3.1-70B decodes one sequence (batch 1, 4,096 cached) under **tensor parallel 8** on H100
# SXMs. What **fraction** of the step's **estimate** (`time_estimate_s`) is the assumed per-call
# latency (every collective call × `link.latency_s`)?

# %%
tp8 = ...  # your answer here
latency_share = ...  # your answer here
grade.latency_share(latency_share)
