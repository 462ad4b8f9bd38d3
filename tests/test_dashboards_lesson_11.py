"""Lesson 11 dashboard and charts: the frame (verdict, chart, alt text, table), what the three-roof chart
and the time breakdown draw, the error views, speed and the widgets. Every expected number comes from
the package (core.placement.place), never typed here."""

from __future__ import annotations

import html
import io
import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from chart_checks import visible_texts  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from PIL import Image  # noqa: E402

from roofline_lessons.core.parallel import Parallelism  # noqa: E402
from roofline_lessons.core.placement import place  # noqa: E402
from roofline_lessons.core.units import binary, duration, num, percent  # noqa: E402
from roofline_lessons.viz import plots  # noqa: E402
from roofline_lessons.viz.charts import MIN_FONT_PT  # noqa: E402
from roofline_lessons.viz.dashboards import lesson11 as l11  # noqa: E402
from roofline_lessons.viz.panel import frame_html  # noqa: E402
from roofline_lessons.viz.display import alt_of  # noqa: E402

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")
DEFAULT = ("llama-3.1-70b", "h100-sxm", 2, 1)
ONE_CHIP = ("llama-3.1-70b", "h100-sxm", 1, 1)
L4_PREFILL = ("llama-3.1-70b", "l4", 8, 1, "prefill")
MOE_EP = ("qwen3-235b-a22b", "h200", 8, 64, "decode", 4096, 2048, "expert")
# the controls' extremes: 1 and 8 chips, batch 1 and 256, both phases, each strategy, overlap off and on
EXTREMES = [
    (m, p, n, b, ph, 4096, 2048, s, ov)
    for m, p, s in (("llama-3.1-70b", "h100-sxm", "tensor"), ("llama-3.1-70b", "l4", "pipeline"),
                    ("qwen3-235b-a22b", "h200", "expert"), ("qwen3.8-27b", "tpu-v5e", "tensor"))
    for n in (1, 8) for b in (l11.BATCH_CHOICES[0], l11.BATCH_CHOICES[-1]) for ph in l11.PHASES
    for ov in (False, True)
]


def placement_of(model, part, chips, batch, phase="decode", context_tokens=4096, prompt_tokens=2048,
                 strategy="tensor", overlap_comm=False):
    shape = {"context_tokens": context_tokens} if phase == "decode" else {"prompt_tokens": prompt_tokens}
    return place(model, part, parallelism=Parallelism(**{strategy: chips}, overlap_comm=overlap_comm), phase=phase,
                 batch=batch, **shape)


def drawn(setting, chart=None):
    chart = chart or l11.Lesson11Chart()
    view = l11.lesson11_view(*setting)
    assert view.error is None, view.error
    chart.png(view)
    return view, chart


# ---- the frame ----------------------------------------------------------------------------------

def test_frame_states_the_live_numbers_per_chip():
    view = l11.lesson11_view(*DEFAULT)
    frame = l11.lesson11_frame(view, l11.Lesson11Chart())
    assert frame.png[:4] == b"\x89PNG" and not frame.error and frame.verdict == view.text
    pl = placement_of(*DEFAULT)
    step = duration(pl.time_estimate_s)
    assert (f"Per chip, the estimate is {step} per step (operators unfused, collectives by the ring at the assumed "
            "per-call latency)") in frame.verdict
    assert f"Per chip, the lower bound is {duration(pl.time_lower_bound_s)} per step" in frame.verdict
    latency = float(pl.comm.calls) * pl.link.latency_s
    assert f"{duration(latency)} of it, {percent(latency / float(pl.time_estimate_s), 1)}, is assumed latency" \
        in frame.verdict
    assert "at least" not in frame.verdict and "≥" not in frame.verdict
    assert duration(pl.time_lower_bound_s) in frame.alt and duration(pl.time_lower_bound_s) in frame.table_html
    assert f"{pl.bound}-bound" in frame.verdict and pl.link.name in frame.verdict
    assert f"{num(pl.link.per_direction_bytes_per_s / 1e9)} GB/s per direction" in frame.verdict
    assert "not overlapped" in frame.verdict  # the default is said
    for live in (step, num(pl.intensity), num(pl.interconnect_intensity),
                 num(pl.interconnect_ridge_point_flop_per_byte), num(pl.ridge_point_flop_per_byte)):
        assert live in frame.alt
    assert f'alt="{html.escape(frame.alt, quote=True)}"' in frame_html(frame)
    fit = f"{binary(pl.memory_required_bytes)} of {binary(pl.part.memory_capacity_bytes)}: fits"
    assert bool(pl.fits_in_memory) and fit in frame.verdict


