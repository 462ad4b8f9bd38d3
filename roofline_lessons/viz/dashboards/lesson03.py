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
from ...core.roofline import attainable_flops_per_s, time_lower_bound_s
from ...core.units import duration, num, si
from ...topics.reports import OP_HEADERS, op_rows
from ..charts import (
    LINE_COLOURS,
    MIN_FONT_PT,
    PALETTE,
    Roof,
    moving_point_artists,
    part_style,
    place_moving_point,
    point_on_roof,
    roofline_chart,
    set_roof_ylim,
)
from ..display import html_table
from ..fastfig import CHART_DPI, CachedFigure, bare_figure, message_png
from ..panel import Frame, build_dashboard
from .lesson01 import leader_end, percent_of, place_labels, raise_small_text, text_size_px

INTENSITY_RANGE = (0.01, 1e5)
TOKEN_CHOICES = (128, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
TERA = 1e12
#: the ``#`` of an operator that moves data only (no FLOPs, so no intensity and no square)
NOT_ON_CHART = "–"
#: squares closer than this (pixels) share one label
CLUSTER_PX = 9.0
SQUARE_PT = 6.0
DPI = CHART_DPI
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
                f"(lower bound: {binding}); {estimate}; {percent_of(float(p.fraction_of_peak))} of this step's compute roof "
                f"on unfused traffic. {lenses}.")
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
    points, times = [], []
    for op in p.cost.ops:
        total = op.scaled_to_all_layers()
        flops, nbytes = float(total.flops), float(total.bytes)
        if flops <= 0 or nbytes <= 0:
            continue  # pure data movement (KV write, embedding gather) has no intensity to plot
        x = flops / nbytes
        times.append(float(time_lower_bound_s(flops, nbytes, p.peak_flops_per_s, p.bandwidth_bytes_per_s)))
        points.append((f"{op.block}.{op.name}", x, float(attainable_flops_per_s(x, roof.peak_flops_per_s,
                                                                               roof.bandwidth_bytes_per_s))))
    # number the plotted operators in table order (largest time bound first): the chart's labels
    rows = op_rows(p)
    plotted = {name for name, _, _ in points}
    number_of, numbered = {}, []
    for row in rows:
        if row[0] in plotted:
            number_of[row[0]] = len(number_of) + 1
            numbered.append((str(number_of[row[0]]), *row))
        else:
            numbered.append((NOT_ON_CHART, *row))
    return Lesson03View(
        # no phase in the title: switching phase keeps the cached figure (a fast update); the step's
        # label names the phase
        title=f"{p.model.name} on {part.name}: every operator of one step",
        roof=roof,
        op_points=tuple(points),
        step_intensity=float(p.intensity),
        step_intensity_per_weight_byte=float(p.intensity_per_weight_byte),
        step_attainable_flops_per_s=float(p.attainable_flops_per_s),
        bound=str(p.bound),
        time_estimate_s=float(p.time_estimate_s),
        tokens_per_s_estimate=float(p.tokens_per_s_estimate),
        table_rows=tuple(tuple(r) for r in (rows[:top] if top else rows)),
        summary=_summary(p),
        op_numbers=tuple(number_of[name] for name, _, _ in points),
        numbered_rows=tuple(numbered),
        top=top,
        phase=phase,
        op_times_s=tuple(times),
    )


# ---- labels that do not collide ----------------------------------------------------------------

def number_ranges(numbers) -> str:
    """``[1, 2, 3, 5, 7, 8]`` → ``"1–3, 5, 7–8"``."""
    ns = sorted({int(n) for n in numbers})
    parts, i = [], 0
    while i < len(ns):
        j = i
        while j + 1 < len(ns) and ns[j + 1] == ns[j] + 1:
            j += 1
        parts.append(str(ns[i]) if i == j else f"{ns[i]}–{ns[j]}")
        i = j + 1
    return ", ".join(parts)


def wrap_ranges(text: str, width: int = LABEL_WIDTH_CHARS) -> str:
    """Break ``"1–9, 11–14, 16–17, 20"`` into lines of at most ``width`` characters, at commas."""
    lines: list[str] = []
    for item in text.split(", "):
        if lines and len(lines[-1]) + 2 + len(item) + 1 <= width:  # + 1: the comma a break adds
            lines[-1] += ", " + item
        else:
            if lines:
                lines[-1] += ","
            lines.append(item)
    return "\n".join(lines)


def clusters(points_px: np.ndarray, radius_px: float = CLUSTER_PX) -> list[list[int]]:
    """Group points (pixels) that lie within ``radius_px`` of another point of the group."""
    n = len(points_px)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        d = np.hypot(*(points_px[i + 1:] - points_px[i]).T) if i + 1 < n else np.empty(0)
        for j in np.nonzero(d < radius_px)[0] + i + 1:
            parent[root(int(j))] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _square_colour(part_id: str | None) -> str:
    """Square fill that differs from the roof's colour and from the step point's."""
    avoid = {part_style(part_id).colour if part_id else None, PALETTE[3]}
    return next(c for c in (PALETTE[5], PALETTE[2], PALETTE[4], *LINE_COLOURS) if c not in avoid)


def _build(key):
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
    return fig, {"ax": ax, "ops": ops, "marker": marker, "label": label, "texts": texts, "leaders": [], "roof": roof,
                 "step_leader": step_leader}


