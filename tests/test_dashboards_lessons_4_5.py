"""Lesson 4 and 5 dashboards: frames (verdict, chart, alt text), what the charts draw, and the
widgets. Every expected number is computed by the package, never typed here."""

from __future__ import annotations

import html
import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from chart_checks import visible_texts  # noqa: E402

from roofline_lessons.core.units import count, num  # noqa: E402
from roofline_lessons.topics.hybrid import BREAKDOWN  # noqa: E402
from roofline_lessons.viz import charts  # noqa: E402
from roofline_lessons.viz.charts import MIN_FONT_PT  # noqa: E402
from roofline_lessons.viz.dashboards import lesson04 as l4  # noqa: E402
from roofline_lessons.viz.dashboards import lesson05 as l5  # noqa: E402
from roofline_lessons.viz.panel import frame_html  # noqa: E402

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")

# control extremes: batch and context at both ends, small and large models, slow and fast parts
L4_SETTINGS = [(m, p, b, c) for m in ("qwen3.8-27b", "llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b")
               for p in ("h100-sxm", "b200", "l4") for b in (1, 1024) for c in (0, 131072)]
L5_SETTINGS = [(p, b, c, kv) for p in ("h100-sxm", "b200", "l4") for b in (1, 64) for c in (1024, 262144)
               for kv in ("bf16", "fp8")]


def small_texts(fig):
    return [(t.get_text(), t.get_fontsize()) for t in visible_texts(fig) if t.get_fontsize() < MIN_FONT_PT]


def extent(artist, fig):
    return artist.get_window_extent(fig.canvas.get_renderer())


# ---- lesson 4 -----------------------------------------------------------------------------------

def test_lesson04_frame_states_the_live_numbers():
    view = l4.lesson04_view("qwen3.8-27b", "h100-sxm", 32, 8192)
    frame = l4.lesson04_frame(view, l4.Lesson04Chart())
    assert frame.png and frame.png[:4] == b"\x89PNG" and not frame.error
    assert frame.verdict == view.text
    for live in (num(view.intensity), num(view.intensity_per_weight_byte), count(view.tokens_per_s),
                 count(view.max_batch_that_fits), count(view.context_tokens)):
        assert live in frame.alt
    assert "memory-bound" in frame.alt  # 22 FLOP/byte is left of the ridge
    assert f'alt="{html.escape(frame.alt, quote=True)}"' in frame_html(frame)


def test_lesson04_error_frame_shows_the_error_once_and_no_image():
    view = l4.lesson04_view("qwen3.8-27b", "x100", 1, 0)
    frame = l4.lesson04_frame(view, l4.Lesson04Chart())
    assert frame.error and frame.png is None and frame.alt == ""
    assert "x100" in frame.verdict
    page = frame_html(frame)
    assert page.count(html.escape(view.error)) == 1 and "<img" not in page


@pytest.mark.parametrize("batch", (0, -3, 2.5, "many"))
def test_lesson04_bad_batch_is_named_in_the_error(batch):
    view = l4.lesson04_view("qwen3.8-27b", "h100-sxm", batch, 8192)
    assert view.error == f"batch must be a whole number >= 1, got {batch!r}"
    assert l4.lesson04_frame(view, l4.Lesson04Chart()).png is None


@pytest.mark.parametrize("setting", L4_SETTINGS[::3] + [L4_SETTINGS[-1]])
def test_lesson04_verdict_and_alt_never_use_scientific_notation(setting):
    view = l4.lesson04_view(*setting)
    assert not SCIENTIFIC.search(view.text) and not SCIENTIFIC.search(l4.lesson04_alt(view))


def _drawn_lesson04(setting):
    chart = l4.Lesson04Chart()
    chart.png(l4.lesson04_view(*setting))
    return chart.last_figure


@pytest.mark.parametrize("setting", L4_SETTINGS[::5] + [L4_SETTINGS[-1]])
def test_lesson04_no_text_below_the_minimum_size(setting):
    fig = _drawn_lesson04(setting)
    assert fig._suptitle is not None and fig._suptitle.get_text()  # titled
    assert small_texts(fig) == []