def test_view_numbers_are_the_placements():
    view = l11.lesson11_view(*MOE_EP)
    pl = placement_of(*MOE_EP)
    one = place("qwen3-235b-a22b", "h200", phase="decode", batch=64, context_tokens=4096)
    assert view.step_s == pytest.approx(float(pl.time_estimate_s))
    assert view.comm_s == pytest.approx(float(pl.comm_time_s)) and view.bound == pl.bound
    assert view.link_intensity == pytest.approx(float(pl.interconnect_intensity))
    assert view.achieved_flops_per_s == pytest.approx(float(pl.cost.flops / pl.time_estimate_s))
    assert view.single_step_s == pytest.approx(float(one.time_estimate_s))
    assert view.fits == bool(pl.fits_in_memory) and view.single_fits == bool(one.fits_in_memory)


def test_table_compares_the_split_with_one_chip():
    view = l11.lesson11_view(*DEFAULT)
    one = place("llama-3.1-70b", "h100-sxm", phase="decode", batch=1, context_tokens=4096)
    pl = placement_of(*DEFAULT)
    table = l11.lesson11_frame(view, l11.Lesson11Chart()).table_html
    assert "TP 2: per chip" in table and "1 chip" in table
    for text in (duration(pl.compute_time_s), duration(pl.memory_time_s), duration(pl.comm_time_s),
                 duration(one.time_estimate_s), duration(pl.time_estimate_s)):
        assert html.escape(text) in table


def test_an_moe_model_split_by_experts_works():
    view = l11.lesson11_view(*MOE_EP)
    pl = placement_of(*MOE_EP)
    frame = l11.lesson11_frame(view, l11.Lesson11Chart())
    assert not frame.error and frame.png is not None and view.label == "EP 8"
    assert "EP 8" in frame.verdict and "per chip" in frame.verdict.lower()
    assert bool(pl.fits_in_memory) and not view.single_fits  # 8 × H200 hold it, one does not
    assert "does NOT fit" in frame.verdict and duration(pl.comm_time_s) in frame.verdict


def test_one_chip_shows_no_link_roof_and_no_communication():
    view, chart = drawn(ONE_CHIP)
    assert view.link_name is None and view.link_intensity is None and view.comm_s == 0
    assert [s.kind for s in view.segments if s.kind == "communication"] == []
    texts = " ".join(t.get_text() for t in visible_texts(chart.last_figure))
    assert "link ridge" not in texts and "One chip: no link roof" in texts
    assert "FLOP per byte sent" not in texts
    frame = l11.lesson11_frame(view, chart)
    assert "no communication" in frame.verdict and "one chip, so no link roof" in frame.alt
    # after a split, back to one chip: the split's link roof and triangle are gone again
    drawn(DEFAULT, chart)
    assert "link ridge" in " ".join(t.get_text() for t in visible_texts(chart.last_figure))
    drawn(ONE_CHIP, chart)
    assert "link ridge" not in " ".join(t.get_text() for t in visible_texts(chart.last_figure))


def test_a_pcie_only_part_at_eight_chips_says_pcie():
    view = l11.lesson11_view(*L4_PREFILL)
    pl = placement_of(*L4_PREFILL)
    frame = l11.lesson11_frame(view, l11.Lesson11Chart())
    assert "PCIe" in pl.link.name and pl.link.name in frame.verdict and pl.link.name in frame.alt
    assert frame.notes == pl.warnings and any("PCIe" in n for n in frame.notes)
    assert html.escape(frame.notes[0]) in frame_html(frame)


def test_kv_replication_is_a_note_shown_once():
    setting = ("qwen3.8-27b", "h100-sxm", 8, 1)
    frame = l11.lesson11_frame(l11.lesson11_view(*setting), l11.Lesson11Chart())
    pl = placement_of(*setting)
    assert any("replicated" in w for w in pl.warnings) and frame.notes == pl.warnings
    page = frame_html(frame)
    assert all(page.count(html.escape(w)) == 1 for w in pl.warnings)


@pytest.mark.parametrize("setting", [s for s in EXTREMES if not s[-1]])
def test_overlap_never_makes_the_step_longer(setting):
    plain = l11.lesson11_view(*setting)
    overlapped = l11.lesson11_view(*setting[:-1], True)
    assert plain.error is None and overlapped.error is None
    assert overlapped.step_s <= plain.step_s
    assert overlapped.step_s >= max(plain.compute_s, plain.memory_s)
    for view in (plain, overlapped):  # the bar's last piece ends at the step
        end = max(s.start_s + s.width_s for s in view.segments)
        assert end == pytest.approx(view.step_s)


