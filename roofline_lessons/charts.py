"""Roofline charts with matplotlib: log-log axes, units on both, colour-blind-safe colours.

The palette is Okabe & Ito's, and every series also differs by line style or marker shape,
so no chart relies on colour alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np

from .hardware import Part, get_part
from .roofline import attainable_flops_per_s

#: Okabe–Ito colour-blind-safe palette (black last).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
TERA = 1e12


@dataclass(frozen=True)
class Roof:
    """One roofline: a compute ceiling and a bandwidth slope."""

    label: str
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float

    @property
    def ridge_point_flop_per_byte(self) -> float:
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s


@dataclass(frozen=True)
class Point:
    """A kernel or a workload on the chart: its intensity and the performance plotted for it."""

    label: str
    intensity_flop_per_byte: float
    flops_per_s: float


def roofs_for(part: Part | str, dtypes: Sequence[str] = ("bf16",)) -> list[Roof]:
    """One :class:`Roof` per dtype of ``part`` (same bandwidth, different compute ceilings)."""
    p = get_part(part)
    return [Roof(f"{p.id} {dt}", p.peak_flops_per_s(dt), p.memory_bandwidth_bytes_per_s) for dt in dtypes]


def point_on_roof(label: str, intensity_flop_per_byte: float, roof: Roof) -> Point:
    """A point drawn at the attainable performance of ``roof`` for this intensity."""
    perf = float(attainable_flops_per_s(intensity_flop_per_byte, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s))
    return Point(label, float(intensity_flop_per_byte), perf)


def roofline_chart(
    roofs: Iterable[Roof],
    points: Iterable[Point] = (),
    *,
    title: str = "Roofline",
    intensity_range: tuple[float, float] | None = None,
    ax=None,
    figsize: tuple[float, float] = (7.5, 4.8),
    mark_ridges: bool = True,
):
    """Draw a log-log roofline; returns ``(fig, ax)``. Performance is shown in TFLOP/s."""
    roofs = list(roofs)
    points = list(points)
    if not roofs:
        raise ValueError("roofline_chart needs at least one Roof")
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    else:
        fig = ax.figure
    if intensity_range is None:
        xs = [r.ridge_point_flop_per_byte for r in roofs] + [p.intensity_flop_per_byte for p in points]
        xs = [x for x in xs if np.isfinite(x) and x > 0]
        lo, hi = min(xs + [1.0]), max(xs + [1.0])
        intensity_range = (10 ** np.floor(np.log10(lo) - 1), 10 ** np.ceil(np.log10(hi) + 0.5))
    x = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 400)
    for i, roof in enumerate(roofs):
        colour = PALETTE[i % len(PALETTE)]
        style = LINESTYLES[i % len(LINESTYLES)]
        y = attainable_flops_per_s(x, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s) / TERA
        ax.plot(x, y, color=colour, linestyle=style, linewidth=2.2,
                label=f"{roof.label}: {roof.peak_flops_per_s / TERA:,.0f} TFLOP/s, "
                      f"{roof.bandwidth_bytes_per_s / TERA:,.2f} TB/s")
        if mark_ridges:
            rx = roof.ridge_point_flop_per_byte
            ax.plot([rx], [roof.peak_flops_per_s / TERA], marker="|", markersize=14, color=colour)
            ax.annotate(f"ridge {rx:,.0f}", (rx, roof.peak_flops_per_s / TERA), textcoords="offset points",
                        xytext=(4, 6), fontsize=8, color=colour)
    for j, pt in enumerate(points):
        marker = MARKERS[j % len(MARKERS)]
        ax.plot([pt.intensity_flop_per_byte], [pt.flops_per_s / TERA], marker=marker, markersize=9,
                linestyle="none", color="black", markerfacecolor=PALETTE[(j + 3) % len(PALETTE)],
                label=f"{pt.label}: I = {pt.intensity_flop_per_byte:,.3g} FLOP/byte, "
                      f"{pt.flops_per_s / TERA:,.3g} TFLOP/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*intensity_range)
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("Attainable performance (TFLOP/s, 1 TFLOP/s = 10¹² FLOP/s)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", alpha=0.12)
    ax.legend(fontsize=7.5, loc="lower right", framealpha=0.9)
    return fig, ax
