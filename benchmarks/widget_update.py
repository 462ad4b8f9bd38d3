"""Benchmark: the kernel's share of one dashboard update, for every lesson dashboard: the view
(recompute), the frame (redraw, PNG encode, alt text) and the panel's HTML, which is what a
learner's move costs in the kernel. Prints median and p95 per dashboard, and the first update
after a model or part change (a new static figure), called "cold".
Targets: median <= 50 ms, p95 <= 100 ms, cold <= 150 ms. What the learner waits for in the browser
(this plus messaging and the browser's own work) is measured by benchmarks/browser_latency.py.

Slider moves keep the chart's static part (roofs, axes, curves) and redraw only what moves.

Run: .venv/bin/python benchmarks/widget_update.py  (or `make bench`)
"""

from __future__ import annotations

import statistics
import time

import matplotlib

matplotlib.use("Agg")

from roofline_lessons.viz.dashboards import (BATCH_CHOICES, TOKEN_CHOICES, Lesson01Chart, Lesson02Chart,  # noqa: E402
                                             Lesson03Chart, Lesson04Chart, Lesson05Chart, Lesson06Chart, Lesson07Chart,
                                             frame_html, lesson01_frame, lesson01_view, lesson02_frame, lesson02_view,
                                             lesson03_frame, lesson03_view, lesson04_frame, lesson04_view,
                                             lesson05_frame, lesson05_view, lesson06_frame, lesson06_view,
                                             lesson07_frame, lesson07_view)
from roofline_lessons.viz.dashboards.lesson03 import TOKEN_CHOICES as L3_TOKENS  # noqa: E402
from roofline_lessons.viz.dashboards.lesson04 import BATCH_CHOICES as L4_BATCHES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson05 import BATCH_CHOICES as L5_BATCHES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson05 import CONTEXT_CHOICES as L5_CONTEXTS  # noqa: E402
from roofline_lessons.viz.dashboards.lesson06 import N_CHOICES as L6_N  # noqa: E402
from roofline_lessons.viz.dashboards.lesson06 import SRAM_CHOICES_KIB as L6_SRAM  # noqa: E402
from roofline_lessons.viz.dashboards.lesson07 import BATCH_CHOICES as L7_BATCHES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson07 import KV_CHOICES as L7_KV  # noqa: E402
from roofline_lessons.viz.dashboards.lesson07 import RECIPES as L7_RECIPES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson10 import BATCH_CHOICES as L10_BATCHES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson14 import RATE_CHOICES as L14_RATES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson14 import Lesson14Chart, lesson14_frame, lesson14_view  # noqa: E402
from roofline_lessons.viz.dashboards.lesson10 import Lesson10Chart, lesson10_frame, lesson10_view  # noqa: E402
from roofline_lessons.viz.dashboards.lesson10 import PROMPT_CHOICES as L10_PROMPTS  # noqa: E402
from roofline_lessons.viz.dashboards.lesson10 import TPOT_SLO_CHOICES_S as L10_TPOT  # noqa: E402
from roofline_lessons.viz.dashboards.lesson10 import TTFT_SLO_CHOICES_S as L10_TTFT  # noqa: E402
from roofline_lessons.viz.dashboards.lesson11 import BATCH_CHOICES as L11_BATCHES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson11 import CHIP_CHOICES as L11_CHIPS  # noqa: E402
from roofline_lessons.viz.dashboards.lesson11 import Lesson11Chart, lesson11_frame, lesson11_view  # noqa: E402
from roofline_lessons.viz.dashboards.lesson12 import BATCH_CHOICES as L12_BATCHES  # noqa: E402
from roofline_lessons.viz.dashboards.lesson12 import CONTEXT_CHOICES as L12_CONTEXTS  # noqa: E402
from roofline_lessons.viz.dashboards.lesson12 import KV_FORMATS as L12_KV  # noqa: E402
from roofline_lessons.viz.dashboards.lesson12 import Lesson12Chart, lesson12_frame, lesson12_view  # noqa: E402

TARGET_MEDIAN_S, TARGET_P95_S, TARGET_COLD_S = 0.050, 0.100, 0.150


