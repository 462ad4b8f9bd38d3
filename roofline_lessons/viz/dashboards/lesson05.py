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
from ...core.roofline import attainable_flops_per_s
from ...core.units import binary, count, duration, num, si
from ...topics.hybrid import BREAKDOWN, layer_kind_points, step_bytes_breakdown
from ..charts import MARKERS, MIN_FONT_PT, PALETTE, Roof, part_style, roofline_chart, set_roof_ylim
from ..fastfig import Layers, SkeletonChart, bare_figure, message_png
from ..panel import Frame, build_dashboard
from .lesson04 import SHARE_LOOK, _replace_layer, share_text

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
        if len(small) == 1:  # one thin group keeps its own look, with its share in the legend
            name = small[0][0]
            shown.append(Band(f"{name}, at most {share_text(share)}", kinds, *SHARE_LOOK[name], share))
        else:
            what = " + ".join(name for name, _ in small)
            shown.append(Band(f"other: {what}, at most {share_text(share)}", kinds, *OTHER_LOOK, share))
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
    dots, layers = {}, {}
    for kind, pt in layer_kind_points(p.cost).items():
        x = float(pt.intensity)
        dots[kind] = (x, float(attainable_flops_per_s(x, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s)))
        layers[kind] = int(pt.layers)
    kv = now["KV read"] + now["KV written"]
    state = now["state read"] + now["state written"]
    fits = bool(p.fits_in_memory)
    capacity, needed = binary(part.memory_capacity_bytes), binary(float(p.memory_required_bytes))
    text = (f"Batch {count(batch)}, {count(context_tokens)} tokens cached, KV cache in {kv_dtype}: each step takes at "
            f"least {duration(float(p.time_lower_bound_s))} (the lower bound); the estimate, with every operator's "
            f"activations through HBM, is {duration(step)}. Shares of the estimate: weights {share_text(share['weights'])}, KV cache "
            f"{share_text((kv / p.bandwidth_bytes_per_s) / step)}, state "
            f"{share_text((state / p.bandwidth_bytes_per_s) / step)}, activations "
            f"{share_text(share['activations'])}. The full-attention layers sit at "
            f"{num(dots[FULL_ATTENTION][0])} FLOP/byte, the Gated DeltaNet layers at "
            f"{num(dots[GATED_DELTANET][0])}. " + ("Fits" if fits else "Does NOT fit")
            + f" in {capacity} ({needed} needed).")
    return Lesson05View(part.id, int(batch), int(context_tokens), kv_dtype, roof, now, share, step, dots, curves,
                        fits, text, title=f"{get_model(MODEL).name} decode on {part.name}",
                        ridge_flop_per_byte=float(roof.ridge_point_flop_per_byte), layer_counts=layers)


def lesson05_alt(view: Lesson05View) -> str:
    """What the two panels say, with this setting's numbers, for a reader who cannot see them."""
    total = sum(view.bytes_now.values())
    split = ", ".join(f"{k} {share_text(v / total)}" for k, v in view.bytes_now.items())
    ridge = view.ridge_flop_per_byte
    dots = []
    for kind, (x, y) in view.dots.items():
        bound = "memory-bound" if x < ridge else "compute-bound"
        dots.append(f"the {count(view.layer_counts[kind])} {LAYER_NAMES.get(kind, kind)} layers at {num(x)} FLOP/byte "
                    f"({num(y / 1e12)} TFLOP/s, {bound})")
    return (f"{view.title}. Left: stacked bytes moved per decode step against tokens cached, 1 K to 256 K on a "
            f"log scale, at batch {count(view.batch)} with the KV cache in {view.kv_dtype}. At "
            f"{count(view.context_tokens)} tokens (the marked line) a step moves {si(total, 'B')}: {split}. "
            f"Right: the roofline of {view.part} (ridge at {num(ridge)} FLOP/byte) with " + " and ".join(dots) + ".")


def lesson05_frame(view: Lesson05View, chart: Lesson05Chart) -> Frame:
    """The verdict, the chart and its alt text for one setting; an error view shows its error once."""
    if view.error is not None or view.roof is None:
        return Frame(verdict=view.error or view.text, png=None, alt="", error=True)
    return Frame(verdict=view.text, png=chart.png(view), alt=lesson05_alt(view))


def _context_tick(value: float, _pos=None) -> str:
    return f"{count(value / 1024)}K"


