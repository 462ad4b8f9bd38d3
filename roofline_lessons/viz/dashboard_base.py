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
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import RooflineInputError
from ..core.units import count, share_percent
from .charts import MIN_FONT_PT, TERA, set_log_axis
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


@dataclass(frozen=True, kw_only=True)
class ViewTexts:
    """What a dashboard's view says, besides its numbers (keyword-only, after the view's own fields):
    the verdict, the error (None for a good view), the title, and the chart's heading where it differs
    from the title."""

    text: str = ""
    error: str | None = None
    title: str = ""
    heading: str = ""



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


# ---- stacked layers (appended: the lesson 11 and 12 dashboards draw a layer over a layer) -------------


class StackedChart(LayeredChart):
    """A :class:`LayeredChart` whose layers stack: :meth:`layer_keys` gives one key per level (say a
    part's roofs, then a link's roof over them), and each level is restored from its bitmap or drawn
    (:meth:`draw_level`) over the level below; a level's bitmap is kept under its key and the keys
    below it. ``level_sizes``: the bitmaps kept per level (the least recently used go first).

    The artists a level draws stay on the figure while its bitmap is kept, shown only while their
    level is, so a reader of the figure (a test) sees what the bitmaps show. :meth:`describe` notes,
    once per level drawn, what the moves need of it (say, the boxes a label must keep clear of);
    ``showing`` holds the notes of the levels shown now, lowest first, for :meth:`move`.
    ``layer_misses`` counts levels drawn rather than restored."""

    level_sizes: tuple[int, ...] = (8, 16)
    #: the functions that draw each level, lowest first (``draw(shared, view)`` -> its artists), unless
    #: :meth:`draw_level` is overridden
    levels: tuple[Callable[[dict, Any], list], ...] = ()

    def __init__(self) -> None:
        super().__init__()
        self.stack = [Layers(n) for n in self.level_sizes]
        #: per level, key -> (its artists, its note): the same keys, in the same order, as its bitmaps
        self.kept: list[OrderedDict] = [OrderedDict() for _ in self.level_sizes]
        self.showing: list = []

    @property
    def _shared(self) -> dict | None:
        """The skeleton's dict (``shared``), by the name the dashboards' tests know it."""
        return self.shared

    def layer_keys(self, view) -> Sequence[Hashable]:  # pragma: no cover - every chart overrides it
        """One key per level (as many as ``level_sizes``), lowest first."""
        raise NotImplementedError

    def draw_level(self, shared: dict, view, level: int) -> list:
        """Draw level ``level`` for ``view`` (``fig.draw_artist``); returns the artists it made. By
        default ``levels[level](shared, view)``."""
        return self.levels[level](shared, view)

    def describe(self, shared: dict, artists: list) -> Any:
        """What the moves need to know of a level just drawn (its ``artists``)."""
        return None

    def _update(self, view) -> list:
        shared = self.shared
        fig = shared["fig"]
        self.last_figure = fig
        self.prepare(shared, view)
        own = tuple(self.layer_keys(view))
        keys = [own[:level + 1] for level in range(len(self.stack))]
        for level, (layers, kept, key) in enumerate(zip(self.stack, self.kept, keys)):
            layers.show(fig, key, lambda level=level, key=key: self._draw(shared, view, level, key))
            kept.move_to_end(key)
            while len(kept) > layers.max_cached:  # its bitmap is gone: its artists go too
                for a in kept.popitem(last=False)[1][0]:
                    a.remove()
        for kept, key in zip(self.kept, keys):
            for k, (artists, _note) in kept.items():
                for a in artists:
                    a.set_visible(k == key)
        self.showing = [kept[key][1] for kept, key in zip(self.kept, keys)]
        return self.move(shared, view)

    def _draw(self, shared: dict, view, level: int, key) -> None:
        self.layer_misses += 1
        artists = self.draw_level(shared, view, level)
        self.kept[level][key] = (artists, self.describe(shared, artists))


# ---- pieces of a dashboard's roofline (appended) ---------------------------------------------------

