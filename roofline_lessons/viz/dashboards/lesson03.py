"""Lesson 3 dashboard: one step of a model, operator by operator, on the roofline, with its
operator table and its time figures (time to first token, time per output token): the lower bound,
and the estimate (operators unfused) beside it.

Every operator square carries a number, its ``#`` in the operator table below the chart (ranked
by time bound as a kernel of its own). Squares that sit on top of each other share one label ("1–3, 5"); labels are
placed where they cover no square, no roof, no other label and not the whole step's label.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.models import list_models
from ...core.placement import Placement, place
from ...core.units import TERA, duration, num, si
from ...topics.reports import OP_HEADERS, numbered_op_rows, op_points
from ..charts import LINE_COLOURS, MIN_FONT_PT, PALETTE, Roof, moving_point_artists, part_style, place_moving_point
from ..charts import point_on_roof, roofline_chart, set_roof_ylim
from ..dashboard_base import FigurePerKeyChart, dashboard, dropdown, percent_of, raise_small_text, slider, toggle
from ..display import html_table
from ..fastfig import CHART_DPI as DPI, bare_figure
from ..labels import clusters, fixed_boxes, leader_to, number_ranges, offset_label, place_label_boxes
from ..labels import roof_samples_px, text_size_px, wrap_ranges
from ..panel import Frame

INTENSITY_RANGE = (0.01, 1e5)
TOKEN_CHOICES = (128, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
#: the ``#`` of an operator that moves data only (no FLOPs, so no intensity and no square)
NOT_ON_CHART = "–"
#: squares closer than this (pixels) share one label
CLUSTER_PX = 9.0
SQUARE_PT = 6.0
#: longest line of a label, in characters (a long list of numbers wraps)
LABEL_WIDTH_CHARS = 16
#: labels set this far from their squares or further get a thin leader line back to them
LEADER_FROM_PX = 14.0
TABLE_HEADERS = ["#", *OP_HEADERS]


@dataclass(frozen=True)
class Lesson03View:
    title: str
    roof: Roof | None
    op_points: tuple[tuple[str, float, float], ...]  #: (name, intensity FLOP/byte, attainable FLOP/s)
    step_intensity: float | None
    step_intensity_per_weight_byte: float | None
    step_attainable_flops_per_s: float | None
    bound: str | None
    time_estimate_s: float | None
    tokens_per_s_estimate: float | None
    table_rows: tuple[tuple[str, ...], ...]  #: the ``top`` operators by time bound (``OP_HEADERS``)
    summary: str
    error: str | None = None
    op_numbers: tuple[int, ...] = ()  #: each op point's ``#`` in the table, aligned with ``op_points``
    numbered_rows: tuple[tuple[str, ...], ...] = ()  #: every operator, ``TABLE_HEADERS`` (``#`` first)
    top: int | None = 10
    phase: str | None = None
    op_times_s: tuple[float, ...] = ()  #: each op point's time bound (seconds), aligned with ``op_points``

    @property
    def text(self) -> str:
        """The summary (what the base's chart shows for an error view)."""
        return self.summary


def _summary(p: Placement) -> str:
    w = p.workload
    t = float(p.time_lower_bound_s)  # a "≥" is the bound, never the estimate
    lenses = (f"FLOP per weight byte {num(float(p.intensity_per_weight_byte))}; "
              f"FLOP per byte of all traffic {num(float(p.intensity))} (ridge {num(p.ridge_point_flop_per_byte)})")
    binding = binding_term(p)
    roof = str(p.lower_bound_roof)
    estimate = (f"the estimate (operators unfused, each one's activations through HBM) is "
                f"{duration(float(p.time_estimate_s))}" + ("" if str(p.bound) == roof else f", {p.bound}-bound"))
    if w.phase == "prefill":
        said = (f"Prefill of {int(w.prompt_tokens):,} tokens: {roof}-bound. Time to first token ≥ {duration(t)} "
                f"(lower bound: {binding}); {estimate}. {lenses}.")
    else:
        said = (f"Decode with {int(w.context_tokens):,} tokens cached: {roof}-bound. Time per output token ≥ "
                f"{duration(t)}, so ≤ {num(float(p.tokens_per_s_upper_bound))} tokens/s per sequence "
                f"(lower bound: {binding}); {estimate}; {percent_of(float(p.fraction_of_peak))} of this step's "
                f"compute roof on unfused traffic. {lenses}.")
    if p.context_beyond_model:
        said += (f" Note: {p.model.name} was built for at most {p.model.max_context_tokens:,} tokens "
                 "(config.json max_position_embeddings); this length is a what-if.")
    return said


def binding_term(p: Placement) -> str:
    """The term of the lower bound that binds: ``"51.6 GB at 3.35 TB/s"`` (compulsory bytes) when the
    bytes take longer, ``"415 TFLOP at 989 TFLOP/s"`` when the FLOPs do."""
    if p.lower_bound_roof == "memory":
        return f"{si(float(p.cost.compulsory_bytes), 'B')} at {si(p.bandwidth_bytes_per_s, 'B/s')}"
    return f"{si(float(p.cost.flops), 'FLOP')} at {si(float(p.peak_flops_per_s), 'FLOP/s')}"


def lesson03_view(model_id: str, part_id: str, phase: str, tokens: int, batch: int = 1,
                  top: int = 10) -> Lesson03View:
    """Place one step; return every operator's point and the ``top`` operators by time bound."""
    try:
        fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
        p = place(model_id, part_id, phase=phase, batch=batch, **fields)
    except RooflineInputError as exc:
        return Lesson03View("", None, (), None, None, None, None, None, None, (), str(exc), error=str(exc))
    part = get_part(part_id)
    roof = Roof(f"{part.id} bf16", p.peak_flops_per_s, p.bandwidth_bytes_per_s, part.id)
    points = op_points(p)  # pure data movement (KV write, embedding gather) has no intensity to plot
    # number the plotted operators in table order (largest time bound first): the chart's labels
    number_of, numbered = numbered_op_rows(p, [name for name, *_ in points], NOT_ON_CHART)
    return Lesson03View(
        # no phase in the title: switching phase keeps the cached figure (a fast update); the step's
        # label names the phase
        title=f"{p.model.name} on {part.name}: every operator of one step",
        roof=roof,
        op_points=tuple((name, x, y) for name, x, y, _t in points),
        step_intensity=float(p.intensity),
        step_intensity_per_weight_byte=float(p.intensity_per_weight_byte),
        step_attainable_flops_per_s=float(p.attainable_flops_per_s),
        bound=str(p.bound),
        time_estimate_s=float(p.time_estimate_s),
        tokens_per_s_estimate=float(p.tokens_per_s_estimate),
        table_rows=tuple(tuple(r[1:]) for r in (numbered[:top] if top else numbered)),
        summary=_summary(p),
        op_numbers=tuple(number_of[name] for name, *_ in points),
        numbered_rows=tuple(numbered),
        top=top,
        phase=phase,
        op_times_s=tuple(t for *_, t in points),
    )


def _square_colour(part_id: str | None) -> str:
    """Square fill that differs from the roof's colour and from the step point's."""
    avoid = {part_style(part_id).colour if part_id else None, PALETTE[3]}
    return next(c for c in (PALETTE[5], PALETTE[2], PALETTE[4], *LINE_COLOURS) if c not in avoid)


def _skeleton(key) -> dict:
    """The figure for (title, roof): roof, legend and axes, and the moving artists."""
    from matplotlib.lines import Line2D

    title, roof = key
    fig = bare_figure((7.5, 4.8), DPI)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.11, right=0.95, bottom=0.11, top=0.93)
    roofline_chart([roof], [], title=title, intensity_range=INTENSITY_RANGE, ax=ax, fast=True)
    set_roof_ylim(ax, [roof], INTENSITY_RANGE)
    colour = _square_colour(roof.part_id)
    handles, labels = ax.get_legend_handles_labels()
    labels[0] = (f"{roof.label}: {num(roof.peak_flops_per_s / TERA)} TFLOP/s, "
                 f"{num(roof.bandwidth_bytes_per_s / TERA)} TB/s")
    handles.append(Line2D([], [], marker="s", markersize=SQUARE_PT, linestyle="none", markerfacecolor=colour,
                          markeredgecolor="black", markeredgewidth=0.6))
    labels.append("operator, all layers (number: # in the table)")
    ax.legend(handles, labels, fontsize=MIN_FONT_PT, loc="lower right", framealpha=0.92)
    ops = ax.scatter([], [], s=SQUARE_PT ** 2, marker="s", color=colour, edgecolor="black", linewidth=0.6,
                     animated=True, zorder=3)
    marker, label = moving_point_artists(ax)
    texts: list = []  # number labels, made as needed (see _labels)
    raise_small_text(fig)
    step_leader, = ax.plot([], [], color="0.35", linewidth=0.8, animated=True, zorder=5, transform=None)
    return {"fig": fig, "ax": ax, "ops": ops, "marker": marker, "label": label, "texts": texts, "leaders": [],
            "roof": roof, "step_leader": step_leader}


