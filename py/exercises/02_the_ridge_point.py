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
# # Lesson 2 — Exercises: the ridge point
#
# Replace each `...` with your answer and run the cell; the checker under it says ✓ or ✗ with a
# hint. Do 2.1 with pencil and paper first.

# %%
from roofline_lessons import get_part
from roofline_lessons.course.checks import lesson02 as check
from roofline_lessons.topics.datasheets import best_measurement, headline_kind
from roofline_lessons.core.memory import max_batch_that_fits, weight_bytes
from roofline_lessons.core.units import binary, si

for pid in ("h100-sxm", "h200", "b200"):
    p = get_part(pid)
    dense = ", ".join(f"{dt} {si(v, 'FLOP/s')}" for dt, v in p.dense_flops_per_s.items())
    print(f"{pid:9} bandwidth {si(p.memory_bandwidth_bytes_per_s, 'B/s')}, capacity {binary(p.memory_capacity_bytes)}; "
          f"dense: {dense}")

# %% [markdown]
# ## Exercise 2.1 — by hand: the H200's ridge
#
# The H200 has the H100 SXM's compute and more bandwidth (printed above). What is its dense BF16
# ridge point, in FLOP/byte? Work it out before you type.

# %%
h200_ridge = ...  # your answer here
check.h200_ridge(h200_ridge)

# %% [markdown]
# ## Exercise 2.2 — spot the sparse number
#
# An H100 SXM spec sheet prints "BF16 Tensor Core: 1,979 TFLOPS". Is that the `"dense"` rate or
# the `"sparse"` (2:4 structured sparsity) one? You may use `headline_kind` to check yourself —
# but decide first.

# %%
h100_headline = ...  # your answer here
check.h100_headline(h100_headline)

# %% [markdown]
# ## Exercise 2.3 — the loose flashcard figure
#
# A popular flashcard says the B200 has "around 2.2 PFLOPS FP8". Which B200 rate is ~2.25 PFLOPS
# really? Answer one of `"bf16 dense"`, `"fp8 dense"`, `"fp8 with sparsity"`, `"fp4 dense"`.

# %%
b200_figure = ...  # your answer here
check.b200_loose_figure(b200_figure)

# %% [markdown]
# ## Exercise 2.4 — the B200's real FP8 ridge
#
# With the correct dense FP8 rate, what is the B200's FP8 ridge point (FLOP/byte)?

# %%
b200 = ...  # your answer here
b200_fp8_ridge = ...  # your answer here
check.b200_fp8_ridge(b200_fp8_ridge)

# %% [markdown]
# ## Exercise 2.5 — the measured ridge
#
# Replace the H100 SXM's datasheet BF16 peak with the best measured matmul rate (below) and keep the
# datasheet bandwidth. What ridge point do you get?

# %%
mamf = best_measurement("h100-sxm", "matmul_flops_per_s", "bf16")
print(f"best measured BF16 matmul: {si(mamf.value, 'FLOP/s')} at M×N×K = {mamf.shape}, {mamf.software}\n"
      f"  conditions: {mamf.conditions}\n  source: {mamf.source}")

# %%
measured_ridge = ...  # your answer here
check.h100_measured_ridge(measured_ridge)

# %% [markdown]
# ## Exercise 2.6 — capacity: a 70B model on one H200
#
# Llama-3.1-70B with FP8 weights and a BF16 KV cache (320 KiB per token), 8,192 tokens per
# sequence. "FP8 weights" means the recipe published FP8 checkpoints use (NVIDIA ModelOpt,
# llm-compressor): the linear layers of the transformer blocks in FP8, while the embedding, the
# lm_head and the norms stay BF16 — `weight_bytes(model, "fp8")` counts it so. How many
# sequences fit on one H200 at most, using all of its memory? (Weights + KV only; a whole
# number. Remember which "GB" the capacity is in.)

# %%
free_bytes = ...  # your answer here
batch_that_fits = ...  # your answer here
check.llama70b_fp8_batch_on_h200(batch_that_fits)