#: the box behind a ridge's label: white, so the grid does not run through the words
RIDGE_BOX = {"boxstyle": "square,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85}


def roofline_axes(fig, rect: Sequence[float], x_range: Sequence[float], y_range: Sequence[float], xlabel: str,
                  ylabel: str):
    """Log-log axes at ``rect`` (left, bottom, width, height: figure fractions) over fixed ranges (the
    same for every setting, so settings compare by eye), with the charts' text sizes and a light grid."""
    ax = fig.add_axes(tuple(rect))
    ax.set_xscale("log")
    ax.set_yscale("log")
    set_log_axis(ax.xaxis, *x_range)
    set_log_axis(ax.yaxis, *y_range)
    ax.tick_params(labelsize=MIN_FONT_PT)
    ax.set_xlabel(xlabel, fontsize=MIN_FONT_PT + 0.5)
    ax.set_ylabel(ylabel, fontsize=MIN_FONT_PT + 0.5)
    ax.grid(True, alpha=0.35)
    return ax


def bandwidth_roof(ax, bandwidth: float, peak: float, x_lo: float, y_lo: float, ridge_text: str, colour: str,
                   linestyle: str, side: str = "left") -> list:
    """A bandwidth roof on a roofline in TFLOP/s, animated (a layer draws it): the slanted line
    (``bandwidth``, bytes/s) from ``x_lo`` up to where it meets ``peak`` (FLOP/s), the ridge as a dotted
    line down to ``y_lo`` (TFLOP/s), and ``ridge_text`` at the ridge's top, to its ``side`` ("left" or
    "right"). Returns the three artists."""
    ridge = peak / bandwidth
    x = np.array([x_lo, ridge])
    right = side == "right"
    return [*ax.plot(x, x * bandwidth / TERA, color=colour, linestyle=linestyle, linewidth=2.4, animated=True),
            *ax.plot([ridge, ridge], [y_lo, peak / TERA], color=colour, linestyle=":", linewidth=1.2, animated=True),
            ax.annotate(ridge_text, (ridge, peak / TERA), textcoords="offset points", xytext=(3 if right else -3, 3),
                        ha="left" if right else "right", va="bottom", fontsize=MIN_FONT_PT, color=colour,
                        fontweight="bold", bbox=RIDGE_BOX, animated=True)]


def animated_rects(ax, n: int, height: float = 1.0, linewidth: float = 0.6) -> list:
    """``n`` animated rectangles on ``ax`` (a bar's pieces, set on each move)."""
    from matplotlib.patches import Rectangle

    rects = [Rectangle((0, 0), 0, height, animated=True, linewidth=linewidth) for _ in range(n)]
    for r in rects:
        ax.add_patch(r)
    return rects


def look_patches(look: Mapping[str, tuple[str, str, str]]) -> list:
    """Legend handles for a key of ``look`` (kind -> colour, hatch, edge colour)."""
    from matplotlib.patches import Patch

    return [Patch(facecolor=colour, hatch=hatch, edgecolor=edge, label=kind)
            for kind, (colour, hatch, edge) in look.items()]


# ---- a figure per key (appended: the lesson 1, 2 and 3 dashboards) -----------------------------------


class FigurePerKeyChart(LayeredChart):
    """A :class:`LayeredChart` whose skeleton itself changes with a slow control: its title, its roofs,
    its legend or its size (lesson 2's figure widens to hold a long legend beside the axes), so no
    single skeleton serves every view. :meth:`figure_key` names the figure a view needs; each is built
    by ``skeleton(key)``, drawn once and kept with its bitmap (the ``max_figures`` most recently used),
    and what moves is drawn over it on every update, as in the base (layers too, if a chart has them).
    ``shared`` is the dict of the figure last used. A view with nothing to draw gets :meth:`no_chart`."""

    max_figures = 6

    def __init__(self) -> None:
        super().__init__()
        self.figures = CachedFigure(self._build, max_cached=self.max_figures)

    @property
    def _shared(self) -> dict | None:
        """``shared``, by the name the dashboards' tests know it."""
        return self.shared

    def figure_key(self, view) -> Hashable:  # pragma: no cover - every chart overrides it
        raise NotImplementedError

    def skeleton(self, key) -> dict:  # pragma: no cover - every chart overrides it
        """The figure for ``key`` with everything that does not move drawn, and its moving artists
        (``animated=True``), in a dict holding ``"fig"``."""
        raise NotImplementedError

    def no_chart(self, view) -> bytes | None:
        """The picture shown instead of a chart (None: draw the chart); an error view's message."""
        return message_png(view.text) if getattr(view, "error", None) is not None else None

    def _build(self, key):
        shared = self.skeleton(key)
        return shared["fig"], shared

    def _render(self, view) -> bytes:
        def update(shared: dict) -> list:
            self.shared = shared
            return self._update(view)

        return self.figures.render(self.figure_key(view), update)

    def png(self, view) -> bytes:
        """The chart for ``view`` as PNG bytes (or :meth:`no_chart`'s picture)."""
        picture = self.no_chart(view)
        if picture is not None:
            return picture
        if self.rc is None:
            return self._render(view)
        import matplotlib

        with matplotlib.rc_context(dict(self.rc)):
            return self._render(view)


def percent_of(fraction: float) -> str:
    """A share in per cent with three significant figures: ``"0.356 %"``, ``"10.8 %"``, ``"100 %"``
    (``units.percent`` has fixed decimals: ``"0.00 %"`` for a tiny share, ``"100.00 %"`` for all)."""
    from ..core.units import num

    return f"{num(fraction * 100)} %"


def raise_small_text(fig, minimum_pt: float = MIN_FONT_PT) -> None:
    """Lift the annotations, titles, axis labels and legend text of ``fig`` to at least ``minimum_pt``
    (``roofline_chart`` writes its ridge note and legend at 8 pt, below the course's minimum). Only
    those texts are visited: walking every artist would create all the tick labels, a third of a cold
    draw's time."""
    texts = []
    for ax in fig.axes:
        texts += list(ax.texts) + [ax.title, ax.xaxis.label, ax.yaxis.label]
        legend = ax.get_legend()
        if legend is not None:
            texts += list(legend.get_texts()) + [legend.get_title()]
    for text in texts:
        if text.get_fontsize() < minimum_pt:
            text.set_fontsize(minimum_pt)


# ---- one figure for every key, and pieces of the lesson 4 and 5 dashboards (appended) ---------------


class OneFigureChart(FigurePerKeyChart):
    """A :class:`FigurePerKeyChart` whose keys share one figure: :meth:`frame` builds it once (its axes,
    ticks, labels and moving artists) and each new key has :meth:`draw_key` redraw its own part on it (a
    part's roof, say) before that is drawn and kept as the key's bitmap; building a figure's axes and
    ticks again would cost a third of a cold update. Only a key's bitmap remembers it, so :meth:`prepare`
    sets from the view what the moves need (an axis range), and a layer's key names the figure's key too
    (a layer's bitmap holds the whole figure)."""

    max_figures = 4

    def frame(self) -> dict:  # pragma: no cover - every chart overrides it
        """The figure with everything no key changes, in a dict holding ``"fig"``."""
        raise NotImplementedError

    def draw_key(self, shared: dict, key) -> None:  # pragma: no cover - every chart overrides it
        """Replace the previous key's part of the figure by ``key``'s."""
        raise NotImplementedError

    def skeleton(self, key) -> dict:
        if self.shared is None:
            self.shared = self.frame()
        self.draw_key(self.shared, key)
        return self.shared


def replace_layer(shared: dict, artists: list) -> None:
    """Forget the artists of the layer drawn before (its bitmap keeps them) and keep ``artists``."""
    for a in shared.get("layer", ()):
        a.remove()
    shared["layer"] = artists


#: a share for a person to read (lessons 4 and 5 name it so)
share_text = share_percent


def point_key(marker: str, label: str, face, size: float = 8, **look):
    """A legend entry for a point: a black ``marker`` filled with ``face`` ("none": hollow)."""
    from matplotlib.lines import Line2D

    return Line2D([], [], marker=marker, linestyle="none", color="black", markerfacecolor=face, markersize=size,
                  label=label, **look)


def log2_x_axis(ax, lo: float, hi: float, pad: float, major: Sequence[float], fmt: Callable[[float], str],
                minor: Sequence[float] = ()) -> None:
    """A base-2 log x axis over ``lo / pad`` to ``hi * pad`` (``pad`` > 1: a line marking either end
    stays off the frame), labelled by ``fmt`` at ``major``, with unlabelled ``minor`` ticks."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    ax.set_xscale("log", base=2)
    ax.set_xlim(lo / pad, hi * pad)
    ax.xaxis.set_major_locator(FixedLocator(list(major)))
    ax.xaxis.set_minor_locator(FixedLocator(list(minor)) if minor else NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: fmt(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())


def stack_fills(ax, x, bands: Sequence[tuple]) -> list:
    """Stacked areas over ``x``, bottom up, one per (values, colour, hatch, label) of ``bands``;
    animated (a layer draws them). Returns them."""
    artists, bottom = [], np.zeros_like(x)
    for values, colour, hatch, label in bands:
        top = bottom + values
        artists.append(ax.fill_between(x, bottom, top, facecolor=colour, hatch=hatch, edgecolor="white", linewidth=0,
                                       alpha=0.9, animated=True, label=label))
        bottom = top
    return artists


def roof_panel(ax, roof, title: str, intensity_range: tuple[float, float], keys: Sequence) -> None:
    """``roof`` on ``ax``, a panel of a figure kept for every part (the previous part's roof goes
    first): ``roofline_chart``'s roof over ``intensity_range``, the y range of ``set_roof_ylim``, the
    ridge's label at MIN_FONT_PT left of the ridge (clear of the points on the flat roof and of the right
    edge), TFLOP/s on the y axis, and a key in the lower right: the roof, then ``keys``; the title at a
    fixed height."""
    from .charts import roofline_chart, set_roof_ylim

    for artist in [*ax.lines, *ax.texts]:
        if not artist.get_animated():
            artist.remove()
    roofline_chart([roof], [], title=title, intensity_range=intensity_range, ax=ax, fast=True)
    ax.set_title(title, y=1.0, pad=6)  # a fixed position: matplotlib need not measure the tick labels for it
    set_roof_ylim(ax, [roof], intensity_range)
    for t in ax.texts:
        if not t.get_animated():  # the ridge's label (a moving label stays where its move puts it)
            t.set_fontsize(MIN_FONT_PT)
            t.set_horizontalalignment("right")
            t.set_position((-5, 6))
    ax.set_ylabel("Attainable (TFLOP/s)")
    ax.legend(handles=[roof_key(roof, f"{roof.label} roof"), *keys], fontsize=MIN_FONT_PT, loc="lower right",
              framealpha=0.9)


# ---- a bar's pieces, its percent axis, unhinted text (appended: the lesson 11 and 12 dashboards) ------


def set_piece(rect, x: float, y: float, width: float, height: float, look: tuple[str, str, str],
              outline: bool = False) -> None:
    """Show ``rect`` (one of :func:`animated_rects`) at ``x``, ``y`` with ``width`` and ``height``, in
    ``look`` (colour, hatch, edge colour); ``outline``: edged in black and a little heavier (a thin piece
    drawn over a wide one)."""
    colour, hatch, edge = look
    rect.set_visible(True)
    rect.set_bounds(x, y, width, height)
    rect.set_facecolor(colour)
    rect.set_hatch(hatch)
    rect.set_edgecolor("black" if outline else edge)
    rect.set_linewidth(0.8 if outline else 0.6)


def percent_ticks(ax, which: str = "x") -> None:
    """Tick ``ax``'s ``which`` axis ("x" or "y") at 0, 25, 50, 75 and 100 %, and the other not at all
    (a bar of shares)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    axis, other = (ax.xaxis, ax.yaxis) if which == "x" else (ax.yaxis, ax.xaxis)
    axis.set_major_locator(FixedLocator([0, 25, 50, 75, 100]))
    axis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.0f} %"))
    other.set_major_locator(NullLocator())
    ax.tick_params(axis=which, labelsize=MIN_FONT_PT)


