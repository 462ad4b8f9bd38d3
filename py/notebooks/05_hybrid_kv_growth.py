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
# # Lesson 5 — KV growth in a hybrid model
#
# **By the end of this lesson you can**
#
# 1. derive, from a config, how fast a model's KV cache grows per token and how large a fixed
#    recurrent state is — and why a hybrid model has both;
# 2. break one decode step's bytes into weights, KV read, KV written, state read and state written,
#    from 1 K to 256 K tokens of context, and say when KV traffic overtakes the weights;
# 3. put the two layer kinds of one model on the roofline as two dots, and say which one moves;
# 4. price the architecture: the same model with every layer full attention, and a dense peer;
# 5. use the state's number format as a lever.

# %%
# %matplotlib inline
import numpy as np

from roofline_lessons import get_model, get_part, place
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.topics.hybrid import (all_full_attention, kv_overtakes_weights_context, layer_kind_points,
                                     step_bytes_breakdown)
from roofline_lessons.core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION, max_batch_that_fits
from roofline_lessons.core.models import FULL_ATTENTION, GATED_DELTANET
from roofline_lessons.core.units import GiB, KiB, MiB, binary, percent, si

qwen = get_model("qwen3.8-27b")
h100, h200 = get_part("h100-sxm"), get_part("h200")


def resident(step) -> str:
    """What the step keeps resident (weights + KV cache + state), marked when it does not fit the part."""
    need = binary(float(step.memory_required_bytes))
    return need if step.fits_in_memory else f"{need}: does not fit {binary(step.part.memory_capacity_bytes)}"

# %% [markdown]
# ## Two kinds of memory in one model
#
# Qwen3.8-27B has 64 layers. Every fourth is **full attention**: it keeps the keys and values of
# every past token, so its cache grows with the conversation. The other three in four are **Gated
# DeltaNet** layers: instead of a history they keep a fixed matrix per head, the recurrent state
# $S$, updated every token by the delta rule $S_t = S_{t-1}\,\alpha_t (I - \beta_t k_t k_t^\top) +
# \beta_t v_t k_t^\top$ and read out as $o_t = S_t q_t$. Both sizes follow from the config:

# %% jupyter={"source_hidden": true}
kv_layer = 2 * qwen.num_key_value_heads * qwen.head_dim * 2  # K and V, KV heads, head_dim, 2 bytes (BF16)
state_layer = qwen.linear_num_value_heads * qwen.linear_value_head_dim * qwen.linear_key_head_dim * 4  # float32
md(f"- **{qwen.num_full_attention_layers} full-attention layers**: 2 (K, V) × {qwen.num_key_value_heads} KV heads × "
   f"{qwen.head_dim} head_dim × 2 bytes = **{binary(kv_layer)} per token per layer**, "
   f"**{binary(qwen.kv_bytes_per_token('bf16'))} per token** over the {qwen.num_full_attention_layers} layers.\n"
   f"- **{qwen.num_deltanet_layers} Gated DeltaNet layers**: {qwen.linear_num_value_heads} value heads × "
   f"{qwen.linear_value_head_dim} × {qwen.linear_key_head_dim} × 4 bytes (float32) = "
   f"**{binary(state_layer)} per layer**, **{binary(qwen.deltanet_state_bytes())}** over the "
   f"{qwen.num_deltanet_layers} layers — whatever the context.\n"
   f"- Plus a small short-convolution state: {binary(qwen.conv_state_bytes())} per sequence.")
assert kv_layer * qwen.num_full_attention_layers == qwen.kv_bytes_per_token("bf16") == 64 * KiB
assert state_layer == qwen.deltanet_state_bytes_per_layer() == 3 * MiB

# %% [markdown]
# The break-even is worth knowing: after how many tokens does the growing KV cache outweigh the
# fixed state?

# %% jupyter={"source_hidden": true}
md(f"The state equals the KV cache of **{qwen.deltanet_state_bytes() / qwen.kv_bytes_per_token():,.0f} tokens**. "
   "Beyond that, the three quarters of the model that are Gated DeltaNet cost less memory than the one quarter "
   "that is full attention.")