def test_pipeline_bar_shows_the_wait_for_the_other_stages():
    setting = ("llama-3.1-70b", "h100-sxm", 8, 1, "decode", 4096, 2048, "pipeline")
    view = l11.lesson11_view(*setting)
    pl = placement_of(*setting)
    wait = [s for s in view.segments if s.kind == "pipeline wait"]
    assert len(wait) == 1 and wait[0].width_s == pytest.approx(float(pl.time_estimate_s - pl.stage_time_s))
    assert duration(wait[0].width_s) in view.text


@pytest.mark.parametrize("setting, wanted", [
    (("llama-3.1-70b", "h100-sxm", 3, 1), "tensor parallel 3 does not divide"),
    (("llama-3.1-70b", "h100-sxm", 16, 1), "16 chips exceed"),
    (("llama-3.1-70b", "h100-sxm", 8, 1, "decode", 4096, 2048, "expert"), "llama-3.1-70b is dense"),
    (("llama-3.1-70b", "h100-sxm", 1, 1, "decode", 4096, 2048, "expert"), "llama-3.1-70b is dense"),
    (("llama-3.1-70b", "h100-sxm", 2, 0), "batch must be a whole number from 1"),
    (("llama-3.1-70b", "h100-sxm", 2, 1, "train"), "phase must be one of decode, prefill; got 'train'"),
    (("llama-3.1-70b", "h100-sxm", 2, 1, "decode", 4096, 2048, "data"), "strategy must be one of"),
    (("llama-3.1-70b", "h100-sxm", 2, 1, "decode", 4096, 2048, "tensor", "yes"), "overlap_comm must be True"),
    (("gpt-9", "h100-sxm", 2, 1), "gpt-9"),
    (("llama-3.1-70b", "x100", 2, 1), "x100"),
    (("llama-3.1-70b", "h100-sxm", "two", 1), "got 'two'"),
])
def test_error_frame_shows_the_error_once_and_no_image(setting, wanted):
    view = l11.lesson11_view(*setting)
    assert view.error is not None and wanted in view.error
    frame = l11.lesson11_frame(view, l11.Lesson11Chart())
    assert frame.error and frame.png is None and frame.alt == ""
    page = frame_html(frame)
    assert page.count(html.escape(view.error)) == 1 and "<img" not in page


def test_the_errors_are_the_packages():
    from roofline_lessons.core.errors import RooflineInputError

    # 16 H100 PCIe cards: past the PCIe server, and the PCIe card has no scale-out link in the catalog
    for part, chips, strategy in (("h100-sxm", 3, "tensor"), ("h100-pcie", 16, "tensor"), ("h100-sxm", 8, "expert")):
        with pytest.raises(RooflineInputError) as exc:
            placement_of("llama-3.1-70b", part, chips, 1, strategy=strategy)
        assert l11.lesson11_view("llama-3.1-70b", part, chips, 1, strategy=strategy).error == str(exc.value)


@pytest.mark.parametrize("setting", EXTREMES[::5] + [DEFAULT, L4_PREFILL, MOE_EP])
def test_verdict_alt_and_chart_text_never_use_scientific_notation(setting):
    view, chart = drawn(setting)
    frame = l11.lesson11_frame(view, chart)
    texts = [t.get_text() for t in visible_texts(chart.last_figure)]
    assert not SCIENTIFIC.search(frame.verdict) and not SCIENTIFIC.search(frame.alt)
    assert not [t for t in texts if SCIENTIFIC.search(t)]


# ---- the dashboard chart ------------------------------------------------------------------------

@pytest.mark.parametrize("setting", EXTREMES[::3] + [DEFAULT, L4_PREFILL, MOE_EP])
def test_no_text_below_the_minimum_size_and_none_outside_the_figure(setting):
    _view, chart = drawn(setting)
    fig = chart.last_figure
    renderer = fig.canvas.get_renderer()
    texts = visible_texts(fig)
    assert [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < MIN_FONT_PT] == []
    box = fig.bbox
    for t in texts:  # the first status ran off the right edge when communication was overlapped
        e = t.get_window_extent(renderer)
        assert box.x0 <= e.x0 and e.x1 <= box.x1 and box.y0 <= e.y0 and e.y1 <= box.y1, (setting, t.get_text())


@pytest.mark.parametrize("setting", [DEFAULT, ONE_CHIP, L4_PREFILL, MOE_EP, EXTREMES[-1]])
def test_texts_beside_the_chart_do_not_overlap(setting):
    _view, chart = drawn(setting)
    fig = chart.last_figure
    renderer = fig.canvas.get_renderer()
    beside = [t for t in fig.texts if t.get_visible() and t.get_text().strip() and t is not fig._suptitle]
    legend = [lg.get_window_extent(renderer) for lg in fig.legends if lg.get_visible()]
    assert len(beside) == 2 and len(legend) == 1  # the link's name and the status; the roofs' key
    boxes = [t.get_window_extent(renderer) for t in beside] + legend
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), setting


