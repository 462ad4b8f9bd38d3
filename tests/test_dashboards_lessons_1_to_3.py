"""Lessons 1–3 dashboards: one HTML panel (verdict, chart with alt text, table), and the chart fixes
(dtype note and still axes in lesson 1, labelled ridges and visible points in lesson 2, numbered
operators and readable times in lesson 3)."""

import html
import re

import numpy as np
import pytest
from matplotlib.text import Text

from roofline_lessons.core.units import num
from roofline_lessons.viz.charts import MIN_FONT_PT, part_style
from roofline_lessons.viz.panel import frame_html
from roofline_lessons.viz.dashboards.lesson01 import (
    Lesson01Chart,
    lesson01_dashboard,
    lesson01_frame,
    lesson01_view,
)
from roofline_lessons.viz.dashboards.lesson02 import (
    INTENSITY_RANGE as L2_RANGE,
    Lesson02Chart,
    marker_sizes_pt,
    lesson02_dashboard,
    lesson02_frame,
    lesson02_view,
    point_positions,
)
from roofline_lessons.viz.dashboards.lesson03 import (
    NOT_ON_CHART,
    Lesson03Chart,
    lesson03_dashboard,
    lesson03_frame,
    lesson03_view,
    number_ranges,
    wrap_ranges,
)
from roofline_lessons.viz.labels import place_label_boxes

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")
PARTS = ("h100-sxm", "h200", "b200", "mi300x")


def _cached(chart):
    """(figure, its dict of artists) of the chart's most recently drawn figure."""
    return chart.last_figure, chart.shared


def _small_texts(fig):
    return [(t.get_text(), t.get_fontsize()) for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and t.get_fontsize() < MIN_FONT_PT]


# ---- every dashboard: frame, alt text, error once, fonts ------------------------------------------

def _normal_and_error():
    c1, c2, c3 = Lesson01Chart(), Lesson02Chart(), Lesson03Chart()
    v1 = lesson01_view("qwen3.8-27b", "h100-sxm", "fp8", "decode", 8, 4096)
    v2 = lesson02_view(PARTS, "bf16", 50.0)
    v3 = lesson03_view("qwen3.8-27b", "h100-sxm", "decode", 8192)
    return [
        (lesson01_frame(v1, c1), num(v1.intensity_flop_per_byte),
         lesson01_frame(lesson01_view("qwen3.8-27b", "a100-80gb", "fp8", "decode", 1, 0), c1), "no fp8"),
        (lesson02_frame(v2, c2), num(v2.verdicts[0].attainable_flops_per_s / 1e12),
         lesson02_frame(lesson02_view((), "bf16", 1.0), c2), "at least one part"),
        (lesson03_frame(v3, c3), num(v3.step_intensity),
         lesson03_frame(lesson03_view("qwen3.8-27b", "nope", "decode", 10), c3), "unknown hardware id"),
    ]


@pytest.mark.parametrize("case", range(3), ids=["lesson01", "lesson02", "lesson03"])
def test_frame_has_alt_text_with_live_numbers_and_errors_show_once(case):
    frame, live, error, error_words = _normal_and_error()[case]
    assert frame.png.startswith(b"\x89PNG") and not frame.error
    assert frame.alt.strip() and live in frame.alt
    assert f'alt="{html.escape(frame.alt, quote=True)}"' in frame_html(frame)
    assert not SCIENTIFIC.search(frame.verdict + " ".join(frame.notes) + frame.alt)
    assert error.error and error.png is None and error.alt == ""
    assert error_words in error.verdict
    shown = frame_html(error)
    assert shown.count(html.escape(error.verdict)) == 1 and "<img" not in shown


