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
#    an upper bound on tokens per second — and tell that bound from an estimate, which names its
#    conventions;
# 4. compare a bound with a measured figure and explain the gap.

# %%
# %matplotlib inline
from roofline_lessons import get_model, get_part, place
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.viz.plots import operators_on_roofline
from roofline_lessons.topics.reports import BLOCK_HEADERS, OP_HEADERS, block_summary, op_rows
from roofline_lessons.core.units import count, duration, num, percent, si

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
show_table(["model", "phase", "FLOP / weight byte", "FLOP / byte (all)", "ridge", "roof (all traffic)"],
           [[s.model.name, phase, f"{num(float(s.intensity_per_weight_byte), 4)}", f"{num(float(s.intensity), 4)}",
             f"{s.ridge_point_flop_per_byte:,.0f}", s.bound] for (m, phase), s in steps.items()])

# %% [markdown]
# The lenses disagree in two places, for two different reasons:
#
# - **Prefill**: activations. Each operator here reads its input and writes its output once
#   through HBM (the unfused count; the section after next separates it from what a step must
#   move); at 8,192 tokens those tensors are large, so the all-traffic intensity is well below the
#   weight-byte one. Real kernels fuse operators (norm into matmul, activation into matmul) to
#   claw this back — but both numbers are far right of the ridge, so the verdict does not change.
# - **Decode at long context**: the KV cache. Its bytes grow with context and are not shared by
#   anyone; the weight lens ignores them and attention's FLOPs alike, so it stays at about the
#   batch while the all-traffic intensity moves. The next cell shows Llama-3.1-8B.

# %%
for ctx in (1024, 32768, 131071):  # 131,071 cached + the new token = the model's whole context
    s = place("llama-3.1-8b", h100, phase="decode", context_tokens=ctx)
    assert not s.context_beyond_model
    print(f"context {ctx:>7,}: weights {si(float(s.cost.weight_bytes), 'B'):>9}, KV {si(float(s.cost.kv_bytes), 'B'):>9}; "
          f"FLOP/weight byte {float(s.intensity_per_weight_byte):6.2f}, FLOP/byte (all) {float(s.intensity):5.2f}")

# %% [markdown]
# The lenses matter when the verdict depends on them: when someone says "batching to 300 makes
# decode compute-bound" (weight lens) but the KV traffic of 300 long conversations says otherwise
# (all-traffic lens). Lesson 4 draws both curves.

# %% [markdown]
# ## From roofs to time
#
# A roofline turns into time: no step finishes faster than its FLOPs at the peak rate, nor faster
# than its bytes at the memory bandwidth — $\max(\text{FLOPs}/P_\text{peak},\ \text{bytes}/\beta)$.
# For prefill that time is the time to first token (TTFT); for decode, the time per output token
# (TPOT), whose inverse is tokens per second. But *which* bytes? The operator tables above count
# every operator's input and output through HBM; a fused kernel keeps most of them on chip. And
# on several chips, what does a message between them cost? Two questions hide here, and the
# package answers each under its own name.
#
# ### A bound and an estimate
#
# - The **lower bound** (`time_lower_bound_s`; its inverse `tokens_per_s_upper_bound`) asks *can
#   anything be faster?* It counts only **compulsory** traffic (`cost.compulsory_bytes`): each
#   weight the step uses, read once; the KV cache read and its new entries written; the token ids
#   in and the logits out. Its FLOPs run at their format's peak. Units that work independently
#   (tensor cores, vector units, the links) overlap, and a message costs its bytes and no per-call
#   latency. No implementation on that part — with that split over chips, those formats and those
#   kernels' FLOP counts — beats it. `lower_bound_roof` says which term binds.
# - The **estimate** (`time_estimate_s`, `tokens_per_s_estimate`) asks *how long does a plain
#   implementation take?* It follows conventions it names (`estimate_conventions`): every operator
#   a kernel of its own, with its activations written to HBM and read back (`cost.bytes`, the
#   operator tables' view); communication after the compute, by the ring algorithm, with an
#   assumed latency per call. `bound` and `intensity` are the estimate's roof and intensity.
#
# Two worked examples, one for each kind of convention. First the activations: Llama-3.1-8B
# prefilling a 2,048-token prompt on the H100.

