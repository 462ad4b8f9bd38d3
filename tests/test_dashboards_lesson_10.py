"""Lesson 10 dashboard: the frame (verdict, chart, alt text), what the chart draws, its speed and the
widgets. Every expected number is computed by the package (topics.serving), never typed here."""

from __future__ import annotations

import html
import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from chart_checks import visible_texts  # noqa: E402

from roofline_lessons.core.memory import max_batch_that_fits  # noqa: E402
from roofline_lessons.core.units import count, duration, num  # noqa: E402
from roofline_lessons.topics.serving import goodput_requests_per_s, pareto, request_timeline  # noqa: E402
from roofline_lessons.viz.charts import MIN_FONT_PT  # noqa: E402
from roofline_lessons.viz.fastfig import CHART_DPI  # noqa: E402
from roofline_lessons.viz.dashboards import lesson10 as l10  # noqa: E402
from roofline_lessons.viz.panel import frame_html  # noqa: E402

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")
DEFAULT = ("llama-3.1-8b", "h100-sxm", 32, 1024, 256, 1.0, 0.05)
# the controls' extremes: batch, prompt, output and both SLOs at their ends, models that fit and do not
EXTREMES = [
    (m, p, b, pr, o, ttft, tpot)
    for m, p in (("llama-3.1-8b", "h100-sxm"), ("llama-3.1-70b", "l4"), ("qwen3.8-27b", "b200"))
    for b in (l10.BATCH_CHOICES[0], l10.BATCH_CHOICES[-1])
    for pr, o in ((l10.PROMPT_CHOICES[0], l10.OUTPUT_CHOICES[0]), (l10.PROMPT_CHOICES[-1], l10.OUTPUT_CHOICES[-1]))
    for ttft, tpot in ((l10.TTFT_SLO_CHOICES_S[0], l10.TPOT_SLO_CHOICES_S[0]),
                       (l10.TTFT_SLO_CHOICES_S[-1], l10.TPOT_SLO_CHOICES_S[-1]))
]
CRITICAL_ON_CHART = ("llama-3.1-70b", "h100-sxm", 64, 128, 16, 0.5, 0.03)  # critical batch 379 (all traffic)


def drawn(setting, chart=None):
    chart = chart or l10.Lesson10Chart()
    view = l10.lesson10_view(*setting)
    chart.png(view)
    return view, chart.last_figure


# ---- the frame ----------------------------------------------------------------------------------

def test_frame_states_the_live_numbers_in_verdict_and_alt():
    view = l10.lesson10_view(*DEFAULT)
    frame = l10.lesson10_frame(view, l10.Lesson10Chart())
    assert frame.png[:4] == b"\x89PNG" and not frame.error and frame.verdict == view.text
    t = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=1024, output_tokens=256, batch=32)
    for live in (duration(t.ttft_s), duration(t.tpot_s), duration(t.e2e_s), count(t.output_tokens_per_s)):
        assert live in frame.alt and live in frame.verdict
    assert num(t.output_tokens_per_s_per_sequence) in frame.verdict
    assert num(t.ttft_s / t.e2e_s * 100) in frame.alt  # the timeline's prefill share
    assert f'alt="{html.escape(frame.alt, quote=True)}"' in frame_html(frame)


def test_view_numbers_are_the_serving_modules():
    view = l10.lesson10_view(*DEFAULT)
    t = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=1024, output_tokens=256, batch=32)
    assert (view.ttft_s, view.tpot_s, view.e2e_s) == (t.ttft_s, t.tpot_s, t.e2e_s)
    assert view.tokens_per_s == t.output_tokens_per_s and view.fits == t.fits_in_memory
    pa = pareto("llama-3.1-8b", "h100-sxm", prompt_tokens=1024, output_tokens=256, batches=l10.CURVE_BATCHES)
    np.testing.assert_array_equal(view.curve_tpot_s, pa.tpot_s)
    np.testing.assert_array_equal(view.curve_tokens_per_s, pa.output_tokens_per_s)
    assert view.critical_batch == pa.critical_batch