@pytest.mark.parametrize("case", ["lesson01", "lesson02", "lesson02_many", "lesson03_prefill", "lesson03_decode"])
def test_no_text_below_the_minimum_size(case):
    if case == "lesson01":
        chart = Lesson01Chart()
        chart.png(lesson01_view("llama-3.1-8b", "b200", "fp4", "prefill", 1, 128))
    elif case.startswith("lesson02"):
        chart = Lesson02Chart()
        from roofline_lessons.core.hardware import list_parts
        chart.png(lesson02_view(list_parts() if case.endswith("many") else PARTS, "bf16", 300.0))
    else:
        chart = Lesson03Chart()
        chart.png(lesson03_view("qwen3.8-27b", "h100-sxm", case.split("_")[1], 8192))
    fig, _ = _cached(chart)
    assert fig.axes[0].get_title() and "FLOP/byte" in fig.axes[0].get_xlabel()
    assert _small_texts(fig) == []


# ---- lesson 1: the dtype control ---------------------------------------------------------------

def test_fp16_says_why_nothing_moves():
    bf16 = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 8192)
    fp16 = lesson01_view("qwen3.8-27b", "h100-sxm", "fp16", "decode", 1, 8192)
    assert fp16.intensity_flop_per_byte == bf16.intensity_flop_per_byte
    effect = fp16.dtype_effect
    assert not effect.point_moves and not effect.roof_moves
    assert "FP16 and BF16 move the same bytes" in fp16.verdict and "neither the point nor the roof" in fp16.verdict
    assert "same bytes" in effect.chart_note()
    # BF16's own view names its twin, from the catalog's numbers
    assert "FP16" in " ".join(bf16.notes) and num(bf16.roof.peak_flops_per_s / 1e12) in " ".join(bf16.notes)


def test_fp8_moves_the_point_and_says_by_how_much():
    bf16 = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 8192)
    fp8 = lesson01_view("qwen3.8-27b", "h100-sxm", "fp8", "decode", 1, 8192)
    effect = fp8.dtype_effect
    assert effect.point_moves and effect.roof_moves
    assert effect.reference_intensity_flop_per_byte == bf16.intensity_flop_per_byte
    assert num(bf16.intensity_flop_per_byte) in fp8.verdict and num(fp8.intensity_flop_per_byte) in fp8.verdict
    assert "moves right" in fp8.verdict


def test_a_format_that_moves_only_the_roof_is_named_so():
    from dataclasses import replace

    fp16 = lesson01_view("qwen3.8-27b", "h100-sxm", "fp16", "decode", 1, 8192).dtype_effect
    faster = replace(fp16, peak_flops_per_s=2 * fp16.peak_flops_per_s)  # a part whose FP16 rate differs
    assert not faster.point_moves and faster.roof_moves
    assert "only the compute roof changes" in faster.sentence()
    assert "only the compute roof changes" in faster.chart_note()


def test_changing_dtype_keeps_the_axes_and_moves_the_point():
    chart = Lesson01Chart()
    bf16 = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 8192)
    fp8 = lesson01_view("qwen3.8-27b", "h100-sxm", "fp8", "decode", 1, 8192)
    a = chart.png(bf16)
    fig_a, _ = _cached(chart)
    ylim_a = fig_a.axes[0].get_ylim()
    b = chart.png(fp8)
    fig_b, state = _cached(chart)
    marker, ghost = state["marker"], state["ghost"]
    assert a != b and fig_b is not fig_a
    assert fig_b.axes[0].get_ylim() == pytest.approx(ylim_a)  # the scale stays; the point moves
    assert marker.get_xdata()[0] == pytest.approx(fp8.intensity_flop_per_byte)
    assert ghost.get_xdata()[0] == pytest.approx(bf16.intensity_flop_per_byte)  # BF16's point, hollow
    note = [t.get_text() for t in fig_b.findobj(Text) if "per value" in t.get_text()]
    assert note and "FP8" in note[0]


@pytest.mark.parametrize("args", [("qwen3.8-27b", "b200", "fp8", "prefill", 512, 131072),
                                  ("qwen3.8-27b", "l4", "fp32", "decode", 1, 2048),
                                  ("qwen3.8-27b", "h100-sxm", "fp8", "decode", 1, 8192)])
