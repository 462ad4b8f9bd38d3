"""Package pieces behind lessons 2–4, and their dashboards' update functions."""

import numpy as np
import pytest

from roofline_lessons import place
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.topics.batching import (critical_batch, decode_sweep, experts_touched, intensity_ceiling,
                                              largest_batch, moe_weight_bytes_per_token)
from roofline_lessons.topics.datasheets import capacity_side_by_side, headline_kind, measured_roof, ridge_table
from roofline_lessons.topics.reports import block_summary, op_rows
from roofline_lessons.viz.dashboards import (Lesson02Chart, Lesson03Chart, Lesson04Chart, lesson02_view, lesson03_view,
                                             lesson04_view)

# ---- lesson 2 ---------------------------------------------------------------------------------

def test_ridge_table_covers_every_part_and_marks_missing_rates():
    rows = {r["part"]: r for r in ridge_table(("bf16", "fp8"))}
    assert rows["h100-sxm"]["bf16"] == pytest.approx(295.3, rel=1e-3)
    assert rows["a100-80gb"]["fp8"] is None
    assert len(rows) == 14


def test_measured_roof_uses_measurements_where_they_exist():
    sxm = measured_roof("h100-sxm", "bf16")
    assert sxm.peak_is_measured and not sxm.bandwidth_is_measured
    assert sxm.roof.peak_flops_per_s == 795e12
    pcie = measured_roof("h100-pcie", "bf16")
    assert pcie.bandwidth_is_measured and pcie.roof.bandwidth_bytes_per_s == 1942e9
    assert "measured" in pcie.roof.label and pcie.sources


def test_headline_kind_spots_the_traps():
    assert "bf16 with sparsity" in headline_kind("h100-sxm", 1979e12)
    assert headline_kind("b200", 2.25e15) == ["bf16 dense", "fp16 dense"]
    assert headline_kind("a100-80gb", 624e12) == ["int8 dense"]  # not FP8
    assert headline_kind("h100-sxm", 123e12) == []


def test_capacity_side_by_side_for_a_70b_model():
    rows = {r.part: r for r in capacity_side_by_side("llama-3.1-70b", ["h100-sxm", "h200", "b200"])}
    # 141.1e9 bytes of BF16 weights: no fit in 80 GiB; a fit in the H200's 141 GiB, but not in 90 % of it
    assert not rows["h100-sxm"].weights_fit and rows["h200"].weights_fit and rows["b200"].weights_fit
    assert not rows["h200"].weights_fit_with_headroom and rows["b200"].weights_fit_with_headroom
    assert rows["h200"].max_batch > rows["h200"].max_batch_with_headroom == 0
    assert rows["b200"].max_batch > rows["b200"].max_batch_with_headroom > 0
    assert rows["h100-sxm"].decode_step_estimate_s is None and rows["h200"].decode_step_estimate_s > 0
    assert 0 < rows["h200"].decode_step_lower_bound_s <= rows["h200"].decode_step_estimate_s


def test_lesson02_view_verdicts():
    v = lesson02_view(("h100-sxm", "a100-80gb"), "fp8", 400.0)
    by_part = {x.part: x for x in v.verdicts}
    assert by_part["h100-sxm"].bound == "memory"  # FP8 ridge 591 > 400
    assert by_part["a100-80gb"].ridge_point_flop_per_byte is None
    assert "no rate" in v.text and len(v.roofs) == 1
    v = lesson02_view(("h100-sxm",), "bf16", 400.0)
    assert v.verdicts[0].bound == "compute" and v.verdicts[0].fraction_of_peak == 1.0
    assert lesson02_view((), "bf16", 1.0).error


def test_lesson02_chart_changes_with_intensity_and_caches_the_roofs():
    chart = Lesson02Chart()
    a = chart.png(lesson02_view(("h100-sxm", "b200"), "bf16", 10.0))
    b = chart.png(lesson02_view(("h100-sxm", "b200"), "bf16", 1000.0))
    assert a != b and chart.figures.misses == 1
    assert chart.png(lesson02_view(("a100-80gb",), "fp8", 10.0)).startswith(b"\x89PNG")


# ---- lesson 3 ---------------------------------------------------------------------------------

def test_op_rows_and_block_summary():
    p = place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192)
    rows = op_rows(p, block="full_attention", per_layer=True)
    names = [r[0] for r in rows]
    assert "o_proj" in names and "input_norm" in names
    bound = {r[0]: r[8] for r in rows}
    assert bound["o_proj"] == "compute" and bound["input_norm"] == "memory"
    assert [r[0] for r in block_summary(p)] == ["embedding", "full_attention", "gated_deltanet", "mlp", "head"]
    assert len(op_rows(p, top=5)) == 5


def test_lesson03_view_prefill_and_decode():
    pf = lesson03_view("llama-3.1-8b", "h100-sxm", "prefill", 8192)
    dc = lesson03_view("llama-3.1-8b", "h100-sxm", "decode", 8192)
    assert pf.bound == "compute" and dc.bound == "memory"
    assert "Time to first token" in pf.summary and "Time per output token" in dc.summary
    assert pf.step_intensity_per_weight_byte > 5000 and dc.step_intensity_per_weight_byte < 2
    assert len(pf.op_points) > 10 and len(pf.table_rows) == 10
    bad = lesson03_view("llama-3.1-8b", "nope", "decode", 10)
    assert bad.error and "unknown hardware id" in bad.summary


