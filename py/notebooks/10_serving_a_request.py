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
# # Lesson 10 — Serving a request: TTFT, TPOT, continuous batching, speculative decoding, cost
#
# Lessons 1–9 priced one step. A user sends a *request*: a prompt in, a stream of tokens out. Here
# the steps are strung together into the request's timeline, and the serving tricks — batching,
# chunked prefill, speculative decoding, prefix caching — are priced with the same roofs.
#
# **By the end of this lesson you can**
#
# 1. build a request's timeline from its steps and compute TTFT, TPOT and end-to-end latency, and say
#    why two tools can report different TPOTs for the same run;
# 2. read the throughput–latency trade over batch, find the capacity wall, and compute goodput under a
#    latency objective with Little's law;
# 3. say what a mixed (chunked-prefill) step does to intensity and to the running sequences' TPOT;
# 4. compute speculative decoding's expected tokens per verify step, and say where its speed-up goes;
# 5. turn a throughput into dollars and joules per token, with the assumptions named.
#
# > **Conventions.** Every time below is one of two figures (lesson 3), and its name carries its caveats.
# >
# > - A **lower bound** counts compulsory traffic only (the weights, the KV cache, the tokens' ids
# >   and logits), lets compute and memory overlap, and assumes no latency: no implementation of
# >   that step on that chip is faster. Turned into a rate it is an **upper bound** for the workload
# >   as priced (continuous batching with B sequences in flight, every prompt prefilled in full, BF16,
# >   one token per sequence per step): prefix caching (section 8) and speculation (section 7) can
# >   beat it.
# > - An **estimate** follows these conventions: a step takes max(FLOPs ÷ dense BF16 peak, bytes ÷
# >   bandwidth) with every operator's activations through HBM (unfused); one chip, BF16 weights and
# >   KV cache; no scheduler, launch overhead or per-call latency (lesson 9 showed what that leaves
# >   out); a batch is served as **one static batch** (the whole batch prefills, then decodes, and
# >   nothing else runs meanwhile); a drafted token is accepted with an assumed probability α,
# >   independently; the price per GPU-hour is an example you set (the catalog quotes no prices);
# >   board power is the catalog's sourced rating, assumed drawn all the time. A ratio of estimates
# >   (a speed-up) is an estimate too.
# >
# > Where the two figures disagree about a conclusion, both are shown. Capacity is binary (a vendor's
# > "GB" of HBM is read as GiB, lesson 2). A setup that outgrows the chip's memory is priced anyway
# > and marked "does not fit".

# %%
import math

import numpy as np

from roofline_lessons import get_model, get_part, place
from roofline_lessons.core.hardware import list_parts
from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION, max_batch_that_fits
from roofline_lessons.core.units import binary, count, duration, num, percent, si
from roofline_lessons.topics.serving import (cost_per_million_output_tokens, energy_per_token_upper_bound_j,
                                             expected_tokens_per_verify, goodput_requests_per_s, littles_law,
                                             mixed_step, pareto, request_timeline, speculation_speedup)
from roofline_lessons.viz.display import md, show_table

MODEL, PART = "llama-3.1-8b", "h100-sxm"
PROMPT_TOKENS, OUTPUT_TOKENS = 2048, 256  # one chat turn: a long system prompt and history, a short answer
SHORT_PROMPT = 256  # a short chat turn, for speculative decoding (section 7 and Going further)
part = get_part(PART)

# %% [markdown]
# ## 1. A request's timeline
#
# A request runs in two phases (lesson 3). **Prefill** pushes the whole prompt through the model in
# one step and produces the first output token: the **time to first token (TTFT)** is that step's
# time. Then **decode** produces one token per step, each step reading the weights and a KV cache one
# token longer than the step before. The **end-to-end latency (E2E)** is TTFT plus every decode step.
# A request of n output tokens has n − 1 decode steps: the first token came from the prefill.

# %% jupyter={"source_hidden": true}
request = request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS)
prefill = place(MODEL, PART, phase="prefill", prompt_tokens=PROMPT_TOKENS)
step_weight_bytes = model_cost(MODEL, phase="decode", context_tokens=PROMPT_TOKENS).weight_bytes  # read per step
kv_per_token = get_model(MODEL).kv_bytes_per_token("bf16")
step_growth = request.step_s[-1] / request.step_s[0] - 1
assert prefill.bound == prefill.lower_bound_roof  # both figures agree on the prefill's roof
assert 0 < step_growth < 0.01  # "slowly"
sparse_peak = part.sparse_headline_flops_per_s("bf16")  # the datasheet's headline, if it quotes one
md(f"**{get_model(MODEL).name} on the {part.name}, batch 1, {count(PROMPT_TOKENS)} tokens in, "
   f"{count(OUTPUT_TOKENS)} out.** TTFT = **{duration(request.ttft_s)}** (lower bound "
   f"{duration(request.ttft_lower_bound_s)}): the prefill is **{prefill.bound}-bound** — its FLOPs need "
   f"{duration(float(prefill.compute_time_s))} at the dense BF16 peak, "
   f"{num(part.peak_flops_per_s('bf16') / 1e12)} TFLOP/s"  # in tera, as datasheets quote both
   + (f" (the datasheet's {num(sparse_peak / 1e12)} is with sparsity)" if sparse_peak else "")
   + f", its bytes {duration(float(prefill.memory_time_s))} "
   f"at {si(part.memory_bandwidth_bytes_per_s, 'B/s')} unfused, {duration(float(prefill.memory_lower_bound_s))} "
   f"compulsory. Then {count(request.decode_steps)} decode steps; E2E = **{duration(request.e2e_s)}** "
   f"(lower bound {duration(request.e2e_lower_bound_s)}).\n\n"
   f"Each decode step is memory-bound (lesson 3): it reads {binary(step_weight_bytes)} of weights for one token, "
   f"plus a KV cache that grows by {binary(kv_per_token)} per token. So the steps get only slowly longer: the "
   f"first, with {count(request.step_context_tokens[0])} tokens cached, takes {duration(request.step_s[0])}; the "
   f"last, with {count(request.step_context_tokens[-1])}, {duration(request.step_s[-1])} "
   f"(+{percent(step_growth, 1)}; lower bounds {duration(request.step_lower_bound_s[0])} and "
   f"{duration(request.step_lower_bound_s[-1])}).")

# %% [markdown]
# **Question.** Double the prompt to 4,096 tokens. Which of TTFT and the decode step roughly doubles,
# and why does the other barely move?

# %% jupyter={"source_hidden": true}
longer = request_timeline(MODEL, PART, prompt_tokens=2 * PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS)
assert longer.ttft_s / request.ttft_s > 1.9 and longer.tpot_s / request.tpot_s < 1.1  # "roughly doubles", "barely"
md(f"<details><summary>Answer</summary>\n\nTTFT grows {num(longer.ttft_s / request.ttft_s)}× (to "
   f"{duration(longer.ttft_s)}): a compute-bound prefill's FLOPs grow with the prompt (a little faster than "
   f"linearly: attention is quadratic). The decode step (TPOT) grows only {num(longer.tpot_s / request.tpot_s)}× "
   f"(to {duration(longer.tpot_s)}): it is dominated by the {binary(step_weight_bytes)} of "
   f"weights it reads whatever the context (the embedding table is gathered row by row, not streamed); the KV "
   f"cache it adds is {binary(kv_per_token)} per token.\n\n</details>")

