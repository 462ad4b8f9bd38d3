"""Package pieces behind lessons 2–4, and their dashboards' update functions."""

import numpy as np
import pytest

from roofline_lessons import place
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.topics.batching import (critical_batch, decode_sweep, experts_touched, intensity_ceiling,
                                              largest_batch, moe_weight_bytes_per_token)
from roofline_lessons.core.hardware import list_parts
from roofline_lessons.topics.datasheets import capacity_side_by_side, headline_kind, measured_roof, ridge_table
from roofline_lessons.topics.reports import block_summary, op_rows
from roofline_lessons.viz.dashboards import (Lesson02Chart, Lesson03Chart, Lesson04Chart, lesson02_view, lesson03_view,
                                             lesson04_view)

# ---- lesson 2 ---------------------------------------------------------------------------------

def test_ridge_table_covers_every_part_and_marks_missing_rates():
    rows = {r["part"]: r for r in ridge_table(("bf16", "fp8"))}
    assert rows["h100-sxm"]["bf16"] == pytest.approx(295.3, rel=1e-3)
    assert rows["a100-80gb"]["fp8"] is None
    assert set(rows) == set(list_parts())


def test_measured_roof_uses_measurements_where_they_exist():
    sxm = measured_roof("h100-sxm", "bf16")
    assert sxm.peak_is_measured and not sxm.bandwidth_is_measured
    assert sxm.roof.peak_flops_per_s == 794.5e12
    pcie = measured_roof("h100-pcie", "bf16")
    assert pcie.bandwidth_is_measured and pcie.roof.bandwidth_bytes_per_s == 1942e9
    assert "measured" in pcie.roof.label and pcie.sources


def test_headline_kind_spots_the_traps():
    assert "bf16 with sparsity" in headline_kind("h100-sxm", 1979e12)
    assert headline_kind("b200", 2.25e15) == ["bf16 dense", "fp16 dense"]
    a100_624 = headline_kind("a100-80gb", 624e12)  # INT8 dense (and BF16/FP16 with sparsity), never FP8
    assert a100_624[0] == "int8 dense" and not any("fp8" in k for k in a100_624)
    from roofline_lessons import get_part

    if get_part("a100-80gb").sparse_flops_per_s.get("bf16") == 624e12:
        assert "bf16 with sparsity" in a100_624
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


# ---- gpt-fast's context: one assumption, shared by lessons 3 and 9 ----------------------------


def test_gpt_fast_context_is_one_assumption_within_the_run():
    """The bound on gpt-fast's run is priced at one context, never above the run's own. generate.py
    times the prompt's prefill (which yields the first new token) and ``max_new_tokens - 1`` decode
    steps at input positions prompt … prompt + max_new_tokens - 2: the middle step is the context."""
    from roofline_lessons.topics import published
    from roofline_lessons.topics.many_chips import gpt_fast_measurement

    m = published.gpt_fast_7b_measurement()
    assert m.model == "llama-2-7b" and m.tokens_per_s
    for entry in (m, gpt_fast_measurement()):
        assert published.stated_prompt_tokens(entry) == published.GPT_FAST_PROMPT_TOKENS
    fewest, most = published.gpt_fast_context_range()
    # 5 prompt tokens and generate.py's BOS prefilled, then 200 new tokens
    assert (fewest, most) == (6, 204) and published.GPT_FAST_CONTEXT_TOKENS == 105
    assert most - fewest + 1 == published.GPT_FAST_DECODE_STEPS == published.GPT_FAST_NEW_TOKENS - 1
    assert published.GPT_FAST_CONTEXT_TOKENS == (fewest + most) // 2 and (fewest + most) % 2 == 0
    bounds = [float(published.gpt_fast_7b_bound(c).tokens_per_s_upper_bound) for c in (fewest, most)]
    middle = float(published.gpt_fast_7b_bound().tokens_per_s_upper_bound)
    # linear in context, memory-bound: the middle's time is the mean of the ends' times
    assert 1 / middle == pytest.approx((1 / bounds[0] + 1 / bounds[1]) / 2, rel=1e-9)
    # the timed region also holds the prefill: the printed rate's bound is within 0.01 % of the middle step's
    run = published.gpt_fast_run_rate_bound()
    assert run == pytest.approx(middle, rel=1e-4)


