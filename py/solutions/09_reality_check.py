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

# %% [markdown] tags=["solution"]
# Memory binds at batch 1: about two FLOPs per weight read is far below this machine's ridge. A
# decode step reads one row of the embedding table per token, not the whole table, so "all the
# weight bytes ÷ bandwidth" overstates the bound.

# %% [markdown]
# ## Exercise 9.2 — how close to the roof?
#
# The achieved fraction of that step: its bound over its measured time (`step.measured_s`).

# %%
# BEGIN SOLUTION
achieved = bound_s / step.measured_s
# END SOLUTION
grade.batch1_achieved(achieved, check)

# %% [markdown] tags=["solution"]
# Below 1: the gap (measured − bound) is time the roofline does not count — part fixed cost per
# step, part kernels streaming below the triad roof; lesson 9 separates the two.

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

# %% [markdown] tags=["solution"]
# Half the bytes, about twice the bound in tokens/s. That is the bound, not a prediction of the
# measured rate: the gap (measured − bound) is part fixed cost per step, which does not shrink with
# the bytes, part kernels streaming below the triad roof — lesson 9 separates the two.
