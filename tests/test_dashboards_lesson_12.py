"""Lesson 12 dashboard and charts: the frame (verdict, chart, alt text, table), what the weight and KV
formats do to the step's bytes, the error views, the drawing (type size, labels, headings) and the
widgets; the KV-against-context and byte-budget charts of viz.plots. Every expected number comes
from the package (core), never typed here."""

from __future__ import annotations

import html
import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from chart_checks import visible_texts  # noqa: E402

from roofline_lessons.core.dtypes import weight_bytes_per_element  # noqa: E402
from roofline_lessons.core.memory import kv_cache_bytes_per_sequence, state_bytes_per_sequence, weight_bytes  # noqa: E402
from roofline_lessons.core.models import get_model  # noqa: E402
from roofline_lessons.core.placement import place  # noqa: E402
from roofline_lessons.core.units import binary, count, duration, num, si  # noqa: E402
from roofline_lessons.viz import plots  # noqa: E402
from roofline_lessons.viz.charts import MIN_FONT_PT  # noqa: E402
from roofline_lessons.viz.dashboards import lesson12 as l12  # noqa: E402
from roofline_lessons.viz.panel import frame_html  # noqa: E402
from roofline_lessons.viz.display import alt_of  # noqa: E402

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")
DEFAULT = ("llama-3.1-70b", "h100-sxm", 4096)
INT4 = ("llama-3.1-70b", "h100-sxm", 4096, "int4")
# the controls' extremes: 1K and 1M tokens, batch 1 and 256, the widest and narrowest formats, MLA,
# sliding windows, a hybrid, the slowest and the fastest part
EXTREMES = [
    (m, p, c, w, k, b)
    for m, p, w in (("llama-3.1-70b", "h100-sxm", "int4"), ("deepseek-v3", "b200", "fp4 W4A4"),
                    ("gemma-3-27b", "gb200", "fp4 (MXFP4, weight-only)"), ("qwen3.8-27b", "l4", "fp8 W8A8"),
                    ("llama-2-7b", "mi300x", "bf16"))
    for c in (l12.CONTEXT_CHOICES[0], l12.CONTEXT_CHOICES[-1]) for k in ("bf16", "int4")
    for b in (l12.BATCH_CHOICES[0], l12.BATCH_CHOICES[-1])
]


def drawn(setting, chart=None):
    chart = chart or l12.Lesson12Chart()
    view = l12.lesson12_view(*setting)
    assert view.error is None, view.error
    chart.png(view)
    return view, chart


# ---- the frame ----------------------------------------------------------------------------------

def test_frame_states_the_live_numbers():
    chart = l12.Lesson12Chart()
    view = l12.lesson12_view(*INT4, kv="int8", batch=16)
    pl = place("llama-3.1-70b", "h100-sxm", batch=16, context_tokens=4096, weights_dtype="int4", kv_dtype="int8")
    base = place("llama-3.1-70b", "h100-sxm", batch=16, context_tokens=4096)
    frame = l12.lesson12_frame(view, chart)
    assert not frame.error and frame.png[:8] == b"\x89PNG\r\n\x1a\n"
    step, total = duration(pl.time_estimate_s), si(pl.cost.bytes, "B")
    for said in (frame.verdict, frame.alt):
        assert step in said and total in said and si(base.cost.bytes, "B") in said
        assert not SCIENTIFIC.search(said), said
    assert si(pl.cost.weight_bytes, "B") in frame.verdict and si(pl.cost.kv_bytes, "B") in frame.verdict
    assert duration(pl.dequant_time_s) in frame.verdict and "hidden under" in frame.verdict
    assert num(float(pl.intensity)) in frame.alt and num(float(base.intensity)) in frame.alt
    assert binary(float(pl.memory_required_bytes)) in frame.verdict
    page = frame_html(frame)
    assert f'alt="{html.escape(frame.alt, quote=True)}"' in page
    assert "<table" in page and si(base.cost.bytes - pl.cost.bytes, "B") in page


