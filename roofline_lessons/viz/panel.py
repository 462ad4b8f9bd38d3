"""The part of every dashboard that the browser sees: one HTML widget holding the verdict, the chart
(with alt text stating its message) and any table, replaced whole on each update.

Why one ``HTML`` widget, not ``interactive_output``: clearing and re-displaying an ``Output``
sends several messages per move (clear, print, display) and JupyterLab rebuilds the output area
for each; the learner sees the caption and the chart change at different moments. Here one
message carries everything, so a caption can never sit under a stale chart, and the ``<img>`` has
``alt`` text (an ``ipywidgets.Image`` cannot carry one). Paragraphs wrap at word boundaries, where
``print`` output in a ``<pre>`` broke words and numbers in two.

Sliders update on release (``continuous_update=False``): a drag sends one request, not one per
pixel, so the kernel never works through a queue of positions the learner has already left.
Each key press on a focused slider is still one update.
"""

from __future__ import annotations

import base64
import html
import struct
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

CHART_CLASS = "rl-chart"
VERDICT_STYLE = ("margin: 0.3em 0 0.5em 0; max-width: 60em; white-space: normal; word-break: normal; "
                 "overflow-wrap: normal; line-height: 1.45; font-size: var(--jp-content-font-size1, 14px);")


@dataclass(frozen=True)
class Frame:
    """What one dashboard update shows. ``verdict`` and ``notes`` are plain text (escaped here; a
    verdict's lines starting "\n- " after its lead sentence are shown as a list);
    ``alt`` states the chart's message for a reader who cannot see it; ``table_html`` is trusted
    HTML built by :func:`roofline_lessons.viz.display.html_table`."""

    verdict: str
    png: bytes | None
    alt: str
    notes: tuple[str, ...] = ()
    table_html: str = ""
    error: bool = False


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height in pixels, read from the PNG header."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    return struct.unpack(">II", png[16:24])


def img_tag(png: bytes, alt: str, css_class: str = CHART_CLASS) -> str:
    """An ``<img>`` with the PNG inline, its pixel size (no layout jump while it decodes) and alt text."""
    width, height = png_size(png)
    data = base64.b64encode(png).decode("ascii")
    return (f'<img class="{css_class}" src="data:image/png;base64,{data}" alt="{html.escape(alt, quote=True)}" '
            f'width="{width}" height="{height}" style="max-width: 100%; height: auto;">')


def frame_html(frame: Frame, render_ms: float | None = None) -> str:
    """The HTML one update puts in the panel. ``render_ms`` (the kernel's time for this update) is
    kept as a ``data-render-ms`` attribute, so a browser benchmark can tell kernel time from the
    rest (messaging and the browser's own work)."""
    colour = "color: var(--jp-error-color1, #b00020);" if frame.error else ""
    lead, *items = frame.verdict.split("\n- ")  # a verdict may lead with a sentence and list the rest
    parts = [f'<p class="rl-verdict" style="{VERDICT_STYLE}{colour}">{html.escape(lead)}</p>']
    if items:
        parts.append(f'<ul class="rl-verdict-list" style="{VERDICT_STYLE}{colour}">'
                     + "".join(f"<li>{html.escape(item)}</li>" for item in items) + "</ul>")
    parts += [f'<p class="rl-note" style="{VERDICT_STYLE}">{html.escape(n)}</p>' for n in frame.notes]
    if frame.png is not None:
        parts.append(img_tag(frame.png, frame.alt))
    if frame.table_html:
        parts.append(frame.table_html)
    timing = "" if render_ms is None else f' data-render-ms="{render_ms:.1f}"'
    return f'<div class="rl-panel"{timing}>' + "".join(parts) + "</div>"


def error_frame(exc: BaseException) -> Frame:
    """What the panel shows when an update itself fails: the error, never a stale chart."""
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return Frame(verdict=f"This setting could not be drawn: {last}", png=None, alt="", error=True)


def _inline(w):
    """ToggleButtons draw their description above the buttons, out of line with every other
    control's; show it as a label beside them instead."""
    import ipywidgets as widgets

    if isinstance(w, widgets.ToggleButtons) and w.description:
        label = widgets.Label(w.description, layout=widgets.Layout(width="auto", margin="0 0.5em 0 0"))
        w.description = ""
        return widgets.HBox([label, w], layout=widgets.Layout(align_items="center", width="auto"))
    return w


def build_dashboard(controls: Mapping[str, object], rows: Sequence[Sequence[str]],
                    render: Callable[..., Frame]):
    """Lay out ``controls`` (name → widget) in ``rows`` of names above one HTML panel, and redraw the
    panel with ``render(**values)`` whenever a control's value changes. Returns the ``VBox``."""
    import ipywidgets as widgets

    panel = widgets.HTML(layout=widgets.Layout(width="100%"))

    def refresh(_change=None) -> None:
        values = {name: w.value for name, w in controls.items()}
        start = time.perf_counter()
        try:
            frame = render(**values)
        except Exception as exc:  # shown in the panel, not lost in the widget log
            frame = error_frame(exc)
        panel.value = frame_html(frame, render_ms=(time.perf_counter() - start) * 1e3)

    # what the learner reads beside each control -> the control (toggle buttons lose their own
    # description to a label beside them, below)
    by_label = {getattr(w, "description", "") or name: w for name, w in controls.items()}
    for w in controls.values():
        if hasattr(w, "continuous_update"):
            w.continuous_update = False
        w.observe(refresh, names="value")
    refresh()
    boxes = [widgets.HBox([_inline(controls[name]) for name in row], layout=widgets.Layout(align_items="center"))
             for row in rows]
    ui = widgets.VBox(boxes + [panel])
    ui.refresh = refresh  # tests and benchmarks can redraw without a browser
    ui.panel = panel
    ui.controls = dict(controls)
    ui.by_label = by_label
    return ui