@pytest.mark.parametrize("setting", [DEFAULT, L4_PREFILL, MOE_EP,
                                     ("llama-3.1-70b", "h100-sxm", 8, 256, "decode", 4096, 2048, "tensor", True),
                                     ("qwen3-30b-a3b", "h100-sxm", 8, 1, "prefill", 4096, 2048, "expert")])
def test_point_labels_stay_clear_of_each_other_and_of_the_ridge_labels(setting):
    # the first layout put the triangle's label above it, over the link ridge's label at the roof
    _view, chart = drawn(setting)
    ax = chart._shared["ax"]
    renderer = chart.last_figure.canvas.get_renderer()
    mv = chart._shared["moving"]
    labels = [mv["hbm_label"], mv["link_label"]]
    ridges = [t for t in visible_texts(chart.last_figure) if t.get_text().startswith(("HBM ridge", "link ridge"))]
    assert len(ridges) == 2
    boxes = [t.get_window_extent(renderer) for t in labels]
    inside = ax.get_window_extent(renderer)
    assert not boxes[0].overlaps(boxes[1])
    for b in boxes:
        assert inside.x0 <= b.x0 and b.x1 <= inside.x1 and inside.y0 <= b.y0 and b.y1 <= inside.y1
        assert not any(b.overlaps(r.get_window_extent(renderer)) for r in ridges)


def test_the_points_and_the_bar_follow_the_view():
    view, chart = drawn(DEFAULT)
    mv = chart._shared["moving"]
    y = view.achieved_flops_per_s / 1e12
    assert mv["hbm_pt"].get_xydata()[0].tolist() == pytest.approx([view.hbm_intensity, y])
    assert mv["link_pt"].get_xydata()[0].tolist() == pytest.approx([view.link_intensity, y])
    bars = [r for r in mv["rects"] if r.get_visible()]
    assert len(bars) == len(view.segments) == 3  # memory, compute inside it, then communication
    assert max(r.get_x() + r.get_width() for r in bars) == pytest.approx(100)
    comm = next(s for s in view.segments if s.kind == "communication")
    assert comm.width_s / view.step_s * 100 == pytest.approx(
        next(r.get_width() for r in bars if r.get_facecolor()[:3] == matplotlib.colors.to_rgb(
            plots.TIME_LOOK["communication"][0])))


def test_the_link_roof_is_the_links_per_direction_bandwidth():
    _view, chart = drawn(L4_PREFILL)
    pl = placement_of(*L4_PREFILL)
    ax = chart._shared["ax"]
    slanted = [ln for ln in ax.lines if ln.get_visible() and len(ln.get_xdata()) == 2
               and ln.get_xdata()[0] == l11.X_RANGE[0]]
    slopes = sorted(ln.get_ydata()[0] * 1e12 / ln.get_xdata()[0] for ln in slanted)
    assert slopes == pytest.approx(sorted([pl.link.per_direction_bytes_per_s, pl.bandwidth_bytes_per_s]))
    texts = " ".join(t.get_text() for t in visible_texts(chart.last_figure))
    assert f"link ridge {num(pl.interconnect_ridge_point_flop_per_byte)}" in texts and "per direction" in texts


def test_moves_keep_the_layers_and_come_back_exactly():
    chart = l11.Lesson11Chart()
    first = chart.png(l11.lesson11_view(*DEFAULT))
    for b in l11.BATCH_CHOICES:
        chart.png(l11.lesson11_view("llama-3.1-70b", "h100-sxm", 2, b))
    assert chart.layer_misses == 2 and chart.figures.misses == 1  # one part layer, one link layer
    chart.png(l11.lesson11_view("llama-3.1-70b", "h100-sxm", 8, 1))  # a new heading and link layer
    chart.png(l11.lesson11_view(*MOE_EP))  # a new part
    assert chart.layer_misses == 5 and chart.figures.misses == 1
    assert chart.png(l11.lesson11_view(*DEFAULT)) == first and chart.layer_misses == 5


def test_a_long_session_draws_what_a_fresh_chart_draws():
    # issue 27: the chart kept each layer's label obstacles for its 48 most recently DRAWN layers, so
    # after 48 new headings a part layer still shown from its bitmap had lost its roofs and ridge label,
    # and the HBM label sat across the HBM roof. Now a layer's artists and notes go with its bitmap.
    chart = l11.Lesson11Chart()
    for prompt in range(1024, 1084):  # 60 headings (one link layer each) over one part layer
        shown = chart.png(l11.lesson11_view("llama-3.1-8b", "l4", 1, 1, "prefill", 4096, prompt))
    assert chart.layer_misses == 61
    fresh = l11.Lesson11Chart().png(l11.lesson11_view("llama-3.1-8b", "l4", 1, 1, "prefill", 4096, prompt))
    decoded = [np.asarray(Image.open(io.BytesIO(png))) for png in (shown, fresh)]
    assert (decoded[0] == decoded[1]).all()
    # the figure keeps the artists of the layers it keeps bitmaps of, no more: the heading, the status
    # and one link name per link layer kept
    assert len(chart.last_figure.texts) <= 2 + l11.Lesson11Chart.level_sizes[1]