def test_lesson01_point_label_covers_nothing(args):
    chart = Lesson01Chart()
    view = lesson01_view(*args)
    chart.png(view)
    _fig, state = _cached(chart)
    ax, renderer = state["ax"], state["renderer"]
    label = state["label"].get_window_extent(renderer)
    others = [ax.get_legend().get_window_extent(renderer)]
    others += [t.get_window_extent(renderer) for t in ax.texts
               if t.get_text() and t is not state["label"] and t is not state["arrow"]]  # the ridge label
    gx, gy = ax.transData.transform((state["ghost"].get_xdata()[0], state["ghost"].get_ydata()[0]))
    px, py = ax.transData.transform((view.intensity_flop_per_byte, view.attainable_flops_per_s / 1e12))
    assert not any(label.overlaps(o) for o in others)
    for x, y in ((gx, gy), (px, py)):  # BF16's hollow point and the point itself stay in sight
        assert not (label.x0 < x < label.x1 and label.y0 < y < label.y1)
    x0, y0, x1, y1 = ax.bbox.extents
    assert x0 <= label.x0 and label.x1 <= x1 and y0 <= label.y0 and label.y1 <= y1


def test_lesson01_verdict_has_no_scientific_notation():
    v = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "prefill", 512, 131072)
    assert v.intensity_flop_per_byte > 1000
    assert not SCIENTIFIC.search(v.verdict) and num(v.intensity_flop_per_byte) in v.verdict


# ---- lesson 2: ridges, points, part styles -------------------------------------------------------

def test_lesson02_ridges_are_labelled_and_marked_in_each_parts_style():
    chart = Lesson02Chart()
    view = lesson02_view(PARTS, "bf16", 32.0)
    chart.png(view)
    fig, _ = _cached(chart)
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    for roof in view.roofs:
        look = part_style(roof.part_id)
        assert any(roof.part_id in t and f"ridge {num(roof.ridge_point_flop_per_byte)} FLOP/byte" in t for t in legend)
        ridge_marks = [line for line in ax.get_lines()
                       if len(line.get_xdata()) == 1
                       and line.get_xdata()[0] == pytest.approx(roof.ridge_point_flop_per_byte)
                       and line.get_ydata()[0] == pytest.approx(roof.peak_flops_per_s / 1e12)]
        assert ridge_marks and ridge_marks[0].get_marker() == look.marker
        roof_lines = [line for line in ax.get_lines() if len(line.get_xdata()) > 2 and line.get_color() == look.colour]
        assert roof_lines and roof_lines[0].get_linestyle() == {"-": "-", "--": "--", "-.": "-.", ":": ":"}[
            look.linestyle]
    assert part_style("h200") != part_style("mi300x")


@pytest.mark.parametrize("intensity", [0.1, 32.0, 1000.0, 1e5])
def test_lesson02_points_sit_on_their_roofs_and_overlaps_differ_in_size(intensity):
    chart = Lesson02Chart()
    view = lesson02_view(PARTS, "bf16", intensity)
    chart.png(view)
    fig, state = _cached(chart)
    ax, markers = state["ax"], state["markers"]
    # exactly on its own roof at the chosen intensity: never moved sideways
    for m, roof, v in zip(markers, view.roofs, [v for v in view.verdicts if v.attainable_flops_per_s]):
        assert m.get_xdata()[0] == pytest.approx(intensity, rel=1e-12)
        assert m.get_ydata()[0] == pytest.approx(v.attainable_flops_per_s / 1e12)
    assert point_positions(view) == [(intensity, v.attainable_flops_per_s / 1e12) for v in view.verdicts]
    # markers that overlap differ in size, so the larger shows as a ring around the smaller
    px = ax.transData.transform([(m.get_xdata()[0], m.get_ydata()[0]) for m in markers])
    for i in range(len(px)):
        for j in range(i + 1, len(px)):
            half = (markers[i].get_markersize() + markers[j].get_markersize()) / 2 * fig.dpi / 72
            if np.all(np.abs(px[i] - px[j]) < half):
                assert abs(markers[i].get_markersize() - markers[j].get_markersize()) >= 2
    # the dotted line and the markers stay inside the axes at both slider ends, with room
    x0, x1 = ax.get_xlim()
    assert x0 < L2_RANGE[0] and x1 > L2_RANGE[1]
    lo, hi = ax.bbox.x0, ax.bbox.x1
    assert all(lo + 5 < x < hi - 5 for x, _ in px)