# %%
pre = place("llama-3.1-8b", h100, phase="prefill", prompt_tokens=2048)
show_table(["figure", "time (TTFT)", "bytes", "FLOP / byte", "roof that binds"], [
    ["lower bound (compulsory bytes)", duration(float(pre.time_lower_bound_s)), si(float(pre.cost.compulsory_bytes), "B"),
     num(float(pre.compulsory_intensity)), pre.lower_bound_roof],
    ["estimate (operators unfused)", duration(float(pre.time_estimate_s)), si(float(pre.cost.bytes), "B"),
     num(float(pre.intensity)), pre.bound],
])

# %% jupyter={"source_hidden": true}
pre_ratio = float(pre.time_estimate_s / pre.time_lower_bound_s)
same_time = abs(pre_ratio - 1) < 1e-9
assert min(float(pre.intensity), float(pre.compulsory_intensity)) > pre.ridge_point_flop_per_byte, "both right of the ridge"
assert pre.bound == pre.lower_bound_roof == "compute"
md(f"The estimate moves **{float(pre.cost.bytes / pre.cost.compulsory_bytes):.1f}×** the bytes: "
   f"{si(float(pre.cost.activation_bytes), 'B')} of activations beside {si(float(pre.cost.weight_bytes), 'B')} of weights. "
   f"Its time is {'**the same**' if same_time else f'{percent(pre_ratio - 1, 0)} longer'}: both intensities "
   f"({num(float(pre.compulsory_intensity))} and {num(float(pre.intensity))} FLOP/byte) are right of the ridge "
   f"({num(pre.ridge_point_flop_per_byte)}), so the FLOPs bind, and the unfused bytes "
   f"({duration(float(pre.memory_time_s))} at full bandwidth) hide under "
   f"{duration(float(pre.compute_time_s))} of FLOPs. The bytes differ; this prompt's time "
   f"{'does not' if same_time else 'differs too'}.")

# %% [markdown]
# Second, a latency the estimate assumes. Split Llama-3.1-8B over two H100s by tensor parallelism
# (`Parallelism(tensor=2)`, lesson 11's subject) and decode one token with 4,096 tokens cached.
# The chips exchange activations twice per layer, and once more at each end of the model (after
# the embedding lookup, and to gather the logits). The estimate charges each collective call a
# latency — an assumed figure, not a measurement; `collective_latency_s` sets it. Place the same step with
# no latency and with the default:

# %%
from roofline_lessons.core.parallel import Parallelism

tp2 = {lat: place("llama-3.1-8b", h100, phase="decode", context_tokens=4096,
                  parallelism=Parallelism(tensor=2, collective_latency_s=lat)) for lat in (0.0, None)}
default_latency_s = tp2[None].link.latency_s
rows = []
for lat, s in tp2.items():
    asked = "0" if lat == 0 else f"{duration(default_latency_s)} (the default)"
    rows.append([asked, "lower bound", duration(float(s.time_lower_bound_s)), duration(float(s.comm_lower_bound_s)),
                 num(float(s.tokens_per_s_upper_bound)), s.lower_bound_roof])
    rows.append([asked, "estimate", duration(float(s.time_estimate_s)), duration(float(s.comm_time_s)),
                 num(float(s.tokens_per_s_estimate)), s.bound])
show_table(["latency per call asked", "figure", "TPOT", "communication term", "tokens/s", "roof that binds"], rows)