# %% [markdown]
# ## One decode step, byte by byte, from 1 K to 256 K tokens
#
# Every decode step reads all weights (shared by the batch), each sequence's whole KV cache, and
# each sequence's state — and writes the new token's keys and values and the updated state.

# %%
contexts = np.array([1024, 8192, 32768, 131072, 262144])
for batch in (1, 16):
    parts = step_bytes_breakdown(qwen, contexts, batch=batch)
    total = sum(parts.values())
    md(f"**Batch {batch}** — bytes per step, and each kind's share of them, on an H100 SXM. The step is "
       "memory-bound, so byte shares are time shares. Activations are counted unfused (each operator's output "
       "through HBM), as the estimate counts them; the lower bound leaves them out.")
    steps_here = [place(qwen, h100, phase="decode", batch=batch, context_tokens=int(c)) for c in contexts]
    assert all(s.lower_bound_roof == "memory" for s in steps_here)
    show_table(["tokens cached"] + list(parts) + ["step ≥ (lower bound)", "estimate", "resident (weights + KV + state)"],
               [[f"{c:,}"] + [f"{si(parts[k][i], 'B')} ({percent(parts[k][i] / total[i], 0)})" for k in parts]
                + [f"{float(steps_here[i].time_lower_bound_s) * 1e3:,.1f} ms",
                   f"{float(steps_here[i].time_estimate_s) * 1e3:,.1f} ms", resident(steps_here[i])]
                for i, c in enumerate(contexts)])
    too_big = [f"{c:,}" for c, s in zip(contexts, steps_here) if not s.fits_in_memory]
    if too_big:
        md(f"At batch {batch}, the rows at {', '.join(too_big)} tokens do not fit the {h100.name}'s "
           f"{binary(h100.memory_capacity_bytes)}: they time a step the part cannot hold, arithmetic for the what-if, "
           "not a configuration it can run.")

# %% [markdown]
# The state rows do not move with context; the KV rows do. Where does KV traffic overtake the
# weights?

# %%
rows = []
max_ctx = qwen.max_context_tokens  # config.json max_position_embeddings
for batch in (1, 4, 16, 64):
    crossing = kv_overtakes_weights_context(qwen, batch)
    rows.append([batch, f"{crossing:,.0f} tokens", f"{crossing / max_ctx:,.2f}× max_context_tokens"])
show_table(["batch", "KV reads = weight reads at", f"against its {max_ctx:,}-token context"], rows)
crossing_1 = kv_overtakes_weights_context(qwen, 1)
where = "beyond" if crossing_1 > max_ctx else "within"
md(f"At batch 1 the crossing lies {where} the model's native context ({crossing_1 / max_ctx:,.1f}× its "
   f"`max_context_tokens` of {max_ctx:,}): "
   + ("the weights dominate every batch-1 step it was built for. " if crossing_1 > max_ctx else "")
   + "But the weights are shared by the batch and the KV caches are not, so the crossing moves in as 1/batch.")

# %% [markdown]
# ## Two dots for one model
#
# Put each layer kind (with its share of the MLPs) on the roofline separately, batch 16, as the
# context grows:

# %%
rows = []
for ctx in (1024, 8192, 32768, 131072):
    p = place(qwen, h100, phase="decode", batch=16, context_tokens=ctx)
    pts = layer_kind_points(p.cost)
    rows.append([f"{ctx:,}", f"{float(pts[FULL_ATTENTION].intensity):.2f}", si(float(pts[FULL_ATTENTION].bytes), "B"),
                 f"{float(pts[GATED_DELTANET].intensity):.2f}", si(float(pts[GATED_DELTANET].bytes), "B"),
                 resident(p)])
show_table(["tokens cached", "full-attention layers: FLOP/byte (estimate, unfused)", "their bytes (estimate, unfused)",
            "Gated DeltaNet layers: FLOP/byte (estimate, unfused)", "their bytes (estimate, unfused)",
            f"resident on the {h100.name}"], rows)
