"""Every dashboard's text is at least the size of the lessons' static charts' smallest text, on screen.

A dashboard PNG is shown at its own pixel size (``img`` width = the PNG's width), so what a learner
reads is the font size in points times the figure's dpi / 72. The lessons' static charts draw their
smallest text at ``MIN_FONT_PT`` and 100 dpi (12.5 px); each dashboard is checked against that at
its default settings and with every control moved to each end of its range (first and last option
of a dropdown, toggle or selection slider; min and max of a slider), one control at a time.
"""

from __future__ import annotations

import matplotlib
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from chart_checks import visible_texts
from roofline_lessons.viz import dashboards
from roofline_lessons.viz.charts import MIN_FONT_PT
from roofline_lessons.viz.plots import intensity_vs_batch

DASHBOARDS = sorted(name for name in dir(dashboards) if name.startswith("lesson") and name.endswith("_dashboard"))


@pytest.fixture
def drawn(monkeypatch):
    """The figures each update encodes as PNG (blitted canvas or savefig), in order."""
    seen = []
    buffer_rgba, savefig = FigureCanvasAgg.buffer_rgba, Figure.savefig

    def record_buffer(self, *a, **k):
        seen.append(self.figure)
        return buffer_rgba(self, *a, **k)

    def record_savefig(self, *a, **k):
        seen.append(self)
        return savefig(self, *a, **k)

    monkeypatch.setattr(FigureCanvasAgg, "buffer_rgba", record_buffer)
    monkeypatch.setattr(Figure, "savefig", record_savefig)
    return seen


def extremes(widget):
    """The values at each end of a control's range."""
    options = getattr(widget, "options", None)
    if options:
        values = [o[1] if isinstance(o, tuple) else o for o in options]
        if isinstance(widget.value, tuple):  # a multiple selection: one item, and all of them
            return [tuple(values[:1]), tuple(values)]
        return [values[0], values[-1]]
    if hasattr(widget, "min") and hasattr(widget, "max"):
        return [widget.min, widget.max]
    return []


def text_px(fig) -> list[tuple[str, float]]:
    """(text, its height on screen in px) for every visible text of ``fig``."""
    return [(t.get_text(), t.get_fontsize() * fig.dpi / 72) for t in visible_texts(fig)]


@pytest.fixture(scope="module")
def static_min_px() -> float:
    """The smallest type a chart may use (MIN_FONT_PT) as a lesson's static chart shows it (lesson 4's
    intensity-vs-batch, at its own dpi), in px on screen; that chart itself is held to it."""
    fig = intensity_vs_batch("qwen3.8-27b", "h100-sxm", [8192])
    least = MIN_FONT_PT * fig.dpi / 72
    assert min(px for _text, px in text_px(fig)) >= least - 1e-9
    return least


def small_texts(fig, least_px: float) -> list[tuple[str, float]]:
    return [(text, round(px, 1)) for text, px in text_px(fig) if px < least_px - 1e-9]


def test_there_is_a_dashboard_per_interactive_lesson(static_min_px):
    assert len(DASHBOARDS) >= 10, DASHBOARDS
    assert static_min_px >= 12.5  # 9 pt at 100 dpi: the size the dashboards are held to


@pytest.mark.parametrize("name", DASHBOARDS)
def test_dashboard_text_is_as_large_as_the_static_charts(name, drawn, static_min_px):
    matplotlib.use("Agg")
    ui = getattr(dashboards, name)()
    checked, problems = 0, []

    def check(setting: str) -> bool:
        """Check the charts the last update drew; False if it drew none (an error, or a message)."""
        nonlocal checked
        figs = [f for f in dict.fromkeys(drawn) if f.axes]  # a message picture has no axes
        drawn.clear()
        for fig in figs:
            checked += 1
            small = small_texts(fig, static_min_px)
            if small:
                problems.append((setting, small[:4]))
        return bool(figs)

    ui.refresh()
    assert check("default"), f"{name} draws no chart at its defaults"
    defaults = {name: w.value for name, w in ui.controls.items()}
    # a setting that draws nothing with the default model and part (expert parallel on a dense model,
    # W4A4 on a part without FP4) is checked with the first model or part where it draws
    others = [(c, v) for c in ("model", "part") if c in ui.controls
              for v in ui.controls[c].options if v != defaults[c]]
    for control, widget in ui.controls.items():
        for value in extremes(widget):
            if value == widget.value:
                continue
            widget.value = value
            if not check(f"{control}={value}"):
                for other, v in others:
                    if other == control:
                        continue
                    ui.controls[other].value = v
                    if check(f"{control}={value}, {other}={v}"):
                        break
                else:
                    problems.append((f"{control}={value}", "draws a chart with no model or part"))
                for other in ("model", "part"):
                    if other in ui.controls and other != control:
                        ui.controls[other].value = defaults[other]
        widget.value = defaults[control]
        drawn.clear()
    assert checked > 0, f"{name} encoded no figure"
    assert problems == [], f"{name}: text under {static_min_px:.1f} px: {problems}"