# %% jupyter={"source_hidden": true}
bound_moves = float(tp2[None].time_lower_bound_s) != float(tp2[0.0].time_lower_bound_s)
assert not bound_moves, "the bound counts no per-call latency"
latency_added_s = float(tp2[None].time_estimate_s - tp2[0.0].time_estimate_s)
comm_parts = tp2[None].comm.parts
assert sum(p.calls for p in comm_parts) == tp2[None].comm.calls
md(f"The bound **{'moves' if bound_moves else 'does not move'}**: it counts no latency. The estimate grows by "
   f"{duration(latency_added_s)} — {count(tp2[None].comm.calls)} collective calls "
   f"({' + '.join(f'{count(int(p.calls))} {p.name}' for p in comm_parts)}) × {duration(default_latency_s)} — "
   f"to {percent(float(tp2[None].time_estimate_s / tp2[None].time_lower_bound_s) - 1, 0)} above the bound; with no "
   f"latency it sits {percent(float(tp2[0.0].time_estimate_s / tp2[0.0].time_lower_bound_s) - 1, 1)} above it "
   f"(the unfused activations, and the messages sent after the compute instead of beside it). So "
   f"{percent(latency_added_s / float(tp2[None].time_estimate_s), 0)} of the default estimate is an assumed latency: "
   "quote that figure as the estimate, with its latency.")

# %% [markdown]
# **The rule.** A *bound* counts only compulsory traffic, lets independent units and communication
# overlap, and assumes no latency; an *estimate* names its conventions. A "≥" on a time, a "≤" on
# tokens per second or "no implementation beats" belongs to the bound alone. From here on this
# lesson says which of the two each figure is, and so does every later lesson.
#
# **A question before you go on.** The two prefill rows above agree on the roof at 2,048 tokens.
# For which prompt lengths of the same model and part do the bound and the estimate disagree —
# one saying compute, the other memory — and which says which? (Think first; the cell below answers.)

# %% jupyter={"source_hidden": true}
import numpy as np

lengths = np.arange(1, 2049)
sweep = place("llama-3.1-8b", h100, phase="prefill", prompt_tokens=lengths)
bound_roof, estimate_roof = np.asarray(sweep.lower_bound_roof), np.asarray(sweep.bound)
disagree = lengths[bound_roof != estimate_roof]
assert disagree.size and set(bound_roof[bound_roof != estimate_roof]) == {"compute"}
assert np.array_equal(disagree, np.arange(disagree.min(), disagree.max() + 1))  # one run, no gap: "from … to"
bound_crosses = int(lengths[bound_roof == "compute"].min())  # the first prompt length on the compute roof
estimate_crosses = int(lengths[estimate_roof == "compute"].min())
assert (bound_crosses, estimate_crosses) == (disagree.min(), disagree.max() + 1)
estimate_intensity = np.asarray(sweep.intensity, dtype=float)
assert np.all(np.diff(estimate_intensity) > 0), "the estimate's intensity climbs with the prompt"
activations_per_token = np.asarray(sweep.cost.activation_bytes, dtype=float) / lengths
assert activations_per_token.max() < 1.05 * activations_per_token.min(), "about the same per token at every length"
at = {n: float(estimate_intensity[lengths == n][0]) for n in (bound_crosses, int(lengths[-1]))}
md(f"From {count(int(disagree.min()))} to {count(int(disagree.max()))} tokens: there the bound is compute-bound "
   f"while the unfused estimate is still memory-bound. The estimate's intensity climbs with the prompt too — "
   f"{num(at[bound_crosses])} FLOP/byte at {count(bound_crosses)} tokens, {num(at[int(lengths[-1])])} at "
   f"{count(int(lengths[-1]))} — but the activations it counts, about "
   f"{si(float(np.median(activations_per_token)), 'B')} per prompt token, delay its crossing of the ridge "
   f"({num(sweep.ridge_point_flop_per_byte)} FLOP/byte): the bound crosses at {count(bound_crosses)} tokens, the "
   f"estimate at {count(estimate_crosses)}. Fusion is what moves a real kernel from the second figure towards the "
   "first.")

# %% [markdown]
# Now the four steps of this lesson, both figures side by side:

# %%
rows = []
for (m, phase), s in steps.items():
    what = "TTFT" if phase == "prefill" else "TPOT"
    rows.append([s.model.name, phase, f"{what} ≥ {duration(float(s.time_lower_bound_s))}", duration(float(s.time_estimate_s)),
                 f"≤ {float(s.tokens_per_s_upper_bound):,.0f}", f"{float(s.tokens_per_s_estimate):,.0f}",
                 s.lower_bound_roof])
show_table(["model", "phase", "lower bound", "estimate (unfused)",
            "tokens/s, upper bound (prompt tokens in prefill, output tokens in decode; batch 1)", "tokens/s, estimate",
            "roof (bound)"], rows)

