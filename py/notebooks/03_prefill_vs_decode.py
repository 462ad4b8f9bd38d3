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
# # Lesson 3 — Prefill vs decode, operator by operator
#
# **By the end of this lesson you can**
#
# 1. break one layer — and a whole model — into operators and give each its FLOPs, bytes,
#    intensity and binding roof, for a long prefill and for one decode step;
# 2. use both lenses of intensity (FLOPs per weight byte, FLOPs per byte of all traffic) and say
#    when they disagree and why;
# 3. turn roofs into time: a lower bound on time to first token and on time per output token, and
#    an upper bound on tokens per second;
# 4. compare a bound with a measured figure and explain the gap.

# %%
# %matplotlib inline
from roofline_lessons import get_part, place
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.viz.plots import operators_on_roofline
from roofline_lessons.topics.reports import BLOCK_HEADERS, OP_HEADERS, block_summary, op_rows
from roofline_lessons.core.units import num, percent, si

h100 = get_part("h100-sxm")

# %% [markdown]
# ## Two phases of one request
#
# A chat request runs in two phases. **Prefill** pushes the whole prompt through the model at once
# and writes its keys and values into the KV cache; it ends with the first output token. **Decode**
# then produces one token per step: each step pushes one new token per sequence through the model
# and reads the whole cache. Same weights, same code — very different places on the roofline.
#
# Two models throughout: **Qwen3.8-27B** (a hybrid: 16 full-attention layers and 48 Gated DeltaNet
# layers) and **Llama-3.1-8B** (32 full-attention layers), both in BF16 on an H100 SXM.

# %%
PROMPT = 8192
steps = {
    (model, phase): place(model, h100, phase=phase, **({"prompt_tokens": PROMPT} if phase == "prefill"
                                                       else {"context_tokens": PROMPT}))
    for model in ("qwen3.8-27b", "llama-3.1-8b") for phase in ("prefill", "decode")
}
qp, qd = steps["qwen3.8-27b", "prefill"], steps["qwen3.8-27b", "decode"]

# %% [markdown]
# ## One full-attention layer of Qwen3.8-27B, prefill of 8,192 tokens
#
# Every operator with its own numbers (one layer; the "layers" column says how many layers share
# it). The matmuls sit far right of the ridge; the norms, the rotary embedding, the residual adds
# and the output gate do a few FLOPs per element they read and write, so they stay memory-bound
# even inside a compute-bound prefill.

# %%
show_table(OP_HEADERS, op_rows(qp, block="full_attention", per_layer=True))

# %% [markdown]
# The same for one Gated DeltaNet layer. Its recurrence is the interesting row. The reference
# chunked kernel (flash-linear-attention's `chunk_gated_delta_rule`) cuts the prompt into chunks
# of 64 tokens; one kernel writes the state at every chunk boundary to HBM, and the kernel that
# computes the outputs reads each one back. Those boundary states are stored in the activations'
# format (BF16), the final state in the model's float32. So the state does travel through memory
# in prefill — once per chunk, not once per token. (The FLOPs column counts the recurrence's
# 7·d_k·d_v per token; the chunked form's extra matmuls are not counted.)

# %%
show_table(OP_HEADERS, op_rows(qp, block="gated_deltanet", per_layer=True))
chunk = qp.workload.deltanet_chunk_tokens
md(f"With {chunk}-token chunks an {PROMPT:,}-token prompt has {PROMPT // chunk} chunk states per layer: "
   f"{si(float(qp.cost.state_bytes), 'B')} of state traffic over the 48 layers, "
   f"{percent(float(qp.cost.state_bytes / qp.cost.bytes), 1)} of the step's bytes. The step is compute-bound, "
   "so this traffic does not set its time; in a memory-bound step it would.")

# %% [markdown]
# And the same layer kinds in one **decode** step, batch 1, with the prompt now in the cache.
# Every matmul has dropped to about one FLOP per byte. First the Gated DeltaNet layer: its
# recurrence reads **and** writes its float32 state every step, whatever the context.

# %%
show_table(OP_HEADERS, op_rows(qd, block="gated_deltanet", per_layer=True))

# %% [markdown]
# Then a full-attention layer: its fused attention operator reads the layer's whole KV history,
# every cached token of it, for one new query token per sequence.

# %%
show_table(OP_HEADERS, op_rows(qd, block="full_attention", per_layer=True))