def test_marker_sizes_step_down_only_within_overlapping_groups():
    assert marker_sizes_pt([(100, 100), (100, 300)], 12) == [10.0, 10.0]
    sizes = marker_sizes_pt([(100, 100), (100, 105), (100, 110), (300, 100)], 12)
    assert sizes[0] > sizes[1] > sizes[2] and sizes[3] == 10.0


def test_lesson02_no_note_about_spreading_markers():
    frame = lesson02_frame(lesson02_view(PARTS, "bf16", 32.0), Lesson02Chart())
    assert not any("spread" in n for n in frame.notes)


@pytest.mark.parametrize("parts, dtype, intensity", [(("b200",), "fp8", 562.0), (("h100-sxm",), "fp32", 19.95)])
def test_lesson02_a_point_at_the_ridge_is_called_so_never_100_percent_memory_bound(parts, dtype, intensity):
    view = lesson02_view(parts, dtype, intensity)
    v = view.verdicts[0]
    assert abs(intensity / v.ridge_point_flop_per_byte - 1) < 0.01
    line = v.line(intensity)
    assert "at the ridge" in line and "left of" not in line
    assert not (v.bound == "memory" and "(100 % of peak)" in line)
    assert "at the ridge" in lesson02_frame(view, Lesson02Chart()).verdict


@pytest.mark.parametrize("dtype, word", [("fp4", "an FP4"), ("int8", "an INT8"), ("fp8", "an FP8"),
                                         ("fp32", "an FP32")])
def test_lesson02_article_before_a_format(dtype, word):
    from roofline_lessons.core.hardware import get_part, list_parts
    lacking = tuple(p for p in list_parts() if dtype not in get_part(p).dense_flops_per_s)
    if not lacking:
        pytest.skip(f"every part has {dtype}")
    frame = lesson02_frame(lesson02_view(lacking, dtype, 10.0), Lesson02Chart())
    assert f"has {word} rate" in frame.verdict


# ---- lesson 3: numbered operators, times, table --------------------------------------------------

def test_number_ranges_and_wrapping():
    assert number_ranges([5, 1, 2, 3, 7, 8]) == "1–3, 5, 7–8"
    text = "1–9, 11–14, 16–17, 20, 22–24, 26–28"
    lines = wrap_ranges(text, 16).split("\n")
    assert len(lines) == 3 and all(len(line) <= 16 for line in lines) and " ".join(lines) == text


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_every_operator_square_is_numbered_and_labels_do_not_collide(phase):
    chart = Lesson03Chart()
    view = lesson03_view("qwen3.8-27b", "h100-sxm", phase, 8192)
    chart.png(view)
    _fig, state = _cached(chart)
    assert sorted(view.op_numbers) == list(range(1, len(view.op_points) + 1))
    labels = [t for t in state["texts"] if t.get_text()]
    shown = set()
    for t in labels:
        for item in t.get_text().replace("\n", " ").split(", "):
            item = item.strip().rstrip(",")
            lo, _, hi = item.partition("–")
            shown.update(range(int(lo), int(hi or lo) + 1))
    assert shown == set(view.op_numbers)
    renderer = state["renderer"]
    boxes = [t.get_window_extent(renderer) for t in labels] + [state["label"].get_window_extent(renderer)]
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not boxes[i].overlaps(boxes[j]), (labels[i].get_text() if i < len(labels) else "step",)
    # the table's # column repeats the chart's numbers, in time-bound order
    numbers = [row[0] for row in view.numbered_rows if row[0] != NOT_ON_CHART]
    assert numbers == [str(n) for n in range(1, len(view.op_points) + 1)]