def test_lesson04_stack_legend_sits_outside_the_stacked_panel():
    fig = _drawn_lesson04(("qwen3.8-27b", "h100-sxm", 32, 8192))
    _ax1, ax2, _ax3 = fig.axes
    legend = ax2.get_legend()
    assert legend is not None and len(legend.get_texts()) == 4  # weights, KV cache, state, activations
    assert not extent(legend, fig).overlaps(ax2.bbox)


@pytest.mark.parametrize("setting", L4_SETTINGS)
def test_lesson04_throughput_panel_keeps_ticks_and_labels_at_every_extreme(setting):
    fig = _drawn_lesson04(setting)
    ax3 = fig.axes[2]
    for axis, (lo, hi) in ((ax3.xaxis, ax3.get_xlim()), (ax3.yaxis, ax3.get_ylim())):
        ticks = [v for v in axis.get_major_locator()() if lo <= v <= hi]
        labels = [axis.get_major_formatter()(v, i) for i, v in enumerate(ticks)]
        assert len([s for s in labels if s]) >= 2, (setting, axis.axis_name, lo, hi, labels)
        assert not any(SCIENTIFIC.search(s) or "$" in s for s in labels)
    # and the batch labels ("B=1" used to sit on the x axis) stay inside the panel
    labels = [t for t in ax3.texts if t.get_text().startswith("B=")]
    assert len(labels) == len(l4.MARKED_BATCHES)
    box = ax3.bbox
    for t in labels:
        e = extent(t, fig)
        assert box.x0 <= e.x0 and e.x1 <= box.x1 and box.y0 <= e.y0 and e.y1 <= box.y1, (setting, t.get_text())


def test_lesson04_batch_axes_are_log_with_plain_labels_like_the_static_charts():
    fig = _drawn_lesson04(("qwen3.8-27b", "h100-sxm", 32, 8192))
    _ax1, ax2, ax3 = fig.axes
    assert ax2.get_xscale() == "log" and ax3.get_xscale() == "log" and ax3.get_yscale() == "log"
    fmt = ax2.xaxis.get_major_formatter()
    labels = [fmt(v, i) for i, v in enumerate(ax2.xaxis.get_major_locator()())]
    assert labels == [count(v) for v in (1, 4, 16, 64, 256, 1024)]


def test_lesson04_context_change_keeps_the_static_figure_and_cached_layers_come_back_exactly():
    chart = l4.Lesson04Chart()
    a = chart.png(l4.lesson04_view("qwen3.8-27b", "h100-sxm", 32, 8192))
    chart.png(l4.lesson04_view("qwen3.8-27b", "h100-sxm", 32, 131072))
    assert chart.figures.misses == 1 and chart.layer_misses == 2
    chart.png(l4.lesson04_view("llama-3.1-8b", "b200", 32, 0))  # another part on the same figure
    assert chart.figures.misses == 2
    again = chart.png(l4.lesson04_view("qwen3.8-27b", "h100-sxm", 32, 8192))
    assert again == a and chart.figures.misses == 2 and chart.layer_misses == 3


def test_lesson04_label_placement_keeps_the_box_inside():
    box = (100.0, 100.0, 400.0, 300.0)
    w, h = l4.LABEL_BOX_PX
    for xy in [(105.0, 105.0), (395.0, 105.0), (105.0, 295.0), (395.0, 295.0), (250.0, 200.0)]:
        (dx, dy), ha, va = l4.label_placement(xy, box)
        x = xy[0] + dx * 80 / 72
        y = xy[1] + dy * 80 / 72
        x0 = x if ha == "left" else x - w
        y0 = y - h if va == "top" else (y if va == "bottom" else y - h / 2)
        inside = box[0] <= x0 and x0 + w <= box[2] and box[1] <= y0 and y0 + h <= box[3]
        assert inside or (ha, va) == ("left", "center"), xy  # the corner fallback: straight right


@pytest.mark.parametrize("lo, hi", [(70.0, 290.0), (1.5, 10.0), (10.0, 4000.0), (0.3, 1.0), (3.0, 9.5),
                                    (0.001, 1e6), (123.0, 370.0), (7.7, 23.2)])
