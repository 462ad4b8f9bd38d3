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
from ...core.memory import max_batch_that_fits
from ...core.models import get_model
from ...core.units import binary, count, duration, num, si
from ...topics.batching import BYTE_KINDS, bytes_by_kind, decode_sweep, kinds_moved, resident_bytes
from ..charts import MARKERS, MIN_FONT_PT, PALETTE, Roof, padded_log_range, point_on_roof, set_log_axis, set_roof_ylim
from ..dashboard_base import (OneFigureChart, dashboard, fit_curve, layer_axes, log2_x_axis, model_and_part_controls,
                              moving_marker, point_key, replace_layer, roof_panel, share_text, slider, stack_fills,
                              view_frame)
from ..fastfig import bare_figure
from ..labels import LABEL_BOX_PX, curve_labels, label_placement  # noqa: F401 (lesson 10 and the tests use them)
from ..panel import Frame

BATCH_GRID = np.unique(np.round(np.logspace(0, 10, 61, base=2)))  # 1 … 1024
BATCH_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
CONTEXT_CHOICES = (0, 1024, 4096, 8192, 16384, 32768, 65536, 131072)
INTENSITY_RANGE = (0.1, 1e4)
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
    return kinds_moved(model_id, part_id, BATCH_GRID, (CONTEXT_CHOICES[0], CONTEXT_CHOICES[-1]))


