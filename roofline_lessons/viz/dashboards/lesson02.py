"""Lesson 2 dashboard: several parts on one chart, their ridge points, and a verdict for one
intensity on each.

Each part keeps its course-wide colour, marker and line style (:func:`part_style`). Its ridge is
marked on its roof with its marker (hollow) and its value is in the legend, where labels cannot
collide; the parts' points at the chosen intensity use the same marker, filled, and sit exactly on
their own roofs. Points that would hide each other are told apart by size: within a group of
overlapping points the sizes step down and the largest is drawn first, so every one shows as a
ring around the next (never by moving a point off its roof).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.dtypes import DTYPES
from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.roofline import attainable_flops_per_s, bound
from ...core.units import num
from ...topics.levers import AT_RIDGE_TOLERANCE, regime
from ..charts import MIN_FONT_PT, Roof, part_style, roofline_chart, set_roof_ylim
from ..fastfig import CHART_DPI, CachedFigure, bare_figure, message_png
from ..panel import Frame, build_dashboard
from .lesson01 import percent_of, raise_small_text

INTENSITY_RANGE = (0.1, 1e5)
#: the x-axis reaches this factor beyond the slider's ends, so the dotted line shows at both ends
X_PAD_FACTOR = 1.6
AXIS_RANGE = (INTENSITY_RANGE[0] / X_PAD_FACTOR, INTENSITY_RANGE[1] * X_PAD_FACTOR)
TERA = 1e12
#: size of a point at the chosen intensity that overlaps no other, in points
POINT_SIZE_PT = 10
#: sizes (points) of the largest and smallest point of a group of overlapping points
LARGEST_POINT_PT, SMALLEST_POINT_PT = 20.0, 6.0
RIDGE_SIZE_PT = 9
DPI = CHART_DPI
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
        where = self.regime(intensity)
        if where == "at the ridge":
            side, verdict = "at the ridge", "both roofs meet there"
        else:
            side = f"{'left' if self.bound == 'memory' else 'right'} of it"
            verdict = f"{self.bound}-bound"
        return (f"{self.part}: ridge {num(self.ridge_point_flop_per_byte)} FLOP/byte; {num(intensity)} FLOP/byte is "
                f"{side} → {verdict}, {num(self.attainable_flops_per_s / TERA)} TFLOP/s "
                f"({self.share_of_peak()} of peak)")

    def regime(self, intensity: float) -> str:
        """``"memory-bound"``, ``"compute-bound"`` or ``"at the ridge"`` (within ``AT_RIDGE_TOLERANCE``)."""
        return regime(intensity, self.ridge_point_flop_per_byte)

    def share_of_peak(self) -> str:
        """The share of peak in words; a memory-bound point never reads "100 %" (it is below the peak,
        by less than the rounding), it reads "just under 100 %"."""
        text = percent_of(self.fraction_of_peak)
        if self.bound == "memory" and text == percent_of(1.0):
            return f"just under {text}"
        return text


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
                   intensity_range=AXIS_RANGE, ax=ax, fast=True, mark_ridges=False)
    set_roof_ylim(ax, roofs, AXIS_RANGE)
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


def marker_sizes_pt(points_px, overlap_px: float) -> list[float]:
    """Marker size (points) for each point (pixels, x y): ``POINT_SIZE_PT`` for a point that
    overlaps no other; within a group of points closer than ``overlap_px`` to one another, sizes
    step down evenly from ``LARGEST_POINT_PT`` to ``SMALLEST_POINT_PT`` in the given order, so that
    drawn largest first, each shows as a ring around the next. Nothing is moved."""
    pts = np.asarray(points_px, dtype=float).reshape(-1, 2)
    n = len(pts)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if abs(pts[i, 0] - pts[j, 0]) < overlap_px and abs(pts[i, 1] - pts[j, 1]) < overlap_px:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    sizes = [float(POINT_SIZE_PT)] * n
    for members in groups.values():
        if len(members) > 1:
            for size, i in zip(np.linspace(LARGEST_POINT_PT, SMALLEST_POINT_PT, len(members)), members):
                sizes[i] = float(size)
    return sizes


def point_positions(view: Lesson02View) -> list[tuple[float, float]]:
    """Data coordinates (FLOP/byte, TFLOP/s) of each drawn part's marker: on its own roof at the
    chosen intensity."""
    x = view.intensity_flop_per_byte
    return [(x, float(attainable_flops_per_s(x, r.peak_flops_per_s, r.bandwidth_bytes_per_s)) / TERA)
            for r in view.roofs]


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
            xy = point_positions(view)
            sizes = marker_sizes_pt(ax.transData.transform(xy), POINT_SIZE_PT * DPI / 72 + 2)
            for marker, (px, py), size in zip(markers, xy, sizes):
                marker.set_data([px], [py])
                marker.set_markersize(size)
            order = sorted(range(len(markers)), key=lambda i: -sizes[i])  # largest first: all show
            return [vline, *(markers[i] for i in order)]

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
                        f"{num(v.attainable_flops_per_s / TERA)} TFLOP/s, {v.regime(view.intensity_flop_per_byte)}.")
    if len(view.roofs) > 1:
        said.append("Each filled marker sits on its own roof at the line; where markers overlap, they step down "
                    "in size, the largest drawn first.")
    return " ".join(said)


def _a(word: str) -> str:
    """The article for ``word`` read aloud: "an FP4", "an INT8", "an FP8", "a BF16"."""
    return "an" if word[:1].upper() in "AEFHILMNORSX" else "a"


def _summary(view: Lesson02View) -> str:
    drawn = [v for v in view.verdicts if v.ridge_point_flop_per_byte is not None]
    if not drawn:
        return (f"None of the chosen parts has {_a(view.dtype.upper())} {view.dtype.upper()} rate in the catalog: choose another dtype "
                "or other parts.")
    x = view.intensity_flop_per_byte
    memory = [v.part for v in drawn if v.regime(x) == "memory-bound"]
    compute = [v.part for v in drawn if v.regime(x) == "compute-bound"]
    ridge = [v.part for v in drawn if v.regime(x) == "at the ridge"]
    best = max(drawn, key=lambda v: v.attainable_flops_per_s)
    sides = []
    if memory:
        sides.append(f"memory-bound on {', '.join(memory)}")
    if compute:
        sides.append(f"compute-bound on {', '.join(compute)}")
    if ridge:
        sides.append(f"at the ridge (within {percent_of(AT_RIDGE_TOLERANCE)}) on {', '.join(ridge)}")
    return (f"At {num(view.intensity_flop_per_byte)} FLOP/byte in {view.dtype.upper()}, a kernel is "
            f"{' and '.join(sides)}; {best.part} gives the most, {num(best.attainable_flops_per_s / TERA)} TFLOP/s.")


def lesson02_frame(view: Lesson02View, chart: Lesson02Chart) -> Frame:
    """What the dashboard panel shows for ``view``: a summary, one line per part, the chart, alt text."""
    if view.error:
        return Frame(verdict=view.error, png=None, alt="", error=True)
    lines = tuple(v.line(view.intensity_flop_per_byte) for v in view.verdicts)
    if not view.roofs:
        return Frame(verdict=_summary(view), png=None, alt="", notes=lines, error=True)
    return Frame(verdict=_summary(view), png=chart.png(view), alt=lesson02_alt(view), notes=lines)


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