def test_log_ticks_give_at_least_two_ticks_in_range(lo, hi):
    ticks = charts.log_ticks(lo, hi)
    assert len(ticks) >= 2 and all(lo <= t <= hi for t in ticks) and len(ticks) <= 6


def test_log_ticks_and_padding_reject_or_widen_bad_ranges():
    with pytest.raises(ValueError, match="lo=5"):
        charts.log_ticks(5.0, 5.0)
    lo, hi = charts.padded_log_range(10.0, 11.0, 1.0, 1.0)
    assert hi / lo == pytest.approx(4.0) and len(charts.log_ticks(lo, hi)) >= 2


# ---- lesson 5 -----------------------------------------------------------------------------------

def test_lesson05_frame_states_each_kinds_share_and_the_dots():
    view = l5.lesson05_view("h100-sxm", 16, 131072)
    frame = l5.lesson05_frame(view, l5.Lesson05Chart())
    assert frame.png and not frame.error and frame.verdict == view.text
    total = sum(view.bytes_now.values())
    for kind in BREAKDOWN:
        assert f"{kind} {l4.share_text(view.bytes_now[kind] / total)}" in frame.alt
    for x, _y in view.dots.values():
        assert num(x) in frame.alt
    assert count(view.context_tokens) in frame.alt
    assert f'alt="{html.escape(frame.alt, quote=True)}"' in frame_html(frame)


def test_lesson05_error_frame_shows_the_error_once_and_no_image():
    view = l5.lesson05_view("nope", 1, 1024)
    frame = l5.lesson05_frame(view, l5.Lesson05Chart())
    assert frame.error and frame.png is None and frame.alt == ""
    page = frame_html(frame)
    assert page.count(html.escape(view.error)) == 1 and "<img" not in page


@pytest.mark.parametrize("setting", L5_SETTINGS[::2] + [L5_SETTINGS[-1]])
def test_lesson05_verdict_and_alt_never_use_scientific_notation(setting):
    view = l5.lesson05_view(*setting)
    assert not SCIENTIFIC.search(view.text) and not SCIENTIFIC.search(l5.lesson05_alt(view))


def _drawn_lesson05(setting):
    chart = l5.Lesson05Chart()
    chart.png(l5.lesson05_view(*setting))
    return chart.last_figure


@pytest.mark.parametrize("setting", L5_SETTINGS[::3] + [L5_SETTINGS[-1]])
def test_lesson05_no_text_below_the_minimum_size_and_nothing_clipped(setting):
    fig = _drawn_lesson05(setting)
    assert fig._suptitle is not None and fig._suptitle.get_text()
    assert small_texts(fig) == []
    page = fig.bbox
    for t in visible_texts(fig):  # e.g. the ridge label used to run off the right edge
        e = extent(t, fig)
        assert page.x0 <= e.x0 and e.x1 <= page.x1 + 0.5 and page.y0 <= e.y0 and e.y1 <= page.y1 + 0.5, t.get_text()


def test_lesson05_title_clears_the_panels_titles_and_labels():
    fig = _drawn_lesson05(("h100-sxm", 1, 32768, "bf16"))
    title = extent(fig._suptitle, fig)
    for ax in fig.axes:
        for part in (ax.title, ax.yaxis.label):
            assert not title.overlaps(extent(part, fig)), part.get_text()


@pytest.mark.parametrize("batch", (1, 8, 32, 64))
def test_lesson05_bands_are_visible_or_grouped_with_their_share_stated(batch):
    view = l5.lesson05_view("h100-sxm", batch, 1024)
    bands = l5.stack_bands(view.curves)
    total = sum(np.asarray(v) for v in view.curves.values())
    assert np.allclose(sum(sum(np.asarray(view.curves[k]) for k in b.kinds) for b in bands), total)
    small = [b for b in bands if b.max_share < l5.MIN_VISIBLE_SHARE]
    assert len(small) <= 1 and len(bands) <= 5
    for b in small:
        assert l4.share_text(b.max_share) in b.label
    # the legend the chart shows is these bands, no more
    fig = _drawn_lesson05(("h100-sxm", batch, 1024, "bf16"))
    shown = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert sorted(shown) == sorted(b.label for b in bands)


