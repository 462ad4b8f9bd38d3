"""Benchmark: a real decode loop on this machine against the bound the cost model predicts from this
machine's measured roofs (lesson 8's probes) — lesson 9's reality check in full mode. Prints every
step (decode by batch, decode by context, prefill by prompt): measured time, bound, which roof
binds, and the achieved fraction (bound / measured; 1 would be on the roof); then the measured
overhead, the cost model's critical batch against the measured knee, and last

    batch-1 decode: measured X ms, bound Y ms, achieved Z

Goal on a 2-core CPU: Z ≥ 0.6 at batch 1 and never above 1.05 (above 1 means the bound or the byte
count is wrong, e.g. weights that fit in cache). The model is the numpy decoder
(roofline_lessons.measure.decoder), float32, sized so its weights are at least 8× the last-level
cache; the bound uses the measured DRAM triad bandwidth and the best measured float32 matmul rate.

Budgets (roofline_lessons.measure.reality): the weights take at most MEMORY_SHARE of the free memory,
the weights plus one step's buffers (KV cache, scores, activations) at most BUFFER_SHARE, a batch-1
step's weight stream at most the mode's step_budget_s, and the whole run at most its run_budget_s.
A step past a budget is skipped and printed as such; a model held below 8× the cache says so.

Run: .venv/bin/python benchmarks/decode_vs_bound.py [--mode quick|full] (or `make bench`)
"""

from __future__ import annotations

import argparse

from roofline_lessons.core.units import binary, duration, num, si
from roofline_lessons.measure import reality

GOAL_BATCH1, CEILING = 0.6, 1.05


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=sorted(reality.MODES), default="full")
    args = parser.parse_args()

    from roofline_lessons.measure.machine import available_memory_bytes

    free = available_memory_bytes()
    plan = reality.MODES[args.mode]
    print(f"budgets: weights ≤ {reality.MEMORY_SHARE:.0%} and weights + a step's buffers ≤ {reality.BUFFER_SHARE:.0%} "
          f"of {binary(free) if free else 'an unknown amount of'} free memory; run ≤ {plan['run_budget_s']:.0f} s")
    check = reality.run(args.mode, available_bytes=free)
    bw, peak = check.bandwidth_bytes_per_s, check.peak_flops_per_s
    print(f"this machine (lesson 8 probes, {args.mode}): DRAM triad {si(bw, 'B/s')}, float32 matmul {si(peak, 'FLOP/s')}, "
          f"ridge {num(peak / bw)} FLOP/byte; last-level cache {binary(check.last_level_cache_bytes)}")
    print(f"model: {check.model['id']}, {binary(check.weight_bytes)} of float32 weights "
          f"({num(check.weight_bytes / check.last_level_cache_bytes)}× the cache)")
    print(f"{'step':>8} {'batch':>5} {'tokens':>7} {'measured':>10} {'bound':>10} {'binds':>8} {'achieved':>8}")
    for s in check.samples:
        print(f"{s.phase:>8} {s.batch:>5} {s.tokens:>7,} {duration(s.measured_s):>10} {duration(s.bound_s):>10} "
              f"{s.binds:>8} {num(s.achieved, 2):>8}")
    over = [s for s in check.samples if s.achieved > CEILING]
    sizing = check.model_sizing()
    if sizing and not sizing.reached:
        print(f"model held to {num(sizing.multiple)}× the cache (target {sizing.target_multiple}×) by the "
              f"{sizing.limited_by} budget")
    print(f"fixed cost per decode step (tiny model, same calls): {duration(check.overhead_s())}; critical batch by "
          f"the cost model: {check.critical_batch()}, measured knee: {reality.measured_knee(check.decode_by_batch)}")
    for skip in check.skipped:
        print(f"skipped {skip['phase']} batch {skip['batch']} at {skip['tokens']:,} tokens ({skip['reason']} budget: "
              f"{skip['why']})")
    if over:
        print(f"ABOVE THE BOUND (> {CEILING}): " + ", ".join(f"{s.phase} b{s.batch} t{s.tokens}" for s in over))
    first = next(s for s in check.decode_by_batch if s.batch == 1)
    split = check.overhead_split(first)
    reached = ("cannot be separated from the fixed cost on this run" if split.fraction_of_roof is None else
               f"{si(split.effective_bandwidth_bytes_per_s, 'B/s')} ({num(split.fraction_of_roof, 2)} of the triad)")
    print(f"batch-1 split: {split.verdict}; bandwidth the kernels reached: {reached}")
    verdict = "meets" if GOAL_BATCH1 <= first.achieved <= CEILING else "MISSES"
    print(f"({verdict} the goal {GOAL_BATCH1} ≤ achieved ≤ {CEILING} at batch 1)")
    print(f"batch-1 decode: measured {first.measured_s * 1e3:.1f} ms, bound {first.bound_s * 1e3:.1f} ms, "
          f"achieved {first.achieved:.2f}")


if __name__ == "__main__":
    main()
