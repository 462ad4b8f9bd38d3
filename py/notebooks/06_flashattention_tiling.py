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
# # Lesson 6 — FlashAttention tiling: moving a kernel along the roofline
#
# **By the end of this lesson you can**
#
# 1. count the HBM traffic of standard attention, Θ(N·d + N²), and of FlashAttention, Θ(N²·d²/M),
#    and say where each term comes from;
# 2. run two exact tiled attentions with an online softmax — the original FlashAttention loop order
#    and the FlashAttention-2 order — and count the bytes each moves between HBM and a bounded
#    on-chip SRAM;
# 3. tell the *compulsory* bytes the cost model charges apart from the traffic a tiled kernel
#    moves, and say what closes the gap;
# 4. place attention on the roofline with and without tiling, for prompts from 512 to 128 K tokens,
#    for the SRAM of an A100, an H100 and a B200, and for Qwen3.8-27B's head dimension of 256;
# 5. quote a measured FlashAttention-3 rate with its conditions, and explain what tiling does
#    **not** fix: decode attention.

# %%
# %matplotlib inline
import numpy as np

from roofline_lessons import get_model, get_part
from roofline_lessons.viz.charts import Roof, point_on_roof, roofline_chart
from roofline_lessons.core.costs import model_cost
from roofline_lessons.topics.datasheets import best_measurement
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.topics.flash import (FA3_TILE_SOURCE, attention_flops, attention_layer_bytes,
                                    attention_matmul_flops, cluster_tile_l2_traffic, comparative,
                                    compulsory_hbm_bytes, decode_attention_intensity, fa2_block_sizes,
                                    fa3_forward_tiles, flash2_hbm_bytes, flash_block_sizes, flash_hbm_bytes,
                                    l2_bandwidth_figures, naive_attention, standard_hbm_bytes, tiled_attention,
                                    tiled_attention_fa2)
from roofline_lessons.core.units import binary, si

# %% [markdown]
# ## Where standard attention spends its bytes
#
# Attention for one head is $O = \mathrm{softmax}(QK^\top/\sqrt d)\,V$ with $Q, K, V$ of $N \times d$.
# A straightforward implementation writes the $N \times N$ score matrix $S$ to HBM, reads it back
# for the softmax, writes the probabilities $P$, and reads them again to multiply by $V$. Its
# traffic is $4Nd + 4N^2$ elements; at $N = d$ the two terms are equal, and for $N \gg d$ the
# $N^2$ term is nearly all of it:

# %%
d = 128
for n in (512, 8192, 131072):
    std = float(standard_hbm_bytes(n, d))
    print(f"N = {n:>7,}: {si(std, 'B'):>9} per head in BF16, of which the N×N matrices are "
          f"{4 * n * n / (4 * n * d + 4 * n * n):.1%}")

# %% [markdown]
# Its intensity follows: about $4d$ FLOPs per query–key pair (two matmuls, plus a few for the
# softmax) against 4 score elements moved per pair. With 2-byte elements that is about $d/2$
# FLOP/byte with every pair computed, and about $d/4$ for a causal kernel that computes half the
# pairs but still writes and reads the whole $N \times N$ matrix:

# %%
n = 131072
for causal in (False, True):
    i_std = float(attention_flops(n, d, causal) / standard_hbm_bytes(n, d))
    print(f"{'causal' if causal else 'full'}: {i_std:.1f} FLOP/byte at N = {n:,}, d = {d} "
          f"(d/2 = {d / 2:g}, d/4 = {d / 4:g})")

# %% [markdown]
# ## Tiling with an online softmax, in two loop orders
#
# FlashAttention never writes $S$ or $P$. It cuts $K, V$ into blocks of $B_c$ rows and $Q$ into
# blocks of $B_r$ rows small enough to sit in on-chip SRAM of size $M$, computes one tile of
# scores at a time, and keeps for every query row a running maximum $m$ and a running sum $\ell$
# so the softmax can be corrected as new tiles arrive (the *online softmax*). The original
# FlashAttention paper (FlashAttention-1) sets $B_c = \lceil M/4d \rceil$ and
# $B_r = \min(\lceil M/4d\rceil, d)$, with $M$ counted in elements. This lesson borrows that rule for
# both loop orders below; FlashAttention-2 itself does not cap $B_r$ at $d$ (more on that below).
#
# The package implements two loop orders, both in numpy, both exact:
#
# - **Algorithm 1 of FlashAttention** (Dao et al. 2022): the *outer* loop walks key/value blocks
#   $K_j, V_j$, each loaded once; the *inner* loop walks query blocks and, for every tile, loads
#   $Q_i$, $O_i$, $\ell_i$, $m_i$ from HBM, updates them and writes $O_i$, $\ell_i$, $m_i$ back. The
#   output is re-read and re-written once per key block.
# - **The FlashAttention-2 order** (Dao 2023; FlashAttention-3 keeps it): the *outer* loop walks
#   query blocks; $Q_i$ is loaded once, $O_i$, $\ell_i$, $m_i$ stay on chip, and the inner loop
#   streams $K_j, V_j$ — so $K$ and $V$ are read once per query block. $O_i$ is normalised once at
#   the end and written once, with the log-sum-exp $L_i = m_i + \log \ell_i$ (one number per row).
#
# Both hold the same working set ($Q_i$, $O_i$, $K_j$, $V_j$, a score tile, row statistics), so
# both use FlashAttention-1's block sizes, trimmed where the score tile would not fit; the simulated
# SRAM refuses to hold more than $M$ bytes. First: are they exact?