# %% [markdown]
# ## 2. TPOT: one name, three numbers
#
# **TPOT** (time per output token, or inter-token latency) is the mean gap between tokens *after the
# first*: TPOT = (E2E − TTFT) ÷ (output − 1). This is what vLLM's benchmark reports. Other tools
# divide E2E by *all* the output tokens, which folds the prefill into every token; others average
# the gaps between streamed chunks, which is the mean step time. Same run, different numbers:

# %%
show_table(["definition", "value (estimate)"],
           [["TPOT = (E2E − TTFT) ÷ (output − 1)", duration(request.tpot_s)],
            ["mean decode-step time", duration(request.mean_step_s)],
            ["E2E ÷ output tokens (prefill folded in)", duration(request.e2e_s / request.output_tokens)]])

# %% jupyter={"source_hidden": true}
folded_in = request.ttft_s / request.output_tokens  # what the third definition adds to each token
assert math.isclose(request.tpot_s, request.mean_step_s) and folded_in < 0.1 * request.tpot_s  # "agree", "small"
md(f"The first two agree here because every step yields one token; section 7 pulls them apart. The third adds "
   f"TTFT spread over the tokens, {duration(folded_in)} each: small here. Always ask which definition a TPOT uses.")

# %% [markdown]
# **Question.** A summarisation request: 32,768 tokens in, 64 out. How far does E2E ÷ output now
# stray from TPOT?

# %% jupyter={"source_hidden": true}
DOC_PROMPT, DOC_OUTPUT = 32768, 64
doc = request_timeline(MODEL, PART, prompt_tokens=DOC_PROMPT, output_tokens=DOC_OUTPUT)
md(f"<details><summary>Answer</summary>\n\nTTFT is {duration(doc.ttft_s)}; spread over {count(DOC_OUTPUT)} tokens "
   f"it adds {duration(doc.ttft_s / DOC_OUTPUT)} to each, so E2E ÷ output is {duration(doc.e2e_s / DOC_OUTPUT)} "
   f"against a TPOT of {duration(doc.tpot_s)}: **{num(doc.e2e_s / DOC_OUTPUT / doc.tpot_s)}×**. A long document "
   "with a short answer is where they part: a large TTFT, spread over few tokens.\n\n</details>")

# %% [markdown]
# ## 3. Throughput against latency: the batch
#
# Batch B requests together (lesson 4): each decode step reads the weights once for B tokens. Total
# throughput climbs; each user's own rate falls, because the step carries more work. The B requests
# arrive together and prefill together, so TTFT grows with B too (sections 5 and 6 fix that).
# Throughput counts every output token, the first included, over E2E.

# %%
BATCHES = [1, 4, 16, 32, 64, 128, 256, 512]
frontier = pareto(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, batches=BATCHES)
show_table(["batch", "TTFT (estimate)", "TPOT (estimate)", "tokens/s per user (estimate)",
            "tokens/s, all users (estimate)"],
           [[count(b) + ("" if f else " (**does not fit**)"), duration(t), duration(p), num(u), num(a)]
            for b, t, p, u, a, f in zip(frontier.batch, frontier.ttft_s, frontier.tpot_s,
                                        frontier.output_tokens_per_s_per_sequence, frontier.output_tokens_per_s,
                                        frontier.fits_in_memory)])

# %% jupyter={"source_hidden": true}
wall = max_batch_that_fits(MODEL, PART, PROMPT_TOKENS + OUTPUT_TOKENS)
wall_vllm = max_batch_that_fits(MODEL, PART, PROMPT_TOKENS + OUTPUT_TOKENS,
                                memory_utilization=VLLM_DEFAULT_MEMORY_UTILIZATION)
at_wall = request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, batch=wall)
mid_context = PROMPT_TOKENS + OUTPUT_TOKENS // 2
ridge = part.ridge_point_flop_per_byte("bf16")
ridge_gloss = f"the ridge (where compute and memory take equal time, {num(ridge)} FLOP/byte)"
knee = (f"The **critical batch** — where a decode step would reach {ridge_gloss} — is "
        f"**{count(frontier.critical_batch)}**" if frontier.critical_batch else
        f"There is **no critical batch**: at {count(mid_context)} tokens cached a decode step never reaches "
        f"{ridge_gloss}, because every sequence added brings its "
        "own KV cache to read (lesson 4); throughput saturates gradually, with no sharp knee")
wall_role = ("is what stops the batch" if frontier.critical_batch is None else
             "comes first" if wall < frontier.critical_batch else "comes after it")
md(f"{knee}. The **capacity wall** {wall_role}: weights plus {count(PROMPT_TOKENS + OUTPUT_TOKENS)} "
   f"tokens of KV cache per sequence fit at most **{count(wall)} sequences** in "
   f"{binary(part.memory_capacity_bytes)} at the final context — the static batch's wall, with no headroom for activations, "
   f"workspace or fragmentation; vLLM by default uses {percent(VLLM_DEFAULT_MEMORY_UTILIZATION, 0)} of the memory, "
   f"which fits {count(wall_vllm)}. "
   f"There the chip gives {num(at_wall.output_tokens_per_s)} tokens/s in all, "
   f"{num(at_wall.output_tokens_per_s / request.output_tokens_per_s)}× batch 1, while each user gets "
   f"{num(at_wall.output_tokens_per_s_per_sequence)} tokens/s instead of "
   f"{num(request.output_tokens_per_s_per_sequence)}.")

# %% [markdown]
# **Question.** From batch 64 to 128 the users double. Does the total throughput double? If not,
# what eats the difference?

# %% jupyter={"source_hidden": true}
b64, b128 = (request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, batch=b)
             for b in (64, 128))
decode_rate = [t.batch / t.tpot_s for t in (b64, b128)]  # decode alone: B tokens per step
kv_128 = 128 * mid_context * kv_per_token  # KV bytes a batch-128 step reads
assert kv_128 > step_weight_bytes  # the KV cache, not the weights, now sets the step's reads
assert decode_rate[1] / decode_rate[0] < 1.5  # decode "gains only"
assert math.isclose(b128.ttft_s / b64.ttft_s, 2, rel_tol=0.05)  # "TTFT doubles"
md(f"<details><summary>Answer</summary>\n\nThe total rises {percent(b128.output_tokens_per_s / b64.output_tokens_per_s - 1, 0)} "
   f"({num(b64.output_tokens_per_s)} → {num(b128.output_tokens_per_s)} tokens/s) while each user falls from "
   f"{num(b64.output_tokens_per_s_per_sequence)} to {num(b128.output_tokens_per_s_per_sequence)} tokens/s. Two "
   f"things eat the doubling. The decode step: at batch 128 it reads {binary(kv_128)} of KV cache against "
   f"{binary(step_weight_bytes)} of weights, so the step slows from {duration(b64.tpot_s)} to {duration(b128.tpot_s)} and "
   f"decode alone gains only {percent(decode_rate[1] / decode_rate[0] - 1, 0)}. The static prefill: TTFT doubles to "
   f"{duration(b128.ttft_s)}, {percent(b128.ttft_s / b128.e2e_s, 0)} of E2E, and no user receives a token while it "
   "runs.\n\n</details>")

