"""Roofline charts with matplotlib: log-log axes, units on both, colour-blind-safe colours.

The palette is Okabe & Ito's, and every series also differs by line style or marker shape,
so no chart relies on colour alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, NullLocator

from ..core.hardware import Part, get_part, list_parts
from ..core.roofline import Roof, attainable_flops_per_s
from ..core.units import num
from .display import set_alt
from .fastfig import CHART_DPI, CachedFigure, bare_figure

#: Okabe–Ito colour-blind-safe palette (black last).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
TERA = 1e12
#: the smallest type any chart of the course uses, in points (every chart renders at CHART_DPI)
MIN_FONT_PT = 9
#: colours for lines and markers: the palette without yellow (too faint on white), ordered so the parts
#: most often drawn together (h100-sxm, h200, b200, mi300x) get far-apart colours
LINE_COLOURS = (PALETTE[0], PALETTE[3], PALETTE[2], PALETTE[7], PALETTE[4], PALETTE[5], PALETTE[1])


@dataclass(frozen=True)
class PartStyle:
    """How one part is drawn in every chart of the course: a colour, a marker and a line style."""

    colour: str
    marker: str
    linestyle: str


def part_style(part: Part | str) -> PartStyle:
    """The one style of ``part`` across the course, from its place in the catalog: the first seven
    parts get the seven line colours with solid lines; the next seven reuse the colours with other
    markers and dashed lines, so no two parts look alike even in grey."""
    p = get_part(part)
    ids = list(list_parts())
    i = ids.index(p.id)
    cycle, k = divmod(i, len(LINE_COLOURS))
    return PartStyle(LINE_COLOURS[k], MARKERS[(k + cycle * 3) % len(MARKERS)], LINESTYLES[cycle % len(LINESTYLES)])


@dataclass(frozen=True)
class Point:
    """A kernel or a workload on the chart: its intensity and the performance plotted for it."""

    label: str
    intensity_flop_per_byte: float
    flops_per_s: float


def _tick(value: float, _pos=None) -> str:
    if value <= 0:
        return ""
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def plain_log_ticks(ax) -> None:
    """Label log axes 0.1, 1, 10, 1,000 instead of 10^k (reads faster; no mathtext to render)."""
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log":
            axis.set_major_formatter(FuncFormatter(_tick))


def roofs_for(part: Part | str, dtypes: Sequence[str] = ("bf16",)) -> list[Roof]:
    """One :class:`Roof` per dtype of ``part`` (same bandwidth, different compute ceilings)."""
    p = get_part(part)
    return [Roof(f"{p.id} {dt}", p.peak_flops_per_s(dt), p.memory_bandwidth_bytes_per_s, p.id) for dt in dtypes]


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
    fast: bool = False,
    alt: str | None = None,
):
    """Draw a log-log roofline; returns ``(fig, ax)``. Performance is shown in TFLOP/s.

    The figure gets alt text: ``alt`` if given, else a description built from the roofs and points
    (each roof's peak, bandwidth and ridge; each point's intensity, attainable rate and bound).

    ``fast=True`` (for dashboards, redrawn on every slider move) uses a fixed layout and no minor
    grid, which makes rendering several times quicker.
    """
    roofs = list(roofs)
    points = list(points)
    if not roofs:
        raise ValueError("roofline_chart needs at least one Roof")
    if ax is None and fast:
        fig, ax = plt.subplots(figsize=figsize)
        fig.subplots_adjust(left=0.11, right=0.95, bottom=0.11, top=0.93)
    elif ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    else:
        fig = ax.figure
    if intensity_range is None:
        xs = [r.ridge_point_flop_per_byte for r in roofs] + [p.intensity_flop_per_byte for p in points]
        xs = [x for x in xs if np.isfinite(x) and x > 0]
        lo, hi = min(xs + [1.0]), max(xs + [1.0])
        intensity_range = (10 ** np.floor(np.log10(lo) - 1), 10 ** np.ceil(np.log10(hi) + 0.5))
    x = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 400)
    # a part keeps its course-wide style, unless several roofs (dtypes) of one part share the chart
    ids = [r.part_id for r in roofs]
    by_part = None not in ids and len(set(ids)) == len(ids)
    for i, roof in enumerate(roofs):
        if by_part:
            look = part_style(roof.part_id)
            colour, style = look.colour, look.linestyle
        else:
            colour, style = LINE_COLOURS[i % len(LINE_COLOURS)], LINESTYLES[i % len(LINESTYLES)]
        y = attainable_flops_per_s(x, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s) / TERA
        rx = roof.ridge_point_flop_per_byte
        many = len(roofs) > 1  # then ridge values go in the legend, where they cannot overlap
        ax.plot(x, y, color=colour, linestyle=style, linewidth=2.2,
                label=f"{roof.label}: {num(roof.peak_flops_per_s / TERA)} TFLOP/s, "
                      f"{num(roof.bandwidth_bytes_per_s / TERA)} TB/s" + (f", ridge {num(rx)}" if many else ""))
        if mark_ridges:
            ax.plot([rx], [roof.peak_flops_per_s / TERA], marker="|", markersize=14, color=colour)
            if not many:
                ax.annotate(f"ridge {rx:,.0f}", (rx, roof.peak_flops_per_s / TERA), textcoords="offset points",
                            xytext=(4, 6 + 11 * i), fontsize=MIN_FONT_PT, color=colour)
    for j, pt in enumerate(points):
        marker = MARKERS[j % len(MARKERS)]
        ax.plot([pt.intensity_flop_per_byte], [pt.flops_per_s / TERA], marker=marker, markersize=9,
                linestyle="none", color="black", markerfacecolor=PALETTE[(j + 3) % len(PALETTE)],
                label=f"{pt.label}: I = {num(pt.intensity_flop_per_byte)} FLOP/byte, "
                      f"{num(pt.flops_per_s / TERA)} TFLOP/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*intensity_range)
    # Plain numbers (0.1, 1, 10, 1,000) read faster than 10^k and need no mathtext (slow to render).
    ax.xaxis.set_major_formatter(FuncFormatter(_tick))
    ax.yaxis.set_major_formatter(FuncFormatter(_tick))
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("Attainable performance (TFLOP/s, 1 TFLOP/s = 10¹² FLOP/s)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.4)
    if fast:
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_minor_locator(NullLocator())
    else:
        ax.grid(True, which="minor", alpha=0.12)
    ax.legend(fontsize=MIN_FONT_PT, loc="lower right", framealpha=0.9)
    set_alt(fig, alt or roofline_alt(title, roofs, points))
    return fig, ax


def roofline_alt(title: str, roofs: Sequence[Roof], points: Sequence[Point] = ()) -> str:
    """A sentence per roof and per point: what a reader who cannot see the chart needs from it."""

    said = [f"{title}. Log-log roofline chart, attainable TFLOP/s against FLOP/byte."]
    for r in roofs:
        said.append(f"{r.label}: compute roof {num(r.peak_flops_per_s / TERA)} TFLOP/s, bandwidth "
                    f"{num(r.bandwidth_bytes_per_s / TERA)} TB/s, ridge at {num(r.ridge_point_flop_per_byte)} FLOP/byte.")
    ridge = min((r.ridge_point_flop_per_byte for r in roofs), default=None)
    for pt in points:
        side = "" if ridge is None else (" left of the ridge: memory-bound" if pt.intensity_flop_per_byte < ridge
                                         else " at or right of the ridge: compute-bound")
        said.append(f"{pt.label}: {num(pt.intensity_flop_per_byte)} FLOP/byte, "
                    f"{num(pt.flops_per_s / TERA)} TFLOP/s,{side}.")
    return " ".join(said)


class RooflineCanvas:
    """A dashboard roofline that redraws only what moves.

    The roofs, axes and labels are rendered once per (title, roofs) and kept as a bitmap; each
    update restores that bitmap, draws the point on top and encodes a PNG. A slider move that only
    moves the point costs a few milliseconds instead of a full matplotlib draw.
    """

    def __init__(self, figsize: tuple[float, float] = (7.5, 4.8), dpi: float = CHART_DPI,
                 intensity_range: tuple[float, float] = (0.1, 1e5), max_cached: int = 6) -> None:
        self.figsize, self.dpi, self.intensity_range = figsize, dpi, intensity_range
        self._figures = CachedFigure(self._build, max_cached)

    @property
    def misses(self) -> int:
        return self._figures.misses

    def _build(self, key):
        title, roofs = key
        fig = bare_figure(self.figsize, self.dpi)
        ax = fig.add_subplot()
        fig.subplots_adjust(left=0.11, right=0.95, bottom=0.11, top=0.93)
        roofline_chart(list(roofs), [], title=title, intensity_range=self.intensity_range, ax=ax, fast=True)
        set_roof_ylim(ax, roofs, self.intensity_range)
        marker, label = moving_point_artists(ax)
        return fig, (marker, label)

    def render_png(self, roofs: Sequence[Roof], point: Point | None, title: str) -> bytes:
        """PNG bytes of the roofline with ``point`` on it."""

        def update(state):
            if point is None:
                return []
            return place_moving_point(*state, point, self.intensity_range)

        return self._figures.render((title, tuple(roofs)), update)

    def close(self) -> None:
        self._figures.close()


def set_roof_ylim(ax, roofs: Sequence[Roof], intensity_range: tuple[float, float]) -> None:
    """Fix the y-range so every point on these roofs is visible (no autoscaling per update)."""
    lo = min(r.bandwidth_bytes_per_s * intensity_range[0] for r in roofs) / TERA
    hi = max(r.peak_flops_per_s for r in roofs) / TERA
    ax.set_ylim(lo * 0.7, hi * 2.5)


def moving_point_artists(ax, colour_index: int = 3):
    """An animated marker and label for a point that moves on every update."""
    marker, = ax.plot([], [], marker=MARKERS[0], markersize=11, linestyle="none", color="black",
                      markerfacecolor=PALETTE[colour_index % len(PALETTE)], animated=True)
    label = ax.annotate("", (1, 1), textcoords="offset points", xytext=(10, -14), fontsize=MIN_FONT_PT, animated=True,
                        bbox={"boxstyle": "round", "fc": "white", "ec": "0.6", "alpha": 0.9})
    return marker, label


def place_moving_point(marker, label, point: Point, intensity_range: tuple[float, float]) -> list:
    """Move ``marker`` and ``label`` to ``point``; returns the artists to draw."""
    x, y = point.intensity_flop_per_byte, point.flops_per_s / TERA
    marker.set_data([x], [y])
    label.xy = (x, y)
    label.set_text(f"{point.label}\nI = {num(x)} FLOP/byte, {num(y)} TFLOP/s")
    right_half = x > np.sqrt(intensity_range[0] * intensity_range[1]) * 10
    label.set_horizontalalignment("right" if right_half else "left")
    label.set_position((-10, -24) if right_half else (10, -14))
    return [marker, label]


def log_ticks(lo: float, hi: float, max_ticks: int = 6) -> list[float]:
    """Tick values for a log axis from ``lo`` to ``hi`` (both > 0, ``hi / lo`` ≥ 3): decades when
    there are three or more, else 1-3, 1-2-5, 1-1.5-2-3-5-7 or every digit, so at least two ticks
    (three from a range of 3 up) are labelled."""
    if not (0 < lo < hi):
        raise ValueError(f"a log axis needs 0 < lo < hi, got lo={lo!r}, hi={hi!r}")
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    ticks: list[float] = []
    for mantissas in ((1,), (1, 3), (1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [float(f"{m}e{k}") for k in range(k0, k1 + 1) for m in mantissas if lo <= float(f"{m}e{k}") <= hi]
        if len(ticks) >= 3:
            break
    if len(ticks) > max_ticks:
        step = math.ceil(len(ticks) / max_ticks)
        ticks = ticks[::step]
    return ticks


def padded_log_range(lo: float, hi: float, below: float, above: float, min_ratio: float = 4.0):
    """``(lo, hi)`` widened by the factors ``below`` and ``above``, then to at least ``min_ratio``."""
    lo, hi = lo / below, hi * above
    if hi / lo < min_ratio:
        mid = math.sqrt(lo * hi)
        lo, hi = mid / math.sqrt(min_ratio), mid * math.sqrt(min_ratio)
    return lo, hi


def set_log_axis(axis, lo: float, hi: float) -> None:
    """Fixed range, fixed plain-number ticks (at least two labelled), no minor ticks."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    (axis.axes.set_xlim if axis.axis_name == "x" else axis.axes.set_ylim)(lo, hi)
    axis.set_major_locator(FixedLocator(log_ticks(lo, hi)))
    axis.set_major_formatter(FuncFormatter(lambda v, _p: num(v)))
    axis.set_minor_locator(NullLocator())