# %%
rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((1000, 64)) for _ in range(3))
sram_small = 64 * 1024
errors = []
for name, kernel in (("Algorithm 1", tiled_attention), ("FlashAttention-2 order", tiled_attention_fa2)):
    for causal in (False, True):
        out, traffic = kernel(q, k, v, sram_bytes=sram_small, causal=causal)
        errors.append(float(np.abs(out - naive_attention(q, k, v, causal=causal)).max()))
        print(f"{name:>22}, causal={causal!s:5}: max |tiled − naive| = {errors[-1]:.1e}; "
              f"tiles {traffic.block_rows} × {traffic.block_cols}; SRAM peak {binary(traffic.sram_peak_bytes)} "
              f"of {binary(sram_small)}; HBM {si(traffic.hbm_bytes, 'B')} (float64) in {len(traffic.visited):,} tiles")

# %% jupyter={"source_hidden": true}
assert max(errors) < 1e-10

# %% [markdown]
# Exact to rounding, and the working set stayed within the SRAM. Each simulation's byte count
# has a closed form, which works for any $N$ without running the kernel. Checked against the
# simulations (float64, so 8 bytes per element):

# %%
rows = []
for n_small, causal in ((1000, False), (1000, True), (333, True)):
    q, k, v = (rng.standard_normal((n_small, 64)) for _ in range(3))
    sim1 = tiled_attention(q, k, v, sram_small, causal)[1].hbm_bytes
    sim2 = tiled_attention_fa2(q, k, v, sram_small, causal)[1].hbm_bytes
    form1 = flash_hbm_bytes(n_small, 64, sram_small, 8, causal)
    form2 = flash2_hbm_bytes(n_small, 64, sram_small, 8, causal)
    assert sim1 == form1 and sim2 == form2
    rows.append([f"{n_small:,}", causal, f"{sim1:,}", f"{form1:,.0f}", f"{sim2:,}", f"{form2:,.0f}"])
show_table(["N (d = 64)", "causal", "Algorithm 1: simulated", "closed form", "FA-2 order: simulated", "closed form"],
           rows)

# %% [markdown]
# Where the bytes go, for $N$ much larger than the tiles:
#
# - Algorithm 1 reads $Q_i$ and $O_i$ and writes $O_i$ for every key block (plus $\ell_i$, $m_i$):
#   about $3Nd \cdot \lceil N/B_c \rceil$ elements, or $3d/B_c$ elements per query–key pair.
# - The FlashAttention-2 order reads $K$ and $V$ for every query block: about
#   $2Nd \cdot \lceil N/B_r \rceil$ elements, or $2d/B_r$ per pair; $Q$, $O$ and $L$ are moved once.
# - Standard attention moves 4 elements per pair (the $N \times N$ matrices).
#
# So tiling removes the $N \times N$ matrices from HBM, but not the $N^2$ growth: the re-reads are
# still Θ(N²·d²/M) bytes (Theorem 2 of the FlashAttention-1 paper). With $B_c \approx M/4d$, the
# bytes grow as $N^2$ and $d^2$ and shrink as $1/M$ — shown here for Algorithm 1, the order the
# theorem is about:

# %%
base = flash_hbm_bytes(8192, 64, 64 * 1024, 2)
show_table(["Algorithm 1, BF16", "HBM bytes", "ratio"], [
    ["N = 8,192, d = 64, M = 64 KiB", si(base, "B"), "1"],
    ["N doubled", si(flash_hbm_bytes(16384, 64, 64 * 1024, 2), "B"), f"{flash_hbm_bytes(16384, 64, 64 * 1024, 2) / base:.2f}"],
    ["d doubled", si(flash_hbm_bytes(8192, 128, 64 * 1024, 2), "B"), f"{flash_hbm_bytes(8192, 128, 64 * 1024, 2) / base:.2f}"],
    ["M doubled", si(flash_hbm_bytes(8192, 64, 128 * 1024, 2), "B"), f"{flash_hbm_bytes(8192, 64, 128 * 1024, 2) / base:.2f}"],
])

# %% [markdown]
# In the FlashAttention-2 order the tile that matters is $B_r$. This lesson borrows
# FlashAttention-1's rule $B_r = \min(\lceil M/4d \rceil, d)$ for both orders, and under that rule
# $B_r$ stops growing at $d$. FlashAttention-2 imposes no such cap: in its order, more SRAM (or
# registers, where real kernels keep $O_i$) allows a larger $B_r$, and the re-reads fall as $2d/B_r$
# (the table after this one). Per query–key pair, counting every tile as an HBM access, tiling
# beats standard attention's 4 elements only when $3d/B_c < 4$ (Algorithm 1) or $2d/B_r < 4$ (FlashAttention-2
# order). (A causal standard kernel still moves the whole $N \times N$ matrix for half the pairs,
# which gives tiling a further factor of about 2 there.) Elements per pair from the closed forms,
# full attention at N = 131,072:

# %%
h100 = get_part("h100-sxm")
sram = h100.shared_memory_per_sm_bytes
rows, n_big, per_pair = [], 131072, {}
for hd in (64, 128, 256):
    sizes = flash_block_sizes(sram, hd, 2)
    per_pair_1 = flash_hbm_bytes(n_big, hd, sram, 2) / 2 / n_big**2  # bytes → elements, per pair
    per_pair_2 = flash2_hbm_bytes(n_big, hd, sram, 2) / 2 / n_big**2
    per_pair[hd] = (per_pair_1, per_pair_2, sizes)
    words = ("more", "fewer", "as many")
    rows.append([hd, f"{sizes.rows} × {sizes.cols}", f"{per_pair_1:.2f}", f"{per_pair_2:.2f}",
                 f"{float(standard_hbm_bytes(n_big, hd)) / 2 / n_big**2:.2f}",
                 f"{comparative(per_pair_1, 4, words)} / {comparative(per_pair_2, 4, words)}"])