def test_gpt_fast_model_size_is_generate_py_s_count():
    """generate.py's _get_model_size: every top-level module's parameters and buffers but the
    embedding, before the KV cache exists. For Llama-2-7B in BF16 that is the package's weights less
    the table, and the bound's compulsory bytes exceed it by the KV cache read and written (plus the
    one looked-up embedding row, the token id and the logits)."""
    from roofline_lessons.topics import published

    size = published.gpt_fast_model_size_bytes()
    assert size == 2 * (6_738_415_616 - 32_000 * 4_096)
    cost = published.gpt_fast_7b_bound().cost
    kv = float(cost.kv_bytes - cost.kv_scratch_bytes)
    assert kv == (published.GPT_FAST_CONTEXT_TOKENS + 1) * 524_288  # read 105 tokens, write one
    assert float(cost.compulsory_bytes) - size - kv == pytest.approx(0, abs=1e5)
    m = published.gpt_fast_7b_measurement()
    assert m.value == 1397.31e9 and m.software  # the README's figure, with the software it names


def test_lessons_3_and_9_and_exercise_3_3_use_the_shared_gpt_fast_context():
    from pathlib import Path

    from roofline_lessons.course.checks import lesson03
    from roofline_lessons.topics.published import GPT_FAST_CONTEXT_TOKENS, gpt_fast_7b_bound, gpt_fast_7b_measurement

    root = Path(__file__).resolve().parents[1] / "py" / "notebooks"
    for name in ("03_prefill_vs_decode.py", "09_reality_check.py"):
        text = (root / name).read_text("utf-8")
        assert "GPT_FAST_CONTEXT_TOKENS" in text and "GPT_FAST_CONTEXT =" not in text
    assert "context_tokens=256" not in (root / "03_prefill_vs_decode.py").read_text("utf-8")
    expected = 100 * gpt_fast_7b_measurement().tokens_per_s / float(
        gpt_fast_7b_bound(GPT_FAST_CONTEXT_TOKENS).tokens_per_s_upper_bound)
    result = lesson03.gpt_fast_percent_of_bound(expected)
    assert result.passed and f"{expected:.4g}"[:4] in result.message

    wrong = lesson03.gpt_fast_percent_of_bound(expected * 1.2)
    assert not wrong.passed and "% of the value" in wrong.message and "percentage points" in wrong.message


def test_provenance_says_what_the_catalog_does_not_record():
    from roofline_lessons.core.hardware import Measurement
    from roofline_lessons.topics.published import provenance

    bare = Measurement(quantity="bandwidth_bytes_per_s", value=1.0, what="x", source="somewhere")
    assert provenance(bare) == "somewhere; date not recorded; software not recorded"
    full = Measurement(quantity="bandwidth_bytes_per_s", value=1.0, what="x", source="s", date="2024-07-11",
                       software="CUDA 12.3")
    assert provenance(full) == "s; 2024-07-11; software: CUDA 12.3"


# ---- lesson 4's charts: alt text from the same exact calls as the table, never a plotting grid ----

def _alt_of(fig):
    from roofline_lessons.viz.display import alt_of

    return alt_of(fig)


def test_intensity_chart_alt_states_the_critical_batches_of_the_table():
    """Issue 25: the alt text read the weight lens off the plotting grid ("batch 304"; the table and checker:
    296). Every batch it says reaches the ridge is critical_batch's, for each lens and context."""
    import re

    from roofline_lessons.core.units import count
    from roofline_lessons.viz import plots

    for model, contexts in (("qwen3.8-27b", (1024, 8192, 32768, 131072)), ("llama-3.1-8b", (0, 1024, 8192))):
        alt = _alt_of(plots.intensity_vs_batch(model, "h100-sxm", contexts=contexts))
        weights = critical_batch(model, "h100-sxm", contexts[-1], lens="weights only")
        assert alt.endswith(f"reach the ridge at batch {count(weights)}."), alt
        said = re.findall(r"reach(?:ing)? the ridge (?:only )?at batch ([\d,]+)", alt)
        exact = [critical_batch(model, "h100-sxm", c) for c in contexts]
        assert said == [count(b) for b in exact if b is not None] + [count(weights)], (said, exact)
        for c, b in zip(contexts, exact):  # "below the ridge at every batch" only where the ceiling says so
            if b is None:
                assert intensity_ceiling(model, c) < place(model, "h100-sxm").ridge_point_flop_per_byte
    qwen = _alt_of(plots.intensity_vs_batch("qwen3.8-27b", "h100-sxm", contexts=(8192,)))
    assert "batch 296." in qwen and "304" not in qwen