# %% jupyter={"source_hidden": true}
gaps = [float(s.time_estimate_s / s.time_lower_bound_s) - 1 for s in steps.values()]
assert all(s.bound == s.lower_bound_roof == "compute" for (m, phase), s in steps.items() if phase == "prefill")
md(f"Here the two figures are at most {percent(max(gaps), 2)} apart: the prefills are compute-bound (their extra "
   "bytes hide under the FLOPs), and a batch-1 decode step's activations are tiny beside its weights and cache. "
   "Lessons 7, 10, 11 and 12 meet cases where the conventions cost more.")

# %% [markdown]
# ### A bound against a measurement
#
# The catalog holds a few measurements of whole decode steps on one GPU; the first cell below
# lists them. Only gpt-fast's gives a rate in tokens per second, and this section prices it. A
# decode bound needs the tokens cached, and the run's README gives its prompt length but not how
# many tokens each run generated: the second cell states the **assumption** made for it
# (`GPT_FAST_CONTEXT_TOKENS`, the one every lesson quoting this run uses).

# %%
from roofline_lessons.core.hardware import list_parts

WHOLE_STEP = {"decode_model_bytes_per_s": "a measured decode rate in tokens/s",
              "decode_fraction_of_memory_floor": "a fraction of the analytic memory floor (no rate)"}
one_gpu = [(get_part(pid), m) for pid in list_parts() for m in get_part(pid).measurements()
           if m.quantity in WHOLE_STEP]
for part, m in one_gpu:
    print(f"{part.name}: {m.kernel or m.conditions} — {WHOLE_STEP[m.quantity]} ({m.source})")
with_rate = [m for _, m in one_gpu if m.tokens_per_s is not None]
md(f"{count(len(one_gpu))} whole-step decode measurements on one GPU; only gpt-fast's gives a rate that a "
   "tokens-per-second bound can be held against.")

# %% jupyter={"source_hidden": true}
assert len(with_rate) == 1 and with_rate[0].model == "llama-2-7b", "gpt-fast's is the only one with a rate"

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.published import (GPT_FAST_BOS_TOKENS, GPT_FAST_CONTEXT_TOKENS, GPT_FAST_DECODE_STEPS,
                                               GPT_FAST_NEW_TOKENS, GPT_FAST_PREFILL_TOKENS, GPT_FAST_PROMPT_TOKENS,
                                               gpt_fast_7b_bound, gpt_fast_7b_measurement,
                                               gpt_fast_context_range, gpt_fast_run_rate_bound)

a100 = get_part("a100-80gb")
gpt_fast = gpt_fast_7b_measurement()
md(f"gpt-fast decoding {get_model(gpt_fast.model).name} on an {a100.name}: {gpt_fast.tokens_per_s} tokens/s "
   f"({gpt_fast.conditions}; {gpt_fast.source}).")
fewest, most = gpt_fast_context_range()
assert most - fewest + 1 == GPT_FAST_DECODE_STEPS and GPT_FAST_CONTEXT_TOKENS == (fewest + most) // 2
ends = [gpt_fast_7b_bound(c) for c in (fewest, most)]
bound = gpt_fast_7b_bound(GPT_FAST_CONTEXT_TOKENS)
assert all(s.lower_bound_roof == "memory" for s in ends + [bound]), "memory binds at every step of the run"
moves = float(ends[0].tokens_per_s_upper_bound / ends[1].tokens_per_s_upper_bound) - 1
run_bound = gpt_fast_run_rate_bound()
run_vs_middle = run_bound / float(bound.tokens_per_s_upper_bound) - 1
assert abs(run_vs_middle) < 1e-4, "the run's bound and the middle step's agree to under 0.01 %"
assert GPT_FAST_PREFILL_TOKENS == GPT_FAST_PROMPT_TOKENS + GPT_FAST_BOS_TOKENS
md(f"**Assumption:** after its {count(GPT_FAST_PROMPT_TOKENS)}-token prompt ({count(GPT_FAST_PREFILL_TOKENS)} tokens "
   f"prefilled: generate.py encodes the prompt with a beginning-of-sequence token in front) the run generated "
   f"{count(GPT_FAST_NEW_TOKENS)} tokens (generate.py's default; the README does not say). generate.py times the "
   f"prompt's prefill, which yields the first of them, and then {count(GPT_FAST_DECODE_STEPS)} decode steps, which "
   f"saw from {count(fewest)} to {count(most)} tokens cached; the rate it prints is {count(GPT_FAST_NEW_TOKENS)} "
   f"tokens over that whole time. Memory binds at every step, and a step's compulsory bytes grow linearly with its "
   f"context, so the steps' bounds average to the bound at the middle step: {count(GPT_FAST_CONTEXT_TOKENS)} tokens "
   f"cached. Between the two ends the bound moves by {percent(moves, 1)}. With the prefill's own bound in the timed "
   f"region too, the bound on the printed rate is {run_bound:,.3f} tokens/s against the middle step's "
   f"{float(bound.tokens_per_s_upper_bound):,.3f}, {percent(abs(run_vs_middle), 3)} "
   f"{'above' if run_vs_middle > 0 else 'below'} it: the lessons quote the middle step's.")
