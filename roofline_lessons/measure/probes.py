"""Measure the machine in front of you: memory bandwidth across working-set sizes (so cache
plateaus and the DRAM floor show), matrix-multiply FLOP/s, and a set of kernels placed on the
measured roofline. Pure numpy: kernels write into preallocated ``out=`` arrays (no temporaries),
in blocks spread over the cores with threads (numpy releases the GIL inside its loops).

Every timing is the best of several runs; the spread (median and worst) is kept too. ``quick``
mode (small sizes, few repeats) is what the notebook and the tests use; ``full`` is for learners.

Small working sets are **amortised**: one numpy call walks a cache-sized array many times over (a
read-only or writeable view that repeats it with stride 0), so every timed call moves at least
``bytes_per_call`` bytes whatever the working set, and numpy's and the thread pool's fixed cost per
call is a small share of it. Without this, the smallest working sets measure call overhead, not
cache bandwidth, and the "L2" plateau comes out below the L3 one.

**What the bandwidth figures count, and what they are.** Bytes are counted STREAM's way: each array
the kernel touches is read or written once per pass (the triad a = b + c: 3 × 8 bytes per element).
On a CPU a store to a line that is not in cache first reads that line (write-allocate) unless the
code uses non-temporal stores, which numpy does not promise; the bus then carries 4 × 8 bytes per
triad element, so a roof counted STREAM's way understates the traffic by up to
:func:`write_allocate_factor` (4/3 for the triad). And every plateau is what *numpy* reached — one
library pass per call, threads from a Python pool, no tuning — not an optimised STREAM: read each one
as a lower bound on what that level of memory can deliver (:func:`dram_roof_check` compares a
read-only kernel against both counts).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np

from ..core.units import binary, percent
from ..topics.flash import (flash_block_sizes, flash_hbm_bytes, naive_attention, standard_hbm_bytes, tiled_attention,
                            working_set_elements)
from . import machine


def _block_elements() -> int:
    """float64 elements per block: three arrays' blocks for every thread fit in half the last-level
    cache, so a triad's second pass finds its block on chip — and blocks are large enough that
    numpy's per-call cost stays a few percent of a pass."""
    caches = machine.cache_sizes()
    llc = max(caches.values()) if caches else 8 * 2**20
    threads = os.cpu_count() or 1
    target = llc // (2 * 3 * 8 * threads)
    return int(min(max(1 << (max(target, 1).bit_length() - 1), 32 * 1024), 1 << 20))


BLOCK_ELEMENTS = _block_elements()

MODES = {
    "quick": {"max_working_set": 192 * 2**20, "min_working_set": 48 * 2**10, "repeats": 3, "min_time_s": 0.004,
              "bytes_per_call": 32 * 2**20,
              "matmul_sizes": (128, 256, 512, 1024), "gemm_k": 1024, "gemv_big": 4096, "attention_n": 256},
    "full": {"max_working_set": 3 * 2**30 // 2, "min_working_set": 24 * 2**10, "repeats": 7, "min_time_s": 0.05,
             "bytes_per_call": 256 * 2**20,
             "matmul_sizes": (256, 512, 1024, 2048, 3072), "gemm_k": 2048, "gemv_big": 8192,
             "attention_n": 1024},
}

#: lesson 8's attention experiment (float64): one head dimension, two simulated SRAM sizes, so that
#: M/d² (M in elements) is large for the first and small for the second — FlashAttention's
#: Theorem 2 says tiling saves HBM bytes only when M ≫ d²
ATTENTION_HEAD_DIM = 64
ATTENTION_SRAM_BYTES = (1 * 2**20, 64 * 2**10)

#: the smallest slice (float64 elements) worth handing to a thread of its own
MIN_ELEMENTS_PER_THREAD = 256


@dataclass(frozen=True)
class Timing:
    best_s: float
    median_s: float
    worst_s: float

    @property
    def spread(self) -> float:
        """(median − best) / best: how noisy the runs were."""
        return (self.median_s - self.best_s) / self.best_s

    @property
    def worst_spread(self) -> float:
        """(worst − best) / best: the slowest run against the best."""
        return (self.worst_s - self.best_s) / self.best_s


#: a spread (median or worst vs best) above this means the machine was busy while timing
NOISY_SPREAD = 0.2

#: a point at or above this fraction of its attainable roof is "near" it
NEAR_ROOF = 0.5


def largest_spread(timings) -> float:
    """The largest of (median − best)/best and (worst − best)/best over ``timings`` (0 when empty):
    above :data:`NOISY_SPREAD` the runs disagreed and the figures are noisy."""
    return max((max(t.spread, t.worst_spread) for t in timings), default=0.0)


@dataclass(frozen=True)
class BandwidthSample:
    kernel: str  #: read (a.sum()), copy (b = a) or triad (a = b + c: two streams in, one out)
    working_set_bytes: int  #: all arrays the kernel touches
    #: STREAM convention per pass (read N·8, copy 2·N·8, triad 3·N·8) × passes per call: no write-allocate
    #: read counted (see :func:`write_allocate_factor`)
    bytes_moved: int
    timing: Timing
    threads: int = 1  #: threads that shared the working set (each its own contiguous slice)
    passes: int = 1  #: passes over the working set inside one timed call (amortises per-call cost)

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_moved / self.timing.best_s


@dataclass(frozen=True)
class MatmulSample:
    dtype: str
    n: int
    flops: float
    timing: Timing

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.timing.best_s


