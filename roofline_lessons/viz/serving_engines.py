"""Lesson 14's charts: scheduler iterations as a timeline, SLO attainment against request rate
(goodput), and the KV cache's use over time. Alt texts come from the same simulations."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..core.units import count, duration, percent
from ..topics.engine import GoodputCurve, Simulation
from .charts import MIN_FONT_PT, PALETTE
from .display import set_alt
from .fastfig import bare_figure

PREFILL_LOOK = (PALETTE[1], "//")  #: a step carrying prefill tokens: orange, hatched
DECODE_LOOK = (PALETTE[0], "")  #: a decode-only step: blue, plain
LABEL_PT = max(MIN_FONT_PT, 9.5)


def iterations_timeline_chart(runs: Mapping[str, Simulation], *, until_s: float | None = None,
                              title: str = "Scheduler iterations: each bar is one step"):
    """One row per run: every step a bar from its start to its end, as tall as the requests it
    carries; hatched orange where the step carries prefill tokens, plain blue where it only decodes.
    ``until_s``: the time axis's end (default the longest run's)."""
    if not runs:
        raise ValueError("iterations_timeline_chart needs at least one run")
    end = until_s if until_s is not None else max(float(np.max(s.steps["start_s"] + s.steps["duration_s"]))
                                                  for s in runs.values())
    top = max(float(np.max(s.steps["running"])) for s in runs.values())
    fig = bare_figure((10.5, 1.2 + 1.9 * len(runs)), dpi=100)
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False)[:, 0]
    fig.subplots_adjust(left=0.1, right=0.97, top=1 - 0.55 / (1.2 + 1.9 * len(runs)), bottom=0.6 / (1.2 + 1.9 * len(runs)),
                        hspace=0.45)
    alt = []
    for ax, (label, s) in zip(axes, runs.items()):
        st = s.steps
        keep = st["start_s"] < end
        pre = keep & (st["prefill_tokens"] > 0)
        dec = keep & (st["prefill_tokens"] == 0)
        for mask, (colour, hatch), name in ((dec, DECODE_LOOK, "decode-only step"), (pre, PREFILL_LOOK,
                                                                                     "step with prefill tokens")):
            ax.bar(st["start_s"][mask] * 1e3, st["running"][mask], width=st["duration_s"][mask] * 1e3, align="edge",
                   color=colour, hatch=hatch, edgecolor="white", linewidth=0.4, label=name)
        ax.set_xlim(0, end * 1e3)
        ax.set_ylim(0, top * 1.15)
        ax.set_title(label, fontsize=LABEL_PT, loc="left")
        ax.set_ylabel("requests\nin the step", fontsize=LABEL_PT)
        ax.tick_params(labelsize=LABEL_PT)
        alt.append(f"{label}: {count(int(np.sum(keep)))} steps, {count(int(np.sum(pre)))} with prefill tokens, "
                   f"mean TTFT {duration(float(np.mean(s.ttft_s)))}, mean E2E {duration(float(np.mean(s.e2e_s)))}")
    axes[0].legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=LABEL_PT, ncols=2, frameon=False)
    axes[-1].set_xlabel("time since the run began (ms)", fontsize=LABEL_PT)
    fig.suptitle(title, fontsize=LABEL_PT + 1)
    set_alt(fig, f"{title}. " + "; ".join(alt) + ".")
    return fig


def goodput_chart(curve: GoodputCurve, *, title: str = "SLO attainment against request rate"):
    """Attainment (share of requests meeting both objectives) against the Poisson rate, log rate axis;
    the target as a dashed line and DistServe's goodput (the highest rate tried that meets it) marked."""
    fig = bare_figure((10.5, 4.6), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.09, right=0.97, top=0.88, bottom=0.14)
    ax.plot(curve.rates_per_s, curve.attainment * 100, marker="o", color=PALETTE[0], linewidth=2,
            label="share of requests meeting both SLOs")
    ax.axhline(curve.target * 100, color="0.3", linestyle="--", linewidth=1.2,
               label=f"target: {percent(curve.target, 0)} of requests")
    if curve.goodput_requests_per_s > 0:
        ax.axvline(curve.goodput_requests_per_s, color=PALETTE[2], linewidth=2,
                   label=f"goodput: {curve.goodput_requests_per_s:.3g} requests/s")
    ax.set_xscale("log")
    ax.set_ylim(-3, 103)
    ax.set_xlabel("request rate (requests/s, Poisson arrivals)", fontsize=LABEL_PT)
    ax.set_ylabel("requests meeting both SLOs (%)", fontsize=LABEL_PT)
    ax.tick_params(labelsize=LABEL_PT)
    ax.legend(loc="lower left", fontsize=LABEL_PT, frameon=False)
    ax.set_title(title, fontsize=LABEL_PT + 1)
    points = ", ".join(f"{r:.3g}/s: {percent(a, 0)}" for r, a in zip(curve.rates_per_s, curve.attainment))
    set_alt(fig, f"{title}. Attainment by rate: {points}. Goodput at the {percent(curve.target, 0)} target: "
                 f"{curve.goodput_requests_per_s:.3g} requests/s.")
    return fig


def kv_use_chart(runs: Mapping[str, Simulation], *, title: str = "KV-cache blocks in use"):
    """Share of the KV-cache blocks in use at each step, one line per run, with each run's preemptions
    in its legend entry."""
    fig = bare_figure((10.5, 4.2), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.09, right=0.97, top=0.88, bottom=0.15)
    alt = []
    for i, (label, s) in enumerate(runs.items()):
        t, share = s.kv_blocks_used_share
        order = np.argsort(t)
        ax.step(t[order], share[order] * 100, where="post", color=PALETTE[i % 7], linewidth=1.6,
                label=f"{label} ({count(s.preemptions)} preemptions)")
        alt.append(f"{label}: peak {percent(float(np.max(share)), 0)}, {count(s.preemptions)} preemptions")
    ax.set_ylim(0, 105)
    ax.set_xlabel("time since the run began (s)", fontsize=LABEL_PT)
    ax.set_ylabel("KV blocks in use (%)", fontsize=LABEL_PT)
    ax.tick_params(labelsize=LABEL_PT)
    ax.legend(loc="lower right", fontsize=LABEL_PT, frameon=False)
    ax.set_title(title, fontsize=LABEL_PT + 1)
    set_alt(fig, f"{title}. " + "; ".join(alt) + ".")
    return fig
