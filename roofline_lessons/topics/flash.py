"""FlashAttention tiling in numpy: exact attention computed block by block with an online
softmax, counting every byte moved between "HBM" arrays and a bounded "SRAM" working set.

Two loop orders, both exact, both counted:

- :func:`tiled_attention` follows **Algorithm 1 of FlashAttention** (Dao et al. 2022): the outer
  loop walks key/value blocks K_j, V_j (each loaded once); the inner loop walks query blocks and
  loads Q_i, O_i, ℓ_i, m_i, updates them on chip and writes O_i, ℓ_i, m_i back — O is re-read and
  re-written once per key block. Closed form: :func:`flash_hbm_bytes`.
- :func:`tiled_attention_fa2` follows the **FlashAttention-2 order** (Dao 2023, Algorithm 1 there;
  FlashAttention-3 keeps it): the outer loop walks query blocks, Q_i is loaded once and O_i, ℓ_i,
  m_i stay on chip; the inner loop streams K_j, V_j, so K and V are read once per query block.
  O_i and the log-sum-exp L_i = m_i + log ℓ_i are written once. Closed form: :func:`flash2_hbm_bytes`.

Block sizes start from the original FlashAttention (FlashAttention-1) paper's B_c = ⌈M/4d⌉,
B_r = min(⌈M/4d⌉, d) (M in elements) and are shrunk, if rounding and the score block would
overflow, until the whole working set fits in M bytes; the simulated SRAM refuses to exceed M.
Both orders hold the same working set (Q_i, O_i, K_j, V_j, the score tile, row statistics), so the
same tiles fit in both, and by default both borrow FlashAttention-1's rule. FlashAttention-2 itself
does not cap B_r at d: :func:`fa2_block_sizes` gives the FA-2 order the largest B_r that fits
beside a chosen B_c, and the FA-2 order's re-reads fall as 2d/B_r.

Theorem 2 of the FlashAttention paper: standard attention needs Θ(N·d + N²) HBM accesses,
FlashAttention Θ(N²·d²/M): tiling removes the N×N matrices from HBM, not the N² growth.
:func:`compulsory_hbm_bytes` is the floor that the cost model (:mod:`roofline_lessons.core.costs`)
charges a fused attention kernel: Q, K, V read once and O written once.

Real Hopper kernels differ from this model in two ways that lesson 6 counts: :func:`fa3_forward_tiles`
gives the tile FlashAttention-3's launch code picks (accumulators in registers, so taller query blocks),
and :func:`cluster_tile_l2_traffic` what one such tile asks of L2 when a cluster of thread blocks
shares each K/V tile by TMA multicast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


class SRAMOverflowError(RuntimeError):
    """The tiles asked for more on-chip memory than the SRAM holds."""


@dataclass
class SRAM:
    """A bounded on-chip working set: allocations beyond ``capacity_bytes`` are refused."""

    capacity_bytes: int
    used_bytes: int = 0
    peak_bytes: int = 0

    def alloc(self, nbytes: int, what: str) -> None:
        if self.used_bytes + nbytes > self.capacity_bytes:
            raise SRAMOverflowError(
                f"{what} needs {nbytes:,} bytes but only {self.capacity_bytes - self.used_bytes:,} of "
                f"{self.capacity_bytes:,} SRAM bytes are free")
        self.used_bytes += nbytes
        self.peak_bytes = max(self.peak_bytes, self.used_bytes)

    def free(self, nbytes: int) -> None:
        self.used_bytes -= nbytes


@dataclass
class Traffic:
    """Bytes moved between HBM and SRAM by one tiled-attention call, and the tiles it visited."""

    hbm_read_bytes: int = 0
    hbm_write_bytes: int = 0
    sram_peak_bytes: int = 0
    block_rows: int = 0  #: B_r used
    block_cols: int = 0  #: B_c used
    visited: list = field(default_factory=list)  #: (query block i, key block j) in visiting order

    @property
    def hbm_bytes(self) -> int:
        return self.hbm_read_bytes + self.hbm_write_bytes


@dataclass(frozen=True)
class BlockSizes:
    rows: int  #: B_r used
    cols: int  #: B_c used
    paper_rows: int  #: FlashAttention-1's rule: min(⌈M/4d⌉, d)
    paper_cols: int  #: FlashAttention-1's rule: ⌈M/4d⌉


def working_set_elements(rows: int, cols: int, d: int) -> int:
    """On-chip elements of one step: K_j, V_j, Q_i, O_i, the score block, and six row vectors."""
    return 2 * cols * d + 2 * rows * d + rows * cols + 6 * rows


def flash_block_sizes(sram_bytes: int, head_dim: int, element_bytes: int = 8) -> BlockSizes:
    """FlashAttention-1's block sizes (B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d)) for an SRAM of
    ``sram_bytes``, shrunk until the working set fits. Both loop orders use them by default."""
    m = sram_bytes // element_bytes
    paper_cols = math.ceil(m / (4 * head_dim))
    paper_rows = min(paper_cols, head_dim)
    cols, rows = paper_cols, paper_rows
    while cols >= 1 and working_set_elements(rows, cols, head_dim) > m:
        cols -= 1
        rows = min(rows, cols)
    if cols < 1:
        need = working_set_elements(1, 1, head_dim) * element_bytes
        raise SRAMOverflowError(f"an SRAM of {sram_bytes:,} bytes cannot hold even 1×1 tiles at head_dim "
                                f"{head_dim} ({need:,} bytes needed)")
    return BlockSizes(rows, cols, paper_rows, paper_cols)



def fa2_block_sizes(sram_bytes: int, head_dim: int, block_cols: int = 64, element_bytes: int = 2) -> BlockSizes:
    """Tiles for the FlashAttention-2 order without FlashAttention-1's B_r ≤ d cap: ``block_cols``
    key rows and the largest B_r whose working set (:func:`working_set_elements`) fits in
    ``sram_bytes``. FlashAttention-2 imposes no B_r ≤ d; its re-reads are 2d/B_r per query–key pair,
    so more on-chip memory means larger query blocks and fewer re-reads. ``paper_*`` keep
    FlashAttention-1's rule for comparison."""
    m = sram_bytes // element_bytes
    if block_cols < 1:
        raise SRAMOverflowError(f"block_cols must be at least 1, got {block_cols}")
    per_row = 2 * head_dim + block_cols + 6
    rows = (m - 2 * block_cols * head_dim) // per_row
    if rows < 1:
        need = working_set_elements(1, block_cols, head_dim) * element_bytes
        raise SRAMOverflowError(f"an SRAM of {sram_bytes:,} bytes cannot hold 1 × {block_cols} tiles at head_dim "
                                f"{head_dim} ({need:,} bytes needed)")
    assert working_set_elements(rows, block_cols, head_dim) <= m < working_set_elements(rows + 1, block_cols, head_dim)
    paper = math.ceil(m / (4 * head_dim))
    return BlockSizes(int(rows), int(block_cols), min(paper, head_dim), paper)

