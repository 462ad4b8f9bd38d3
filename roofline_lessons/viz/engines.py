"""Lesson 13's chart: published engine runs against the course's lower bound, log-log, the line
y = x as the roof no run can cross. Alt text and legend come from the same priced runs."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.engine_runs import REGIMES
from ..core.units import count, num, percent, quantity
from ..topics.real_engines import PricedRun, spread_by_regime
from .charts import MARKERS, MIN_FONT_PT, PALETTE, plain_log_ticks
from .display import set_alt
from .fastfig import bare_figure

LEGEND_PT = max(MIN_FONT_PT, 9.5)
#: one colour and marker per regime (colour-blind-safe; the marker keeps them apart in grey)
REGIME_LOOK = {regime: (PALETTE[i % 7], MARKERS[i % len(MARKERS)]) for i, regime in enumerate(REGIMES)}
#: fractions of the bound drawn as guide lines under the roof
GUIDES = (0.5, 0.2)


def engines_vs_bound_chart(priced: Sequence[PricedRun], title: str = "Published runs against the course's bound"):
    """Measured against bound, both as rates (a time's reciprocal: 1/TTFT, 1/TPOT), log-log, a point
    per run coloured and shaped by regime; y = x is the bound, the dotted lines 50 % and 20 % of it."""
    if not priced:
        raise ValueError("engines_vs_bound_chart needs at least one priced run, got none")
    bound = np.array([p.as_rate(p.bound) for p in priced])
    measured = np.array([p.as_rate(p.measured) for p in priced])
    lo = 10 ** np.floor(np.log10(min(bound.min(), measured.min())))
    hi = 10 ** np.ceil(np.log10(max(bound.max(), measured.max())))
    fig = bare_figure((10.5, 6.2), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.1, right=0.64, bottom=0.11, top=0.9)
    xs = np.array([lo, hi])
    ax.plot(xs, xs, color="0.15", linewidth=2, label="the bound (y = x):\nno run can sit above it")
    for frac, style in zip(GUIDES, ((0, (4, 3)), (0, (1, 3)))):
        ax.plot(xs, xs * frac, color="0.45", linewidth=1.2, linestyle=style, label=f"{percent(frac, 0)} of the bound")
    for regime in REGIMES:
        idx = [i for i, p in enumerate(priced) if p.run.regime == regime]
        if not idx:
            continue
        colour, marker = REGIME_LOOK[regime]
        ax.scatter(bound[idx], measured[idx], s=60, color=colour, marker=marker, edgecolor="black", linewidth=0.6,
                   zorder=3, label=f"{regime_name(regime)} ({quantity(len(idx), 'run', whole=True)})")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), title=title,
           xlabel="The bound: the fastest rate no engine can pass\n(tokens/s; for a time figure, 1/TTFT or 1/TPOT, per s)",
           ylabel="Published figure, as a rate (same units)")
    ax.tick_params(labelsize=LEGEND_PT)
    ax.grid(True, which="major", alpha=0.3)
    plain_log_ticks(ax)
    ax.legend(fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, framealpha=0.9)
    above = int(np.sum(measured > bound * (1 + 1e-9)))
    spreads = spread_by_regime(priced)
    set_alt(fig, f"{title}. Log-log scatter of {count(len(priced))} published runs: the course's lower bound on "
                 f"the x axis, the published figure on the y axis, both as rates. "
                 + ("No run lies above the line y = x, the bound. " if above == 0 else
                    f"{count(above)} runs lie above the line y = x: the bound is violated for them. ")
                 + "Median fraction of the bound per regime: "
                 + "; ".join(f"{regime_name(s.regime)} {percent(s.median, 0)} ({quantity(s.runs, 'run', whole=True)}"
                             + (f", {percent(s.lowest, 0)} to {percent(s.highest, 0)})" if s.runs > 1 else ")")
                             for s in spreads) + ".")
    return fig


def regime_table(priced: Sequence[PricedRun]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the per-regime spread (the lesson's table; the alt text uses the same numbers)."""
    rows = [[regime_name(s.regime), count(s.runs), num(s.lowest, 2), num(s.median, 2), num(s.highest, 2)]
            for s in spread_by_regime(priced)]
    return ["regime", "runs", "lowest fraction of the bound", "median", "highest"], rows


def regime_name(regime: str) -> str:
    """A regime as a heading writes it ("MoE", not the catalog's "moe")."""
    return "MoE" if regime == "moe" else regime
