"""Benchmark: one dashboard update (recompute + redraw + PNG encode), as a learner's slider move
triggers it, for every lesson dashboard. Prints median and p95. Target: median <= 50 ms.

Slider moves keep the chart's static part (roofs, axes, curves) and redraw only what moves; a new
model, part or context redraws the whole figure, reported separately as the "cold" update.

Run: .venv/bin/python benchmarks/widget_update.py  (or `make bench`)
"""

from __future__ import annotations

import statistics
import time

import matplotlib

matplotlib.use("Agg")

from roofline_lessons.viz.charts import RooflineCanvas  # noqa: E402
from roofline_lessons.viz.dashboards import (BATCH_CHOICES, TOKEN_CHOICES, Lesson02Chart, Lesson03Chart,  # noqa: E402
                                             Lesson04Chart, Lesson05Chart, Lesson06Chart, Lesson07Chart, lesson01_png,
                                             lesson01_view, lesson02_view, lesson03_view, lesson04_view, lesson05_view,
                                             lesson06_view, lesson07_view)
from roofline_lessons.viz.dashboards.lesson03 import TOKEN_CHOICES as L3_TOKENS  # noqa: E402
from roofline_lessons.viz.dashboards.lesson04 import BATCH_CHOICES as L4_BATCHES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson05 import BATCH_CHOICES as L5_BATCHES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson05 import CONTEXT_CHOICES as L5_CONTEXTS  # noqa: E402
from roofline_lessons.viz.dashboards.lesson06 import N_CHOICES as L6_N  # noqa: E402
from roofline_lessons.viz.dashboards.lesson06 import SRAM_CHOICES_KIB as L6_SRAM  # noqa: E402
from roofline_lessons.viz.dashboards.lesson07 import BATCH_CHOICES as L7_BATCHES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson07 import KV_CHOICES as L7_KV  # noqa: E402
from roofline_lessons.viz.dashboards.lesson07 import RECIPES as L7_RECIPES  # noqa: E402

TARGET_MEDIAN_S = 0.050


def lesson01(canvas):
    return [lambda b=b, t=t: lesson01_png(lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", b, t), canvas)
            for b in BATCH_CHOICES for t in TOKEN_CHOICES[::3]]


def lesson02(chart):
    parts = ("h100-sxm", "h200", "b200", "mi300x")
    return [lambda i=i: chart.png(lesson02_view(parts, "bf16", 10 ** (i / 10))) for i in range(-10, 50)]


def lesson03(chart):
    return [lambda t=t, ph=ph: chart.png(lesson03_view("qwen3.8-27b", "h100-sxm", ph, t))
            for ph in ("prefill", "decode") for t in L3_TOKENS]


def lesson04(chart):
    return [lambda b=b: chart.png(lesson04_view("qwen3.8-27b", "h100-sxm", b, 8192)) for b in L4_BATCHES] * 3


def lesson05(chart):
    return [lambda b=b, c=c: chart.png(lesson05_view("h100-sxm", b, c)) for b in L5_BATCHES for c in L5_CONTEXTS[::2]]


def lesson06(chart):
    # every sequence length, both ends of the SRAM range and the head dims, causal and not
    return [lambda n=n, m=m, d=d: chart.png(lesson06_view(n, d, m, True)) for n in L6_N
            for m in (L6_SRAM[0], L6_SRAM[-1]) for d in (64, 256)]


def lesson07(chart):
    return [lambda r=r, k=k, b=b: chart.png(lesson07_view("h100-sxm", "decode", r, k, 8192, b))
            for r in L7_RECIPES for k in L7_KV for b in L7_BATCHES[::2]]


def measure(name, make_updates, make_chart):
    chart = make_chart()
    updates = make_updates(chart)
    updates[0]()  # warm-up: builds the static part once
    times = []
    for update in updates:
        t0 = time.perf_counter()
        update()
        times.append(time.perf_counter() - t0)
    cold_chart = make_chart()
    t0 = time.perf_counter()
    make_updates(cold_chart)[0]()
    cold = time.perf_counter() - t0
    med, p95 = statistics.median(times), statistics.quantiles(times, n=20)[-1]
    verdict = "meets" if med <= TARGET_MEDIAN_S else "MISSES"
    print(f"{name:28} median {med * 1e3:7.2f} ms   p95 {p95 * 1e3:7.2f} ms   cold {cold * 1e3:7.1f} ms   "
          f"({len(times)} updates; {verdict} the {TARGET_MEDIAN_S * 1e3:.0f} ms target)")


def main() -> None:
    print("one dashboard update = recompute + redraw + PNG encode (what the browser receives)")
    measure("lesson 1 (batch, tokens)", lesson01, RooflineCanvas)
    measure("lesson 2 (intensity)", lesson02, Lesson02Chart)
    measure("lesson 3 (phase, tokens)", lesson03, Lesson03Chart)
    measure("lesson 4 (batch)", lesson04, Lesson04Chart)
    measure("lesson 5 (batch, context)", lesson05, Lesson05Chart)
    measure("lesson 6 (N, SRAM, head dim)", lesson06, Lesson06Chart)
    measure("lesson 7 (recipe, KV, batch)", lesson07, Lesson07Chart)


if __name__ == "__main__":
    main()