def test_lesson05_at_batch_1_the_slivers_are_one_band():
    view = l5.lesson05_view("h100-sxm", 1, 1024)
    labels = [b.label for b in l5.stack_bands(view.curves)]
    assert len(labels) == 3 and labels[0] == "weights" and labels[1] == "KV cache"
    assert "state" in labels[2] and "activations" in labels[2]


def test_lesson05_context_moves_only_the_markers_and_batch_only_its_layer():
    chart = l5.Lesson05Chart()
    first = chart.png(l5.lesson05_view("h100-sxm", 1, 1024))
    for c in l5.CONTEXT_CHOICES:
        chart.png(l5.lesson05_view("h100-sxm", 1, c))
    assert chart.figures.misses == 1 and chart.layer_misses == 1
    chart.png(l5.lesson05_view("h100-sxm", 64, 1024, "fp8"))
    chart.png(l5.lesson05_view("b200", 8, 1024))
    assert chart.figures.misses == 2 and chart.layer_misses == 3
    assert chart.png(l5.lesson05_view("h100-sxm", 1, 1024)) == first


# ---- the widgets --------------------------------------------------------------------------------

def _controls(ui):
    import ipywidgets as widgets

    found = []

    def walk(w):
        if isinstance(w, (widgets.Dropdown, widgets.SelectionSlider)):
            found.append(w)
        for child in getattr(w, "children", ()):
            walk(child)

    walk(ui)
    return {w.description: w for w in found}


@pytest.mark.parametrize("name, moves", [
    ("lesson04_dashboard", {"batch": 1024, "context (tokens)": 131072, "part": "b200", "model": "llama-3.1-8b"}),
    ("lesson05_dashboard", {"context (tokens)": 262144, "batch": 64, "KV cache dtype": "fp8", "part": "h200"}),
])
def test_dashboard_panel_follows_its_controls(name, moves, capsys):
    module = l4 if name.startswith("lesson04") else l5
    ui = getattr(module, name)()
    controls = _controls(ui)
    assert set(moves) <= set(controls)
    for w in controls.values():
        assert w.style.description_width == "initial"
    before = ui.panel.value
    assert "<img" in before and 'alt="' in before
    for description, value in moves.items():
        shown = ui.panel.value
        controls[description].value = value
        assert ui.panel.value != shown, description
        assert "<img" in ui.panel.value and "rl-verdict" in ui.panel.value
    capsys.readouterr()


# ---- review fixes: capacity wording, visible markers, one share format, what-if contexts ----------

def _placed(model, part, batch, context, **kw):
    from roofline_lessons.core.placement import place

    return place(model, part, phase="decode", batch=batch, context_tokens=context, **kw)


def test_lesson04_when_not_even_batch_1_fits_it_says_what_batch_1_needs():
    from roofline_lessons.core.hardware import get_part
    from roofline_lessons.core.units import binary

    view = l4.lesson04_view("llama-3.1-70b", "a100-80gb", 1, 8192)
    assert view.max_batch_that_fits == 0
    needed = binary(float(_placed("llama-3.1-70b", "a100-80gb", 1, 8192).memory_required_bytes))
    capacity = binary(get_part("a100-80gb").memory_capacity_bytes)
    wanted = f"even batch 1 needs {needed} of the part's {capacity}"
    alt = l4.lesson04_alt(view)
    assert wanted in view.text and wanted in alt
    for text in (view.text, alt):
        assert "fits is 0" not in text and "at most 0" not in text and "up to 0" not in text


def test_lesson04_largest_batch_is_capped_at_the_sliders_end():
    view = l4.lesson04_view("llama-3.1-8b", "b200", 1024, 0)
    assert view.max_batch_that_fits > l4.BATCH_CHOICES[-1]
    for text in (view.text, l4.lesson04_alt(view)):
        assert f"more than {count(l4.BATCH_CHOICES[-1])} fit" in text
        assert count(view.max_batch_that_fits) not in text