show_table(["head dim d", f"tile B_r × B_c in {binary(sram)}", "Algorithm 1: elements per pair",
            "FA-2 order: elements per pair", "standard", "than standard (Algorithm 1 / FA-2 order)"], rows)

# %% [markdown]
# Lift the borrowed cap. With, for example, $B_c = 64$ key rows and the largest $B_r$ whose working
# set fits in the same shared memory (`fa2_block_sizes`), the FlashAttention-2 order's re-reads:

# %%
rows = []
for hd in (64, 128, 256):
    capped = per_pair[hd][2]
    free = fa2_block_sizes(sram, hd, block_cols=64)
    free_pair = flash2_hbm_bytes(n_big, hd, sram, 2, block_sizes=free) / 2 / n_big**2
    per_pair[hd] += (free, free_pair)
    rows.append([hd, f"{capped.rows} × {capped.cols}", f"{per_pair[hd][1]:.2f}", f"{free.rows} × {free.cols}",
                 f"{free_pair:.2f}", f"{2 * hd / free.rows:.2f}"])
show_table(["head dim d", "FA-1 rule: B_r × B_c", "FA-2 order: elements per pair",
            "no B_r ≤ d cap: B_r × B_c", "FA-2 order: elements per pair", "2d/B_r"], rows)

# %% jupyter={"source_hidden": true}
p1, p2, s128 = per_pair[128][:3]
free128, free_pair128 = per_pair[128][3:]
md(f"**What did FlashAttention-2's loop order change, and what does it save?** In this byte model the change "
   f"swaps Algorithm 1's re-reads and re-writes of O, about 3d/B_c elements per pair, for re-reads of K and V, "
   f"2d/B_r per pair. At d = 128 in {binary(sram)}, with the same FlashAttention-1 tiles ({s128.rows} × {s128.cols}) "
   f"for both, the FlashAttention-2 order moves {p2:.2f} elements per pair against Algorithm 1's {p1:.2f}: "
   f"{comparative(p2, p1, ('more', 'fewer', 'as many'))} bytes, {abs(p2 / p1 - 1):.0%} "
   f"{comparative(p2, p1, ('more', 'fewer', 'the same'))}. With a larger B_r ({free128.rows} rows beside "
   f"{free128.cols}-row key blocks) it moves {free_pair128:.2f}, "
   f"{comparative(free_pair128, p1, ('more than', 'fewer than', 'as many as'))} Algorithm 1. The loop order by "
   "itself does not promise fewer HBM bytes; the gains Dao (2023) reports for FlashAttention-2 are elsewhere: fewer "
   "non-matmul FLOPs (the output is rescaled by the running statistics and normalised once at the end, not at "
   "every step), parallelism over query blocks (the sequence dimension, beside batch and heads, so a long prompt "
   "with few heads still fills the SMs), and a better split of the work between the warps of a thread block "
   "(the query rows are split across warps rather than the keys, so warps need not exchange partial results "
   "through shared memory).")

# %% [markdown]
# ## On the roofline: the dot moves right
#
# Per head, attention does about $4d$ FLOPs per query–key pair — $4N^2d$ in all, about half that
# when causal. Divide by each traffic count and place it on the H100's BF16 roof. Four versions:
# standard; the two tiled orders in one SM's shared memory, **counting every tile as an HBM
# access** (no help from caches); and the compulsory floor, where $Q, K, V$ are read once and $O$
# written once.

# %%
roof = Roof("H100 SXM, BF16", h100.peak_flops_per_s("bf16"), h100.memory_bandwidth_bytes_per_s)
rows, points = [], []
for n in (512, 2048, 8192, 32768, 131072):
    f = float(attention_flops(n, d, causal=True))
    i_std = f / float(standard_hbm_bytes(n, d))
    i_fa1 = f / flash_hbm_bytes(n, d, sram, 2, causal=True)
    i_fa2 = f / flash2_hbm_bytes(n, d, sram, 2, causal=True)
    i_ideal = f / float(compulsory_hbm_bytes(n, d))
    rows.append([f"{n:,}", f"{i_std:,.0f}", f"{i_fa1:,.0f}", f"{i_fa2:,.0f}", f"{i_ideal:,.0f}"])
    if n in (512, 131072):
        points += [point_on_roof(f"standard, N={n:,}", i_std, roof),
                   point_on_roof(f"tiled (FA-2 order), N={n:,}", i_fa2, roof)]
show_table(["FLOP/byte at N (causal, d = 128)", "standard", f"Algorithm 1 in {binary(sram)}",
            f"FA-2 order in {binary(sram)}", "compulsory"], rows)
roofline_chart([roof], points, title="Causal attention, one head, d = 128, on an H100 SXM (FLOP/byte of HBM traffic)",
               intensity_range=(1, 1e5));

# %% jupyter={"source_hidden": true}
gain = i_fa2 / i_std
md(f"At N = {n:,} the FlashAttention-2 order moves the dot {gain:.1f}× to the right of standard attention "
   f"(Algorithm 1: {i_fa1 / i_std:.1f}×); the chart shows the FlashAttention-2 order. Both tiled intensities "
   f"level off as N grows — near {2 * flash_block_sizes(sram, d, 2).cols / 3:.0f} (≈ 2·B_c/3) for Algorithm 1 "
   f"and near {flash_block_sizes(sram, d, 2).rows} (≈ B_r) for the FlashAttention-2 order — because bytes "
   "and FLOPs both grow as N². The compulsory floor's intensity keeps growing with N.")

