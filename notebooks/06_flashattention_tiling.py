# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 6 — FlashAttention tiling: moving a kernel along the roofline
#
# **By the end of this lesson you can**
#
# 1. count the HBM traffic of standard attention, Θ(N·d + N²), and of FlashAttention, Θ(N²·d²/M),
#    and say where each term comes from;
# 2. run a tiled attention with an online softmax that is exact, and watch the bytes it moves
#    between HBM and a bounded on-chip SRAM;
# 3. place attention on the roofline with and without tiling, for prompts from 512 to 128 K tokens
#    and for the SRAM of an A100, an H100 and a B200;
# 4. explain what tiling does **not** fix: decode attention.

# %%
# %matplotlib inline
import numpy as np

from roofline_lessons import get_model, get_part
from roofline_lessons.charts import Roof, point_on_roof, roofline_chart
from roofline_lessons.datasheets import best_measurement
from roofline_lessons.display import md, show_table
from roofline_lessons.flash import (attention_flops, compulsory_hbm_bytes, decode_attention_intensity,
                                    flash_block_sizes, flash_hbm_bytes, naive_attention, standard_hbm_bytes,
                                    tiled_attention)
from roofline_lessons.units import binary, si

# %% [markdown]
# ## Where standard attention spends its bytes
#
# Attention for one head is $O = \mathrm{softmax}(QK^\top/\sqrt d)\,V$ with $Q, K, V$ of $N \times d$.
# A straightforward implementation writes the $N \times N$ score matrix $S$ to HBM, reads it back
# for the softmax, writes the probabilities $P$, and reads them again to multiply by $V$. Its
# traffic is $4Nd + 4N^2$ elements: once $N$ passes $d$, the $N^2$ term is everything.

# %%
d = 128
for n in (512, 8192, 131072):
    std = float(standard_hbm_bytes(n, d))
    print(f"N = {n:>7,}: {si(std, 'B'):>9} per head in BF16, of which the N×N matrices are "
          f"{4 * n * n / (4 * n * d + 4 * n * n):.0%}")

# %% [markdown]
# ## Tiling with an online softmax
#
# FlashAttention never writes $S$ or $P$. It cuts $K, V$ into blocks of $B_c$ rows and $Q$ into
# blocks of $B_r$ rows small enough to sit in on-chip SRAM of size $M$, computes one tile of
# scores at a time, and keeps for every query row a running maximum $m$ and a running sum $\ell$
# so the softmax can be corrected as new tiles arrive (the *online softmax*). The paper's block
# sizes are $B_c = \lceil M/4d \rceil$ and $B_r = \min(\lceil M/4d\rceil, d)$.
#
# The package implements this in numpy (Algorithm 1 of the paper). The simulated SRAM refuses to
# hold more than $M$ bytes, so the block sizes are the paper's, trimmed where the score tile
# would not fit. First: is it exact?

# %%
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((1000, 64)) for _ in range(3))
for causal in (False, True):
    out, traffic = tiled_attention(q, k, v, sram_bytes=64 * 1024, causal=causal)
    error = np.abs(out - naive_attention(q, k, v, causal=causal)).max()
    print(f"causal={causal!s:5}: max |tiled − naive| = {error:.1e}; tiles {traffic.block_rows} × {traffic.block_cols}; "
          f"SRAM peak {binary(traffic.sram_peak_bytes)} of {binary(64 * 1024)}; HBM {si(traffic.hbm_bytes, 'B')} "
          f"(float64) in {len(traffic.visited):,} tiles")
assert error < 1e-10

# %% [markdown]
# Exact to rounding, and the working set stayed within the SRAM. The traffic count follows the
# theorem's shape: bytes grow as $N^2$ and $d^2$ and shrink as $1/M$.

# %%
base = flash_hbm_bytes(8192, 64, 64 * 1024, 2)
show_table(["change", "HBM bytes", "ratio"], [
    ["N = 8,192, d = 64, M = 64 KiB", si(base, "B"), "1"],
    ["N doubled", si(flash_hbm_bytes(16384, 64, 64 * 1024, 2), "B"), f"{flash_hbm_bytes(16384, 64, 64 * 1024, 2) / base:.2f}"],
    ["d doubled", si(flash_hbm_bytes(8192, 128, 64 * 1024, 2), "B"), f"{flash_hbm_bytes(8192, 128, 64 * 1024, 2) / base:.2f}"],
    ["M doubled", si(flash_hbm_bytes(8192, 64, 128 * 1024, 2), "B"), f"{flash_hbm_bytes(8192, 64, 128 * 1024, 2) / base:.2f}"],
])

# %% [markdown]
# ## On the roofline: the dot moves right
#
# Per head, attention does about $4Nd$ FLOPs per query (half that many query–key pairs when
# causal). Divide by each traffic count and place it on the H100's BF16 roof. Three versions:
# standard; tiled in one SM's SRAM (the count above); and the ideal floor where $Q, K, V$ are read
# once and $O$ written once.

# %%
h100 = get_part("h100-sxm")
roof = Roof("H100 SXM, BF16", h100.peak_flops_per_s("bf16"), h100.memory_bandwidth_bytes_per_s)
sram = h100.shared_memory_per_sm_bytes
rows, points = [], []
for n in (512, 2048, 8192, 32768, 131072):
    f = float(attention_flops(n, d, causal=True))
    i_std = f / float(standard_hbm_bytes(n, d))
    i_tiled = f / flash_hbm_bytes(n, d, sram, 2, causal=True)
    i_ideal = f / float(compulsory_hbm_bytes(n, d))
    rows.append([f"{n:,}", f"{i_std:,.0f}", f"{i_tiled:,.0f}", f"{i_ideal:,.0f}"])
    if n in (512, 131072):
        points += [point_on_roof(f"standard, N={n:,}", i_std, roof), point_on_roof(f"tiled, N={n:,}", i_tiled, roof)]