class Lesson03Chart(FigurePerKeyChart):
    """Roof, legend and axes drawn once per figure (one per title and roof); the operator squares,
    their number labels and the whole step's point per update."""

    def figure_key(self, view: Lesson03View):
        return view.title, view.roof

    skeleton = staticmethod(_skeleton)

    def move(self, shared: dict, view: Lesson03View) -> list:
        ax, ops = shared["ax"], shared["ops"]
        if "renderer" not in shared:  # what never moves, in pixels, read once
            shared["renderer"] = ax.figure.canvas.get_renderer()
            shared.update(line_px=roof_samples_px(ax, [shared["roof"]], INTENSITY_RANGE), frame=tuple(ax.bbox.extents),
                          static=fixed_boxes(ax, shared["renderer"], shared["texts"]))
        renderer = shared["renderer"]
        xy = np.array([[x, y / TERA] for _, x, y in view.op_points]).reshape(-1, 2)
        ops.set_offsets(xy)
        step = point_on_roof(f"whole {view.phase} step", view.step_intensity, view.roof)
        marker, step_label = place_moving_point(shared["marker"], shared["label"], step, INTENSITY_RANGE)
        pts = ax.transData.transform(xy) if len(xy) else np.empty((0, 2))
        half = SQUARE_PT * DPI / 72 / 2 + 1
        obstacles = list(shared["static"]) + [(x - half, y - half, x + half, y + half) for x, y in pts]
        sx, sy = ax.transData.transform((step.intensity_flop_per_byte, step.flops_per_s / TERA))
        obstacles.append((sx - 8, sy - 8, sx + 8, sy + 8))
        groups = sorted(clusters(pts, CLUSTER_PX), key=lambda g: min(view.op_numbers[i] for i in g))
        texts, leaders = _labels(shared, len(groups))
        # the whole step's label is placed first, by the same rules, then one label per cluster
        anchors, sizes = [(sx, sy)], [text_size_px(step_label, renderer)]
        for text, g in zip(texts, groups):
            text.set_text(wrap_ranges(number_ranges(view.op_numbers[i] for i in g), LABEL_WIDTH_CHARS))
            anchors.append(pts[g].mean(axis=0))
            sizes.append(text_size_px(text, renderer))
        placed = place_label_boxes(anchors, sizes, obstacles, shared["line_px"], shared["frame"],
                                   leader_from_px=LEADER_FROM_PX)
        drawn = leader_to(shared["step_leader"], (sx, sy), placed[0][4], LEADER_FROM_PX)  # a far step label
        offset_label(step_label, (sx, sy), placed[0], DPI)
        for text, leader, (x, y, ha, va, box), anchor in zip(texts, leaders, placed[1:], anchors[1:]):
            text.set(position=(x, y), horizontalalignment=ha, verticalalignment=va)
            drawn += leader_to(leader, anchor, box, LEADER_FROM_PX)  # a far label points back to its squares
        return [marker, ops, *drawn, step_label, *texts[:len(groups)]]  # squares on top of the step's marker


