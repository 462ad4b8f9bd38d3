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

from ...core.dtypes import DTYPES
from ...core.errors import RooflineInputError
from ...core.hardware import compute_dtypes, list_parts
from ...core.units import TERA, num
from ...topics.datasheets import PartAtIntensity, parts_at_intensity
from ...topics.levers import AT_RIDGE_TOLERANCE
from ..charts import MIN_FONT_PT, Roof, part_style, roofline_chart, set_roof_ylim
from ..dashboard_base import FigurePerKeyChart, dashboard, dropdown, log_slider, multiple, one_of, percent_of
from ..dashboard_base import raise_small_text
from ..fastfig import CHART_DPI as DPI, bare_figure, message_png
from ..labels import ring_sizes_pt
from ..panel import Frame

INTENSITY_RANGE = (0.1, 1e5)
#: the x-axis reaches this factor beyond the slider's ends, so the dotted line shows at both ends
X_PAD_FACTOR = 1.6
AXIS_RANGE = (INTENSITY_RANGE[0] / X_PAD_FACTOR, INTENSITY_RANGE[1] * X_PAD_FACTOR)
#: size of a point at the chosen intensity that overlaps no other, in points
POINT_SIZE_PT = 10
#: sizes (points) of the largest and smallest point of a group of overlapping points
LARGEST_POINT_PT, SMALLEST_POINT_PT = 20.0, 6.0
RIDGE_SIZE_PT = 9
#: up to this many parts the legend sits inside the axes (lower right); more go beside them
INSIDE_LEGEND_MAX = 5
AXES_WIDTH_IN, LEGEND_WIDTH_IN = 7.5, 4.0


class PartVerdict(PartAtIntensity):
    """One part at the chosen intensity (:class:`~roofline_lessons.topics.datasheets.PartAtIntensity`), in words."""

    def line(self, intensity: float) -> str:
        if self.ridge_point_flop_per_byte is None:
            return f"{self.part}: no rate for this dtype in the catalog"
        at_ridge = self.regime(intensity) == "at the ridge"
        side = "at the ridge" if at_ridge else f"{'left' if self.bound == 'memory' else 'right'} of it"
        verdict = "both roofs meet there" if at_ridge else f"{self.bound}-bound"
        return (f"{self.part}: ridge {num(self.ridge_point_flop_per_byte)} FLOP/byte; {num(intensity)} FLOP/byte is "
                f"{side} → {verdict}, {num(self.attainable_flops_per_s / TERA)} TFLOP/s "
                f"({self.share_of_peak()} of peak)")

    def share_of_peak(self) -> str:
        """The share of peak in words; a memory-bound point never reads "100 %" (it is below the peak,
        by less than the rounding), it reads "just under 100 %"."""
        text = percent_of(self.fraction_of_peak)
        return f"just under {text}" if self.bound == "memory" and text == percent_of(1.0) else text


@dataclass(frozen=True)
class Lesson02View:
    dtype: str
    intensity_flop_per_byte: float
    roofs: tuple[Roof, ...]
    verdicts: tuple[PartVerdict, ...]
    error: str | None = None

    @property
    def text(self) -> str:
        return self.error or "\n".join(v.line(self.intensity_flop_per_byte) for v in self.verdicts)


def lesson02_view(part_ids, dtype: str, intensity_flop_per_byte: float) -> Lesson02View:
    """Ridge points and verdicts for ``part_ids`` in ``dtype`` at one intensity (FLOP/byte); no part, an
    unknown part or an unknown dtype gives a view with ``error``."""
    if not part_ids:
        return Lesson02View(dtype, intensity_flop_per_byte, (), (), error="Choose at least one part.")
    try:
        roofs, found = parts_at_intensity(part_ids, one_of("dtype", dtype, DTYPES), intensity_flop_per_byte)
    except RooflineInputError as exc:
        return Lesson02View(dtype, intensity_flop_per_byte, (), (), error=str(exc))
    return Lesson02View(dtype, float(intensity_flop_per_byte), roofs, tuple(PartVerdict(**vars(v)) for v in found))