#: matplotlib rc for a chart's text drawn unhinted: FreeType's hinting roughly doubles the time to
#: draw each update's text, and at 100 dpi unhinted text reads as well (a chart's ``rc``)
UNHINTED = {"text.hinting": "no_hinting"}


# ---- curves and texts that follow a layer (appended for the lesson 10 and 12 dashboards; lesson 4 draws
# the same) -----------------------------------------------------------------------------------------


def layer_axes(ax) -> None:
    """Hand ``ax``'s x and y axes to a layer (their ranges follow it): animated, so the layer draws
    them, and with no ticks to lay out until it sets them (:func:`~roofline_lessons.viz.charts.set_log_axis`)."""
    from matplotlib.ticker import NullLocator

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_animated(True)
        axis.set_major_locator(NullLocator())
        axis.set_minor_locator(NullLocator())


def fit_curve(ax, x, y, fits, **style) -> list:
    """A curve over growing batches, animated (a layer draws it): solid blue where the batch fits in
    memory (``fits``, true for the first batches only), dotted grey from the last batch that fits on.
    ``style``: more Line2D keywords for both. Returns the lines drawn (one where all or none fit)."""
    from .charts import PALETTE

    n = int(np.count_nonzero(fits))
    lines = []
    if n:
        lines += ax.plot(x[:n], y[:n], color=PALETTE[0], linewidth=2.2, animated=True, **style)
    if n < len(x):
        lines += ax.plot(x[max(n - 1, 0):], y[max(n - 1, 0):], color="0.45", linewidth=2, linestyle=":",
                         animated=True, **style)
    return lines