fraction_of_bound = gpt_fast.tokens_per_s / float(bound.tokens_per_s_upper_bound)
md(f"Lower bound on time, so upper bound on rate: **≤ {float(bound.tokens_per_s_upper_bound):,.1f} tokens/s** "
   f"({si(float(bound.cost.compulsory_bytes), 'B')} of compulsory bytes per token at "
   f"{si(a100.memory_bandwidth_bytes_per_s, 'B/s')}; the estimate says {float(bound.tokens_per_s_estimate):,.1f}). "
   f"Measured: **{gpt_fast.tokens_per_s} tokens/s** ({gpt_fast.source}), i.e. {percent(fraction_of_bound, 0)} of the bound.")

# %% [markdown]
# That fraction has a name: **model bandwidth utilisation (MBU)** — the bytes a token *must*
# move, times tokens per second, over the peak bandwidth. (Its compute twin, **MFU**, is the
# FLOPs a token must do, times tokens per second, over the peak FLOP/s.)
#
# gpt-fast's README also lists a "Memory Bandwidth (GB/s)" beside each rate: the "Bandwidth
# achieved" its generate.py prints. Look at how it is made before you lean on it: it is a model
# size in bytes times tokens per second. That is MBU's numerator, with gpt-fast's byte count in
# place of the bound's. So its ratio to the datasheet bandwidth is the fraction of the bound **by
# construction**, up to the ratio of the two byte counts: the same measurement (tokens per second)
# multiplied by nearly the same constant, not a second instrument confirming it.

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.published import gpt_fast_model_size_bytes, gpt_fast_readme_model_size_bytes