def _skeleton(key) -> dict:
    """The figure for (roofs, dtype): roofs, hollow ridge markers and legend, and the moving artists."""
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
    labels = [f"{r.part_id}: {num(r.peak_flops_per_s / TERA)} TFLOP/s, {num(r.bandwidth_bytes_per_s / TERA)} TB/s, "
              f"ridge {num(r.ridge_point_flop_per_byte)} FLOP/byte" for r in roofs]
    legend = {"fontsize": MIN_FONT_PT, "title": "hollow marker: the part's ridge", "title_fontsize": MIN_FONT_PT,
              "framealpha": 0.92}
    if len(roofs) <= INSIDE_LEGEND_MAX:  # fits under the flat roofs, clear of the slopes
        ax.legend(handles, labels, loc="lower right", **legend)
    else:  # beside the axes: a long legend inside would cover the roofs
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **legend)
    vline = ax.axvline(1.0, color="0.3", linestyle=":", linewidth=1.5, animated=True)
    markers = []
    for roof in roofs:
        look = part_style(roof.part_id)
        markers.append(ax.plot([], [], marker=look.marker, markersize=POINT_SIZE_PT, linestyle="none", color="black",
                               markerfacecolor=look.colour, markeredgewidth=1.2, animated=True, zorder=5)[0])
    raise_small_text(fig)
    return {"fig": fig, "ax": ax, "vline": vline, "markers": markers}


class Lesson02Chart(FigurePerKeyChart):
    """Roofs, ridges and legend drawn once per (roofs, dtype), in a figure that widens to hold a long
    legend beside the axes; the intensity line and each part's point per update."""

    def figure_key(self, view: Lesson02View):
        return view.roofs, view.dtype

    skeleton = staticmethod(_skeleton)

    def no_chart(self, view: Lesson02View) -> bytes | None:
        return None if view.roofs else message_png(view.error or "None of the chosen parts has a rate for this dtype.")

    def move(self, shared: dict, view: Lesson02View) -> list:
        ax, vline, markers = shared["ax"], shared["vline"], shared["markers"]
        x = view.intensity_flop_per_byte
        vline.set_xdata([x, x])
        xy = point_positions(view)
        sizes = marker_sizes_pt(ax.transData.transform(xy), POINT_SIZE_PT * DPI / 72 + 2)
        for marker, (px, py), size in zip(markers, xy, sizes):
            marker.set_data([px], [py])
            marker.set_markersize(size)
        order = sorted(range(len(markers)), key=lambda i: -sizes[i])  # largest first: all show
        return [vline, *(markers[i] for i in order)]


def marker_sizes_pt(points_px, overlap_px: float) -> list[float]:
    """Marker size (points) for each point (pixels, x y): ``POINT_SIZE_PT`` for a point that
    overlaps no other; within a group of points closer than ``overlap_px`` to one another (along x and
    y), sizes step down evenly from ``LARGEST_POINT_PT`` to ``SMALLEST_POINT_PT`` in the given order,
    so that drawn largest first, each shows as a ring around the next. Nothing is moved."""
    return ring_sizes_pt(points_px, overlap_px, POINT_SIZE_PT, LARGEST_POINT_PT, SMALLEST_POINT_PT)


def point_positions(view: Lesson02View) -> list[tuple[float, float]]:
    """Data coordinates (FLOP/byte, TFLOP/s) of each drawn part's marker: on its own roof at the
    chosen intensity."""
    return [(view.intensity_flop_per_byte, v.attainable_flops_per_s / TERA) for v in view.verdicts
            if v.ridge_point_flop_per_byte is not None]


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


def _summary(view: Lesson02View) -> str:
    drawn = [v for v in view.verdicts if v.ridge_point_flop_per_byte is not None]
    if not drawn:
        article = "an" if view.dtype[:1].upper() in "AEFHILMNORSX" else "a"  # read aloud: "an FP8", "a BF16"
        return (f"None of the chosen parts has {article} {view.dtype.upper()} rate in the catalog: "
                "choose another dtype or other parts.")
    x, ridge = view.intensity_flop_per_byte, f"at the ridge (within {percent_of(AT_RIDGE_TOLERANCE)})"
    parts = {r: [v.part for v in drawn if v.regime(x) == r] for r in ("memory-bound", "compute-bound", "at the ridge")}
    sides = [f"{ridge if r == 'at the ridge' else r} on {', '.join(names)}" for r, names in parts.items() if names]
    best = max(drawn, key=lambda v: v.attainable_flops_per_s)
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
    controls = {"parts": multiple("parts", list_parts(), parts, rows=7, width="15em"),
                "dtype": dropdown("dtype", compute_dtypes(), dtype, "10em"),
                "intensity": log_slider("FLOP/byte", 32.0, -1, 5, 0.05, "26em", readout_format=",.3r")}
    chart = Lesson02Chart()
    return dashboard(controls, [["parts", "dtype", "intensity"]],
                     lambda parts, dtype, intensity: lesson02_frame(lesson02_view(parts, dtype, intensity), chart))