@dataclass(frozen=True)
class KernelSample:
    name: str
    shape: str  #: what it is the shape of (batch-1 decode, prefill …)
    flops: float
    bytes_estimated: float  #: the bytes it must move at least (each operand once)
    timing: Timing

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes_estimated

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.timing.best_s


def time_call(fn: Callable[[], object], repeats: int = 5, min_time_s: float = 0.01) -> Timing:
    """Best, median and worst seconds per call of ``fn``; tiny calls are looped to reach ``min_time_s``."""
    fn()  # warm-up: page faults, caches, thread start
    inner = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time_s or inner >= 1 << 20:
            break
        inner *= 2 if elapsed > 0 else 16
    samples = [elapsed / inner]
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return Timing(min(samples), statistics.median(samples), max(samples))


class _Workers:
    """Split an index range over the cores; each worker processes cache-sized blocks."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads or os.cpu_count() or 1
        self.pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None

    def run(self, n: int, body: Callable[[int, int], None]) -> None:
        if self.pool is None or n < 4 * BLOCK_ELEMENTS:
            for start in range(0, n, BLOCK_ELEMENTS):
                body(start, min(start + BLOCK_ELEMENTS, n))
            return
        step = -(-n // self.threads)

        def part(lo: int) -> None:
            hi = min(lo + step, n)
            for start in range(lo, hi, BLOCK_ELEMENTS):
                body(start, min(start + BLOCK_ELEMENTS, hi))

        list(self.pool.map(part, range(0, n, step)))

    def slices(self, n: int) -> list[tuple[int, int]]:
        """One contiguous slice per thread (cache-line aligned), so each core keeps its own slice in
        its own private caches; fewer slices when ``n`` is too small to be worth splitting."""
        parts = max(1, min(self.threads, n // MIN_ELEMENTS_PER_THREAD))
        step = -(-n // parts)
        step = -(-step // 8) * 8  # 8 float64 = one 64-byte cache line
        return [(lo, min(lo + step, n)) for lo in range(0, n, step)]

    def each(self, parts: list[tuple[int, int]], body: Callable[[int, int], None]) -> None:
        """Run ``body(lo, hi)`` once per slice, the slices in parallel."""
        if self.pool is None or len(parts) == 1:
            for lo, hi in parts:
                body(lo, hi)
            return
        list(self.pool.map(lambda part: body(*part), parts))

    def close(self) -> None:
        if self.pool:
            self.pool.shutdown()


def _passes_view(x: np.ndarray, passes: int, writeable: bool = False) -> np.ndarray:
    """``x`` seen ``passes`` times over: a (passes, len(x)) view with stride 0 between rows, so one
    numpy call walks the same (cache-resident) memory ``passes`` times with no copy."""
    return np.lib.stride_tricks.as_strided(x, shape=(passes, x.size), strides=(0, x.strides[0]),
                                           writeable=writeable)


def passes_per_call(bytes_per_pass: int, bytes_per_call: int) -> int:
    """How many passes over a working set one timed call makes so that it moves at least
    ``bytes_per_call`` bytes (one pass when a single pass already does)."""
    return max(1, -(-int(bytes_per_call) // max(int(bytes_per_pass), 1)))


STREAM_ARRAYS = {"read": 1, "copy": 2, "triad": 3}  #: float64 arrays each kernel touches

#: float64 arrays each kernel writes. A store to a line that is not in cache first reads it
#: (write-allocate) unless the code uses non-temporal stores, so each written array can cross the
#: bus twice: once read, once written — a read the STREAM count leaves out
STREAM_WRITES = {"read": 0, "copy": 1, "triad": 1}


def write_allocate_factor(kernel: str = "triad") -> Fraction:
    """Bus bytes over STREAM-counted bytes when every written line is first read (write-allocate):
    (arrays + arrays written) ÷ arrays — 4/3 for the triad (counted: read b, read c, write a; on the
    bus: a is read as well), 3/2 for copy, 1 for read. A roof counted STREAM's way on a
    write-allocating CPU is low by this factor; with non-temporal stores it is exact."""
    if kernel not in STREAM_ARRAYS:
        raise ValueError(f"kernel must be one of {', '.join(STREAM_ARRAYS)}, got {kernel!r}")
    arrays = STREAM_ARRAYS[kernel]
    return Fraction(arrays + STREAM_WRITES[kernel], arrays)


def stream_kernels(n: int, workers: _Workers, passes: int = 1
                   ) -> dict[str, tuple[Callable[[], None], int, int]]:
    """read / copy / triad over arrays of ``n`` float64: (call, bytes moved per call, working set).

    Each thread works on its own contiguous slice; one call makes ``passes`` passes over it inside a
    single numpy call per thread (see :func:`_passes_view`), so bytes moved = passes × one pass."""
    a, b, c = np.full(n, 1.0), np.full(n, 2.0), np.full(n, 0.5)
    parts = workers.slices(n)
    partial = np.zeros(len(parts))
    index = {part: i for i, part in enumerate(parts)}

    def read() -> None:
        def body(lo, hi):
            partial[index[(lo, hi)]] = np.add.reduce(_passes_view(a[lo:hi], passes), axis=None)
        workers.each(parts, body)

    def copy() -> None:
        # a loop of 1-D copies, not one call over a repeated view: numpy copies a contiguous 1-D slice
        # with memcpy, but a stride-0 destination sends it down a slower element-by-element path
        def body(lo, hi):
            src, dst = a[lo:hi], b[lo:hi]
            for _ in range(passes):
                np.copyto(dst, src)
        workers.each(parts, body)

    def triad() -> None:
        # Triad-style: two streams in, one out, in a single numpy pass (a = b + c). STREAM's scale
        # factor (a = b + s·c) would cost numpy a second pass over `a`; in a bandwidth-bound kernel the
        # multiply is free, so dropping it changes no byte and keeps the probe honest.
        workers.each(parts, lambda lo, hi: np.add(_passes_view(b[lo:hi], passes), _passes_view(c[lo:hi], passes),
                                                  out=_passes_view(a[lo:hi], passes, True)))

    triad.arrays = (a, b, c)  # for tests: the kernel's output can be inspected
    read.partial = partial
    eb = 8
    return {name: (fn, passes * k * n * eb, k * n * eb)
            for name, fn, k in (("read", read, 1), ("copy", copy, 2), ("triad", triad, 3))}


def working_set_sizes(mode: str = "quick", caches: dict[str, int] | None = None, threads: int = 1) -> list[int]:
    """Total working sets (bytes) from above L1 to well past the last-level cache, ×2 apart.

    With ``caches`` given, sizes whose share per thread is under twice L1 are left out: such a slice
    is partly served by L1, and its rows are so short that numpy's fixed cost per row and per call
    shows (:func:`l1_attempt` measures what an L1-sized slice gives)."""
    cfg = MODES[mode]
    l1 = (caches or {}).get("L1")
    sizes, s = [], cfg["min_working_set"]
    while s <= cfg["max_working_set"]:
        if not l1 or s / max(threads, 1) > 2 * l1:
            sizes.append(int(s))
        s *= 2
    return sizes


def _bandwidth_sample(name: str, ws: int, workers: _Workers, cfg: dict) -> BandwidthSample:
    n = max(ws // (8 * STREAM_ARRAYS[name]), 1)
    passes = passes_per_call(STREAM_ARRAYS[name] * n * 8, cfg["bytes_per_call"])
    call, moved, touched = stream_kernels(n, workers, passes)[name]
    return BandwidthSample(name, touched, moved, time_call(call, cfg["repeats"], cfg["min_time_s"]),
                           threads=len(workers.slices(n)), passes=passes)


def bandwidth_sweep(mode: str = "quick", kernels=("read", "copy", "triad"), threads: int | None = None
                    ) -> list[BandwidthSample]:
    """Achieved bytes/s of each kernel at every working-set size, every call amortised over at
    least ``MODES[mode]["bytes_per_call"]`` bytes."""
    cfg = MODES[mode]
    workers = _Workers(threads)
    out = []
    try:
        for ws in working_set_sizes(mode, machine.cache_sizes(), workers.threads):
            for name in kernels:
                out.append(_bandwidth_sample(name, ws, workers, cfg))
    finally:
        workers.close()
    return out


def l1_attempt(mode: str = "quick", threads: int | None = None) -> BandwidthSample | None:
    """The triad with each thread's slice half the size of L1, amortised like the sweep: what an
    "L1 roof" measured from numpy looks like (None when the OS reports no L1)."""
    l1 = machine.cache_sizes().get("L1")
    if not l1:
        return None
    workers = _Workers(threads)
    try:
        return _bandwidth_sample("triad", workers.threads * l1 // 2, workers, MODES[mode])
    finally:
        workers.close()


def matmul_sweep(mode: str = "quick", dtypes=("float64", "float32")) -> list[MatmulSample]:
    """FLOP/s of n×n matrix multiply (into a preallocated output) at growing n, per dtype."""
    cfg = MODES[mode]
    rng = np.random.default_rng(0)
    out = []
    for dt in dtypes:
        for n in cfg["matmul_sizes"]:
            a, b = rng.standard_normal((n, n)).astype(dt), rng.standard_normal((n, n)).astype(dt)
            c = np.empty((n, n), dtype=dt)
            t = time_call(lambda: np.matmul(a, b, out=c), cfg["repeats"], cfg["min_time_s"])
            out.append(MatmulSample(dt, n, 2.0 * n ** 3, t))
    return out


def kernel_samples(mode: str = "quick", threads: int | None = None) -> list[KernelSample]:
    """dot, axpy, matrix–vector, matrix–matrix at several batch sizes, naive vs tiled attention."""
    cfg = MODES[mode]
    rng = np.random.default_rng(1)
    reps, tmin = cfg["repeats"], cfg["min_time_s"]
    out = []
    n = 8 * 2**20  # 64 MiB per float64 vector: past the caches of most machines
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    out.append(KernelSample("dot", "a reduction", 2.0 * n, 16.0 * n, time_call(lambda: np.dot(x, y), reps, tmin)))
    workers = _Workers(threads)
    scratch = np.empty(n)
    alpha = 0.5

    def axpy() -> None:
        def body(lo, hi):
            np.multiply(x[lo:hi], alpha, out=scratch[lo:hi])
            np.add(y[lo:hi], scratch[lo:hi], out=y[lo:hi])
        workers.run(n, body)

    out.append(KernelSample("axpy", "an elementwise update", 2.0 * n, 24.0 * n, time_call(axpy, reps, tmin)))
    workers.close()
    big = cfg["gemv_big"]
    w_big, v_big, y_big = rng.standard_normal((big, big)), rng.standard_normal(big), np.empty(big)
    out.append(KernelSample(f"gemv {big}×{big}", "matrix–vector, matrix past the caches: batch-1 decode",
                            2.0 * big * big, 8.0 * (big * big + 2 * big),
                            time_call(lambda: np.matmul(w_big, v_big, out=y_big), reps, tmin)))
    w_big = None  # free 128 MiB before the next kernels
    k = cfg["gemm_k"]
    w = rng.standard_normal((k, k))
    for rows in (1, 4, 16, 64, 256, k):
        a = rng.standard_normal((rows, k))
        c = np.empty((rows, k))
        flops = 2.0 * rows * k * k
        nbytes = 8.0 * (rows * k + k * k + rows * k)
        shape = ("matrix–vector, matrix fits in cache" if rows == 1 else
                 f"matrix–matrix, {rows} rows: " + ("prefill" if rows == k else f"batch-{rows} decode"))
        out.append(KernelSample(f"gemv {k}×{k}" if rows == 1 else f"gemm {rows}×{k}×{k}", shape, flops, nbytes,
                                time_call(lambda: np.matmul(a, w, out=c), reps, tmin)))
    na, d = cfg["attention_n"], ATTENTION_HEAD_DIM
    q, kk, v = (rng.standard_normal((na, d)) for _ in range(3))
    flops = 4.0 * na * na * d
    out.append(KernelSample("attention, naive", f"N={na}, d={d}", flops, float(standard_hbm_bytes(na, d, 8)),
                            time_call(lambda: naive_attention(q, kk, v), reps, tmin)))
    for sram in ATTENTION_SRAM_BYTES:
        ratio = m_over_d_squared(sram, d, 8)
        out.append(KernelSample(f"attention, tiled, M/d² = {ratio:g}", f"N={na}, d={d}, SRAM {binary(sram)}", flops,
                                flash_hbm_bytes(na, d, sram, 8),
                                time_call(lambda: tiled_attention(q, kk, v, sram), reps, tmin)))
    return out


def attention_tiles(n: int, head_dim: int, sram_bytes: int, element_bytes: int = 8) -> int:
    """(query block, key block) tiles the non-causal tiled kernel visits: one Python loop step each."""
    sizes = flash_block_sizes(sram_bytes, head_dim, element_bytes)
    return -(-int(n) // sizes.rows) * -(-int(n) // sizes.cols)


def roof_fraction(flops_per_s: float, intensity: float, peak_flops_per_s: float, bytes_per_s: float) -> float:
    """Achieved FLOP/s over the attainable rate min(peak, bandwidth × intensity) at that intensity."""
    return float(flops_per_s) / min(float(peak_flops_per_s), float(bytes_per_s) * float(intensity))


def break_even_m_over_d_squared(n: int, head_dim: int, element_bytes: int = 8,
                                tiled_bytes: Callable = flash_hbm_bytes) -> float:
    """The smallest M/d² (M the SRAM in elements, a whole number) at which the tiled kernel's HBM
    bytes (``tiled_bytes``, Algorithm 1 order by default) are no more than standard attention's, for
    this N and d; ``inf`` if no SRAM up to one that holds all of K and V gets there. The tiled count
    only falls as the SRAM grows (larger blocks, fewer re-reads), so a bisection finds it."""
    naive = float(standard_hbm_bytes(n, head_dim, element_bytes))

    def saves(elements: int) -> bool:
        return tiled_bytes(n, head_dim, elements * element_bytes, element_bytes) <= naive

    lo = working_set_elements(1, 1, head_dim)  # the smallest SRAM that holds 1×1 tiles
    if saves(lo):
        return lo / head_dim ** 2
    hi = lo
    limit = working_set_elements(head_dim, int(n), head_dim) * 4
    while not saves(hi):
        if hi > limit:
            return float("inf")
        hi *= 2
    while hi - lo > 1:  # saves(hi) and not saves(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if saves(mid) else (mid, hi)
    return hi / head_dim ** 2


def m_over_d_squared(sram_bytes: int, head_dim: int, element_bytes: int = 8) -> float:
    """M/d², M the SRAM size in elements: Theorem 2 of Dao et al. (2022) counts Θ(N·d + N²) HBM
    accesses for standard attention and Θ(N²·d²/M) for the tiled kernel, so tiling saves bytes
    when M/d² is large and can lose when it is a small number."""
    return sram_bytes / element_bytes / head_dim ** 2


def tensor_instruction_flops(instructions: float, m: int, n: int, k: int) -> float:
    """FLOPs of ``instructions`` warp-level matrix-multiply-accumulate (tensor-pipe) instructions of
    shape m×n×k: each one is m·n·k multiply-adds, 2·m·n·k FLOPs — not 2 per instruction."""
    return float(instructions) * 2.0 * m * n * k


def fp_pipe_flops(fma: float, add: float = 0.0, mul: float = 0.0) -> float:
    """FLOPs from per-thread floating-point instruction counts: 2 per FMA, 1 per add or multiply."""
    return 2.0 * float(fma) + float(add) + float(mul)


def limiting_roof(peak_flops_per_s: float, levels: dict[str, tuple[float, float]]) -> tuple[str, float]:
    """Hierarchical roofline: ``levels`` maps a memory level to (bytes/s, FLOP per byte moved at that
    level). The attainable rate is the lowest of the compute peak and every level's bandwidth ×
    intensity; returns (what limits — a level's name or "compute" —, attainable FLOP/s)."""
    best = ("compute", float(peak_flops_per_s))
    for name, (bytes_per_s, intensity) in levels.items():
        rate = float(bytes_per_s) * float(intensity)
        if rate < best[1]:
            best = (name, rate)
    return best


@dataclass(frozen=True)
class Roof:
    name: str
    bytes_per_s: float | None = None
    flops_per_s: float | None = None


def cache_capacity_bytes(level: str, caches: dict[str, int], threads: int = 1,
                         shared_cpus: dict[str, int] | None = None) -> int:
    """Bytes of ``level`` that ``threads`` threads (one per core) can fill together: a private cache
    (one per core) counts once per thread, a shared one once per group of cores sharing it. Without
    sharing information the last level is taken as shared by all, the others as private."""
    size = int(caches[level])
    if shared_cpus and level in shared_cpus:
        sharing = max(int(shared_cpus[level]), 1)
    else:
        sharing = threads if size == max(caches.values()) else 1
    return size * max(1, -(-threads // sharing))


def bandwidth_plateaus(samples: list[BandwidthSample], caches: dict[str, int], kernel: str = "triad",
                       shared_cpus: dict[str, int] | None = None) -> list[Roof]:
    """Secondary roofs from the sweep: the best bandwidth whose working set fits each cache level
    (at most half of it, and more than the level below holds), and the DRAM floor (median over
    working sets ≥ 4 × the last-level cache, or the largest sizes). Capacities count a private
    cache once per thread that ran (:func:`cache_capacity_bytes`)."""
    pts = sorted((s for s in samples if s.kernel == kernel), key=lambda s: s.working_set_bytes)
    if not pts:
        return []
    threads = max(s.threads for s in pts)
    roofs, lower = [], 0
    for level in sorted(caches):
        size = cache_capacity_bytes(level, caches, threads, shared_cpus)
        inside = [s.bytes_per_s for s in pts if lower < s.working_set_bytes <= size // 2]
        if inside:
            roofs.append(Roof(level, bytes_per_s=max(inside)))
        lower = size
    llc = max(cache_capacity_bytes(level, caches, threads, shared_cpus) for level in caches) if caches else 0
    big = [s.bytes_per_s for s in pts if llc and s.working_set_bytes >= 4 * llc] or [s.bytes_per_s for s in pts[-2:]]
    roofs.append(Roof("DRAM", bytes_per_s=statistics.median(big)))
    return roofs


def feeding_roof(working_set_bytes: float, roofs: list[Roof], caches: dict[str, int], threads: int = 1,
                 shared_cpus: dict[str, int] | None = None) -> Roof:
    """The bandwidth roof that feeds a kernel called again and again on the same ``working_set_bytes``:
    the smallest cache level with a measured roof (in ``roofs``) whose capacity for ``threads`` threads
    (:func:`cache_capacity_bytes`) holds the whole working set — its data can stay there between calls —,
    else the DRAM roof. A level without a measured roof (L1, usually) is skipped: the next level up that
    has one is the highest roof this measurement can vouch for."""
    try:
        ws = float(working_set_bytes)
    except (TypeError, ValueError):
        raise ValueError(f"working_set_bytes must be a number of bytes, got {working_set_bytes!r}") from None
    if not math.isfinite(ws) or ws <= 0:
        raise ValueError(f"working_set_bytes must be a positive number of bytes, got {working_set_bytes!r}")
    measured = {r.name: r for r in roofs}
    if "DRAM" not in measured:
        raise ValueError(f"no DRAM roof among the roofs given ({', '.join(measured) or 'none'})")
    for level in sorted(caches, key=lambda name: int(caches[name])):
        if level in measured and ws <= cache_capacity_bytes(level, caches, threads, shared_cpus):
            return measured[level]
    return measured["DRAM"]


#: :attr:`DramRoofCheck.verdict` when a read-only kernel beat the triad roof from DRAM, both counts
READ_BEATS_TRIAD = "read-only traffic beats the triad roof"

#: every verdict :class:`DramRoofCheck` gives
DRAM_VERDICTS = ("under the roof", "a cache may feed it", "within the write-allocate gap", READ_BEATS_TRIAD)


@dataclass(frozen=True)
class DramRoofCheck:
    """A read-only kernel (no store, so no write-allocate: its byte count is its bus traffic) against
    the DRAM roof counted both ways. Build it with :func:`dram_roof_check`."""

    kernel: str
    working_set_bytes: float  #: what the kernel reads per call
    last_level_cache_bytes: int | None  #: the largest cache the machine reports (None: unknown)
    best_bytes_per_s: float  #: bytes read over the best run's time
    median_bytes_per_s: float  #: bytes read over the median run's time
    stream_roof_bytes_per_s: float  #: the triad's DRAM plateau, counted STREAM's way
    write_allocate_roof_bytes_per_s: float  #: the same plateau with the write-allocate read counted

    @property
    def fits_in_cache(self) -> bool:
        """True when the reported last-level cache could hold the whole working set."""
        return self.last_level_cache_bytes is not None and self.working_set_bytes <= self.last_level_cache_bytes

    def _verdict(self, bytes_per_s: float) -> str:
        if bytes_per_s <= self.stream_roof_bytes_per_s:
            return "under the roof"
        if self.fits_in_cache:
            return "a cache may feed it"
        if bytes_per_s <= self.write_allocate_roof_bytes_per_s:
            return "within the write-allocate gap"
        return READ_BEATS_TRIAD

    @property
    def verdict(self) -> str:
        """What the best run says about the roof, from its numbers (:data:`DRAM_VERDICTS`):

        - ``"under the roof"``: at or below the STREAM-counted roof — nothing to explain;
        - ``"a cache may feed it"``: above it, but the reported last-level cache holds the working set;
        - ``"within the write-allocate gap"``: above the STREAM count, at or below the write-allocate
          count: the counting convention alone can explain it;
        - ``"read-only traffic beats the triad roof"``: above both counts while reading more than the
          reported caches hold: DRAM delivered more to this read-only kernel than the numpy triad's
          plateau says — the triad roof understates what the memory delivers to read-only traffic. That
          alone does not say numpy ran the triad badly: a stream of reads alone commonly runs faster
          than mixed reads and writes even in tuned code (the bus turns around between the two).

        The best run says what the memory delivered at least once; :attr:`median_verdict` says the same
        of the median run. Where they differ, the claim rests on the fastest run alone."""
        return self._verdict(self.best_bytes_per_s)

    @property
    def median_verdict(self) -> str:
        """:attr:`verdict`'s rule applied to the median run."""
        return self._verdict(self.median_bytes_per_s)


def dram_roof_check(measurement: "Measurement", kernel: str = "dot") -> DramRoofCheck:
    """``kernel`` (a read-only one from ``measurement.kernels``; ``dot`` reads two vectors and stores
    nothing) against the DRAM roof counted STREAM's way and with write-allocate."""
    sample = next((k for k in measurement.kernels if k.name == kernel), None)
    if sample is None:
        raise ValueError(f"no kernel named {kernel!r} in this measurement (has: "
                         f"{', '.join(k.name for k in measurement.kernels) or 'none'})")
    caches = {k: int(v) for k, v in measurement.machine.get("caches", {}).items()}
    return DramRoofCheck(kernel=kernel, working_set_bytes=float(sample.bytes_estimated),
                         last_level_cache_bytes=max(caches.values()) if caches else None,
                         best_bytes_per_s=sample.bytes_estimated / sample.timing.best_s,
                         median_bytes_per_s=sample.bytes_estimated / sample.timing.median_s,
                         stream_roof_bytes_per_s=measurement.dram_bytes_per_s(),
                         write_allocate_roof_bytes_per_s=measurement.dram_bytes_per_s(write_allocate=True))


#: a step smaller than this fraction counts as level when :func:`trend` names a sequence's shape
TREND_TOLERANCE = 0.05

TREND_SHAPES = ("flat", "rises", "plateaus", "falls", "bottoms out", "peaks", "dips", "up and down")


@dataclass(frozen=True)
class Trend:
    """The shape of a measured sequence (see :func:`trend`)."""

    shape: str  #: one of :data:`TREND_SHAPES`
    peak: int  #: index of the largest value (the first, if tied)
    low: int  #: index of the smallest value (the first, if tied)
    strict: bool  #: every step goes the shape's way (for "flat" and "up and down": False)
    tolerance: float
    #: "plateaus" / "bottoms out": the index from which the values stay level to the end (None otherwise)
    level_from: int | None = None


def _positive_values(values) -> list[float]:
    out = []
    for v in values:
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"trend needs positive numbers, got {v!r}") from None
        if not math.isfinite(x) or x <= 0:
            raise ValueError(f"trend needs positive finite numbers, got {v!r}")
        out.append(x)
    if len(out) < 2:
        raise ValueError(f"trend needs at least two values, got {len(out)}")
    return out


def _never_falls(v: list[float], tol: float) -> bool:
    """No value is below an earlier one by more than ``tol`` (earlier ÷ later − 1 ≤ tol)."""
    top = v[0]
    for x in v:
        top = max(top, x)
        if top > x * (1 + tol):
            return False
    return True


def _never_rises(v: list[float], tol: float) -> bool:
    return _never_falls([1 / x for x in v], tol)


def _is_level(v: list[float], tol: float) -> bool:
    return max(v) <= min(v) * (1 + tol)


def _level_tail(v: list[float], tol: float) -> int | None:
    """The first index of a level stretch that ends the sequence: at least two values, all within ``tol``
    of each other, entered by a step larger than ``tol`` (so a slow drift of small steps, each inside the
    tolerance, is not taken for a stop). None when there is no such stretch."""
    n = len(v)
    if not _is_level(v[-2:], tol):
        return None
    k = n - 2
    while k > 0 and _is_level(v[k - 1:], tol):
        k -= 1
    if k == 0 or _is_level(v[k - 1:k + 1], tol):
        return None
    return k


def trend(values, tolerance: float = TREND_TOLERANCE) -> Trend:
    """Name the shape of a sequence of positive measurements, taken in order. A change counts when
    the larger value exceeds the smaller by more than ``tolerance`` (a fraction); measured in that
    way, the shape is

    - ``"flat"``: the largest is within ``tolerance`` of the smallest;
    - ``"rises"``: no value falls below an earlier one by more than ``tolerance``, and the last is
      above the first by more than it (``"falls"``: the mirror image);
    - ``"plateaus"``: it rises (as above), then takes a step up larger than ``tolerance`` into a stretch
      of at least two values, to the end, that stay level (within ``tolerance``) — ``level_from`` is
      where that stretch starts — so a sequence that climbs and then stops climbing is not called a
      rise, while a slow drift of small steps still is (``"bottoms out"``: the mirror image of a fall
      that stops falling);
    - ``"peaks"``: the largest is inside, the values up to it never fall and those after it never
      rise (within ``tolerance``), and it stands above both ends by more than ``tolerance``
      (``"dips"``: the mirror image around the smallest);
    - ``"up and down"``: anything else — no single word describes it.

    Comparing against every earlier value, not only the previous one, keeps a slow drift of small
    steps from passing as level."""
    v = _positive_values(values)
    tol = float(tolerance)
    if not math.isfinite(tol) or tol < 0:
        raise ValueError(f"tolerance must be a fraction ≥ 0, got {tolerance!r}")
    n = len(v)
    hi, lo = v.index(max(v)), v.index(min(v))
    steps_up = [b > a for a, b in zip(v, v[1:])]
    steps_down = [b < a for a, b in zip(v, v[1:])]
    if _is_level(v, tol):
        return Trend("flat", hi, lo, False, tol)
    if _never_falls(v, tol) and v[-1] > v[0] * (1 + tol):
        k = _level_tail(v, tol)
        if k is not None:
            return Trend("plateaus", hi, lo, all(steps_up[:k]), tol, k)
        return Trend("rises", hi, lo, all(steps_up), tol)
    if _never_rises(v, tol) and v[0] > v[-1] * (1 + tol):
        k = _level_tail(v, tol)
        if k is not None:
            return Trend("bottoms out", hi, lo, all(steps_down[:k]), tol, k)
        return Trend("falls", hi, lo, all(steps_down), tol)
    if (0 < hi < n - 1 and _never_falls(v[:hi + 1], tol) and _never_rises(v[hi:], tol)
            and v[hi] > v[0] * (1 + tol) and v[hi] > v[-1] * (1 + tol)):
        return Trend("peaks", hi, lo, all(steps_up[:hi]) and all(steps_down[hi:]), tol)
    if (0 < lo < n - 1 and _never_rises(v[:lo + 1], tol) and _never_falls(v[lo:], tol)
            and v[lo] * (1 + tol) < v[0] and v[lo] * (1 + tol) < v[-1]):
        return Trend("dips", hi, lo, all(steps_down[:lo]) and all(steps_up[lo:]), tol)
    return Trend("up and down", hi, lo, False, tol)


def trend_words(labels, values, show: Callable[[float], str] = lambda x: f"{x:,.3g}",
                tolerance: float = TREND_TOLERANCE) -> str:
    """A phrase (no leading subject) saying how ``values`` change over ``labels`` — "rises from 1 at
    4 rows to 9 at 64 rows" — every word chosen by :func:`trend` and every number formatted by
    ``show``. Where a step went against the named shape by less than the tolerance, it says so."""
    v = _positive_values(values)
    labels = list(labels)
    if len(labels) != len(v):
        raise ValueError(f"need one label per value: {len(labels)} labels for {len(v)} values")
    t = trend(v, tolerance)
    at = lambda i: f"{show(v[i])} at {labels[i]}"  # noqa: E731
    within = "" if t.strict else f" (no step the other way larger than {percent(t.tolerance, 0)})"
    if t.shape == "flat":
        return (f"stays within {percent(t.tolerance, 0)}: between {show(v[t.low])} and {show(v[t.peak])}, from "
                f"{at(0)} to {at(-1)}")
    if t.shape in ("rises", "falls"):
        return f"{t.shape} from {at(0)} to {at(-1)}{within}"
    if t.shape in ("plateaus", "bottoms out"):
        k = t.level_from
        return (f"{'rises' if t.shape == 'plateaus' else 'falls'} from {at(0)} to {at(k)}{within}, then stays "
                f"level (within {percent(t.tolerance, 0)}) up to {at(-1)}")
    if t.shape == "peaks":
        return f"rises from {at(0)} to a peak of {at(t.peak)}, then falls to {at(-1)}{within}"
    if t.shape == "dips":
        return f"falls from {at(0)} to a low of {at(t.low)}, then rises to {at(-1)}{within}"
    inside = [f"{word} {at(i)}" for word, i in (("lowest", t.low), ("highest", t.peak)) if 0 < i < len(v) - 1]
    return f"goes up and down, with no single direction: from {at(0)} to {at(-1)}" + "".join(f", {x}" for x in inside)


def roofline_top_index(attainable) -> int:
    """Where a roofline's attainable rates (one per point, in order of intensity) reach their top and
    stay there: the first index holding the largest value, every later one equal to it. Raises if the
    rates ever fall — one roofline, read at growing intensity, never does."""
    a = _positive_values(attainable)
    if any(y < x for x, y in zip(a, a[1:])):
        raise ValueError(f"a roofline's attainable rate never falls as the intensity grows, got {a}")
    top = a[-1]
    return next(i for i, x in enumerate(a) if x == top)


def shape_against_roofline(labels, measured, attainable, show: Callable[[float], str] = lambda x: f"{x:,.3g}",
                           tolerance: float = TREND_TOLERANCE) -> tuple[str, bool]:
    """Compare a measured sequence with the roofline's attainable rates at the same points, part by part:
    where the roofline still rises (up to :func:`roofline_top_index`) and where it is flat (from there
    on). The roofline predicts the measured rate should rise in the first part and stay level in the
    second; each part gets its own sentence, every word chosen by :func:`trend`. Returns (the sentences,
    whether both parts agree with the roofline)."""
    v = _positive_values(measured)
    labels = list(labels)
    if len(labels) != len(v):
        raise ValueError(f"need one label per value: {len(labels)} labels for {len(v)} values")
    if len(_positive_values(attainable)) != len(v):
        raise ValueError(f"need one attainable rate per measured value: {len(list(attainable))} for {len(v)}")
    top = roofline_top_index(attainable)
    n, parts, agree = len(v), [], True
    if top >= 1:
        seg, words = v[:top + 1], trend_words(labels[:top + 1], v[:top + 1], show, tolerance)
        shape = trend(seg, tolerance).shape
        head = f"up to {labels[top]}, where the roofline still rises, the measured rate"
        if shape in ("rises", "plateaus"):
            parts.append(f"{head} rises too: it {words}")
        elif shape == "flat":
            agree = False
            parts.append(f"{head} does not rise: it {words} — more reuse per byte did not make these faster")
        else:
            agree = False
            parts.append(f"{head} {words}, which a rising roofline does not predict")
    if top <= n - 2:
        seg, words = v[top:], trend_words(labels[top:], v[top:], show, tolerance)
        shape = trend(seg, tolerance).shape
        head = (f"from {labels[top]} on, where the roofline is flat, the measured rate" if top >= 1 else
                "the roofline is flat over all of them, and the measured rate")
        if shape == "flat":
            parts.append(f"{head} is level too: it {words}")
        elif shape in ("rises", "plateaus"):
            agree = False
            parts.append(f"{head} still rises: it {words} — the smaller of these run further under the roof "
                         "than the larger ones")
        else:
            agree = False
            parts.append(f"{head} {words}, which a flat roofline does not predict")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + ".", agree


def is_monotone(roofs: list[Roof]) -> bool:
    """True when every bandwidth roof is at least the one below it (L1 ≥ L2 ≥ … ≥ DRAM)."""
    rates = [r.bytes_per_s for r in roofs if r.bytes_per_s is not None]
    return all(a >= b for a, b in zip(rates, rates[1:]))


#: the kernels :meth:`Measurement.peak_flops_per_s` counts as matrix multiplies: ``kernel_samples``'s
#: "gemm rows×k×k" products, float64 ``np.matmul`` like the sweep's
MATMUL_KERNEL_PREFIX = "gemm "
MATMUL_KERNEL_DTYPE = "float64"


@dataclass
class Measurement:
    """Everything measured on one machine, JSON-ready (see :mod:`roofline_lessons.measure.results`)."""

    machine: dict
    mode: str
    created: str
    bandwidth: list[BandwidthSample] = field(default_factory=list)
    matmul: list[MatmulSample] = field(default_factory=list)
    kernels: list[KernelSample] = field(default_factory=list)
    gpu: dict | None = None

    def _matmul_rates(self, dtype: str) -> list[tuple[str, float]]:
        """(what, FLOP/s) of every matrix multiply measured in ``dtype``: the sweep's square ones and, in
        float64, the kernels' matrix–matrix products (the same ``np.matmul``, other shapes)."""
        rates = [(f"{m.dtype} matmul, n = {m.n}", m.flops_per_s) for m in self.matmul if m.dtype == dtype]
        if not rates:
            raise ValueError(f"no {dtype} matmul in this measurement (has: {sorted({m.dtype for m in self.matmul})})")
        if dtype == MATMUL_KERNEL_DTYPE:
            rates += [(k.name, k.flops_per_s) for k in self.kernels if k.name.startswith(MATMUL_KERNEL_PREFIX)]
        return rates

    def peak_flops_per_s(self, dtype: str = "float64") -> float:
        """The compute roof: the best matrix-multiply rate measured in ``dtype`` — over the sweep and, in
        float64, the matrix–matrix kernels too, so no matmul measured here sits above the roof (a kernel
        that times the same product as the sweep again and runs faster moves the roof up, not past it)."""
        return max(rate for _, rate in self._matmul_rates(dtype))

    def peak_source(self, dtype: str = "float64") -> str:
        """Which timing set :meth:`peak_flops_per_s`: "float64 matmul, n = 1024" or a kernel's name."""
        return max(self._matmul_rates(dtype), key=lambda x: x[1])[0]

    def feeding_roof(self, working_set_bytes: float) -> Roof:
        """The bandwidth roof that feeds a kernel called again and again on ``working_set_bytes`` (see
        :func:`feeding_roof`; cache capacities for the threads the bandwidth sweep ran on)."""
        threads = max((s.threads for s in self.bandwidth), default=1)
        caches = {k: int(v) for k, v in self.machine.get("caches", {}).items()}
        return feeding_roof(working_set_bytes, self.roofs(), caches, threads, self.machine.get("cache_shared_cpus"))

    def roofs(self) -> list[Roof]:
        """Bandwidth roofs (cache levels, DRAM) from the triad sweep."""
        return bandwidth_plateaus(self.bandwidth, {k: int(v) for k, v in self.machine.get("caches", {}).items()},
                                  shared_cpus=self.machine.get("cache_shared_cpus"))

    def dram_bytes_per_s(self, write_allocate: bool = False) -> float:
        """The DRAM roof: the triad's plateau past the last-level cache, its bytes counted STREAM's way
        (3 × 8 per element) — or, with ``write_allocate``, as a write-allocating CPU moves them (× the
        triad's :func:`write_allocate_factor`, 4/3). Either way it is what numpy's triad reached: a
        lower bound on what the memory can deliver, not the memory's peak."""
        stream = next(r.bytes_per_s for r in self.roofs() if r.name == "DRAM")
        return float(stream * write_allocate_factor("triad")) if write_allocate else stream

    def ridge_point_flop_per_byte(self, dtype: str = "float64") -> float:
        return self.peak_flops_per_s(dtype) / self.dram_bytes_per_s()

    def to_dict(self) -> dict:
        return asdict(self)


def measure(mode: str = "quick", threads: int | None = None, gpu: bool = True) -> Measurement:
    """Run every probe (and the GPU ones when PyTorch sees a CUDA device)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    result = Measurement(machine=machine.describe(), mode=mode,
                         created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                         bandwidth=bandwidth_sweep(mode, threads=threads), matmul=matmul_sweep(mode),
                         kernels=kernel_samples(mode, threads=threads))
    if gpu:
        from .gpu import gpu_probes

        result.gpu = gpu_probes(mode)
    return result