def test_saved_bytes_split_into_weights_and_kv():
    view = l12.lesson12_view("llama-3.1-70b", "h100-sxm", 32768, "int4", "fp8", 8)
    mine = place("llama-3.1-70b", "h100-sxm", batch=8, context_tokens=32768, weights_dtype="int4", kv_dtype="fp8")
    base = place("llama-3.1-70b", "h100-sxm", batch=8, context_tokens=32768)
    assert view.bytes_by_kind["weights"] == pytest.approx(float(mine.cost.weight_bytes))
    assert view.bytes_by_kind["KV cache"] == pytest.approx(float(mine.cost.kv_bytes))
    assert view.baseline_bytes_by_kind["KV cache"] == pytest.approx(float(base.cost.kv_bytes))
    assert view.total_bytes == pytest.approx(float(mine.cost.bytes))
    assert si(float(base.cost.weight_bytes - mine.cost.weight_bytes), "B") in view.text
    assert si(float(base.cost.kv_bytes - mine.cost.kv_bytes), "B") in view.text
    assert duration(base.time_estimate_s) in view.text


def test_int4_cuts_linear_weights_and_keeps_embedding_and_lm_head_bf16():
    m = get_model("llama-3.1-70b")
    view = l12.lesson12_view(*INT4)
    assert view.stored_weight_bytes == pytest.approx(weight_bytes(m, "int4"))
    assert view.baseline_stored_weight_bytes == pytest.approx(weight_bytes(m, "bf16"))
    kept = 2 * m.vocab_size * m.hidden_size * 2.0  # embedding and lm_head (untied), BF16 bytes
    assert not m.tie_word_embeddings
    ratio = (view.stored_weight_bytes - kept) / (view.baseline_stored_weight_bytes - kept)
    assert ratio == pytest.approx(weight_bytes_per_element("int4") / 2, rel=2e-3)  # norms stay BF16: a sliver
    by_op = {op.name: op for op in view.placement.cost.ops}
    assert by_op["embed_tokens"].bytes_per_weight == 2.0 and by_op["lm_head"].bytes_per_weight == 2.0
    linear = [op for op in view.placement.cost.ops if op.weight_matmul_flops and op.block not in ("head",)]
    assert linear and all(op.bytes_per_weight == weight_bytes_per_element("int4") for op in linear)
    assert "embedding, the lm_head and the norms stay BF16" in view.text
    assert num(weight_bytes_per_element("int4")) in view.text


def test_weight_only_formats_count_the_dequant_and_w4a4_does_not():
    wo = l12.lesson12_view("llama-3.1-70b", "b200", 4096, "fp4 (MXFP4, weight-only)", batch=256)
    w4a4 = l12.lesson12_view("llama-3.1-70b", "b200", 4096, "fp4 W4A4", batch=256)
    assert wo.weight_only and wo.dequant_s > 0 and wo.compute_format == "bf16"
    assert not w4a4.weight_only and w4a4.dequant_s == 0 and w4a4.compute_format == "fp4"
    pl = place("llama-3.1-70b", "b200", batch=256, context_tokens=4096, weights_dtype="fp4")
    assert wo.dequant_s == pytest.approx(float(pl.dequant_time_s))
    assert wo.dequant_hidden == (float(pl.compute_time_s) <= float(pl.memory_time_s))
    assert duration(pl.dequant_time_s) in wo.text
    assert "No dequant" not in w4a4.text and "Dequantising" not in w4a4.text
    assert "Dequantising" in wo.text


def test_the_view_reads_its_numbers_from_the_format_step_and_an_error_view_has_none():
    """The numbers are topics.shrinking.format_step's (the dashboard words and draws them); the view
    reads them as its own. An error view has no step: asking it for a number is an AttributeError."""
    import copy

    from roofline_lessons.topics.shrinking import format_step

    view = l12.lesson12_view("gemma-3-27b", "h100-sxm", 32768, "int4", "fp8", 8)
    step = format_step("gemma-3-27b", "h100-sxm", 32768, 8, "fp8", weights_dtype="int4")
    for name in ("total_bytes", "baseline_total_bytes", "step_s", "baseline_step_lower_bound_s", "intensity",
                 "achieved_flops_per_s", "memory_required_bytes", "kv_sliding_bytes_per_sequence",
                 "kv_cache_bytes_per_sequence", "dequant_s", "what_if", "warnings"):
        assert getattr(view, name) == getattr(step, name), name
    pl = place("gemma-3-27b", "h100-sxm", batch=8, context_tokens=32768, weights_dtype="int4", kv_dtype="fp8")
    assert view.step_s == float(pl.time_estimate_s) and view.bound == str(pl.bound)
    assert view.achieved_flops_per_s == float(pl.cost.flops) / float(pl.time_estimate_s)
    assert copy.copy(view).text == view.text and copy.copy(view).step_s == view.step_s
    error = l12.lesson12_view("llama-3.1-70b", "h100-sxm", 4096, "fp4 W4A4")
    assert error.step is None and error.error
    with pytest.raises(AttributeError):
        error.step_s  # noqa: B018


