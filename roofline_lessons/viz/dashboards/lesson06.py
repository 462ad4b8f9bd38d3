"""Lesson 6 dashboard: sequence length, head dim, SRAM size, causality and loop order -> HBM bytes of
standard attention, of the two tiled loop orders (FlashAttention's Algorithm 1 and FlashAttention-2)
and of the compulsory floor, their positions on the roofline, and the tiles the kernel visits.

Every number comes from the closed forms in :mod:`roofline_lessons.topics.flash`
(:func:`~roofline_lessons.topics.flash.flash_hbm_bytes`, :func:`~roofline_lessons.topics.flash.flash2_hbm_bytes`),
which equal what the tile-by-tile simulations count (the tests check both at small N); nothing here
runs the simulation, so an update costs the same at N = 131,072 as at N = 512. The tile map is
aggregated to at most :data:`MAX_MAP_CELLS` cells per side, each computed in closed form too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.roofline import attainable_flops_per_s
from ...core.units import binary, count, num, si
from ...topics.flash import SRAMOverflowError, attention_flops, closed_form_tiling, tile_grid, tile_map
from ...topics.levers import regime
from ..charts import MARKERS, MIN_FONT_PT, PALETTE, Roof, part_style, roofline_chart, set_roof_ylim
from ..dashboard_base import (FigurePerKeyChart, checkbox, dashboard, dropdown, raise_small_text, roof_key, slider,
                              toggle)
from ..fastfig import CHART_DPI, bare_figure
from ..panel import Frame

N_CHOICES = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
D_CHOICES = (64, 128, 256)
SRAM_CHOICES_KIB = (48, 64, 100, 164, 228)
INTENSITY_RANGE = (1, 1e5)
KINDS = ("standard (N×N in HBM)", "tiled, Algorithm 1 (K/V outer)", "tiled, FlashAttention-2 (Q outer)",
         "compulsory: Q, K, V read, O written once")
SHORT = ("standard attention", "Algorithm 1", "the FlashAttention-2 order", "the compulsory floor")
ORDERS = {"Algorithm 1 (K/V blocks outer)": "fa1", "FlashAttention-2 (Q blocks outer)": "fa2"}
#: the dashboard's tile map shows at most this many cells per side (each cell aggregates a square of tiles)
MAX_MAP_CELLS = 64
ELEMENT_BYTES = 2  #: BF16 operands


@dataclass(frozen=True)
class Lesson06View:
    n: int
    head_dim: int
    sram_bytes: int
    causal: bool
    roof: Roof | None
    flops: float
    bytes_by_kind: dict
    intensity_by_kind: dict
    attainable_by_kind: dict
    block_rows: int
    block_cols: int
    tile_map: np.ndarray | None  #: visiting order of each cell of (query block, key block) tiles, NaN where skipped
    text: str
    error: str | None = None
    order: str = "fa1"  #: loop order the tile map shows: "fa1" (key blocks outer) or "fa2" (query blocks outer)
    notes: tuple[str, ...] = ()
    tile_grid: tuple[int, int] = (0, 0)  #: (query blocks, key blocks) of the full tile grid
    tiles_visited: int = 0  #: tiles the kernel computes (all of them unless causal)
    tiles_per_cell: tuple[int, int] = (1, 1)  #: (query blocks, key blocks) one map cell stands for
    #: FLOPs an eager (unfused) standard kernel computes: all N² scores, masked afterwards when causal (the cost
    #: model's count for eager attention); ``flops`` is the unmasked work every dot is placed with
    standard_computed_flops: float = 0.0


@lru_cache(maxsize=256)
def _numbers(n: int, head_dim: int, sram: int, causal: bool, part_id: str, order: str):
    """The closed forms for one setting, the part's BF16 roof and the tile map (cached by the inputs)."""
    part = get_part(part_id)
    roof = Roof(f"{part.id} BF16", part.peak_flops_per_s("bf16"), part.memory_bandwidth_bytes_per_s, part.id)
    tiling = closed_form_tiling(n, head_dim, sram, causal, ELEMENT_BYTES)
    tiles = tile_map(n, tiling.sizes.rows, tiling.sizes.cols, causal, MAX_MAP_CELLS, order)
    tiles.setflags(write=False)  # shared between views: nobody may change it
    return tiling, roof, tiles