def test_lesson04_capacity_states_the_gib_needed_apart_from_the_bytes_moved():
    from roofline_lessons.core.hardware import get_part
    from roofline_lessons.core.units import binary

    view = l4.lesson04_view("qwen3.8-27b", "h100-sxm", 32, 8192)
    needed = binary(float(_placed("qwen3.8-27b", "h100-sxm", 32, 8192).memory_required_bytes))
    wanted = f"Fits in {binary(get_part('h100-sxm').memory_capacity_bytes)} ({needed} needed"
    assert wanted in view.text
    assert f"{wanted[0].lower()}{wanted[1:]}" in l4.lesson04_alt(view) or wanted in l4.lesson04_alt(view)
    assert "Bytes per step" not in view.text  # traffic is named as traffic
    # does not fit, but some batch does: the GiB needed at this batch and the largest batch
    big = l4.lesson04_view("qwen3.8-27b", "h200", 256, 32768)
    need_big = binary(float(_placed("qwen3.8-27b", "h200", 256, 32768).memory_required_bytes))
    assert f"({need_big} needed" in big.text and f"the largest batch that fits is {count(big.max_batch_that_fits)}" \
        in big.text


def _line_px(fig, ax, x):
    return ax.transData.transform((x, 1.0))[0]


@pytest.mark.parametrize("batch", (l4.BATCH_CHOICES[0], l4.BATCH_CHOICES[-1]))
def test_lesson04_batch_line_stays_off_the_axis_frame_at_both_ends(batch):
    fig = _drawn_lesson04(("qwen3.8-27b", "h100-sxm", batch, 8192))
    ax2 = fig.axes[1]
    x = _line_px(fig, ax2, batch)
    assert ax2.bbox.x0 + 3 <= x <= ax2.bbox.x1 - 3, (x, ax2.bbox)


@pytest.mark.parametrize("context", (l5.CONTEXT_CHOICES[0], l5.CONTEXT_CHOICES[-1]))
def test_lesson05_context_line_stays_off_the_axis_frame_at_both_ends(context):
    fig = _drawn_lesson05(("h100-sxm", 1, context, "bf16"))
    ax1 = fig.axes[0]
    x = _line_px(fig, ax1, context)
    assert ax1.bbox.x0 + 3 <= x <= ax1.bbox.x1 - 3, (x, ax1.bbox)
    assert "(the marked line)" in l5.lesson05_alt(l5.lesson05_view("h100-sxm", 1, context))


def _pixels(png):
    import io

    import matplotlib.image as mpimg

    return mpimg.imread(io.BytesIO(png), format="png")[:, :, :3]


def _px(fig, ax, xy):
    """Row and column in the PNG of data point ``xy`` on ``ax``."""
    x, y = ax.transData.transform(xy)
    return int(round(fig.bbox.height - y)), int(round(x))


def test_lesson04_both_lenses_stay_visible_where_they_coincide():
    from matplotlib.colors import to_rgb

    from roofline_lessons.viz.charts import PALETTE, point_on_roof

    view = l4.lesson04_view("qwen3.8-27b", "h100-sxm", 1, 0)  # 0.999 vs 1 FLOP/byte: the same spot
    chart = l4.Lesson04Chart()
    img = _pixels(chart.png(view))
    fig = chart.last_figure
    ax1 = fig.axes[0]
    pt = point_on_roof("all", view.intensity, view.roof)
    r, c = _px(fig, ax1, (pt.intensity_flop_per_byte, pt.flops_per_s / 1e12))
    assert np.allclose(img[r, c], to_rgb(PALETTE[3]), atol=0.05)  # the all-traffic circle on top
    # the weights-only square frames it: a black edge beyond the circle's radius, left of the centre
    radius_px = 11 / 2 * fig.dpi / 72
    ring = img[r, c - int(radius_px * 1.9):c - int(radius_px) - 1]
    assert (ring.max(axis=1) < 0.3).any(), ring