def _labels(shared: dict, n: int) -> tuple[list, list]:
    """At least ``n`` animated number labels and leader lines (pixel coordinates), kept with the
    figure."""
    texts, leaders, ax = shared["texts"], shared["leaders"], shared["ax"]
    while len(texts) < n:
        texts.append(ax.text(0, 0, "", fontsize=MIN_FONT_PT, animated=True, zorder=6, transform=None,
                             linespacing=1.1,
                             bbox={"boxstyle": "square,pad=0.12", "fc": "white", "ec": "none", "alpha": 0.85}))
        leaders.append(ax.plot([], [], color="0.35", linewidth=0.8, animated=True, zorder=5, transform=None)[0])
    return texts, leaders


def lesson03_table_html(view: Lesson03View) -> str:
    """The operator table: the ``top`` rows, then the rest behind a disclosure, ``#`` as on the chart."""
    rows = view.numbered_rows
    if not rows:
        return ""
    top = view.top or len(rows)
    caption = (f"Operators by time bound, each as a kernel of its own with its inputs and outputs through HBM "
               f"(all layers); # is the number on the chart, {NOT_ON_CHART} marks an "
               "operator that only moves data (no FLOPs, so no intensity and no square)")
    html = html_table(TABLE_HEADERS, rows[:top], caption=caption)
    if len(rows) > top:
        html += (f'<details class="rl-more"><summary>The other {len(rows) - top} operators</summary>'
                 f"{html_table(TABLE_HEADERS, rows[top:])}</details>")
    return html


