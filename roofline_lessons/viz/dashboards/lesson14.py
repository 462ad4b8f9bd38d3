"""Lesson 14 dashboard: request rate, prompt and output lengths, prefill chunk and a deployment of
two H100s -> SLO attainment against rate (goodput, DistServe's definition) and the TTFT and TPOT
percentiles at the chosen rate, for Llama-3.1-8B. Every figure is an estimate of the simulated
scheduler (:data:`roofline_lessons.topics.engine.CONVENTIONS`), its steps priced by the estimate.

Speed: the attainment curve of a setting (lengths, chunk, deployment) is simulated once over
:data:`RATE_CHOICES` and kept (:func:`_curve`); moving only the rate picks a point on it. The chart's
axes are drawn once; a move sets the curve, the marker and the bars.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ...core.errors import RooflineInputError
from ...core.units import count, duration, percent
from ...topics.engine import EngineConfig, goodput_curve, poisson_requests, simulate
from ..charts import MIN_FONT_PT, PALETTE
from ..dashboard_base import LayeredChart, ViewTexts, dashboard, one_of, slider, view_frame
from ..fastfig import bare_figure
from ..panel import Frame

MODEL, PART = "llama-3.1-8b", "h100-sxm"
RATE_CHOICES = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96)  #: requests/s (Poisson)
PROMPT_CHOICES = (256, 1024, 4096)
OUTPUT_CHOICES = (64, 256, 1024)
CHUNK_CHOICES = ("whole prompt", 2048, 512, 128)
DEPLOYMENTS = {  #: two H100s either way
    "one pool of 2": EngineConfig(chips=2),
    "1 prefill + 1 decode": EngineConfig(prefill_chips=1, decode_chips=1),
}
TTFT_SLO_S, TPOT_SLO_S, ATTAINMENT = 0.5, 0.025, 0.9
REQUESTS = 300  #: requests simulated at each rate
SEED = 0
LABEL_PT = max(MIN_FONT_PT, 9.5)


@dataclass(frozen=True)
class Lesson14View(ViewTexts):
    """One setting: the attainment curve over :data:`RATE_CHOICES` and the percentiles at ``rate``
    (seconds). An error view has no curve."""

    rate: object
    prompt: object
    output: object
    chunk: object
    deployment: object
    rates_per_s: tuple = ()
    attainment: tuple = ()
    goodput_requests_per_s: float = 0.0
    ttft_percentiles_s: tuple = ()  #: p50, p90, p99 at ``rate``
    tpot_percentiles_s: tuple = ()
    attainment_at_rate: float = float("nan")
    output_tokens_per_s: float = float("nan")


def _config(chunk, deployment) -> EngineConfig:
    base = DEPLOYMENTS[deployment]
    return replace(base, chunk_tokens=None if chunk == "whole prompt" else int(chunk),
                   token_budget=8192 if chunk == "whole prompt" else base.token_budget)


@lru_cache(maxsize=64)
def _run(rate, prompt, output, chunk, deployment):
    """(attainment, TTFT p50/p90/p99, TPOT p50/p90/p99, output tokens/s) of one simulated rate."""
    s = simulate(MODEL, PART, poisson_requests(rate, REQUESTS, prompt, output, seed=SEED), _config(chunk, deployment),
                 ttft_slo_s=TTFT_SLO_S, tpot_slo_s=TPOT_SLO_S, slo_attainment=ATTAINMENT)
    q = (50, 90, 99)
    return (s.slo_attainment, tuple(float(np.percentile(s.ttft_s, p)) for p in q),
            tuple(float(np.nanpercentile(s.tpot_s, p)) for p in q), s.output_tokens_per_s)


@lru_cache(maxsize=32)
def _curve(prompt, output, chunk, deployment):
    """The attainment curve of one setting over :data:`RATE_CHOICES` (each rate's run kept too)."""
    rows = [_run(r, prompt, output, chunk, deployment) for r in RATE_CHOICES]
    att = np.array([r[0] for r in rows])
    ok = np.cumprod(att >= ATTAINMENT).astype(bool)  # the rates up to the first miss
    good = float(np.array(RATE_CHOICES)[ok].max()) if ok.any() else 0.0
    return tuple(att), good


def lesson14_view(rate, prompt, output, chunk, deployment) -> Lesson14View:
    """The setting's attainment curve and the percentiles at ``rate`` (requests/s)."""
    try:
        rate = one_of("rate", rate, RATE_CHOICES)
        prompt = one_of("prompt", prompt, PROMPT_CHOICES)
        output = one_of("output", output, OUTPUT_CHOICES)
        chunk = one_of("chunk", chunk, CHUNK_CHOICES)
        deployment = one_of("deployment", deployment, tuple(DEPLOYMENTS))
        att, good = _curve(prompt, output, chunk, deployment)
        here, ttft, tpot, tps = _run(rate, prompt, output, chunk, deployment)
    except RooflineInputError as exc:
        return Lesson14View(rate, prompt, output, chunk, deployment, text=str(exc), error=str(exc))
    meets = here >= ATTAINMENT
    chunk_words = "whole prompts in one step" if chunk == "whole prompt" else f"prompts chunked at {count(chunk)} tokens"
    text = (f"Llama-3.1-8B on two H100s ({deployment}), {count(prompt)} tokens in and {count(output)} out, "
            f"{chunk_words}, {rate} requests/s (Poisson, {REQUESTS} requests; simulated estimates): "
            f"TTFT p50/p90/p99 {' / '.join(duration(t) for t in ttft)}, TPOT {' / '.join(duration(t) for t in tpot)}; "
            f"{percent(here, 0)} of requests meet TTFT ≤ {duration(TTFT_SLO_S)} and TPOT ≤ {duration(TPOT_SLO_S)}, "
            f"{'at or above' if meets else 'below'} the {percent(ATTAINMENT, 0)} target. Goodput: "
            + (f"at least {good:g} requests/s ({good / 2:g} per chip): every rate on the grid meets the target."
               if good == RATE_CHOICES[-1] and min(att) >= ATTAINMENT else
               f"{good:g} requests/s (the highest rate on the grid before the first that misses the target, "
               f"{good / 2:g} per chip)." if good else "no rate on the grid meets the target.")
            + f" Output: {tps:,.0f} tokens/s for both chips.")
    return Lesson14View(rate, prompt, output, chunk, deployment, text=text,
                        title=f"SLO attainment against rate: {deployment}, {count(prompt)} in, {count(output)} out",
                        rates_per_s=RATE_CHOICES, attainment=att, goodput_requests_per_s=good,
                        ttft_percentiles_s=ttft, tpot_percentiles_s=tpot, attainment_at_rate=here,
                        output_tokens_per_s=tps)


def lesson14_alt(view: Lesson14View) -> str:
    points = ", ".join(f"{r}/s {percent(a, 0)}" for r, a in zip(view.rates_per_s, view.attainment))
    return (f"{view.title}. Left: the share of requests meeting both SLOs at each rate ({points}); the dashed "
            f"line is the {percent(ATTAINMENT, 0)} target, the marker the chosen {view.rate} requests/s. Right: "
            f"TTFT and TPOT at p50, p90 and p99 as multiples of their SLOs: TTFT "
            + ", ".join(f"{t / TTFT_SLO_S:.2g}×" for t in view.ttft_percentiles_s) + "; TPOT "
            + ", ".join(f"{t / TPOT_SLO_S:.2g}×" for t in view.tpot_percentiles_s) + ".")


class Lesson14Chart(LayeredChart):
    """Left: attainment against rate (log rate), the target and the chosen rate. Right: the TTFT and
    TPOT percentiles at that rate as multiples of their SLOs (log), the SLO at 1×."""

    def skeleton(self) -> dict:
        fig = bare_figure((10.5, 4.6), dpi=100)
        left = fig.add_axes((0.08, 0.15, 0.5, 0.68))
        right = fig.add_axes((0.68, 0.15, 0.29, 0.68))
        left.set_xscale("log")
        left.set_xlim(RATE_CHOICES[0] / 1.3, RATE_CHOICES[-1] * 1.3)
        left.set_ylim(-3, 103)
        left.set_xticks(RATE_CHOICES, [str(r) for r in RATE_CHOICES])
        left.minorticks_off()
        left.set_xlabel("request rate (requests/s, Poisson)", fontsize=LABEL_PT)
        left.set_ylabel("requests meeting both SLOs (%)", fontsize=LABEL_PT)
        left.axhline(ATTAINMENT * 100, color="0.3", linestyle="--", linewidth=1.2)
        left.text(RATE_CHOICES[0], ATTAINMENT * 100 - 7, f"target {percent(ATTAINMENT, 0)}", fontsize=LABEL_PT,
                  color="0.3")
        right.set_yscale("log")
        right.set_ylim(0.05, 200)
        right.axhline(1.0, color="0.3", linestyle="--", linewidth=1.2)
        right.set_xticks([0.5, 2.5], ["TTFT", "TPOT"])
        right.set_xlim(-0.4, 3.4)
        right.set_ylabel("percentile ÷ its SLO (1 = on the SLO)", fontsize=LABEL_PT)
        for ax in (left, right):
            ax.tick_params(labelsize=LABEL_PT)
        curve, = left.plot([], [], marker="o", color=PALETTE[0], linewidth=2, animated=True)
        point, = left.plot([], [], marker="D", markersize=11, color=PALETTE[3], linestyle="none", animated=True)
        good = left.axvline(1.0, color=PALETTE[2], linewidth=2, animated=True)
        bars = right.bar([0, 0.5, 1, 2, 2.5, 3], [1] * 6, width=0.42, bottom=1e-3, animated=True,
                         color=[PALETTE[5], PALETTE[0], PALETTE[4]] * 2, edgecolor="black", linewidth=0.5)
        labels = [right.text(x, 1, "", ha="center", va="bottom", fontsize=MIN_FONT_PT, animated=True)
                  for x in (0, 0.5, 1, 2, 2.5, 3)]
        title = fig.text(0.5, 0.95, "", ha="center", va="top", fontsize=LABEL_PT + 1, animated=True)
        key = right.text(1.5, 120, "p50  p90  p99 (left to right)", ha="center", va="top", fontsize=MIN_FONT_PT)
        return {"fig": fig, "curve": curve, "point": point, "good": good, "bars": list(bars), "labels": labels,
                "title": title, "key": key}

    def move(self, shared: dict, view: Lesson14View) -> list:
        rates, att = np.array(view.rates_per_s, dtype=float), np.array(view.attainment) * 100
        shared["curve"].set_data(rates, att)
        shared["point"].set_data([view.rate], [view.attainment_at_rate * 100])
        good = shared["good"]
        good.set_xdata([view.goodput_requests_per_s] * 2)
        good.set_visible(view.goodput_requests_per_s > 0)
        ratios = [t / TTFT_SLO_S for t in view.ttft_percentiles_s] + [t / TPOT_SLO_S for t in view.tpot_percentiles_s]
        for bar, label, r in zip(shared["bars"], shared["labels"], ratios):
            shown = float(np.clip(r, 0.05, 200))
            bar.set_height(shown - 1e-3)
            label.set_position((bar.get_x() + bar.get_width() / 2, shown * 1.08))
            label.set_text(f"{r:.2g}×")
        shared["title"].set_text(f"{view.title} (goodput {view.goodput_requests_per_s:g}/s)")
        return [shared["curve"], good, shared["point"], *shared["bars"], *shared["labels"], shared["title"]]


def lesson14_frame(view: Lesson14View, chart: Lesson14Chart) -> Frame:
    """The verdict, the chart and its alt text for one setting; an error view shows its error once."""
    return view_frame(view, chart, lesson14_alt)


def lesson14_dashboard():
    """Rate, prompt, output, chunk and deployment -> attainment against rate and the percentiles."""
    chart = Lesson14Chart()
    controls = {"rate": slider("rate (requests/s)", RATE_CHOICES, 8, "420px"),
                "prompt": slider("prompt (tokens)", PROMPT_CHOICES, 1024, "320px"),
                "output": slider("output (tokens)", OUTPUT_CHOICES, 256, "320px"),
                "chunk": slider("prefill chunk", CHUNK_CHOICES, 512, "360px", fmt=str),
                "deployment": slider("deployment (2 × H100)", tuple(DEPLOYMENTS), "one pool of 2", "420px", fmt=str)}
    return dashboard(controls, [["rate", "deployment"], ["prompt", "output", "chunk"]],
                     lambda rate, prompt, output, chunk, deployment: lesson14_frame(
                         lesson14_view(rate, prompt, output, chunk, deployment), chart))
