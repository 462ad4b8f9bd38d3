"""Lesson 5 dashboard: Qwen3.8-27B decode — context, batch, part and KV dtype -> where each step's
bytes go as the context grows, and the two layer kinds as two dots on the roofline.

Speed: the static part (the roof, the context axis over all of 1 K–256 K tokens, the titles) depends
only on the part. The stacked bytes and their y axis depend on the batch and the KV dtype: they are
drawn once per pair over the static part and kept as a bitmap. A context move draws the line and the
two dots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.models import FULL_ATTENTION, GATED_DELTANET, get_model
from ...core.placement import place
from ...core.units import binary, count, duration, num, si
from ...topics.hybrid import BREAKDOWN, layer_kind_dots, layer_kind_points, step_bytes_breakdown
from ..charts import MARKERS, MIN_FONT_PT, PALETTE, Roof, set_roof_ylim
from ..dashboard_base import (OneFigureChart, dashboard, dropdown, log2_x_axis, moving_marker, point_key, replace_layer,
                              roof_panel, share_text, slider, stack_fills, view_frame)
from ..fastfig import bare_figure
from ..panel import Frame
from .lesson04 import SHARE_LOOK

MODEL = "qwen3.8-27b"
CONTEXT_GRID = np.unique(np.round(np.logspace(10, 18, 49, base=2)))  # 1 K … 256 K tokens
CONTEXT_CHOICES = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144)
BATCH_CHOICES = (1, 2, 4, 8, 16, 32, 64)
KV_DTYPES = ("bf16", "fp8")
INTENSITY_RANGE = (0.1, 1e3)
FIGSIZE = (11.0, 4.9)
#: the context axis runs this factor past 1 K and 256 K tokens (a quarter of a slider step, which
#: doubles the context), so the line marking the context never lies on the axis frame
EDGE_PAD = 2 ** 0.25
#: marker sizes (points) of the full-attention circle and the Gated DeltaNet square behind it
ATTN_MARKER_SIZE, GDN_MARKER_SIZE = 10, 15
#: the stacked chart's bands: each groups the kinds of :data:`BREAKDOWN` that belong together
GROUPS = (("weights", ("weights",)), ("KV cache", ("KV read", "KV written")),
          ("state", ("state read", "state written")), ("activations", ("activations",)))
#: a band whose largest share of a step's bytes, anywhere on the context axis, is below this is too
#: thin to see (under 2 % of the plot's height): it joins the "other" band, whose share is stated
MIN_VISIBLE_SHARE = 0.02
OTHER_LOOK = ("0.6", "||")
LAYER_NAMES = {FULL_ATTENTION: "full-attention", GATED_DELTANET: "Gated DeltaNet"}


@dataclass(frozen=True)
class Lesson05View:
    part: str
    batch: int
    context_tokens: int
    kv_dtype: str
    roof: Roof | None
    bytes_now: dict  #: kind -> bytes of this step
    time_share: dict  #: kind -> share of the step's estimate (its unfused bytes at the bandwidth)
    step_time_s: float | None  #: the step's estimate, seconds (``time_estimate_s``: operators unfused)
    dots: dict  #: layer kind -> (intensity FLOP/byte, attainable FLOP/s)
    curves: dict  #: kind -> bytes per step over CONTEXT_GRID
    fits: bool | None
    text: str
    error: str | None = None
    title: str = ""  #: the figure's title: model and part
    ridge_flop_per_byte: float | None = None
    layer_counts: dict | None = None  #: layer kind -> number of layers of that kind


@dataclass(frozen=True)
class Band:
    """One band of the stacked bytes chart: its legend label, the kinds it sums, its look."""

    label: str
    kinds: tuple[str, ...]
    colour: str
    hatch: str
    max_share: float  #: its largest share of a step's bytes over CONTEXT_GRID


def stack_bands(curves: dict) -> tuple[Band, ...]:
    """The bands to stack for ``curves`` (kind -> bytes over CONTEXT_GRID): read and written bytes of
    one cache together; groups whose share never reaches :data:`MIN_VISIBLE_SHARE` merged into one
    band labelled with what it holds and its largest share; groups that are always zero left out."""
    total = sum(np.asarray(curves[k], dtype=float) for k in BREAKDOWN)
    shown, small = [], []
    for name, kinds in GROUPS:
        share = float(np.max(sum(np.asarray(curves[k], dtype=float) for k in kinds) / total))
        if share <= 0:
            continue
        if share >= MIN_VISIBLE_SHARE:
            shown.append(Band(name, kinds, *SHARE_LOOK[name], share))
        else:
            small.append((name, kinds))
    if small:
        kinds = tuple(k for _, group in small for k in group)
        share = float(np.max(sum(np.asarray(curves[k], dtype=float) for k in kinds) / total))
        one = len(small) == 1  # one thin group keeps its own look, with its share in the legend
        what = small[0][0] if one else "other: " + " + ".join(name for name, _ in small)
        look = SHARE_LOOK[what] if one else OTHER_LOOK
        shown.append(Band(f"{what}, at most {share_text(share)}", kinds, *look, share))
    return tuple(shown)


def lesson05_view(part_id: str, batch: int, context_tokens: int, kv_dtype: str = "bf16") -> Lesson05View:
    """One decode step of Qwen3.8-27B and the byte breakdown over 1 K–256 K tokens of context."""
    try:
        p = place(MODEL, part_id, phase="decode", batch=batch, context_tokens=context_tokens, kv_dtype=kv_dtype)
        curves = step_bytes_breakdown(MODEL, CONTEXT_GRID, batch=batch, kv_dtype=kv_dtype)
    except RooflineInputError as exc:
        return Lesson05View(part_id, batch, context_tokens, kv_dtype, None, {}, {}, None, {}, {}, None, str(exc),
                            error=str(exc))
    part = get_part(part_id)
    roof = Roof(f"{part.id} bf16", p.peak_flops_per_s, p.bandwidth_bytes_per_s, part.id)
    now = {k: float(v[0]) for k, v in step_bytes_breakdown(MODEL, [context_tokens], batch=batch,
                                                           kv_dtype=kv_dtype).items()}
    step = float(p.time_estimate_s)
    share = {k: (v / p.bandwidth_bytes_per_s) / step for k, v in now.items()}
    dots = layer_kind_dots(p.cost, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s)
    layers = {kind: int(pt.layers) for kind, pt in layer_kind_points(p.cost).items()}
    group = {name: sum(now[k] for k in kinds) / p.bandwidth_bytes_per_s / step for name, kinds in GROUPS}
    fits = bool(p.fits_in_memory)
    text = (f"Batch {count(batch)}, {count(context_tokens)} tokens cached, KV cache in {kv_dtype}: each step takes at "
            f"least {duration(float(p.time_lower_bound_s))} (the lower bound); the estimate, with every operator's "
            f"activations through HBM, is {duration(step)}. Shares of the estimate: weights "
            f"{share_text(share['weights'])}, KV cache {share_text(group['KV cache'])}, state "
            f"{share_text(group['state'])}, activations "
            f"{share_text(share['activations'])}. The full-attention layers sit at "
            f"{num(dots[FULL_ATTENTION][0])} FLOP/byte, the Gated DeltaNet layers at "
            f"{num(dots[GATED_DELTANET][0])}. {'Fits' if fits else 'Does NOT fit'} in "
            f"{binary(part.memory_capacity_bytes)} ({binary(float(p.memory_required_bytes))} needed).")
    return Lesson05View(part.id, int(batch), int(context_tokens), kv_dtype, roof, now, share, step, dots, curves,
                        fits, text, title=f"{get_model(MODEL).name} decode on {part.name}",
                        ridge_flop_per_byte=float(roof.ridge_point_flop_per_byte), layer_counts=layers)


def lesson05_alt(view: Lesson05View) -> str:
    """What the two panels say, with this setting's numbers, for a reader who cannot see them."""
    total = sum(view.bytes_now.values())
    split = ", ".join(f"{k} {share_text(v / total)}" for k, v in view.bytes_now.items())
    ridge = view.ridge_flop_per_byte
    dots = [f"the {count(view.layer_counts[kind])} {LAYER_NAMES.get(kind, kind)} layers at {num(x)} FLOP/byte "
            f"({num(y / 1e12)} TFLOP/s, {'memory-bound' if x < ridge else 'compute-bound'})"
            for kind, (x, y) in view.dots.items()]
    return (f"{view.title}. Left: stacked bytes moved per decode step against tokens cached, 1 K to 256 K on a "
            f"log scale, at batch {count(view.batch)} with the KV cache in {view.kv_dtype}. At "
            f"{count(view.context_tokens)} tokens (the marked line) a step moves {si(total, 'B')}: {split}. "
            f"Right: the roofline of {view.part} (ridge at {num(ridge)} FLOP/byte) with " + " and ".join(dots) + ".")


