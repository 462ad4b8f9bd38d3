"""Benchmark: a real decode loop on this machine against the bound the cost model predicts from this
machine's measured roofs (lesson 8's probes). Prints, per batch, the measured step time, the bound,
which roof binds, and the achieved fraction (bound / measured; 1 would be on the roof), then last

    batch-1 decode: measured X ms, bound Y ms, achieved Z

Goal on a 2-core CPU: Z ≥ 0.6 at batch 1 and never above 1.05 (above 1 means the bound or the byte
count is wrong, e.g. weights that fit in cache). The model is the numpy decoder
(roofline_lessons.measure.decoder), float32, sized so its weights are at least 8× the last-level
cache; the bound uses the measured DRAM triad bandwidth and the best measured float32 matmul rate.

Run: .venv/bin/python benchmarks/decode_vs_bound.py [--context 128] (or `make bench`)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.units import binary, duration, num, si
from roofline_lessons.measure.decoder import KVCache, NumpyDecoder, sized_for_cache
from roofline_lessons.measure.probes import measure

BATCHES = (1, 2, 4, 8, 16, 32, 64)
FP32 = dict(weights_dtype="fp32", activations_dtype="fp32", kv_dtype="fp32", compute_dtype="fp32",
            attention_compute_dtype="fp32")


def tiled(cache: KVCache, batch: int, capacity: int) -> KVCache:
    """A batch of identical sequences from one prefilled sequence (prefill once, not ``batch`` times)."""
    def grow(a: np.ndarray) -> np.ndarray:
        out = np.zeros((batch, a.shape[1], capacity, a.shape[3]), a.dtype)
        out[:, :, :cache.length] = a[:, :, :cache.length]
        return out
    return KVCache([grow(k) for k in cache.k], [grow(v) for v in cache.v], cache.length)


def step_time_s(dec: NumpyDecoder, cache: KVCache, steps: int = 5) -> float:
    """Median time of one decode step (after one warm-up step)."""
    token = np.zeros(cache.batch, dtype=np.int64)
    dec.decode(token, cache)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        dec.decode(token, cache)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context", type=int, default=128, help="tokens already cached (default 128)")
    args = parser.parse_args()

    roofs = measure("quick", gpu=False)
    bandwidth, peak = roofs.dram_bytes_per_s(), roofs.peak_flops_per_s("float32")
    llc = max(int(v) for v in roofs.machine.get("caches", {"LLC": 32 * 2**20}).values())
    model = sized_for_cache(llc)
    dec = NumpyDecoder(model)
    print(f"this machine (lesson 8 probes, quick): DRAM triad {si(bandwidth, 'B/s')}, float32 matmul "
          f"{si(peak, 'FLOP/s')}, ridge {num(peak / bandwidth)} FLOP/byte; last-level cache {binary(llc)}")
    print(f"model: {model.id}, {num(model.parameter_count() / 1e6)} M parameters, {binary(dec.weight_bytes())} "
          f"of float32 weights ({num(dec.weight_bytes() / llc)}× the cache), context {args.context:,} tokens")
    one = dec.new_cache(1, args.context)
    dec.prefill(np.zeros((1, args.context), dtype=np.int64), one)
    one.length = args.context - 8  # leave room for the timed steps; they overwrite the last positions
    print(f"{'batch':>5}  {'measured':>10}  {'bound':>10}  {'binds':>7}  {'achieved':>8}")
    first = None
    for batch in BATCHES:
        cache = tiled(one, batch, args.context)
        measured = step_time_s(dec, cache)
        context = cache.length - 3  # the steps ran at lengths (context - 8) … (context - 2); take the middle
        cost = model_cost(model, phase="decode", batch=batch, context_tokens=context, **FP32)
        compute_s, memory_s = float(cost.flops) / peak, float(cost.bytes) / bandwidth
        bound = max(compute_s, memory_s)
        print(f"{batch:>5}  {duration(measured):>10}  {duration(bound):>10}  "
              f"{'memory' if memory_s >= compute_s else 'compute':>7}  {num(bound / measured, 2):>8}")
        if first is None:
            first = (measured, bound)
    measured, bound = first
    print(f"batch-1 decode: measured {measured * 1e3:.1f} ms, bound {bound * 1e3:.1f} ms, "
          f"achieved {bound / measured:.2f}")


if __name__ == "__main__":
    main()
