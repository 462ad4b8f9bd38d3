"""What every dashboard is built on, so that a lesson's dashboard module holds only its own ideas:
its view (a pure function of the controls), its texts, its layers and what moves.

- **Input checks** (:func:`whole`, :func:`positive`, :func:`one_of`): each raises
  :class:`~roofline_lessons.core.errors.RooflineInputError` naming the bad value and what is allowed; a
  view function catches it and returns its error view (a view never raises on bad input).
- **The frame** (:func:`view_frame`): verdict, chart and alt text for one view; an error view shows its
  error once, with no chart.
- **The chart** (:class:`LayeredChart`): one figure whose skeleton is drawn once, whose layers (what a
  slow control changes) are kept as bitmaps per key, and whose moving artists are drawn over them on
  every update; ``layer_misses`` counts layers drawn rather than restored.
- **The controls** (:class:`Control` and its makers :func:`dropdown`, :func:`slider`, :func:`toggle`,
  ...): a dashboard declares its controls and rows; :func:`dashboard` builds the widgets, wires them to
  the render function and shows the result (:func:`roofline_lessons.viz.panel.build_dashboard`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import RooflineInputError
from ..core.units import count
from .fastfig import CachedFigure, Layers, message_png
from .panel import Frame, build_dashboard

# ---- input checks ---------------------------------------------------------------------------------


def _is_number(value) -> bool:
    return (not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
            and math.isfinite(float(value)))


def whole(name: str, value, lo: int, hi: int) -> int:
    """``value`` as an int, if it is a whole number from ``lo`` to ``hi``; else RooflineInputError."""
    if not _is_number(value) or not float(value).is_integer() or not lo <= value <= hi:
        raise RooflineInputError(f"{name} must be a whole number from {count(lo)} to {count(hi)}, got {value!r}")
    return int(value)


def positive(name: str, value, unit: str = "") -> float:
    """``value`` as a float, if it is a finite number > 0; else RooflineInputError (``unit`` names what
    it counts, e.g. "seconds")."""
    if not _is_number(value) or value <= 0:
        what = f"a number of {unit} > 0" if unit else "a number > 0"
        raise RooflineInputError(f"{name} must be {what}, got {value!r}")
    return float(value)


def one_of(name: str, value, allowed: Sequence) -> Any:
    """``value``, if it is one of ``allowed``; else RooflineInputError listing them."""
    try:
        ok = value in allowed
    except TypeError:  # an unhashable value against a mapping's keys
        ok = False
    if not ok:
        raise RooflineInputError(f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}")
    return value


# ---- the frame --------------------------------------------------------------------------------------


def view_frame(view, chart, alt: Callable[[Any], str]) -> Frame:
    """The verdict (``view.text``), the chart (``chart.png(view)``) and its alt text for one view, with
    the view's warnings as notes and its table, if it has them; an error view (``view.error`` set)
    shows its error once, with no chart."""
    if view.error is not None:
        return Frame(verdict=view.error, png=None, alt="", error=True)
    return Frame(verdict=view.text, png=chart.png(view), alt=alt(view), notes=tuple(getattr(view, "warnings", ())),
                 table_html=getattr(view, "table_html", ""))


# ---- the chart --------------------------------------------------------------------------------------


class LayeredChart:
    """A dashboard's figure in three levels, each cheaper than the one before:

    1. the **skeleton** (:meth:`skeleton`): the figure, its axes, labels and the moving artists
       (created with ``animated=True``), drawn once per chart;
    2. **layers** (:meth:`draw_layer`), one per :meth:`layer_key`: what a slow control (a model, a
       part, a context) changes, drawn with ``fig.draw_artist`` and kept as a bitmap, so coming back
       to a key restores it exactly; ``layer_misses`` counts layers drawn rather than restored;
    3. what **moves** (:meth:`move`): set on every update and drawn over the restored bitmap.

    A subclass overrides :meth:`skeleton` (a dict holding ``"fig"``), :meth:`move`, and, where it has
    layers, :meth:`layer_key` and :meth:`draw_layer`; :meth:`prepare` runs first on each update (to
    set what restoring a layer's bitmap does not, e.g. the axis ranges the moving artists use).
    ``rc`` (matplotlib rc settings) applies while drawing.
    """

    #: layers kept as bitmaps (the least recently used go first)
    max_layers = 16
    #: matplotlib rc settings while drawing (None: the defaults)
    rc: Mapping[str, Any] | None = None

    def __init__(self) -> None:
        self.shared: dict | None = None
        self.figures = CachedFigure(self._build, max_cached=1)
        self.layers = Layers(self.max_layers)
        self.last_figure = None
        self.layer_misses = 0

    # -- what a dashboard's chart provides
    def skeleton(self) -> dict:  # pragma: no cover - every chart overrides it
        raise NotImplementedError

    def layer_key(self, view) -> Hashable | None:
        """The key of the layer ``view`` needs (None: no layer)."""
        return None

    def draw_layer(self, shared: dict, view) -> None:
        """Draw ``view``'s layer on the figure (``fig.draw_artist``)."""

    def prepare(self, shared: dict, view) -> None:
        """Set, before a layer is restored or drawn, what a bitmap does not hold."""

    def move(self, shared: dict, view) -> list:  # pragma: no cover - every chart overrides it
        """Set the moving artists for ``view``; returns them (they are drawn in this order)."""
        raise NotImplementedError

    # -- the machinery
    def _build(self, _key):
        self.shared = self.skeleton()
        return self.shared["fig"], self.shared

    def _update(self, view) -> list:
        shared = self.shared
        fig = shared["fig"]
        self.last_figure = fig
        self.prepare(shared, view)
        key = self.layer_key(view)
        if key is not None:
            def draw() -> None:
                self.layer_misses += 1
                self.draw_layer(shared, view)

            self.layers.show(fig, key, draw)
        return self.move(shared, view)

    def png(self, view) -> bytes:
        """The chart for ``view`` as PNG bytes (an error view: its message as a picture)."""
        if getattr(view, "error", None) is not None:
            return message_png(view.text)
        if self.rc is None:
            return self.figures.render("skeleton", lambda _shared: self._update(view))
        import matplotlib

        with matplotlib.rc_context(dict(self.rc)):
            return self.figures.render("skeleton", lambda _shared: self._update(view))


# ---- the controls -----------------------------------------------------------------------------------

STYLE = {"description_width": "initial"}


@dataclass(frozen=True)
class Control:
    """One control of a dashboard: the ipywidgets class's name, its label, its value, its width and
    any other keyword the widget takes (options, min, max, ...)."""

    kind: str
    label: str
    value: Any
    width: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def widget(self):
        import ipywidgets as widgets

        style = dict(STYLE)
        extra = dict(self.extra)
        if "button_width" in extra:
            style["button_width"] = extra.pop("button_width")
        kwargs = {"value": self.value, "description": self.label, "style": style, **extra}
        if self.kind == "Checkbox":
            kwargs["indent"] = False
        kwargs["layout"] = widgets.Layout(width=self.width or "auto")
        return getattr(widgets, self.kind)(**kwargs)


def dropdown(label: str, options: Sequence, value, width: str | None = None) -> Control:
    """A dropdown of ``options`` (values, or (label, value) pairs)."""
    return Control("Dropdown", label, value, width, {"options": list(options)})


def slider(label: str, values: Sequence, value, width: str | None = None,
           fmt: Callable[[Any], str] | None = count, **extra) -> Control:
    """A slider over ``values``, each shown by ``fmt`` (None: as the widget shows it)."""
    options = [(fmt(v), v) for v in values] if fmt is not None else list(values)
    return Control("SelectionSlider", label, value, width, {"options": options, **extra})


def toggle(label: str, options: Sequence, value, button_width: str = "5.5em", width: str | None = None) -> Control:
    """Toggle buttons, one per option (shown with their label beside them, in line with the rest)."""
    return Control("ToggleButtons", label, value, width, {"options": list(options), "button_width": button_width})


def checkbox(label: str, value: bool, width: str | None = None) -> Control:
    return Control("Checkbox", label, value, width)


def log_slider(label: str, value: float, lo_exp: float, hi_exp: float, step: float,
               width: str | None = None, **extra) -> Control:
    """A slider over 10**lo_exp .. 10**hi_exp on a log scale."""
    return Control("FloatLogSlider", label, value, width,
                   {"base": 10, "min": lo_exp, "max": hi_exp, "step": step, **extra})


def multiple(label: str, options: Sequence, value: Sequence, rows: int, width: str | None = None) -> Control:
    """A list to pick several of ``options`` from."""
    return Control("SelectMultiple", label, tuple(value), width, {"options": list(options), "rows": rows})


def model_and_part_controls(model_id: str, part_id: str) -> dict[str, Control]:
    """The two dropdowns most dashboards start with: every catalog model, every catalog part."""
    from ..core.hardware import list_parts
    from ..core.models import list_models

    return {"model": dropdown("model", list_models(), model_id, "260px"),
            "part": dropdown("part", list_parts(), part_id, "220px")}


def dashboard(controls: Mapping[str, Control], rows: Sequence[Sequence[str]], render: Callable[..., Frame]):
    """Build each control's widget, lay them out in ``rows`` above one panel redrawn with
    ``render(**values)`` on every change, show it, and return it (see :func:`roofline_lessons.viz.panel.build_dashboard`)."""
    from IPython.display import display

    ui = build_dashboard({name: c.widget() for name, c in controls.items()}, rows, render)
    display(ui)
    return ui