def test_place_labels_avoids_obstacles():
    placed = place_label_boxes([(100.0, 100.0)], [(40.0, 12.0)], [(50.0, 100.0, 100.0, 140.0)], np.empty((0, 2)),
                          (0.0, 0.0, 400.0, 400.0))
    x0, y0, x1, y1 = placed[0][4]
    assert not (x0 < 100 and x1 > 50 and y0 < 140 and y1 > 100)


def test_lesson03_times_read_in_their_own_unit():
    view = lesson03_view("qwen3.8-27b", "h100-sxm", "decode", 8192)
    times = [row[-1] for row in view.numbered_rows]
    pattern = re.compile(r"^(\d[\d,]*(\.\d+)? (ns|µs|ms|s|min|h|days)|0 s)$")
    assert all(pattern.match(t) for t in times), times
    assert not any(t.startswith("0.") and not t.endswith(" ns") for t in times)  # never "0.00611 µs"
    assert any(t.endswith(" ns") for t in times)  # the tiny ones (final norm, embedding gather)
    assert "ms" in view.summary and not SCIENTIFIC.search(view.summary)


def test_lesson03_table_is_html_inside_the_frame():
    chart = Lesson03Chart()
    view = lesson03_view("qwen3.8-27b", "h100-sxm", "prefill", 8192)
    frame = lesson03_frame(view, chart)
    assert frame.table_html.count("<table") == 2 and "<details" in frame.table_html  # top rows, then the rest
    assert frame.table_html.count("<tr>") == len(view.numbered_rows) + 2  # + two header rows
    assert "<th>#</th>" in frame.table_html
    shown = frame_html(frame)
    assert shown.index("<img") < shown.index("<table")


# ---- the widgets ---------------------------------------------------------------------------------



@pytest.mark.parametrize("make, description, value", [
    (lesson01_dashboard, "batch", 64),
    (lesson01_dashboard, "dtype", "fp8"),
    (lesson02_dashboard, "FLOP/byte", 1000.0),
    (lesson03_dashboard, "tokens", 512),
    (lesson03_dashboard, "phase", "decode"),
])
def test_dashboard_panel_changes_with_a_control(make, description, value):
    ui = make()
    before = ui.panel.value
    assert 'class="rl-chart"' in before and 'alt="' in before and "rl-verdict" in before
    control = ui.by_label[description]
    assert control.style.description_width == "initial"  # the label sits on the control's line
    control.value = value
    assert ui.panel.value != before and 'alt="' in ui.panel.value
    assert "could not be drawn" not in ui.panel.value


# ---- review fixes: lesson 1 -----------------------------------------------------------------------

def test_lesson01_label_covers_no_part_of_the_arrow():
    chart = Lesson01Chart()
    view = lesson01_view("llama-3.1-8b", "b200", "fp4", "prefill", 512, 131072)
    chart.png(view)
    _fig, state = _cached(chart)
    ax, renderer = state["ax"], state["renderer"]
    box = state["label"].get_window_extent(renderer)
    g = ax.transData.transform((state["ghost"].get_xdata()[0], state["ghost"].get_ydata()[0]))
    p = ax.transData.transform((view.intensity_flop_per_byte, view.attainable_flops_per_s / 1e12))
    for f in np.linspace(0, 1, 50):
        x, y = g + f * (p - g)
        assert not (box.x0 < x < box.x1 and box.y0 < y < box.y1)
    ridge = ax.transData.transform((view.ridge_point_flop_per_byte, view.roof.peak_flops_per_s / 1e12))
    assert not (box.x0 < ridge[0] < box.x1 and box.y0 < ridge[1] < box.y1)


def test_lesson01_no_batching_advice_when_batch_no_longer_helps_and_says_it_does_not_fit():
    from roofline_lessons.core.memory import usable_capacity_bytes
    from roofline_lessons.core.placement import place
    from roofline_lessons.core.units import binary
    args = ("qwen3.8-27b", "h100-sxm", "fp8", "decode", 512, 131072)
    v = lesson01_view(*args)
    assert v.bound == "memory" and "batching," not in v.verdict and "(batching" not in v.verdict
    p = place("qwen3.8-27b", "h100-sxm", phase="decode", batch=512, context_tokens=131072, compute_dtype="fp8",
              weights_dtype="fp8", activations_dtype="fp8", kv_dtype="fp8", attention_compute_dtype="fp8")
    assert not p.fits_in_memory
    assert f"need {binary(float(p.memory_required_bytes))} of the {binary(usable_capacity_bytes('h100-sxm'))}" \
        in v.verdict
    small = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 8192)
    assert "batching" in small.verdict and "not fit" not in small.verdict.lower()


