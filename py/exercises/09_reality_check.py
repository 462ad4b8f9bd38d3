# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
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
cost = ...  # your answer here
bound_s = ...  # your answer here
grade.batch1_bound_s(bound_s, check)

# %% [markdown]
# ## Exercise 9.2 — how close to the roof?
#
# The achieved fraction of that step: its bound over its measured time (`step.measured_s`).

# %%
achieved = ...  # your answer here
grade.batch1_achieved(achieved, check)

# %% [markdown]
# ## Exercise 9.3 — MBU at the largest batch
#
# MBU of the largest-batch decode step: the bytes it must move (`big.compulsory_bytes`) over its
# measured time over the measured bandwidth. (Compare it with that step's achieved fraction: are they equal? Why?)

# %%
big = max(check.decode_by_batch, key=lambda s: s.batch)
big_mbu = ...  # your answer here
grade.largest_batch_mbu(big_mbu, check)

# %% [markdown]
# ## Exercise 9.4 — the same step in BF16
#
# If weights, KV cache and activations were BF16 (every `*_dtype` in `check.dtypes` set to
# `"bf16"`, the other settings kept), what would the batch-1 bound be in **tokens per second**, on
# the same measured roofs?

# %%
as_bf16 = ...  # your answer here
bf16 = ...  # your answer here
bf16_tokens_per_s = ...  # your answer here
grade.bf16_tokens_per_s(bf16_tokens_per_s, check)
