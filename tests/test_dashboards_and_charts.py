import matplotlib.pyplot as plt
import pytest

from roofline_lessons.viz.charts import LINE_COLOURS, PALETTE, Roof, point_on_roof, roofline_chart, roofs_for
from roofline_lessons.viz.dashboards import lesson01_dashboard, lesson01_draw, lesson01_view


def test_view_for_batch1_decode():
    v = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 0)
    assert v.error is None and v.bound == "memory"
    assert v.fraction_of_peak == pytest.approx(0.0034, rel=0.05)
    assert v.ridge_point_flop_per_byte == pytest.approx(295.3, rel=1e-3)
    assert "Memory-bound" in v.verdict and "shop for bytes" in v.verdict


def test_view_moves_with_batch_and_phase():
    a = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 1024)
    b = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 64, 1024)
    c = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "prefill", 1, 8192)
    assert a.intensity_flop_per_byte < b.intensity_flop_per_byte < c.intensity_flop_per_byte
    assert c.bound == "compute" and "Compute-bound" in c.verdict


def test_fp8_moves_the_ridge():
    bf16 = lesson01_view("llama-3.1-8b", "h100-sxm", "bf16", "prefill", 1, 4096)
    fp8 = lesson01_view("llama-3.1-8b", "h100-sxm", "fp8", "prefill", 1, 4096)
    assert fp8.ridge_point_flop_per_byte == pytest.approx(2 * bf16.ridge_point_flop_per_byte, rel=1e-3)
    # the format is the weights' and activations' too, so the point moves right (half the bytes)
    assert fp8.intensity_flop_per_byte == pytest.approx(2 * bf16.intensity_flop_per_byte, rel=0.02)


def test_bad_combination_is_explained_not_raised():
    v = lesson01_view("qwen3.8-27b", "a100-80gb", "fp8", "decode", 1, 0)
    assert v.error and "no fp8" in v.verdict
    fig = lesson01_draw(v)
    plt.close(fig)


def test_draw_has_title_units_and_log_axes():
    v = lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 32, 4096)
    fig = lesson01_draw(v)
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert "FLOP/byte" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel()
    assert "Qwen3.8-27B" in ax.get_title()
    plt.close(fig)


@pytest.mark.parametrize("backend", ["agg", "module://matplotlib_inline.backend_inline"])
def test_dashboard_builds_and_reacts(backend, capsys):
    # Outside a kernel the Output widget does not swallow errors, so a failing update raises here.
    previous = plt.get_backend()
    plt.switch_backend(backend)
    try:
        ui = lesson01_dashboard()
        controls = ui.by_label
        assert {"model", "part", "dtype", "phase", "batch", "tokens"} <= set(controls)
        shown = []  # every panel the dashboard showed (one HTML widget, replaced whole per update)
        ui.panel.observe(lambda change: shown.append(change["new"]), names="value")
        controls["batch"].value = 64
        controls["phase"].value = "prefill"
        controls["part"].value = "tpu-v5e"
        controls["dtype"].value = "fp8"
        out = "\n".join(shown)
        assert "Memory-bound" in out and "Compute-bound" in out
        assert "tpu-v5e has no fp8 rate" in out  # explained, not raised
    finally:
        plt.close("all")
        plt.switch_backend(previous)


def test_chart_with_several_ceilings():
    roofs = roofs_for("b200", ["bf16", "fp8", "fp4"])
    fig, ax = roofline_chart(roofs, [point_on_roof("x", 10, roofs[0])])
    colours = {line.get_color() for line in ax.get_lines()}
    assert set(LINE_COLOURS[:3]) <= colours  # three ceilings of one part: three colours, not the part's one
    assert len(ax.get_legend().get_texts()) == 4
    plt.close(fig)
    with pytest.raises(ValueError):
        roofline_chart([])
    assert Roof("r", 1e12, 1e12).ridge_point_flop_per_byte == 1


def test_canvas_redraws_only_the_point_and_the_picture_changes():
    from roofline_lessons.viz.charts import RooflineCanvas
    from roofline_lessons.viz.dashboards import lesson01_png

    canvas = RooflineCanvas()
    a = lesson01_png(lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 1024), canvas)
    b = lesson01_png(lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 64, 1024), canvas)
    assert a.startswith(b"\x89PNG") and b.startswith(b"\x89PNG") and a != b
    assert canvas.misses == 1  # same roof: the static part was reused
    lesson01_png(lesson01_view("qwen3.8-27b", "b200", "bf16", "decode", 64, 1024), canvas)
    assert canvas.misses == 2
    again = lesson01_png(lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 1024), canvas)
    assert again == a and canvas.misses == 2
    canvas.close()


def test_one_control_change_is_one_update(monkeypatch):
    from roofline_lessons.viz.dashboards import lesson01 as module

    calls = []
    real = module.lesson01_view
    monkeypatch.setattr(module, "lesson01_view", lambda *a: calls.append(a) or real(*a))
    ui = module.lesson01_dashboard()
    calls.clear()
    ui.children[0].children[1].value = "a100-80gb"  # the part dropdown
    assert calls == [("qwen3.8-27b", "a100-80gb", "bf16", "decode", 1, 8192)]


def test_context_beyond_the_model_is_flagged():
    v = lesson01_view("llama-2-7b", "h100-sxm", "bf16", "decode", 8, 8192)
    assert "what-if" in v.verdict and "4,096" in v.verdict
    assert "what-if" not in lesson01_view("llama-2-7b", "h100-sxm", "bf16", "decode", 8, 2048).verdict


def test_each_part_keeps_one_style_that_survives_colour_blindness():
    """Okabe–Ito colours only (no yellow lines), and no two parts told apart by colour alone."""
    from roofline_lessons import get_part, list_parts
    from roofline_lessons.viz.charts import part_style

    okabe_ito = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"}
    assert set(PALETTE) == okabe_ito and "#F0E442" not in LINE_COLOURS and set(LINE_COLOURS) <= okabe_ito
    styles = {p: part_style(p) for p in list_parts()}
    assert all(s.colour in LINE_COLOURS for s in styles.values())
    shapes = [(s.marker, s.linestyle) for s in styles.values()]
    assert len(set(shapes)) == len(shapes)  # in grey, every part still looks different
    assert part_style("h200") == part_style(get_part("h200"))  # the same part, the same style, everywhere


def test_a_verdict_with_a_list_is_shown_as_a_lead_and_items():
    """Issue 26, item 14: a verdict may lead with a sentence and list the rest."""
    from roofline_lessons.viz.panel import Frame, frame_html

    page = frame_html(Frame(verdict="Lead <sentence>.\n- one & two\n- three", png=None, alt=""))
    assert "<p class=\"rl-verdict\"" in page and "Lead &lt;sentence&gt;." in page
    assert "<li>one &amp; two</li><li>three</li>" in page
    plain = frame_html(Frame(verdict="Just one paragraph.", png=None, alt=""))
    assert "<ul" not in plain
