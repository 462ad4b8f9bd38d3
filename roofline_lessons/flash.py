"""FlashAttention tiling in numpy: exact attention computed block by block with an online
softmax, counting every byte moved between "HBM" arrays and a bounded "SRAM" working set.

Follows Algorithm 1 of Dao et al. (2022): the outer loop walks key/value blocks K_j, V_j (loaded
once each); the inner loop walks query blocks and loads Q_i, O_i, ℓ_i, m_i, updates them on chip
and writes O_i, ℓ_i, m_i back. Block sizes start from the paper's B_c = ⌈M/4d⌉,
B_r = min(⌈M/4d⌉, d) (M in elements) and are shrunk, if rounding and the score block would
overflow, until the whole working set fits in M bytes; the simulated SRAM refuses to exceed M.

Theorem 2 of the paper: standard attention needs Θ(N·d + N²) HBM accesses, FlashAttention
Θ(N²·d²/M). :func:`flash_hbm_bytes` gives the exact count of this implementation in closed form.
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
    paper_rows: int  #: min(⌈M/4d⌉, d)
    paper_cols: int  #: ⌈M/4d⌉


def working_set_elements(rows: int, cols: int, d: int) -> int:
    """On-chip elements of one step: K_j, V_j, Q_i, O_i, the score block, and six row vectors."""
    return 2 * cols * d + 2 * rows * d + rows * cols + 6 * rows


def flash_block_sizes(sram_bytes: int, head_dim: int, element_bytes: int = 8) -> BlockSizes:
    """The paper's block sizes for an SRAM of ``sram_bytes``, shrunk until the working set fits."""
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


def tiled_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, sram_bytes: int, causal: bool = False,
                    block_sizes: BlockSizes | None = None) -> tuple[np.ndarray, Traffic]:
    """Exact attention, tile by tile, with an online softmax; returns (output, traffic).

    ``q``, ``k``, ``v`` (N × d, any float dtype) play the HBM arrays; every tile copied into the
    working set is counted as HBM reads, every tile written back as HBM writes, in the arrays'
    own element size. Raises :class:`SRAMOverflowError` if a tile would not fit.
    """
    n, d = q.shape
    eb = q.dtype.itemsize
    sizes = block_sizes or flash_block_sizes(sram_bytes, d, eb)
    sram = SRAM(sram_bytes)
    t = Traffic(block_rows=sizes.rows, block_cols=sizes.cols)
    scale = 1.0 / math.sqrt(d)
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


def flash_hbm_bytes(n, head_dim: int, sram_bytes: int, element_bytes: int = 2, causal: bool = False) -> float:
    """HBM bytes :func:`tiled_attention` moves, in closed form (works for large N without running it).

    Initialise O, ℓ, m (N·d + 2N); read every K_j, V_j once (2·N·d); for every visited tile read
    Q_i, O_i, ℓ_i, m_i and write back O_i, ℓ_i, m_i (3·B_r·d + 4·B_r per tile).
    """
    sizes = flash_block_sizes(sram_bytes, head_dim, element_bytes)
    n = int(n)
    br, bc, d = sizes.rows, sizes.cols, head_dim
    elements = n * d + 2 * n + 2 * n * d
    col_starts = np.arange(0, n, bc)
    row_starts = np.arange(0, n, br)
    row_sizes = np.minimum(row_starts + br, n) - row_starts
    if causal:
        # for key block starting at c0, query blocks whose last row ≥ c0 are visited
        row_ends = row_starts + row_sizes - 1
        visited_rows = np.array([row_sizes[row_ends >= c0].sum() for c0 in col_starts])
    else:
        visited_rows = np.full(col_starts.shape, n)
    elements += float((3 * d * visited_rows + 4 * visited_rows).sum())
    return float(elements * element_bytes)


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