readme_bytes = gpt_fast.value / gpt_fast.tokens_per_s
script_bytes = gpt_fast_model_size_bytes()  # generate.py's _get_model_size, from the package's weights
compulsory = float(bound.cost.compulsory_bytes)
kv_counted = float(bound.cost.kv_bytes - bound.cost.kv_scratch_bytes)
constants_differ = readme_bytes / compulsory - 1
script_differs = script_bytes / compulsory - 1
readme_vs_script = readme_bytes / script_bytes - 1
era_bytes = gpt_fast_readme_model_size_bytes()  # the README era's generate.py: every weight, embedding included
readme_vs_era = readme_bytes / era_bytes - 1
assert readme_vs_era < 0 < readme_vs_script  # the README's row lies between the two counts
assert abs(constants_differ) < 0.01 and abs(script_differs) < 0.01, "nearly the same constant"
assert abs(compulsory - script_bytes - kv_counted) / compulsory < 1e-4, "the KV cache is (nearly) all the difference"
readme_rounding = 0.05 / gpt_fast.tokens_per_s + 0.005e9 / gpt_fast.value  # its last digits: 104.9 and 1,397.31
assert abs(readme_vs_script) > readme_rounding, "more than the README's rounding can explain"
md(f"generate.py's model size (its `_get_model_size`) sums the parameters and buffers of every top-level module but "
   f"the embedding table, and runs before `generate` allocates the KV cache: for {get_model(gpt_fast.model).name} in "
   f"BF16, **{si(script_bytes, 'B', 4)}**, the package's weights less the table. The bound counts "
   f"{si(compulsory, 'B', 4)} per token at {count(GPT_FAST_CONTEXT_TOKENS)} tokens cached: the same weights (plus "
   f"the one embedding row a step looks up), the KV cache read and written ({si(kv_counted, 'B')}, nearly all of the "
   f"difference), the token id and the logits — generate.py's count is {percent(abs(script_differs), 1)} "
   f"{'below' if script_differs < 0 else 'above'} it. The README's own row, {gpt_fast.value / 1e9:,.2f} GB/s ÷ "
   f"{gpt_fast.tokens_per_s} tokens/s = {si(readme_bytes, 'B', 4)}, is {percent(abs(readme_vs_script), 1)} "
   f"{'above' if readme_vs_script > 0 else 'below'} generate.py's count and {percent(abs(constants_differ), 1)} "
   f"{'above' if constants_differ > 0 else 'below'} the bound's, more than the rounding of its figures allows "
   f"({percent(readme_rounding, 2)}). The generate.py of the README's time (commit 0055c42) counted every weight, "
   f"the embedding table included: {si(era_bytes, 'B', 4)}, and the README's int8 row reproduces that way of "
   f"counting for the int8 model (a test recomputes it). Its BF16 row lies {percent(abs(readme_vs_era), 1)} "
   f"{'below' if readme_vs_era < 0 else 'above'} that count — between the two versions' counts, and explained by "
   "neither: the README does not say which runs made each column, so that difference is unexplained here. As "
   "fractions of "
   f"{si(a100.memory_bandwidth_bytes_per_s, 'B/s')}: {percent(gpt_fast.value / a100.memory_bandwidth_bytes_per_s, 1)} "
   f"from the README's figure, {percent(fraction_of_bound, 1)} of the package's bound — the same tokens/s times "
   "nearly the same constant.")

# %% [markdown]
# **What MBU can tell you**: how far the run is from the bandwidth bound, in one number
# comparable across parts and models. **What it cannot tell you**: *why* the rest is missing.
# Each of these lowers tokens/s, and so MBU, in exactly the same way, so MBU cannot tell them apart:
#
# - the memory system delivering less than its datasheet rate (the streaming reads the catalog
#   records stay below it; the next cells have reference points, and lesson 8 measures your own
#   machine);
# - time with the memory idle: kernel-launch gaps and CPU overhead between the hundreds of small
#   kernels of a batch-1 step (gpt-fast captures its step in CUDA graphs, which removes most of
#   these), sampling, and the prompt's prefill, which generate.py times with the decode steps;
# - a power or clock cap (this run's power cap is in its conditions above).
#
# Telling them apart needs a second, independent instrument: a profiler's DRAM byte counters
# during the decode kernels (achieved bandwidth *while the kernels run*), and a timeline of
# kernel time against wall-clock time (the idle gaps). Until then, "the gap is the memory
# system" is a hypothesis, not a finding.
#
# Two reference points for the first cause, neither a measurement of this run's memory system.
# First, the same README's informal note on its power-capped A100s (a remark, with no method
# given; the catalog keeps it in the conditions of gpt-fast's 70B entry):

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.many_chips import gpt_fast_empirical_bandwidth_bytes_per_s

empirical_bw = gpt_fast_empirical_bandwidth_bytes_per_s()
of_empirical = fraction_of_bound * a100.memory_bandwidth_bytes_per_s / empirical_bw
md(f"gpt-fast README, informal note: the A100's empirical peak bandwidth is about {si(empirical_bw, 'B/s')}, "
   f"{percent(empirical_bw / a100.memory_bandwidth_bytes_per_s, 0)} of the {si(a100.memory_bandwidth_bytes_per_s, 'B/s')} "
   f"datasheet figure. The same tokens/s would be {percent(of_empirical, 0)} of the rate the same compulsory bytes "
   f"allow at {si(empirical_bw, 'B/s')}, against {percent(fraction_of_bound, 0)} of the bound priced at the datasheet "
   f"figure: if the note held for this run, the remaining gap, {percent(1 - of_empirical, 0)} of that rate, would be "
   "left for the other causes — a hypothesis, since the note measures nothing about this run.")