def _skeleton() -> dict:
    """The figure with everything no control changes: the context axis, the labels, the moving
    artists. Built once per chart; each part redraws its roof on it (reusing the figure spares
    creating its axes and ticks again)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

    fig = bare_figure(FIGSIZE)
    fig.subplots_adjust(left=0.07, right=0.975, bottom=0.3, top=0.85, wspace=0.3)
    ax1, ax2 = fig.subplots(1, 2)
    ax1.set_xscale("log", base=2)
    ax1.set_xlim(CONTEXT_GRID[0] / EDGE_PAD, CONTEXT_GRID[-1] * EDGE_PAD)
    ax1.xaxis.set_major_locator(FixedLocator([2.0 ** k for k in range(10, 19)]))
    ax1.xaxis.set_minor_locator(NullLocator())
    ax1.xaxis.set_major_formatter(FuncFormatter(_context_tick))
    ax1.yaxis.set_major_locator(MaxNLocator(6))
    ax1.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: num(v)))
    ax1.yaxis.set_animated(True)  # its range follows the batch and the KV dtype: drawn with their layer
    ax1.set_xlabel("Tokens cached per sequence")
    ax1.set_ylabel("Bytes per decode step (GB, 10⁹ B)")
    ax1.set_title("Where one step's bytes go", y=1.0, pad=6)
    ax1.grid(True, alpha=0.3)
    heading = fig.suptitle("", fontsize=12)
    vline = ax1.axvline(CONTEXT_GRID[0], color="black", linewidth=1.5, animated=True)
    attn, = ax2.plot([], [], marker=MARKERS[0], markersize=ATTN_MARKER_SIZE, linestyle="none", color="black",
                     markerfacecolor=PALETTE[3], animated=True)
    # larger than the circle and drawn before it: where the two kinds coincide (short contexts) the
    # square frames the circle and both stay visible
    gdn, = ax2.plot([], [], marker=MARKERS[1], markersize=GDN_MARKER_SIZE, linestyle="none", color="black",
                    markerfacecolor=PALETTE[2], animated=True)
    return {"fig": fig, "axes": (ax1, ax2), "heading": heading, "moving": (vline, attn, gdn)}


def _draw_part(shared: dict, key) -> dict:
    """Put one part's roof on the skeleton. Returns the state that is this key's own."""
    from matplotlib.lines import Line2D

    title, roof = key
    _ax1, ax2 = shared["axes"]
    for artist in [*ax2.lines, *ax2.texts]:
        if not artist.get_animated():  # the previous part's roof
            artist.remove()
    style = part_style(roof.part_id)
    roofline_chart([roof], [], title="The two layer kinds on the roofline", intensity_range=INTENSITY_RANGE, ax=ax2,
                   fast=True)
    set_roof_ylim(ax2, [roof], INTENSITY_RANGE)
    for t in ax2.texts:  # the ridge label: left of the ridge, where it cannot run off the right edge
        t.set_fontsize(MIN_FONT_PT)
        t.set_horizontalalignment("right")
        t.set_position((-5, 6))
    ax2.set_ylabel("Attainable (TFLOP/s)")
    ax2.set_title(ax2.get_title(), y=1.0, pad=6)  # a fixed position: no measuring of tick labels for it
    ax2.legend(handles=[Line2D([], [], color=style.colour, linestyle=style.linestyle, linewidth=2,
                               label=f"{roof.label} roof"),
                        Line2D([], [], marker=MARKERS[0], linestyle="none", color="black", markerfacecolor=PALETTE[3],
                               markersize=8, label="full-attention layers (+ MLPs)"),
                        Line2D([], [], marker=MARKERS[1], linestyle="none", color="black", markerfacecolor=PALETTE[2],
                               markersize=8, label="Gated DeltaNet layers (+ MLPs)")],
               fontsize=MIN_FONT_PT, loc="lower right", framealpha=0.9)
    shared["heading"].set_text(title)
    return {"shared": shared, "fig": shared["fig"], "ylim2": ax2.get_ylim(),
            "layers": Layers(max_cached=len(BATCH_CHOICES) * len(KV_DTYPES))}


def _draw_bytes_layer(state: dict, view: Lesson05View) -> None:
    """The stacked bytes for this batch and KV dtype, their y axis and their legend."""
    shared = state["shared"]
    fig = shared["fig"]
    ax1, _ax2 = shared["axes"]
    bands = stack_bands(view.curves)
    totals_gb = sum(np.asarray(v, dtype=float) for v in view.curves.values()) / 1e9
    ax1.set_ylim(0, float(totals_gb.max()) * 1.05)
    artists = []
    bottom = np.zeros_like(CONTEXT_GRID)
    for band in bands:
        top = bottom + sum(np.asarray(view.curves[k], dtype=float) for k in band.kinds) / 1e9
        artists.append(ax1.fill_between(CONTEXT_GRID, bottom, top, facecolor=band.colour, hatch=band.hatch,
                                        edgecolor="white", linewidth=0, alpha=0.9, animated=True, label=band.label))
        bottom = top
    # outside the axes, below them: the stack reaches every corner at some batch
    legend = ax1.legend(handles=artists[::-1], fontsize=MIN_FONT_PT, ncol=2, loc="upper center",
                        bbox_to_anchor=(0.5, -0.19), frameon=False, handlelength=1.6, columnspacing=1.2,
                        title=f"batch {count(view.batch)}, KV cache in {view.kv_dtype} (read + written)",
                        title_fontsize=MIN_FONT_PT)
    legend.set_animated(True)
    _replace_layer(shared, artists + [legend])
    for a in [ax1.yaxis, *artists, *ax1.spines.values(), legend]:
        fig.draw_artist(a)


class Lesson05Chart(SkeletonChart):
    """Two panels on one figure: the static part is kept as a bitmap per part, the bytes layer per
    (batch, KV dtype), and a context move draws the line and the two dots."""

    def __init__(self) -> None:
        super().__init__(_skeleton, _draw_part)

    def png(self, view: Lesson05View) -> bytes:
        if view.roof is None:
            return message_png(view.text)
        key = (view.title, view.roof)
        layer_key = (view.batch, view.kv_dtype, tuple((k, np.asarray(v).tobytes()) for k, v in view.curves.items()))

        def update(state):
            from matplotlib.transforms import Bbox

            fig = state["fig"]
            self.last_figure = fig
            ax1, ax2 = state["shared"]["axes"]
            ax2.set_ylim(*state["ylim2"])  # the figure is shared between parts: this part's range
            # the layer's pixels: everything left of the roofline panel's tick labels
            region = Bbox.from_extents(0, 0, (ax1.bbox.x1 + ax2.bbox.x0) / 2 - 20, fig.bbox.y1)

            def draw_layer():
                self.layer_misses += 1
                _draw_bytes_layer(state, view)

            state["layers"].show(fig, layer_key, draw_layer, region)
            vline, attn, gdn = state["shared"]["moving"]
            vline.set_xdata([view.context_tokens, view.context_tokens])
            (xa, ya), (xg, yg) = view.dots[FULL_ATTENTION], view.dots[GATED_DELTANET]
            attn.set_data([xa], [ya / 1e12])
            gdn.set_data([xg], [yg / 1e12])
            return [vline, gdn, attn]  # the square behind the circle

        return self.figures.render(key, update)


def lesson05_dashboard(part_id: str = "h100-sxm"):
    """Context, batch, part and KV dtype -> stacked bytes over context and the two moving dots."""
    import ipywidgets as widgets
    from IPython.display import display

    style = {"description_width": "initial"}
    part_w = widgets.Dropdown(options=list_parts(), value=part_id, description="part", style=style,
                              layout=widgets.Layout(width="220px"))
    kv_w = widgets.Dropdown(options=KV_DTYPES, value="bf16", description="KV cache dtype", style=style,
                            layout=widgets.Layout(width="220px"))
    context_w = widgets.SelectionSlider(options=CONTEXT_CHOICES, value=32768, description="context (tokens)",
                                        style=style, layout=widgets.Layout(width="420px"))
    batch_w = widgets.SelectionSlider(options=BATCH_CHOICES, value=1, description="batch", style=style,
                                      layout=widgets.Layout(width="300px"))
    chart = Lesson05Chart()

    def render(part, kv, context, batch):
        return lesson05_frame(lesson05_view(part, batch, context, kv), chart)

    ui = build_dashboard({"part": part_w, "kv": kv_w, "context": context_w, "batch": batch_w},
                         [["part", "kv"], ["context", "batch"]], render)
    display(ui)
    return ui