# %% [markdown]
# ## 4. Little's law and goodput
#
# **Little's law** ties three averages of any stable queue: requests in the system = arrival rate ×
# time each spends there (L = λ·W). A chip holding B requests for E2E seconds serves B ÷ E2E requests
# per second.
#
# Users do not want throughput; they want each request fast enough. A **service-level objective
# (SLO)** bounds TTFT and TPOT, and **goodput** counts only the requests served within it (and in
# memory). The two limits below are a product decision, not a property of the chip — change them and
# run again. The sweep assumes each batch's requests arrive together just as it starts, the next
# batch starting when the last one ends: TTFT is timed from the batch's start.

# %%
# ASSUMPTION: an interactive chat's objectives (our choice, not a standard); TPOT ≤ 10 ms is 100 tokens/s per user
TTFT_SLO_S, TPOT_SLO_S = 1.0, 0.010
slo = dict(prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, ttft_slo_s=TTFT_SLO_S, tpot_slo_s=TPOT_SLO_S)
good = goodput_requests_per_s(MODEL, PART, batches=BATCHES, **slo)
good_lb = goodput_requests_per_s(MODEL, PART, batches=BATCHES, figures="lower_bound", **slo)  # steps at their bounds
show_table(["batch", "TTFT (estimate)", "TPOT: estimate (lower bound)", "requests/s (B ÷ E2E)",
            "goodput, requests/s (0: misses the SLO by the estimate, or does not fit)"],
           [[count(b), duration(t), f"{duration(p)} ({duration(q)})", num(r), num(g)]
            for b, t, p, q, r, g in zip(good.batch, good.ttft_s, good.tpot_s, good_lb.tpot_s, good.requests_per_s,
                                        good.goodput_requests_per_s)])

# %% jupyter={"source_hidden": true}
TARGET_REQUESTS_PER_S = 100  # a traffic level to plan for
every = range(1, wall + 1)  # every batch that fits, not only the listed ones
fine = goodput_requests_per_s(MODEL, PART, batches=every, **slo)
fine_lb = goodput_requests_per_s(MODEL, PART, batches=every, figures="lower_bound", **slo)
assert fine.best_batch == fine_lb.best_batch  # "by both figures"
at_best = fine.best_batch - every[0]
best_e2e = fine.e2e_s[at_best]
in_flight = littles_law(throughput_per_s=TARGET_REQUESTS_PER_S, latency_s=best_e2e)
assert all((g > 0) == ok for g, ok in zip(good.goodput_requests_per_s, good.meets_slo))  # the header's "0"
assert fine.mean_arrival_wait_s[at_best] > TTFT_SLO_S  # "already past"
assert fine.max_arrival_wait_s.min() > TTFT_SLO_S  # "at every batch"
md(f"Over every batch that fits (1 to {count(wall)}), the best within TTFT ≤ {duration(TTFT_SLO_S)} and TPOT ≤ "
   f"{duration(TPOT_SLO_S)} is **{count(fine.best_batch)}** by both figures: "
   f"**{num(fine.best_goodput_requests_per_s)} requests/s** per chip (estimate). For "
   f"{count(TARGET_REQUESTS_PER_S)} requests/s at its E2E of {duration(best_e2e)}, Little's law puts "
   f"{num(in_flight)} requests in flight: **{count(math.ceil(in_flight / fine.best_batch))} chips** at "
   f"{count(fine.best_batch)} each — a **best case** that assumes each request arrives just as its batch starts. "
   f"Arriving at a random moment, a request first waits for the running batch to end: on average E2E ÷ 2 = "
   f"**{duration(fine.mean_arrival_wait_s[at_best])}** at batch {count(fine.best_batch)}, already past the "
   f"objective, and up to a whole E2E, over {duration(TTFT_SLO_S)} at every batch "
   f"({duration(fine.max_arrival_wait_s[0])} at batch 1). So on one chip a static schedule cannot give every "
   f"randomly arriving request a {duration(TTFT_SLO_S)} TTFT; continuous batching (next section) admits a "
   "newcomer at the next step.")

# %% [markdown]
# **Question.** What stops the batch from growing past the best one: TTFT, TPOT or memory? Double
# the TPOT objective: does goodput rise? Double the TTFT objective instead: does it rise then?

# %% jupyter={"source_hidden": true}
def loosened(ttft_slo_s, tpot_slo_s):
    """The best batch over every batch that fits, by the estimate and by the lower bounds."""
    kw = dict(prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, batches=every, ttft_slo_s=ttft_slo_s,
              tpot_slo_s=tpot_slo_s)
    return goodput_requests_per_s(MODEL, PART, **kw), goodput_requests_per_s(MODEL, PART, figures="lower_bound", **kw)


def stopper(g):
    """What the batch after ``g``'s best misses, by ``g``'s figures."""
    return " and ".join(g.misses(g.best_batch + 1)) if g.best_batch < wall else "memory"


def after_loosening(what, pair):
    est, lb = pair
    if est.best_batch == fine.best_batch and lb.best_batch == fine.best_batch:
        return (f"doubling {what} leaves goodput at {num(fine.best_goodput_requests_per_s)} requests/s: "
                f"{stopper(est)} still stops the batch at {count(est.best_batch)}")
    by_lb = ("the same batch by the lower bounds" if lb.best_batch == est.best_batch else
             f"{num(lb.best_goodput_requests_per_s)} at batch {count(lb.best_batch)} by the lower bounds")
    agree = (f"both stop at {stopper(est)}" if stopper(est) == stopper(lb) else
             f"the estimate stops at {stopper(est)}, the lower bounds at {stopper(lb)}")
    return (f"doubling {what} raises it to {num(est.best_goodput_requests_per_s)} requests/s at batch "
            f"{count(est.best_batch)} by the estimate, {by_lb} ({agree})")


nxt = fine.best_batch + 1
loose_ttft = loosened(2 * TTFT_SLO_S, TPOT_SLO_S)
edge = loose_ttft[1].best_batch  # the lower bounds' last batch within the looser TTFT objective
edge_est = request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, batch=edge)
md(f"<details><summary>Answer</summary>\n\nThe next batch, {count(nxt)}, misses on "
   f"{' and '.join(fine.misses(nxt))} ({duration(fine.ttft_s[nxt - every[0]])}; its TPOT is "
   f"{duration(fine.tpot_s[nxt - every[0]])}). "
   f"Then {after_loosening('the TPOT objective', loosened(TTFT_SLO_S, 2 * TPOT_SLO_S))}; "
   f"{after_loosening('the TTFT objective', loose_ttft)}; "
   f"{after_loosening('both', loosened(2 * TTFT_SLO_S, 2 * TPOT_SLO_S))}."
   + (f" Where the two figures part, the objective sits between them: batch {count(edge)}'s TPOT is "
      f"{duration(edge_est.tpot_s)} by the estimate, {duration(edge_est.tpot_lower_bound_s)} by the lower bound, "
      "so whether it meets the objective depends on how close a real engine comes to the bound."
      if edge != loose_ttft[0].best_batch else "")
   + " An objective costs goodput only where it binds. When a whole batch prefills at once TTFT grows with the "
   "batch; continuous batching (with chunked prefill, sections 5 and 6) is how servers move that wall: a newcomer "
   "joins at the next step instead of waiting for a batch to form or finish.\n\n</details>")

