"""Lesson 3 dashboard: one step of a model, operator by operator, on the roofline, with its
operator table and its time bounds (time to first token, time per output token)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.models import list_models
from ...core.placement import Placement, place
from ...core.roofline import attainable_flops_per_s
from ...core.units import si
from ...topics.reports import OP_HEADERS, op_rows
from ..charts import (PALETTE, Roof, moving_point_artists, place_moving_point, point_on_roof, roofline_chart,
                      set_roof_ylim)
from ..display import markdown_table
from ..fastfig import CachedFigure, bare_figure, message_png

INTENSITY_RANGE = (0.01, 1e5)
TOKEN_CHOICES = (128, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class Lesson03View:
    title: str
    roof: Roof | None
    op_points: tuple[tuple[str, float, float], ...]  #: (name, intensity FLOP/byte, attainable FLOP/s)
    step_intensity: float | None
    step_intensity_per_weight_byte: float | None
    step_attainable_flops_per_s: float | None
    bound: str | None
    time_lower_bound_s: float | None
    tokens_per_s_upper_bound: float | None
    table_rows: tuple[tuple[str, ...], ...]
    summary: str
    error: str | None = None


def _summary(p: Placement) -> str:
    w = p.workload
    t = float(p.time_lower_bound_s)
    lenses = (f"FLOP per weight byte {float(p.intensity_per_weight_byte):,.4g}; "
              f"FLOP per byte of all traffic {float(p.intensity):,.4g} (ridge {p.ridge_point_flop_per_byte:,.0f})")
    if w.phase == "prefill":
        return (f"Prefill of {int(w.prompt_tokens):,} tokens: {p.bound}-bound. Time to first token ≥ {t * 1e3:,.4g} ms "
                f"({si(float(p.cost.flops), 'FLOP')} at {si(p.peak_flops_per_s, 'FLOP/s')}). {lenses}.")
    return (f"Decode with {int(w.context_tokens):,} tokens cached: {p.bound}-bound. Time per output token ≥ "
            f"{t * 1e3:,.4g} ms, so ≤ {float(p.tokens_per_s_upper_bound):,.4g} tokens/s per sequence "
            f"({si(float(p.cost.bytes), 'B')} at {si(p.bandwidth_bytes_per_s, 'B/s')}); "
            f"{float(p.fraction_of_peak):.2%} of peak. {lenses}.")


def lesson03_view(model_id: str, part_id: str, phase: str, tokens: int, batch: int = 1,
                  top: int = 10) -> Lesson03View:
    """Place one step; return every operator's point and the ``top`` operators by time bound."""
    try:
        fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
        p = place(model_id, part_id, phase=phase, batch=batch, **fields)
    except RooflineInputError as exc:
        return Lesson03View("", None, (), None, None, None, None, None, None, (), str(exc), error=str(exc))
    part = get_part(part_id)
    roof = Roof(f"{part.id} bf16", p.peak_flops_per_s, p.bandwidth_bytes_per_s)
    points = []
    for op in p.cost.ops:
        total = op.scaled_to_all_layers()
        flops, nbytes = float(total.flops), float(total.bytes)
        if flops <= 0 or nbytes <= 0:
            continue  # pure data movement (KV write, embedding gather) has no intensity to plot
        x = flops / nbytes
        points.append((f"{op.block}.{op.name}", x, float(attainable_flops_per_s(x, roof.peak_flops_per_s,
                                                                               roof.bandwidth_bytes_per_s))))
    return Lesson03View(
        title=f"{p.model.name}, {phase}, on {part.name}: every operator",
        roof=roof,
        op_points=tuple(points),
        step_intensity=float(p.intensity),
        step_intensity_per_weight_byte=float(p.intensity_per_weight_byte),
        step_attainable_flops_per_s=float(p.attainable_flops_per_s),
        bound=str(p.bound),
        time_lower_bound_s=float(p.time_lower_bound_s),
        tokens_per_s_upper_bound=float(p.tokens_per_s_upper_bound),
        table_rows=tuple(tuple(r) for r in op_rows(p, top=top)),
        summary=_summary(p),
    )


def _build(key):
    title, roof = key
    fig = bare_figure((7.5, 4.8))
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.11, right=0.95, bottom=0.11, top=0.93)
    roofline_chart([roof], [], title=title, intensity_range=INTENSITY_RANGE, ax=ax, fast=True)
    set_roof_ylim(ax, [roof], INTENSITY_RANGE)
    ops = ax.scatter([], [], s=28, marker="s", color=PALETTE[1], edgecolor="black", linewidth=0.5, animated=True,
                     zorder=3)
    marker, label = moving_point_artists(ax)
    return fig, (ops, marker, label)


class Lesson03Chart:
    def __init__(self) -> None:
        self.figures = CachedFigure(_build)

    def png(self, view: Lesson03View) -> bytes:
        if view.roof is None:
            return message_png(view.summary)

        def update(state):
            ops, marker, label = state
            xy = np.array([[x, y / 1e12] for _, x, y in view.op_points]).reshape(-1, 2)
            ops.set_offsets(xy)
            step = point_on_roof("whole step", view.step_intensity, view.roof)
            return [ops, *place_moving_point(marker, label, step, INTENSITY_RANGE)]

        return self.figures.render((view.title, view.roof), update)


def lesson03_dashboard(model_id: str = "qwen3.8-27b", part_id: str = "h100-sxm"):
    """Model, part, phase and length -> every operator on the chart, the step's point, the op table."""
    import ipywidgets as widgets
    from IPython.display import Image, Markdown, display

    model_w = widgets.Dropdown(options=list_models(), value=model_id, description="model")
    part_w = widgets.Dropdown(options=list_parts(), value=part_id, description="part")
    phase_w = widgets.ToggleButtons(options=["prefill", "decode"], value="prefill", description="phase")
    tokens_w = widgets.SelectionSlider(options=TOKEN_CHOICES, value=8192, description="tokens")
    chart = Lesson03Chart()

    def _update(model, part, phase, tokens):
        view = lesson03_view(model, part, phase, tokens)
        print(view.summary)
        display(Image(data=chart.png(view), format="png"))
        if view.table_rows:
            display(Markdown("**Operators by time bound (all layers)**\n\n" + markdown_table(OP_HEADERS, view.table_rows)))

    out = widgets.interactive_output(_update, {"model": model_w, "part": part_w, "phase": phase_w, "tokens": tokens_w})
    ui = widgets.VBox([widgets.HBox([model_w, part_w]), widgets.HBox([phase_w, tokens_w]), out])
    display(ui)
    return ui
