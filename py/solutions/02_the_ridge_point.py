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
# # Lesson 2 — Exercises: the ridge point
#
# Replace each `...` with your answer and run the cell; the checker under it says ✓ or ✗ with a
# hint. Do 2.1 with pencil and paper first.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/02_the_ridge_point.ipynb` is generated from it.*

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
# BEGIN SOLUTION
h200_ridge = 989.4e12 / 4.8e12
# END SOLUTION
check.h200_ridge(h200_ridge)

# %% [markdown] tags=["solution"]
# 989.4 ÷ 4.8 ≈ 206 FLOP/byte. More bandwidth with the same compute moves the ridge **left**:
# fewer kernels are memory-bound on an H200, and memory-bound ones run faster.

# %% [markdown]
# ## Exercise 2.2 — spot the sparse number
#
# An H100 SXM spec sheet prints "BF16 Tensor Core: 1,979 TFLOPS". Is that the `"dense"` rate or
# the `"sparse"` (2:4 structured sparsity) one? You may use `headline_kind` to check yourself —
# but decide first.

# %%
# BEGIN SOLUTION
h100_headline = "sparse"
# END SOLUTION
check.h100_headline(h100_headline)

# %% [markdown] tags=["solution"]
# `headline_kind("h100-sxm", 1979e12)` lists "bf16 with sparsity" among four things the same
# number is: FP16 with sparsity, and the dense FP8 and INT8 rates too. The dense BF16 rate is half:
# 989.4 TFLOPS.

# %% [markdown]
# ## Exercise 2.3 — the loose flashcard figure
#
# A popular flashcard says the B200 has "around 2.2 PFLOPS FP8". Which B200 rate is ~2.25 PFLOPS
# really? Answer one of `"bf16 dense"`, `"fp8 dense"`, `"fp8 with sparsity"`, `"fp4 dense"`.

# %%
# BEGIN SOLUTION
b200_figure = "bf16 dense"
# END SOLUTION
check.b200_loose_figure(b200_figure)

# %% [markdown] tags=["solution"]
# 2.25 PFLOPS is the B200's dense BF16 (and FP16) rate. Dense FP8 is 4.5 PFLOPS. A headline
# that reads "2.2 PFLOPS" may also be NVIDIA's TF32 row: the HGX B200 table prints "TF32 Tensor
# Core 2.2 PFLOPS", a rate with sparsity (dense is half). The catalog holds no TF32 rates, so
# `headline_kind` cannot name that one; check the table the figure came from.

# %% [markdown]
# ## Exercise 2.4 — the B200's real FP8 ridge
#
# With the correct dense FP8 rate, what is the B200's FP8 ridge point (FLOP/byte)?

# %%
# BEGIN SOLUTION
b200 = get_part("b200")
b200_fp8_ridge = b200.peak_flops_per_s("fp8") / b200.memory_bandwidth_bytes_per_s
# END SOLUTION
check.b200_fp8_ridge(b200_fp8_ridge)

# %% [markdown] tags=["solution"]
# 4,500 TFLOP/s ÷ 8 TB/s ≈ 562 FLOP/byte. The flashcard's figure would have put it at half that.

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
# BEGIN SOLUTION
measured_ridge = mamf.value / get_part("h100-sxm").memory_bandwidth_bytes_per_s
# END SOLUTION
check.h100_measured_ridge(measured_ridge)

# %% [markdown] tags=["solution"]
# 794.5 ÷ 3.35 ≈ 237 FLOP/byte: a lower compute roof over the same bandwidth puts the ridge further
# left. It is the ridge of that measurement (its best shape, under the conditions printed above),
# not of every matmul. That holds only because the bandwidth stayed the datasheet's: measure
# (derate) the bandwidth too and the ridge is the ratio of two measured figures, which can land on
# either side of the datasheet ridge.

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
# BEGIN SOLUTION
free_bytes = get_part("h200").memory_capacity_bytes - weight_bytes("llama-3.1-70b", "fp8")
batch_that_fits = int(free_bytes // (8192 * 320 * 1024))
# END SOLUTION
check.llama70b_fp8_batch_on_h200(batch_that_fits)

# %% [markdown] tags=["solution"]
# The H200's "141 GB" is 141 GiB ≈ 151.4 × 10⁹ bytes, the nominal capacity the course computes
# with (the 143,771 MiB = 140.40 GiB `nvidia-smi` reports gives 29 too). The FP8 weights take
# about 72.7 × 10⁹ bytes (67.7 GiB: 68.5 × 10⁹ linear weights at one byte, plus the embedding and
# lm_head, 2.1 × 10⁹ parameters at two bytes), leaving about 73.3 GiB; each sequence's
# 8,192-token KV cache is 2.5 GiB, so 29 sequences fit. Quantising the embedding and lm_head too
# (`quantized_weights="all"`) would free 2.1 × 10⁹ bytes and give 30 — but that is not how the
# published checkpoints are made. Reading the capacity as 141 × 10⁹ bytes gives 25 — the SI
# trap. At vLLM's long-standing default `gpu_memory_utilization` of 0.9 the same arithmetic gives 23:
# `max_batch_that_fits("llama-3.1-70b", "h200", 8192, weights_dtype="fp8", memory_utilization=0.9)`.
# Keeping the weights in BF16 is no way out either: they fit (131.4 GiB of the 141 GiB) but leave
# room for only 3 sequences.