#: time bounds this close (relative) are tied
TIE_RTOL = 1e-6


def largest_words(view: Lesson03View) -> str:
    """``"the largest time bound"``, or ``"the largest (tied with 2–3)"`` when others have the same."""
    if not view.op_times_s:
        return "the largest time bound"
    by_number = dict(zip(view.op_numbers, view.op_times_s))
    top = by_number.get(1)
    tied = [n for n, t in by_number.items() if n != 1 and np.isclose(t, top, rtol=TIE_RTOL, atol=0.0)]
    if not tied:
        return "the largest time bound"
    return f"the largest (tied with {'number' if len(tied) == 1 else 'numbers'} {number_ranges(tied)})"


def lesson03_alt(view: Lesson03View) -> str:
    """The chart's message in words, with the live numbers."""
    r = view.roof
    left = sum(1 for _, x, _ in view.op_points if x < r.ridge_point_flop_per_byte)
    right = len(view.op_points) - left
    first = next((row for row in view.numbered_rows if row[0] == "1"), None)
    said = [(f"Log-log roofline, {view.title}: compute roof {num(r.peak_flops_per_s / TERA)} TFLOP/s, bandwidth "
             f"{num(r.bandwidth_bytes_per_s / TERA)} TB/s, ridge {num(r.ridge_point_flop_per_byte)} FLOP/byte."),
            (f"{len(view.op_points)} operators are numbered squares: {left} left of the ridge (memory-bound), "
             f"{right} at or right of it (compute-bound)."),
            (f"The whole {view.phase} step sits at {num(view.step_intensity)} FLOP/byte and "
             f"{num(view.step_attainable_flops_per_s / TERA)} TFLOP/s, {view.bound}-bound on unfused traffic; "
             f"its time estimate (operators unfused) is {duration(view.time_estimate_s)}.")]
    if first is not None:
        said.append(f"Number 1, {largest_words(view)}, is {first[1]} at {first[8]} FLOP/byte, {first[10]}.")
    return " ".join(said)


def lesson03_frame(view: Lesson03View, chart: Lesson03Chart) -> Frame:
    """What the dashboard panel shows: the time bounds, the chart with its alt text, the op table."""
    if view.error:
        return Frame(verdict=f"Cannot place this: {view.error}", png=None, alt="", error=True)
    return Frame(verdict=view.summary, png=chart.png(view), alt=lesson03_alt(view),
                 table_html=lesson03_table_html(view))


def lesson03_dashboard(model_id: str = "qwen3.8-27b", part_id: str = "h100-sxm"):
    """Model, part, phase and length -> every operator on the chart, the step's point, the op table."""
    controls = {"model": dropdown("model", list_models(), model_id, "16em"),
                "part": dropdown("part", list_parts(), part_id, "14em"),
                "phase": toggle("phase", ["prefill", "decode"], "prefill"),
                "tokens": slider("tokens", TOKEN_CHOICES, 8192, "20em", fmt=None)}
    chart = Lesson03Chart()

    def render(model, part, phase, tokens) -> Frame:
        return lesson03_frame(lesson03_view(model, part, phase, tokens), chart)

    return dashboard(controls, [["model", "part"], ["phase", "tokens"]], render)
