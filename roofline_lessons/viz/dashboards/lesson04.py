"""Lesson 4 dashboard: batch and context -> the decode point on the roofline (through both lenses),
where the bytes go, and where the step sits on the throughput–latency curve."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.memory import max_batch_that_fits
from ...core.models import list_models
from ...core.units import si
from ...topics.batching import decode_sweep
from ..charts import MARKERS, PALETTE, Roof, _tick, point_on_roof, roofline_chart, set_roof_ylim
from ..fastfig import CachedFigure, bare_figure, message_png

BATCH_GRID = np.unique(np.round(np.logspace(0, 10, 61, base=2)))  # 1 … 1024
BATCH_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
CONTEXT_CHOICES = (0, 1024, 4096, 8192, 16384, 32768, 65536, 131072)
INTENSITY_RANGE = (0.1, 1e4)
SHARES = ("weights", "KV cache", "state", "activations")


@dataclass(frozen=True)
class Lesson04View:
    title: str
    roof: Roof | None
    batch: int
    context_tokens: int
    intensity: float | None
    intensity_per_weight_byte: float | None
    bytes_by_kind: dict  #: weights / KV cache / state / activations -> bytes per step at this batch
    step_time_s: float | None
    tokens_per_s: float | None
    max_batch_that_fits: int | None
    fits: bool | None
    curve_latency_s: np.ndarray | None = None
    curve_tokens_per_s: np.ndarray | None = None
    curve_shares: np.ndarray | None = None  #: 4 × len(BATCH_GRID) fractions of bytes
    text: str = ""
    error: str | None = None


def lesson04_view(model_id: str, part_id: str, batch: int, context_tokens: int) -> Lesson04View:
    """The decode step at ``batch`` and ``context_tokens``, and the curves over all batch sizes."""
    try:
        sweep = decode_sweep(model_id, part_id, BATCH_GRID, context_tokens)
        one = decode_sweep(model_id, part_id, np.array([batch], dtype=float), context_tokens)
        cap = max_batch_that_fits(model_id, part_id, context_tokens + 1)
    except RooflineInputError as exc:
        return Lesson04View("", None, batch, context_tokens, None, None, {}, None, None, None, None,
                            text=str(exc), error=str(exc))
    part = get_part(part_id)
    roof = Roof(f"{part.id} bf16", part.peak_flops_per_s("bf16"), part.memory_bandwidth_bytes_per_s)
    kinds = {"weights": one.weight_bytes[0], "KV cache": one.kv_bytes[0], "state": one.state_bytes[0],
             "activations": one.activation_bytes[0]}
    total = sum(kinds.values())
    shares = np.vstack([sweep.weight_bytes, sweep.kv_bytes, sweep.state_bytes, sweep.activation_bytes])
    shares = shares / shares.sum(axis=0)
    fits = bool(batch <= cap)
    split = ", ".join(f"{k} {v / total:.0%}" for k, v in kinds.items() if v > 0)
    text = (f"Batch {batch}, {context_tokens:,} tokens cached: I = {one.intensity[0]:,.3g} FLOP/byte of all traffic "
            f"({one.intensity_per_weight_byte[0]:,.3g} per weight byte; ridge {one.ridge_point_flop_per_byte:,.0f}). "
            f"Step ≥ {one.step_time_s[0] * 1e3:,.3g} ms -> ≤ {one.tokens_per_s[0]:,.0f} tokens/s in all. "
            f"Bytes per step {si(total, 'B')}: {split}. "
            + (f"Fits in {part.memory_capacity_bytes / 2**30:,.0f} GiB (largest batch that fits: {cap:,})."
               if fits else f"Does NOT fit in {part.memory_capacity_bytes / 2**30:,.0f} GiB: the largest batch that fits "
                            f"is {cap:,}."))
    return Lesson04View(
        title=f"{get_part(part_id).id}: decode of {model_id}, {context_tokens:,} tokens cached",
        roof=roof, batch=int(batch), context_tokens=int(context_tokens), intensity=float(one.intensity[0]),
        intensity_per_weight_byte=float(one.intensity_per_weight_byte[0]), bytes_by_kind=kinds,
        step_time_s=float(one.step_time_s[0]), tokens_per_s=float(one.tokens_per_s[0]), max_batch_that_fits=int(cap),
        fits=fits, curve_latency_s=sweep.step_time_s, curve_tokens_per_s=sweep.tokens_per_s, curve_shares=shares,
        text=text)


def _build(key):
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, NullFormatter

    title, roof, latency, tput, shares, cap = key
    latency, tput, shares = np.array(latency), np.array(tput), np.array(shares)
    fig = bare_figure((11, 4.2))
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.14, top=0.86, wspace=0.36)
    ax1, ax2, ax3 = fig.subplots(1, 3)
    roofline_chart([roof], [], title="Where the step sits", intensity_range=INTENSITY_RANGE, ax=ax1, fast=True)
    set_roof_ylim(ax1, [roof], INTENSITY_RANGE)
    ax1.set_ylabel("Attainable (TFLOP/s)")
    ax1.legend(handles=[
        Line2D([], [], color=PALETTE[0], linewidth=2, label=f"{roof.label} roof"),
        Line2D([], [], marker=MARKERS[0], linestyle="none", color="black", markerfacecolor=PALETTE[3],
               label="FLOP per byte of all traffic"),
        Line2D([], [], marker=MARKERS[1], linestyle="none", color="black", markerfacecolor="white",
               label="FLOP per weight byte"),
    ], fontsize=7, loc="lower right")
    ax2.stackplot(BATCH_GRID, shares * 100, labels=SHARES, colors=PALETTE[:4], alpha=0.85)
    ax2.set_xscale("log", base=2)
    ax2.xaxis.set_major_formatter(FuncFormatter(_tick))
    ax2.set_xlim(1, BATCH_GRID[-1])
    ax2.set_ylim(0, 100)
    ax2.set_xlabel("Batch (sequences)")
    ax2.set_ylabel("Share of bytes moved per step (%)")
    ax2.set_title("Where the bytes go")
    ax2.legend(fontsize=7.5, loc="center left")
    fit = BATCH_GRID <= max(cap, 0)
    ax3.plot(latency[fit] * 1e3, tput[fit], color=PALETTE[0], linewidth=2, label="fits in memory")
    if not fit.all():
        start = max(int(fit.sum()) - 1, 0)
        ax3.plot(latency[start:] * 1e3, tput[start:], color="0.55", linewidth=2, linestyle=":",
                 label=f"does not fit (batch > {cap:,})")
    for b in (1, 8, 64, 512):
        i = int(np.argmin(np.abs(BATCH_GRID - b)))
        ax3.annotate(f"B={b}", (latency[i] * 1e3, tput[i]), textcoords="offset points", xytext=(5, -11), fontsize=7.5)
    ax3.legend(fontsize=7.5, loc="lower right")
    ax3.set_yscale("log")
    ax3.yaxis.set_major_formatter(FuncFormatter(_tick))
    ax3.yaxis.set_minor_formatter(NullFormatter())
    ax3.set_xlabel("Time per output token, lower bound (ms)")
    ax3.set_ylabel("Throughput, upper bound (tokens/s)")
    ax3.set_title("Throughput vs latency")
    ax3.grid(True, alpha=0.4)
    fig.suptitle(title, fontsize=11)
    weight_lens, = ax1.plot([], [], marker=MARKERS[1], markersize=9, linestyle="none", color="black",
                            markerfacecolor="white", animated=True)
    marker, = ax1.plot([], [], marker=MARKERS[0], markersize=11, linestyle="none", color="black",
                       markerfacecolor=PALETTE[3], animated=True)
    vline = ax2.axvline(1, color="black", linewidth=1.5, animated=True)
    now, = ax3.plot([], [], marker=MARKERS[0], markersize=10, linestyle="none", color="black",
                    markerfacecolor=PALETTE[3], animated=True)
    return fig, (weight_lens, marker, vline, now)


class Lesson04Chart:
    def __init__(self) -> None:
        self.figures = CachedFigure(_build)

    def png(self, view: Lesson04View) -> bytes:
        if view.roof is None:
            return message_png(view.text)
        key = (view.title, view.roof, tuple(view.curve_latency_s), tuple(view.curve_tokens_per_s),
               tuple(map(tuple, view.curve_shares)), view.max_batch_that_fits)

        def update(state):
            weight_lens, marker, vline, now = state
            per_weight = point_on_roof("weights only", view.intensity_per_weight_byte, view.roof)
            weight_lens.set_data([per_weight.intensity_flop_per_byte], [per_weight.flops_per_s / 1e12])
            step = point_on_roof(f"batch {view.batch}", view.intensity, view.roof)
            marker.set_data([step.intensity_flop_per_byte], [step.flops_per_s / 1e12])
            vline.set_xdata([view.batch, view.batch])
            now.set_data([view.step_time_s * 1e3], [view.tokens_per_s])
            return [weight_lens, marker, vline, now]

        return self.figures.render(key, update)


def lesson04_dashboard(model_id: str = "qwen3.8-27b", part_id: str = "h100-sxm"):
    """Batch and context sliders, model and part -> the point, the bytes, the throughput–latency curve."""
    import ipywidgets as widgets
    from IPython.display import Image, display

    model_w = widgets.Dropdown(options=list_models(), value=model_id, description="model")
    part_w = widgets.Dropdown(options=list_parts(), value=part_id, description="part")
    batch_w = widgets.SelectionSlider(options=BATCH_CHOICES, value=32, description="batch")
    context_w = widgets.SelectionSlider(options=CONTEXT_CHOICES, value=8192, description="context")
    chart = Lesson04Chart()

    def _update(model, part, batch, context):
        view = lesson04_view(model, part, batch, context)
        print(view.text)
        display(Image(data=chart.png(view), format="png"))

    out = widgets.interactive_output(_update, {"model": model_w, "part": part_w, "batch": batch_w,
                                               "context": context_w})
    ui = widgets.VBox([widgets.HBox([model_w, part_w]), widgets.HBox([batch_w, context_w]), out])
    display(ui)
    return ui