# Speed is measured by benchmarks/widget_update.py (in-process) and benchmarks/browser_latency.py
# (in the browser), which print their figures; tests check behaviour, not time.


# ---- the widgets --------------------------------------------------------------------------------

def test_dashboard_panel_follows_every_control(capsys):
    ui = l11.lesson11_dashboard()
    assert set(ui.by_label) == {"model", "part", "split", "chips", "batch", "phase",
                                "overlap communication (best case)"}
    for w in ui.by_label.values():
        assert w.style.description_width == "initial"
    assert ui.by_label["batch"].continuous_update is False
    before = ui.panel.value
    assert "<img" in before and 'alt="' in before and "per chip" in before.lower()
    moves = {"batch": 256, "chips": 8, "phase": "prefill", "overlap communication (best case)": True,
             "split": "pipeline", "part": "h200", "model": "qwen3-235b-a22b"}
    for label, value in moves.items():
        shown = ui.panel.value
        ui.by_label[label].value = value
        assert ui.panel.value != shown, label
        assert "<img" in ui.panel.value and "rl-verdict" in ui.panel.value
    view = l11.lesson11_view("qwen3-235b-a22b", "h200", 8, 256, "prefill", strategy="pipeline", overlap_comm=True)
    lead, *items = view.text.split("\n- ")  # the panel shows the lead sentence, then the rest as a list
    assert html.escape(lead) in ui.panel.value and all(f"<li>{html.escape(i)}</li>" in ui.panel.value for i in items)
    ui.by_label["split"].value = "expert"  # an MoE model: expert parallel draws
    assert "<img" in ui.panel.value
    ui.by_label["model"].value = "llama-3.1-70b"  # a dense model with expert parallel: the error, no image
    assert "<img" not in ui.panel.value and "is dense" in ui.panel.value
    capsys.readouterr()


# ---- the notebook charts (viz.plots) ------------------------------------------------------------

def _seventy_b():
    d = {"phase": "decode", "batch": 1, "context_tokens": 4096}
    return [place("llama-3.1-70b", "h100-sxm", parallelism=Parallelism(tensor=n), **d) for n in (1, 2, 8)] + [
        place("llama-3.1-70b", "h100-sxm", parallelism=Parallelism(pipeline=2), **d)]


def test_interconnect_roofline_chart_draws_three_roofs_and_two_points_per_split():
    pls = _seventy_b()
    fig = plots.interconnect_roofline_chart(pls, ["1 chip", "TP 2", "TP 8", "PP 2"])
    ax = fig.axes[0]
    tp2 = pls[1]
    peak, hbm, link = tp2.peak_flops_per_s, tp2.bandwidth_bytes_per_s, tp2.link.per_direction_bytes_per_s
    flat = [ln for ln in ax.lines if len(set(np.round(ln.get_ydata(), 9))) == 1 and len(ln.get_xdata()) == 2
            and ln.get_xdata()[1] > ln.get_xdata()[0] * 10]
    assert any(ln.get_ydata()[0] == pytest.approx(peak / 1e12) for ln in flat)  # the compute roof
    ends = {round(float(ln.get_xdata()[-1]), 6): ln for ln in ax.lines if len(ln.get_xdata()) > 2}
    assert round(peak / hbm, 6) in ends and round(peak / link, 6) in ends  # both slanted roofs end at their ridge
    circles = [ln for ln in ax.lines if ln.get_gid() == "hbm-point"]
    triangles = [ln for ln in ax.lines if ln.get_gid() == "link-point"]
    assert len(circles) == 4 and len(triangles) == 3  # no triangle for one chip
    for pl, ln in zip(pls, circles):
        assert ln.get_xydata()[0].tolist() == pytest.approx(
            [float(pl.intensity), float(pl.cost.flops / pl.time_estimate_s) / 1e12])
    alt = alt_of(fig)
    for text in (num(peak / hbm), num(peak / link), num(tp2.interconnect_intensity), "per direction",
                 "memory-bound: the HBM roof binds", duration(tp2.comm_time_s)):
        assert text in alt
    assert fig.axes[0].get_title()


