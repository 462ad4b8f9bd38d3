"""Benchmark: one dashboard update (recompute + redraw to PNG), as a learner's slider move triggers it.

Prints the median and p95 over many updates that cycle through the controls. Target: median <= 50 ms.
Run: .venv/bin/python benchmarks/widget_update.py  (or `make bench`)
"""

from __future__ import annotations

import itertools
import statistics
import time

import matplotlib

matplotlib.use("Agg")

from roofline_lessons.charts import RooflineCanvas  # noqa: E402
from roofline_lessons.dashboards import BATCH_CHOICES, TOKEN_CHOICES, lesson01_png, lesson01_view  # noqa: E402

TARGET_MEDIAN_S = 0.050


CANVAS = RooflineCanvas()


def one_update(model, part, dtype, phase, batch, tokens) -> None:
    """What the dashboard's update does: recompute, draw, encode the PNG the browser receives."""
    view = lesson01_view(model, part, dtype, phase, batch, tokens)
    lesson01_png(view, CANVAS)


def main(n: int = 60) -> None:
    # A learner's session: mostly slider moves (batch, tokens), now and then a new model or part.
    settings = itertools.cycle(itertools.product(
        ["qwen3.8-27b", "llama-3.1-8b", "qwen3-30b-a3b"], ["h100-sxm", "b200"], ["bf16"], ["decode", "prefill"],
        BATCH_CHOICES[::3], TOKEN_CHOICES[::4]))
    one_update("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 1024)  # warm-up: imports, font cache
    compute, total = [], []
    for s in itertools.islice(settings, n):
        t0 = time.perf_counter()
        lesson01_view(*s)
        compute.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        one_update(*s)
        total.append(time.perf_counter() - t0)

    cold = []
    for s in itertools.islice(settings, 10):
        t0 = time.perf_counter()
        lesson01_png(lesson01_view(*s))  # no cache: the whole figure drawn from scratch
        cold.append(time.perf_counter() - t0)

    def p95(xs):
        return statistics.quantiles(xs, n=20)[-1]

    print(f"lesson-1 dashboard, {n} updates ({CANVAS.misses} redrew the static roof: new model or part)")
    print(f"  recompute only      median {statistics.median(compute) * 1e3:7.2f} ms   p95 {p95(compute) * 1e3:7.2f} ms")
    print(f"  recompute + redraw  median {statistics.median(total) * 1e3:7.2f} ms   p95 {p95(total) * 1e3:7.2f} ms")
    print(f"  full redraw (new model or part, no cache): median {statistics.median(cold) * 1e3:7.2f} ms")
    verdict = "meets" if statistics.median(total) <= TARGET_MEDIAN_S else "MISSES"
    print(f"  target: median <= {TARGET_MEDIAN_S * 1e3:.0f} ms -> {verdict} the target")


if __name__ == "__main__":
    main()