def test_lesson01_reference_legend_names_the_ridge_unit_and_fastest_format_is_not_advised():
    chart = Lesson01Chart()
    view = lesson01_view("llama-3.1-8b", "b200", "fp4", "prefill", 1, 8192)
    chart.png(view)
    fig, _ = _cached(chart)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    ref = [t for t in legend if t.startswith("BF16 roof")]
    assert ref and ref[0].endswith("FLOP/byte")
    assert view.bound == "compute" and "a faster format" not in view.verdict
    slower = lesson01_view("llama-3.1-8b", "b200", "bf16", "prefill", 1, 8192)
    assert slower.bound == "compute" and "a faster format" in slower.verdict


# ---- review fixes: lesson 3 -----------------------------------------------------------------------

def test_lesson03_bracket_is_the_binding_term():
    from roofline_lessons.core.placement import place
    from roofline_lessons.core.units import si
    v = lesson03_view("qwen3.8-27b", "h100-sxm", "prefill", 128)
    p = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=128)
    assert p.lower_bound_roof == "memory"
    assert f"(lower bound: {si(float(p.cost.compulsory_bytes), 'B')} at {si(p.bandwidth_bytes_per_s, 'B/s')})" \
        in v.summary
    assert "TFLOP at" not in v.summary
    c = lesson03_view("qwen3.8-27b", "h100-sxm", "prefill", 8192)
    q = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192)
    assert q.lower_bound_roof == "compute" and f"(lower bound: {si(float(q.cost.flops), 'FLOP')} at" in c.summary


def test_lesson03_summary_quotes_the_bound_with_the_estimate_beside_it():
    from roofline_lessons.core.placement import place
    from roofline_lessons.core.units import duration
    v = lesson03_view("llama-3.1-8b", "h100-sxm", "prefill", 384)
    p = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=384)
    assert (p.lower_bound_roof, p.bound) == ("compute", "memory")  # the two disagree on the roof here
    assert f"≥ {duration(float(p.time_lower_bound_s))}" in v.summary
    assert f"estimate (operators unfused, each one's activations through HBM) is " \
           f"{duration(float(p.time_estimate_s))}, memory-bound" in v.summary


@pytest.mark.parametrize("args", [("qwen3.8-27b", "h100-sxm", "prefill", 128),
                                  ("llama-3.1-70b", "tpu-v5e", "prefill", 131072)])
def test_lesson03_far_labels_have_leaders_and_leaders_cross_no_label(args):
    chart = Lesson03Chart()
    view = lesson03_view(*args)
    chart.png(view)
    _fig, state = _cached(chart)
    ax, renderer = state["ax"], state["renderer"]
    step_box = state["label"].get_window_extent(renderer)
    sx, sy = ax.transData.transform((view.step_intensity, view.step_attainable_flops_per_s / 1e12))
    ex, ey = min(max(sx, step_box.x0), step_box.x1), min(max(sy, step_box.y0), step_box.y1)
    if np.hypot(ex - sx, ey - sy) >= 14:
        xs, ys = state["step_leader"].get_data()
        assert len(xs) == 2 and np.hypot(xs[0] - sx, ys[0] - sy) < 1
    boxes = [step_box] + [t.get_window_extent(renderer) for t in state["texts"] if t.get_text()]
    for leader, text in zip(state["leaders"], state["texts"]):
        xs, ys = leader.get_data()
        if not len(xs) or not text.get_text():
            continue
        own = text.get_window_extent(renderer)
        for f in np.linspace(0.05, 0.95, 30):
            x, y = xs[0] + f * (xs[1] - xs[0]), ys[0] + f * (ys[1] - ys[0])
            for b in boxes:
                if b is not own and b.bounds != own.bounds:
                    assert not (b.x0 < x < b.x1 and b.y0 < y < b.y1), text.get_text()


