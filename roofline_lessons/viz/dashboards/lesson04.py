"""Lesson 4 dashboard: batch and context -> the decode point on the roofline (through both lenses),
where the bytes go, and where the step sits on the throughput–latency curve.

Speed: the figure's static part (the roof, the frames, the batch axis) depends only on the model and
the part. What changes with the context (the title, the stacked shares, the throughput–latency curve
and its axes) is drawn once per context over it and kept as a bitmap; a batch move draws only the
four markers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part
from ...core.memory import kv_cache_bytes_per_sequence, max_batch_that_fits, state_bytes_per_sequence, weight_bytes
from ...core.models import get_model
from ...core.units import binary, count, duration, num, percent, si
from ...topics.batching import decode_sweep
from ..charts import (MARKERS, MIN_FONT_PT, PALETTE, Roof, padded_log_range, part_style, point_on_roof, roofline_chart,
                      set_log_axis, set_roof_ylim)
from ..fastfig import CHART_DPI, Layers, SkeletonChart, bare_figure, message_png
from ..panel import Frame, build_dashboard, model_and_part

BATCH_GRID = np.unique(np.round(np.logspace(0, 10, 61, base=2)))  # 1 … 1024
BATCH_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
CONTEXT_CHOICES = (0, 1024, 4096, 8192, 16384, 32768, 65536, 131072)
INTENSITY_RANGE = (0.1, 1e4)
SHARES = ("weights", "KV cache", "state", "activations")
#: fill colour and hatch of each kind of bytes (hatches: the kinds differ without colour too)
SHARE_LOOK = {"weights": (PALETTE[0], ""), "KV cache": (PALETTE[1], "//"), "state": (PALETTE[2], ".."),
              "activations": (PALETTE[3], "xx")}
#: batches labelled on the throughput–latency curve
MARKED_BATCHES = (1, 8, 64, 512)
FIGSIZE = (11.0, 4.9)
#: the weights-only point's size (points): larger than the all-traffic point (11) so a hollow
#: square frames it where they coincide
WEIGHT_LENS_SIZE = 16
#: the batch axis runs this factor past batch 1 and 1,024 (a quarter of a slider step, which
#: doubles the batch), so the line marking the batch never lies on the axis frame
EDGE_PAD = 2 ** 0.25


@dataclass(frozen=True)
class Lesson04View:
    title: str
    roof: Roof | None
    batch: int
    context_tokens: int
    intensity: float | None  #: FLOP per byte of all traffic
    intensity_per_weight_byte: float | None  #: FLOP per byte of weights read
    bytes_by_kind: dict  #: weights / KV cache / state / activations -> bytes per step at this batch
    step_time_s: float | None  #: lower bound on one decode step, seconds
    tokens_per_s: float | None  #: upper bound on tokens per second, all sequences together
    max_batch_that_fits: int | None
    fits: bool | None
    curve_latency_s: np.ndarray | None = None  #: step time (s) at each batch of BATCH_GRID
    curve_tokens_per_s: np.ndarray | None = None  #: tokens/s at each batch of BATCH_GRID
    curve_shares: np.ndarray | None = None  #: 4 × len(BATCH_GRID) fractions of bytes
    text: str = ""
    error: str | None = None
    model_id: str = ""
    ridge_flop_per_byte: float | None = None  #: the part's bf16 ridge point, FLOP/byte
    #: (lowest, highest) step time in seconds over BATCH_GRID at this context (and this batch):
    #: the throughput panel's x range before padding
    latency_axis_s: tuple[float, float] | None = None
    tokens_per_s_axis: tuple[float, float] | None = None  #: the same for tokens/s (the y range)
    kinds_present: tuple[str, ...] = ()  #: kinds of bytes this model moves at some context (legend)
    memory_needed_bytes: float | None = None  #: weights + KV cache + state resident at this batch, bytes
    memory_needed_batch1_bytes: float | None = None  #: the same for one sequence, bytes
    capacity_bytes: float | None = None  #: the part's memory capacity, bytes
    max_context_tokens: int | None = None  #: the model's config.json max_position_embeddings


def share_text(fraction: float) -> str:
    """A share for a person to read: whole percents from 1 % (as rounded), one decimal below,
    "under 0.1 %" below that, never a bare "0 %" for a share that is not zero; so "1 %" and
    "1.0 %" never appear side by side."""
    if fraction <= 0:
        return "0 %"
    if fraction < 0.001:
        return "under 0.1 %"
    return percent(fraction, 0 if round(fraction * 100, 1) >= 1 else 1)  # 0.996 % is "1 %", not "1.0 %"


def capacity_text(fits: bool, batch: int, cap: int, needed_bytes: float, needed_batch1_bytes: float,
                  capacity_bytes: float, largest_shown: int = BATCH_CHOICES[-1]) -> str:
    """Whether weights + KV cache + state fit in the part's memory (binary GiB), in a sentence.

    Says the GiB needed so it is not read as the bytes moved per step; the largest batch that fits
    is capped at ``largest_shown`` (the slider's end: "more than 1,024 fit"), and where not even one
    sequence fits, says what batch 1 needs instead of "the largest batch is 0"."""
    capacity = binary(capacity_bytes)
    largest = (f"more than {count(largest_shown)} fit" if cap > largest_shown
               else f"the largest batch that fits is {count(cap)}")
    if fits:
        return f"Fits in {capacity} ({binary(needed_bytes)} needed for weights, KV cache and state; {largest})."
    if cap < 1:
        return (f"Does NOT fit: even batch 1 needs {binary(needed_batch1_bytes)} of the part's {capacity} "
                f"(weights, KV cache and state).")
    return (f"Does NOT fit in {capacity} ({binary(needed_bytes)} needed for weights, KV cache and state): "
            f"{largest}.")


def beyond_context_text(model_name: str, context_tokens: int, max_context_tokens: int) -> str:
    """The what-if note when a sequence (its cached tokens plus the new one) holds more tokens than
    the model was built for; "" when it does not."""
    if context_tokens + 1 <= max_context_tokens:
        return ""
    return (f" Note: {model_name} was built for at most {count(max_context_tokens)} tokens (config.json "
            f"max_position_embeddings); {count(context_tokens)} cached plus the new one is a what-if.")


@lru_cache(maxsize=64)
def _kinds_present(model_id: str, part_id: str) -> tuple[str, ...]:
    """The kinds of bytes that are non-zero for this model at some context on the slider."""
    present = set()
    for ctx in (CONTEXT_CHOICES[0], CONTEXT_CHOICES[-1]):
        s = decode_sweep(model_id, part_id, BATCH_GRID, ctx)
        for kind, arr in zip(SHARES, (s.weight_bytes, s.kv_bytes, s.state_bytes, s.activation_bytes)):
            if float(np.max(arr)) > 0:
                present.add(kind)
    return tuple(k for k in SHARES if k in present)


def lesson04_view(model_id: str, part_id: str, batch: int, context_tokens: int) -> Lesson04View:
    """The decode step at ``batch`` and ``context_tokens``, and the curves over all batch sizes."""
    try:
        if (isinstance(batch, bool) or not isinstance(batch, (int, float, np.integer, np.floating))
                or not float(batch).is_integer() or batch < 1):
            raise RooflineInputError(f"batch must be a whole number >= 1, got {batch!r}")
        sweep = decode_sweep(model_id, part_id, BATCH_GRID, context_tokens)
        one = decode_sweep(model_id, part_id, batch, context_tokens)
        cap = max_batch_that_fits(model_id, part_id, context_tokens + 1)
        present = _kinds_present(model_id, part_id)
    except RooflineInputError as exc:
        return Lesson04View("", None, batch, context_tokens, None, None, {}, None, None, None, None,
                            text=str(exc), error=str(exc))
    part = get_part(part_id)
    model = get_model(model_id)
    roof = Roof(f"{part.id} bf16", part.peak_flops_per_s("bf16"), part.memory_bandwidth_bytes_per_s, part.id)
    kinds = {"weights": float(one.weight_bytes), "KV cache": float(one.kv_bytes),
             "state": float(one.state_bytes), "activations": float(one.activation_bytes)}
    total = sum(kinds.values())
    shares = np.vstack([sweep.weight_bytes, sweep.kv_bytes, sweep.state_bytes, sweep.activation_bytes])
    shares = shares / shares.sum(axis=0)
    fits = bool(batch <= cap)
    per_seq = float(kv_cache_bytes_per_sequence(model, context_tokens + 1)) + float(state_bytes_per_sequence(model))
    needed = weight_bytes(model) + int(batch) * per_seq
    needed_1 = weight_bytes(model) + per_seq
    intensity, per_weight = float(one.intensity), float(one.intensity_per_weight_byte)
    ridge = float(one.ridge_point_flop_per_byte)
    step_s, tokens_per_s = float(one.step_time_s), float(one.tokens_per_s)
    bound = "memory-bound" if intensity < ridge else "compute-bound"
    split = ", ".join(f"{k} {share_text(v / total)}" for k, v in kinds.items() if v > 0)
    text = (f"Batch {count(batch)}, {count(context_tokens)} tokens cached: {num(intensity)} FLOP per byte of all "
            f"traffic ({num(per_weight)} per weight byte; the ridge is at {num(ridge)}), so the step is {bound}. "
            f"Each step takes at least {duration(step_s)}, so at most {count(tokens_per_s)} tokens/s in all. "
            f"Memory traffic per step: {si(total, 'B')} moved ({split}). "
            + capacity_text(fits, int(batch), int(cap), needed, needed_1, part.memory_capacity_bytes)
            + beyond_context_text(model.name, int(context_tokens), model.max_context_tokens))
    return Lesson04View(
        title=f"{model.name} decode on {part.name}",
        roof=roof, batch=int(batch), context_tokens=int(context_tokens), intensity=intensity,
        intensity_per_weight_byte=per_weight, bytes_by_kind=kinds,
        step_time_s=step_s, tokens_per_s=tokens_per_s, max_batch_that_fits=int(cap),
        fits=fits, curve_latency_s=sweep.step_time_s, curve_tokens_per_s=sweep.tokens_per_s, curve_shares=shares,
        text=text, model_id=model.id, ridge_flop_per_byte=ridge,
        latency_axis_s=(min(float(sweep.step_time_s.min()), step_s), max(float(sweep.step_time_s.max()), step_s)),
        tokens_per_s_axis=(min(float(sweep.tokens_per_s.min()), tokens_per_s),
                           max(float(sweep.tokens_per_s.max()), tokens_per_s)),
        kinds_present=present, memory_needed_bytes=needed, memory_needed_batch1_bytes=needed_1,
        capacity_bytes=float(part.memory_capacity_bytes), max_context_tokens=int(model.max_context_tokens))


def lesson04_alt(view: Lesson04View) -> str:
    """What the three panels say, with this setting's numbers, for a reader who cannot see them."""
    total = sum(view.bytes_by_kind.values())
    bound = "memory-bound" if view.intensity < view.ridge_flop_per_byte else "compute-bound"
    side = "left of" if view.intensity < view.ridge_flop_per_byte else "at or right of"
    split = ", ".join(f"{k} {share_text(v / total)}" for k, v in view.bytes_by_kind.items() if k in view.kinds_present)
    fit = capacity_text(view.fits, view.batch, view.max_batch_that_fits, view.memory_needed_bytes,
                        view.memory_needed_batch1_bytes, view.capacity_bytes)
    return (f"{view.title}, {count(view.context_tokens)} tokens cached, batch {count(view.batch)}. "
            f"Left, the roofline: the step is at {num(view.intensity)} FLOP per byte of all traffic, {side} the "
            f"ridge at {num(view.ridge_flop_per_byte)}, so {bound}; per weight byte it is at "
            f"{num(view.intensity_per_weight_byte)}. Middle, the share of bytes moved per step against batch 1 to "
            f"{count(BATCH_GRID[-1])}: at this batch {split}. Right, throughput against time per token, both on log "
            f"scales: this step takes at least {duration(view.step_time_s)} and gives at most "
            f"{count(view.tokens_per_s)} tokens/s. Memory for batch {count(view.batch)}: {fit}")


def lesson04_frame(view: Lesson04View, chart: Lesson04Chart) -> Frame:
    """The verdict, the chart and its alt text for one setting; an error view shows its error once."""
    if view.error is not None or view.roof is None:
        return Frame(verdict=view.error or view.text, png=None, alt="", error=True)
    return Frame(verdict=view.text, png=chart.png(view), alt=lesson04_alt(view))


# ---- drawing ------------------------------------------------------------------------------------

def _replace_layer(shared: dict, artists: list) -> None:
    """Forget the previous layer's artists (they live on in its bitmap) and keep these."""
    for a in shared.get("layer", ()):
        a.remove()
    shared["layer"] = artists


def _skeleton() -> dict:
    """The figure with everything that no control changes: three panels, the batch axis, the labels,
    and the moving artists. Built once per chart; each (model, part) redraws the roof on it (reusing
    a figure spares creating its axes and ticks again, a third of a full build)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    fig = bare_figure(FIGSIZE)
    fig.subplots_adjust(left=0.065, right=0.985, bottom=0.3, top=0.85, wspace=0.45)
    ax1, ax2, ax3 = fig.subplots(1, 3)

    ax2.set_xscale("log", base=2)
    ax2.set_xlim(BATCH_GRID[0] / EDGE_PAD, BATCH_GRID[-1] * EDGE_PAD)
    ax2.xaxis.set_major_locator(FixedLocator([1, 4, 16, 64, 256, 1024]))
    ax2.xaxis.set_minor_locator(FixedLocator([2, 8, 32, 128, 512]))
    ax2.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: count(v)))
    ax2.xaxis.set_minor_formatter(NullFormatter())
    ax2.set_ylim(0, 100)
    ax2.yaxis.set_major_locator(FixedLocator([0, 20, 40, 60, 80, 100]))
    ax2.set_xlabel("Batch (sequences)")
    ax2.set_ylabel("Share of bytes per step (%)")
    ax2.set_title("Where the bytes go")

    ax3.set_xscale("log")
    ax3.set_yscale("log")
    for axis in (ax3.xaxis, ax3.yaxis):  # their ranges follow the context: drawn with the context layer
        axis.set_animated(True)
        axis.set_major_locator(NullLocator())  # no ticks to lay out until then
        axis.set_minor_locator(NullLocator())
    ax3.set_xlabel("Time per token, lower bound (ms)")
    ax3.set_ylabel("Throughput, upper bound (tokens/s)")
    ax3.set_title("Throughput vs latency")
    ax3.grid(True, alpha=0.4)

    heading = fig.suptitle("", fontsize=12, animated=True)
    marker, = ax1.plot([], [], marker=MARKERS[0], markersize=11, linestyle="none", color="black",
                       markerfacecolor=PALETTE[3], animated=True)
    # hollow, larger and drawn after the filled point: where the two lenses coincide (a small KV
    # cache), the square frames the circle and both stay visible
    weight_lens, = ax1.plot([], [], marker=MARKERS[1], markersize=WEIGHT_LENS_SIZE, linestyle="none",
                            color="black", markerfacecolor="none", markeredgewidth=1.8, animated=True)
    vline = ax2.axvline(1, color="black", linewidth=1.5, animated=True)
    now, = ax3.plot([], [], marker=MARKERS[0], markersize=10, linestyle="none", color="black",
                    markerfacecolor=PALETTE[3], animated=True)
    return {"fig": fig, "axes": (ax1, ax2, ax3), "heading": heading, "moving": (weight_lens, marker, vline, now),
            "draw_order": (marker, weight_lens, vline, now)}


def _draw_part(shared: dict, key) -> dict:
    """Put one (model, part) on the skeleton: the roof, its legend, the kinds of bytes. Returns the
    state that is this key's own (its title, its roof's y range, its context layers)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    title, roof, kinds = key
    ax1, ax2, ax3 = shared["axes"]
    for artist in [*ax1.lines, *ax1.texts]:
        if not artist.get_animated():  # the previous key's roof
            artist.remove()
    style = part_style(roof.part_id)
    roofline_chart([roof], [], title="Where the step sits", intensity_range=INTENSITY_RANGE, ax=ax1, fast=True)
    set_roof_ylim(ax1, [roof], INTENSITY_RANGE)
    for t in ax1.texts:  # the ridge label: left of the ridge, clear of the points on the flat roof
        t.set_fontsize(MIN_FONT_PT)
        t.set_horizontalalignment("right")
        t.set_position((-5, 6))
    ax1.set_ylabel("Attainable (TFLOP/s)")
    ax1.set_xlabel("Intensity (FLOP/byte)")
    ax1.legend(handles=[
        Line2D([], [], color=style.colour, linestyle=style.linestyle, linewidth=2, label=f"{roof.label} roof"),
        Line2D([], [], marker=MARKERS[0], linestyle="none", color="black", markerfacecolor=PALETTE[3],
               markersize=8, label="all traffic"),
        Line2D([], [], marker=MARKERS[1], linestyle="none", color="black", markerfacecolor="none",
               markeredgewidth=1.5, markersize=10, label="weight bytes only"),
    ], fontsize=MIN_FONT_PT, loc="lower right", framealpha=0.9)
    # outside the axes: the stack fills the whole panel, so no corner inside is free
    ax2.legend(handles=[Patch(facecolor=SHARE_LOOK[k][0], hatch=SHARE_LOOK[k][1], edgecolor="white", label=k)
                        for k in kinds], fontsize=MIN_FONT_PT, ncol=2, loc="upper center",
               bbox_to_anchor=(0.5, -0.2), frameon=False, handlelength=1.6, columnspacing=1.2)
    for ax in (ax1, ax2, ax3):  # a fixed title position: matplotlib need not measure the tick labels for it
        ax.set_title(ax.get_title(), y=1.0, pad=6)
    return {"shared": shared, "fig": shared["fig"], "title": title, "ylim1": ax1.get_ylim(), "layers": Layers()}