def test_w4a4_on_h100_is_an_error_view_naming_the_missing_fp4_rate():
    view = l12.lesson12_view("llama-3.1-70b", "h100-sxm", 4096, "fp4 W4A4")
    assert view.error is not None and "fp4" in view.error and "h100-sxm" in view.error
    frame = l12.lesson12_frame(view, l12.Lesson12Chart())
    assert frame.error and frame.png is None and frame.alt == ""
    assert frame.verdict == view.error
    page = frame_html(frame)
    assert "<img" not in page and page.count(html.escape(view.error)) == 1


@pytest.mark.parametrize("args, named", [
    (("llama-3.1-70b", "h100-sxm", 4096, "int3"), "weights must be one of"),
    (("llama-3.1-70b", "h100-sxm", 4096, "bf16", "fp16x"), "kv must be one of"),
    (("llama-3.1-70b", "h100-sxm", -1), "context_tokens"),
    (("llama-3.1-70b", "h100-sxm", 4096, "bf16", "bf16", 0), "batch"),
    (("no-such-model", "h100-sxm", 4096), "no-such-model"),
    (("llama-3.1-70b", "a100-80gb", 4096, "fp8 W8A8"), "fp8"),  # W8A8 needs an fp8 rate
])
def test_bad_settings_are_error_views_naming_the_value(args, named):
    view = l12.lesson12_view(*args)
    assert view.error is not None and named in view.error
    assert l12.lesson12_frame(view, l12.Lesson12Chart()).png is None


def test_mla_model_shows_its_latent_kv():
    m = get_model("deepseek-v3")
    view = l12.lesson12_view("deepseek-v3", "b200", 32768, "bf16", "bf16", 4)
    assert view.kv_bytes_per_token == pytest.approx(m.kv_bytes_per_token("bf16"))
    per_head_kv = 2 * m.num_attention_heads * m.v_head_dim * 2.0 * m.num_hidden_layers  # what per-head K, V would cost
    assert view.kv_bytes_per_token < per_head_kv / 10
    assert "latent" in view.text and count(m.mla_cache_elements_per_token) in view.text
    assert binary(m.kv_bytes_per_token("bf16")) in view.text and "absorbed" in view.text
    assert view.kv_cache_bytes_per_sequence == pytest.approx(kv_cache_bytes_per_sequence(m, 32769, "bf16"))
    int4 = l12.lesson12_view("deepseek-v3", "b200", 32768, "bf16", "int4", 4)
    assert binary(m.kv_bytes_per_token("int4")) in int4.text