def test_lesson03_context_beyond_the_model_is_a_what_if():
    v = lesson03_view("llama-2-7b", "l4", "prefill", 131072)
    assert "what-if" in v.summary and f"{4096:,}" in v.summary
    assert "what-if" not in lesson03_view("llama-2-7b", "l4", "prefill", 2048).summary


def test_lesson03_alt_says_when_number_one_is_tied():
    v = lesson03_view("qwen3.8-27b", "h100-sxm", "decode", 128)
    times = dict(zip(v.op_numbers, v.op_times_s))
    tied = [n for n in times if n != 1 and np.isclose(times[n], times[1], rtol=1e-6)]
    assert tied
    alt = lesson03_frame(v, Lesson03Chart()).alt
    assert "tied with" in alt and "the largest time bound" not in alt


def test_lesson01_does_not_fit_names_the_recurrent_state_when_it_counts():
    """Issue 25 (nit): the footprint of a hybrid also holds Gated DeltaNet state; the verdict says so."""
    hybrid = lesson01_view("qwen3.8-27b", "l4", "bf16", "decode", 64, 32768).verdict
    plain = lesson01_view("llama-3.1-8b", "l4", "bf16", "decode", 64, 32768).verdict
    assert "Does not fit: weights, KV cache and recurrent state need" in hybrid
    assert "Does not fit: weights and KV cache need" in plain


@pytest.mark.parametrize("part, dtype, phase", [("b200", "fp8", "prefill"), ("b200", "fp4", "prefill"),
                                                ("h100-sxm", "bf16", "decode"), ("h200", "fp8", "prefill")])
def test_lesson01_legend_never_covers_a_ridge_label(part, dtype, phase):
    """Issue 26, item 11: on a B200 in FP8 the legend covered 'ridge 562'; it is wrapped when it would."""
    from roofline_lessons.viz.dashboards.lesson01 import _covers_ridge_label, lesson01_draw, lesson01_view

    fig = lesson01_draw(lesson01_view("qwen3.8-27b", part, dtype, phase, 1, 4096))
    ax = fig.axes[0]
    fig.canvas.draw()
    assert not _covers_ridge_label(ax, ax.get_legend())


# ---- on the shared base (issue 27): a figure per key, labels, topics ------------------------------

def test_a_figure_per_key_is_built_once_and_restored_exactly():
    chart = Lesson02Chart()
    four = lesson02_view(PARTS, "bf16", 32.0)
    first = chart.png(four)
    chart.png(lesson02_view(PARTS, "bf16", 300.0))  # only the line and points move: the same figure
    assert chart.figures.misses == 1 and chart._shared is chart.shared
    wide = chart.png(lesson02_view(PARTS + ("a100-80gb", "l4"), "bf16", 32.0))  # a legend beside: a wider figure
    assert chart.figures.misses == 2 and chart.last_figure.get_figwidth() > 7.5
    assert chart.png(four) == first and chart.figures.misses == 2  # back to a kept figure, pixel for pixel
    assert wide != first


def test_lesson01_dtype_round_trip_redraws_the_same_chart():
    chart = Lesson01Chart()
    bf16 = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 8192)
    first = chart.png(bf16)
    chart.png(lesson01_view("qwen3.8-27b", "h100-sxm", "fp8", "decode", 1, 8192))
    assert chart.figures.misses == 2 and chart.png(bf16) == first and chart.figures.misses == 2


@pytest.mark.parametrize("args, words", [((("h100-sxm",), "fp7", 1.0), "dtype must be one of"),
                                         ((("nope",), "bf16", 1.0), "unknown hardware id 'nope'")])