# %% [markdown]
# ## The whole model
#
# Summed over all layers, by block:

# %%
for key in [("qwen3.8-27b", "prefill"), ("qwen3.8-27b", "decode")]:
    md(f"**{steps[key].model.name}, {key[1]}**")
    show_table(BLOCK_HEADERS, block_summary(steps[key]))

# %% [markdown]
# Every operator of the prefill on one chart: the matmuls sit on the flat roof, the elementwise
# operators down the slope. The big dot is the whole step.

# %%
operators_on_roofline(qp, "Qwen3.8-27B prefill (8,192 tokens): every operator")

# %% [markdown]
# ## Two lenses of intensity
#
# **The weight lens** — FLOPs of the weight matmuls per weight byte — asks: how many times is
# each fetched weight used? A weight matmul does 2 FLOPs per weight per token, and a BF16 weight
# is 2 bytes, so this is about the number of tokens in the step: the prompt length in prefill,
# the batch in decode. Attention's FLOPs are left out on purpose: they come with bytes of their
# own (the KV cache), not the weights'. **FLOPs per byte of all traffic** counts every FLOP and
# every byte — weights, activations, the KV cache and the recurrent state: what the memory system
# really moves, and the one that places the step on the roofline.

# %%
show_table(["model", "phase", "FLOP / weight byte", "FLOP / byte (all)", "ridge", "bound"],
           [[s.model.name, phase, f"{num(float(s.intensity_per_weight_byte), 4)}", f"{num(float(s.intensity), 4)}",
             f"{s.ridge_point_flop_per_byte:,.0f}", s.bound] for (m, phase), s in steps.items()])

# %% [markdown]
# The lenses disagree in two places, for two different reasons:
#
# - **Prefill**: activations. Each operator here reads its input and writes its output once;
#   at 8,192 tokens those tensors are large, so the all-traffic intensity is well below the
#   weight-byte one. Real kernels fuse operators (norm into matmul, activation into matmul) to
#   claw this back — but both numbers are far right of the ridge, so the verdict does not change.
# - **Decode at long context**: the KV cache. Its bytes grow with context and are not shared by
#   anyone; the weight lens ignores them and attention's FLOPs alike, so it stays at about the
#   batch while the all-traffic intensity moves. The next cell shows Llama-3.1-8B.

# %%
for ctx in (1024, 32768, 131072):
    s = place("llama-3.1-8b", h100, phase="decode", context_tokens=ctx)
    print(f"context {ctx:>7,}: weights {si(float(s.cost.weight_bytes), 'B'):>9}, KV {si(float(s.cost.kv_bytes), 'B'):>9}; "
          f"FLOP/weight byte {float(s.intensity_per_weight_byte):6.2f}, FLOP/byte (all) {float(s.intensity):5.2f}")

# %% [markdown]
# The lenses matter when the verdict depends on them: when someone says "batching to 300 makes
# decode compute-bound" (weight lens) but the KV traffic of 300 long conversations says otherwise
# (all-traffic lens). Lesson 4 draws both curves.
#
# ## From roofs to time
#
# A roofline gives a **lower bound on time**: no step finishes faster than
# $\max(\text{FLOPs}/P_\text{peak},\ \text{bytes}/\beta)$. For prefill that is the time to first
# token (TTFT); for decode, the time per output token (TPOT), whose inverse bounds tokens/s.

# %%
rows = []
for (m, phase), s in steps.items():
    t = float(s.time_estimate_s)
    what = "TTFT" if phase == "prefill" else "TPOT"
    rows.append([s.model.name, phase, f"{what} ≥ {num(t * 1e3, 4)} ms", f"≤ {float(s.tokens_per_s_estimate):,.0f} tokens/s",
                 f"{s.bound} roof"])
show_table(["model", "phase", "time bound", "throughput bound (batch 1; prompt tokens/s in prefill, output tokens/s in decode)",
            "set by"], rows)

# %% [markdown]
# ### A bound against a measurement
#
# The catalog holds one end-to-end measurement: gpt-fast decoding Llama-2-7B in BF16 at batch 1
# on an A100-80GB (its README: 104.9 tokens/s, the GPU capped at 330 W). Compare it with the bound
# for a short context:

# %% jupyter={"source_hidden": true}
a100 = get_part("a100-80gb")
gpt_fast = next(m for m in a100.measured if m.tokens_per_s)
bound = place(gpt_fast.model, a100, phase="decode", context_tokens=256)
fraction_of_bound = gpt_fast.tokens_per_s / float(bound.tokens_per_s_estimate)
md(f"Bound: **≤ {float(bound.tokens_per_s_estimate):,.1f} tokens/s** ({si(float(bound.cost.bytes), 'B')} per token at "
   f"{si(a100.memory_bandwidth_bytes_per_s, 'B/s')}). Measured: **{gpt_fast.tokens_per_s} tokens/s** "
   f"({gpt_fast.source}), i.e. {percent(fraction_of_bound, 0)} of the bound.")

# %% [markdown]
# That fraction has a name: **model bandwidth utilisation (MBU)** — the bytes a token *must*
# move, times tokens per second, over the peak bandwidth. (Its compute twin, **MFU**, is the
# FLOPs a token must do, times tokens per second, over the peak FLOP/s.)
#
# gpt-fast's README also prints a "bandwidth achieved". Look at how it is made before you lean on
# it: it is the model's size in bytes (its parameters and buffers, without the embedding table)
# times tokens per second. That is MBU's numerator. So its
# ratio to the datasheet bandwidth is the fraction of the bound **by construction** — it agrees
# with the percentage above because it is the same measurement (tokens per second) multiplied
# by the same constant, not because a second instrument confirmed it:

# %% jupyter={"source_hidden": true}
md(f"The README's {si(gpt_fast.value, 'B/s')} ÷ {gpt_fast.tokens_per_s} tokens/s = {si(gpt_fast.value / gpt_fast.tokens_per_s, 'B')} "
   f"of model bytes per token; the package's bound counts {si(float(bound.cost.bytes), 'B')} per token (all weights but "
   f"the embedding table, one looked-up row, the KV cache). As fractions of {si(a100.memory_bandwidth_bytes_per_s, 'B/s')}: "
   f"{percent(gpt_fast.value / a100.memory_bandwidth_bytes_per_s, 1)} from the README's figure, "
   f"{percent(fraction_of_bound, 1)} of the package's bound — two ways of writing the same tokens/s.")

# %% [markdown]
# **What MBU can tell you**: how far the run is from the bandwidth bound, in one number
# comparable across parts and models. **What it cannot tell you**: *why* the rest is missing.
# Each of these lowers tokens/s, and so MBU, in exactly the same way, so MBU cannot tell them apart:
#
# - the memory system delivering less than its datasheet rate (even a pure streaming kernel
#   does not reach 100 %; the next cell has a measured example, and lesson 8 measures your own
#   machine);
# - time with the memory idle: kernel-launch gaps and CPU overhead between the hundreds of small
#   kernels of a batch-1 step (gpt-fast captures its step in CUDA graphs, which removes most of
#   these), sampling, the prompt's prefill if it is inside the timed region;
# - a power or clock cap (this run was at 330 W).
#
# Telling them apart needs a second, independent instrument: a profiler's DRAM byte counters
# during the decode kernels (achieved bandwidth *while the kernels run*), and a timeline of
# kernel time against wall-clock time (the idle gaps). Until then, "the gap is the memory
# system" is a hypothesis, not a finding.
#
# The streaming figure that bounds the first cause, measured on a neighbouring part (there is no
# such figure for the A100 in the catalog, so this is a reference point, not this run's memory
# system):

# %%
pcie = get_part("h100-pcie")
for m in pcie.measurements("bandwidth_bytes_per_s"):
    print(f"{pcie.name}, {m.kernel}: {si(m.value, 'B/s')} = {percent(m.value / pcie.memory_bandwidth_bytes_per_s, 0)} "
          f"of {si(pcie.memory_bandwidth_bytes_per_s, 'B/s')} ({m.source})")

# %% [markdown]
# ### Batch-1 decode of the hybrid, in numbers

# %% jupyter={"source_hidden": true}
md(f"Batch-1 decode of Qwen3.8-27B with {PROMPT:,} tokens cached: I = {float(qd.intensity):.2f} FLOP/byte, attainable "
   f"{si(float(qd.attainable_flops_per_s), 'FLOP/s')} = **{percent(float(qd.fraction_of_peak))} of peak** — and that is "
   "its roof. A kernel there is not broken; it is on the bandwidth roof.")