def test_interconnect_roofline_chart_text_is_readable_and_the_legend_is_outside_the_data():
    pls = _seventy_b()
    mixed = [pls[1], place("llama-3.1-70b", "h200", phase="decode", batch=1, context_tokens=4096),
             place("llama-3.1-70b", "l4", parallelism=Parallelism(tensor=8), phase="prefill", batch=1,
                   prompt_tokens=4096)]
    for fig in (plots.interconnect_roofline_chart(pls), plots.interconnect_roofline_chart(mixed)):
        fig.canvas.draw()  # the axis labels take their places from the tick labels at draw time
        renderer = fig.canvas.get_renderer()
        texts = visible_texts(fig)
        assert [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < MIN_FONT_PT] == []
        ax = fig.axes[0]
        assert not ax.get_legend().get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
        # the first layout stacked the ridge labels into the title; now they sit inside the axes
        title = ax.title.get_window_extent(renderer)
        for t in (t for t in ax.texts if t.get_gid() == "ridge-label"):
            box = t.get_window_extent(renderer)
            assert not box.overlaps(title) and ax.get_window_extent(renderer).contains(box.x0, box.y1)
        for t in texts:
            e = t.get_window_extent(renderer)
            assert fig.bbox.x0 <= e.x0 and e.x1 <= fig.bbox.x1, t.get_text()


@pytest.mark.parametrize("case", ["lesson", "sweep"])
def test_interconnect_roofline_chart_labels_lie_beside_the_roofs_not_across_them(case):
    # issue 26 item 14: the lesson's "prefill, 1,024 tokens" label lay across the HBM and link roofs by the ridges
    if case == "lesson":
        d8 = place("llama-3.1-70b", "h100-sxm", phase="decode", context_tokens=4096,
                   parallelism=Parallelism(tensor=8))
        p8 = place("llama-3.1-70b", "h100-sxm", phase="prefill", prompt_tokens=1024,
                   parallelism=Parallelism(tensor=8))
        fig = plots.interconnect_roofline_chart([d8, p8], labels=["decode, batch 1", "prefill, 1,024 tokens"])
    else:
        fig = plots.interconnect_roofline_chart(_seventy_b(), ["1 chip", "TP 2", "TP 8", "PP 2"])
    fig.canvas.draw()  # an annotation takes its place (offset from its point) when drawn
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    roofs = []
    for ln in ax.lines:  # the roofs: the lines with a legend entry that run across the axes
        if ln.get_label().startswith(("compute roof", "HBM roof", "link roof")):
            xy = ln.get_transform().transform(np.column_stack([ln.get_xdata(), ln.get_ydata()]))
            for a, b in zip(xy[:-1], xy[1:]):
                t = np.linspace(0, 1, int(np.abs(b - a).max()) + 2)[:, None]
                roofs.append(a + t * (b - a))
    roofs = np.concatenate(roofs)
    labels = [t for t in ax.texts if t.get_gid() == "placement-label"]
    ridges = [t for t in ax.texts if t.get_gid() == "ridge-label"]
    assert len(labels) == (2 if case == "lesson" else 4) and len(ridges) == 2
    for t in labels:
        box = matplotlib.text.Text.get_window_extent(t, renderer)  # the words, not the leader line to the point
        hit = roofs[(roofs[:, 0] > box.x0) & (roofs[:, 0] < box.x1) & (roofs[:, 1] > box.y0)
                    & (roofs[:, 1] < box.y1)]
        assert hit.size == 0, (t.get_text(), box)
        assert not any(box.overlaps(r.get_window_extent(renderer)) for r in ridges), t.get_text()


def test_interconnect_roofline_chart_refuses_a_label_count_that_does_not_match():
    with pytest.raises(ValueError, match="2 labels for 4 placements"):
        plots.interconnect_roofline_chart(_seventy_b(), ["a", "b"])


def test_time_breakdown_chart_adds_communication_unless_overlapped():
    d = {"phase": "prefill", "batch": 1, "prompt_tokens": 4096}
    plain = place("llama-3.1-70b", "l4", parallelism=Parallelism(tensor=8), **d)
    over = place("llama-3.1-70b", "l4", parallelism=Parallelism(tensor=8, overlap_comm=True), **d)
    fig = plots.time_breakdown_chart([plain, over], ["TP 8", "TP 8 overlapped"])
    ax = fig.axes[0]
    factor, unit = plots._time_unit(float(plain.time_estimate_s))
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    ends = sorted({round(b.get_x() + b.get_width(), 9) for b in bars})
    c, m, k = float(plain.compute_time_s), float(plain.memory_time_s), float(plain.comm_time_s)
    assert round(max(c, m) * factor + k * factor, 9) in ends  # not overlapped: added after max(compute, memory)
    assert round(max(c, m, k) * factor, 9) in ends  # overlapped: the longest of the three
    labels = [t.get_text() for t in ax.texts if t.get_gid() == "step-time"]
    assert labels[0] == duration(plain.time_estimate_s) and labels[1].startswith(duration(over.time_estimate_s))
    assert unit in ax.get_xlabel() and ax.get_title()
    assert [(t.get_text(), t.get_fontsize()) for t in visible_texts(fig) if t.get_fontsize() < MIN_FONT_PT] == []
    alt = alt_of(fig)
    assert duration(plain.comm_time_s) in alt and "not overlapped" in alt and "overlapped, the best case" in alt