#: a batch label's size in pixels of the PNG, with room to spare ("B=512" at 9 pt is 33 x 11 px at 80 dpi)
LABEL_BOX_PX = (40 * CHART_DPI / 80, 16 * CHART_DPI / 80)


def label_placement(xy_px, axes_box, gap_pt: float = 5):
    """Offset (points), horizontal and vertical alignment for a label at pixel ``xy_px`` on the
    throughput–latency curve, inside ``axes_box`` (x0, y0, x1, y1 in pixels).

    The curve only rises as the batch grows, so the quadrants below-right and above-left of any of
    its points are free of it: the label goes below-right, or above-left where that would leave the
    axes, or straight right (clear of the steep start of the curve) at a corner."""
    x, y = xy_px
    x0, y0, x1, y1 = axes_box
    w, h = LABEL_BOX_PX
    gap = gap_pt * CHART_DPI / 72
    if y - gap - h >= y0 and x + gap + w <= x1:
        return (gap_pt, -gap_pt), "left", "top"
    if x - gap - w >= x0 and y + gap + h <= y1:
        return (-gap_pt, gap_pt), "right", "bottom"
    return (2 * gap_pt, 0), "left", "center"


def throughput_axes_limits(view: Lesson04View):
    """The throughput panel's x range (ms) and y range (tokens/s) for this view's context: its curve,
    padded so the batch labels stay inside."""
    lat_ms = padded_log_range(view.latency_axis_s[0] * 1e3, view.latency_axis_s[1] * 1e3, 1.25, 1.6)
    return lat_ms, padded_log_range(view.tokens_per_s_axis[0], view.tokens_per_s_axis[1], 1.5, 1.5)


