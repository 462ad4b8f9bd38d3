"""Measure the machine in front of you: memory bandwidth across working-set sizes (so cache
plateaus and the DRAM floor show), matrix-multiply FLOP/s, and a set of kernels placed on the
measured roofline. Pure numpy: kernels write into preallocated ``out=`` arrays (no temporaries),
in blocks spread over the cores with threads (numpy releases the GIL inside its loops).

Every timing is the best of several runs; the spread (median and worst) is kept too. ``quick``
mode (small sizes, few repeats) is what the notebook and the tests use; ``full`` is for learners.
"""

from __future__ import annotations

import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from . import machine
from .flash import flash_hbm_bytes, naive_attention, standard_hbm_bytes, tiled_attention

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
              "matmul_sizes": (128, 256, 512, 1024), "gemm_k": 1024, "gemv_big": 4096, "attention_n": 256},
    "full": {"max_working_set": 3 * 2**30 // 2, "min_working_set": 24 * 2**10, "repeats": 7, "min_time_s": 0.05,
             "matmul_sizes": (256, 512, 1024, 2048, 3072), "gemm_k": 2048, "gemv_big": 8192,
             "attention_n": 1024},
}


@dataclass(frozen=True)
class Timing:
    best_s: float
    median_s: float
    worst_s: float

    @property
    def spread(self) -> float:
        """(median − best) / best: how noisy the runs were."""
        return (self.median_s - self.best_s) / self.best_s


@dataclass(frozen=True)
class BandwidthSample:
    kernel: str  #: read (a.sum()), copy (b = a) or triad (a = b + c: two streams in, one out)
    working_set_bytes: int  #: all arrays the kernel touches
    bytes_moved: int  #: STREAM convention: read = N·8, copy = 2·N·8, triad = 3·N·8 per call
    timing: Timing

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

    def close(self) -> None:
        if self.pool:
            self.pool.shutdown()


def stream_kernels(n: int, workers: _Workers) -> dict[str, tuple[Callable[[], None], int, int]]:
    """read / copy / triad over arrays of ``n`` float64: (call, bytes moved per call, working set)."""
    a, b, c = np.full(n, 1.0), np.full(n, 2.0), np.full(n, 0.5)
    partial = np.zeros(max(workers.threads, 1) * (n // BLOCK_ELEMENTS + 2))

    def read() -> None:
        def body(lo, hi):
            partial[lo // BLOCK_ELEMENTS] = np.add.reduce(a[lo:hi])
        workers.run(n, body)

    def copy() -> None:
        workers.run(n, lambda lo, hi: np.copyto(b[lo:hi], a[lo:hi]))

    def triad() -> None:
        # Triad-style: two streams in, one out, in a single numpy pass (a = b + c). STREAM's scale
        # factor (a = b + s·c) would cost numpy a second pass over `a`; in a bandwidth-bound kernel the
        # multiply is free, so dropping it changes no byte and keeps the probe honest.
        workers.run(n, lambda lo, hi: np.add(b[lo:hi], c[lo:hi], out=a[lo:hi]))

    triad.arrays = (a, b, c)  # for tests: the kernel's output can be inspected
    eb = 8
    return {"read": (read, n * eb, n * eb), "copy": (copy, 2 * n * eb, 2 * n * eb),
            "triad": (triad, 3 * n * eb, 3 * n * eb)}


def working_set_sizes(mode: str = "quick") -> list[int]:
    """Total working sets (bytes) from below L2 to well past the last-level cache, ×2 apart."""
    cfg = MODES[mode]
    sizes, s = [], cfg["min_working_set"]
    while s <= cfg["max_working_set"]:
        sizes.append(int(s))
        s *= 2
    return sizes


def bandwidth_sweep(mode: str = "quick", kernels=("read", "copy", "triad"), threads: int | None = None
                    ) -> list[BandwidthSample]:
    """Achieved bytes/s of each kernel at every working-set size."""
    cfg = MODES[mode]
    workers = _Workers(threads)
    out = []
    try:
        for ws in working_set_sizes(mode):
            for name in kernels:
                per_array = {"read": 1, "copy": 2, "triad": 3}[name]
                n = max(ws // (8 * per_array), 1)
                call, moved, touched = stream_kernels(n, workers)[name]
                out.append(BandwidthSample(name, touched, moved, time_call(call, cfg["repeats"], cfg["min_time_s"])))
    finally:
        workers.close()
    return out


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
    na, d = cfg["attention_n"], 64
    q, kk, v = (rng.standard_normal((na, d)) for _ in range(3))
    flops = 4.0 * na * na * d
    out.append(KernelSample("attention, naive", f"N={na}, d={d}", flops, float(standard_hbm_bytes(na, d, 8)),
                            time_call(lambda: naive_attention(q, kk, v), reps, tmin)))
    sram = 64 * 1024
    out.append(KernelSample("attention, tiled", f"N={na}, d={d}, SRAM 64 KiB", flops,
                            flash_hbm_bytes(na, d, sram, 8), time_call(lambda: tiled_attention(q, kk, v, sram), 1, 0)))
    return out


@dataclass(frozen=True)
class Roof:
    name: str
    bytes_per_s: float | None = None
    flops_per_s: float | None = None


def bandwidth_plateaus(samples: list[BandwidthSample], caches: dict[str, int], kernel: str = "triad") -> list[Roof]:
    """Secondary roofs from the sweep: the best bandwidth whose working set fits each cache level,
    and the DRAM floor (median over working sets ≥ 4 × the last-level cache, or the largest sizes)."""
    pts = sorted((s for s in samples if s.kernel == kernel), key=lambda s: s.working_set_bytes)
    if not pts:
        return []
    roofs, lower = [], 0
    for level in sorted(caches):
        size = caches[level]
        inside = [s.bytes_per_s for s in pts if lower < s.working_set_bytes <= size // 2]
        if inside:
            roofs.append(Roof(level, bytes_per_s=max(inside)))
        lower = size
    llc = max(caches.values()) if caches else 0
    big = [s.bytes_per_s for s in pts if llc and s.working_set_bytes >= 4 * llc] or [s.bytes_per_s for s in pts[-2:]]
    roofs.append(Roof("DRAM", bytes_per_s=statistics.median(big)))
    return roofs


@dataclass
class Measurement:
    """Everything measured on one machine, JSON-ready (see :mod:`roofline_lessons.results`)."""

    machine: dict
    mode: str
    created: str
    bandwidth: list[BandwidthSample] = field(default_factory=list)
    matmul: list[MatmulSample] = field(default_factory=list)
    kernels: list[KernelSample] = field(default_factory=list)
    gpu: dict | None = None

    def peak_flops_per_s(self, dtype: str = "float64") -> float:
        """The compute roof: the best matrix-multiply rate measured in ``dtype``."""
        rates = [m.flops_per_s for m in self.matmul if m.dtype == dtype]
        if not rates:
            raise ValueError(f"no {dtype} matmul in this measurement (has: {sorted({m.dtype for m in self.matmul})})")
        return max(rates)

    def roofs(self) -> list[Roof]:
        """Bandwidth roofs (cache levels, DRAM) from the triad sweep."""
        return bandwidth_plateaus(self.bandwidth, {k: int(v) for k, v in self.machine.get("caches", {}).items()})

    def dram_bytes_per_s(self) -> float:
        return next(r.bytes_per_s for r in self.roofs() if r.name == "DRAM")

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
        from .measure_gpu import gpu_probes

        result.gpu = gpu_probes(mode)
    return result
