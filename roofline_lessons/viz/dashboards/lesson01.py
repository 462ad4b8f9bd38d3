"""Lesson 1 dashboard: one model, one part, one workload -> its point on the roofline.

The dtype control sets one format throughout (weights, activations, KV cache, every matmul). Its
effect is compared with BF16, the course's baseline, every time: whether the bytes change (the
point moves) and whether the peak changes (the compute roof moves) is computed from the two
placements, and said on the chart, in the verdict and in the alt text.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np

from ...core.dtypes import bytes_per_element
from ...core.errors import RooflineInputError
from ...core.hardware import compute_dtypes, get_part, list_parts
from ...core.memory import usable_capacity_bytes
from ...core.models import list_models
from ...core.placement import Placement
from ...core.units import TERA, binary, num
from ...topics.levers import formats_alike, one_format_placement
from ..charts import MIN_FONT_PT, Point, Roof, RooflineCanvas, moving_point_artists, place_moving_point, point_on_roof
from ..charts import roofline_chart
from ..dashboard_base import FigurePerKeyChart, dashboard, dropdown, percent_of, raise_small_text, slider, toggle
from ..display import set_alt
from ..fastfig import bare_figure, figure_png
from ..labels import DISTANCES_PX, fixed_boxes, leader_to, offset_label, place_label_boxes, roof_samples_px
from ..labels import text_size_px
from ..panel import Frame

BATCH_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
TOKEN_CHOICES = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
#: the format every other dtype is compared with
REFERENCE_DTYPE = "bf16"
INTENSITY_RANGE = (0.1, 1e5)
#: grey of the BF16 comparison roof and point
REFERENCE_GREY = "0.45"
#: room above the axes for two lines of dtype note, in points, and the axes' place in the figure
NOTE_BAND_PT = 30
AXES_BOX = {"left": 0.11, "right": 0.95, "bottom": 0.1, "top": 0.86}
FIGSIZE = (7.5, 5.2)
#: batching is advised only while doubling the batch still raises the intensity by at least this share
BATCHING_MIN_GAIN = 0.05
#: the point's label, set this far from the point or further (pixels), gets a leader line back to it
LABEL_LEADER_FROM_PX = 30.0


def _values(n: float) -> str:
    """``"1 byte"``, ``"2 bytes"``, ``"0.5 bytes"`` per value."""
    return f"{num(n)} byte" if n == 1 else f"{num(n)} bytes"


@dataclass(frozen=True)
class DtypeEffect:
    """What choosing ``dtype`` instead of BF16 does to this workload on this part.

    Intensities in FLOP/byte, peaks in FLOP/s; ``bytes_per_value`` of the weights, activations and
    KV cache (a model's own recurrent state keeps its format)."""

    dtype: str
    reference: str
    bytes_per_value: float
    reference_bytes_per_value: float
    intensity_flop_per_byte: float
    reference_intensity_flop_per_byte: float
    peak_flops_per_s: float
    reference_peak_flops_per_s: float
    reference_roof: Roof
    reference_point: Point
    twins: tuple[str, ...] = ()  #: other dtypes that draw exactly this chart on this part

    @property
    def point_moves(self) -> bool:
        return not np.isclose(self.intensity_flop_per_byte, self.reference_intensity_flop_per_byte, rtol=1e-9)

    @property
    def roof_moves(self) -> bool:
        return not np.isclose(self.peak_flops_per_s, self.reference_peak_flops_per_s, rtol=1e-9)

    @property
    def is_reference(self) -> bool:
        return self.dtype == self.reference

    def chart_note(self) -> str:
        """Two short lines for the chart (static for one dtype on one part)."""
        d, r = self.dtype.upper(), self.reference.upper()
        if self.is_reference:
            first = f"{d} is the baseline."  # the twins (FP16 on most parts) are named once, in the panel
            return first + f"\nPick another dtype to compare it with {r}: {r}'s point hollow, its roof grey dashed."
        if not self.point_moves:
            first = f"{d} and {r} move the same bytes ({_values(self.bytes_per_value)} per value):"
            second = (f"only the compute roof changes (grey dashed: {r})" if self.roof_moves
                      else f"same {num(self.peak_flops_per_s / TERA)} TFLOP/s peak too, so nothing moves")
            return first + "\n" + second
        first = (f"{d}: {_values(self.bytes_per_value)} per value, {r}: {num(self.reference_bytes_per_value)}, "
                 f"so the point moves (hollow: {r})")
        second = (f"compute roof {num(self.peak_flops_per_s / TERA)} TFLOP/s, "
                  f"{r}'s {num(self.reference_peak_flops_per_s / TERA)} (grey dashed)" if self.roof_moves
                  else f"compute roof unchanged at {num(self.peak_flops_per_s / TERA)} TFLOP/s")
        return first + "\n" + second

    def sentence(self) -> str:
        """The comparison with BF16 for the verdict (live numbers); ``""`` for BF16 itself."""
        if self.is_reference:
            return ""
        d, r = self.dtype.upper(), self.reference.upper()
        peak, ref_peak = num(self.peak_flops_per_s / TERA), num(self.reference_peak_flops_per_s / TERA)
        ridge = self.peak_flops_per_s / self.reference_roof.bandwidth_bytes_per_s
        if not self.point_moves:
            if self.roof_moves:
                return (f"{d} and {r} move the same bytes ({_values(self.bytes_per_value)} per value): only the "
                        f"compute roof changes, from {ref_peak} to {peak} TFLOP/s (ridge "
                        f"{num(self.reference_roof.ridge_point_flop_per_byte)} → {num(ridge)} FLOP/byte); the point "
                        f"stays at {num(self.intensity_flop_per_byte)} FLOP/byte.")
            return (f"{d} and {r} move the same bytes ({_values(self.bytes_per_value)} per value) and this part "
                    f"runs both at {peak} TFLOP/s: neither the point nor the roof moves.")
        ratio = self.intensity_flop_per_byte / self.reference_intensity_flop_per_byte
        way = "right" if ratio > 1 else "left"
        roof = (f"the compute roof moves from {ref_peak} to {peak} TFLOP/s" if self.roof_moves
                else f"the compute roof stays at {peak} TFLOP/s")
        return (f"{d} stores {_values(self.bytes_per_value)} per value where {r} stores "
                f"{_values(self.reference_bytes_per_value)}: the intensity goes from "
                f"{num(self.reference_intensity_flop_per_byte)} to {num(self.intensity_flop_per_byte)} FLOP/byte "
                f"({num(ratio)}×, the point moves {way}; the hollow marker is {r}'s point), and {roof}.")

    def twins_sentence(self) -> str:
        if not self.twins:
            return ""
        names = " and ".join(t.upper() for t in self.twins)
        verb = "draws" if len(self.twins) == 1 else "draw"
        return (f"{names} {verb} the same chart on this part: {_values(self.bytes_per_value)} per value and "
                f"{num(self.peak_flops_per_s / TERA)} TFLOP/s, like {self.dtype.upper()}.")


@dataclass(frozen=True)
class Lesson01View:
    """Everything the lesson-1 dashboard shows for one setting of its controls."""

    title: str
    roof: Roof | None
    point: Point | None
    ridge_point_flop_per_byte: float | None
    intensity_flop_per_byte: float | None
    intensity_per_weight_byte: float | None
    attainable_flops_per_s: float | None
    fraction_of_peak: float | None
    bound: str | None
    time_estimate_s: float | None
    verdict: str
    error: str | None = None
    dtype_effect: DtypeEffect | None = None
    part_id: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The verdict (what the base's chart and frame show)."""
        return self.verdict


def _dtype_effect(p: Placement, dtype: str, model_id: str, part_id: str, phase: str, batch: int,
                  tokens: int) -> DtypeEffect:
    """Place the same step in BF16 (and in the part's other formats, to find twins) and compare."""
    part = get_part(part_id)
    ref = p if dtype == REFERENCE_DTYPE else one_format_placement(model_id, part_id, REFERENCE_DTYPE, phase, batch,
                                                                  tokens)
    ref_roof = Roof(f"{part.id} {REFERENCE_DTYPE}", float(ref.peak_flops_per_s), ref.bandwidth_bytes_per_s, part.id)
    twins = formats_alike(model_id, part_id, dtype, phase, batch, tokens, {dtype: p, REFERENCE_DTYPE: ref})
    return DtypeEffect(
        dtype=dtype, reference=REFERENCE_DTYPE,
        bytes_per_value=bytes_per_element(dtype), reference_bytes_per_value=bytes_per_element(REFERENCE_DTYPE),
        intensity_flop_per_byte=float(p.intensity), reference_intensity_flop_per_byte=float(ref.intensity),
        peak_flops_per_s=float(p.peak_flops_per_s), reference_peak_flops_per_s=float(ref.peak_flops_per_s),
        reference_roof=ref_roof,
        reference_point=point_on_roof(f"{REFERENCE_DTYPE} point", float(ref.intensity), ref_roof),
        twins=twins)


def batching_gain(model_id: str, part_id: str, dtype: str, phase: str, batch: int, tokens: int,
                  intensity_flop_per_byte: float) -> float:
    """How much (a share: 0.3 = 30 %) doubling ``batch`` raises the intensity of this step."""
    doubled = float(one_format_placement(model_id, part_id, dtype, phase, 2 * batch, tokens).intensity)
    return doubled / intensity_flop_per_byte - 1


def lesson01_view(model_id: str, part_id: str, dtype: str, phase: str, batch: int, tokens: int) -> Lesson01View:
    """Compute the lesson-1 dashboard for one setting; bad combinations give a view with ``error``.

    ``tokens`` is the prompt length for prefill and the context already cached for decode.
    """
    try:
        p = one_format_placement(model_id, part_id, dtype, phase, batch, tokens)
        effect = _dtype_effect(p, dtype, model_id, part_id, phase, batch, tokens)
    except RooflineInputError as exc:
        return Lesson01View("Roofline", None, None, None, None, None, None, None, None, None,
                            verdict=f"Cannot place this: {exc}", error=str(exc))
    part = get_part(part_id)
    roof = Roof(f"{part.id} {dtype}", p.peak_flops_per_s, p.bandwidth_bytes_per_s, part.id)
    what = (f"{phase} of {tokens:,} tokens × batch {batch}" if phase == "prefill"
            else f"decode, batch {batch}, {tokens:,} tokens cached")
    intensity = float(p.intensity)
    point = point_on_roof(what, intensity, roof)
    bound = str(p.bound)
    frac = float(p.fraction_of_peak)
    ridge = float(p.ridge_point_flop_per_byte)
    if bound == "memory":
        gain = batching_gain(model_id, part_id, dtype, phase, batch, tokens, intensity)
        shop = ("batching, smaller weights or KV cache" if gain >= BATCHING_MIN_GAIN else
                f"smaller weights or KV cache; not batching: twice the batch raises I by only {percent_of(gain)}")
        verdict = (f"Memory-bound: I = {num(intensity)} FLOP/byte is {num(ridge / intensity)}× left of the ridge "
                   f"({num(ridge)} FLOP/byte). The best possible is {percent_of(frac)} of peak: shop for bytes "
                   f"({shop}), not FLOPs.")
    else:
        fastest = max(part.peak_flops_per_s(d) for d in part.dtypes)
        shop = ("a faster format, better tensor-core use" if float(p.peak_flops_per_s) < fastest * (1 - 1e-9)
                else f"better tensor-core use; {dtype.upper()} is already this part's fastest format")
        verdict = (f"Compute-bound: I = {num(intensity)} FLOP/byte is {num(intensity / ridge)}× right of the ridge "
                   f"({num(ridge)} FLOP/byte). The compute roof caps it: shop for FLOPs ({shop}).")
    if effect.sentence():
        verdict += " " + effect.sentence()
    capacity = usable_capacity_bytes(part_id)
    if not bool(p.fits_in_memory):
        held = ("weights, KV cache and recurrent state" if float(np.max(p.footprint.state_bytes)) > 0
                else "weights and KV cache")
        verdict += (f" Does not fit: {held} need {binary(float(p.memory_required_bytes))} of the "
                    f"{binary(capacity)} on this part; this placement is a what-if.")
    if p.context_beyond_model:
        verdict += (f" Note: {p.model.name} was built for at most {p.model.max_context_tokens:,} tokens "
                    "(config.json max_position_embeddings); this length is a what-if.")
    return Lesson01View(
        title=f"{p.model.name} on {part.name} ({dtype.upper()} throughout)",
        roof=roof,
        point=point,
        ridge_point_flop_per_byte=ridge,
        intensity_flop_per_byte=intensity,
        intensity_per_weight_byte=float(p.intensity_per_weight_byte),
        attainable_flops_per_s=float(p.attainable_flops_per_s),
        fraction_of_peak=frac,
        bound=bound,
        time_estimate_s=float(p.time_estimate_s),
        verdict=verdict,
        dtype_effect=effect,
        part_id=part.id,
        notes=(effect.twins_sentence(),) if effect.twins else (),
    )


def part_ylim(part_id: str, intensity_range: tuple[float, float] = INTENSITY_RANGE) -> tuple[float, float]:
    """TFLOP/s range that holds every roof of ``part_id`` (all its dtypes): switching the dtype
    keeps the axes still, so the point and the roof are seen to move, not the scale."""
    part = get_part(part_id)
    peaks = [part.peak_flops_per_s(d) for d in part.dtypes]
    lo = part.memory_bandwidth_bytes_per_s * intensity_range[0] / TERA
    return lo * 0.7, max(peaks) / TERA * 5  # room above the highest roof for the point's label


def _static_key(view: Lesson01View):
    e = view.dtype_effect
    ref_roof = e.reference_roof if e is not None and e.roof_moves else None
    ghost = e is not None and e.point_moves
    return (view.title, view.roof, ref_roof, ghost, e.chart_note() if e is not None else "", view.part_id)


def _draw_static(ax, key) -> None:
    """Roof, BF16 comparison roof, legend and the dtype note: everything that does not move."""
    from matplotlib.lines import Line2D

    title, roof, ref_roof, ghost, note, part_id = key
    roofline_chart([roof], [], title=title, intensity_range=INTENSITY_RANGE, ax=ax, fast=True)
    if part_id is not None:
        ax.set_ylim(*part_ylim(part_id))
    for text in ax.texts:  # the ridge label stays readable where the comparison roof crosses it
        text.set_bbox({"fc": "white", "ec": "none", "alpha": 0.85, "pad": 1})
    handles, labels = ax.get_legend_handles_labels()
    labels[0] = (f"{roof.label}: {num(roof.peak_flops_per_s / TERA)} TFLOP/s, "
                 f"{num(roof.bandwidth_bytes_per_s / TERA)} TB/s")
    if ref_roof is not None:
        x = np.logspace(np.log10(INTENSITY_RANGE[0]), np.log10(INTENSITY_RANGE[1]), 200)
        y = np.minimum(ref_roof.peak_flops_per_s, ref_roof.bandwidth_bytes_per_s * x) / TERA
        line, = ax.plot(x, y, color=REFERENCE_GREY, linestyle="--", linewidth=1.4, zorder=1)
        handles.append(line)
        labels.append(f"{REFERENCE_DTYPE.upper()} roof, for comparison: "
                      f"{num(ref_roof.peak_flops_per_s / TERA)} TFLOP/s, ridge "
                      f"{num(ref_roof.ridge_point_flop_per_byte)} FLOP/byte")
    if ghost:
        handles.append(Line2D([], [], marker="o", markersize=10, linestyle="none", markerfacecolor="white",
                              markeredgecolor=REFERENCE_GREY, markeredgewidth=2))
        labels.append(f"where {REFERENCE_DTYPE.upper()} puts the point")
    # upper left: above the bandwidth slope, which leaves that corner empty; the lower right is where
    # points at low intensity put their labels
    legend = ax.legend(handles, labels, fontsize=MIN_FONT_PT, loc="upper left", framealpha=0.9)
    if _covers_ridge_label(ax, legend):  # a ridge far right under a long legend (B200 FP8): wrap the legend
        wrapped = [label.replace(": ", ":\n", 1) if len(label) > 32 else label for label in labels]
        ax.legend(handles, wrapped, fontsize=MIN_FONT_PT, loc="upper left", framealpha=0.9)
    # The dtype note sits in a band between the axes and the title, where it can cover no roof,
    # ridge label or point; the band is kept for every dtype so the axes never jump.
    ax.set_title(title, pad=NOTE_BAND_PT)
    if note:
        ax.text(0.0, 1.012, note, transform=ax.transAxes, va="bottom", ha="left", fontsize=MIN_FONT_PT,
                color="0.15", linespacing=1.25)


def _covers_ridge_label(ax, legend) -> bool:
    """Whether ``legend`` covers a ridge label of ``ax``."""
    renderer = ax.figure.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    return any(text.get_text().startswith("ridge") and text.get_window_extent(renderer).overlaps(box)
               for text in ax.texts)


def _moving_artists(ax) -> dict:
    marker, label = moving_point_artists(ax)
    ghost, = ax.plot([], [], marker="o", markersize=10, linestyle="none", markerfacecolor="white",
                     markeredgecolor=REFERENCE_GREY, markeredgewidth=2, animated=True, zorder=2)
    arrow = ax.annotate("", (1, 1), xytext=(1, 1), animated=True,
                        arrowprops={"arrowstyle": "->", "color": REFERENCE_GREY, "lw": 1.6,
                                    "shrinkA": 7, "shrinkB": 8})
    leader, = ax.plot([], [], color="0.35", linewidth=0.8, animated=True, zorder=4, transform=None)
    return {"ax": ax, "marker": marker, "label": label, "ghost": ghost, "arrow": arrow, "leader": leader}


#: where the point's label may go: below right first (under a roof, as the course's charts do)
_LABEL_DIRECTIONS = ((1, -1, "left", "top"), (-1, 1, "right", "bottom"), (-1, -1, "right", "top"),
                     (1, 1, "left", "bottom"), (0, -1, "center", "top"), (0, 1, "center", "bottom"),
                     # straight below or above, the box ending at the point: near the chart's right edge
                     (0, -1, "right", "top"), (0, 1, "right", "bottom"), (0, -1, "left", "top"),
                     (0, 1, "left", "bottom"))


class Lesson01Chart(FigurePerKeyChart):
    """The lesson-1 chart: roof, comparison roof, legend and dtype note drawn once per figure (one per
    title, roof, dtype note and part); the point, BF16's hollow point and the arrow between them, and
    the point's label (set where it covers no roof, no ridge label, no legend and neither marker), per
    update."""

    figure_key = staticmethod(_static_key)

    def skeleton(self, key) -> dict:
        fig = bare_figure(FIGSIZE)
        ax = fig.add_subplot()
        fig.subplots_adjust(**AXES_BOX)
        _draw_static(ax, key)
        shared = _moving_artists(ax)
        raise_small_text(fig)
        shared.update(fig=fig, roofs=[r for r in (key[1], key[2]) if r is not None])
        return shared

    def no_chart(self, view: Lesson01View) -> bytes | None:
        return figure_png(lesson01_draw(view)) if view.roof is None else None

    def move(self, shared: dict, view: Lesson01View) -> list:
        ax, marker, label, ghost, arrow = (shared[k] for k in ("ax", "marker", "label", "ghost", "arrow"))
        if "renderer" not in shared:  # what never moves, in pixels, read once
            shared["renderer"] = renderer = ax.figure.canvas.get_renderer()
            shared.update(line_px=roof_samples_px(ax, shared["roofs"], INTENSITY_RANGE),
                          static=fixed_boxes(ax, renderer, (label, arrow)), frame=tuple(ax.bbox.extents))
        drawn = []
        x, y = view.point.intensity_flop_per_byte, view.point.flops_per_s / TERA
        px, py = ax.transData.transform((x, y))
        obstacles = list(shared["static"]) + [(px - 9, py - 9, px + 9, py + 9)]
        line_px = shared["line_px"]
        e = view.dtype_effect
        if e is not None and e.point_moves:
            g = e.reference_point
            gx, gy = g.intensity_flop_per_byte, g.flops_per_s / TERA
            ghost.set_data([gx], [gy])
            arrow.xy = (x, y)
            arrow.set_position((gx, gy))
            drawn += [ghost, arrow]
            qx, qy = ax.transData.transform((gx, gy))
            obstacles += [(qx - 8, qy - 8, qx + 8, qy + 8)]
            # the arrow: samples along it count like the roofs' samples, so no label covers it
            f = np.linspace(0.0, 1.0, 24)[:, None]
            line_px = np.vstack([line_px, np.hstack([qx + f * (px - qx), qy + f * (py - qy)])])
        place_moving_point(marker, label, view.point, INTENSITY_RANGE)
        placed, = place_label_boxes([(px, py)], [text_size_px(label, shared["renderer"])], obstacles, line_px,
                                    shared["frame"], directions=_LABEL_DIRECTIONS,
                                    distances=DISTANCES_PX + (170.0, 230.0))
        drawn += leader_to(shared["leader"], (px, py), placed[4], LABEL_LEADER_FROM_PX)  # a far label points back
        offset_label(label, (px, py), placed, ax.figure.dpi)
        return drawn + [marker, label]


def lesson01_draw(view: Lesson01View):
    """Render a :class:`Lesson01View` as a roofline chart; returns the figure (with alt text)."""
    if view.roof is None:
        fig = bare_figure((7.5, 1.2))
        ax = fig.add_subplot()
        ax.axis("off")
        ax.text(0.0, 0.5, textwrap.fill(view.verdict, 110), fontsize=MIN_FONT_PT, va="center")
        return set_alt(fig, view.verdict)
    chart = Lesson01Chart()
    shared = chart.skeleton(chart.figure_key(view))
    for artist in chart.move(shared, view):
        artist.set_animated(False)
    return set_alt(shared["fig"], lesson01_alt(view))


def lesson01_png(view: Lesson01View, canvas: RooflineCanvas | Lesson01Chart | None = None) -> bytes:
    """The dashboard chart as PNG bytes (what the learner's browser receives on every update).

    With a :class:`Lesson01Chart` (what the dashboard uses) or a plain :class:`RooflineCanvas`
    (roof and point only), only the moving artists are redrawn when the roof is unchanged.
    """
    if isinstance(canvas, Lesson01Chart):
        return canvas.png(view)
    if canvas is not None and view.roof is not None:
        return canvas.render_png([view.roof], view.point, view.title)
    return figure_png(lesson01_draw(view))


def lesson01_alt(view: Lesson01View) -> str:
    """The chart's message in words, with the live numbers."""
    r = view.roof
    side = "left of the ridge: memory-bound" if view.bound == "memory" else "at or right of the ridge: compute-bound"
    said = [(f"Log-log roofline, {view.title}: compute roof {num(r.peak_flops_per_s / TERA)} TFLOP/s, "
             f"bandwidth {num(r.bandwidth_bytes_per_s / TERA)} TB/s, ridge at "
             f"{num(view.ridge_point_flop_per_byte)} FLOP/byte."),
            (f"The point ({view.point.label}) sits at {num(view.intensity_flop_per_byte)} FLOP/byte and "
             f"{num(view.attainable_flops_per_s / TERA)} TFLOP/s, {side}, {percent_of(view.fraction_of_peak)} of "
             "peak.")]
    e = view.dtype_effect
    if e is not None and not e.is_reference:
        d, ref = e.dtype.upper(), e.reference.upper()
        if e.point_moves:
            said.append(f"A hollow marker shows where {ref} puts it, {num(e.reference_intensity_flop_per_byte)} "
                        f"FLOP/byte, with an arrow to the {d} point.")
        else:
            said.append(f"{d} moves the same bytes as {ref}, so the point is where {ref} puts it.")
        if e.roof_moves:
            said.append(f"A grey dashed line shows {ref}'s roof at {num(e.reference_peak_flops_per_s / TERA)} TFLOP/s.")
    return " ".join(said)


def lesson01_frame(view: Lesson01View, chart: Lesson01Chart | RooflineCanvas) -> Frame:
    """What the dashboard panel shows for ``view``: verdict, notes, chart and its alt text."""
    if view.error:
        return Frame(verdict=view.verdict, png=None, alt="", error=True)
    return Frame(verdict=view.verdict, png=lesson01_png(view, chart), alt=lesson01_alt(view), notes=view.notes)


def lesson01_dashboard(model_id: str = "qwen3.8-27b", part_id: str = "h100-sxm"):
    """The lesson-1 dashboard: model, part, dtype, phase, batch and length → chart and verdict."""
    # All dtypes stay offered: a part without that rate says so in the verdict (A100 has no FP8),
    # and changing the part never fires a second, spurious update.
    controls = {"model": dropdown("model", list_models(), model_id, "16em"),
                "part": dropdown("part", list_parts(), part_id, "14em"),
                "dtype": dropdown("dtype", compute_dtypes(), REFERENCE_DTYPE, "10em"),
                "phase": toggle("phase", ["decode", "prefill"], "decode"),
                "batch": slider("batch", BATCH_CHOICES, 1, "17em", fmt=None),
                "tokens": slider("tokens", TOKEN_CHOICES, 8192, "20em", fmt=None,
                                 tooltip="prompt length (prefill) or tokens already cached (decode)")}
    chart = Lesson01Chart()

    def render(model, part, dtype, phase, batch, tokens) -> Frame:
        return lesson01_frame(lesson01_view(model, part, dtype, phase, batch, tokens), chart)

    return dashboard(controls, [["model", "part", "dtype"], ["phase", "batch", "tokens"]], render)