# %% [markdown]
# Second, a streaming benchmark measured on a neighbouring part (the catalog has none for the
# A100):

# %%
from roofline_lessons.topics.published import provenance

pcie = get_part("h100-pcie")
for m in pcie.measurements("bandwidth_bytes_per_s"):
    print(f"{pcie.name}, {m.kernel} ({m.conditions or 'conditions not recorded'}): {si(m.value, 'B/s')} = "
          f"{percent(m.value / pcie.memory_bandwidth_bytes_per_s, 0)} of {si(pcie.memory_bandwidth_bytes_per_s, 'B/s')} "
          f"({provenance(m)})")

# %% jupyter={"source_hidden": true}
assert not a100.measurements("bandwidth_bytes_per_s"), "the catalog has no streaming figure for the A100"
# "the streaming reads the catalog records stay below it" (a store-only kernel, kept under its own quantity, can
# pass the rounded datasheet figure: lesson 2)
assert all(m.value < pcie.memory_bandwidth_bytes_per_s for m in pcie.measurements("bandwidth_bytes_per_s"))

# %% [markdown]
# ### Batch-1 decode of the hybrid, in numbers

# %% jupyter={"source_hidden": true}
from roofline_lessons.topics.datasheets import best_measurement

study_part = get_part("h100-sxm")
study = best_measurement(study_part, "decode_fraction_of_memory_floor")
graphs = best_measurement(study_part, "cuda_graphs_decode_speedup")  # the same study: without ÷ with CUDA Graphs
# one stack, one study: the 27 % run is the A/B's "without" arm, as its catalog conditions say
assert graphs.source == study.source and "no CUDA Graphs" in study.conditions, "one stack, one study"
assert study.conditions.split(", no CUDA Graphs")[0] in graphs.conditions
study_conditions = study.conditions
with_graphs = study.value * graphs.value
assert study.value < with_graphs < 1
md(f"Batch-1 decode of Qwen3.8-27B with {PROMPT:,} tokens cached: I = {float(qd.intensity):.2f} FLOP/byte, attainable "
   f"{si(float(qd.attainable_flops_per_s), 'FLOP/s')} = **{percent(float(qd.fraction_of_peak))} of peak** — and that is "
   "its roof, the best any kernel can do there. A kernel at a fraction of a percent of peak is not broken for that "
   "alone; it is near its roof only if its measured bandwidth confirms it. The catalog's batch-1 study records "
   f"{percent(study.value, 0)} of the analytic memory floor on an {study_part.name} ({study_conditions}; "
   f"{provenance(study)}). That gap is the runtime more than the kernels: CUDA Graphs alone, on the same stack, make "
   f"the step {graphs.value:.3f}× faster, to {percent(study.value, 0)} × {graphs.value:.3f} ≈ "
   f"{percent(with_graphs, 0)} of the floor — the second cause in the list above, launch gaps, measured.")

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
from roofline_lessons.core.units import binary

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
                 duration(float(s.time_lower_bound_s)), duration(float(s.time_estimate_s)), s.lower_bound_roof])
show_table(["model", "parameters", "KV cache per token (BF16)", f"TPOT at {count(PROMPT)} tokens: lower bound",
            "estimate", "roof (bound)"], rows)

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
# time. Try: decode at 65,536 tokens for Llama-3.1-8B (what climbs to the top of the table?);
# then 131,072 — with the new token that is one past the model's context, so the dashboard calls
# it a what-if; prefill of 128 tokens; the MoE model.

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
# - A roofline turns into time: TTFT ≥ FLOPs / peak, TPOT ≥ compulsory bytes / bandwidth. Those
#   are lower bounds. The estimate adds what a plain implementation does and names it (operators
#   unfused, an assumed latency per collective call); quote either, and say which. Measured systems
#   land at a fraction of the bound; for decode that fraction is MBU. It says how far, not why:
#   a tool's "bandwidth achieved" computed from tokens/s is the same number again, up to its own
#   byte count.
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