# %% [markdown]
# ## 5. Continuous batching: what the static batch leaves on the table
#
# A real server does not wait for a whole batch. **Continuous batching** keeps B sequences decoding
# and admits a new request at any step; its prompt rides in the same steps as the running
# sequences' decode tokens (section 6), so it never pays a weight pass of its own and no decode
# stream stops for it. Over one request's life the engine does the static schedule's work — B
# prefills and B × (output − 1) decode tokens — minus the prefill's weight read, each unit free to
# overlap its work across the whole cycle. That cycle's lower bound, turned into a rate, is
# `output_tokens_per_s_upper_bound`: no engine on this chip with B sequences in flight, every prompt
# prefilled in full (no prefix cache), in BF16, beats it **without speculative decoding**.

# %%
STEADY_BATCHES = [1, 16, 64, wall]
steady = [request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, batch=b)
          for b in STEADY_BATCHES]
show_table(["batch", "tokens/s, static batch (estimate)", "continuous batching, no speculation (upper bound)",
            "upper bound ÷ static estimate"],
           [[count(t.batch), num(t.output_tokens_per_s_static_batch), num(t.output_tokens_per_s_upper_bound),
             f"{num(t.output_tokens_per_s_upper_bound / t.output_tokens_per_s_static_batch)}×"] for t in steady])

# %% jupyter={"source_hidden": true}
gain = [t.output_tokens_per_s_upper_bound / t.output_tokens_per_s_static_batch for t in steady]
assert all(g >= 1 for g in gain)  # the static schedule never beats the bound
big = max(range(len(steady)), key=lambda i: gain[i])
at_lower_bounds = [t.batch * t.output_tokens / t.e2e_lower_bound_s for t in steady]  # static steps at their bounds
assert at_lower_bounds[big] < 1.05 * steady[big].output_tokens_per_s_static_batch  # "barely"
sweep = [request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, batch=b)
         for b in range(1, wall + 1)]  # every batch that fits
sweep_gain = np.array([t.output_tokens_per_s_upper_bound / t.output_tokens_per_s_static_batch for t in sweep])
peak = int(np.argmax(sweep_gain))
units = [t.upper_bound_unit for t in sweep]
turn = units.index("compute")  # the first batch whose cycle bound is set by the FLOPs
assert set(units[:turn]) == {"memory"} and set(units[turn:]) == {"compute"} and turn == peak + 1  # "where it turns"
assert np.all(np.diff(sweep_gain[peak:]) < 0)  # "falls" past the peak
CACHED_PREFIX = 1536  # prompt tokens a prefix cache might already hold (section 8)
cached = request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, batch=wall,
                          prefix_cached_tokens=CACHED_PREFIX)
assert cached.output_tokens_per_s_upper_bound > steady[-1].output_tokens_per_s_upper_bound  # "lifts"
md(f"The static estimate is always at or under the bound, as it must be. Of these four batches the gap is widest "
   f"at **{count(steady[big].batch)}** ({num(gain[big])}×); over every batch that fits it peaks at "
   f"**{count(sweep[peak].batch)}** ({num(sweep_gain[peak])}×), the last whose cycle bound is set by memory: past "
   "it the cycle is compute-bound, the prompts' FLOPs no longer hide under the decode steps' reads, and the gap "
   f"falls ({num(sweep_gain[-1])}× at {count(wall)}). It is the schedule, not the step pricing: price every static "
   f"step at its lower bound and batch {count(steady[big].batch)} barely moves, "
   f"{num(steady[big].output_tokens_per_s_static_batch)} → {num(at_lower_bounds[big])} tokens/s. A real engine "
   "lands at or below the upper bound (fixed costs, scheduling and imperfect kernels, lesson 9, can put it below "
   f"the static estimate too) unless it changes the workload: with {count(CACHED_PREFIX)} of each prompt's tokens "
   f"cached (section 8), batch {count(wall)}'s bound rises from {num(steady[-1].output_tokens_per_s_upper_bound)} "
   f"to {num(cached.output_tokens_per_s_upper_bound)} tokens/s.")

# %% [markdown]
# **Question.** Why is the gap small at batch 1 and wide at batch 64?

# %% jupyter={"source_hidden": true}
small, wide = steady[0], steady[STEADY_BATCHES.index(64)]
assert gain[0] < 1.1 < gain[STEADY_BATCHES.index(64)]  # "small", "wide"
md(f"<details><summary>Answer</summary>\n\n{num(gain[0])}× against {num(gain[STEADY_BATCHES.index(64)])}×. "
   f"At batch 1 the prefill is {percent(small.ttft_s / small.e2e_s, 1)} of E2E; at batch 64 the static schedule "
   f"prefills all 64 prompts first, {duration(wide.ttft_s)} or {percent(wide.ttft_s / wide.e2e_s, 0)} of E2E, with "
   "every decode stream stopped. Continuous batching does that prefill work inside decode steps that read the "
   "weights anyway, with compute and memory overlapped: the larger the batch, the more prefill there is to hide "
   f"— until the cycle turns compute-bound (past batch {count(sweep[peak].batch)}) and the prefills' FLOPs no "
   "longer fit under the reads.\n\n</details>")

# %% [markdown]
# ## 6. Chunked prefill: the mixed step
#
# **Chunked prefill** cuts a newcomer's prompt into chunks that ride along with the running
# sequences' decode tokens in one **mixed step**. The weights are read once for both: the decode
# tokens, starved for FLOPs, lend the chunk their weight reads, and the chunk lends the step
# intensity. The server's knob is the **token budget**: how many tokens one step may carry (here
# the 64 decode tokens plus the chunk).

# %%
DECODE_BATCH = 64  # sequences already decoding, each at the prompt length
rows = []
for chunk in (128, 256, 512, 1024, 2048):
    s = mixed_step(MODEL, PART, decode_batch=DECODE_BATCH, decode_context_tokens=PROMPT_TOKENS,
                   prefill_chunk_tokens=chunk)
    rows.append([f"{count(chunk)} ({count(s.tokens)})", num(s.intensity), duration(s.time_s),
                 f"+{percent(s.time_s / s.decode_only_time_s - 1, 0)}",
                 f"+{percent(s.lower_bound_s / s.decode_only_lower_bound_s - 1, 1)}"])
show_table(["prefill chunk (token budget)", "FLOP/byte (unfused)", "mixed step (estimate)",
            "slows the running sequences by (estimate)", "… ratio of lower bounds (not a bound)"], rows)

# %% jupyter={"source_hidden": true}
alone = mixed_step(MODEL, PART, decode_batch=DECODE_BATCH, decode_context_tokens=PROMPT_TOKENS,
                   prefill_chunk_tokens=1)
at_ridge = next(c for c in range(64, 8193, 64)
                if mixed_step(MODEL, PART, decode_batch=DECODE_BATCH, decode_context_tokens=PROMPT_TOKENS,
                              prefill_chunk_tokens=c).intensity >= ridge)
ridge_step = mixed_step(MODEL, PART, decode_batch=DECODE_BATCH, decode_context_tokens=PROMPT_TOKENS,
                        prefill_chunk_tokens=at_ridge)