def moving_text(where, x: float, y: float, size: float = MIN_FONT_PT, **style):
    """An empty, animated text at ``x``, ``y`` of ``where`` (a figure: figure fractions; axes: data
    unless ``transform`` says otherwise), set and drawn on each move. ``style``: more Text keywords."""
    return where.text(x, y, "", fontsize=size, animated=True, **style)


def moving_marker(ax, marker: str, face, size: float, **look):
    """An animated point on ``ax`` (set on each move): a black ``marker`` filled with ``face``."""
    return ax.plot([], [], marker=marker, markersize=size, linestyle="none", color="black", markerfacecolor=face,
                   animated=True, **look)[0]


def roof_key(roof, label: str, linewidth: float = 2):
    """A legend entry for ``roof``: a line in its part's colour and line style."""
    from matplotlib.lines import Line2D

    from .charts import part_style

    style = part_style(roof.part_id)
    return Line2D([], [], color=style.colour, linestyle=style.linestyle, linewidth=linewidth, label=label)


# ---- compute rates in tera units (appended: the lesson 7 dashboard; lesson 1 prints INT8 peaks too) ----

#: integer formats: the catalog stores their peak in the same field as FLOP/s, but they are operations, not FLOPs
INTEGER_FORMATS = ("int8",)


def rate_unit(formats: str) -> str:
    """``"TOPS"`` (tera-operations per second) when an integer format is in ``formats`` (a dtype or a
    description such as ``"int8 matmuls, bf16 rest"``), else ``"TFLOP/s"``."""
    return "TOPS" if any(f in formats for f in INTEGER_FORMATS) else "TFLOP/s"