@pytest.mark.parametrize("n_bars", [1, 3, 4])
def test_time_breakdown_chart_draws_its_key_before_it_says_it(n_bars):
    """Issue 26 item 14: the legend's title "thin bar: runs at the same time as the wide one under it" was
    words only. Now a drawn key sits under the legend: the first bar's own wide piece with its thin piece over
    the start (outlined like the real thin bars), then communication where the chart has any, and one short
    label with an arrow to the thin piece. It stays inside the figure, clear of the legend, at a readable size."""
    pls = [place("llama-3.1-70b", pid, phase="prefill", prompt_tokens=1024, parallelism=Parallelism(tensor=8))
           for pid in ("h100-sxm", "h100-pcie", "l4", "l4")][:n_bars]
    fig = plots.time_breakdown_chart(pls, [f"bar {i}" for i in range(n_bars)])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax, key = fig.axes
    assert not ax.get_legend().get_title().get_text()  # the words moved into the key, beside its picture
    pieces = {p.get_gid(): p for p in key.patches}
    wide, thin = plots._time_segments(pls[0])[:2]  # compute (wide) and memory (thin) for this prefill
    assert (wide.kind, thin.kind) == ("compute", "memory") and thin.height < wide.height
    w, t = pieces[f"bar-key-{wide.kind}"], pieces[f"bar-key-{thin.kind}"]
    assert t.get_x() == w.get_x() and t.get_width() < w.get_width() and t.get_height() < w.get_height()
    assert w.get_y() < t.get_y() and t.get_y() + t.get_height() < w.get_y() + w.get_height()  # over it, inside
    assert t.get_edgecolor()[:3] == (0.0, 0.0, 0.0) and t.get_zorder() > w.get_zorder()
    comm = pieces["bar-key-communication"]
    assert comm.get_x() == pytest.approx(w.get_x() + w.get_width())  # after the wide one
    label = next(x for x in key.texts if x.get_gid() == "bar-key-label")
    assert "thin bar" in label.get_text() and "same" in label.get_text()
    assert label.xy[0] < t.get_x() + t.get_width() and t.get_y() <= label.xy[1] <= t.get_y() + t.get_height()
    legend_box = ax.get_legend().get_window_extent(renderer)
    for text in key.texts:
        box = text.get_window_extent(renderer)
        assert text.get_fontsize() >= MIN_FONT_PT and not box.overlaps(legend_box), text.get_text()
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0, text.get_text()
    assert key.get_window_extent(renderer).y1 < legend_box.y0  # under the legend
    assert "a thin bar drawn over a wide one runs at the same time as it" in alt_of(fig)


def test_time_breakdown_key_draws_no_communication_where_the_chart_has_none():
    one = place("llama-3.1-70b", "h200", phase="decode", context_tokens=4096)  # one chip: nothing sent
    for pls in ([one], [one, one]):
        key = plots.time_breakdown_chart(pls, [f"x{i}" for i in range(len(pls))]).axes[1]
        gids = {p.get_gid() for p in key.patches}
        assert "bar-key-communication" not in gids and {"bar-key-memory", "bar-key-compute"} <= gids


def test_time_segments_nest_the_shorter_of_compute_and_memory():
    pl = _seventy_b()[1]
    segs = plots._time_segments(pl)
    assert [(s.kind, s.height) for s in segs] == [("memory", 1.0), ("compute", 0.4), ("communication", 1.0)]
    assert segs[2].start_s == pytest.approx(float(pl.memory_time_s))


# ---- review fixes (lesson 11, strict review items 2 and 14) ---------------------------------------