below = mixed_step(MODEL, PART, decode_batch=DECODE_BATCH, decode_context_tokens=PROMPT_TOKENS,
                   prefill_chunk_tokens=at_ridge // 2)  # a chunk half the size that reaches the ridge
below_est = below.time_s / below.decode_only_time_s - 1
below_lb = below.lower_bound_s / below.decode_only_lower_bound_s - 1
assert below_lb < below_est / 2 and below_lb < 0.01  # mostly the unfused convention's; "almost free" by the bound
md(f"A decode-only step of {count(DECODE_BATCH)} sequences sits at {num(alone.decode_only_intensity)} FLOP/byte, "
   f"far below the ridge ({num(ridge)}), and takes {duration(alone.decode_only_time_s)} (estimate). A chunk of about "
   f"**{count(at_ridge)} prompt tokens** lifts the mixed step's unfused intensity to the ridge; that step takes "
   f"{duration(ridge_step.time_s)}, so the running sequences' TPOT grows by "
   f"**{percent(ridge_step.time_s / ridge_step.decode_only_time_s - 1, 0)}** by the estimate, "
   f"**{percent(ridge_step.lower_bound_s / ridge_step.decode_only_lower_bound_s - 1, 1)}** by the lower bounds' "
   "ratio (not itself a bound).\n\n"
   f"Below the ridge the two figures part ways. With a chunk of {count(at_ridge // 2)} tokens the estimate slows "
   f"the step by {percent(below_est, 1)}, the lower bounds' ratio by {percent(below_lb, 1)}: the estimate sends "
   "the chunk's activations through HBM between operators (the unfused convention), and those are most of its "
   "extra bytes. "
   "A fused engine keeps them on chip, so the chunk rides almost free on the weight reads the step makes anyway — "
   "only its KV writes, ids and logits are compulsory. Past the ridge both figures grow with every extra prompt "
   "token (the table's last rows): the FLOPs bind. So the budget trades the newcomer's TTFT "
   "(fewer, larger chunks) against everyone else's TPOT (smaller chunks), and the price per token climbs fastest "
   "past the ridge.")

# %% [markdown]
# **Question.** A 2,048-token prompt arrives while the 64 sequences decode. With a budget that
# fits it all in one step, what happens to the running sequences' TPOT for that step? And with a
# chunk of 512?

# %% jupyter={"source_hidden": true}
whole = mixed_step(MODEL, PART, decode_batch=DECODE_BATCH, decode_context_tokens=PROMPT_TOKENS,
                   prefill_chunk_tokens=PROMPT_TOKENS)
QUARTER = 512
# chunk i attends over the i chunks before it, already in the cache: each is priced over its own history
quarters = [mixed_step(MODEL, PART, decode_batch=DECODE_BATCH, decode_context_tokens=PROMPT_TOKENS,
                       prefill_chunk_tokens=min(QUARTER, PROMPT_TOKENS - start), prefill_cached_tokens=start)
            for start in range(0, PROMPT_TOKENS, QUARTER)]
n_chunks = len(quarters)
fastest, slowest = min(q.time_s for q in quarters), max(q.time_s for q in quarters)
md(f"<details><summary>Answer</summary>\n\nIn one step: a {duration(whole.time_s)} step instead of "
   f"{duration(whole.decode_only_time_s)}, {num(whole.time_s / whole.decode_only_time_s)}× — a visible stall in "
   f"{count(DECODE_BATCH)} streams. In chunks of {count(QUARTER)}: {count(n_chunks)} steps of "
   f"{duration(fastest)} to {duration(slowest)} ({num(fastest / whole.decode_only_time_s)}× to "
   f"{num(slowest / whole.decode_only_time_s)}× a decode-only step: each later chunk attends over, and reads the KV "
   f"of, the chunks before it), and the newcomer's first token comes after "
   f"{duration(sum(q.time_s for q in quarters))} of steps instead of {duration(whole.time_s)}. Chunking has a "
   "price of its own for the newcomer (Going further).\n\n</details>")

# %% [markdown]
# ## 7. Speculative decoding
#
# Decode at small batch leaves the compute idle while the weights stream. **Speculative decoding**
# spends that idle compute: a cheap **draft** proposes k tokens, and the target model checks all of
# them in one **verify step** — one read of the weights for k + 1 positions. Each drafted token is
# accepted with probability α; the first rejection ends the run, and the target supplies one token
# of its own. The expected tokens per verify step are
# 1 + α + α² + … + α^k = (1 − α^(k+1)) ÷ (1 − α).

# %%
ALPHAS, KS = (0.5, 0.7, 0.9), (1, 2, 4, 8)
show_table(["drafted tokens k"] + [f"α = {a}" for a in ALPHAS],
           [[count(k)] + [num(expected_tokens_per_verify(k, a)) for a in ALPHAS] for k in KS])

# %% jupyter={"source_hidden": true}
SAT_ALPHA = ALPHAS[1]
ceiling = 1 / (1 - SAT_ALPHA)  # the sum's limit as k grows without end
most_k = expected_tokens_per_verify(KS[-1], SAT_ALPHA)
assert math.isclose(most_k, (1 - SAT_ALPHA ** (KS[-1] + 1)) / (1 - SAT_ALPHA)) and most_k > 0.9 * ceiling
md(f"The gain saturates. The i-th drafted token counts only if it and every draft before it are accepted, "
   f"probability α^i: at α = {SAT_ALPHA}, with enough drafts proposed, a run reaches four accepted drafts "
   f"{percent(SAT_ALPHA ** 4, 0)} of the "
   f"time and eight {percent(SAT_ALPHA ** 8, 1)}. However many tokens are drafted, a verify step yields fewer "
   f"than 1 ÷ (1 − α) = {num(ceiling)} tokens on average; k = {count(KS[-1])} already gives {num(most_k)}, "
   f"{percent(most_k / ceiling, 0)} of that limit.")

# %% [markdown]
# The draft is not free either. Here it is a hypothetical **MTP-style** head, run k times
# (Llama-3.1 has none; DeepSeek-V3's multi-token-prediction module, one extra layer on the target,
# predicts one extra token). The package **assumes** a draft step costs one layer's share of the
# target's decode step plus a read of the **lm_head** (the matrix from hidden state to vocabulary
# scores, which the head needs to propose a token): an assumption, not a measured cost — a real MTP
# module also has its own projection, norms and kernel launches. With k = 4 and α = 0.7:

# %%
# ASSUMPTION: acceptance depends on the draft and on the workload (code and templated text accept more than
# open-ended chat); the MTP head and the 8B draft (Going further) would not share one α in practice.
K, ALPHA = 4, 0.7
spec = request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS,
                        speculative_tokens=K, acceptance=ALPHA)
show_table(["(estimates)", "plain decode", f"speculative, k = {K}, α = {ALPHA}"],
           [["tokens per step", "1", num(spec.tokens_per_verify_step)],
            ["steps after the first token", count(request.decode_steps), count(spec.decode_steps)],
            ["mean step time", duration(request.mean_step_s), duration(spec.mean_step_s)],
            ["TPOT = (E2E − TTFT) ÷ (output − 1)", duration(request.tpot_s), duration(spec.tpot_s)],
            ["E2E", duration(request.e2e_s), duration(spec.e2e_s)]])

# %% jupyter={"source_hidden": true}
assert spec.output_tokens_per_s > request.output_tokens_per_s_upper_bound  # "beats", below
assert request.e2e_s / spec.e2e_s < request.tpot_s / spec.tpot_s  # "E2E improves less than TPOT"
md(f"Now the two TPOT definitions of section 2 part ways: the mean step time is a verify step, "
   f"{duration(spec.mean_step_s)}. Tokens now arrive in bursts, {num(spec.tokens_per_verify_step)} on average "
   f"every {duration(spec.mean_step_s)}, and (E2E − TTFT) ÷ (output − 1) is the **mean** gap between tokens, "
   f"averaged over the bursts: {duration(spec.tpot_s)}. E2E improves less than TPOT "
   f"({num(request.e2e_s / spec.e2e_s)}× against {num(request.tpot_s / spec.tpot_s)}×): speculation does nothing "
   f"for the prefill.\n\n"
   f"Speculation also beats section 5's upper bound, which assumes one token per sequence per step: at batch 1 "
   f"this request runs at {num(spec.output_tokens_per_s)} tokens/s (estimate), above the "
   f"{num(request.output_tokens_per_s_upper_bound)} tokens/s that no engine beats at batch 1 *without* "
   "speculation. That bound is a bound on plain decoding, not on every engine.")