def rate(flops_per_s: float, formats: str) -> str:
    """A compute rate in tera units: ``"312 TFLOP/s"``, or ``"624 TOPS"`` for an integer format."""
    from ..core.units import num

    return f"{num(flops_per_s / TERA)} {rate_unit(formats)}"


def bandwidth(bytes_per_s: float) -> str:
    """Bandwidth in TB/s as roofline_chart's alt text gives it: ``"2.04 TB/s"``, ``"0.819 TB/s"``."""
    from ..core.units import num

    return f"{num(bytes_per_s / TERA)} TB/s"


def roof_label(roof) -> str:
    """A roof's legend entry, its format last in its label: ``"a100-80gb int8: 624 TOPS (integer ops/s),
    2.04 TB/s, ridge 306"``."""
    from ..core.units import num

    fmt = roof.label.split()[-1]
    unit = " (integer ops/s)" if rate_unit(fmt) == "TOPS" else ""
    return (f"{roof.label}: {rate(roof.peak_flops_per_s, fmt)}{unit}, {bandwidth(roof.bandwidth_bytes_per_s)}, "
            f"ridge {num(roof.ridge_point_flop_per_byte)}")


# ---- a legend's line and a fit in words (appended for the lesson 10 and 12 dashboards; lesson 11 says
# the same fit) -------------------------------------------------------------------------------------


def line_key(label: str, colour, linestyle="-", linewidth: float = 2.4):
    """A legend entry for a line (a roof, a curve) drawn in ``colour`` and ``linestyle``."""
    from matplotlib.lines import Line2D

    return Line2D([], [], color=colour, linestyle=linestyle, linewidth=linewidth, label=label)


def fit_words(fits: bool, needed_bytes: float, capacity_bytes: float) -> str:
    """Whether what a step keeps resident fits the part's memory, in binary units: "140 GiB of
    192 GiB: fits", or "250 GiB, more than its 192 GiB: does NOT fit"."""
    from ..core.units import binary

    return (f"{binary(needed_bytes)} of {binary(capacity_bytes)}: fits" if fits
            else f"{binary(needed_bytes)}, more than its {binary(capacity_bytes)}: does NOT fit")