def naive_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False) -> np.ndarray:
    """softmax(Q·Kᵀ/√d)·V with the whole N×N score matrix materialised (the reference)."""
    n, d = q.shape
    s = q @ k.T / math.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((n, k.shape[0]), dtype=bool)), s, -np.inf)
    s = s - s.max(axis=1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=1, keepdims=True)) @ v


def _blocks(n: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def _visits(i_block: tuple[int, int], j_block: tuple[int, int], causal: bool) -> bool:
    """A causal kernel skips a tile whose keys all come after its queries."""
    return not causal or j_block[0] <= i_block[1] - 1


def _tiling_setup(q: np.ndarray, sram_bytes: int, block_sizes: "BlockSizes | None"):
    """Sizes, an empty SRAM, a traffic counter and the softmax scale shared by both loop orders."""
    n, d = q.shape
    eb = q.dtype.itemsize
    sizes = block_sizes or flash_block_sizes(sram_bytes, d, eb)
    return n, d, eb, sizes, SRAM(sram_bytes), Traffic(block_rows=sizes.rows, block_cols=sizes.cols), 1.0 / math.sqrt(d)


def tiled_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, sram_bytes: int, causal: bool = False,
                    block_sizes: BlockSizes | None = None) -> tuple[np.ndarray, Traffic]:
    """Exact attention, tile by tile, with an online softmax; returns (output, traffic).

    ``q``, ``k``, ``v`` (N × d, any float dtype) play the HBM arrays; every tile copied into the
    working set is counted as HBM reads, every tile written back as HBM writes, in the arrays'
    own element size. Raises :class:`SRAMOverflowError` if a tile would not fit.
    """
    n, d, eb, sizes, sram, t, scale = _tiling_setup(q, sram_bytes, block_sizes)
    # O, ℓ and m live in HBM and are initialised there (N·d + 2N elements written)
    o = np.zeros_like(q)
    l_hbm = np.zeros(n, dtype=q.dtype)
    m_hbm = np.full(n, -np.inf, dtype=q.dtype)
    t.hbm_write_bytes += o.nbytes + l_hbm.nbytes + m_hbm.nbytes
    row_blocks, col_blocks = _blocks(n, sizes.rows), _blocks(k.shape[0], sizes.cols)
    for j, (c0, c1) in enumerate(col_blocks):
        kv_bytes = 2 * (c1 - c0) * d * eb
        sram.alloc(kv_bytes, f"K_{j}, V_{j}")
        kj, vj = k[c0:c1].copy(), v[c0:c1].copy()
        t.hbm_read_bytes += kv_bytes
        for i, (r0, r1) in enumerate(row_blocks):
            if not _visits((r0, r1), (c0, c1), causal):
                continue
            t.visited.append((i, j))
            rows = r1 - r0
            tile_bytes = (2 * rows * d + 2 * rows) * eb
            sram.alloc(tile_bytes, f"Q_{i}, O_{i}, l_{i}, m_{i}")
            qi, oi, li, mi = q[r0:r1].copy(), o[r0:r1].copy(), l_hbm[r0:r1].copy(), m_hbm[r0:r1].copy()
            t.hbm_read_bytes += tile_bytes
            scratch = (rows * (c1 - c0) + 4 * rows) * eb
            sram.alloc(scratch, f"S_{i}{j} and row statistics")
            s = (qi @ kj.T) * scale
            if causal:
                s = np.where(np.arange(c0, c1)[None, :] <= np.arange(r0, r1)[:, None], s, -np.inf)
            m_tile = s.max(axis=1)
            live = np.isfinite(m_tile)  # rows whose keys in this tile are all masked contribute nothing
            p = np.where(live[:, None], np.exp(s - np.where(live, m_tile, 0.0)[:, None]), 0.0)
            l_tile = p.sum(axis=1)
            m_new = np.maximum(mi, np.where(live, m_tile, -np.inf))
            alpha = np.where(np.isfinite(mi), np.exp(mi - m_new), 0.0)
            beta = np.where(live, np.exp(np.where(live, m_tile, 0.0) - m_new), 0.0)
            l_new = alpha * li + beta * l_tile
            with np.errstate(invalid="ignore", divide="ignore"):
                o_new = np.where(l_new[:, None] > 0,
                                 ((li * alpha)[:, None] * oi + beta[:, None] * (p @ vj)) / l_new[:, None], 0.0)
            o[r0:r1], l_hbm[r0:r1], m_hbm[r0:r1] = o_new, l_new, m_new
            t.hbm_write_bytes += (rows * d + 2 * rows) * eb
            sram.free(scratch)
            sram.free(tile_bytes)
        sram.free(kv_bytes)
    t.sram_peak_bytes = sram.peak_bytes
    return o, t