# %% [markdown]
# The SRAM size sets the tiles, and so how far right the tiled dots sit:

# %%
rows, below = [], {}
for pid in ("a100-80gb", "h100-sxm", "b200"):
    p = get_part(pid)
    m = p.shared_memory_per_sm_bytes
    sizes = flash_block_sizes(m, d, 2)
    f = float(attention_flops(32768, d, True))
    i1, i2 = f / flash_hbm_bytes(32768, d, m, 2, True), f / flash2_hbm_bytes(32768, d, m, 2, True)
    ridge = p.ridge_point_flop_per_byte("bf16")
    below[pid] = max(i1, i2) < ridge
    rows.append([pid, binary(m), f"{sizes.rows} × {sizes.cols}", f"{i1:,.0f}", f"{i2:,.0f}", f"{ridge:,.0f}"])
show_table(["part", "SRAM per SM", "tile (B_r × B_c)", "Algorithm 1 intensity at N = 32,768",
            "FA-2 order intensity", "BF16 ridge"], rows)

# %%
reserved = 1024  # CUDA reserves 1 KiB of shared memory per thread block (CUDA C++ Programming Guide)
notes, shifts = [], []
f = float(attention_flops(32768, d, True))
for pid in ("a100-80gb", "h100-sxm", "b200"):
    m = get_part(pid).shared_memory_per_sm_bytes
    per_sm, per_block = flash_block_sizes(m, d, 2), flash_block_sizes(m - reserved, d, 2)
    notes.append(f"{pid}: {binary(m - reserved)} of {binary(m)}, tiles {per_block.rows} × {per_block.cols} "
                 f"against {per_sm.rows} × {per_sm.cols}")
    for count in (flash_hbm_bytes, flash2_hbm_bytes):
        shifts.append(abs(count(32768, d, m - reserved, 2, True) / count(32768, d, m, 2, True) - 1))
md("A note on the budget: the table sets M to the shared memory per SM, but one thread block can use at most "
   f"{binary(reserved)} less of it — {'; '.join(notes)} (d = {d}). With the per-block budget the tiled "
   f"intensities at N = 32,768 change by at most {max(shifts):.1%}.")

# %%
h_m, b_m = h100.shared_memory_per_sm_bytes, get_part("b200").shared_memory_per_sm_bytes
r_h, r_b = h100.ridge_point_flop_per_byte("bf16"), get_part("b200").ridge_point_flop_per_byte("bf16")
i_h = float(attention_flops(32768, d, True)) / flash2_hbm_bytes(32768, d, h_m, 2, True)
i_b = float(attention_flops(32768, d, True)) / flash2_hbm_bytes(32768, d, b_m, 2, True)
if all(below.values()):
    verdict = "On every part in the table both tiled counts are below the ridge."
elif not any(below.values()):
    verdict = "On none of these parts are both tiled counts below the ridge."
else:
    verdict = f"Both tiled counts are below the ridge on {', '.join(p for p, b in below.items() if b)} only."
both = lambda a, b, fmt: fmt(a) if fmt(a) == fmt(b) else f"{fmt(a)} against {fmt(b)}"
tmem_b200 = 128 * 512 * 4  # Blackwell tensor memory per SM: 128 lanes × 512 columns of 32-bit cells (PTX ISA)
md(f"The B200 has {comparative(b_m, h_m, ('more', 'less', 'the same'))} shared memory per SM as the H100 "
   f"({both(b_m, h_m, binary)}), so in this model the tiled intensity of the FlashAttention-2 order is "
   f"{comparative(i_b, i_h, ('higher on the B200', 'lower on the B200', 'the same on both'))} "
   f"({both(i_b, i_h, lambda x: f'{x:,.0f} FLOP/byte')}). That is a property of the model, which sizes tiles "
   f"from shared memory alone: it ignores the B200's {binary(tmem_b200)} of tensor memory per SM, where "
   "Blackwell kernels keep their accumulators, so a real B200 kernel can use larger tiles than an H100 one. "
   f"The B200's BF16 ridge is {comparative(r_b, r_h)} the H100's ({r_b:,.0f} against {r_h:,.0f} FLOP/byte): "
   f"the same kernel sits at {i_b / r_b:.0%} of the B200's ridge and {i_h / r_h:.0%} of the H100's. {verdict} "
   "Yet tuned FlashAttention kernels run at a large fraction of peak. Why?")

# %% [markdown]
# ## What the cost model charges, and what a tiled kernel moves
#
# Two different numbers are both called "the bytes of FlashAttention":
#
# - **Compulsory bytes** — what the course's cost model (`roofline_lessons.core.costs`) charges the
#   fused attention operator: $Q$ read once and $O$ written once per query head, $K$ and $V$ read
#   once per KV head (grouped-query attention shares them). No exact kernel can move fewer from
#   HBM, whatever its tiles.
# - **Tiled traffic** — what the loop orders above move between the SM's SRAM and the memory
#   behind it: with grouped-query attention each query head streams its KV head's $K$ and $V$,
#   once per query block in the FlashAttention-2 order.
#
# The tiled traffic reaches HBM only where it misses in the L2 cache, so real HBM traffic lies
# between the two. Qwen3.8-27B's full-attention layers make the gap large: a large head dimension
# (so small tiles) and several query heads per KV head. One layer, one sequence, a causal prefill,
# tiles for the H100's shared memory:

# %%
qwen = get_model("qwen3.8-27b")
rows = []
for n in (4096, 32768, 131072):
    layer = attention_layer_bytes(n, qwen.head_dim, qwen.num_attention_heads, qwen.num_key_value_heads, sram)
    fused = next(op for op in model_cost(qwen, phase="prefill", prompt_tokens=n).ops if op.name.startswith("attention"))
    assert np.isclose(fused.activation_bytes + fused.kv_read_bytes, layer.compulsory_bytes)
    assert np.isclose(fused.flops, layer.flops)
    rows.append([f"{n:,}", si(layer.flops, "FLOP"), si(layer.compulsory_bytes, "B"),
                 f"{layer.compulsory_intensity_flop_per_byte:,.0f}", si(layer.fa2_bytes, "B"),
                 f"{layer.fa2_intensity_flop_per_byte:,.0f}", f"{layer.fa2_bytes / layer.compulsory_bytes:,.0f}×"])
show_table(["prompt N", "FLOPs", "cost model (compulsory)", "FLOP/byte", "FA-2 order, no cache reuse", "FLOP/byte",
            "tiled ÷ compulsory"], rows)

# %% jupyter={"source_hidden": true}
kv_one_head_bytes = 2 * n * qwen.head_dim * 2  # K and V of one KV head, BF16, at the last N above
md(f"Qwen3.8-27B: head dim {qwen.head_dim}, {qwen.num_attention_heads} query heads and "
   f"{qwen.num_key_value_heads} KV heads per layer "
   f"({qwen.num_attention_heads // qwen.num_key_value_heads} query heads per KV head); tiles of {layer.block_rows} × {layer.block_cols} in "
   f"{binary(sram)}. The cost model's figures are the compulsory column (the assertions above check that "
   f"`costs` and `flash` agree). A kernel that found nothing in any cache would move the FlashAttention-2 "
   f"column — and sit {comparative(layer.fa2_intensity_flop_per_byte, h100.ridge_point_flop_per_byte('bf16'), ('above', 'below', 'on'))} "
   f"the H100's ridge at {layer.fa2_intensity_flop_per_byte:,.0f} FLOP/byte (N = {n:,}). The K and V of one "
   f"KV head at N = {n:,} are {binary(kv_one_head_bytes)}, {comparative(kv_one_head_bytes, h100.last_level_cache_bytes, ('more than', 'less than', 'as much as'))} "
   f"the H100's {binary(h100.last_level_cache_bytes)} of L2, so reuse cannot come from holding them; it comes "
   "from the query blocks running at the same moment on different SMs, which walk the same key blocks in the "
   "same order, so a key block fetched for one can be found in L2 by the others. How much L2 catches decides "
   "where between the two columns the kernel really sits; the cost model assumes it catches everything.")

# %% [markdown]
# ## The missing roof: L2, and a measured kernel compared like with like
#
# The tiled counts charge every re-read to HBM. On a real GPU much of the re-read traffic is
# served by the L2 cache — a second, faster roof. Two more things separate a real kernel from this
# model: the registers hold the output accumulators, so its tiles are not limited to this model's
# shared memory; and on a Hopper GPU thread blocks grouped in a *cluster* can share one load from L2
# (TMA multicast), so what each block asks of L2 can be less than what it uses. A *hierarchical
# roofline* draws one roof per level of memory.
#
# The catalog holds one measured attention rate for the H100 in FP16: FlashAttention-3's forward
# pass, from the arXiv preprint (Shah et al., arXiv 2407.08608, versions 1 and 2, July 2024). Later
# versions of the paper report different, higher BF16 and FP8 figures, so check which version you
# are reading before you compare. A measured rate means something only with its conditions, and the
# catalog entry carries them; compare it with a kernel of the same shape — not with the causal
# head-dimension-128 tables above.
#
# The catalog holds two L2 bandwidth figures for this part, both from one chips-and-cheese article
# cited by the JAX scaling book: the H100's L2 is split into two partitions, and the article reads
# faster from the near partition than across the whole cache. Both were measured on an H100 **PCIe**
# card, not on the SXM part this lesson prices, and the catalog has no SXM figure; so the L2 roofs
# below are drawn at both figures, and each conclusion says whether it holds at both (the cell
# prints the catalog's conditions).

# %%
fa3 = best_measurement(h100, "attention_flops_per_s", "fp16")
l2_figs = l2_bandwidth_figures(h100)  # highest first: the near partition, then the whole L2
l2_near, l2_whole = l2_figs
md("L2 figures in the catalog:\n\n" + "\n".join(f"- **{si(m.value, 'B/s')}**, {m.kernel}: {m.conditions} "
                                                  f"({m.source}, {m.date})." for m in l2_figs))
fa3_d, fa3_causal, fa3_n = fa3.head_dim, fa3.causal, fa3.sequence_length
peak16 = h100.peak_flops_per_s("fp16")
f_bench = float(attention_matmul_flops(fa3_n, fa3_d, fa3_causal))  # the benchmark's FLOP count: matmuls only
bytes_tiled = flash2_hbm_bytes(fa3_n, fa3_d, sram, 2, fa3_causal)
i_tiled = f_bench / bytes_tiled
i_comp = f_bench / float(compulsory_hbm_bytes(fa3_n, fa3_d))
hbm_tiled_roof = min(peak16, h100.memory_bandwidth_bytes_per_s * i_tiled)
hbm_comp_slope = h100.memory_bandwidth_bytes_per_s * i_comp  # the HBM roof before the compute peak caps it
hbm_comp_roof = min(peak16, hbm_comp_slope)
# FlashAttention-3's own tile for this shape, from its launch code (tile_size.h, flash_fwd_launch_template.h)
fa3_tile = fa3_forward_tiles(fa3_d, fa3_causal, fa3_n)
fa3_mc = cluster_tile_l2_traffic(fa3_tile.block_rows, fa3_tile.block_cols, fa3_d, fa3_n, 2, fa3_tile.cluster_ctas,
                                 fa3_tile.stages)