def lesson06_view(n: int, head_dim: int, sram_kib: int, causal: bool, part_id: str = "h100-sxm",
                  order: str = "fa1") -> Lesson06View:
    """One setting of the dashboard: bytes, intensities and attainable rates of the four kinds of
    attention (closed forms, cached by the inputs) and the aggregated tile map."""
    sram = int(sram_kib * 1024)
    try:
        if order not in ("fa1", "fa2"):
            raise RooflineInputError(f"order must be 'fa1' or 'fa2', got {order!r}")
        tiling, roof, tiles = _numbers(int(n), int(head_dim), sram, bool(causal), str(part_id), order)
    except (SRAMOverflowError, RooflineInputError) as exc:
        return Lesson06View(n, head_dim, sram, causal, None, 0.0, {}, {}, {}, 0, 0, None, str(exc), error=str(exc),
                            order=order)
    sizes, flops, visited = tiling.sizes, tiling.flops, tiling.tiles_visited
    nbytes = dict(zip(KINDS, tiling.hbm_bytes))
    intensity = {k: flops / b for k, b in nbytes.items()}
    attain = {k: float(attainable_flops_per_s(i, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s))
              for k, i in intensity.items()}
    tr, tc, sr, sc, *_ = tile_grid(n, sizes.rows, sizes.cols, MAX_MAP_CELLS)
    ridge = roof.ridge_point_flop_per_byte
    eager = float(attention_flops(n, head_dim, False))
    counted = (f"one head does {si(flops, 'FLOP')} of unmasked work, the count every dot and intensity here uses "
               f"(the same useful work for all four). Standard attention, an eager kernel, computes all N² scores and "
               f"masks them afterwards: {si(eager, 'FLOP')} computed (what the course's cost model charges eager "
               f"attention), so its own FLOP rate would read {num(eager / flops)}× higher at the same time"
               if causal else f"one head does {si(flops, 'FLOP')}")
    said = "; ".join(f"{name}: {si(nbytes[k], 'B')} (I = {num(intensity[k])} FLOP/byte, "
                     f"{regime(intensity[k], ridge)})" for name, k in zip(SHORT, KINDS))
    text = (f"N = {count(n)} tokens, head dim {head_dim}, {binary(sram)} of SRAM, "
            f"{'causal' if causal else 'full (not causal)'}: {counted}. "
            f"HBM traffic: {said}. The {roof.label} ridge is at {num(ridge)} FLOP/byte. "
            f"Tiles of {sizes.rows} query × {sizes.cols} key rows (FlashAttention-1's rule, B_r ≤ d, borrowed for "
            f"both orders: {sizes.paper_rows} × {sizes.paper_cols} before shrinking to fit).")
    notes = (f"The kernel visits {count(visited)} of {count(tr * tc)} tiles ({count(tr)} query blocks × {count(tc)} "
             f"key blocks" + (f"; {count(tr * tc - visited)} skipped above the diagonal" if causal else "") + ")"
             + (f"; each map cell stands for {count(sr)} × {count(sc)} tiles." if (sr, sc) != (1, 1) else "."),
             "Tiled byte counts assume every tile comes from HBM (no reuse through the L2 cache).")
    return Lesson06View(n, head_dim, sram, causal, roof, flops, nbytes, intensity, attain, sizes.rows, sizes.cols,
                        tiles, text, order=order, notes=notes, tile_grid=(tr, tc), tiles_visited=visited,
                        tiles_per_cell=(sr, sc), standard_computed_flops=eager)


#: the kind drawn hollow (a thick coloured outline, on top of the others): Algorithm 1's triangle, which often
#: sits within a few pixels of the FlashAttention-2 diamond; through it the diamond stays visible
HOLLOW_KIND = 1