def test_sliding_window_kv_stops_growing_past_its_window_for_the_local_layers():
    m = get_model("gemma-3-27b")
    short, long_ = (l12.lesson12_view("gemma-3-27b", "h100-sxm", c) for c in (2048, 131072))
    assert short.kv_sliding_bytes_per_sequence == long_.kv_sliding_bytes_per_sequence > 0
    assert long_.kv_growing_bytes_per_sequence > short.kv_growing_bytes_per_sequence
    per_layer = m.kv_bytes_per_token_per_layer("bf16")
    assert long_.kv_growing_bytes_per_sequence - short.kv_growing_bytes_per_sequence == pytest.approx(
        m.num_full_attention_layers * per_layer * (131072 - 2048))
    for v, c in ((short, 2048), (long_, 131072)):
        assert v.kv_sliding_bytes_per_sequence + v.kv_growing_bytes_per_sequence == pytest.approx(
            kv_cache_bytes_per_sequence(m, c + 1, "bf16"))
    assert count(m.sliding_window) in short.text and f"{m.num_sliding_attention_layers} of its" in short.text
    # below the window every layer still grows
    tiny = l12.lesson12_view("gemma-3-27b", "h100-sxm", m.sliding_window // 2)
    assert tiny.kv_sliding_bytes_per_sequence < short.kv_sliding_bytes_per_sequence


def test_hybrid_model_shows_its_state_bytes():
    view = l12.lesson12_view("qwen3.8-27b", "b200", 32768, "int4", "bf16", 4)
    assert view.bytes_by_kind["state"] > 0
    assert view.state_bytes_per_sequence == pytest.approx(state_bytes_per_sequence("qwen3.8-27b"))
    assert "Gated DeltaNet" in view.text and "state" in view.text


def test_context_past_max_is_a_what_if_not_an_error():
    m = get_model("llama-3.1-70b")
    view = l12.lesson12_view("llama-3.1-70b", "h100-sxm", l12.CONTEXT_CHOICES[-1])
    assert view.error is None and view.what_if
    assert "what-if" in view.text and "what-if" in view.heading
    # the limit itself is said once, in the note under the verdict, not twice
    notes = " ".join(view.warnings)
    assert count(m.max_context_tokens) in notes and count(m.max_context_tokens) not in view.text
    inside = l12.lesson12_view("llama-3.1-70b", "h100-sxm", 65536)
    assert not inside.what_if and "what-if" not in inside.text


# ---- the drawing --------------------------------------------------------------------------------

@pytest.mark.parametrize("setting", EXTREMES[::3] + [EXTREMES[-1]])
def test_every_text_is_readable_and_inside_the_figure(setting):
    view, chart = drawn(setting)
    fig = chart.last_figure
    renderer = fig.canvas.get_renderer()
    small = [(t.get_text(), t.get_fontsize()) for t in visible_texts(fig) if t.get_fontsize() < MIN_FONT_PT]
    assert not small, small
    W, H = fig.canvas.get_width_height()
    for t in visible_texts(fig):
        box = t.get_window_extent(renderer)
        assert box.x0 >= -1 and box.x1 <= W + 1 and box.y0 >= -1 and box.y1 <= H + 1, (t.get_text(), box)


@pytest.mark.parametrize("setting", EXTREMES[::2])
def test_point_labels_stay_inside_the_roofline_and_off_its_legend(setting):
    view, chart = drawn(setting)
    shared = chart._shared
    renderer = shared["fig"].canvas.get_renderer()
    ax = shared["ax"]
    frame = ax.get_window_extent(renderer)
    legend = ax.get_legend().get_window_extent(renderer)
    labels = [shared["moving"]["label"]]
    if not (view.weights == "bf16" and view.kv == "bf16"):
        labels.append(shared["moving"]["base_label"])
    boxes = [lab.get_window_extent(renderer) for lab in labels]
    for box in boxes:
        assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1 and frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1
        assert not box.overlaps(legend), setting
    if len(boxes) == 2:
        assert not boxes[0].overlaps(boxes[1]), setting


def test_the_longest_heading_wraps_inside_the_figure():
    view, chart = drawn(("gemma-3-27b", "gb200", l12.CONTEXT_CHOICES[-1], "bf16", "bf16", 256))
    fig = chart.last_figure
    heading = chart._shared["heading"]
    assert heading.get_text() == l12._heading_text(view) and "\n" in heading.get_text()
    box = heading.get_window_extent(fig.canvas.get_renderer())
    assert box.x0 >= 0 and box.x1 <= fig.canvas.get_width_height()[0]
    titles = [a.title.get_window_extent(fig.canvas.get_renderer()) for a in fig.axes]
    assert not any(box.overlaps(t) for t in titles)


def test_the_roofline_is_tall_enough_for_its_slope_and_holds_every_roof():
    """Issue 26 item 15: six decades squeezed into about 170 px made the slope-one HBM roof look flat. Now the
    roofline axes are at least 300 px tall at the chart's dpi, a decade up at least 45 % of a decade across, and
    the fewer decades still hold every part's ridge and compute roof (FP4 included) and every extreme setting's
    points; the bar panel keeps the same height."""
    import math

    from roofline_lessons.core.errors import RooflineInputError
    from roofline_lessons.core.hardware import get_part, list_parts
    from roofline_lessons.viz.fastfig import CHART_DPI

    view, chart = drawn(DEFAULT)
    fig, ax, bar = chart._shared["fig"], chart._shared["ax"], chart._shared["bar"]
    assert fig.dpi == CHART_DPI
    renderer = fig.canvas.get_renderer()
    box, bar_box = ax.get_window_extent(renderer), bar.get_window_extent(renderer)
    assert box.height >= 300 and bar_box.height >= 300
    up = box.height / math.log10(l12.Y_RANGE_TFLOPS[1] / l12.Y_RANGE_TFLOPS[0])
    across = box.width / math.log10(l12.X_RANGE[1] / l12.X_RANGE[0])
    assert up >= 0.45 * across, (up, across)
    for part in list_parts():
        p = get_part(part)
        for fmt in ("bf16", "fp8", "fp4"):
            try:
                peak = p.peak_flops_per_s(fmt)
            except RooflineInputError:  # the part has no rate in this format
                continue
            ridge = peak / p.memory_bandwidth_bytes_per_s
            assert l12.X_RANGE[0] < ridge < l12.X_RANGE[1], (part, fmt)
            assert l12.Y_RANGE_TFLOPS[0] < peak / 1e12 < l12.Y_RANGE_TFLOPS[1] / 2, (part, fmt)  # room for its label
    for setting in EXTREMES:
        v = l12.lesson12_view(*setting)
        for x, y in ((v.intensity, v.achieved_flops_per_s), (v.baseline_intensity, v.baseline_achieved_flops_per_s)):
            assert l12.X_RANGE[0] < x < l12.X_RANGE[1] and l12.Y_RANGE_TFLOPS[0] < y / 1e12 < l12.Y_RANGE_TFLOPS[1]


def test_bars_are_shares_of_the_bf16_step():
    view, chart = drawn(("llama-3.1-70b", "h100-sxm", 4096, "int4", "int4", 64))
    rects = [r for r in chart._shared["moving"]["rects"] if r.get_visible()]
    base = [r for r in rects if r.get_x() < 0.5]
    mine = [r for r in rects if r.get_x() > 0.5]
    assert sum(r.get_height() for r in base) == pytest.approx(100.0)
    assert sum(r.get_height() for r in mine) == pytest.approx(100.0 * view.total_bytes / view.baseline_total_bytes)
    tops = [t.get_text() for t in chart._shared["moving"]["tops"]]
    assert si(view.baseline_total_bytes, "B") in tops[0] and si(view.total_bytes, "B") in tops[1]
    assert duration(view.step_s) in tops[1]


def test_a_move_reuses_the_part_layer_and_a_new_format_draws_one():
    chart = l12.Lesson12Chart()
    drawn(DEFAULT, chart)
    misses = chart.layer_misses
    for b in l12.BATCH_CHOICES:
        drawn((*DEFAULT, "int4", "int8", b), chart)
    assert chart.layer_misses == misses  # same part, same matmul format, same heading
    drawn((*DEFAULT, "fp8 W8A8"), chart)
    assert chart.layer_misses > misses
    # back to the first: restored, and the roofline's title says bf16 again
    before = chart.layer_misses
    drawn(DEFAULT, chart)
    assert chart.layer_misses == before and "bf16 matmuls" in chart._shared["title"].get_text()


# ---- the widgets --------------------------------------------------------------------------------

def test_dashboard_panel_follows_every_control(capsys):
    ui = l12.lesson12_dashboard()
    assert set(ui.by_label) == {"model", "part", "context (tokens)", "weights", "KV cache", "batch"}
    for w in ui.by_label.values():
        assert w.style.description_width == "initial"
    assert ui.by_label["batch"].continuous_update is False
    assert ui.by_label["context (tokens)"].continuous_update is False
    assert [v for _, v in ui.by_label["context (tokens)"].options] == list(l12.CONTEXT_CHOICES)
    before = ui.panel.value
    assert "<img" in before and 'alt="' in before
    moves = {"batch": 256, "context (tokens)": 2 ** 20, "weights": "int4", "KV cache": "fp8", "part": "b200",
             "model": "deepseek-v3"}
    for label, value in moves.items():
        shown = ui.panel.value
        ui.by_label[label].value = value
        assert ui.panel.value != shown, label
        assert "<img" in ui.panel.value and "rl-verdict" in ui.panel.value
    view = l12.lesson12_view("deepseek-v3", "b200", 2 ** 20, "int4", "fp8", 256)
    assert html.escape(view.text) in ui.panel.value
    ui.by_label["weights"].value = "fp4 W4A4"
    assert "<img" in ui.panel.value
    ui.by_label["part"].value = "h100-sxm"  # no fp4 rate: the error, no image
    assert "<img" not in ui.panel.value and "fp4" in ui.panel.value
    capsys.readouterr()


# ---- the notebook charts (viz.plots) ------------------------------------------------------------

from roofline_lessons.topics.shrinking import KvCurve  # noqa: E402  (curves built by hand below)


CONTEXTS = 2.0 ** np.arange(10, 21)


def _curve(model, kind):
    m = get_model(model) if isinstance(model, str) else model
    return KvCurve(m.name, CONTEXTS, kv_cache_bytes_per_sequence(m, CONTEXTS), state_bytes_per_sequence(m),
                   m.max_context_tokens if m.max_context_tokens < CONTEXTS[-1] else None, kind)


def _curves():
    import dataclasses

    mqa = dataclasses.replace(get_model("llama-3.1-8b"), id="llama-3.1-8b-mqa-what-if",
                              name="Llama-3.1-8B MQA (what-if)", num_key_value_heads=1)
    return (_curve("llama-3.1-70b", "GQA"), _curve(mqa, "MQA"), _curve("deepseek-v3", "MLA"),
            _curve("gemma-3-27b", "sliding window"), _curve("gpt-oss-120b", "sliding window"),
            _curve("qwen3.8-27b", "hybrid linear"))


def _curve_lines(fig):
    """Every drawn curve piece of every panel (not the grey reference repeated for scale, not a state band)."""
    return [ln for ax in fig.axes for ln in ax.get_lines()
            if len(ln.get_xdata()) > 1 and ln.get_gid() != "kv-reference" and ln.get_alpha() is None]


def test_kv_chart_draws_past_max_context_dotted_and_no_curve_dotted_inside_it():
    curves = _curves()
    fig = plots.kv_bytes_vs_context_chart(curves)
    lines = _curve_lines(fig)
    dotted = [ln for ln in lines if ln.get_linestyle() == ":"]
    solid = [ln for ln in lines if ln.get_linestyle() != ":" and ln.get_alpha() is None]
    assert len(dotted) == sum(c.beyond_limit_from is not None for c in curves)
    for c in curves:
        if c.beyond_limit_from is None:
            continue
        # the dotted part starts at the last context inside the limit, the solid part ends there
        starts = [float(ln.get_xdata()[0]) for ln in dotted]
        inside = float(c.context_tokens[c.context_tokens <= c.beyond_limit_from][-1])
        assert inside in starts
    assert all(float(np.max(ln.get_xdata())) <= max(c.beyond_limit_from or np.inf for c in curves) for ln in solid)
    alt = alt_of(fig)
    assert "what-if" in alt and count(get_model("llama-3.1-70b").max_context_tokens) in alt


def test_kv_chart_states_32k_bytes_and_the_smallest():
    curves = _curves()
    fig = plots.kv_bytes_vs_context_chart(curves)
    alt = alt_of(fig)
    at = {c.label: float(c.kv_bytes[list(c.context_tokens).index(32768)]) for c in curves}
    for label, value in at.items():
        assert f"{label}" in alt and binary(value) in alt
    smallest = min(at, key=at.get)
    assert f"Smallest there: {smallest}" in alt
    state = curves[-1].state_bytes
    assert state > 0 and binary(state) in alt and "state" in alt
    # the state is its own flat line at its bytes, in the panel of its model
    flat = [ax for ax in fig.axes for ln in ax.get_lines() if np.allclose(ln.get_ydata(), state)]
    assert len(flat) == 1 and flat[0].get_title().startswith("Linear-attention")
    assert not SCIENTIFIC.search(alt)
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert any("GiB" in t for t in ticks) and any("MiB" in t for t in ticks)


def _legend_names(ax):
    return [t.get_text().replace("\n", " ") for t in ax.get_legend().get_texts()]


def test_kv_chart_has_one_panel_per_idea_on_shared_axes():
    """Issue 26 item 15: seven curves and a state band on one axes were too many, and DeepSeek-V3's MLA line lay
    on Qwen3.8-27B's; one panel per idea (fewer KV heads, one latent, windows, linear-attention layers), the same
    axes in each, the first GQA curve repeated in grey for scale."""
    from roofline_lessons.topics.shrinking import kv_curves

    curves = kv_curves(contexts=[2 ** k for k in range(8, 21)])
    fig = plots.kv_bytes_vs_context_chart(curves)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [t for _, t in plots.KV_PANELS]
    assert len({ax.get_xlim() for ax in fig.axes}) == 1 and len({ax.get_ylim() for ax in fig.axes}) == 1
    panel_of = {}
    for ax in fig.axes:
        for name in _legend_names(ax):
            if "for scale" not in name and not name.startswith("recurrent state"):
                panel_of[name.split(" (")[0]] = ax.get_title()
    assert panel_of[get_model("deepseek-v3").name] != panel_of[get_model("qwen3.8-27b").name]
    assert panel_of[get_model("llama-3.1-8b").name] == panel_of[get_model("llama-3.1-70b").name]
    assert {c.label.split(" (")[0] for c in curves} == set(panel_of)  # every curve drawn, once
    reference = [ax for ax in fig.axes if any(ln.get_gid() == "kv-reference" for ln in ax.get_lines())]
    assert len(reference) == len(fig.axes) - 1 and fig.axes[0] not in reference
    assert all(any(n.endswith("for scale") for n in _legend_names(ax)) for ax in reference)
    assert "for scale" in alt_of(fig) and "4 panels" in alt_of(fig)
    # every legend sits in an empty corner: no line passes under it
    assert not any(plots._legend_covers_a_line(ax, ax.get_legend()) for ax in fig.axes)
    # each panel's curves keep apart there: none coincides with another of its panel, and the legends say nothing
    assert "on the line of" not in " ".join(n for ax in fig.axes for n in _legend_names(ax))


def test_kv_chart_names_two_coinciding_lines_with_both_sizes():
    """A learner must never see one line and read two names: two curves of one panel within 25 % of each other
    everywhere are called out in the legend and the alt text, each with its bytes at 32K tokens."""
    base = _curve("llama-3.1-8b", "GQA")
    twin = KvCurve("Twin-8B (what-if)", base.context_tokens, base.kv_bytes * 1.1, 0.0, base.beyond_limit_from, "GQA")
    far = _curve("llama-3.1-70b", "GQA")
    fig = plots.kv_bytes_vs_context_chart([far, base, twin])
    names = _legend_names(fig.axes[0])
    at = list(base.context_tokens).index(32768)
    said = next(n for n in names if n.startswith("Twin-8B"))
    assert f"on the line of {base.label}" in said
    assert binary(base.kv_bytes[at]) in said and binary(twin.kv_bytes[at]) in said
    assert not any("on the line of" in n for n in names if not n.startswith("Twin-8B"))  # 70B keeps apart
    assert f"Twin-8B (what-if) lies on {base.label}" in alt_of(fig)


def test_kv_chart_accepts_curves_without_a_limit_and_rejects_bad_ones():
    c = _curve("llama-3.1-70b", "GQA")
    short = KvCurve(c.label, c.context_tokens[:5], c.kv_bytes[:5], 0.0, None, "GQA")
    fig = plots.kv_bytes_vs_context_chart([short])
    assert not [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == ":"]
    with pytest.raises(ValueError, match="at least one curve"):
        plots.kv_bytes_vs_context_chart([])
    with pytest.raises(TypeError, match="kv_bytes"):
        plots.kv_bytes_vs_context_chart([object()])


def test_byte_budget_chart_labels_fit_inside_the_axes_and_state_the_numbers():
    pls = [place("llama-3.1-70b", "h100-sxm", context_tokens=4096),
           place("llama-3.1-70b", "h100-sxm", context_tokens=4096, weights_dtype="int4", kv_dtype="int4", batch=64),
           place("qwen3.8-27b", "b200", context_tokens=32768, weights_dtype="fp4", compute_dtype="fp4", batch=16)]
    fig = plots.byte_budget_chart(pls, ["BF16", "int4 + int4 KV, batch 64", "Qwen3.8-27B W4A4"])
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    ends = [t for t in ax.texts if t.get_gid() == "step-bytes"]
    assert len(ends) == 3
    for t, pl in zip(ends, pls):
        assert t.get_window_extent(renderer).x1 <= frame.x1  # the longest bar's label is not clipped
        assert duration(pl.time_estimate_s) in t.get_text() and si(pl.cost.bytes, "B") in t.get_text()
    alt = alt_of(fig)
    assert si(pls[2].cost.state_bytes, "B") in alt and si(pls[1].cost.kv_bytes, "B") in alt
    assert "0.0 %" not in alt
    hatches = {p.get_hatch() for p in ax.patches}
    assert len(hatches) >= 3  # the kinds differ in grey too
    with pytest.raises(ValueError, match="labels"):
        plots.byte_budget_chart(pls, ["one"])


def test_experts_only_format_is_refused_on_a_dense_model():
    view = l12.lesson12_view("llama-3.1-8b", "h100-sxm", 4096, "MXFP4 experts only (gpt-oss release)")
    assert view.error and "llama-3.1-8b is dense" in view.error
    frame = l12.lesson12_frame(view, l12.Lesson12Chart())
    assert frame.error and frame.png is None and frame.verdict.count("dense") == 1
    moe = l12.lesson12_view("gpt-oss-120b", "h200", 4096, "MXFP4 experts only (gpt-oss release)")
    assert moe.error is None and moe.placement.workload.weight_recipe == "experts"


def test_short_contexts_are_offered_and_priced():
    assert l12.CONTEXT_CHOICES[0] == 128
    view = l12.lesson12_view("llama-3.1-70b", "b200", 128, "int4", "bf16", 256)
    assert view.error is None and view.context_tokens == 128


def test_weight_only_step_shows_the_roof_it_meets_and_says_the_rule():
    """With the dequant added in series the step's roof is its FLOPs ÷ compute time: drawn, and the verdict gives
    both figures: 'at least' only for the lower bound, the estimate named with its conventions."""
    chart = l12.Lesson12Chart()
    view = l12.lesson12_view("llama-3.1-70b", "b200", 1024, "int4", "bf16", 256)
    pl = place("llama-3.1-70b", "b200", batch=256, context_tokens=1024, weights_dtype="int4")
    assert view.dequant_s > 0 and view.effective_peak_flops_per_s < view.peak_flops_per_s
    frame = l12.lesson12_frame(view, chart)
    assert "conservative" in frame.verdict and f"takes at least {duration(pl.time_lower_bound_s)}" in frame.verdict
    assert f"about {duration(pl.time_estimate_s)} by the estimate" in frame.verdict
    assert view.step_lower_bound_s < view.step_s and view.lower_bound_roof == str(pl.lower_bound_roof)
    texts = [t.get_text() for t in chart.last_figure.findobj(matplotlib.text.Text)]
    assert any(t.startswith("roof with dequant in series") for t in texts)
    status = l12.status_text(view)
    assert f"≥ {duration(pl.time_lower_bound_s)}" in status and f"estimate {duration(pl.time_estimate_s)}" in status
    assert "lower bound" in view.table_html and "estimate" in view.table_html
    plain = l12.lesson12_view("llama-3.1-70b", "b200", 1024, "bf16", "bf16", 256)
    l12.lesson12_frame(plain, chart)
    base = place("llama-3.1-70b", "b200", batch=256, context_tokens=1024)
    assert f"takes at least {duration(base.time_lower_bound_s)}" in plain.text


def test_fp8_names_the_linear_layer_recipe():
    view = l12.lesson12_view("llama-3.1-70b", "h100-sxm", 4096, "fp8 W8A8")
    assert view.placement.workload.weight_recipe == "linear"
    assert "1 byte per weight" in view.text and "the embedding, the lm_head and the norms stay BF16" in view.text