def test_lesson03_chart_moves():
    chart = Lesson03Chart()
    a = chart.png(lesson03_view("qwen3.8-27b", "h100-sxm", "prefill", 8192))
    b = chart.png(lesson03_view("qwen3.8-27b", "h100-sxm", "prefill", 512))
    assert a != b and a.startswith(b"\x89PNG")


# ---- lesson 4 ---------------------------------------------------------------------------------

def test_weight_lens_is_linear_all_traffic_bends():
    s = decode_sweep("qwen3.8-27b", "h100-sxm", [1, 32, 1024], context_tokens=8192)
    assert s.intensity_per_weight_byte[1] / s.intensity_per_weight_byte[0] == pytest.approx(32, rel=0.05)
    assert s.intensity[2] / s.intensity[1] < 5  # bent over, far from 32x
    # at batch 1 attention's FLOPs (outside the weight lens) lift the all-traffic figure a little above it
    assert np.all(np.diff(s.intensity) > 0) and np.all(s.intensity[1:] < s.intensity_per_weight_byte[1:])


def test_critical_batch():
    assert critical_batch("llama-3.1-8b", "h100-sxm", 0, lens="weights only") == pytest.approx(295, rel=0.02)
    assert critical_batch("llama-3.1-8b", "h100-sxm", 0, lens="all traffic") is not None
    assert critical_batch("qwen3.8-27b", "h100-sxm", 131072, lens="all traffic") is None
    assert intensity_ceiling("qwen3.8-27b", 131072) < 295
    with pytest.raises(RooflineInputError, match="lens"):
        critical_batch("llama-3.1-8b", "h100-sxm", lens="flops")


def test_batching_helps_decode_not_prefill():
    pf = [place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=2048, batch=b) for b in (1, 32)]
    dc = [place("llama-3.1-8b", "h100-sxm", phase="decode", context_tokens=2048, batch=b) for b in (1, 32)]
    assert pf[1].tokens_per_s_estimate / pf[0].tokens_per_s_estimate == pytest.approx(1.0, rel=0.02)
    assert dc[1].tokens_per_s_estimate / dc[0].tokens_per_s_estimate > 15


def test_capacity_caps_the_batch_and_moe_falls_slowly():
    fits = largest_batch("qwen3.8-27b", ["h100-sxm", "h200", "b200"], np.array([8192, 131072]))
    assert list(fits["h100-sxm"]) == [46, 3] and fits["h200"][1] == 11  # binary capacity: 80 GiB, 141 GiB
    touched = experts_touched("qwen3-30b-a3b", [1, 16, 1024])
    assert touched[0] == pytest.approx(8) and touched[2] == pytest.approx(128)
    moe = moe_weight_bytes_per_token("qwen3-30b-a3b", [1, 16])
    dense = moe_weight_bytes_per_token("qwen3-32b", [1, 16])
    assert moe[0] / moe[1] < 3 < dense[0] / dense[1]
    with pytest.raises(ValueError):
        experts_touched("llama-3.1-8b", 4)


def test_lesson04_view_numbers():
    v = lesson04_view("qwen3.8-27b", "h100-sxm", 32, 8192)
    assert v.fits and v.max_batch_that_fits == 46
    assert v.intensity_per_weight_byte == pytest.approx(32, rel=0.01)  # the weight lens is the batch, not more
    assert set(v.bytes_by_kind) == {"weights", "KV cache", "state", "activations"}
    assert v.curve_shares.shape[0] == 4 and np.allclose(v.curve_shares.sum(axis=0), 1)
    big = lesson04_view("qwen3.8-27b", "h100-sxm", 512, 8192)
    assert not big.fits and "Does NOT fit" in big.text
    assert big.tokens_per_s > v.tokens_per_s and big.step_time_s > v.step_time_s
    assert lesson04_view("qwen3.8-27b", "x100", 1, 0).error


def test_lesson04_chart_redraws_fast_path_on_batch_change():
    chart = Lesson04Chart()
    a = chart.png(lesson04_view("llama-3.1-8b", "b200", 1, 4096))
    b = chart.png(lesson04_view("llama-3.1-8b", "b200", 256, 4096))
    assert a != b and chart.figures.misses == 1
    chart.png(lesson04_view("llama-3.1-8b", "b200", 256, 8192))
    assert chart.figures.misses == 1 and chart.layer_misses == 2  # a context change redraws only its layer
    chart.png(lesson04_view("llama-3.1-8b", "h200", 256, 8192))
    assert chart.figures.misses == 2


@pytest.mark.parametrize("name", ["lesson02_dashboard", "lesson03_dashboard", "lesson04_dashboard", "lesson05_dashboard",
                                  "lesson06_dashboard", "lesson07_dashboard"])
def test_dashboards_build_and_react(name, capsys):
    """Outside a kernel the Output widget does not swallow errors: a failing update raises here."""
    import ipywidgets as widgets

    from roofline_lessons.viz import dashboards

    ui = getattr(dashboards, name)()
    controls = [w for w in _walk(ui) if isinstance(w, (widgets.Dropdown, widgets.SelectionSlider,
                                                       widgets.FloatLogSlider, widgets.ToggleButtons,
                                                       widgets.Checkbox))]
    assert controls
    for w in controls:
        if isinstance(w, widgets.FloatLogSlider):
            w.value = 1000.0
        elif isinstance(w, widgets.Checkbox):
            w.value = not w.value
        else:
            w.index = len(w.options) - 1
    out = capsys.readouterr().out
    assert out.strip() and "Traceback" not in out


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)