def panel(frame_fn, view, chart) -> str:
    """What one move costs in the kernel: the frame (chart, PNG, alt text) and the panel's HTML."""
    return frame_html(frame_fn(view, chart))


def lesson01(chart):
    return [lambda b=b, t=t: panel(lesson01_frame, lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", b, t), chart)
            for b in BATCH_CHOICES for t in TOKEN_CHOICES[::3]]


def lesson02(chart):
    parts = ("h100-sxm", "h200", "b200", "mi300x")
    return [lambda i=i: panel(lesson02_frame, lesson02_view(parts, "bf16", 10 ** (i / 10)), chart) for i in range(-10, 50)]


def lesson03(chart):
    return [lambda t=t, ph=ph: panel(lesson03_frame, lesson03_view("qwen3.8-27b", "h100-sxm", ph, t), chart)
            for ph in ("prefill", "decode") for t in L3_TOKENS]


def lesson04(chart):
    return [lambda b=b: panel(lesson04_frame, lesson04_view("qwen3.8-27b", "h100-sxm", b, 8192), chart)
            for b in L4_BATCHES] * 3


def lesson05(chart):
    return [lambda b=b, c=c: panel(lesson05_frame, lesson05_view("h100-sxm", b, c), chart)
            for b in L5_BATCHES for c in L5_CONTEXTS[::2]]


def lesson06(chart):
    # every sequence length, both ends of the SRAM range and the head dims, causal and not
    return [lambda n=n, m=m, d=d: panel(lesson06_frame, lesson06_view(n, d, m, True), chart) for n in L6_N
            for m in (L6_SRAM[0], L6_SRAM[-1]) for d in (64, 256)]


def lesson07(chart):
    return [lambda r=r, k=k, b=b: panel(lesson07_frame, lesson07_view("h100-sxm", "decode", r, k, 8192, b), chart)
            for r in L7_RECIPES for k in L7_KV for b in L7_BATCHES[::2]]


def lesson10(chart):
    # every batch, both SLOs at both ends, the shortest and longest prompt (a new frontier layer each)
    return [lambda b=b, p=p, slo=slo: panel(lesson10_frame, lesson10_view("llama-3.1-8b", "h100-sxm", b, p, 256, *slo),
                                            chart)
            for p in (L10_PROMPTS[0], L10_PROMPTS[-1]) for slo in ((L10_TTFT[0], L10_TPOT[0]), (L10_TTFT[-1], L10_TPOT[-1]))
            for b in L10_BATCHES]


def lesson11(chart):
    # both phases, every chip count (a new heading and link layer each), overlap off and on, every other batch
    return [lambda ph=ph, n=n, ov=ov, b=b: panel(lesson11_frame, lesson11_view("llama-3.1-70b", "h100-sxm", n, b, ph,
                                                                               overlap_comm=ov), chart)
            for ph in ("decode", "prefill") for n in L11_CHIPS for ov in (False, True) for b in L11_BATCHES[::2]]


def lesson12(chart):
    # every weight format that H100 runs (it has no fp4 rate for W4A4), every KV format, every
    # other batch, and the shortest and longest context (a new heading layer each)
    return [lambda w=w, k=k, b=b, c=c: panel(lesson12_frame, lesson12_view("llama-3.1-70b", "h100-sxm", c, w, k, b),
                                             chart)
            for c in (L12_CONTEXTS[0], 4096, L12_CONTEXTS[-1])
            for w in ("bf16", "fp8 W8A8", "int4", "fp4 (MXFP4, weight-only)") for k in L12_KV for b in L12_BATCHES[::2]]


def lesson14(chart):
    # every rate of one setting (a new setting simulates its curve once: that is its cold update)
    return [lambda r=r: panel(lesson14_frame, lesson14_view(r, 1024, 256, 512, "one pool of 2"), chart)
            for r in L14_RATES]


#: the first update after a part (or model) change, on a chart already warm: a new static figure
COLD = {
    "lesson 1": lambda chart: panel(lesson01_frame, lesson01_view("llama-3.1-8b", "b200", "bf16", "decode", 1, 8192), chart),
    "lesson 2": lambda chart: panel(lesson02_frame, lesson02_view(("a100-80gb", "l4"), "bf16", 32.0), chart),
    "lesson 3": lambda chart: panel(lesson03_frame, lesson03_view("llama-3.1-8b", "b200", "decode", 8192), chart),
    "lesson 4": lambda chart: panel(lesson04_frame, lesson04_view("llama-3.1-8b", "b200", 32, 8192), chart),
    "lesson 5": lambda chart: panel(lesson05_frame, lesson05_view("b200", 1, 32768), chart),
    "lesson 6": lambda chart: panel(lesson06_frame, lesson06_view(8192, 128, 228, True, "b200"), chart),
    "lesson 7": lambda chart: panel(lesson07_frame, lesson07_view("b200", "decode", L7_RECIPES[0], L7_KV[0], 8192, 1),
                                    chart),
    "lesson 10": lambda chart: panel(lesson10_frame, lesson10_view("qwen3.8-27b", "b200", 32, 1024, 256, 1.0, 0.05),
                                     chart),
    "lesson 11": lambda chart: panel(lesson11_frame, lesson11_view("qwen3-235b-a22b", "h200", 8, 64,
                                                                   strategy="expert"), chart),
    "lesson 12": lambda chart: panel(lesson12_frame,
                                     lesson12_view("deepseek-v3", "b200", 32768, "fp4 W4A4", "fp8", 64), chart),
    # a new setting (lengths, chunk or deployment) simulates its whole attainment curve: 11 rates × 300 requests
    "lesson 14": lambda chart: panel(lesson14_frame, lesson14_view(8, 4096, 1024, "whole prompt",
                                                                   "1 prefill + 1 decode"), chart),
}


def measure(name, make_updates, make_chart):
    chart = make_chart()
    updates = make_updates(chart)
    updates[0]()  # warm-up: builds the static part once
    times = []
    for update in updates:
        t0 = time.perf_counter()
        update()
        times.append(time.perf_counter() - t0)
    key = name.split(" (")[0]
    t0 = time.perf_counter()
    COLD[key](chart)
    cold = time.perf_counter() - t0
    med, p95 = statistics.median(times), statistics.quantiles(times, n=20)[-1]
    missed = [what for what, value, target in (("median", med, TARGET_MEDIAN_S), ("p95", p95, TARGET_P95_S),
                                               ("cold", cold, TARGET_COLD_S)) if value > target]
    verdict = "meets the targets" if not missed else "MISSES " + ", ".join(missed)
    print(f"{name:28} median {med * 1e3:6.1f} ms   p95 {p95 * 1e3:6.1f} ms   cold {cold * 1e3:6.1f} ms   "
          f"({len(times)} updates; {verdict})")
    return times


def main() -> None:
    print("one dashboard update in the kernel = view + frame (redraw, PNG, alt text) + panel HTML")
    print(f"targets: median <= {TARGET_MEDIAN_S * 1e3:.0f} ms, p95 <= {TARGET_P95_S * 1e3:.0f} ms, "
          f"cold (first update after a part or model change) <= {TARGET_COLD_S * 1e3:.0f} ms")
    measure("lesson 1 (batch, tokens)", lesson01, Lesson01Chart)
    measure("lesson 2 (intensity)", lesson02, Lesson02Chart)
    measure("lesson 3 (phase, tokens)", lesson03, Lesson03Chart)
    measure("lesson 4 (batch)", lesson04, Lesson04Chart)
    measure("lesson 5 (batch, context)", lesson05, Lesson05Chart)
    measure("lesson 6 (N, SRAM, head dim)", lesson06, Lesson06Chart)
    measure("lesson 7 (recipe, KV, batch)", lesson07, Lesson07Chart)
    measure("lesson 10 (batch, SLOs)", lesson10, Lesson10Chart)
    measure("lesson 11 (chips, batch)", lesson11, Lesson11Chart)
    measure("lesson 12 (formats, batch)", lesson12, Lesson12Chart)
    measure("lesson 14 (rate)", lesson14, Lesson14Chart)


if __name__ == "__main__":
    main()