def _draw_context_layer(state: dict, view: Lesson04View) -> None:
    """The parts that change with the context: title, stacked shares, throughput–latency curve."""
    shared = state["shared"]
    fig = shared["fig"]
    _ax1, ax2, ax3 = shared["axes"]
    heading = shared["heading"]
    heading.set_text(f"{state['title']}, {count(view.context_tokens)} tokens cached")
    artists = []
    bottom = np.zeros_like(BATCH_GRID)
    for kind, row in zip(SHARES, view.curve_shares):
        if kind not in view.kinds_present:
            continue
        colour, hatch = SHARE_LOOK[kind]
        top = bottom + row * 100
        artists.append(ax2.fill_between(BATCH_GRID, bottom, top, facecolor=colour, hatch=hatch, edgecolor="white",
                                        linewidth=0, alpha=0.9, animated=True))
        bottom = top
    latency_ms, tput = np.asarray(view.curve_latency_s) * 1e3, np.asarray(view.curve_tokens_per_s)
    xlim, ylim = throughput_axes_limits(view)
    set_log_axis(ax3.xaxis, *xlim)
    set_log_axis(ax3.yaxis, *ylim)
    artists += [ax3.xaxis, ax3.yaxis]
    cap = view.max_batch_that_fits
    fit = BATCH_GRID <= max(cap, 0)
    handles = []
    if fit.any():
        line, = ax3.plot(latency_ms[fit], tput[fit], color=PALETTE[0], linewidth=2.2, animated=True,
                         label="fits in memory")
        artists.append(line)
        handles.append(line)
    if not fit.all():
        start = max(int(fit.sum()) - 1, 0)
        line, = ax3.plot(latency_ms[start:], tput[start:], color="0.45", linewidth=2, linestyle=":", animated=True,
                         label=f"does not fit (batch > {count(cap)})" if cap > 0 else "does not fit, even at batch 1")
        artists.append(line)
        handles.append(line)
    box = ax3.bbox.extents
    marked = [int(np.argmin(np.abs(BATCH_GRID - b))) for b in MARKED_BATCHES]
    fits_marked = [i for i in marked if fit[i]]
    rest = [i for i in marked if not fit[i]]
    # each label's own point: filled where the batch fits, hollow where it does not
    for idx, face in ((fits_marked, PALETTE[0]), (rest, "white")):
        if idx:
            dots, = ax3.plot(latency_ms[idx], tput[idx], linestyle="none", marker="o", markersize=4,
                             markerfacecolor=face, markeredgecolor=PALETTE[0] if face != "white" else "0.45",
                             animated=True)
            artists.append(dots)
    for b in MARKED_BATCHES:
        i = int(np.argmin(np.abs(BATCH_GRID - b)))
        offset, ha, va = label_placement(ax3.transData.transform((latency_ms[i], tput[i])), box)
        artists.append(ax3.annotate(f"B={count(b)}", (latency_ms[i], tput[i]), textcoords="offset points",
                                    xytext=offset, ha=ha, va=va, fontsize=MIN_FONT_PT, animated=True))
    legend = ax3.legend(handles=handles, fontsize=MIN_FONT_PT, loc="upper center", bbox_to_anchor=(0.5, -0.2),
                        frameon=False)
    legend.set_animated(True)
    artists.append(legend)
    _replace_layer(shared, [a for a in artists if a not in (ax3.xaxis, ax3.yaxis)])
    for a in [heading, *artists, *ax2.spines.values()]:
        fig.draw_artist(a)