def lesson05_frame(view: Lesson05View, chart: Lesson05Chart) -> Frame:
    """The verdict, the chart and its alt text for one setting; an error view shows its error once."""
    return view_frame(view, chart, lesson05_alt)


class Lesson05Chart(OneFigureChart):
    """Two panels on one figure: the static part is kept as a bitmap per part, the bytes layer per
    (batch, KV dtype), and a context move draws the line and the two dots."""

    max_layers = len(BATCH_CHOICES) * len(KV_DTYPES)

    def figure_key(self, view: Lesson05View):
        return view.title, view.roof

    def frame(self) -> dict:
        """The figure with everything no control changes: the context axis, the labels, the moving
        artists. Built once per chart; each part redraws its roof on it."""
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        fig = bare_figure(FIGSIZE)
        fig.subplots_adjust(left=0.07, right=0.975, bottom=0.3, top=0.85, wspace=0.3)
        ax1, ax2 = fig.subplots(1, 2)
        log2_x_axis(ax1, CONTEXT_GRID[0], CONTEXT_GRID[-1], EDGE_PAD, [2.0 ** k for k in range(10, 19)],
                    lambda v: f"{count(v / 1024)}K")
        ax1.yaxis.set_major_locator(MaxNLocator(6))
        ax1.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: num(v)))
        ax1.yaxis.set_animated(True)  # its range follows the batch and the KV dtype: drawn with their layer
        ax1.set_xlabel("Tokens cached per sequence")
        ax1.set_ylabel("Bytes per decode step (GB, 10⁹ B)")
        ax1.set_title("Where one step's bytes go", y=1.0, pad=6)
        ax1.grid(True, alpha=0.3)
        heading = fig.suptitle("", fontsize=12)
        vline = ax1.axvline(CONTEXT_GRID[0], color="black", linewidth=1.5, animated=True)
        attn = moving_marker(ax2, MARKERS[0], PALETTE[3], ATTN_MARKER_SIZE)
        # larger than the circle and drawn before it: where the two kinds coincide (short contexts) the
        # square frames the circle and both stay visible
        gdn = moving_marker(ax2, MARKERS[1], PALETTE[2], GDN_MARKER_SIZE)
        return {"fig": fig, "axes": (ax1, ax2), "heading": heading, "moving": (vline, gdn, attn)}

    def draw_key(self, shared: dict, key) -> None:
        """Put one part's roof on the figure, and the title."""
        title, roof = key
        roof_panel(shared["axes"][1], roof, "The two layer kinds on the roofline", INTENSITY_RANGE,
                   [point_key(MARKERS[0], "full-attention layers (+ MLPs)", PALETTE[3]),
                    point_key(MARKERS[1], "Gated DeltaNet layers (+ MLPs)", PALETTE[2])])
        shared["heading"].set_text(title)

    def layer_key(self, view: Lesson05View):
        return (self.figure_key(view), view.batch, view.kv_dtype,
                tuple((k, np.asarray(v).tobytes()) for k, v in view.curves.items()))

    def prepare(self, shared: dict, view: Lesson05View) -> None:
        set_roof_ylim(shared["axes"][1], [view.roof], INTENSITY_RANGE)  # the figure is shared: this part's range

    def draw_layer(self, shared: dict, view: Lesson05View) -> None:
        """The stacked bytes for this batch and KV dtype, their y axis and their legend."""
        ax1, _ax2 = shared["axes"]
        totals_gb = sum(np.asarray(v, dtype=float) for v in view.curves.values()) / 1e9
        ax1.set_ylim(0, float(totals_gb.max()) * 1.05)
        fills = stack_fills(ax1, CONTEXT_GRID, [(sum(np.asarray(view.curves[k], dtype=float) for k in b.kinds) / 1e9,
                                                 b.colour, b.hatch, b.label) for b in stack_bands(view.curves)])
        # outside the axes, below them: the stack reaches every corner at some batch
        legend = ax1.legend(handles=fills[::-1], fontsize=MIN_FONT_PT, ncol=2, loc="upper center",
                            bbox_to_anchor=(0.5, -0.19), frameon=False, handlelength=1.6, columnspacing=1.2,
                            title=f"batch {count(view.batch)}, KV cache in {view.kv_dtype} (read + written)",
                            title_fontsize=MIN_FONT_PT)
        legend.set_animated(True)
        replace_layer(shared, fills + [legend])
        for a in [ax1.yaxis, *fills, *ax1.spines.values(), legend]:
            shared["fig"].draw_artist(a)

    def move(self, shared: dict, view: Lesson05View) -> list:
        vline, gdn, attn = shared["moving"]
        vline.set_xdata([view.context_tokens, view.context_tokens])
        (xa, ya), (xg, yg) = view.dots[FULL_ATTENTION], view.dots[GATED_DELTANET]
        attn.set_data([xa], [ya / 1e12])
        gdn.set_data([xg], [yg / 1e12])
        return [vline, gdn, attn]  # the square behind the circle


def lesson05_dashboard(part_id: str = "h100-sxm"):
    """Context, batch, part and KV dtype -> stacked bytes over context and the two moving dots."""
    controls = {"part": dropdown("part", list_parts(), part_id, "220px"),
                "kv": dropdown("KV cache dtype", KV_DTYPES, "bf16", "220px"),
                "context": slider("context (tokens)", CONTEXT_CHOICES, 32768, "420px", fmt=None),
                "batch": slider("batch", BATCH_CHOICES, 1, "300px", fmt=None)}
    chart = Lesson05Chart()
    return dashboard(controls, [["part", "kv"], ["context", "batch"]],
                     lambda part, kv, context, batch: lesson05_frame(lesson05_view(part, batch, context, kv), chart))
