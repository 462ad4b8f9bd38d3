"""Lesson 5 dashboard: Qwen3.8-27B decode — context, batch, part and KV dtype -> where each step's
bytes go as the context grows, and the two layer kinds as two dots on the roofline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.models import FULL_ATTENTION, GATED_DELTANET
from ...core.placement import place
from ...core.roofline import attainable_flops_per_s
from ...core.units import si
from ...topics.hybrid import BREAKDOWN, layer_kind_points, step_bytes_breakdown
from ..charts import MARKERS, PALETTE, Roof, roofline_chart, set_roof_ylim
from ..fastfig import CachedFigure, bare_figure, message_png

MODEL = "qwen3.8-27b"
CONTEXT_GRID = np.unique(np.round(np.logspace(10, 18, 49, base=2)))  # 1 K … 256 K tokens
CONTEXT_CHOICES = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144)
BATCH_CHOICES = (1, 2, 4, 8, 16, 32, 64)
KV_DTYPES = ("bf16", "fp8")
INTENSITY_RANGE = (0.1, 1e3)


@dataclass(frozen=True)
class Lesson05View:
    part: str
    batch: int
    context_tokens: int
    kv_dtype: str
    roof: Roof | None
    bytes_now: dict  #: kind -> bytes of this step
    time_share: dict  #: kind -> share of the step's time lower bound
    step_time_s: float | None
    dots: dict  #: layer kind -> (intensity FLOP/byte, attainable FLOP/s)
    curves: dict  #: kind -> bytes per step over CONTEXT_GRID
    fits: bool | None
    text: str
    error: str | None = None


def lesson05_view(part_id: str, batch: int, context_tokens: int, kv_dtype: str = "bf16") -> Lesson05View:
    """One decode step of Qwen3.8-27B and the byte breakdown over 1 K–256 K tokens of context."""
    try:
        p = place(MODEL, part_id, phase="decode", batch=batch, context_tokens=context_tokens, kv_dtype=kv_dtype)
        curves = step_bytes_breakdown(MODEL, CONTEXT_GRID, batch=batch, kv_dtype=kv_dtype)
    except RooflineInputError as exc:
        return Lesson05View(part_id, batch, context_tokens, kv_dtype, None, {}, {}, None, {}, {}, None, str(exc),
                            error=str(exc))
    part = get_part(part_id)
    roof = Roof(f"{part.id} bf16", p.peak_flops_per_s, p.bandwidth_bytes_per_s)
    now = {k: float(v[0]) for k, v in step_bytes_breakdown(MODEL, [context_tokens], batch=batch,
                                                           kv_dtype=kv_dtype).items()}
    step = float(p.time_lower_bound_s)
    share = {k: (v / p.bandwidth_bytes_per_s) / step for k, v in now.items()}
    dots = {}
    for kind, pt in layer_kind_points(p.cost).items():
        x = float(pt.intensity)
        dots[kind] = (x, float(attainable_flops_per_s(x, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s)))
    kv = now["KV read"] + now["KV written"]
    state = now["state read"] + now["state written"]
    fits = bool(p.fits_in_memory)
    text = (f"Batch {batch}, {context_tokens:,} tokens cached, KV in {kv_dtype}: step ≥ {step * 1e3:,.3g} ms. "
            f"Share of step time — weights {share['weights']:.0%}, KV {(kv / p.bandwidth_bytes_per_s) / step:.0%}, "
            f"state {(state / p.bandwidth_bytes_per_s) / step:.0%}. Full-attention layers at "
            f"{dots[FULL_ATTENTION][0]:,.3g} FLOP/byte, Gated DeltaNet layers at {dots[GATED_DELTANET][0]:,.3g}. "
            + ("Fits" if fits else "Does NOT fit") + f" in {part.memory_capacity_bytes / 2**30:,.0f} GiB "
            f"({si(float(p.memory_required_bytes), 'B')} needed).")
    return Lesson05View(part.id, int(batch), int(context_tokens), kv_dtype, roof, now, share, step, dots, curves,
                        fits, text)


def _build(key):
    from matplotlib.ticker import FuncFormatter

    roof, batch, kv_dtype, curves = key
    curves = dict(curves)
    fig = bare_figure((11, 4.3))
    fig.subplots_adjust(left=0.07, right=0.965, bottom=0.14, top=0.86, wspace=0.3)
    ax1, ax2 = fig.subplots(1, 2)
    kinds = [k for k in BREAKDOWN if max(curves[k]) > 0]
    ax1.stackplot(CONTEXT_GRID, [np.array(curves[k]) / 1e9 for k in kinds], labels=kinds,
                  colors=[PALETTE[BREAKDOWN.index(k)] for k in kinds], alpha=0.85)
    ax1.set_xscale("log", base=2)
    ax1.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v / 1024:,.0f}K"))
    ax1.set_xlim(CONTEXT_GRID[0], CONTEXT_GRID[-1])
    ax1.set_xlabel("Tokens cached per sequence")
    ax1.set_ylabel("Bytes moved per decode step (GB, 10⁹ B)")
    ax1.set_title(f"Where one step's bytes go (batch {batch}, KV {kv_dtype})")
    ax1.legend(fontsize=7.5, loc="upper left")
    ax1.grid(True, alpha=0.3)
    roofline_chart([roof], [], title="The two layer kinds on the roofline", intensity_range=INTENSITY_RANGE, ax=ax2,
                   fast=True)
    set_roof_ylim(ax2, [roof], INTENSITY_RANGE)
    from matplotlib.lines import Line2D

    ax2.legend(handles=[Line2D([], [], color=PALETTE[0], linewidth=2, label=roof.label),
                        Line2D([], [], marker=MARKERS[0], linestyle="none", color="black", markerfacecolor=PALETTE[3],
                               label="16 full-attention layers (+ their MLPs)"),
                        Line2D([], [], marker=MARKERS[1], linestyle="none", color="black", markerfacecolor=PALETTE[2],
                               label="48 Gated DeltaNet layers (+ their MLPs)")], fontsize=7.5, loc="lower right")
    fig.suptitle("Qwen3.8-27B decode", fontsize=11)
    vline = ax1.axvline(CONTEXT_GRID[0], color="black", linewidth=1.5, animated=True)
    attn, = ax2.plot([], [], marker=MARKERS[0], markersize=11, linestyle="none", color="black",
                     markerfacecolor=PALETTE[3], animated=True)
    gdn, = ax2.plot([], [], marker=MARKERS[1], markersize=10, linestyle="none", color="black",
                    markerfacecolor=PALETTE[2], animated=True)
    return fig, (vline, attn, gdn)


class Lesson05Chart:
    def __init__(self) -> None:
        self.figures = CachedFigure(_build)

    def png(self, view: Lesson05View) -> bytes:
        if view.roof is None:
            return message_png(view.text)
        key = (view.roof, view.batch, view.kv_dtype, tuple((k, tuple(v)) for k, v in view.curves.items()))

        def update(state):
            vline, attn, gdn = state
            vline.set_xdata([view.context_tokens, view.context_tokens])
            (xa, ya), (xg, yg) = view.dots[FULL_ATTENTION], view.dots[GATED_DELTANET]
            attn.set_data([xa], [ya / 1e12])
            gdn.set_data([xg], [yg / 1e12])
            return [vline, attn, gdn]

        return self.figures.render(key, update)


def lesson05_dashboard(part_id: str = "h100-sxm"):
    """Context, batch, part and KV dtype -> stacked bytes over context and the two moving dots."""
    import ipywidgets as widgets
    from IPython.display import Image, display

    part_w = widgets.Dropdown(options=list_parts(), value=part_id, description="part")
    kv_w = widgets.Dropdown(options=KV_DTYPES, value="bf16", description="KV dtype")
    context_w = widgets.SelectionSlider(options=CONTEXT_CHOICES, value=32768, description="context")
    batch_w = widgets.SelectionSlider(options=BATCH_CHOICES, value=1, description="batch")
    chart = Lesson05Chart()

    def _update(part, kv, context, batch):
        view = lesson05_view(part, batch, context, kv)
        print(view.text)
        display(Image(data=chart.png(view), format="png"))

    out = widgets.interactive_output(_update, {"part": part_w, "kv": kv_w, "context": context_w, "batch": batch_w})
    ui = widgets.VBox([widgets.HBox([part_w, kv_w]), widgets.HBox([context_w, batch_w]), out])
    display(ui)
    return ui