fa3_solo = cluster_tile_l2_traffic(fa3_tile.block_rows, fa3_tile.block_cols, fa3_d, fa3_n, 2, 1, fa3_tile.stages)
# the L2 slopes (before the compute peak caps them), at each of the two L2 figures
tiled_slope = {m.kernel: m.value * i_tiled for m in l2_figs}
solo_slope = {m.kernel: fa3_solo.l2_roof_flop_per_s(m.value) for m in l2_figs}
mc_slope = {m.kernel: fa3_mc.l2_roof_flop_per_s(m.value) for m in l2_figs}


def capped(slope):
    """A roof: the L2 slope, or the compute peak where the slope is above it (said so)."""
    return si(min(peak16, slope), "FLOP/s") + (f" (the compute peak; the L2 slope is {si(slope, 'FLOP/s')})"
                                               if slope > peak16 else "")


fa3_label = f"FlashAttention-3's tiles, {fa3_tile.block_rows} × {fa3_tile.block_cols}"
rows = [[f"measured: {fa3.what}", "", f"**{si(fa3.value, 'FLOP/s')}** ({fa3.value / peak16:.0%} of the dense FP16 peak)"],
        ["compulsory bytes, from HBM", f"{i_comp:,.0f}", si(hbm_comp_roof, "FLOP/s")],
        [f"FA-2 order, {flash_block_sizes(sram, fa3_d, 2).rows}-row query blocks, every tile from HBM", f"{i_tiled:,.0f}",
         si(hbm_tiled_roof, "FLOP/s")]]
for what, intensity, slope in (("FA-2 order, every tile from L2", i_tiled, tiled_slope),
                               (f"{fa3_label}, no multicast, from L2", fa3_solo.intensity_flop_per_byte, solo_slope),
                               (f"{fa3_label}, K/V multicast to a {fa3_tile.cluster_ctas}-block cluster, from L2",
                                fa3_mc.intensity_flop_per_byte, mc_slope)):
    rows += [[f"{what} at {si(m.value, 'B/s')} ({m.kernel.removeprefix('read, ')})", f"{intensity:,.0f}",
              capped(slope[m.kernel])]
             for m in l2_figs]
show_table(["one head, FP16", "FLOP/byte", "roof"], rows)

# %% jupyter={"source_hidden": true}
assert len(l2_figs) == 2 and all("H100 PCIe" in m.conditions for m in l2_figs)  # the text above says so
# the conditions of the measurement, from its catalog entry (Measurement.head_dim, .causal, .sequence_length)
assert fa3.head_dim is not None and fa3.causal is not None and fa3.sequence_length is not None and fa3.conditions

# %% jupyter={"source_hidden": true}
above_hbm = fa3.value > hbm_tiled_roof
hbm_bytes_max = f_bench * h100.memory_bandwidth_bytes_per_s / fa3.value  # bytes that fit in the measured time
md(f"Conditions, from the catalog entry: FP16, head dim {fa3_d}, {'causal' if fa3_causal else 'non-causal'}, "
   f"N = {fa3_n:,}; {fa3.conditions} ({fa3.source}). FLOPs are counted as the benchmark counts them, matmuls only "
   f"({f_bench / float(attention_flops(fa3_n, fa3_d, fa3_causal)):.1%} of this course's count, which adds the softmax). "
   f"The measured rate is {comparative(fa3.value, hbm_tiled_roof, ('above', 'below', 'at'))} the roof of a kernel that "
   f"fetched every tile from HBM ({si(hbm_tiled_roof, 'FLOP/s')})"
   + (f", so at least {1 - hbm_bytes_max / bytes_tiled:.0%} of that tile traffic cannot have come from HBM. "
      if above_hbm else ". ")
   + f"The measurement also bounds what came from HBM: at {si(fa3.value, 'FLOP/s')} and "
   f"{si(h100.memory_bandwidth_bytes_per_s, 'B/s')} the kernel cannot have moved more than "
   f"{si(hbm_bytes_max, 'B')} per head from HBM, "
   f"{hbm_bytes_max / float(compulsory_hbm_bytes(fa3_n, fa3_d)):,.0f}× the compulsory bytes.")