# %% [markdown]
# **Question.** Speculation halves TPOT at batch 1. Does it still pay at batch 512, with 256-token
# prompts?

# %% jupyter={"source_hidden": true}
one_user, crowd = (speculation_speedup(MODEL, PART, prompt_tokens=SHORT_PROMPT, output_tokens=OUTPUT_TOKENS,
                                       batch=b, speculative_tokens=K, acceptance=ALPHA) for b in (1, 512))
assert 1.8 < one_user.tpot < 2.2 and crowd.fits_in_memory  # "halves"
md(f"<details><summary>Answer</summary>\n\nNo: {num(one_user.tpot)}× at batch 1, **{num(crowd.tpot)}× at batch 512**"
   + (" — below 1, speculation slows the server down" if crowd.tpot < 1 else "")
   + f". The verify step of a batch B carries B × (k + 1) tokens, {count(512 * (K + 1))} here. At batch 1 that "
   "is free — the step was memory-bound. As B grows the verify step's weight matmuls become compute-bound, and "
   "then every rejected draft is FLOPs paid for nothing. Long prompts hold it off (Going further).\n\n</details>")

# %% [markdown]
# ## 8. Prefix caching
#
# Many requests share a beginning: a system prompt, a few-shot template, a document discussed over
# several turns. A server that keeps that prefix's KV cache (vLLM's automatic prefix caching,
# SGLang's RadixAttention) skips its prefill: only the new tokens go through the model, attending to
# the cached keys and values.

# %%
show_table(["prompt tokens already cached", "TTFT (estimate)", "of the uncached TTFT"],
           [[f"{count(p)} of {count(PROMPT_TOKENS)}", duration(t), percent(t / request.ttft_s, 0)]
            for p, t in ((p, request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS,
                                              prefix_cached_tokens=p).ttft_s) for p in (0, 1024, 1536, 1984, 2040))])

# %% [markdown]
# **Question.** Why does TTFT not fall in proportion as the cached share nears 100 %?

# %% jupyter={"source_hidden": true}
almost = request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS,
                          prefix_cached_tokens=PROMPT_TOKENS - 8)
md(f"<details><summary>Answer</summary>\n\nWith 8 tokens left the prefill is a short, memory-bound step: it still "
   f"reads the {binary(step_weight_bytes)} of weights every step reads "
   f"({duration(step_weight_bytes / part.memory_bandwidth_bytes_per_s)} at the bandwidth; the embedding table is "
   f"gathered row by row, not streamed) and the cached prefix's KV cache. TTFT bottoms out at {duration(almost.ttft_s)}, about one decode step, not "
   "zero.\n\n</details>")

# %% [markdown]
# ## 9. Cost per token
#
# A chip-hour has a price; divide it by the tokens the hour produces. The catalog holds no prices —
# they change weekly and differ by contract — so the price below is **an assumption you set**, not a
# fact. Priced at the static batch's estimated rate, the cost is an estimate; priced at continuous
# batching's upper bound on the rate, it is, batch by batch, a lower bound on the cost of any engine
# with that batch in flight that prefills every prompt in full, in BF16, without speculating.

# %%
PRICE_PER_HOUR_USD = 2.50  # ASSUMPTION: an example rental price for one H100 SXM, US dollars per hour; set your own
cases = [("batch 1", request), (f"batch {count(fine.best_batch)} (best within the SLO)",
                                request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS,
                                                 output_tokens=OUTPUT_TOKENS, batch=fine.best_batch)),
         (f"batch {count(wall)} (the capacity wall)", at_wall)]
show_table(["batch", "tokens/s, all users: static batch (estimate)",
            "USD per million output tokens (estimate)", "tokens/s: continuous batching, no speculation (upper bound)",
            "USD per million output tokens (lower bound, no speculation)"],
           [[name, num(t.output_tokens_per_s),
             num(cost_per_million_output_tokens(PRICE_PER_HOUR_USD, t.output_tokens_per_s)),
             num(t.output_tokens_per_s_upper_bound),
             num(cost_per_million_output_tokens(PRICE_PER_HOUR_USD, t.output_tokens_per_s_upper_bound))]
            for name, t in cases])

# %% [markdown]
# Both costs are blended: the prefill's time is included, while API prices split input and output
# tokens. Use the **total** throughput: the chip-hour is paid once for every user on it. Dividing by
# one user's tokens/s charges the whole chip to each of them.
#
# **Question.** The price doubles, but you move from batch 1 to the best batch within the SLO. What
# happens to the cost per million tokens?

# %% jupyter={"source_hidden": true}
best = cases[1][1]
md(f"<details><summary>Answer</summary>\n\n"
   f"USD {num(cost_per_million_output_tokens(PRICE_PER_HOUR_USD, request.output_tokens_per_s))} at batch 1 becomes "
   f"USD {num(cost_per_million_output_tokens(2 * PRICE_PER_HOUR_USD, best.output_tokens_per_s))} (estimates, static "
   f"batch): the batch multiplies "
   f"throughput by {num(best.output_tokens_per_s / request.output_tokens_per_s)}, far more than the price's 2×. "
   "Cost = price ÷ throughput: both set it, but batching is the lever you control.\n\n</details>")

# %% [markdown]
# ## Explore: the serving dashboard
#
# Pick a model and a part; slide the batch, the prompt and the output; set the two SLOs. The chart
# is the latency–throughput curve over batch (TPOT across, total output tokens/s up; dotted where the
# batch no longer fits), your operating point on it, the TPOT SLO's region, and the batches that meet
# both SLOs; the bar beneath splits your request's E2E into TTFT and decode. Try: batch 1 → 64 for
# Llama-3.1-8B on an H100 (what happens to TPOT, and to the total?); a 32,768-token prompt (which SLO
# breaks first?); Llama-3.1-70B on an L4.

# %%
from roofline_lessons.viz.dashboards import lesson10_dashboard

dashboard = lesson10_dashboard()