show_table(["N (causal, d = 128)", "standard: FLOP/byte", f"tiled in {binary(sram)}: FLOP/byte", "ideal: FLOP/byte"], rows)
roofline_chart([roof], points, title="Causal attention, one head, d = 128, on an H100 SXM", intensity_range=(1, 1e5));

# %% [markdown]
# Tiling removes the $N^2$ bytes, and the dot moves right by a few times. The SRAM size sets how
# far: with $B_c \approx M/4d$, each pass over the queries serves a key block of that many rows.

# %%
rows = []
for pid in ("a100-80gb", "h100-sxm", "b200"):
    p = get_part(pid)
    m = p.shared_memory_per_sm_bytes
    sizes = flash_block_sizes(m, d, 2)
    i_tiled = float(attention_flops(32768, d, True)) / flash_hbm_bytes(32768, d, m, 2, True)
    rows.append([pid, binary(m), f"{sizes.rows} × {sizes.cols}", f"{i_tiled:,.0f}", f"{p.ridge_point_flop_per_byte('bf16'):,.0f}"])
show_table(["part", "SRAM per SM", "tile (B_r × B_c)", "tiled intensity at N = 32,768", "BF16 ridge"], rows)

# %% [markdown]
# Two things to notice. The H100 and the B200 have the same shared memory per SM, so the same
# tiled intensity — but the B200's ridge is higher, so the same kernel sits relatively further
# left on it. And on every part this count leaves tiled attention **below the ridge**. Yet tuned
# FlashAttention kernels run at a large fraction of peak. Why?
#
# ## The missing roof: L2
#
# The count above charges every re-read of $Q_i$ and $O_i$ to HBM. On a real GPU, many SMs work on
# neighbouring tiles at once and most re-reads are served by the L2 cache — a second, faster roof.
# The catalog has a measured H100 L2 bandwidth; put the tiled traffic on that roof instead:

# %%
l2 = best_measurement(h100, "l2_bandwidth_bytes_per_s")
fa3 = best_measurement(h100, "attention_flops_per_s", "fp16")
i_tiled = float(attention_flops(32768, d, True)) / flash_hbm_bytes(32768, d, sram, 2, True)
l2_attainable = min(h100.peak_flops_per_s("bf16"), l2.value * i_tiled)
md(f"Tiled traffic at {si(l2.value, 'B/s')} of L2 bandwidth ({l2.source}): attainable ≈ "
   f"**{si(l2_attainable, 'FLOP/s')}**. Measured FlashAttention-3 forward on an H100: up to "
   f"**{si(fa3.value, 'FLOP/s')}** ({fa3.source}). HBM then only has to supply something close to the ideal "
   f"traffic, at I = {float(attention_flops(32768, d, True) / compulsory_hbm_bytes(32768, d)):,.0f} FLOP/byte — far "
   "right of the ridge. This is what a hierarchical roofline shows: one roof per level of memory.")

# %% [markdown]
# ## What tiling does not fix: decode
#
# In decode, one new query per sequence attends over the whole cache. Every cached key and value
# must come from HBM at least once, and each is used by the query heads that share it (grouped-
# query attention). Tiling cannot reuse what is used once:

# %%
rows = []
for mid in ("llama-2-7b", "llama-3.1-8b", "qwen3.8-27b"):
    m = get_model(mid)
    group = m.num_attention_heads // m.num_key_value_heads
    rows.append([m.name, group, f"{float(decode_attention_intensity(group, 32768, m.head_dim)):.2f}"])
show_table(["model", "query heads per KV head", "decode attention FLOP/byte (32 K tokens)"], rows)

# %% [markdown]
# About the group size, whatever the tiling: decode attention stays on the bandwidth slope. Its
# levers are bytes — fewer KV heads, a smaller KV format, shorter effective context — not tiles.
#
# ## Explore
#
# Choose N, the head dimension, the SRAM size and causality. Left: the three dots. Right: the tiles
# the kernel visits, coloured in visiting order (the outer loop walks key blocks). Try: a 48 KiB SRAM
# with d = 256 at N = 512 (when does tiling lose?); causal vs full at N = 131,072.

# %%
from roofline_lessons.dashboards import lesson06_dashboard

dashboard = lesson06_dashboard()

# %% [markdown]
# ## Summary
#
# - Standard attention moves Θ(N·d + N²) bytes; the N² is the score matrix written and read.
# - FlashAttention tiles through SRAM with an online softmax: exact, Θ(N²·d²/M) bytes. The dot
#   moves right; a bigger SRAM moves it further.
# - Against HBM alone the tiled count can still sit left of the ridge; L2 catches the re-reads,
#   which is how real kernels reach a large fraction of peak.
# - Decode attention's intensity is about the GQA group size: tiling does not help; fewer bytes do.
#
# **A question to leave with.** Why does FlashAttention help prefill much more than decode, in one
# sentence with a number in it?
#
# **Interview questions this lesson prepares you for**
#
# - "How does FlashAttention's SRAM tiling change a kernel's position on the roofline?"
# - "What are the HBM accesses of standard attention vs FlashAttention?"
# - "Why is FlashAttention exact? What is the online softmax?"
# - "Does FlashAttention speed up decode? Why not much?"
#
# The exercises for this lesson are in `exercises/06_flashattention_tiling.ipynb`.