md("Both dots use the estimate's bytes (`place(...).cost`): every operator's activations counted through HBM, "
   "unfused. The lower bound's compulsory bytes leave those out, so its dots sit a little further right; what moves "
   "and what stays is the same.")

# %% [markdown]
# The Gated DeltaNet dot **does not move**: same FLOPs, same bytes at every context. The
# full-attention dot does: its bytes climb with the history, and its intensity slides from about
# the batch size (the weights amortised) towards the grouped-query ratio (each KV byte serves the
# query heads that share it). Three quarters of the depth cost a constant amount per step; one
# quarter costs more every token.
#
# ## The counterfactual: every layer full attention
#
# What did the hybrid buy? Compare it with the same model made of 64 full-attention layers, and
# with a dense peer of similar size, Qwen3-32B, at 128 K tokens on an H200:

# %%
variant = all_full_attention(qwen)
rows, past_context = [], []
vllm_share = VLLM_DEFAULT_MEMORY_UTILIZATION
what_if_context = 131072
for m in (qwen, variant, get_model("qwen3-32b")):
    fit = max_batch_that_fits(m, h200, what_if_context)  # memory_utilization=1.0: every byte of the part
    fit_vllm = max_batch_that_fits(m, h200, what_if_context, memory_utilization=vllm_share)
    step = place(m, h200, phase="decode", batch=max(fit, 1), context_tokens=what_if_context)
    if step.context_beyond_model:
        past_context.append(m)
    rows.append([m.name + (f" — what-if: past its {m.max_context_tokens:,}-token context" if step.context_beyond_model
                           else ""),
                 f"{m.parameter_count() / 1e9:,.1f} B", binary(m.kv_bytes_per_token()),
                 binary(m.deltanet_state_bytes()) if m.is_hybrid else "—", f"{fit:,}", f"{fit_vllm:,}",
                 f"{float(step.time_lower_bound_s) * 1e3:,.1f} ms at batch {max(fit, 1)}",
                 f"{float(step.tokens_per_s_upper_bound):,.0f}", f"{float(step.tokens_per_s_estimate):,.0f}"])
show_table(["model", "params", "KV per token", "state per sequence", "largest batch at 128 K (H200, 100 % of memory)",
            f"… at {percent(vllm_share, 0)} (vLLM's long-standing default)",
            "decode step ≥ (lower bound), 100 % batch", "tokens/s ≤ (upper bound)", "tokens/s, estimate (unfused)"], rows)

# %% jupyter={"source_hidden": true}
fit_hybrid, fit_variant = (max_batch_that_fits(m, h200, what_if_context) for m in (qwen, variant))
fit_hybrid_vllm, fit_variant_vllm = (max_batch_that_fits(m, h200, what_if_context, memory_utilization=vllm_share)
                                     for m in (qwen, variant))
# the driver exposes a little less than the datasheet's capacity (hardware.toml's note: nvidia-smi shows 143,771 MiB)
driver_mib = 143_771
driver_bytes = driver_mib * MiB
driver_share = driver_bytes / h200.memory_capacity_bytes
same_at_driver = all(max_batch_that_fits(m, h200, what_if_context, memory_utilization=driver_share)
                     == max_batch_that_fits(m, h200, what_if_context) for m in (qwen, variant))
# Qwen's documentation: Qwen3 reaches 131,072 tokens only with YaRN rope scaling
what_if_notes = "".join(
    f"**{m.name} at {what_if_context:,} tokens is a what-if.** Its config.json gives {m.max_context_tokens:,} "
    "positions (`max_position_embeddings`, the catalog's `max_context_tokens`); "
    + ("Qwen's documentation extends Qwen3 models to 131,072 tokens with YaRN rope scaling (QwenLM/Qwen3, "
       "docs/source/inference/transformers.md), a configuration change this row assumes. "
       if m.id.startswith("qwen3-") else "")
    + "Its KV bytes per token do not depend on that, so the row prices the memory correctly for a model "
    "configured to reach this context — not the model as it ships.\n\n" for m in past_context)