def flash_hbm_bytes(n, head_dim: int, sram_bytes: int, element_bytes: int = 2, causal: bool = False,
                    block_sizes: BlockSizes | None = None) -> float:
    """HBM bytes :func:`tiled_attention` (Algorithm 1 order) moves, in closed form (works for large N
    without running it).

    Initialise O, ℓ, m (N·d + 2N); read every K_j, V_j once (2·N·d); for every visited tile read
    Q_i, O_i, ℓ_i, m_i and write back O_i, ℓ_i, m_i (3·B_r·d + 4·B_r per tile). For large N this is
    ≈ ⌈N/B_c⌉·3·N·d elements: O and Q are re-read once per key block.
    """
    sizes = block_sizes or flash_block_sizes(sram_bytes, head_dim, element_bytes)
    n = int(n)
    br, bc, d = sizes.rows, sizes.cols, head_dim
    elements = n * d + 2 * n + 2 * n * d
    col_starts = np.arange(0, n, bc)
    row_starts = np.arange(0, n, br)
    row_sizes = np.minimum(row_starts + br, n) - row_starts
    if causal:
        # for key block starting at c0, query blocks whose last row ≥ c0 are visited
        row_ends = row_starts + row_sizes - 1  # ascending, so the visited blocks are a suffix
        rows_before = np.concatenate(([0], np.cumsum(row_sizes)))
        visited_rows = n - rows_before[np.searchsorted(row_ends, col_starts, side="left")]
    else:
        visited_rows = np.full(col_starts.shape, n)
    elements += float((3 * d * visited_rows + 4 * visited_rows).sum())
    return float(elements * element_bytes)


def _whole_tokens(n) -> int:
    """A sequence length: a whole number ≥ 1, or a clear error."""
    from ..core.errors import RooflineInputError

    if isinstance(n, (bool, str, bytes)) or n is None:
        raise RooflineInputError(f"N (sequence length) must be a whole number >= 1, got {n!r}")
    try:
        value = float(n)
    except (TypeError, ValueError):
        raise RooflineInputError(f"N (sequence length) must be a whole number >= 1, got {n!r}") from None
    if not math.isfinite(value) or value != math.floor(value) or value < 1:
        raise RooflineInputError(f"N (sequence length) must be a whole number >= 1, got {n!r}")
    return int(value)