def _dot_style(i: int, roof_colour: str) -> dict:
    """Marker and fill of kind ``i``: a marker per kind, colours that skip the roof's own colour; kind
    :data:`HOLLOW_KIND` is an outline only, in its colour, so a dot under it shows through."""
    fills = [c for c in PALETTE[1:6] if c.lower() != roof_colour.lower()]
    if i == HOLLOW_KIND:
        return {"marker": MARKERS[i + 1], "linestyle": "none", "color": fills[i], "markerfacecolor": "none",
                "markeredgecolor": fills[i], "markeredgewidth": 2.6}
    return {"marker": MARKERS[i + 1], "linestyle": "none", "color": "black", "markerfacecolor": fills[i]}


#: marker sizes (points); the hollow triangle is the largest and drawn last, so it frames what it covers
DOT_SIZES = (13, 16, 10, 10)
DOT_ZORDER = (3, 5, 4, 4)
#: two dots whose centres are closer than this (pixels of the PNG; 8 px at 80 dpi, markers scale with the
#: dpi) overlap: the alt text says they coincide
COINCIDE_PX = 8.0 * CHART_DPI / 80


class Lesson06Chart(FigurePerKeyChart):
    """A figure per roof (one attention head on it, and the tile map); a move draws the four dots and the map."""

    #: kind -> (x, y) pixel centre of its dot in the last PNG drawn (each move puts a new dict here)
    dot_pixels: dict[str, tuple[float, float]] = {}

    def figure_key(self, view: Lesson06View):
        return view.roof

    def skeleton(self, roof) -> dict:
        from matplotlib.lines import Line2D

        fig = bare_figure((11, 4.6))
        fig.subplots_adjust(left=0.075, right=0.985, bottom=0.12, top=0.84, wspace=0.16)
        ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.45, 1]})
        roofline_chart([roof], [], title=f"One attention head on the {roof.label} roofline",
                       intensity_range=INTENSITY_RANGE, ax=ax1, fast=True)
        set_roof_ylim(ax1, [roof], INTENSITY_RANGE)
        for label in ax1.texts:  # the ridge label goes under the flat roof, where no dot can sit on it
            if label.get_text().startswith("ridge"):
                label.set_position((6, -16))
        ax1.set_ylabel("Attainable (TFLOP/s)")
        look = part_style(roof.part_id)
        ax1.legend(handles=[roof_key(roof, roof.label, 2.2)]
                   + [Line2D([], [], markersize=8, label=k, **_dot_style(i, look.colour)) for i, k in enumerate(KINDS)],
                   fontsize=MIN_FONT_PT, loc="lower right", framealpha=0.9)
        dots = [ax1.plot([], [], markersize=DOT_SIZES[i], animated=True, zorder=DOT_ZORDER[i],
                         **_dot_style(i, look.colour))[0] for i in range(len(KINDS))]
        ax2.set_title("Tiles the kernel computes\n(dark: visited first, light: last; white: skipped)", fontsize=10)
        # the y label is rotated 90°: its arrow points down, the way i grows (origin="upper")
        ax2.set(xlabel="key/value block j →", ylabel="← query block i", xticks=[], yticks=[])
        image = ax2.imshow(np.zeros((2, 2)), cmap="cividis", origin="upper", aspect="auto", interpolation="nearest",
                           extent=(0, 1, 1, 0), animated=True)
        grid = ax2.text(0.5, -0.075, "", transform=ax2.transAxes, ha="center", va="top", fontsize=MIN_FONT_PT,
                        animated=True)
        fig.suptitle("FlashAttention tiling: bytes moved and tiles visited", fontsize=12)
        raise_small_text(fig)
        return {"fig": fig, "dots": dots, "image": image, "grid": grid}

    def move(self, shared: dict, view: Lesson06View) -> list:
        self.dot_pixels = {}
        for dot, kind in zip(shared["dots"], KINDS):
            xy = (view.intensity_by_kind[kind], view.attainable_by_kind[kind] / 1e12)
            dot.set_data([xy[0]], [xy[1]])
            self.dot_pixels[kind] = tuple(float(v) for v in dot.axes.transData.transform(xy))
        shared["image"].set_data(np.ma.masked_invalid(view.tile_map))
        shared["image"].set_clim(0, max(float(np.nanmax(view.tile_map)), 1.0))
        (tr, tc), (sr, sc) = view.tile_grid, view.tiles_per_cell
        shared["grid"].set_text(f"{count(tr)} × {count(tc)} tiles of {view.block_rows} × {view.block_cols} rows"
                                + (f"; a cell = {count(sr)} × {count(sc)} tiles" if (sr, sc) != (1, 1) else ""))
        return [*shared["dots"], shared["image"], shared["grid"]]

    def coinciding(self) -> list[tuple[str, str, float]]:
        """Pairs of kinds whose dots in the last PNG lie within :data:`COINCIDE_PX` pixels, with the distance."""
        items = list(self.dot_pixels.items())
        return [(a, b, float(np.hypot(pa[0] - pb[0], pa[1] - pb[1])))
                for n, (a, pa) in enumerate(items) for b, pb in items[n + 1:]
                if np.hypot(pa[0] - pb[0], pa[1] - pb[1]) < COINCIDE_PX]