# %% [markdown]
# ## Your own model
#
# Everything above came from a handful of shapes: hidden size, layers, heads, head size, MLP
# width, vocabulary. Those are the fields of the model's Hugging Face `config.json`, a few
# kilobytes beside its weights. `model_from_config` reads one for the architectures the cost
# model knows (Llama, Mistral, Qwen2 and Qwen3, Qwen3-MoE, the Qwen3.8 hybrid, Gemma 3, gpt-oss,
# DeepSeek-V3) and maps its fields as the course's catalog does.
#
# To check that, the next cell writes Llama-3.1-8B's catalog entry as a `config.json`, in Hugging
# Face's field names, into a temporary folder (nothing is downloaded), reads it back and places the
# same decode step with both.

# %%
import json
import shutil
import tempfile
from pathlib import Path

from roofline_lessons import get_model, model_from_config
from roofline_lessons.core.units import binary, count, duration

llama = get_model("llama-3.1-8b")
config = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": llama.hidden_size, "num_hidden_layers": llama.num_hidden_layers,
    "num_attention_heads": llama.num_attention_heads, "num_key_value_heads": llama.num_key_value_heads,
    "head_dim": llama.head_dim, "intermediate_size": llama.intermediate_size, "vocab_size": llama.vocab_size,
    "max_position_embeddings": llama.max_context_tokens, "tie_word_embeddings": llama.tie_word_embeddings,
}
folder = Path(tempfile.mkdtemp(prefix="rl-lesson03-")) / "my-llama"
folder.mkdir()
config_path = folder / "config.json"
config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")

mine = model_from_config(config_path)  # its id is the folder's name
rows = []
for model in (llama, mine):
    s = place(model, h100, phase="decode", context_tokens=PROMPT)
    rows.append([model.id, count(model.parameter_count()), binary(model.kv_bytes_per_token("bf16")),
                 duration(float(s.time_estimate_s)), s.bound])
show_table(["model", "parameters", "KV cache per token (BF16)", f"TPOT bound at {count(PROMPT)} tokens", "bound"], rows)

# %% [markdown]
# The two rows agree to the last parameter. For a model the catalog lacks, give the path of its
# own `config.json` — `model_from_config("path/to/config.json")` — and place it like any other. An
# architecture the cost model does not know, a missing field or a broken file stops with one line
# that names the problem.
#
# The command line takes the same file with `--model-config` in place of `--model`, for `place` and
# for `serve`:

# %%
from roofline_lessons.cli import main

main(["place", "--hardware", "h100-sxm", "--model-config", str(config_path), "--phase", "decode",
      "--context", str(PROMPT)])
shutil.rmtree(folder.parent)

# %% [markdown]
# ## Explore
#
# Pick a model, a part, a phase and a length. Every operator appears as a small square at its
# intensity; the big dot is the whole step; the table lists the operators that cost the most
# time. Try: decode at 131,072 tokens for Llama-3.1-8B (what climbs to the top of the table?);
# prefill of 128 tokens; the MoE model.

# %%
from roofline_lessons.viz.dashboards import lesson03_dashboard

dashboard = lesson03_dashboard()

# %% [markdown]
# ## Summary
#
# - Prefill: each weight serves the whole prompt; matmuls are compute-bound; TTFT is bought with
#   FLOPs. Elementwise operators stay memory-bound even there.
# - Decode: each weight serves one token per sequence; every matmul is near one FLOP per byte;
#   TPOT is bought with bytes. Attention and the recurrent state add bytes the weight lens cannot see.
# - A roofline turns into time: TTFT ≥ FLOPs / peak, TPOT ≥ bytes / bandwidth. Measured systems
#   land at a fraction of these bounds; for decode that fraction is MBU. It says how far, not why:
#   a tool's "bandwidth achieved" computed from tokens/s is the same number again.
#
# **A question to leave with.** Which operator of a decode step grows with context, and how would
# you make it cheaper without touching the weights?
#
# **Interview questions this lesson prepares you for**
#
# - "Why is prefill compute-bound and decode memory-bound? Give numbers."
# - "Estimate the time to first token for an 8B model and an 8K prompt on an H100."
# - "What bounds tokens/s for one user of a 7B model on an A100, and how close do real systems get?"
# - "A tool reports 1.4 TB/s achieved during decode. What does that number prove, and what would you measure next?"
# - "Which operators are memory-bound even in prefill, and what does fusion do about it?"
#
# The exercises for this lesson are in `exercises/03_prefill_vs_decode.ipynb`.