# %% jupyter={"source_hidden": true}
l2_needed = fa3.value / i_tiled  # L2 bandwidth this model's tiles would need to reach the measured rate
l2_needed_solo = fa3.value / fa3_solo.intensity_flop_per_byte  # ... and FA3's tiles without multicast
br_fa3 = flash_block_sizes(sram, fa3_d, 2).rows
block_limit = sram - reserved  # the shared memory one thread block may use (1 KiB reserved, see above)
assert fa3_mc.shared_memory_bytes <= block_limit  # FA3's Q tile and two stages of K and V fit one block
wider = cluster_tile_l2_traffic(fa3_tile.block_rows, fa3_tile.block_cols + 16, fa3_d, fa3_n, 2, 1, fa3_tile.stages)
assert wider.shared_memory_bytes > block_limit  # 16 more key rows would not fit
# the comparisons the text makes, asserted: at BOTH L2 figures the no-multicast roof is below the measurement and
# the multicast slope above it; whether the multicast slope also clears the compute peak depends on the figure
assert all(solo_slope[m.kernel] < fa3.value < mc_slope[m.kernel] for m in l2_figs) and fa3.value < peak16
assert fa3_tile.cluster_ctas == 2 and (fa3_n // fa3_tile.block_rows) % 2 == 0
clears = [m for m in l2_figs if mc_slope[m.kernel] > peak16]  # multicast lifts L2 above the compute peak here
short_of = [m for m in l2_figs if mc_slope[m.kernel] <= peak16]  # ... and not here: L2 still the lower roof
assert [m.kernel for m in clears] == [l2_near.kernel]  # the summary: above the peak only at the near-partition one
at = lambda m: f"{si(m.value, 'B/s')} ({m.kernel.removeprefix('read, ')})"  # noqa: E731
pair = lambda f: " and ".join(f(m) for m in l2_figs)  # noqa: E731 — one figure per L2 figure, near first
above_tiled = [m for m in l2_figs if fa3.value > min(peak16, tiled_slope[m.kernel])]
md(f"Taking only the compulsory bytes from HBM puts the HBM roof at {si(hbm_comp_slope, 'FLOP/s')}, "
   f"{hbm_comp_slope / peak16:,.0f}× the compute peak ({si(peak16, 'FLOP/s')}): HBM no longer binds. The L2 roof "
   f"of this model's tiles is {pair(lambda m: si(min(peak16, tiled_slope[m.kernel]), 'FLOP/s') + ' at ' + at(m))}"
   + ("" if any(tiled_slope[m.kernel] >= peak16 for m in l2_figs) else ", below the compute peak at both")
   + ". "
   + (f"The measured {si(fa3.value, 'FLOP/s')} is above "
      + ("both" if len(above_tiled) == len(l2_figs) else "it at " + " and ".join(at(m) for m in above_tiled))
      + f": {br_fa3}-row query blocks would need {si(l2_needed, 'B/s')} from L2 to reach it, "
      + pair(lambda m: f"{l2_needed / m.value:.2f}×") + " the two figures. So the real kernel must ask less of L2 "
      "than these tiles do. " if above_tiled else "")
   + f"It does, in two ways, both read from FlashAttention-3's launch code ({FA3_TILE_SOURCE}). First, its tile: "
   f"head dim {fa3_d}, {'causal' if fa3_causal else 'non-causal'}, runs at {fa3_tile.block_rows} × "
   f"{fa3_tile.block_cols} ({fa3_tile.block_rows} query rows per thread block, {fa3_tile.block_cols} key rows "
   f"per step). The output accumulators live in registers, so shared memory holds only the Q tile and "
   f"{fa3_tile.stages} stages of K and V tiles: {binary(fa3_mc.shared_memory_bytes)} of the "
   f"{binary(block_limit)} a thread block may use — the launch code notes that this tile is at the "
   f"shared-memory limit ({fa3_tile.block_cols + 16} key rows would need {binary(wider.shared_memory_bytes)}). "
   f"Second, **multicast**: because the {fa3_n // fa3_tile.block_rows} "
   f"query blocks of a head are an even number, it launches clusters of {fa3_tile.cluster_ctas} thread blocks "
   f"on neighbouring query blocks, and each K and V tile is read from L2 once and delivered by the TMA unit to "
   f"the shared memory of every block in the cluster. Per byte that crosses from L2 to the SMs "
   f"(`cluster_tile_l2_traffic`: Q read, O and the log-sum-exp written, K and V streamed and divided by the "
   f"cluster), that is {fa3_mc.intensity_flop_per_byte:,.0f} FLOP/byte with multicast and "
   f"{fa3_solo.intensity_flop_per_byte:,.0f} without.\n\n"
   f"Without multicast the tiles' L2 roof is {pair(lambda m: si(solo_slope[m.kernel], 'FLOP/s') + ' at ' + at(m))}: "
   f"below the measured {si(fa3.value, 'FLOP/s')} at both — to reach it they would need "
   f"{si(l2_needed_solo, 'B/s')} from L2, {pair(lambda m: f'{l2_needed_solo / m.value:.2f}×')} the two figures. "
   f"With the multicast the L2 slope is {pair(lambda m: si(mc_slope[m.kernel], 'FLOP/s') + ' at ' + at(m))}: above "
   "the measurement at both. So, whichever figure holds, multicast is what takes this kernel's L2 roof past the "
   "measured rate: it is in the launch code, and it divides the K and V traffic by "
   f"{fa3_tile.cluster_ctas}. What binds after it depends on the figure. "
   + "".join(f"At {at(m)} the multicast slope is above the compute peak, so the compute roof is the lower one and "
             f"the measurement is {fa3.value / peak16:.0%} of it: what holds it there is not a bandwidth roof of this "
             "model. " for m in clears)
   + "".join(f"At {at(m)} it is below the compute peak, so L2 is still the lower roof, at "
             f"{si(mc_slope[m.kernel], 'FLOP/s')}, and the measurement is {fa3.value / mc_slope[m.kernel]:.0%} of it. "
             for m in short_of)
   + ("So \"multicast lifts the L2 roof above the compute peak\" holds at "
      + (" and ".join(at(m) for m in clears) if clears else "neither figure")
      + (", not at " + " and ".join(at(m) for m in short_of) if short_of else "") + ". " if clears and short_of else "")
   + "Both figures were measured on an H100 PCIe (fewer SMs, a 350 W limit the card ran into); the catalog has no "
   "measurement of the SXM's own L2, so whether it would deliver what the tiles without multicast need is open, "
   "and these rates alone cannot separate that from the multicast. Long-sequence attention reaches the compute "
   "roof only when its re-reads are caught on chip and in L2, and few enough — tall query blocks, shared loads — "
   "for the L2 roof to clear the compute peak.")

# %%
fa3_fp8 = best_measurement(h100, "attention_flops_per_s", "fp8")
if fa3_fp8 is not None:
    assert fa3_fp8.head_dim is not None and fa3_fp8.causal is not None and fa3_fp8.sequence_length is not None
    to_verify = "verify" in fa3_fp8.conditions.lower()
    same_shape = (fa3_fp8.head_dim, fa3_fp8.causal, fa3_fp8.sequence_length) == (fa3_d, fa3_causal, fa3_n)
    md(f"In FP8 the catalog has {si(fa3_fp8.value, 'FLOP/s')} ({fa3_fp8.what}; {fa3_fp8.source}), recorded at head "
       f"dim {fa3_fp8.head_dim}, {'causal' if fa3_fp8.causal else 'non-causal'}, N = {fa3_fp8.sequence_length:,}. "
       f"Its conditions: \"{fa3_fp8.conditions}\". "
       + ("Those conditions are still to be verified against the paper, so quote the figure with them and do not "
          "set it beside the FP16 rate, or read it as a fraction of the FP8 peak, as a like-with-like comparison "
          "until they are. " if to_verify else
          f"As recorded, it was measured at {'the same' if same_shape else 'a different'} head dim, causality and "
          "sequence length as the FP16 rate. ")
       + "An FP8 rate belongs next to the FP8 peak, never the FP16 one.")
else:
    md("The FlashAttention-3 paper also reports an FP8 forward rate; the catalog does not hold it yet, so this "
       "lesson does not quote it. An FP8 rate belongs next to the FP8 peak, never the FP16 one.")

# %% [markdown]
# ## What tiling does not fix: decode
#
# In decode, one new query per sequence attends over the whole cache. Every cached key and value
# must come from HBM at least once, and each is used by the query heads that share it (grouped-
# query attention). Tiling cannot reuse what is used once per step:

# %%
rows = []
for mid in ("llama-2-7b", "llama-3.1-8b", "qwen3.8-27b"):
    m = get_model(mid)
    group = m.num_attention_heads // m.num_key_value_heads
    rows.append([m.name, m.head_dim, group, f"{float(decode_attention_intensity(group, 32768, m.head_dim)):.2f}"])
show_table(["model", "head dim", "query heads per KV head", "decode attention FLOP/byte (32 K tokens, BF16)"], rows)

# %% [markdown]
# About the group size, whatever the tiling: decode attention stays on the bandwidth slope. Its
# levers are bytes — fewer KV heads, a smaller KV format, shorter effective context — not tiles.
#
# ## Explore
#
# Choose N, the head dimension, the SRAM size, causality and the loop order. Left: the four dots
# (every tile counted as an HBM access). Right: the tiles the kernel visits, coloured in visiting
# order — column by column for Algorithm 1 (key blocks outer), row by row for the FlashAttention-2
# order (query blocks outer). Try: d = 256 with a 48 KiB SRAM at N = 512 (when does tiling lose to
# standard attention?); causal vs full at N = 131,072.

# %%
from roofline_lessons.viz.dashboards import lesson06_dashboard

dashboard = lesson06_dashboard()

# %% [markdown]
# ## Summary
#
# - Standard attention moves Θ(N·d + N²) bytes; the N² is the score and probability matrices
#   written and read.
# - FlashAttention tiles through SRAM with an online softmax: exact, with no N×N matrix in HBM —
#   but its re-reads still grow as N²: Θ(N²·d²/M) bytes.
# - Loop order decides what is re-read: Algorithm 1 re-reads and re-writes O once per key block;
#   the FlashAttention-2 order keeps O on chip and re-reads K and V once per query block. With
#   FlashAttention-1's tiles that is not fewer bytes at d = 128; FlashAttention-2's gains are fewer
#   non-matmul FLOPs, parallelism over query blocks and a better split between warps.
# - The cost model charges the compulsory bytes (Q, K, V read once, O written once). The tiled
#   traffic is larger. Real kernels reach a large fraction of peak because L2 catches the re-reads
#   *and* they ask less of L2 than this model's tiles: taller query blocks (accumulators in
#   registers) and, on Hopper, K and V tiles multicast to a cluster of thread blocks. For
#   FlashAttention-3 at head dim 256 the multicast is what lifts the L2 roof above the measured
#   rate, at both of the catalog's L2 figures (both measured on an H100 PCIe); above the compute
#   peak only at the near-partition one. Quote a measured rate with its dtype, head
#   dimension, causality, sequence length — and the version of the paper it comes from.
# - Decode attention's intensity is about the GQA group size: tiling does not help; fewer bytes do.
#
# **A question to leave with.** Why does FlashAttention help prefill much more than decode, in one
# sentence with a number in it?
#
# **Interview questions this lesson prepares you for**
#
# - "How does FlashAttention's SRAM tiling change a kernel's position on the roofline?"
# - "What are the HBM accesses of standard attention vs FlashAttention?"
# - "What did FlashAttention-2 change in the loop order, and what does it save?"
# - "Why is FlashAttention exact? What is the online softmax?"
# - "Does FlashAttention speed up decode? Why not much?"
#
# The exercises for this lesson are in `exercises/06_flashattention_tiling.ipynb`.