def lesson06_alt(view: Lesson06View, coinciding=()) -> str:
    """The chart's message in words, with the live numbers; ``coinciding`` (from
    :meth:`Lesson06Chart.coinciding`) names dots that overlap on the chart."""
    roof = view.roof
    where = "; ".join(f"{name} at {num(view.intensity_by_kind[k])} FLOP/byte, "
                      f"{num(view.attainable_by_kind[k] / 1e12)} TFLOP/s" for name, k in zip(SHORT, KINDS))
    tr, tc = view.tile_grid
    walk = ("column by column (key blocks outer, Algorithm 1)" if view.order == "fa1"
            else "row by row (query blocks outer, FlashAttention-2)")
    shape = ("a lower triangle: tiles above the diagonal, whose keys all come after their queries, are skipped"
             if view.causal else "the full square: every tile is visited")
    names = dict(zip(KINDS, SHORT))
    hollow = f"; {names[KINDS[HOLLOW_KIND]]} is the hollow triangle around the other"
    overlap = "".join(f" The dots of {names[a]} and {names[b]} coincide on the chart ({num(d, 2)} pixels apart"
                      f"{hollow if KINDS[HOLLOW_KIND] in (a, b) else ''})." for a, b, d in coinciding)
    return (f"Left: log-log roofline of the {roof.label} ({num(roof.peak_flops_per_s / 1e12)} TFLOP/s, "
            f"{num(roof.bandwidth_bytes_per_s / 1e12)} TB/s, ridge {num(roof.ridge_point_flop_per_byte)} FLOP/byte) "
            f"with one head of attention at N = {count(view.n)}, head dim {view.head_dim}: {where}.{overlap} "
            f"Right: the {count(tr)} × {count(tc)} grid of query-block × key-block tiles, "
            f"{count(view.tiles_visited)} visited, shaded in visiting order {walk}; the visited region is {shape}.")


def lesson06_frame(view: Lesson06View, chart: Lesson06Chart) -> Frame:
    """What the dashboard shows for ``view``: the verdict, the notes, the chart and its alt text; an error
    view shows its message once, with no chart."""
    if view.error is not None:
        return Frame(verdict=f"This setting cannot be drawn: {view.error}", png=None, alt="", error=True)
    png = chart.png(view)
    return Frame(verdict=view.text, png=png, alt=lesson06_alt(view, chart.coinciding()), notes=view.notes)


def lesson06_dashboard(part_id: str = "h100-sxm"):
    """N, head dim, SRAM size, causality and loop order -> bytes, intensity, the four dots and the tile map."""
    controls = {"n": slider("N (tokens)", N_CHOICES, 8192, "26em", fmt=None),
                "sram": slider("SRAM (KiB)", SRAM_CHOICES_KIB, 228, "26em", fmt=None),
                "d": dropdown("head dim", D_CHOICES, 128, "15em"),
                "part": dropdown("roof of", list_parts(), part_id, "15em"),
                "causal": checkbox("causal", True, "8em"),
                "order": toggle("tile order", list(ORDERS), next(iter(ORDERS)), "17em")}
    chart = Lesson06Chart()

    def render(n, sram, d, part, causal, order):
        return lesson06_frame(lesson06_view(n, d, sram, causal, part, ORDERS[order]), chart)

    return dashboard(controls, [["n", "sram"], ["d", "part", "causal"], ["order"]], render)