# %% [markdown]
# ## Summary
#
# - TTFT is the prefill step (compute-bound for a long prompt); each decode step reads the weights
#   and a growing KV cache; E2E is their sum. TPOT = (E2E − TTFT) ÷ (output − 1); the mean step time
#   and E2E ÷ output are different numbers under the same name.
# - Batching trades each user's rate for total throughput until the capacity wall; goodput counts
#   only requests within the SLO, and Little's law turns it into chips (a best case of a static
#   schedule: it assumes requests arrive as their batch starts, and continuous batching can do
#   better).
# - The static batch's tokens/s is an estimate of that schedule; continuous batching's steady state
#   gives an upper bound for that workload (B in flight, every prompt prefilled in full, BF16) that
#   no engine beats without speculative decoding.
# - A mixed step lends the decode tokens' weight reads to a prefill chunk; the token budget trades
#   the newcomer's TTFT against everyone's TPOT. Below the ridge the slowdown is mostly the
#   estimate's unfused activations (the lower bound barely moves); past the ridge every extra token
#   adds compute time by both figures.
# - Speculative decoding yields (1 − α^(k+1)) ÷ (1 − α) tokens per verify step, minus the draft's
#   cost. On short prompts it buys most at batch 1 and fades as the verify step turns
#   compute-bound; long prompts' KV reads keep it (Going further).
# - Prefix caching skips the cached prompt's prefill; TTFT bottoms out at about one weight read.
# - Cost per token = price per hour ÷ total tokens per hour (the price is yours to set, batching is
#   the lever); board power ÷ tokens/s bounds the GPU board's energy per token at a measured rate,
#   and is an estimate at the assumed power when the rate is itself an estimate (Going further).
#
# **Interview questions this lesson prepares you for**
#
# - "Define TTFT and TPOT. Why might two benchmarks disagree on TPOT for the same run?"
# - "Speculative decoding speeds up batch-1 decode but not batch 512 on short prompts. Why?"
# - "What does chunked prefill do to the TPOT of the requests already running, and how would you
#   choose the token budget?"
# - "How many GPUs do you need for 100 requests/s under a 1 s TTFT and a 10 ms TPOT objective?"
#
# The exercises for this lesson are in `exercises/10_serving_a_request.ipynb`. The sections below go
# further: read them when you want the detail behind a claim above.

# %% jupyter={"source_hidden": true}
# the Summary's claims: speculation on short and long prompts, and the interview question's figures
spec_short, spec_long = ({b: speculation_speedup(MODEL, PART, prompt_tokens=prompt, output_tokens=OUTPUT_TOKENS,
                                                 batch=b, speculative_tokens=K, acceptance=ALPHA).tpot
                          for b in (1, 64, 512)} for prompt in (SHORT_PROMPT, PROMPT_TOKENS))
assert spec_short[1] > spec_short[64] > spec_short[512] and spec_short[512] < 1  # "buys most at batch 1", "fades"
assert spec_long[64] >= spec_long[1]  # long prompts "keep it"
assert all(place(MODEL, PART, phase="decode", batch=b * (K + 1), context_tokens=1).bound == bound
           for b, bound in ((1, "memory"), (512, "compute")))  # the verify step's weight matmuls "turn compute-bound"
assert (TARGET_REQUESTS_PER_S, TTFT_SLO_S, TPOT_SLO_S) == (100, 1.0, 0.010)  # the interview question's figures

# %% [markdown]
# ## Going further: what chunking costs the newcomer
#
# Every chunk is a step that reads the weights again. That is hidden while a chunk is large enough to
# be compute-bound, and shows once chunks fall below the ridge. A prompt prefilled alone, in chunks
# (each chunk's step by both figures):

# %%
CHUNKS = (None, 1024, 512, 128)
chunked = [request_timeline(MODEL, PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, chunk_tokens=c)
           for c in CHUNKS]
show_table(["prefill chunk", "TTFT, prompt alone (estimate)", "TTFT (lower bound, for that chunking)"],
           [[count(c) if c else "whole prompt", duration(t.ttft_s), duration(t.ttft_lower_bound_s)]
            for c, t in zip(CHUNKS, chunked)])

# %% jupyter={"source_hidden": true}
assert chunked[-1].ttft_lower_bound_s > chunked[0].ttft_lower_bound_s  # "raise" the lower bound too
chunk_lb_ratio = chunked[-1].ttft_lower_bound_s / chunked[0].ttft_lower_bound_s
md(f"Chunks of {count(CHUNKS[-1])} raise the newcomer's TTFT lower bound from "
   f"{duration(chunked[0].ttft_lower_bound_s)} to {duration(chunked[-1].ttft_lower_bound_s)} ({num(chunk_lb_ratio)}× "
   "— a ratio of lower bounds, not itself a bound): "
   f"{count(math.ceil(PROMPT_TOKENS / CHUNKS[-1]))} weight passes instead of one. Chunking is not what shortens "
   "the wait; **continuous batching** is — a newcomer joins at the next step instead of waiting for the running "
   "batch to finish, and chunking only keeps its prefill from stalling the others while it joins.")

# %% [markdown]
# **Question.** Which chunk size is the smallest that leaves the newcomer's TTFT where the whole
# prompt would put it, and why that one?

# %% jupyter={"source_hidden": true}
same = [c for c, t in zip(CHUNKS, chunked) if c and math.isclose(t.ttft_s, chunked[0].ttft_s, rel_tol=0.01)]
smallest = min(same)
first_chunk = place(MODEL, PART, phase="prefill", prompt_tokens=smallest)  # a chunk alone, nothing cached yet
small_chunk = place(MODEL, PART, phase="prefill", prompt_tokens=CHUNKS[-1])
assert first_chunk.bound == "compute" and small_chunk.bound == "memory"
md(f"<details><summary>Answer</summary>\n\n{count(smallest)} tokens, of those in the table. A chunk of "
   f"{count(smallest)} is compute-bound on its own: its FLOPs take {duration(float(first_chunk.compute_time_s))}, its "
   f"bytes {duration(float(first_chunk.memory_time_s))}, so the weight read it repeats hides under the FLOPs. A "
   f"chunk of {count(CHUNKS[-1])} is memory-bound ({duration(float(small_chunk.compute_time_s))} of FLOPs against "
   f"{duration(float(small_chunk.memory_time_s))} of bytes): each one pays a weight pass its FLOPs do not cover."
   "\n\n</details>")

# %% [markdown]
# ## Going further: where speculation's speed-up goes
#
# The verify step of a batch B carries B × (k + 1) tokens. As B grows its weight matmuls become
# compute-bound, and every rejected draft is FLOPs paid for nothing. The KV cache, though, is read
# once per sequence, not per drafted position, so a long context keeps the verify step memory-bound
# longer. TPOT speed-up (plain ÷ speculative) at two prompt lengths:

# %%
SPEC_BATCHES = (1, 16, 64, 128, 256, 512)


def speedups(prompt):
    """Plain against speculative decoding at each batch, with section 7's k and α."""
    return [speculation_speedup(MODEL, PART, prompt_tokens=prompt, output_tokens=OUTPUT_TOKENS, batch=b,
                                speculative_tokens=K, acceptance=ALPHA) for b in SPEC_BATCHES]


short_runs, long_runs = speedups(SHORT_PROMPT), speedups(PROMPT_TOKENS)
show_table(["batch", f"TPOT speed-up, {count(SHORT_PROMPT)}-token prompt (estimate)",
            f"{count(PROMPT_TOKENS)}-token prompt (estimate)"],
           [[count(b)] + [f"{num(x.tpot)}×" + ("" if x.fits_in_memory else " (does not fit)") for x in (s, l)]
            for b, s, l in zip(SPEC_BATCHES, short_runs, long_runs)])

# %% jupyter={"source_hidden": true}
low_batch, low = min(((b, r.tpot) for b, r in zip(SPEC_BATCHES, short_runs)), key=lambda x: x[1])
md(f"With {count(SHORT_PROMPT)}-token prompts the speed-up falls from {num(short_runs[0].tpot)}× at batch 1 to "
   f"**{num(low)}× at batch {count(low_batch)}**"
   + (": below 1, speculation slows the server down. " if low < 1 else ". ")
   + f"With {count(PROMPT_TOKENS)}-token prompts the KV reads keep the verify step memory-bound and the speed-up "
   f"holds ({num(long_runs[-1].tpot)}× at batch {count(SPEC_BATCHES[-1])})"
   + (" — but that batch does not fit in memory. " if not long_runs[-1].fits_in_memory else ". ")
   + "A real verify step also pays the draft's kernel launches and the work of accepting and rejecting "
   "tokens, so measured speed-ups at large batch are smaller still, and servers often switch speculation off "
   "under heavy load.")

