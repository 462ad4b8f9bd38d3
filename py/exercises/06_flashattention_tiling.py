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
# # Lesson 6 — Exercises: FlashAttention tiling
#
# Replace each `...` with your answer and run the cell. 6.1 and 6.2 are pencil-and-paper.

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
N = ...  # your answer here
d = ...  # your answer here
standard_gb = ...  # your answer here
check.standard_bytes_gb(standard_gb)

# %% [markdown]
# ## Exercise 6.2 — the paper's block size
#
# With the H100's shared memory as M and d = 128 in BF16, what is the paper's key-block size
# $B_c = \lceil M / 4d \rceil$ (M counted in elements)?

# %%
m_elements = ...  # your answer here
paper_bc = ...  # your answer here
check.block_cols(paper_bc)

# %% [markdown]
# ## Exercise 6.3 — how the tiled bytes scale
#
# Tiled attention on an H100 (d = 128, BF16): by what factor do its HBM bytes grow when N doubles
# from 8,192 to 16,384? Compute it with `flash_hbm_bytes`, but guess first.

# %%
m = ...  # your answer here
growth = ...  # your answer here
check.bytes_ratio_when_n_doubles(growth)


# %% [markdown]
# ## Exercise 6.4 — the online softmax
#
# Two tiles of scores have been reduced to (running max, running sum of exp(score − max)):
# (m1, l1) and (m2, l2). Write `merge(m1, l1, m2, l2)` returning the pair (m, l) for both tiles
# together, as FlashAttention does when a new tile arrives.

# %%
def merge(m1, l1, m2, l2):
    """Combine two softmax partials (max, sum of exp(x − max))."""
    return ...  # your code here

check.online_softmax(merge)

# %% [markdown]
# ## Exercise 6.5 — and decode?
#
# A decode step of a model with 8 query heads per KV head attends over 32,768 cached tokens. Does
# FlashAttention-style tiling lift this attention off the bandwidth slope of an H100? `"yes"` or `"no"`.

# %%
decode_answer = ...  # your answer here
check.decode_fix(decode_answer)
