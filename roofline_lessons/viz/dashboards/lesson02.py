"""Lesson 2 dashboard: several parts on one chart, their ridge points, and a verdict for one
intensity on each."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.dtypes import DTYPES
from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.roofline import attainable_flops_per_s, bound
from ..charts import MARKERS, PALETTE, Roof, roofline_chart, set_roof_ylim
from ..fastfig import CachedFigure, bare_figure, message_png

INTENSITY_RANGE = (0.1, 1e5)


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
        return (f"{self.part}: ridge {self.ridge_point_flop_per_byte:,.0f} FLOP/byte; I = {intensity:,.3g} is "
                f"{side} it -> {self.bound}-bound, {self.attainable_flops_per_s / 1e12:,.3g} TFLOP/s "
                f"({self.fraction_of_peak:.1%} of peak)")


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
        roofs.append(Roof(f"{p.id} {dtype}", peak, bw))
        verdicts.append(PartVerdict(p.id, peak / bw, att, att / peak, bound(intensity_flop_per_byte, peak, bw)))
    return Lesson02View(dtype, float(intensity_flop_per_byte), tuple(roofs), tuple(verdicts))


def _build(key):
    roofs, dtype = key
    fig = bare_figure((7.5, 4.8))
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.11, right=0.95, bottom=0.11, top=0.93)
    roofline_chart(list(roofs), [], title=f"Rooflines in {dtype} (dense datasheet figures)",
                   intensity_range=INTENSITY_RANGE, ax=ax, fast=True)
    set_roof_ylim(ax, roofs, INTENSITY_RANGE)
    vline = ax.axvline(1.0, color="0.3", linestyle=":", linewidth=1.5, animated=True)
    markers = [ax.plot([], [], marker=MARKERS[i % len(MARKERS)], markersize=9, linestyle="none", color="black",
                       markerfacecolor=PALETTE[i % len(PALETTE)], animated=True)[0] for i in range(len(roofs))]
    return fig, (vline, markers)


class Lesson02Chart:
    """Cached chart: roofs drawn once per selection, the intensity line and markers per update."""

    def __init__(self) -> None:
        self.figures = CachedFigure(_build)

    def png(self, view: Lesson02View) -> bytes:
        if not view.roofs:
            return message_png(view.error or "None of the chosen parts has a rate for this dtype.")

        def update(state):
            vline, markers = state
            x = view.intensity_flop_per_byte
            vline.set_xdata([x, x])
            for marker, roof in zip(markers, view.roofs):
                marker.set_data([x], [float(attainable_flops_per_s(x, roof.peak_flops_per_s,
                                                                    roof.bandwidth_bytes_per_s)) / 1e12])
            return [vline, *markers]

        return self.figures.render((view.roofs, view.dtype), update)


def lesson02_dashboard(parts=("h100-sxm", "h200", "b200", "mi300x"), dtype: str = "bf16"):
    """Choose parts and a dtype; see their roofs, ridge points and a verdict at one intensity."""
    import ipywidgets as widgets
    from IPython.display import Image, display

    parts_w = widgets.SelectMultiple(options=list_parts(), value=tuple(parts), rows=7, description="parts")
    dtype_w = widgets.Dropdown(options=DTYPES, value=dtype, description="dtype")
    intensity_w = widgets.FloatLogSlider(value=32.0, base=10, min=-1, max=5, step=0.05, description="FLOP/byte",
                                         readout_format=",.3g")
    chart = Lesson02Chart()

    def _update(parts, dtype, intensity):
        view = lesson02_view(parts, dtype, intensity)
        print(view.text)
        display(Image(data=chart.png(view), format="png"))

    out = widgets.interactive_output(_update, {"parts": parts_w, "dtype": dtype_w, "intensity": intensity_w})
    ui = widgets.VBox([widgets.HBox([parts_w, widgets.VBox([dtype_w, intensity_w])]), out])
    display(ui)
    return ui