def tiled_attention_fa2(q: np.ndarray, k: np.ndarray, v: np.ndarray, sram_bytes: int, causal: bool = False,
                        block_sizes: BlockSizes | None = None,
                        write_logsumexp: bool = True) -> tuple[np.ndarray, Traffic]:
    """Exact attention in the FlashAttention-2 loop order; returns (output, traffic).

    Outer loop over query blocks Q_i (read once); O_i, ℓ_i, m_i live on chip for the whole inner
    loop, which streams the key/value blocks K_j, V_j from HBM (a causal kernel skips blocks whose
    keys all come after the block's queries). The output is normalised once at the end,
    O_i = diag(ℓ_i)⁻¹·Õ_i, and written once, with the log-sum-exp L_i = m_i + log ℓ_i that the
    paper's forward pass also stores (N elements; ``write_logsumexp=False`` leaves it out).
    Same working set as :func:`tiled_attention`, so the same block sizes fit. Raises
    :class:`SRAMOverflowError` if a tile would not fit.
    """
    n, d, eb, sizes, sram, t, scale = _tiling_setup(q, sram_bytes, block_sizes)
    o = np.empty_like(q)  # HBM output: written once per query block, never read back
    lse = np.empty(n, dtype=q.dtype)
    row_blocks, col_blocks = _blocks(n, sizes.rows), _blocks(k.shape[0], sizes.cols)
    for i, (r0, r1) in enumerate(row_blocks):
        rows = r1 - r0
        q_bytes = rows * d * eb
        sram.alloc(q_bytes, f"Q_{i}")
        qi = q[r0:r1].copy()
        t.hbm_read_bytes += q_bytes
        acc_bytes = (rows * d + 2 * rows) * eb
        sram.alloc(acc_bytes, f"O_{i}, l_{i}, m_{i} (on chip for the whole inner loop)")
        oi = np.zeros((rows, d), dtype=q.dtype)
        li = np.zeros(rows, dtype=q.dtype)
        mi = np.full(rows, -np.inf, dtype=q.dtype)
        for j, (c0, c1) in enumerate(col_blocks):
            if not _visits((r0, r1), (c0, c1), causal):
                continue
            t.visited.append((i, j))
            kv_bytes = 2 * (c1 - c0) * d * eb
            sram.alloc(kv_bytes, f"K_{j}, V_{j}")
            kj, vj = k[c0:c1].copy(), v[c0:c1].copy()
            t.hbm_read_bytes += kv_bytes
            scratch = (rows * (c1 - c0) + 4 * rows) * eb
            sram.alloc(scratch, f"S_{i}{j} and row statistics")
            s = (qi @ kj.T) * scale
            if causal:
                s = np.where(np.arange(c0, c1)[None, :] <= np.arange(r0, r1)[:, None], s, -np.inf)
            m_new = np.maximum(mi, s.max(axis=1))
            shift = np.where(np.isfinite(m_new), m_new, 0.0)  # a row with nothing visible yet stays empty
            p = np.exp(s - shift[:, None])
            alpha = np.where(np.isfinite(mi), np.exp(mi - shift), 0.0)
            li = alpha * li + p.sum(axis=1)
            oi = alpha[:, None] * oi + p @ vj  # unnormalised: divided by ℓ once, at the end
            mi = m_new
            sram.free(scratch)
            sram.free(kv_bytes)
        with np.errstate(invalid="ignore", divide="ignore"):
            o[r0:r1] = np.where(li[:, None] > 0, oi / li[:, None], 0.0)
            lse[r0:r1] = mi + np.log(li)
        t.hbm_write_bytes += rows * d * eb + (rows * eb if write_logsumexp else 0)
        sram.free(acc_bytes)
        sram.free(q_bytes)
    t.sram_peak_bytes = sram.peak_bytes
    return o, t