def _layout(state, fig) -> None:
    """Pixel geometry of what never moves (legend, ridge label, roof line, axes frame), read once
    after the cached figure's first draw."""
    ax, roof = state["ax"], state["roof"]
    renderer = fig.canvas.get_renderer()
    xs = np.logspace(np.log10(INTENSITY_RANGE[0]), np.log10(INTENSITY_RANGE[1]), 300)
    ys = np.minimum(roof.peak_flops_per_s, roof.bandwidth_bytes_per_s * xs) / TERA
    state["line_px"] = ax.transData.transform(np.column_stack([xs, ys]))
    static = [tuple(ax.get_legend().get_window_extent(renderer).extents)]
    static += [tuple(t.get_window_extent(renderer).extents) for t in ax.texts
               if t.get_text() and t not in state["texts"]]
    state["static"] = static
    state["frame"] = tuple(ax.bbox.extents)
    state["renderer"] = renderer


def _labels(state, n: int) -> tuple[list, list]:
    """At least ``n`` animated number labels and leader lines (pixel coordinates), kept with the
    cached figure."""
    texts, leaders, ax = state["texts"], state["leaders"], state["ax"]
    while len(texts) < n:
        texts.append(ax.text(0, 0, "", fontsize=MIN_FONT_PT, animated=True, zorder=6, transform=None,
                             linespacing=1.1,
                             bbox={"boxstyle": "square,pad=0.12", "fc": "white", "ec": "none", "alpha": 0.85}))
        leaders.append(ax.plot([], [], color="0.35", linewidth=0.8, animated=True, zorder=5, transform=None)[0])
    return texts, leaders


def _update(state, view: Lesson03View) -> list:
    if "renderer" not in state:
        _layout(state, state["ax"].figure)
    ax, ops, renderer = state["ax"], state["ops"], state["renderer"]
    xy = np.array([[x, y / TERA] for _, x, y in view.op_points]).reshape(-1, 2)
    ops.set_offsets(xy)
    step = point_on_roof(f"whole {view.phase} step", view.step_intensity, view.roof)
    moving = place_moving_point(state["marker"], state["label"], step, INTENSITY_RANGE)
    pts = ax.transData.transform(xy) if len(xy) else np.empty((0, 2))
    half = SQUARE_PT * DPI / 72 / 2 + 1
    obstacles = list(state["static"])
    obstacles += [(x - half, y - half, x + half, y + half) for x, y in pts]
    sx, sy = ax.transData.transform((step.intensity_flop_per_byte, step.flops_per_s / TERA))
    obstacles.append((sx - 8, sy - 8, sx + 8, sy + 8))
    groups = sorted(clusters(pts), key=lambda g: min(view.op_numbers[i] for i in g))
    texts, leaders = _labels(state, len(groups))
    # the whole step's label is placed first, by the same rules, then one label per cluster
    step_label = state["label"]
    anchors, sizes = [(sx, sy)], [text_size_px(step_label, renderer)]
    for text, g in zip(texts, groups):
        text.set_text(wrap_ranges(number_ranges(view.op_numbers[i] for i in g)))
        anchors.append(pts[g].mean(axis=0))
        sizes.append(text_size_px(text, renderer))
    drawn = []
    placed = place_labels(anchors, sizes, obstacles, state["line_px"], state["frame"], leader_from_px=LEADER_FROM_PX)
    (x, y, ha, va, step_box), placed = placed[0], placed[1:]
    ex, ey = leader_end((sx, sy), step_box)
    if np.hypot(ex - sx, ey - sy) >= LEADER_FROM_PX:  # a far step label points back to its marker
        state["step_leader"].set_data([sx, ex], [sy, ey])
        drawn.append(state["step_leader"])
    to_pt = 72 / DPI
    step_label.set_position(((x - sx) * to_pt, (y - sy) * to_pt))
    step_label.set_horizontalalignment(ha)
    step_label.set_verticalalignment(va)
    for text, leader, (x, y, ha, va, box), (ax_, ay) in zip(texts, leaders, placed, anchors[1:]):
        text.set_position((x, y))
        text.set_horizontalalignment(ha)
        text.set_verticalalignment(va)
        # a far label points back to its squares: a line from the squares to the box's nearest edge
        ex, ey = leader_end((ax_, ay), box)
        if np.hypot(ex - ax_, ey - ay) >= LEADER_FROM_PX:
            leader.set_data([ax_, ex], [ay, ey])
            drawn.append(leader)
    marker, label = moving
    return [marker, ops, *drawn, label, *texts[:len(groups)]]  # squares on top of the step's marker


class Lesson03Chart:
    """Cached chart: roof, legend and axes drawn once per (title, roof); the operator squares, their
    number labels and the whole step's point per update."""

    def __init__(self) -> None:
        self.figures = CachedFigure(_build)

    def png(self, view: Lesson03View) -> bytes:
        if view.roof is None:
            return message_png(view.summary)
        return self.figures.render((view.title, view.roof), lambda state: _update(state, view))


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
    import ipywidgets as widgets
    from IPython.display import display

    style = {"description_width": "initial"}
    model_w = widgets.Dropdown(options=list_models(), value=model_id, description="model", style=style,
                               layout=widgets.Layout(width="16em"))
    part_w = widgets.Dropdown(options=list_parts(), value=part_id, description="part", style=style,
                              layout=widgets.Layout(width="14em"))
    phase_w = widgets.ToggleButtons(options=["prefill", "decode"], value="prefill", description="phase",
                                    style={**style, "button_width": "5.5em"}, layout=widgets.Layout(width="auto"))
    tokens_w = widgets.SelectionSlider(options=TOKEN_CHOICES, value=8192, description="tokens", style=style,
                                       layout=widgets.Layout(width="20em"))
    chart = Lesson03Chart()

    def render(model, part, phase, tokens) -> Frame:
        return lesson03_frame(lesson03_view(model, part, phase, tokens), chart)

    ui = build_dashboard({"model": model_w, "part": part_w, "phase": phase_w, "tokens": tokens_w},
                         [["model", "part"], ["phase", "tokens"]], render)
    display(ui)
    return ui
