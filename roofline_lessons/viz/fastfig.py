"""Figures that redraw fast, for dashboards: bare Agg figures (independent of pyplot and of the
notebook's backend), quick PNG encoding, and a cache that keeps each figure's static part as a
bitmap and redraws only the artists that move (matplotlib "blitting")."""

from __future__ import annotations

import io
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterable

#: dots per inch of every dashboard PNG, the same as the lessons' static charts: a PNG is shown at its
#: own pixel size, so a 9 pt label is 12.5 px on screen in a dashboard as in a static chart
CHART_DPI = 100


def bare_figure(figsize: tuple[float, float], dpi: float = CHART_DPI):
    """A matplotlib Figure on its own Agg canvas (never registered with pyplot)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig, dpi: float | None = None) -> bytes:
    """Render ``fig`` to PNG bytes with light compression (fast), at the figure's own dpi unless
    ``dpi`` is given."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi if dpi is None else dpi, pil_kwargs={"compress_level": 1})
    return buf.getvalue()


def canvas_png(fig) -> bytes:
    """Encode what is on ``fig``'s canvas now (after blitting) as PNG bytes."""
    from PIL import Image

    width, height = fig.canvas.get_width_height()
    buf = io.BytesIO()
    Image.frombuffer("RGBA", (width, height), bytes(fig.canvas.buffer_rgba())).save(
        buf, format="png", compress_level=1)
    return buf.getvalue()


class CachedFigure:
    """Static part drawn once per key and kept as a bitmap; moving artists drawn on top per update.

    ``build(key)`` returns ``(fig, state)``: a figure with everything static drawn, and whatever
    the update needs (typically artists created with ``animated=True``). ``render(key, update)``
    restores the bitmap, calls ``update(state)`` which returns the artists to draw, draws them and
    returns PNG bytes.
    """

    def __init__(self, build: Callable[[Hashable], tuple[Any, Any]], max_cached: int = 6) -> None:
        self._build = build
        self._cache: dict = {}
        self.max_cached = max_cached
        self.misses = 0

    def _entry(self, key: Hashable):
        if key in self._cache:
            self._cache[key] = self._cache.pop(key)  # most recently used last
            return self._cache[key]
        self.misses += 1
        fig, state = self._build(key)
        fig.canvas.draw()
        entry = (fig, state, fig.canvas.copy_from_bbox(fig.bbox))
        self._cache[key] = entry
        while len(self._cache) > self.max_cached:
            self._cache.pop(next(iter(self._cache)))
        return entry

    def render(self, key: Hashable, update: Callable[[Any], Iterable[Any]]) -> bytes:
        fig, state, background = self._entry(key)
        fig.canvas.restore_region(background)
        for artist in update(state):
            fig.draw_artist(artist)
        return canvas_png(fig)

    def close(self) -> None:
        self._cache.clear()


def message_png(text: str, width_in: float = 9.0) -> bytes:
    """A one-line picture of ``text``: what a dashboard shows instead of a chart it cannot draw."""
    import textwrap

    fig = bare_figure((width_in, 1.0))
    fig.text(0.01, 0.5, textwrap.fill(text, int(width_in * 14)), fontsize=10, va="center")
    return figure_png(fig)


class Layers:
    """Bitmaps of a figure after drawing a layer over its static background, one per key.

    A dashboard whose static part stays while a second control (here the context) changes a middle
    layer: ``show(fig, key, draw)`` restores the layer's bitmap if it has one, else calls ``draw()``
    (which draws on the canvas with ``fig.draw_artist``) and keeps the result (the ``bbox`` region).
    """

    def __init__(self, max_cached: int = 8) -> None:
        self._saved: OrderedDict = OrderedDict()
        self.max_cached = max_cached
        self.misses = 0

    def show(self, fig, key: Hashable, draw: Callable[[], None], bbox=None) -> None:
        saved = self._saved.get(key)
        if saved is not None:
            self._saved.move_to_end(key)
            fig.canvas.restore_region(saved)
            return
        self.misses += 1
        draw()
        self._saved[key] = fig.canvas.copy_from_bbox(bbox if bbox is not None else fig.bbox)
        while len(self._saved) > self.max_cached:
            self._saved.popitem(last=False)