def flash2_hbm_bytes(n, head_dim: int, sram_bytes: int, element_bytes: int = 2, causal: bool = False,
                     block_sizes: BlockSizes | None = None, write_logsumexp: bool = True) -> float:
    """HBM bytes :func:`tiled_attention_fa2` (FlashAttention-2 order) moves, in closed form.

    Read Q once (N·d); for every query block read the K_j, V_j it visits (2·d per key row: all N
    keys when not causal, so 2·N·d·⌈N/B_r⌉ in all); write O once (N·d) and, with
    ``write_logsumexp``, L once (N). Causal: query block i reads the key blocks that start at or
    before its last row, min(⌈r_end/B_c⌉·B_c, N) keys.
    """
    n = _whole_tokens(n)
    sizes = block_sizes or flash_block_sizes(sram_bytes, head_dim, element_bytes)
    br, bc, d = sizes.rows, sizes.cols, head_dim
    row_ends = np.minimum(np.arange(0, n, br, dtype=np.int64) + br, n)
    if causal:
        keys = np.minimum(-(-row_ends // bc) * bc, n)
    else:
        keys = np.full(row_ends.shape, n, dtype=np.int64)
    elements = 2 * n * d + 2 * d * int(keys.sum()) + (n if write_logsumexp else 0)
    return float(elements * element_bytes)


@dataclass(frozen=True)
class LayerAttentionBytes:
    """One attention layer of a model in prefill: the cost model's bytes beside a tiled kernel's.

    ``compulsory_bytes`` is what :mod:`roofline_lessons.core.costs` charges the fused attention operator:
    Q read and O written once per query head, K and V read once per KV head. ``fa2_bytes`` and
    ``fa1_bytes`` are what the two loop orders move if every tile came from HBM (no cache reuse),
    each query head streaming the K, V of its KV head.
    """

    n: int
    head_dim: int
    q_heads: int
    kv_heads: int
    causal: bool
    flops: float
    compulsory_bytes: float
    fa2_bytes: float
    fa1_bytes: float
    block_rows: int
    block_cols: int

    @property
    def compulsory_intensity_flop_per_byte(self) -> float:
        return self.flops / self.compulsory_bytes

    @property
    def fa2_intensity_flop_per_byte(self) -> float:
        return self.flops / self.fa2_bytes

    @property
    def fa1_intensity_flop_per_byte(self) -> float:
        return self.flops / self.fa1_bytes


def attention_layer_bytes(n, head_dim: int, q_heads: int, kv_heads: int, sram_bytes: int, element_bytes: int = 2,
                          causal: bool = True, batch: int = 1) -> LayerAttentionBytes:
    """FLOPs and bytes of one attention layer over a prompt of ``n`` tokens (``batch`` sequences).

    FLOPs as :func:`attention_flops` per query head (the cost model's count); bytes as the cost
    model charges them (compulsory) and as the tiled kernels move them with no cache reuse.
    """
    n = _whole_tokens(n)
    if q_heads < 1 or kv_heads < 1 or q_heads % kv_heads:
        from ..core.errors import RooflineInputError

        raise RooflineInputError(f"q_heads ({q_heads}) must be a positive multiple of kv_heads ({kv_heads})")
    sizes = flash_block_sizes(sram_bytes, head_dim, element_bytes)
    per_head_flops = float(attention_flops(n, head_dim, causal))
    compulsory = batch * (2 * q_heads + 2 * kv_heads) * n * head_dim * element_bytes
    fa2 = batch * q_heads * flash2_hbm_bytes(n, head_dim, sram_bytes, element_bytes, causal, sizes)
    fa1 = batch * q_heads * flash_hbm_bytes(n, head_dim, sram_bytes, element_bytes, causal, sizes)
    return LayerAttentionBytes(n, head_dim, q_heads, kv_heads, causal, batch * q_heads * per_head_flops,
                               float(compulsory), fa2, fa1, sizes.rows, sizes.cols)


#: Where :func:`fa3_forward_tiles` comes from: FlashAttention-3's Hopper launch code.
FA3_TILE_SOURCE = ("Dao-AILab/flash-attention: tile_size_fwd_sm90 in hopper/tile_size.h at commit 07602adc, "
                   "run_mha_fwd_ in hopper/flash_fwd_launch_template.h at commit 000090d0. The 2024 launch template "
                   "(copyright 2024, a run_mha_fwd_hdimNN function per head dim) already launched head dim 256 as "
                   "Flash_fwd_kernel_traits<256, 128, 80, 12, 2, false, !Is_causal ? 2 : 1>: 128 × 80 tiles and a "
                   "2-CTA cluster when not causal. That version is identified by this line of its text; its commit "
                   "is not recorded here")


def l2_bandwidth_figures(part="h100-sxm"):
    """The part's measured L2 bandwidths in the catalog, highest first (for the H100 SXM: the near-partition
    and the whole-L2 read figures of one article, both measured on an H100 PCIe). Raises if it has none."""
    from ..core.errors import RooflineInputError
    from ..core.hardware import get_part

    p = get_part(part)
    found = sorted(p.measurements("l2_bandwidth_bytes_per_s"), key=lambda m: m.value, reverse=True)
    if not found:
        raise RooflineInputError(f"the catalog has no measured L2 bandwidth for {p.id!r}")
    return tuple(found)


@dataclass(frozen=True)
class FA3Tiles:
    """The forward tile FlashAttention-3 launches on an H100 for 16-bit inputs (see :data:`FA3_TILE_SOURCE`)."""

    block_rows: int  #: kBlockM: query rows per thread block (CTA)
    block_cols: int  #: kBlockN: key/value rows per pipeline step
    cluster_ctas: int  #: ClusterM: thread blocks of a cluster that share each K/V tile by TMA multicast
    stages: int  #: K/V tiles in flight in shared memory (kStages)


def _positive_int(value, what: str) -> int:
    from ..core.errors import RooflineInputError

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RooflineInputError(f"{what} must be a whole number >= 1, got {value!r}")
    return int(value)


def fa3_forward_tiles(head_dim: int, causal: bool, seqlen_q: int, element_bytes: int = 2) -> FA3Tiles:
    """FlashAttention-3's forward tile on an H100 (SM90) for 16-bit Q, K, V with equal head dims, no
    sliding window, no paged KV, no softcap, no split, fixed lengths, one query head per KV head (no GQA
    packing) — the paper's benchmark setting.

    ``tile_size_fwd_sm90``: head dim ≤ 64 → 192 × (128 causal, else 192); ≤ 96 → 192 × 144;
    ≤ 128 → 128 × (128 causal, else 176); ≤ 192 → 128 × 112; ≤ 256 → 128 × 80 ("hits the limit of
    smem"). ``run_mha_fwd_`` launches a 2-CTA cluster (ClusterM = 2), whose blocks receive each K and V
    tile by one TMA multicast, when the inputs are 16-bit, head dim ≥ 128, not causal, and the number of
    query blocks ⌈seqlen_q / kBlockM⌉ is even; otherwise one CTA per cluster. Two pipeline stages.
    """
    from ..core.errors import RooflineInputError

    head_dim = _positive_int(head_dim, "head_dim")
    seqlen_q = _positive_int(seqlen_q, "seqlen_q")
    if element_bytes != 2:
        raise RooflineInputError(f"fa3_forward_tiles covers 16-bit inputs (element_bytes=2), got {element_bytes!r}")
    if head_dim > 256:
        raise RooflineInputError(f"FlashAttention-3's forward kernels go up to head_dim 256, got {head_dim}")
    if head_dim <= 64:
        rows, cols = 192, (128 if causal else 192)
    elif head_dim <= 96:
        rows, cols = 192, 144
    elif head_dim <= 128:
        rows, cols = 128, (128 if causal else 176)
    elif head_dim <= 192:
        rows, cols = 128, 112
    else:
        rows, cols = 128, 80
    cluster = 2 if (head_dim >= 128 and not causal and math.ceil(seqlen_q / rows) % 2 == 0) else 1
    return FA3Tiles(rows, cols, cluster, 2)


@dataclass(frozen=True)
class ClusterTileTraffic:
    """What one query block (one CTA) of a tiled forward kernel asks of the L2 cache, K/V multicast included.

    The CTA reads its Q tile once, streams the K and V of all ``keys`` keys, and writes its O tile and
    log-sum-exp once. With a cluster of ``multicast_ctas`` CTAs on neighbouring query blocks of the same
    head, each K and V tile is read from L2 once and delivered to every CTA of the cluster (TMA
    multicast), so each CTA's share of the K/V traffic is divided by ``multicast_ctas``. FLOPs are the
    two matmuls only (4·d per query–key pair), the count attention benchmarks report rates in.
    """

    block_rows: int
    block_cols: int
    head_dim: int
    keys: int
    element_bytes: int
    multicast_ctas: int
    stages: int
    flops: float  #: 4 · block_rows · keys · head_dim
    l2_bytes: float  #: Q read + O and log-sum-exp written + K and V streamed ÷ multicast_ctas
    kv_l2_bytes: float  #: the K and V part of ``l2_bytes``
    shared_memory_bytes: int  #: Q tile + stages × (K tile + V tile): the tiles FA3 keeps in shared memory

    @property
    def intensity_flop_per_byte(self) -> float:
        """FLOPs per byte moved between L2 and the SM."""
        return self.flops / self.l2_bytes

    def l2_roof_flop_per_s(self, l2_bytes_per_s: float) -> float:
        """The L2 slope at this intensity (before any compute peak caps it)."""
        return float(l2_bytes_per_s) * self.intensity_flop_per_byte


def cluster_tile_l2_traffic(block_rows: int, block_cols: int, head_dim: int, keys: int, element_bytes: int = 2,
                            multicast_ctas: int = 1, stages: int = 2,
                            lse_bytes_per_row: int = 4) -> ClusterTileTraffic:
    """L2-side FLOPs and bytes of one query block of ``block_rows`` rows against ``keys`` keys, tiles of
    ``block_cols`` key rows, K/V shared by ``multicast_ctas`` CTAs of a cluster (1: no multicast).

    Intensity = 4·B_r·N·d ÷ (2·B_r·d·b + B_r·lse + 2·N·d·b / C): about 2·B_r·C/b FLOP per byte for
    N ≫ B_r, so a 2-CTA multicast doubles it as a taller query block would. ``block_cols`` does not enter
    the steady-state bytes; it sets the shared memory the tiles need (``shared_memory_bytes``).
    The log-sum-exp is written in float32 (``lse_bytes_per_row`` = 4), as FlashAttention-3 does.
    """
    from ..core.errors import RooflineInputError

    br = _positive_int(block_rows, "block_rows")
    bc = _positive_int(block_cols, "block_cols")
    d = _positive_int(head_dim, "head_dim")
    n = _positive_int(keys, "keys")
    eb = _positive_int(element_bytes, "element_bytes")
    c = _positive_int(multicast_ctas, "multicast_ctas")
    st = _positive_int(stages, "stages")
    if isinstance(lse_bytes_per_row, bool) or not isinstance(lse_bytes_per_row, (int, np.integer)) \
            or lse_bytes_per_row < 0:
        raise RooflineInputError(f"lse_bytes_per_row must be a whole number >= 0, got {lse_bytes_per_row!r}")
    flops = 4.0 * br * n * d
    kv = 2.0 * n * d * eb / c
    l2 = 2.0 * br * d * eb + br * int(lse_bytes_per_row) + kv
    smem = br * d * eb + st * 2 * bc * d * eb
    return ClusterTileTraffic(br, bc, d, n, eb, c, st, flops, l2, kv, smem)


def comparative(value: float, reference: float, words: tuple[str, str, str] = ("higher than", "lower than",
                                                                                 "the same as"),
                rel_tol: float = 0.0) -> str:
    """The word a sentence needs for ``value`` against ``reference``, decided by the numbers.

    ``comparative(281, 295)`` → ``"lower than"``; ``words`` gives (more, less, equal), e.g.
    ``("above", "below", "at")``. Within ``rel_tol`` of each other the values count as equal.
    """
    if math.isclose(value, reference, rel_tol=rel_tol, abs_tol=0.0) or value == reference:
        return words[2]
    return words[0] if value > reference else words[1]


def standard_hbm_bytes(n, head_dim: int, element_bytes: int = 2):
    """Standard attention: read Q, K; write, read S; write, read P; read V; write O — 4·N·d + 4·N²."""
    n = np.asarray(n, dtype=float)
    return (4 * n * head_dim + 4 * n * n) * element_bytes


def compulsory_hbm_bytes(n, head_dim: int, element_bytes: int = 2):
    """The floor for any exact kernel that keeps nothing between calls: read Q, K, V, write O once."""
    return 4 * np.asarray(n, dtype=float) * head_dim * element_bytes


def attention_flops(n, head_dim: int, causal: bool = False):
    """FLOPs of one head's forward attention: Q·Kᵀ and P·V (2·d each per query–key pair) plus ~5
    per pair for the softmax; causal attention does about half the pairs."""
    n = np.asarray(n, dtype=float)
    pairs = n * (n + 1) / 2 if causal else n * n
    return pairs * (4 * head_dim + 5)


def attention_matmul_flops(n, head_dim: int, causal: bool = False):
    """FLOPs of the two matmuls only (Q·Kᵀ and P·V, 4·d per query–key pair), the count attention
    benchmarks such as FlashAttention-2/3's report rates in; :func:`attention_flops` adds the softmax."""
    n = np.asarray(n, dtype=float)
    pairs = n * (n + 1) / 2 if causal else n * n
    return pairs * 4 * head_dim


def decode_attention_intensity(q_heads_per_kv_head: int, context_tokens, head_dim: int = 128,
                               element_bytes: int = 2):
    """One decode token attending over the cache: FLOPs per byte of K and V read.

    Each KV head's keys and values are read once and used by every query head of its group, so
    the intensity is about the group size (bf16), whatever the tiling.
    """
    length = np.asarray(context_tokens, dtype=float) + 1
    flops = q_heads_per_kv_head * length * (4 * head_dim + 5)
    bytes_read = 2 * length * head_dim * element_bytes + 2 * q_heads_per_kv_head * head_dim * element_bytes
    return flops / bytes_read


# ---- the tile map and the byte counts in closed form, at any N (appended: the lesson 6 dashboard) --------


def tile_grid(n: int, rows: int, cols: int, max_cells: int):
    """The tiles of ``rows`` query × ``cols`` key rows over ``n`` tokens, grouped into at most ``max_cells``
    map cells a side: ``(T_r, T_c, query blocks per cell, key blocks per cell, each cell row's first and
    last query block, each cell column's first key block)``."""
    tr, tc = -(-n // rows), -(-n // cols)
    sr, sc = max(1, -(-tr // max_cells)), max(1, -(-tc // max_cells))
    r0 = np.arange(0, tr, sr, dtype=np.int64)
    r1 = np.minimum(r0 + sr, tr) - 1
    c0 = np.arange(0, tc, sc, dtype=np.int64)
    return tr, tc, sr, sc, r0, r1, c0


def tile_map(n: int, rows: int, cols: int, causal: bool, max_cells: int = 256, order: str = "fa1") -> np.ndarray:
    """Visiting order of the tiles, NaN for skipped ones, aggregated to at most ``max_cells`` per side so
    a picture stays readable (and cheap) at any N. ``order="fa1"``: outer loop over key blocks
    (Algorithm 1); ``"fa2"``: outer loop over query blocks (FlashAttention-2).

    Each cell stands for a square of tiles; it is visited if any of its tiles is, and its value is the
    rank of its first visited tile (key block j, query block i: ``j·T_r + i`` for Algorithm 1,
    ``i·T_c + j`` for FlashAttention-2). With one tile per cell this is the full tile grid. A causal
    kernel visits tile (i, j) when ``j·B_c`` ≤ the last row of query block i, so the first visited query
    block of key block j is ``⌊j·B_c / B_r⌋``: no loop over tiles at any N.
    """
    from ..core.errors import RooflineInputError

    if order not in ("fa1", "fa2"):
        raise RooflineInputError(f"order must be 'fa1' or 'fa2', got {order!r}")
    tr, tc, _, _, r0, r1, c0 = tile_grid(int(n), int(rows), int(cols), int(max_cells))
    if causal:
        first_row = np.maximum(r0[:, None], (c0[None, :] * cols) // rows)  # first visited query block per cell
        visited = first_row <= r1[:, None]
    else:
        first_row = np.broadcast_to(r0[:, None], (r0.size, c0.size))
        visited = np.ones((r0.size, c0.size), dtype=bool)
    rank = (c0[None, :] * tr + first_row) if order == "fa1" else (first_row * tc + c0[None, :])
    return np.where(visited, rank.astype(float), np.nan)


def visited_tiles(n: int, rows: int, cols: int, causal: bool) -> int:
    """How many (query block, key block) tiles a kernel computes: all ``T_r·T_c`` of them, or for a causal
    kernel, per query block the key blocks starting at or before its last row."""
    tr, tc = -(-n // rows), -(-n // cols)
    if not causal:
        return tr * tc
    row_end = np.minimum(np.arange(1, tr + 1, dtype=np.int64) * rows, n) - 1
    return int(np.minimum(row_end // cols + 1, tc).sum())


@dataclass(frozen=True)
class ClosedFormTiling:
    """One attention head's tiling in closed form: what the tile-by-tile simulations count, at any N."""

    sizes: BlockSizes  #: FlashAttention-1's block sizes, shrunk to fit (both loop orders use them)
    flops: float  #: the head's useful (unmasked) FLOPs
    #: HBM bytes of standard attention (N×N in HBM), Algorithm 1, the FlashAttention-2 order, and the
    #: compulsory floor (Q, K, V read, O written once)
    hbm_bytes: tuple[float, float, float, float]
    tiles_visited: int  #: (query block, key block) tiles computed


def closed_form_tiling(n: int, head_dim: int, sram_bytes: int, causal: bool,
                       element_bytes: int = 2) -> ClosedFormTiling:
    """Block sizes, FLOPs, the four HBM byte counts and the tiles visited for one head of ``n`` tokens
    (:func:`flash_hbm_bytes`, :func:`flash2_hbm_bytes`, equal to what :func:`tiled_attention` and
    :func:`tiled_attention_fa2` count); raises :class:`SRAMOverflowError` where not one tile fits."""
    sizes = flash_block_sizes(sram_bytes, head_dim, element_bytes)
    nbytes = (float(standard_hbm_bytes(n, head_dim, element_bytes)),
              flash_hbm_bytes(n, head_dim, sram_bytes, element_bytes, causal, sizes),
              flash2_hbm_bytes(n, head_dim, sram_bytes, element_bytes, causal, sizes),
              float(compulsory_hbm_bytes(n, head_dim, element_bytes)))
    return ClosedFormTiling(sizes, float(attention_flops(n, head_dim, causal)), nbytes,
                            visited_tiles(n, sizes.rows, sizes.cols, causal))