class Lesson04Chart(SkeletonChart):
    """Three panels on one figure: the static part is kept as a bitmap per (model, part), the context
    layer per context, and a batch move draws four markers."""

    def __init__(self) -> None:
        super().__init__(_skeleton, _draw_part)

    def png(self, view: Lesson04View) -> bytes:
        if view.roof is None:
            return message_png(view.text)
        key = (view.title, view.roof, view.kinds_present)
        layer_key = (view.context_tokens, view.max_batch_that_fits, view.latency_axis_s, view.tokens_per_s_axis,
                     view.curve_latency_s.tobytes(), view.curve_tokens_per_s.tobytes(), view.curve_shares.tobytes())

        def update(state):
            fig = state["fig"]
            ax1, _ax2, ax3 = state["shared"]["axes"]
            self.last_figure = fig
            # the figure is shared between keys: put back this key's ranges before placing markers
            ax1.set_ylim(*state["ylim1"])
            xlim, ylim = throughput_axes_limits(view)
            ax3.set_xlim(*xlim)
            ax3.set_ylim(*ylim)

            def draw_layer():
                self.layer_misses += 1
                _draw_context_layer(state, view)

            state["layers"].show(fig, layer_key, draw_layer)
            weight_lens, marker, vline, now = state["shared"]["moving"]
            per_weight = point_on_roof("weights only", view.intensity_per_weight_byte, view.roof)
            weight_lens.set_data([per_weight.intensity_flop_per_byte], [per_weight.flops_per_s / 1e12])
            step = point_on_roof(f"batch {view.batch}", view.intensity, view.roof)
            marker.set_data([step.intensity_flop_per_byte], [step.flops_per_s / 1e12])
            vline.set_xdata([view.batch, view.batch])
            now.set_data([view.step_time_s * 1e3], [view.tokens_per_s])
            return list(state["shared"]["draw_order"])

        return self.figures.render(key, update)


def lesson04_dashboard(model_id: str = "qwen3.8-27b", part_id: str = "h100-sxm"):
    """Batch and context sliders, model and part -> the point, the bytes, the throughput–latency curve."""
    import ipywidgets as widgets
    from IPython.display import display

    style = {"description_width": "initial"}
    model_w, part_w = model_and_part(model_id, part_id, style)
    batch_w = widgets.SelectionSlider(options=BATCH_CHOICES, value=32, description="batch", style=style,
                                      layout=widgets.Layout(width="360px"))
    context_w = widgets.SelectionSlider(options=CONTEXT_CHOICES, value=8192, description="context (tokens)",
                                        style=style, layout=widgets.Layout(width="420px"))
    chart = Lesson04Chart()

    def render(model, part, batch, context):
        return lesson04_frame(lesson04_view(model, part, batch, context), chart)

    ui = build_dashboard({"model": model_w, "part": part_w, "batch": batch_w, "context": context_w},
                         [["model", "part"], ["batch", "context"]], render)
    display(ui)
    return ui