@pytest.mark.parametrize("setting", [DEFAULT, EXTREMES[5], EXTREMES[-1], CRITICAL_ON_CHART])
def test_batches_meeting_both_slos_are_goodputs(setting):
    model, part, _b, prompt, output, ttft, tpot = setting
    view = l10.lesson10_view(*setting)
    good = goodput_requests_per_s(model, part, prompt_tokens=prompt, output_tokens=output,
                                  batches=l10.CURVE_BATCHES, ttft_slo_s=ttft, tpot_slo_s=tpot)
    np.testing.assert_array_equal(view.curve_meets, good.meets_slo)
    # the largest slider batch among them (topics.serving.Frontier.largest_meeting), and its tokens/s
    meeting = [i for i, (b, ok) in enumerate(zip(good.batch, good.meets_slo)) if ok and b in l10.BATCH_CHOICES]
    assert view.best_batch == (int(good.batch[meeting[-1]]) if meeting else None)
    assert view.best_tokens_per_s == (view.curve_tokens_per_s[meeting[-1]] if meeting else None)


def test_the_failing_slo_is_named_with_its_numbers():
    base = l10.lesson10_view(*DEFAULT)
    only_ttft = l10.lesson10_view(*DEFAULT[:5], base.ttft_s / 2, base.tpot_s * 2)
    assert "misses the TTFT SLO" in only_ttft.text and duration(base.ttft_s) in only_ttft.text
    only_tpot = l10.lesson10_view(*DEFAULT[:5], base.ttft_s * 2, base.tpot_s / 2)
    assert "misses the TPOT SLO" in only_tpot.text and duration(base.tpot_s) in only_tpot.text
    both = l10.lesson10_view(*DEFAULT[:5], base.ttft_s / 2, base.tpot_s / 2)
    assert "misses both SLOs" in both.text
    assert "meets both SLOs" in l10.lesson10_view(*DEFAULT[:5], base.ttft_s * 2, base.tpot_s * 2).text


def test_a_batch_beyond_memory_still_draws_and_says_so():
    setting = ("llama-3.1-8b", "h100-sxm", 512, 32768, 4096, 10.0, 0.2)
    view = l10.lesson10_view(*setting)
    frame = l10.lesson10_frame(view, l10.Lesson10Chart())
    cap = max_batch_that_fits("llama-3.1-8b", "h100-sxm", 32768 + 4096)
    assert not view.fits and frame.png is not None and not frame.error
    assert "Does NOT fit" in frame.verdict and f"the largest batch that fits is {count(cap)}" in frame.verdict
    assert f"batches above {count(cap)} do not fit in memory and are drawn dotted" in frame.alt
    np.testing.assert_array_equal(view.curve_fits, np.asarray(l10.CURVE_BATCHES) <= cap)


@pytest.mark.parametrize("setting, wanted", [
    (("llama-3.1-8b", "x100", 1, 128, 16, 1.0, 0.05), "x100"),
    (("gpt-9", "h100-sxm", 1, 128, 16, 1.0, 0.05), "gpt-9"),
    (("llama-3.1-8b", "h100-sxm", 0, 128, 16, 1.0, 0.05), "batch must be a whole number from 1"),
    (("llama-3.1-8b", "h100-sxm", 2.5, 128, 16, 1.0, 0.05), "got 2.5"),
    (("llama-3.1-8b", "h100-sxm", "many", 128, 16, 1.0, 0.05), "got 'many'"),
    (("llama-3.1-8b", "h100-sxm", 1, 128, 1, 1.0, 0.05), "output_tokens must be a whole number from 2"),
    (("llama-3.1-8b", "h100-sxm", 1, 128, 16, 0, 0.05), "ttft_slo_s must be a number of seconds > 0, got 0"),
    (("llama-3.1-8b", "h100-sxm", 1, 128, 16, 1.0, -1.0), "tpot_slo_s must be a number of seconds > 0, got -1.0"),
])
def test_error_frame_shows_the_error_once_and_no_image(setting, wanted):
    view = l10.lesson10_view(*setting)
    assert view.error is not None and wanted in view.error
    frame = l10.lesson10_frame(view, l10.Lesson10Chart())
    assert frame.error and frame.png is None and frame.alt == ""
    page = frame_html(frame)
    assert page.count(html.escape(view.error)) == 1 and "<img" not in page


@pytest.mark.parametrize("setting", EXTREMES[::3] + [CRITICAL_ON_CHART])
def test_verdict_and_alt_never_use_scientific_notation(setting):
    view = l10.lesson10_view(*setting)
    assert view.error is None
    assert not SCIENTIFIC.search(view.text) and not SCIENTIFIC.search(l10.lesson10_alt(view))