# %% [markdown]
# **Question.** At batch 128 the speed-up differs between the two prompt lengths. Which prompt keeps
# more of it, and what does the verify step read that the plain decode step reads just as much of?

# %% jupyter={"source_hidden": true}
i128 = SPEC_BATCHES.index(128)
assert long_runs[i128].tpot > short_runs[i128].tpot and long_runs[i128].fits_in_memory  # "keeps more", and fits
md(f"<details><summary>Answer</summary>\n\nThe {count(PROMPT_TOKENS)}-token prompt "
   f"({num(long_runs[i128].tpot)}× against {num(short_runs[i128].tpot)}×). Each sequence's KV cache is read once per "
   "verify step, however many positions it checks, exactly as a plain decode step reads it: a long context adds "
   "the same bytes to both, keeps both memory-bound, and the extra drafted positions ride on those bytes.\n\n"
   "</details>")

# %% [markdown]
# ## Going further: a draft model of its own
#
# An MTP head costs about one layer plus an lm_head read. A separate **draft model** costs k of its
# own decode steps per verify step, and its weights and KV cache share the chip's memory.
# Llama-3.1-70B on an H200, drafted by Llama-3.1-8B (same tokenizer) or by a hypothetical MTP-style
# head (Llama-3.1 has none; DeepSeek-V3's MTP module predicts one extra token), at batch 1:

# %%
TARGET, DRAFT, BIG_PART = "llama-3.1-70b", "llama-3.1-8b", "h200"
base70 = request_timeline(TARGET, BIG_PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS)
mtp70 = request_timeline(TARGET, BIG_PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS,
                         speculative_tokens=K, acceptance=ALPHA)
draft70 = request_timeline(TARGET, BIG_PART, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS,
                           speculative_tokens=K, acceptance=ALPHA, draft_model=DRAFT)
draft_step = place(DRAFT, BIG_PART, phase="decode", context_tokens=PROMPT_TOKENS)
target_step = place(TARGET, BIG_PART, phase="decode", context_tokens=PROMPT_TOKENS)
def unless_too_big(t, text):
    """A figure for a setup that does not fit the chip, marked so."""
    return text if t.fits_in_memory else f"{text} (does not fit)"


show_table(["draft", "TPOT (estimate)", "speed-up (estimate)"],
           [["none", unless_too_big(base70, duration(base70.tpot_s)), "1×"],
            ["MTP-style head", unless_too_big(mtp70, duration(mtp70.tpot_s)),
             unless_too_big(mtp70, f"{num(base70.tpot_s / mtp70.tpot_s)}×")],
            [get_model(DRAFT).name, unless_too_big(draft70, duration(draft70.tpot_s)),
             unless_too_big(draft70, f"{num(base70.tpot_s / draft70.tpot_s)}×")]])

# %% jupyter={"source_hidden": true}
big_part = get_part(BIG_PART)
md(f"Put both models on one H200: the target's and the draft's weights and KV caches need "
   f"{binary(draft70.memory_required_bytes)} of its {binary(big_part.memory_capacity_bytes)}, so the pair "
   + (f"**fits**, with {binary(big_part.memory_capacity_bytes - draft70.memory_required_bytes)} left for a larger "
      "batch or context." if draft70.fits_in_memory else
      "**does not fit** in BF16: it needs FP8 weights or a second chip."))

# %% [markdown]
# **Question.** One decode step of the 8B draft costs what fraction of the 70B target's? Why is
# forgetting that cost the classic mistake in a speculative-decoding estimate?

# %% jupyter={"source_hidden": true}
md(f"<details><summary>Answer</summary>\n\n{duration(float(draft_step.time_estimate_s))} against "
   f"{duration(float(target_step.time_estimate_s))}: "
   f"{percent(float(draft_step.time_estimate_s / target_step.time_estimate_s), 0)} — both memory-bound, so "
   f"about their weight ratio. k = {K} draft steps add {percent(K * float(draft_step.time_estimate_s / target_step.time_estimate_s), 0)} "
   f"of a target step to every verify step: the speed-up falls from {num(base70.tpot_s / mtp70.tpot_s)}× to "
   f"{num(base70.tpot_s / draft70.tpot_s)}×"
   + ("" if draft70.fits_in_memory else " (priced as if the pair fit: in BF16 it does not, see above)")
   + ". Tokens per verify step alone "
   f"({num(expected_tokens_per_verify(K, ALPHA))}) overstate the gain.\n\n</details>")

# %% [markdown]
# ## Going further: energy per token
#
# The figure below is **GPU-board energy per token**: it excludes the host CPU, the network and the
# facility's overhead (cooling and power delivery, the PUE). A board's rated power (its TDP, or
# power limit — configurable: datasheets give it as "up to" a figure, and an operator may cap it
# lower) caps its *average* draw — short peaks may exceed it — so at a *measured* rate, board power
# ÷ tokens/s is an **upper bound on the energy per token at that rate** (the board's): the case
# `energy_per_token_upper_bound_j` is named for. The table feeds it the static batch's *estimated*
# rate instead, so each figure there is an **estimate at the assumed power** (the rating, drawn all
# the time), not a bound either way: a real run can be slower or (with continuous batching) faster,
# and draws less than the rating. The catalog lists board power only where a source states it:

# %%
powered = [p for p in list_parts() if get_part(p).board_power_w is not None]
runs = [(pid, request_timeline(MODEL, pid, prompt_tokens=PROMPT_TOKENS, output_tokens=OUTPUT_TOKENS, batch=b))
        for pid in powered for b in (1, 64)]
show_table(["part", "board power (rated, assumed drawn)", "batch", "tokens/s (static batch, estimate)",
            "GPU-board energy per token (estimate at the rated power)"],
           [[get_part(pid).name, f"{num(get_part(pid).board_power_w)} W", count(t.batch), num(t.output_tokens_per_s),
             f"{num(energy_per_token_upper_bound_j(pid, t.output_tokens_per_s))} J"]
            for pid, t in runs if t.fits_in_memory])
if PART not in powered:
    md(f"The {part.name} this lesson uses is missing: the catalog has no sourced board power for it, and it "
       "does not guess one.")

# %% [markdown]
# **Question.** On any one part, batch 64 needs far less energy per token than batch 1. Why, when the
# board is assumed to draw the same power?

# %% jupyter={"source_hidden": true}
rates = {(pid, t.batch): t.output_tokens_per_s for pid, t in runs if t.fits_in_memory}
ratios = [rates[pid, 64] / rates[pid, 1] for pid in powered if (pid, 1) in rates and (pid, 64) in rates]
assert ratios and min(ratios) > 5  # "far less"
md(f"<details><summary>Answer</summary>\n\nEnergy per token = power ÷ tokens/s, and batch 64 multiplies the tokens "
   f"per second by {num(min(ratios))}× to {num(max(ratios))}× across these parts at the same assumed power: the "
   "weights are read once per step for 64 tokens instead of one. Batching is the energy lever as it is the cost "
   "lever.\n\n</details>")