def _bound(intensity: float, ridge: float) -> str:
    return "memory-bound" if intensity < ridge else "compute-bound"


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
    part, model = get_part(part_id), get_model(model_id)
    roof = Roof(f"{part.id} bf16", part.peak_flops_per_s("bf16"), part.memory_bandwidth_bytes_per_s, part.id)
    kinds = {k: float(v) for k, v in bytes_by_kind(one).items()}
    total = sum(kinds.values())
    shares = np.vstack(list(bytes_by_kind(sweep).values()))
    shares = shares / shares.sum(axis=0)
    fits = bool(batch <= cap)
    needed, needed_1 = (resident_bytes(model, b, context_tokens + 1) for b in (batch, 1))
    intensity, per_weight = float(one.intensity), float(one.intensity_per_weight_byte)
    ridge = float(one.ridge_point_flop_per_byte)
    step_s, tokens_per_s = float(one.step_time_s), float(one.tokens_per_s)
    split = ", ".join(f"{k} {share_text(v / total)}" for k, v in kinds.items() if v > 0)
    text = (f"Batch {count(batch)}, {count(context_tokens)} tokens cached: {num(intensity)} FLOP per byte of all "
            f"traffic ({num(per_weight)} per weight byte; the ridge is at {num(ridge)}), so the step is "
            f"{_bound(intensity, ridge)}. Each step takes at least {duration(step_s)}, so at most "
            f"{count(tokens_per_s)} tokens/s in all. Memory traffic per step: {si(total, 'B')} moved ({split}). "
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
    side = "left of" if view.intensity < view.ridge_flop_per_byte else "at or right of"
    split = ", ".join(f"{k} {share_text(v / total)}" for k, v in view.bytes_by_kind.items() if k in view.kinds_present)
    fit = capacity_text(view.fits, view.batch, view.max_batch_that_fits, view.memory_needed_bytes,
                        view.memory_needed_batch1_bytes, view.capacity_bytes)
    return (f"{view.title}, {count(view.context_tokens)} tokens cached, batch {count(view.batch)}. "
            f"Left, the roofline: the step is at {num(view.intensity)} FLOP per byte of all traffic, {side} the "
            f"ridge at {num(view.ridge_flop_per_byte)}, so {_bound(view.intensity, view.ridge_flop_per_byte)}; per "
            f"weight byte it is at {num(view.intensity_per_weight_byte)}. Middle, the share of bytes moved per step "
            f"against batch 1 to {count(BATCH_GRID[-1])}: at this batch {split}. Right, throughput against time per "
            f"token, both on log scales: this step takes at least {duration(view.step_time_s)} and gives at most "
            f"{count(view.tokens_per_s)} tokens/s. Memory for batch {count(view.batch)}: {fit}")


def lesson04_frame(view: Lesson04View, chart: Lesson04Chart) -> Frame:
    """The verdict, the chart and its alt text for one setting; an error view shows its error once."""
    return view_frame(view, chart, lesson04_alt)


# ---- drawing ------------------------------------------------------------------------------------

def throughput_axes_limits(view: Lesson04View):
    """The throughput panel's x range (ms) and y range (tokens/s) for this view's context: its curve,
    padded so the batch labels stay inside."""
    lat_ms = padded_log_range(view.latency_axis_s[0] * 1e3, view.latency_axis_s[1] * 1e3, 1.25, 1.6)
    return lat_ms, padded_log_range(view.tokens_per_s_axis[0], view.tokens_per_s_axis[1], 1.5, 1.5)


class Lesson04Chart(OneFigureChart):
    """Three panels on one figure: the static part is kept as a bitmap per (model, part), the context
    layer per context, and a batch move draws four markers."""

    max_layers = 8

    def figure_key(self, view: Lesson04View):
        return view.title, view.roof, view.kinds_present

    def frame(self) -> dict:
        """The figure with everything that no control changes: three panels, the batch axis, the labels,
        and the moving artists. Built once per chart; each (model, part) redraws the roof on it."""
        from matplotlib.ticker import FixedLocator

        fig = bare_figure(FIGSIZE)
        fig.subplots_adjust(left=0.065, right=0.985, bottom=0.3, top=0.85, wspace=0.45)
        ax1, ax2, ax3 = fig.subplots(1, 3)
        log2_x_axis(ax2, BATCH_GRID[0], BATCH_GRID[-1], EDGE_PAD, [1, 4, 16, 64, 256, 1024], count,
                    minor=[2, 8, 32, 128, 512])
        ax2.set_ylim(0, 100)
        ax2.yaxis.set_major_locator(FixedLocator([0, 20, 40, 60, 80, 100]))
        ax2.set_xlabel("Batch (sequences)")
        ax2.set_ylabel("Share of bytes per step (%)")
        ax2.set_title("Where the bytes go")
        ax3.set_xscale("log")
        ax3.set_yscale("log")
        layer_axes(ax3)  # their ranges follow the context: drawn with the context layer
        ax3.set_xlabel("Time per token, lower bound (ms)")
        ax3.set_ylabel("Throughput, upper bound (tokens/s)")
        ax3.set_title("Throughput vs latency")
        ax3.grid(True, alpha=0.4)
        heading = fig.suptitle("", fontsize=12, animated=True)
        marker = moving_marker(ax1, MARKERS[0], PALETTE[3], 11)
        # hollow, larger and drawn after the filled point: where the two lenses coincide (a small KV
        # cache), the square frames the circle and both stay visible
        weight_lens = moving_marker(ax1, MARKERS[1], "none", WEIGHT_LENS_SIZE, markeredgewidth=1.8)
        vline = ax2.axvline(1, color="black", linewidth=1.5, animated=True)
        now = moving_marker(ax3, MARKERS[0], PALETTE[3], 10)
        return {"fig": fig, "axes": (ax1, ax2, ax3), "heading": heading, "moving": (marker, weight_lens, vline, now)}

    def draw_key(self, shared: dict, key) -> None:
        """Put one (model, part) on the figure: the roof, its legend, the kinds of bytes."""
        from matplotlib.patches import Patch

        _title, roof, kinds = key
        ax1, ax2, ax3 = shared["axes"]
        roof_panel(ax1, roof, "Where the step sits", INTENSITY_RANGE,
                   [point_key(MARKERS[0], "all traffic", PALETTE[3]),
                    point_key(MARKERS[1], "weight bytes only", "none", 10, markeredgewidth=1.5)])
        ax1.set_xlabel("Intensity (FLOP/byte)")
        # outside the axes: the stack fills the whole panel, so no corner inside is free
        ax2.legend(handles=[Patch(facecolor=SHARE_LOOK[k][0], hatch=SHARE_LOOK[k][1], edgecolor="white", label=k)
                            for k in kinds], fontsize=MIN_FONT_PT, ncol=2, loc="upper center",
                   bbox_to_anchor=(0.5, -0.2), frameon=False, handlelength=1.6, columnspacing=1.2)
        for ax in (ax2, ax3):  # a fixed title position: matplotlib need not measure the tick labels for it
            ax.set_title(ax.get_title(), y=1.0, pad=6)

    def layer_key(self, view: Lesson04View):
        return (self.figure_key(view), view.context_tokens, view.max_batch_that_fits, view.latency_axis_s,
                view.tokens_per_s_axis, view.curve_latency_s.tobytes(), view.curve_tokens_per_s.tobytes(),
                view.curve_shares.tobytes())

    def prepare(self, shared: dict, view: Lesson04View) -> None:
        """The figure is shared between keys: put back this view's ranges before placing markers."""
        ax1, _ax2, ax3 = shared["axes"]
        set_roof_ylim(ax1, [view.roof], INTENSITY_RANGE)
        xlim, ylim = throughput_axes_limits(view)
        ax3.set_xlim(*xlim)
        ax3.set_ylim(*ylim)

    def draw_layer(self, shared: dict, view: Lesson04View) -> None:
        """The parts that change with the context: title, stacked shares, throughput–latency curve."""
        _ax1, ax2, ax3 = shared["axes"]
        heading = shared["heading"]
        heading.set_text(f"{view.title}, {count(view.context_tokens)} tokens cached")
        fills = stack_fills(ax2, BATCH_GRID, [(row * 100, *SHARE_LOOK[kind], kind) for kind, row
                                              in zip(BYTE_KINDS, view.curve_shares) if kind in view.kinds_present])
        latency_ms, tput = np.asarray(view.curve_latency_s) * 1e3, np.asarray(view.curve_tokens_per_s)
        xlim, ylim = throughput_axes_limits(view)
        set_log_axis(ax3.xaxis, *xlim)
        set_log_axis(ax3.yaxis, *ylim)
        cap = view.max_batch_that_fits
        fit = BATCH_GRID <= max(cap, 0)
        handles = fit_curve(ax3, latency_ms, tput, fit)  # one line where every batch fits, or none does
        labels = []
        if fit.any():
            labels.append("fits in memory")
        if not fit.all():
            labels.append(f"does not fit (batch > {count(cap)})" if cap > 0 else "does not fit, even at batch 1")
        artists = list(handles)
        marked = [int(np.argmin(np.abs(BATCH_GRID - b))) for b in MARKED_BATCHES]
        # each label's own point: filled where the batch fits, hollow where it does not
        for idx, face, edge in (([i for i in marked if fit[i]], PALETTE[0], PALETTE[0]),
                                ([i for i in marked if not fit[i]], "white", "0.45")):
            if idx:
                artists += ax3.plot(latency_ms[idx], tput[idx], linestyle="none", marker="o", markersize=4,
                                    markerfacecolor=face, markeredgecolor=edge, animated=True)
        artists += curve_labels(ax3, [(latency_ms[i], tput[i]) for i in marked],
                                [f"B={count(b)}" for b in MARKED_BATCHES], MIN_FONT_PT)
        legend = ax3.legend(handles, labels, fontsize=MIN_FONT_PT, loc="upper center", bbox_to_anchor=(0.5, -0.2),
                            frameon=False)
        legend.set_animated(True)
        artists.append(legend)
        replace_layer(shared, fills + artists)
        for a in [heading, *fills, ax3.xaxis, ax3.yaxis, *artists, *ax2.spines.values()]:
            shared["fig"].draw_artist(a)

    def move(self, shared: dict, view: Lesson04View) -> list:
        marker, weight_lens, vline, now = shared["moving"]
        per_weight = point_on_roof("weights only", view.intensity_per_weight_byte, view.roof)
        weight_lens.set_data([per_weight.intensity_flop_per_byte], [per_weight.flops_per_s / 1e12])
        step = point_on_roof(f"batch {view.batch}", view.intensity, view.roof)
        marker.set_data([step.intensity_flop_per_byte], [step.flops_per_s / 1e12])
        vline.set_xdata([view.batch, view.batch])
        now.set_data([view.step_time_s * 1e3], [view.tokens_per_s])
        return [marker, weight_lens, vline, now]


def lesson04_dashboard(model_id: str = "qwen3.8-27b", part_id: str = "h100-sxm"):
    """Batch and context sliders, model and part -> the point, the bytes, the throughput–latency curve."""
    controls = {**model_and_part_controls(model_id, part_id),
                "batch": slider("batch", BATCH_CHOICES, 32, "360px", fmt=None),
                "context": slider("context (tokens)", CONTEXT_CHOICES, 8192, "420px", fmt=None)}
    chart = Lesson04Chart()

    def render(model, part, batch, context):
        return lesson04_frame(lesson04_view(model, part, batch, context), chart)

    return dashboard(controls, [["model", "part"], ["batch", "context"]], render)