# ---- the chart ----------------------------------------------------------------------------------

@pytest.mark.parametrize("setting", EXTREMES[::4] + [CRITICAL_ON_CHART])
def test_no_text_below_the_minimum_size_and_none_outside_the_figure(setting):
    _view, fig = drawn(setting)
    assert fig._suptitle is not None and fig._suptitle.get_text()  # titled
    renderer = fig.canvas.get_renderer()
    texts = visible_texts(fig)
    assert [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < MIN_FONT_PT] == []
    # the first layout cut off the two-line y label on the left and ran the status off the right
    box = fig.bbox
    for t in texts:
        e = t.get_window_extent(renderer)
        assert box.x0 <= e.x0 and e.x1 <= box.x1 and box.y0 <= e.y0 and e.y1 <= box.y1, (setting, t.get_text())


@pytest.mark.parametrize("setting", [DEFAULT, CRITICAL_ON_CHART])
def test_the_png_renders_at_the_course_dpi_so_its_smallest_text_is_legible(setting):
    """Every chart renders at CHART_DPI (100, was 80): the PNG is FIGSIZE × CHART_DPI pixels, shown at
    its own size, so a MIN_FONT_PT label is 12.5 px on screen. The layout is in figure
    fractions and points, so nothing in it assumed 80 dpi; the batch labels' room comes from lesson 4's
    LABEL_BOX_PX, which scales with CHART_DPI."""
    import io

    from PIL import Image

    chart = l10.Lesson10Chart()
    png = chart.png(l10.lesson10_view(*setting))
    fig = chart.last_figure
    assert fig.dpi == CHART_DPI
    assert Image.open(io.BytesIO(png)).size == (round(l10.FIGSIZE[0] * CHART_DPI), round(l10.FIGSIZE[1] * CHART_DPI))
    smallest_px = min(t.get_fontsize() for t in visible_texts(fig)) * fig.dpi / 72
    assert smallest_px >= 12.5  # the course's floor on screen: 9 pt at 100 dpi (at 80 dpi it was 10 px)


@pytest.mark.parametrize("setting", [DEFAULT, CRITICAL_ON_CHART, EXTREMES[-1]])
def test_texts_beside_the_chart_do_not_overlap(setting):
    # the first layout drew the critical-batch note over the SLO status
    _view, fig = drawn(setting)
    renderer = fig.canvas.get_renderer()
    beside = [t for t in fig.texts if t.get_visible() and t.get_text().strip() and t is not fig._suptitle]
    legend = fig.legends[0].get_window_extent(renderer)
    boxes = [t.get_window_extent(renderer) for t in beside] + [legend]
    assert len(beside) == 2  # the live status and the frontier's notes
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), setting


def test_frontier_is_log_log_dotted_beyond_memory_with_labelled_batches():
    view, fig = drawn(("llama-3.1-8b", "h100-sxm", 8, 32768, 4096, 10.0, 0.2))
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    solid = [ln for ln in ax.lines if ln.get_linestyle() == "-" and len(ln.get_xdata()) > 1]
    dotted = [ln for ln in ax.lines if ln.get_linestyle() == ":"]
    assert len(solid) == 1 and len(dotted) == 1
    n_fit = int(view.curve_fits.sum())
    np.testing.assert_allclose(solid[0].get_xdata(), view.curve_tpot_s[:n_fit] * 1e3)
    np.testing.assert_allclose(dotted[0].get_xdata(), view.curve_tpot_s[n_fit - 1:] * 1e3)
    labels = sorted(t.get_text() for t in ax.texts if t.get_text().startswith("B="))
    assert labels == sorted(f"B={count(b)}" for b in l10.MARKED_BATCHES)


def test_critical_batch_is_marked_only_where_it_lies_on_the_chart():
    view, fig = drawn(CRITICAL_ON_CHART)
    assert view.critical_batch is not None and view.critical_batch <= l10.BATCH_CHOICES[-1]
    diamonds = [ln for ln in fig.axes[0].lines if ln.get_marker() == "D"]
    assert len(diamonds) == 1
    t = request_timeline("llama-3.1-70b", "h100-sxm", prompt_tokens=128, output_tokens=16, batch=view.critical_batch)
    np.testing.assert_allclose(diamonds[0].get_xydata()[0], (t.tpot_s * 1e3, t.output_tokens_per_s))
    assert f"Critical batch: {count(view.critical_batch)}" in " ".join(x.get_text() for x in fig.texts)
    view, fig = drawn(DEFAULT)
    assert view.critical_batch is None and not [ln for ln in fig.axes[0].lines if ln.get_marker() == "D"]
    assert "Critical batch: none" in " ".join(x.get_text() for x in fig.texts)