fewer = "fewer" if variant.parameter_count() < qwen.parameter_count() else "more"
md(what_if_notes + f"(The all-attention variant has {fewer} parameters — {variant.parameter_count() / 1e9:,.1f} B against "
   f"{qwen.parameter_count() / 1e9:,.1f} B — because a full-attention layer of this model differs in size from a Gated "
   f"DeltaNet one.) Quadrupling the KV cache per token is what the hybrid avoids: at {what_if_context:,} tokens on "
   f"an H200, filling all {binary(h200.memory_capacity_bytes)} the datasheet gives (the catalog's capacity; the driver "
   f"exposes {driver_mib:,} MiB = {driver_bytes / GiB:,.1f} GiB, which gives "
   + ("the same batches here" if same_at_driver else "smaller batches: use that figure for a real deployment")
   + f"), that is {fit_variant} conversations against {fit_hybrid}"
   + (f", {fit_hybrid / fit_variant:,.1f}× the batch" if fit_variant else "")
   + f"; leaving vLLM's long-standing default headroom (it fills {percent(vllm_share, 0)}), {fit_variant_vllm} against {fit_hybrid_vllm}"
   + (f", {fit_hybrid_vllm / fit_variant_vllm:,.1f}×." if fit_variant_vllm else "."))

# %% [markdown]
# ## A lever: the state's number format
#
# The reference implementation keeps the state in float32. Keeping it in BF16 halves its bytes:

# %%
rows = []
for batch in (1, 32):
    for dt in ("fp32", "bf16"):
        p = place(qwen, h100, phase="decode", batch=batch, context_tokens=4096, state_dtype=dt)
        rows.append([batch, dt, si(float(p.cost.state_bytes), "B"), f"{float(p.time_lower_bound_s) * 1e3:,.2f} ms",
                     f"{float(p.time_estimate_s) * 1e3:,.2f} ms", percent(float(p.cost.state_bytes / p.cost.bytes), 1)])
show_table(["batch", "state dtype", "state bytes per step", "step ≥ (lower bound)", "estimate",
            "state share of (unfused) bytes"], rows)

# %% [markdown]
# At batch 1 the state is a rounding error beside the weights; at batch 32 it is a visible
# slice of every step, and halving it is a real (if modest) win — paid for in numerical precision
# of a quantity that is updated, not just read, every token.
#
# ## Explore
#
# Slide the context and the batch; switch the part and the KV format. Left: where each step's bytes
# go over 1 K–256 K tokens (the line marks your context). Right: the two layer kinds as two dots.
# Try: batch 16 at 256 K on the H100 (does it fit?); FP8 KV at batch 64.

# %%
from roofline_lessons.viz.dashboards import lesson05_dashboard

dashboard = lesson05_dashboard()

# %% [markdown]
# ## Summary
#
# - Full attention keeps a history that grows with every token; Gated DeltaNet keeps a fixed state
#   per sequence, whatever the context. Both sizes follow from the config in two lines.
# - Decode reads the weights once per step, but every sequence's KV cache and state; the KV share
#   grows with context and batch, the state bytes only with batch (their share of the step falls as
#   the context, and with it the KV read, grows).
# - On the roofline: one dot that moves with context, one that does not.
# - The hybrid buys a quarter of the KV cache of the all-attention design, which at long context
#   multiplies the batch that fits (the counterfactual table above gives the factor).
#
# **A question to leave with.** If the 16 full-attention layers used an FP8 KV cache, at what batch
# would KV reads overtake the weights at 32 K tokens?
#
# **Interview questions this lesson prepares you for**
#
# - "How much KV cache does a token cost in this model? Show the arithmetic."
# - "Why do linear-attention / state-space layers help long-context serving, in bytes?"
# - "At what context does the KV cache dominate decode traffic?"
# - "What does a hybrid model look like on a roofline?"
#
# The exercises for this lesson are in `exercises/05_hybrid_kv_growth.ipynb`.