@pytest.mark.parametrize("chips", [2, 4, 8])
def test_the_triangles_label_sits_next_to_its_triangle(chips):
    # at PP 4 the one-line label sat far left of its triangle, near the right edge of the axes
    _view, chart = drawn(("llama-3.1-70b", "h100-sxm", chips, 1, "decode", 4096, 2048, "pipeline"))
    renderer = chart.last_figure.canvas.get_renderer()
    ax = chart._shared["ax"]
    mv = chart._shared["moving"]
    box = mv["link_label"].get_window_extent(renderer)
    tx, ty = ax.transData.transform(np.column_stack(mv["link_pt"].get_data())[0])
    # the limits were set in pixels when the dashboard drew at 80 dpi; every distance on the figure
    # scales with its dpi (now CHART_DPI), so they scale with it: the same inches, the same intent
    px = l11.DPI / 80
    gap = max(box.x0 - tx, tx - box.x1, box.y0 - ty, ty - box.y1, 0.0)
    assert gap <= 20 * px, (box, tx, ty)  # within 20 px (at 80 dpi) of the triangle's centre, on one side
    # and no part of it far from the triangle: the old one-line label's far end was over 160 px away
    assert max(abs(box.x0 - tx), abs(box.x1 - tx)) <= 120 * px, (box, tx)


def _roof_points(chart) -> np.ndarray:
    """Display points along every visible roof the chart draws (not the dotted ridge guides), one
    per pixel or so."""
    ax = chart._shared["ax"]
    pts = []
    for ln in ax.lines:
        if not ln.get_visible() or len(ln.get_xdata()) < 2 or ln.get_linestyle() == ":":
            continue
        xy = ln.get_transform().transform(np.column_stack([ln.get_xdata(), ln.get_ydata()]))
        for a, b in zip(xy[:-1], xy[1:]):
            t = np.linspace(0, 1, int(np.abs(b - a).max()) + 2)[:, None]
            pts.append(a + t * (b - a))
    return np.concatenate(pts)


@pytest.mark.parametrize("setting", [L4_PREFILL, DEFAULT, MOE_EP, ("llama-3.1-70b", "l4", 8, 256),
                                     ("llama-3.1-70b", "h100-pcie", 8, 1, "prefill"),
                                     ("llama-3.1-70b", "h100-sxm", 8, 1, "prefill")])
def test_the_triangles_label_clears_the_roofs_and_the_ridge_labels(setting):
    # issue 26 item 14: at 8 × L4 prefill the "△ 3,782 FLOP per byte sent" box sat on the compute roof,
    # right beside "link ridge 3,781"; its box (text extent plus the rounded pad) must touch no roof
    view, chart = drawn(setting)
    renderer = chart.last_figure.canvas.get_renderer()
    label = chart._shared["moving"]["link_label"]
    box = label.get_window_extent(renderer)
    pad = 0.25 * label.get_fontsize() * l11.DPI / 72  # the box's "round,pad=0.25": a quarter of an em
    half_roof = 2.4 * l11.DPI / 72 / 2  # the roofs are 2.4 pt wide
    grown = type(box).from_extents(box.x0 - pad - half_roof, box.y0 - pad - half_roof, box.x1 + pad + half_roof,
                                   box.y1 + pad + half_roof)
    roofs = _roof_points(chart)
    touching = roofs[(roofs[:, 0] > grown.x0) & (roofs[:, 0] < grown.x1) & (roofs[:, 1] > grown.y0)
                     & (roofs[:, 1] < grown.y1)]
    assert touching.size == 0, (view.label, label.get_text(), grown, touching[:3])
    ridges = [t for t in visible_texts(chart.last_figure) if t.get_text().startswith(("HBM ridge", "link ridge"))]
    assert len(ridges) == 2
    assert not any(grown.overlaps(r.get_window_extent(renderer)) for r in ridges), label.get_text()


def test_the_pipeline_verdict_says_by_how_much_it_is_slower_and_why():
    view = l11.lesson11_view("llama-3.1-70b", "h100-sxm", 4, 1, strategy="pipeline")
    assert view.step_s > view.single_step_s
    text = view.text
    assert "no faster per step" in text and "SLOWER by" in text and "3 sends" in text
    assert duration(view.step_s - view.single_step_s) in text
    assert "1× SLOWER" not in text


def test_the_link_ridge_label_stays_inside_the_three_roof_chart():
    # the notebook's figure: "link ridge 2,199" ran to the frame's right edge
    d8 = place("llama-3.1-70b", "h100-sxm", phase="decode", context_tokens=4096, parallelism=Parallelism(tensor=8))
    p8 = place("llama-3.1-70b", "h100-sxm", phase="prefill", prompt_tokens=1024, parallelism=Parallelism(tensor=8))
    fig = plots.interconnect_roofline_chart([d8, p8], labels=["decode, batch 1", "prefill, 1,024 tokens"])
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    frame = ax.get_window_extent(renderer)
    ridges = [t for t in fig.findobj(matplotlib.text.Text) if t.get_gid() == "ridge-label"]
    assert len(ridges) == 2
    for t in ridges:
        box = t.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 - 2, (t.get_text(), box, frame)
