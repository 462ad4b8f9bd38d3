"""Lesson 6 dashboard: sequence length, head dim, SRAM size, causality and loop order -> HBM bytes of
standard attention, of the two tiled loop orders (FlashAttention's Algorithm 1 and FlashAttention-2)
and of the compulsory floor, their positions on the roofline, and the tiles the kernel visits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.roofline import attainable_flops_per_s
from ...core.units import binary, si
from ...topics.flash import (SRAMOverflowError, attention_flops, compulsory_hbm_bytes, flash2_hbm_bytes,
                             flash_block_sizes, flash_hbm_bytes, standard_hbm_bytes)
from ..charts import MARKERS, PALETTE, Roof, roofline_chart, set_roof_ylim
from ..fastfig import CachedFigure, bare_figure, message_png

N_CHOICES = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
D_CHOICES = (64, 128, 256)
SRAM_CHOICES_KIB = (48, 64, 100, 164, 228)
INTENSITY_RANGE = (1, 1e5)
KINDS = ("standard (N×N in HBM)", "tiled, Algorithm 1 (K/V outer)", "tiled, FlashAttention-2 (Q outer)",
         "compulsory: Q, K, V read, O written once")
ORDERS = {"Algorithm 1 (K/V blocks outer)": "fa1", "FlashAttention-2 (Q blocks outer)": "fa2"}


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
    tile_map: np.ndarray | None  #: visiting order of each (query block, key block), NaN where skipped
    text: str
    error: str | None = None
    order: str = "fa1"  #: loop order the tile map shows: "fa1" (key blocks outer) or "fa2" (query blocks outer)


def tile_map(n: int, rows: int, cols: int, causal: bool, max_cells: int = 256, order: str = "fa1") -> np.ndarray:
    """Visiting order of the tiles, NaN for skipped ones; coarsened to at most ``max_cells`` per side
    so a picture stays readable at any N. ``order="fa1"``: outer loop over key blocks (Algorithm 1);
    ``"fa2"``: outer loop over query blocks (FlashAttention-2)."""
    if order not in ("fa1", "fa2"):
        raise RooflineInputError(f"order must be 'fa1' or 'fa2', got {order!r}")
    tr, tc = -(-n // rows), -(-n // cols)
    # only the tiles the picture shows: every step-th row and column of the full tile grid
    r = np.arange(0, tr, max(1, -(-tr // max_cells)))
    c = np.arange(0, tc, max(1, -(-tc // max_cells)))
    row_end = np.minimum((r + 1) * rows, n) - 1
    visited = (c[None, :] * cols <= row_end[:, None]) if causal else np.ones((r.size, c.size), dtype=bool)
    rank = (c[None, :] * tr + r[:, None]) if order == "fa1" else (r[:, None] * tc + c[None, :])
    return np.where(visited, rank.astype(float), np.nan)


def lesson06_view(n: int, head_dim: int, sram_kib: int, causal: bool, part_id: str = "h100-sxm",
                  order: str = "fa1") -> Lesson06View:
    sram = int(sram_kib * 1024)
    try:
        sizes = flash_block_sizes(sram, head_dim, 2)
        part = get_part(part_id)
    except (SRAMOverflowError, RooflineInputError) as exc:
        return Lesson06View(n, head_dim, sram, causal, None, 0.0, {}, {}, {}, 0, 0, None, str(exc), error=str(exc),
                            order=order)
    roof = Roof(f"{part.id} bf16", part.peak_flops_per_s("bf16"), part.memory_bandwidth_bytes_per_s)
    flops = float(attention_flops(n, head_dim, causal))
    nbytes = {KINDS[0]: float(standard_hbm_bytes(n, head_dim)), KINDS[1]: flash_hbm_bytes(n, head_dim, sram, 2, causal),
              KINDS[2]: flash2_hbm_bytes(n, head_dim, sram, 2, causal), KINDS[3]: float(compulsory_hbm_bytes(n, head_dim))}
    intensity = {k: flops / b for k, b in nbytes.items()}
    attain = {k: float(attainable_flops_per_s(i, roof.peak_flops_per_s, roof.bandwidth_bytes_per_s))
              for k, i in intensity.items()}
    text = (f"N = {n:,}, d = {head_dim}, SRAM {binary(sram)}, {'causal' if causal else 'full'}: tiles of "
            f"{sizes.rows} query × {sizes.cols} key rows (FlashAttention-1's rule, B_r ≤ d, borrowed for both orders: {sizes.paper_rows} × {sizes.paper_cols}). "
            f"{si(flops, 'FLOP')} per head. HBM bytes — standard {si(nbytes[KINDS[0]], 'B')} "
            f"(I = {intensity[KINDS[0]]:,.0f}), Algorithm 1 {si(nbytes[KINDS[1]], 'B')} (I = {intensity[KINDS[1]]:,.0f}), "
            f"FlashAttention-2 order {si(nbytes[KINDS[2]], 'B')} (I = {intensity[KINDS[2]]:,.0f}), "
            f"compulsory {si(nbytes[KINDS[3]], 'B')} (I = {intensity[KINDS[3]]:,.0f}); "
            f"ridge {roof.ridge_point_flop_per_byte:,.0f}. Tiled counts assume every tile comes from HBM.")
    return Lesson06View(n, head_dim, sram, causal, roof, flops, nbytes, intensity, attain, sizes.rows, sizes.cols,
                        tile_map(n, sizes.rows, sizes.cols, causal, order=order), text, order=order)


def _build(roof):
    fig = bare_figure((11, 4.4))
    fig.subplots_adjust(left=0.07, right=0.97, bottom=0.13, top=0.88, wspace=0.25)
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.4, 1]})
    roofline_chart([roof], [], title="One attention head on the roofline (BF16)", intensity_range=INTENSITY_RANGE,
                   ax=ax1, fast=True)
    set_roof_ylim(ax1, [roof], INTENSITY_RANGE)
    from matplotlib.lines import Line2D

    ax1.legend(handles=[Line2D([], [], color=PALETTE[0], linewidth=2, label=roof.label)] + [
        Line2D([], [], marker=MARKERS[i], linestyle="none", color="black", markerfacecolor=PALETTE[i + 1], label=k)
        for i, k in enumerate(KINDS)], fontsize=7.5, loc="lower right")
    dots = [ax1.plot([], [], marker=MARKERS[i], markersize=10, linestyle="none", color="black",
                     markerfacecolor=PALETTE[i + 1], animated=True)[0] for i in range(len(KINDS))]
    ax2.set_title("Tiles visited (colour: order; blank: skipped)")
    ax2.set_xlabel("key/value block j")
    ax2.set_ylabel("query block i")
    image = ax2.imshow(np.zeros((2, 2)), cmap="cividis", origin="upper", aspect="auto", interpolation="nearest",
                       extent=(0, 1, 1, 0), animated=True)
    ax2.set_xticks([])
    ax2.set_yticks([])
    fig.suptitle("FlashAttention tiling", fontsize=11)
    return fig, (dots, image)


class Lesson06Chart:
    def __init__(self) -> None:
        self.figures = CachedFigure(_build)

    def png(self, view: Lesson06View) -> bytes:
        if view.roof is None:
            return message_png(view.text)

        def update(state):
            dots, image = state
            for dot, kind in zip(dots, KINDS):
                dot.set_data([view.intensity_by_kind[kind]], [view.attainable_by_kind[kind] / 1e12])
            data = np.ma.masked_invalid(view.tile_map)
            image.set_data(data)
            image.set_clim(0, max(float(np.nanmax(view.tile_map)), 1.0))
            return [*dots, image]

        return self.figures.render(view.roof, update)


def lesson06_dashboard(part_id: str = "h100-sxm"):
    """N, head dim, SRAM size, causality and loop order -> bytes, intensity, the four dots and the tile map."""
    import ipywidgets as widgets
    from IPython.display import Image, display

    n_w = widgets.SelectionSlider(options=N_CHOICES, value=8192, description="N (tokens)")
    d_w = widgets.Dropdown(options=D_CHOICES, value=128, description="head dim")
    sram_w = widgets.SelectionSlider(options=SRAM_CHOICES_KIB, value=228, description="SRAM (KiB)")
    causal_w = widgets.Checkbox(value=True, description="causal")
    part_w = widgets.Dropdown(options=list_parts(), value=part_id, description="roof of")
    order_w = widgets.ToggleButtons(options=list(ORDERS), value=next(iter(ORDERS)), description="tile order")
    chart = Lesson06Chart()

    def _update(n, d, sram, causal, part, order):
        view = lesson06_view(n, d, sram, causal, part, ORDERS[order])
        print(view.text)
        display(Image(data=chart.png(view), format="png"))

    out = widgets.interactive_output(_update, {"n": n_w, "d": d_w, "sram": sram_w, "causal": causal_w,
                                               "part": part_w, "order": order_w})
    ui = widgets.VBox([widgets.HBox([n_w, sram_w]), widgets.HBox([d_w, part_w, causal_w]), order_w, out])
    display(ui)
    return ui