def test_lesson02_bad_input_is_an_error_view_not_an_exception(args, words):
    view = lesson02_view(*args)
    assert view.error and words in view.error and view.text == view.error
    frame = lesson02_frame(view, Lesson02Chart())
    assert frame.error and frame.png is None and words in frame.verdict
    assert Lesson02Chart().png(view).startswith(b"\x89PNG")  # a picture of the message, never a raise


def test_an_error_view_of_lesson03_is_a_picture_of_its_message():
    view = lesson03_view("qwen3.8-27b", "nope", "decode", 10)
    chart = Lesson03Chart()
    assert chart.png(view).startswith(b"\x89PNG") and chart.figures.misses == 0


def test_clusters_round_or_square_and_ring_sizes():
    from roofline_lessons.viz.labels import clusters, ring_sizes_pt

    pts = [(0.0, 0.0), (7.0, 7.0), (100.0, 0.0), (104.0, 0.0)]
    assert clusters(pts, 9.0) == [[0], [1], [2, 3]]  # 9.9 px apart: not within 9 px
    assert clusters(pts, 9.0, square=True) == [[0, 1], [2, 3]]  # within 9 px along x and along y
    assert clusters([], 9.0) == []
    assert ring_sizes_pt(pts, 9.0, 10, 20, 6) == [20.0, 6.0, 20.0, 6.0]
    assert ring_sizes_pt([(0, 0), (50, 50)], 9.0, 10, 20, 6) == [10.0, 10.0]


def test_leader_only_for_a_far_label():
    from matplotlib.lines import Line2D

    from roofline_lessons.viz.labels import leader_to

    leader = Line2D([], [])
    assert leader_to(leader, (0.0, 0.0), (5.0, -2.0, 40.0, 10.0), 14.0) == []  # 5 px away: no line
    assert leader_to(leader, (0.0, 0.0), (30.0, 20.0, 60.0, 30.0), 14.0) == [leader]
    xs, ys = leader.get_data()
    assert list(xs) == [0.0, 30.0] and list(ys) == [0.0, 20.0]  # to the box's nearest corner


def test_one_format_formats_alike_and_their_reuse():
    from roofline_lessons.topics.levers import formats_alike, one_format_placement

    args = ("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 8192)
    alike = formats_alike(*args)
    assert "fp16" in alike and "fp8" not in alike and "bf16" not in alike
    assert formats_alike(*args, placed={"bf16": one_format_placement(*args)}) == alike
    fp8 = one_format_placement("qwen3.8-27b", "h100-sxm", "fp8", "decode", 1, 8192)
    assert fp8.intensity > one_format_placement(*args).intensity  # fewer bytes: the point moves right


def test_op_points_are_numbered_in_time_bound_order():
    from roofline_lessons.core.placement import place
    from roofline_lessons.topics.reports import numbered_op_rows, op_points

    p = place("qwen3.8-27b", "h100-sxm", phase="decode", batch=1, context_tokens=8192)
    points = op_points(p)
    number_of, rows = numbered_op_rows(p, [name for name, *_ in points], NOT_ON_CHART)
    assert sorted(number_of.values()) == list(range(1, len(points) + 1))
    times = [t for _n, t in sorted((number_of[name], t) for name, *_, t in points)]
    assert times == sorted(times, reverse=True)
    assert all(x > 0 and 0 < y <= p.peak_flops_per_s for _name, x, y, _t in points)
    assert {row[1] for row in rows if row[0] == NOT_ON_CHART}.isdisjoint(number_of)
    assert len(rows) == len(p.cost.ops) > len(points)  # data moves are in the table, not on the chart


def test_parts_at_intensity_skips_a_part_without_the_rate():
    from roofline_lessons.topics.datasheets import parts_at_intensity

    roofs, found = parts_at_intensity(("h100-sxm", "a100-80gb"), "fp8", 400.0)
    assert [r.part_id for r in roofs] == ["h100-sxm"] and found[1].ridge_point_flop_per_byte is None
    h100 = found[0]
    assert h100.regime(400.0) == "memory-bound" and h100.bound == "memory"
    assert h100.attainable_flops_per_s == pytest.approx(400.0 * roofs[0].bandwidth_bytes_per_s)