def test_lesson05_both_layer_kinds_stay_visible_where_they_coincide():
    from matplotlib.colors import to_rgb

    from roofline_lessons.core.models import FULL_ATTENTION, GATED_DELTANET
    from roofline_lessons.viz.charts import PALETTE

    view = l5.lesson05_view("h100-sxm", 1, 1024)
    (xa, ya), (xg, yg) = view.dots[FULL_ATTENTION], view.dots[GATED_DELTANET]
    chart = l5.Lesson05Chart()
    img = _pixels(chart.png(view))
    fig = chart.last_figure
    ax2 = fig.axes[1]
    ra, ca = _px(fig, ax2, (xa, ya / 1e12))
    rg, cg = _px(fig, ax2, (xg, yg / 1e12))
    assert abs(ra - rg) <= 4 and abs(ca - cg) <= 4  # they do coincide here
    assert np.allclose(img[ra, ca], to_rgb(PALETTE[3]), atol=0.05)  # the circle is seen
    corner = int(l5.GDN_MARKER_SIZE / 2 * fig.dpi / 72) - 2
    assert np.allclose(img[rg - corner, cg - corner], to_rgb(PALETTE[2]), atol=0.05)  # and the square


@pytest.mark.parametrize("fraction, shown", [(0.00998, "1 %"), (0.0094, "0.9 %"), (0.0102, "1 %"),
                                             (0.0006, "under 0.1 %"), (0.65, "65 %")])
def test_share_text_never_writes_1_point_0(fraction, shown):
    assert l4.share_text(fraction) == shown


def test_lesson04_shares_use_one_format():
    view = l4.lesson04_view("llama-3.1-8b", "b200", 1024, 0)  # KV cache just under 1 %
    for text in (view.text, l4.lesson04_alt(view)):
        assert not re.search(r"\b\d+\.0 %", text), text


@pytest.mark.parametrize("setting", [("h100-sxm", 1, 32768), ("h100-sxm", 64, 262144), ("b200", 8, 1024, "fp8")])
def test_lesson05_verdict_shares_cover_every_kind(setting):
    view = l5.lesson05_view(*setting)
    assert f"activations {l4.share_text(view.time_share['activations'])}" in view.text
    assert sum(view.time_share.values()) == pytest.approx(1.0)  # so the stated shares cover the step


def test_lesson04_context_beyond_the_model_is_a_what_if():
    from roofline_lessons.core.models import get_model

    limit = get_model("llama-2-7b").max_context_tokens
    view = l4.lesson04_view("llama-2-7b", "l4", 8, 131072)
    assert f"built for at most {count(limit)} tokens (config.json max_position_embeddings)" in view.text
    assert "what-if" in view.text
    assert view.text.count("what-if") == 1
    assert "what-if" not in l4.lesson04_view("llama-2-7b", "l4", 8, 1024).text
    assert "what-if" not in l4.lesson04_view("qwen3.8-27b", "h100-sxm", 8, 131072).text


# ---- the shared figure (issue 27: lessons 4 and 5 on the dashboard base) -------------------------

def test_lesson04_a_part_evicted_from_the_figure_cache_comes_back_exactly():
    """Four (model, part) figures are kept; a fifth evicts the first. Built again on the one shared figure,
    it gives the same pixels, and its context layer's bitmap (kept under the figure's key) is not redrawn."""
    chart = l4.Lesson04Chart()
    first = chart.png(l4.lesson04_view("qwen3.8-27b", "h100-sxm", 32, 8192))
    for part in ("b200", "h200", "l4", "a100-80gb"):
        chart.png(l4.lesson04_view("qwen3.8-27b", part, 32, 8192))
    assert chart.figures.misses == 5 and chart.layer_misses == 5
    assert chart.png(l4.lesson04_view("qwen3.8-27b", "h100-sxm", 32, 8192)) == first
    assert chart.figures.misses == 6 and chart.layer_misses == 5


def test_batching_kinds_and_resident_bytes():
    from roofline_lessons.core.placement import place
    from roofline_lessons.topics.batching import BYTE_KINDS, kinds_moved, resident_bytes

    assert kinds_moved("qwen3.8-27b", "h100-sxm", l4.BATCH_GRID, (0, 131072)) == BYTE_KINDS  # a hybrid: state too
    assert "state" not in kinds_moved("llama-3.1-8b", "h100-sxm", l4.BATCH_GRID, (0, 131072))
    for batch, context in ((1, 0), (32, 8192), (256, 32768)):
        placed = place("qwen3.8-27b", "h200", phase="decode", batch=batch, context_tokens=context)
        assert resident_bytes("qwen3.8-27b", batch, context + 1) == pytest.approx(float(placed.memory_required_bytes))
