"""Lesson 2 dashboard: several parts on one chart, their ridge points, and a verdict for one
intensity on each.

Each part keeps its course-wide colour, marker and line style (:func:`part_style`). Its ridge is
marked on its roof with its marker (hollow) and its value is in the legend, where labels cannot
collide; the parts' points at the chosen intensity use the same marker, filled, and are spread
sideways where they would overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.dtypes import DTYPES
from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.roofline import attainable_flops_per_s, bound
from ...core.units import num
from ..charts import MIN_FONT_PT, Roof, part_style, roofline_chart, set_roof_ylim
from ..fastfig import CachedFigure, bare_figure, message_png
from ._panel import Frame, build_dashboard
from .lesson01 import percent_of, raise_small_text

INTENSITY_RANGE = (0.1, 1e5)
TERA = 1e12
#: size of the points at the chosen intensity, in points; neighbours closer than this are spread
POINT_SIZE_PT = 10
RIDGE_SIZE_PT = 9
DPI = 80
#: up to this many parts the legend sits inside the axes (lower right); more go beside them
INSIDE_LEGEND_MAX = 5
AXES_WIDTH_IN, LEGEND_WIDTH_IN = 7.5, 4.0


@dataclass(frozen=True)
class PartVerdict:
    part: str
    ridge_point_flop_per_byte: float | None  #: None: the part has no rate for the dtype
    attainable_flops_per_s: float | None
    fraction_of_peak: float | None
    bound: str | None

    def line(self, intensity: float) -> str:
        if self.ridge_point_flop_per_byte is None:
            return f"{self.part}: no rate for this dtype in the catalog"
        side = "left of" if self.bound == "memory" else "at or right of"
        return (f"{self.part}: ridge {num(self.ridge_point_flop_per_byte)} FLOP/byte; {num(intensity)} FLOP/byte is "
                f"{side} it → {self.bound}-bound, {num(self.attainable_flops_per_s / TERA)} TFLOP/s "
                f"({percent_of(self.fraction_of_peak)} of peak)")


@dataclass(frozen=True)
class Lesson02View:
    dtype: str
    intensity_flop_per_byte: float
    roofs: tuple[Roof, ...]
    verdicts: tuple[PartVerdict, ...]
    error: str | None = None

    @property
    def text(self) -> str:
        if self.error:
            return self.error
        return "\n".join(v.line(self.intensity_flop_per_byte) for v in self.verdicts)


def lesson02_view(part_ids, dtype: str, intensity_flop_per_byte: float) -> Lesson02View:
    """Ridge points and verdicts for ``part_ids`` in ``dtype`` at one intensity (FLOP/byte)."""
    parts = [get_part(p) for p in part_ids]
    if not parts:
        return Lesson02View(dtype, intensity_flop_per_byte, (), (), error="Choose at least one part.")
    if dtype not in DTYPES:
        raise RooflineInputError(f"unknown dtype {dtype!r} (allowed: {', '.join(DTYPES)})")
    roofs, verdicts = [], []
    for p in parts:
        if dtype not in p.dense_flops_per_s:
            verdicts.append(PartVerdict(p.id, None, None, None, None))
            continue
        peak, bw = p.peak_flops_per_s(dtype), p.memory_bandwidth_bytes_per_s
        att = float(attainable_flops_per_s(intensity_flop_per_byte, peak, bw))
        roofs.append(Roof(f"{p.id} {dtype}", peak, bw, p.id))
        verdicts.append(PartVerdict(p.id, peak / bw, att, att / peak, bound(intensity_flop_per_byte, peak, bw)))
    return Lesson02View(dtype, float(intensity_flop_per_byte), tuple(roofs), tuple(verdicts))


def _legend_label(roof: Roof) -> str:
    return (f"{roof.part_id}: {num(roof.peak_flops_per_s / TERA)} TFLOP/s, "
            f"{num(roof.bandwidth_bytes_per_s / TERA)} TB/s, ridge {num(roof.ridge_point_flop_per_byte)} FLOP/byte")


def _build(key):
    from matplotlib.lines import Line2D

    roofs, dtype = key
    fig = bare_figure((AXES_WIDTH_IN + (0 if len(roofs) <= INSIDE_LEGEND_MAX else LEGEND_WIDTH_IN), 4.8), DPI)
    ax = fig.add_subplot()
    width = fig.get_figwidth()
    fig.subplots_adjust(left=0.11 * AXES_WIDTH_IN / width, right=0.95 * AXES_WIDTH_IN / width, bottom=0.11, top=0.93)
    roofline_chart(list(roofs), [], title=f"Rooflines in {dtype.upper()} (dense datasheet figures)",
                   intensity_range=INTENSITY_RANGE, ax=ax, fast=True, mark_ridges=False)
    set_roof_ylim(ax, roofs, INTENSITY_RANGE)
    handles = []
    for roof in roofs:
        look = part_style(roof.part_id)
        # the ridge: the part's own marker, hollow, on the corner of its roof
        ax.plot([roof.ridge_point_flop_per_byte], [roof.peak_flops_per_s / TERA], marker=look.marker,
                markersize=RIDGE_SIZE_PT, linestyle="none", markerfacecolor="white", markeredgecolor=look.colour,
                markeredgewidth=2, zorder=4)
        handles.append(Line2D([], [], color=look.colour, linestyle=look.linestyle, linewidth=2.2, marker=look.marker,
                              markersize=RIDGE_SIZE_PT, markerfacecolor="white", markeredgecolor=look.colour,
                              markeredgewidth=2))
    legend = {"fontsize": MIN_FONT_PT, "title": "hollow marker: the part's ridge", "title_fontsize": MIN_FONT_PT,
              "framealpha": 0.92}
    if len(roofs) <= INSIDE_LEGEND_MAX:  # fits under the flat roofs, clear of the slopes
        ax.legend(handles, [_legend_label(r) for r in roofs], loc="lower right", **legend)
    else:  # beside the axes: a long legend inside would cover the roofs
        ax.legend(handles, [_legend_label(r) for r in roofs], loc="upper left", bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0.0, **legend)
    vline = ax.axvline(1.0, color="0.3", linestyle=":", linewidth=1.5, animated=True)
    markers = []
    for roof in roofs:
        look = part_style(roof.part_id)
        markers.append(ax.plot([], [], marker=look.marker, markersize=POINT_SIZE_PT, linestyle="none", color="black",
                               markerfacecolor=look.colour, markeredgewidth=1.2, animated=True, zorder=5)[0])
    raise_small_text(fig)
    return fig, (ax, vline, markers)


def dodge_offsets_px(points_px, size_px: float, x_bounds: tuple[float, float] | None = None) -> list[float]:
    """Sideways offsets (pixels) so no two markers of ``size_px`` at ``points_px`` (x, y) overlap.

    Markers are placed in the given order (the catalog's); each takes the smallest offset of
    0, -s, +s, -2s, +2s, ... that keeps it clear of the ones placed before it (and, with
    ``x_bounds``, whole inside them: at the chart's edge the spread goes inwards), so a marker with
    no neighbour stays exactly on its roof."""
    lo, hi = x_bounds if x_bounds is not None else (-np.inf, np.inf)
    placed: list[tuple[float, float]] = []
    offsets = []
    for x, y in points_px:
        dx = 0.0
        for k in range(2 * len(placed) + 2):
            choices = (0.0,) if k == 0 else (-k * size_px, k * size_px)
            fits = [d for d in choices if lo + size_px / 2 <= x + d <= hi - size_px / 2
                    and all(abs(x + d - px) >= size_px or abs(y - py) >= size_px for px, py in placed)]
            if fits:
                dx = fits[0]
                break
        placed.append((x + dx, y))
        offsets.append(dx)
    return offsets


def point_positions(ax, view: Lesson02View) -> list[tuple[float, float]]:
    """Data coordinates of each part's marker at the chosen intensity, spread where they would overlap."""
    x = view.intensity_flop_per_byte
    ys = [float(attainable_flops_per_s(x, r.peak_flops_per_s, r.bandwidth_bytes_per_s)) / TERA for r in view.roofs]
    disp = ax.transData.transform(np.column_stack([np.full(len(ys), x), ys]))
    size_px = POINT_SIZE_PT * DPI / 72 + 2
    disp[:, 0] += dodge_offsets_px(disp.tolist(), size_px, (ax.bbox.x0, ax.bbox.x1))
    data = ax.transData.inverted().transform(disp)
    return [(float(px), y) for (px, _), y in zip(data, ys)]


class Lesson02Chart:
    """Cached chart: roofs drawn once per selection, the intensity line and markers per update."""

    def __init__(self) -> None:
        self.figures = CachedFigure(_build)

    def png(self, view: Lesson02View) -> bytes:
        if not view.roofs:
            return message_png(view.error or "None of the chosen parts has a rate for this dtype.")

        def update(state):
            ax, vline, markers = state
            x = view.intensity_flop_per_byte
            vline.set_xdata([x, x])
            for marker, (px, py) in zip(markers, point_positions(ax, view)):
                marker.set_data([px], [py])
            return [vline, *markers]

        return self.figures.render((view.roofs, view.dtype), update)


def lesson02_alt(view: Lesson02View) -> str:
    """The chart's message in words, with the live numbers."""
    said = [(f"Log-log rooflines in {view.dtype.upper()}, attainable TFLOP/s against FLOP/byte, for "
             f"{len(view.roofs)} part{'s' if len(view.roofs) != 1 else ''}; a dotted vertical line at "
             f"{num(view.intensity_flop_per_byte)} FLOP/byte.")]
    for v in view.verdicts:
        if v.ridge_point_flop_per_byte is None:
            said.append(f"{v.part} is not drawn: no {view.dtype.upper()} rate.")
        else:
            said.append(f"{v.part}: ridge {num(v.ridge_point_flop_per_byte)} FLOP/byte; at the line "
                        f"{num(v.attainable_flops_per_s / TERA)} TFLOP/s, {v.bound}-bound.")
    return " ".join(said)


def _summary(view: Lesson02View) -> str:
    drawn = [v for v in view.verdicts if v.ridge_point_flop_per_byte is not None]
    if not drawn:
        return (f"None of the chosen parts has a {view.dtype.upper()} rate in the catalog: choose another dtype "
                "or other parts.")
    memory = [v.part for v in drawn if v.bound == "memory"]
    compute = [v.part for v in drawn if v.bound == "compute"]
    best = max(drawn, key=lambda v: v.attainable_flops_per_s)
    sides = []
    if memory:
        sides.append(f"memory-bound on {', '.join(memory)}")
    if compute:
        sides.append(f"compute-bound on {', '.join(compute)}")
    return (f"At {num(view.intensity_flop_per_byte)} FLOP/byte in {view.dtype.upper()}, a kernel is "
            f"{' and '.join(sides)}; {best.part} gives the most, {num(best.attainable_flops_per_s / TERA)} TFLOP/s.")


def lesson02_frame(view: Lesson02View, chart: Lesson02Chart) -> Frame:
    """What the dashboard panel shows for ``view``: a summary, one line per part, the chart, alt text."""
    if view.error:
        return Frame(verdict=view.error, png=None, alt="", error=True)
    lines = tuple(v.line(view.intensity_flop_per_byte) for v in view.verdicts)
    if not view.roofs:
        return Frame(verdict=_summary(view), png=None, alt="", notes=lines, error=True)
    note = ("Markers that would overlap are spread sideways around the dotted line; each part's marker "
            "is at the same intensity.") if len(view.roofs) > 1 else ""
    return Frame(verdict=_summary(view), png=chart.png(view), alt=lesson02_alt(view),
                 notes=lines + ((note,) if note else ()))


def lesson02_dashboard(parts=("h100-sxm", "h200", "b200", "mi300x"), dtype: str = "bf16"):
    """Choose parts and a dtype; see their roofs, ridge points and a verdict at one intensity."""
    import ipywidgets as widgets
    from IPython.display import display

    style = {"description_width": "initial"}
    parts_w = widgets.SelectMultiple(options=list_parts(), value=tuple(parts), rows=7, description="parts",
                                     style=style, layout=widgets.Layout(width="15em"))
    dtype_w = widgets.Dropdown(options=DTYPES, value=dtype, description="dtype", style=style,
                               layout=widgets.Layout(width="10em"))
    intensity_w = widgets.FloatLogSlider(value=32.0, base=10, min=-1, max=5, step=0.05, description="FLOP/byte",
                                         readout_format=",.3r", style=style, layout=widgets.Layout(width="26em"))
    chart = Lesson02Chart()

    def render(parts, dtype, intensity) -> Frame:
        return lesson02_frame(lesson02_view(parts, dtype, intensity), chart)

    ui = build_dashboard({"parts": parts_w, "dtype": dtype_w, "intensity": intensity_w},
                         [["parts", "dtype", "intensity"]], render)
    display(ui)
    return ui
