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

# %%

# %% [markdown]
# # Lesson 9 — Exercises: reality check
#
# These exercises use the reality check lesson 9 saved on your machine, or — if you have not run
# the lesson yet — the example that ships with the course. Every checker recomputes its answer from
# the check you pass it, so your numbers are judged against your own measurement.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/09_reality_check.ipynb` is generated from it.*

# %%
from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.units import duration, si
from roofline_lessons.course.checks import lesson09 as grade
from roofline_lessons.measure import reality

saved = reality.latest_saved()
check = reality.load(saved) if saved else reality.example()
step = min(check.decode_by_batch, key=lambda s: s.batch)
print(f"{'your run, ' + saved.name if saved else 'the example'}: {check.model['name']}; DRAM "
      f"{si(check.bandwidth_bytes_per_s, 'B/s')}, float32 matmul {si(check.peak_flops_per_s, 'FLOP/s')}; batch-1 "
      f"decode at {step.tokens} tokens cached took {duration(step.measured_s)}")

# %% [markdown]
# ## Exercise 9.1 — the batch-1 bound
#
# From the measured roofs in `check` and the cost model of the model that ran
# (`check.model_config()`, in the number formats it ran in: pass `**check.dtypes` — float32 for the
# numpy decoder), compute the lower bound of the batch-1 decode step at `step.tokens` tokens
# cached, in **seconds**: max(FLOPs ÷ peak, compulsory bytes ÷ bandwidth), lesson 3's rule.

# %%
# BEGIN SOLUTION
cost = model_cost(check.model_config(), phase="decode", batch=1, context_tokens=step.tokens, **check.dtypes)
bound_s = max(float(cost.flops) / check.peak_flops_per_s, float(cost.compulsory_bytes) / check.bandwidth_bytes_per_s)
# END SOLUTION
grade.batch1_bound_s(bound_s, check)

# %% jupyter={"source_hidden": true} tags=["solution"]
from roofline_lessons.core.units import num, percent
from roofline_lessons.viz.display import md

intensity = float(cost.flops / cost.compulsory_bytes)
ridge = check.peak_flops_per_s / check.bandwidth_bytes_per_s
unfused_s = max(float(cost.flops) / check.peak_flops_per_s, float(cost.bytes) / check.bandwidth_bytes_per_s)
md((f"Memory binds at batch 1: {num(intensity, 2)} FLOP per compulsory byte (two FLOPs per weight read) against "
    f"this machine's ridge of {num(ridge)} FLOP/byte, {num(ridge / intensity)}× below it. "
    if intensity < ridge else
    f"Compute binds here: {num(intensity, 2)} FLOP per compulsory byte against a ridge of {num(ridge)} FLOP/byte. ")
   + "A decode step reads one row of the embedding table per token, not the whole table, so \"all the weight bytes "
   f"÷ bandwidth\" overstates the bound. The unfused bytes (`cost.bytes`) give {duration(unfused_s)}, "
   f"{percent(unfused_s / bound_s - 1, 2)} above the bound: an estimate's count, which the checker names.")

# %% [markdown]
# ## Exercise 9.2 — how close to the roof?
#
# The achieved fraction of that step: its bound over its measured time (`step.measured_s`).

# %%
# BEGIN SOLUTION
achieved = bound_s / step.measured_s
# END SOLUTION
grade.batch1_achieved(achieved, check)

# %% jupyter={"source_hidden": true} tags=["solution"]
gap_s = step.measured_s - bound_s
md((f"{num(achieved, 3)}, below 1: the step took {duration(gap_s)} more than its bound, time the roofline does "
    "not count. A **hypothesis** for that gap, which lesson 9 tests where a run can separate the two: part fixed "
    "cost per step, part kernels streaming below the triad roof."
    if achieved < 1 else
    f"{num(achieved, 3)}, at or above 1: this step ran at or under its bound, which a bound forbids on the roofs "
    "and counts it was priced with — so on this run the roofs or the counts, not the step, are in question "
    "(lesson 9's note under its tables)."))

# %% [markdown]
# ## Exercise 9.3 — MBU at the largest batch
#
# MBU of the largest-batch decode step: the bytes it must move (`big.compulsory_bytes`) over its
# measured time over the measured bandwidth. (Compare it with that step's achieved fraction: are they equal? Why?)

# %%
big = max(check.decode_by_batch, key=lambda s: s.batch)
# BEGIN SOLUTION
big_mbu = big.compulsory_bytes / big.measured_s / check.bandwidth_bytes_per_s
# END SOLUTION
grade.largest_batch_mbu(big_mbu, check)

# %% [markdown] tags=["solution"]
# They are equal only when memory binds. When compute binds, the achieved fraction is the step's
# MFU and MBU is lower: the step is limited by FLOPs, so its bytes need not stream at full speed.

# %% [markdown]
# ## Exercise 9.4 — the same step in BF16
#
# If weights, KV cache and activations were BF16 (every `*_dtype` in `check.dtypes` set to
# `"bf16"`, the other settings kept), what would the batch-1 bound be in **tokens per second**, on
# the same measured roofs?

# %%
# BEGIN SOLUTION
as_bf16 = {k: ("bf16" if k.endswith("_dtype") else v) for k, v in check.dtypes.items()}
bf16 = model_cost(check.model_config(), phase="decode", batch=1, context_tokens=step.tokens, **as_bf16)
bf16_tokens_per_s = 1 / max(float(bf16.flops) / check.peak_flops_per_s,
                            float(bf16.compulsory_bytes) / check.bandwidth_bytes_per_s)
# END SOLUTION
grade.bf16_tokens_per_s(bf16_tokens_per_s, check)

# %% tags=["solution"]
for c in (cost, bf16):  # memory binds both steps, so the bounds' ratio is the byte counts' ratio
    assert float(c.flops) / check.peak_flops_per_s < float(c.compulsory_bytes) / check.bandwidth_bytes_per_s
md(f"In BF16 the bound is {num(bf16_tokens_per_s * bound_s, 3)}× the bound in this run's own formats "
   f"({num(1 / bound_s)} tokens/s): the ratio of the two compulsory byte counts, "
   f"{num(float(cost.compulsory_bytes / bf16.compulsory_bytes), 3)}, since memory binds both.")

# %% jupyter={"source_hidden": true} tags=["solution"]
md("That is the bound, not a prediction of the measured rate: "
   + (f"this run's batch-1 step took {num(step.measured_s / bound_s)}× its bound, and the gap (measured − bound) "
      "is — a **hypothesis**, which lesson 9 tests where a run can separate the two — part fixed cost per step, "
      "which would not shrink with the bytes, part kernels streaming below the triad roof."
      if step.measured_s > bound_s else
      "this run's batch-1 step ran at or under its bound, so there is no gap to carry over to BF16."))