def test_throughput_chart_alt_states_the_capacity_table_s_largest_batches():
    """Issue 25: "the largest batch that fits, 45 / 140 / 197" came from the grid; the capacity table says
    46 / 141 / 201. The alt text, the end of each solid line and the table are one call's figures."""
    from roofline_lessons.core.units import count, duration, num
    from roofline_lessons.viz import plots
    from roofline_lessons.viz.charts import part_style

    parts = ["h100-sxm", "h200", "b200"]
    fig = plots.throughput_vs_latency("qwen3.8-27b", parts, context_tokens=8192)
    alt = _alt_of(fig)
    table = largest_batch("qwen3.8-27b", parts, np.array([8192]))
    for part in parts:
        cap = int(table[part][0])
        assert cap == plots._largest_fitting_batch("qwen3.8-27b", part, 8192)
        at = decode_sweep("qwen3.8-27b", part, [cap], 8192)
        assert (f"{part}: at batch 1" in alt and f"the largest batch that fits, {count(cap)}: "
                f"{duration(at.step_time_s[0])} per token, {num(at.tokens_per_s[0])} tokens/s" in alt), (part, alt)
        # the solid line ends at that exact batch
        solid = [ln for ln in fig.axes[0].get_lines()
                 if ln.get_color() == part_style(part).colour and ln.get_linestyle() != ":" and len(ln.get_xdata()) > 1]
        assert solid and np.isclose(solid[0].get_xdata()[-1], at.step_time_s[0] * 1e3)
    assert [int(table[p][0]) for p in parts] == [46, 141, 201]
    for grid_figure in ("45:", "140:", "197:"):
        assert grid_figure not in alt


def test_throughput_chart_says_when_nothing_fits():
    from roofline_lessons.viz import plots

    alt = _alt_of(plots.throughput_vs_latency("qwen3.8-27b", ["h100-sxm"], context_tokens=524288))
    assert "(does not fit)" in alt and "no batch fits" in alt


def test_lessons_1_and_3_do_not_put_the_kernel_on_its_roof_from_the_bound_alone():
    """Issue 25, item 15: the roof is the best possible; only measured bandwidth says a kernel is near it."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "py" / "notebooks"
    for name in ("01_the_concept.py", "03_prefill_vs_decode.py"):
        text = (root / name).read_text("utf-8")
        assert "on its roof**" not in text and "it is on the bandwidth roof" not in text, name
        assert "near its roof only if its measured bandwidth confirms it" in text, name
        assert '"decode_fraction_of_memory_floor"' in text, name  # the catalog's batch-1 study, not a typed 27 %
    assert "single-digit percentages" not in (root / "01_the_concept.py").read_text("utf-8")


# ---- the strict reader's second pass on lessons 1, 3 and 4 (M1, M2, M8) ----

def test_the_27_percent_study_is_quoted_with_its_cuda_graphs_ab():
    """M1: the 27 % was measured without CUDA Graphs; graphs alone give 1.259× on the same stack (27 % → ~34 %),
    so the lessons call the gap runtime overhead more than a slow kernel, from the catalog's two entries."""
    from pathlib import Path

    from roofline_lessons.topics.datasheets import best_measurement

    study = best_measurement("h100-sxm", "decode_fraction_of_memory_floor")
    graphs = best_measurement("h100-sxm", "cuda_graphs_decode_speedup")
    assert graphs.source == study.source and "no CUDA Graphs" in study.conditions  # the A/B's baseline
    assert study.conditions.split(", no CUDA Graphs")[0] in graphs.conditions  # the same setup
    assert round(100 * study.value * graphs.value) == 34
    root = Path(__file__).resolve().parents[1] / "py" / "notebooks"
    for name in ("01_the_concept.py", "03_prefill_vs_decode.py"):
        text = (root / name).read_text("utf-8")
        assert '"cuda_graphs_decode_speedup"' in text and "study.conditions" in text, name
        assert "study.value * graphs.value" in text, name
        assert "A better kernel can close that gap" not in text, name
    assert "more than" in (root / "01_the_concept.py").read_text("utf-8")