def test_moving_parts_follow_the_view():
    chart = l10.Lesson10Chart()
    view, fig = drawn(DEFAULT, chart)
    mv = chart._shared["moving"]
    assert mv["point"].get_xydata()[0].tolist() == pytest.approx([view.tpot_s * 1e3, view.tokens_per_s])
    share = view.ttft_s / view.e2e_s * 100
    assert mv["prefill"].get_width() == pytest.approx(share)
    assert mv["decode"].get_x() == pytest.approx(share) and mv["decode"].get_width() == pytest.approx(100 - share)
    assert mv["slo_line"].get_xdata()[0] == pytest.approx(50.0)  # the TPOT SLO in ms
    meets = view.curve_meets & np.isin(view.curve_batch, l10.BATCH_CHOICES)
    assert len(mv["meets"].get_xdata()) == int(meets.sum()) > 0
    assert mv["point"].get_markerfacecolor() != "white"  # filled: it fits
    _view, _fig = drawn(("llama-3.1-8b", "h100-sxm", 512, 32768, 4096, 10.0, 0.2), chart)
    assert mv["point"].get_markerfacecolor() == "white"  # hollow: it does not fit


def test_batch_and_slo_moves_keep_the_frontier_layer_and_layers_come_back_exactly():
    chart = l10.Lesson10Chart()
    first = chart.png(l10.lesson10_view(*DEFAULT))
    for b in l10.BATCH_CHOICES:
        chart.png(l10.lesson10_view("llama-3.1-8b", "h100-sxm", b, 1024, 256, 0.1, 0.01))
    assert chart.layer_misses == 1 and chart.figures.misses == 1
    chart.png(l10.lesson10_view("llama-3.1-8b", "h100-sxm", 32, 4096, 256, 1.0, 0.05))  # a new prompt
    chart.png(l10.lesson10_view("llama-3.1-70b", "b200", 32, 1024, 256, 1.0, 0.05))  # a new model and part
    assert chart.layer_misses == 3 and chart.figures.misses == 1
    assert chart.png(l10.lesson10_view(*DEFAULT)) == first and chart.layer_misses == 3


# Speed is measured by benchmarks/widget_update.py (in-process) and benchmarks/browser_latency.py
# (in the browser), which print their figures; tests check behaviour, not time.


# ---- the widgets --------------------------------------------------------------------------------

def test_dashboard_panel_follows_every_control(capsys):
    ui = l10.lesson10_dashboard()
    labels = {"model", "part", "batch", "prompt (tokens)", "output (tokens)", "TTFT SLO", "TPOT SLO"}
    assert set(ui.by_label) == labels
    for w in ui.by_label.values():
        assert w.style.description_width == "initial"
        assert getattr(w, "continuous_update", False) is False
    before = ui.panel.value
    assert "<img" in before and 'alt="' in before
    moves = {"batch": 512, "prompt (tokens)": 32768, "output (tokens)": 16, "TTFT SLO": 0.1, "TPOT SLO": 0.01,
             "part": "b200", "model": "qwen3.8-27b"}
    for label, value in moves.items():
        shown = ui.panel.value
        ui.by_label[label].value = value
        assert ui.panel.value != shown, label
        assert "<img" in ui.panel.value and "rl-verdict" in ui.panel.value
    view = l10.lesson10_view("qwen3.8-27b", "b200", 512, 32768, 16, 0.1, 0.01)
    assert html.escape(view.text) in ui.panel.value
    capsys.readouterr()


def test_a_context_beyond_the_model_still_draws_with_the_what_if_note_once():
    setting = ("llama-2-7b", "h100-sxm", 8, 32768, 4096, 1.0, 0.05)
    frame = l10.lesson10_frame(l10.lesson10_view(*setting), l10.Lesson10Chart())
    t = request_timeline("llama-2-7b", "h100-sxm", prompt_tokens=32768, output_tokens=4096, batch=8)
    assert t.warnings and frame.notes == t.warnings and frame.png is not None and not frame.error
    page = frame_html(frame)
    assert all(page.count(html.escape(w)) == 1 for w in t.warnings)
