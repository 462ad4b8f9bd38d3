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
# # Lesson 6 — Exercises: FlashAttention tiling
#
# Replace each `...` with your answer and run the cell. 6.1 and 6.2 are pencil-and-paper.

# %% [markdown] tags=["solution"]
# *This is the solutions notebook. `exercises/06_flashattention_tiling.ipynb` is generated from it.*

# %%
import math

from roofline_lessons import get_part
from roofline_lessons.course.checks import lesson06 as check
from roofline_lessons.topics.flash import flash_hbm_bytes
from roofline_lessons.core.units import binary, num

h100 = get_part("h100-sxm")
print(f"H100 SXM shared memory per SM: {binary(h100.shared_memory_per_sm_bytes)} "
      f"({h100.shared_memory_per_sm_bytes:,} bytes)")

# %% [markdown]
# ## Exercise 6.1 — standard attention's bytes, by hand
#
# One head, N = 8,192 tokens, head dimension 128, BF16 (2 bytes). Standard attention reads Q and K,
# writes the N×N scores, reads them, writes the probabilities, reads them and V, and writes O. How
# many **GB** (10⁹ bytes) does it move?

# %%
# BEGIN SOLUTION
N, d = 8192, 128
standard_gb = (4 * N * d + 4 * N * N) * 2 / 1e9
# END SOLUTION
check.standard_bytes_gb(standard_gb)

# %% jupyter={"source_hidden": true} tags=["solution"]
from roofline_lessons.viz.display import md
from roofline_lessons.topics.flash import attention_flops, decode_attention_intensity, standard_hbm_bytes

md(f"4·N·d = {4 * 8192 * 128 / 1e6:.1f} M elements, 4·N² = {4 * 8192**2 / 1e6:.0f} M elements: the score and "
   f"probability matrices are {8192 / (8192 + 128):.1%} of the {num(float(standard_hbm_bytes(8192, 128)) / 1e9)} GB.")

# %% [markdown]
# ## Exercise 6.2 — the paper's block size
#
# With the H100's shared memory as M and d = 128 in BF16, what is the paper's key-block size
# $B_c = \lceil M / 4d \rceil$ (M counted in elements)?

# %%
# BEGIN SOLUTION
m_elements = h100.shared_memory_per_sm_bytes // 2
paper_bc = math.ceil(m_elements / (4 * 128))
# END SOLUTION
check.block_cols(paper_bc)

# %% jupyter={"source_hidden": true} tags=["solution"]
md(f"{h100.shared_memory_per_sm_bytes:,} bytes = {h100.shared_memory_per_sm_bytes // 2:,} BF16 elements; "
   f"÷ (4 · 128) = {h100.shared_memory_per_sm_bytes // 2 / 512:.1f}, rounded up: {paper_bc} rows.")

# %% [markdown]
# ## Exercise 6.3 — how the tiled bytes scale
#
# Tiled attention on an H100 (d = 128, BF16): by what factor do its HBM bytes grow when N doubles
# from 8,192 to 16,384? Compute it with `flash_hbm_bytes`, but guess first.

# %%
# BEGIN SOLUTION
m = h100.shared_memory_per_sm_bytes
growth = flash_hbm_bytes(16384, 128, m, 2) / flash_hbm_bytes(8192, 128, m, 2)
# END SOLUTION
check.bytes_ratio_when_n_doubles(growth)

# %% jupyter={"source_hidden": true} tags=["solution"]
from roofline_lessons.topics.flash import flash_block_sizes

flops_growth = float(attention_flops(16384, 128) / attention_flops(8192, 128))
b_c = flash_block_sizes(m, 128, 2).cols
intensity = {n: float(attention_flops(n, 128)) / flash_hbm_bytes(n, 128, m, 2) for n in (512, 8192, 16384, 131072)}
md(f"{growth:.2f}×: the traffic is Θ(N²·d²/M). The FLOPs grow {flops_growth:.0f}× too, so between these two "
   f"lengths the tiled intensity moves only from {intensity[8192]:.0f} to {intensity[16384]:.0f} FLOP/byte. Tiling "
   f"moves the dot by an amount the SRAM sets, and once N ≫ B_c (= {b_c} key rows here) not further with N: "
   + ", ".join(f"{v:.0f} at N = {n:,}" for n, v in intensity.items())
   + " (FLOP/byte). At short N, N/B_c rounded up and the once-only bytes (K and V read, O initialised) are a "
   "large share of the traffic, so the intensity still climbs.")

# %% [markdown]
# ## Exercise 6.4 — the online softmax
#
# Two tiles of scores have been reduced to (running max, running sum of exp(score − max)):
# (m1, l1) and (m2, l2). Write `merge(m1, l1, m2, l2)` returning the pair (m, l) for both tiles
# together, as FlashAttention does when a new tile arrives.

# %%
# BEGIN SOLUTION
def merge(m1, l1, m2, l2):
    """Combine two softmax partials (max, sum of exp(x − max))."""
    m = max(m1, m2)
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)
# END SOLUTION
check.online_softmax(merge)

# %% [markdown] tags=["solution"]
# Each partial sum was taken relative to its own maximum; rescaling by exp(old max − new max) puts
# both on the new maximum. The output rows are rescaled the same way, which is why the result is
# exact.

# %% [markdown]
# ## Exercise 6.5 — and decode?
#
# A decode step of a model with 8 query heads per KV head attends over 32,768 cached tokens. Does
# FlashAttention-style tiling lift this attention off the bandwidth slope of an H100? `"yes"` or `"no"`.

# %%
# BEGIN SOLUTION
decode_answer = "no"
# END SOLUTION
check.decode_fix(decode_answer)

# %% jupyter={"source_hidden": true} tags=["solution"]
i_decode = float(decode_attention_intensity(8, 32768))
md(f"Each cached key and value is read once and used by 8 query heads: {i_decode:.1f} FLOP/byte, "
   f"{h100.ridge_point_flop_per_byte('bf16') / i_decode:.0f}× below the H100's BF16 ridge at "
   f"{h100.ridge_point_flop_per_byte('bf16'):.0f}. Tiling cannot reuse data that is used once per step.")