def test_throughput_limit_is_what_the_bound_approaches():
    from roofline_lessons.topics.batching import throughput_limit_tokens_per_s

    limit = throughput_limit_tokens_per_s("qwen3.8-27b", "h100-sxm", 8192)
    tps = decode_sweep("qwen3.8-27b", "h100-sxm", [46, 10_000, 1_000_000], 8192).tokens_per_s
    assert np.all(np.diff(tps) > 0) and np.all(tps < limit * (1 + 1e-9))
    assert tps[-1] == pytest.approx(limit, rel=1e-3)


def test_qwen_never_reaches_the_ridge_by_either_count_and_capacity_caps_it():
    """M2: lesson 4 said the capacity limit 'arrives long before any compute limit'; for Qwen3.8-27B there is no
    compute limit at any context (ceilings 12–167 FLOP/byte against a ridge of 295)."""
    from pathlib import Path

    ridge = place("qwen3.8-27b", "h100-sxm").ridge_point_flop_per_byte
    for ctx in (0, 1024, 8192, 32768, 131072):
        assert intensity_ceiling("qwen3.8-27b", ctx) < ridge
        assert intensity_ceiling("qwen3.8-27b", ctx, compulsory=True) < ridge
        assert intensity_ceiling("qwen3.8-27b", ctx, compulsory=True) >= intensity_ceiling("qwen3.8-27b", ctx)
    text = (Path(__file__).resolve().parents[1] / "py" / "notebooks" / "04_batching.py").read_text("utf-8")
    assert "long before any compute limit" not in text and "Capacity usually caps the batch first" not in text
    assert "throughput_limit_tokens_per_s" in text and "No batch makes this decode compute-bound" in text


def test_intensity_chart_marks_where_the_batch_stops_fitting():
    """M8: curves ran to batch 2,048 at 32K and 128K without saying those batches do not fit. Each curve is solid
    up to max_batch_that_fits's batch, dotted there, faint beyond, and the alt text states the batch."""
    import re

    from roofline_lessons.core.units import count
    from roofline_lessons.viz import plots

    contexts = (1024, 8192, 32768, 131072)
    fig = plots.intensity_vs_batch("qwen3.8-27b", "h100-sxm", contexts=contexts)
    alt = _alt_of(fig)
    caps = [plots._largest_fitting_batch("qwen3.8-27b", "h100-sxm", c) for c in contexts]
    assert caps[-1] == 3 and caps[1] == 46
    assert re.findall(r"at most ([\d,]+) sequences fit", alt) == [count(c) for c in caps]
    lines = fig.axes[0].get_lines()
    for cap in caps:
        solid = [ln for ln in lines if ln.get_alpha() in (None, 1.0) and len(ln.get_xdata()) > 1
                 and ln.get_xdata()[-1] == cap]
        faint = [ln for ln in lines if ln.get_alpha() is not None and ln.get_alpha() < 1 and len(ln.get_xdata()) > 1
                 and ln.get_xdata()[0] == cap]
        dot = [ln for ln in lines if ln.get_marker() == "o" and list(ln.get_xdata()) == [cap]]
        assert solid and faint and dot, cap
    # where every batch shown fits, nothing is faint
    small = plots.intensity_vs_batch("llama-3.1-8b", "h100-sxm", contexts=(0,), batches=np.array([1.0, 8, 64]))
    assert all(ln.get_alpha() in (None, 1.0) for ln in small.axes[0].get_lines() if len(ln.get_xdata()) > 1)
    assert "every batch shown fits" in _alt_of(small)
