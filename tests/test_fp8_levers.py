"""Lesson 7's levers are real configurations, and the measured FP8 gap is presented with its conditions."""

import itertools

import pytest

from roofline_lessons import place
from roofline_lessons.core.costs import LOW_PRECISION_COMPUTE
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.core.hardware import list_parts
from roofline_lessons.topics.datasheets import best_measurement
from roofline_lessons.topics.levers import (AT_RIDGE_TOLERANCE, BASELINE, FP8_GAP_HYPOTHESES, KV_FORMATS, LEVER_SPECS,
                                            LEVERS, WEIGHT_RECIPES, gap_verdict, lever_speedup, lever_speedups,
                                            operand_bytes_per_s_ratio, recipe_fields, regime)

MODEL = "qwen3.8-27b"


def test_every_lever_and_recipe_is_a_real_configuration():
    """Low-precision matmuls come with weights in the same format; nothing is 'FP8 compute over BF16 weights'."""
    for change in [*LEVERS.values(), *(r.changes for r in WEIGHT_RECIPES.values())]:
        compute = change.get("compute_dtype", "bf16")
        if compute in LOW_PRECISION_COMPUTE:
            assert change.get("weights_dtype") == compute
        assert "attention_compute_dtype" not in change  # attention stays BF16 unless a lever says so
    assert list(LEVERS)[0] == BASELINE and LEVERS[BASELINE] == {}
    assert all(lev.what for lev in LEVER_SPECS)
    assert all(lev.not_counted for lev in LEVER_SPECS[1:])  # every lever says what the bound leaves out


def test_the_old_invalid_lever_is_refused_by_the_cost_model():
    with pytest.raises(RooflineInputError, match="not a real configuration"):
        place(MODEL, "h100-sxm", phase="prefill", prompt_tokens=512, compute_dtype="fp8")


def test_w8a8_keeps_attention_at_bf16_and_prefill_gains_under_the_peak_ratio():
    base = place(MODEL, "h100-sxm", phase="prefill", prompt_tokens=8192)
    w8a8 = place(MODEL, "h100-sxm", phase="prefill", prompt_tokens=8192, **LEVERS["W8A8 FP8"])
    assert w8a8.workload.other_compute_dtype == "bf16"
    c = w8a8.cost  # the lm_head stays BF16 under the recipe, so it keeps the BF16 rate too
    expected = float(base.compute_time_s) / (float(c.weight_matmul_flops - c.unquantized_matmul_flops) / 1978.9e12
                                             + float(c.other_flops + c.unquantized_matmul_flops) / 989.4e12)
    assert lever_speedup(MODEL, "h100-sxm", "prefill", "W8A8 FP8").speedup_estimate == pytest.approx(expected, rel=1e-9)
    assert expected < 2.0


def test_weight_only_changes_only_weight_bytes_and_runs_without_fp8_units():
    for part in ("a100-80gb", "h100-sxm"):
        base = place(MODEL, part, phase="decode", context_tokens=8192)
        wo = place(MODEL, part, phase="decode", context_tokens=8192, **LEVERS["weight-only 8-bit (W8A16)"])
        kept = sum(float(op.weight_bytes) * op.layers for op in base.cost.ops if op.block in ("embedding", "head")
                   or "norm" in op.name or op.name == "short_conv")  # kept BF16 (not linear); every linear weight halves
        assert float(wo.cost.weight_bytes) == pytest.approx((float(base.cost.weight_bytes) - kept) / 2 + kept)
        assert float(wo.cost.kv_bytes) == float(base.cost.kv_bytes)
        assert float(wo.cost.flops) == float(base.cost.flops) and wo.matmul_peak_flops_per_s == base.matmul_peak_flops_per_s


def test_unavailable_levers_say_why_and_never_crash():
    for part in list_parts():
        for r in lever_speedups(MODEL, part, "decode", 8192, 1):
            assert (r.speedup_estimate is None) == (r.unavailable is not None) == (r.placement is None)
            assert r.label == "not available" if r.speedup_estimate is None else r.label.endswith(("-bound)", "at the ridge)"))
    a100 = lever_speedup(MODEL, "a100-80gb", "prefill", "W8A8 FP8")
    assert a100.speedup_estimate is None and a100.fits is None and "fp8" in a100.unavailable
    with pytest.raises(RooflineInputError, match="unknown lever"):
        lever_speedup(MODEL, "h100-sxm", "decode", "FP8 compute")


@pytest.mark.parametrize("recipe,kv", list(itertools.product(WEIGHT_RECIPES, KV_FORMATS)))
def test_dashboard_views_for_every_recipe_on_every_part(recipe, kv):
    from roofline_lessons.viz.dashboards import lesson07_view

    for part in list_parts():
        v = lesson07_view(part, "decode", recipe, kv, batch=16)
        assert v.text
        if v.error:
            assert v.baseline is None and "not available" in v.text
        else:
            assert v.speedup > 0 and v.fits is not None


def test_recipe_fields_validate_names():
    assert recipe_fields("W8A8 FP8", "FP8 KV cache") == {"weights_dtype": "fp8", "compute_dtype": "fp8",
                                                         "kv_dtype": "fp8"}
    for bad in (("FP8 compute", "BF16 KV cache"), ("W8A8 FP8", "fp8"), (None, None)):
        with pytest.raises(RooflineInputError):
            recipe_fields(*bad)


def test_measured_matmul_figures_carry_their_conditions():
    """The H100/H200/B200/A100 MAMF figures say at which shape and with which build they were measured."""
    for part, dtype in (("a100-80gb", "bf16"), ("h100-sxm", "bf16"), ("h100-sxm", "fp8"), ("h200", "fp8"),
                        ("b200", "bf16"), ("b200", "fp8")):
        m = best_measurement(part, "matmul_flops_per_s", dtype)
        assert m.shape.count("×") == 2 and m.software.startswith("PyTorch"), (part, dtype)


def test_the_gap_is_presented_as_hypotheses_with_tests():
    assert len(FP8_GAP_HYPOTHESES) >= 3
    names = {h.name for h in FP8_GAP_HYPOTHESES}
    assert "clock or power throttling" in names and "fixed per-tile epilogue" in names
    for h in FP8_GAP_HYPOTHESES:
        assert h.mechanism and h.test
    assert operand_bytes_per_s_ratio("h100-sxm") == pytest.approx(1.0, rel=1e-3)
    assert operand_bytes_per_s_ratio("b200", "fp4", "fp8") == pytest.approx(1.0, rel=1e-3)


def test_lesson07_prose_has_no_established_blame():
    """The lesson and the solutions must not state the FP8 gap's cause as fact."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for rel in ("py/notebooks/07_fp8_knee_shift.py", "py/solutions/07_fp8_knee_shift.py"):
        text = root.joinpath(rel).read_text()
        assert "the data movement around it (scaling factors, conversions" not in text
        assert "FP8 compute\"" not in text and "'FP8 compute'" not in text


def test_at_the_ridge_within_tolerance():
    assert regime(99.5, 100) == regime(100.9, 100) == "at the ridge"
    assert regime(98, 100) == "memory-bound" and regime(102, 100) == "compute-bound"
    assert AT_RIDGE_TOLERANCE == pytest.approx(0.01)
    b200 = lever_speedup(MODEL, "b200", "prefill", "W8A8 FP8", tokens=540)  # I within 0.2 % of its ridge
    assert b200.regime == "at the ridge" and b200.label.endswith("(at the ridge)")
    h100 = lever_speedup(MODEL, "h100-sxm", "prefill", "W8A8 FP8", tokens=540)
    assert h100.regime == "memory-bound"


def test_w8a8_int8_is_the_a100_prefill_lever_and_missing_rates_are_not_available():
    a100 = lever_speedup(MODEL, "a100-80gb", "prefill", "W8A8 INT8")
    h100 = lever_speedup(MODEL, "h100-sxm", "prefill", "W8A8 FP8")
    assert a100.speedup_estimate == pytest.approx(h100.speedup_estimate, rel=1e-3) and a100.bound == "compute"
    # a format the part has no rate for: the A100 has no FP8 units, the TPU v5e's FP8 rate is not published
    for part, why in (("a100-80gb", "no units"), ("tpu-v5e", "not published")):
        r = lever_speedup(MODEL, part, "prefill", "W8A8 FP8")
        assert r.speedup_estimate is None and r.label == "not available" and "no fp8 rate in the catalog" in r.unavailable
        assert why in r.unavailable


def test_weight_only_plus_fp8_kv_reads_the_bytes_of_w8a8_plus_fp8_kv():
    for tokens, batch in ((8192, 32), (65536, 16)):
        rs = {r.lever: r for r in lever_speedups(MODEL, "h100-sxm", "decode", tokens, batch)}
        a, b = rs["weight-only 8-bit + FP8 KV cache"], rs["W8A8 FP8 + FP8 KV cache"]
        assert float(a.placement.cost.bytes) == float(b.placement.cost.bytes)
        assert a.speedup_estimate == pytest.approx(b.speedup_estimate, rel=1e-6) and a.fits == b.fits
    long = {r.lever: r for r in lever_speedups(MODEL, "h100-sxm", "decode", 65536, 16)}
    assert [n for n, r in long.items() if r.fits] == ["weight-only 8-bit + FP8 KV cache", "W8A8 FP8 + FP8 KV cache"]


def test_gap_verdicts():
    frac = {(p, d): best_measurement(p, "matmul_flops_per_s", d).value / 1e12
            for p in ("h100-sxm", "b200") for d in ("bf16", "fp8")}
    from roofline_lessons import get_part

    gap = {p: 100 * (frac[p, "bf16"] / get_part(p).peak_flops_per_s("bf16") * 1e12
                     - frac[p, "fp8"] / get_part(p).peak_flops_per_s("fp8") * 1e12) for p in ("h100-sxm", "b200")}
    assert gap_verdict(gap["h100-sxm"]) == "FP8 clearly lower" and gap_verdict(gap["b200"]) == "not resolved"
    assert gap_verdict(-10) == "FP8 clearly higher"


def test_pipeline_latency_hypothesis_is_conditional_on_the_k_tile():
    h = next(h for h in FP8_GAP_HYPOTHESES if h.name == "per-step pipeline latency")
    assert "K-tile in bytes" in h.mechanism and "stay the same" in h.mechanism


def test_each_lever_gives_the_speedup_of_the_bound_and_of_the_estimate():
    """speedup_lower_bound is the ratio of lower bounds, speedup_estimate the ratio of estimates (``speedup``
    keeps the estimate's old name); they part where a convention of the estimate matters."""
    base = place(MODEL, "h100-sxm", phase="prefill", prompt_tokens=512)
    rs = {r.lever: r for r in lever_speedups(MODEL, "h100-sxm", "prefill", 512)}
    for name, r in rs.items():
        p = place(MODEL, "h100-sxm", phase="prefill", prompt_tokens=512, **LEVERS[name])
        assert r.speedup_lower_bound == pytest.approx(float(base.time_lower_bound_s / p.time_lower_bound_s))
        assert r.speedup_estimate == pytest.approx(float(base.time_estimate_s / p.time_estimate_s))
        assert r.lower_bound_roof == p.lower_bound_roof and r.bound == p.bound
    # weight-only: the estimate adds dequantisation in series (slower), the bound overlaps it (no slower)
    w8 = rs["weight-only 8-bit (W8A16)"]
    assert w8.speedup_estimate < 0.99 and w8.speedup_lower_bound == pytest.approx(1.0, abs=1e-9)
    assert w8.label_both.startswith("bound 1.00× (compute-bound); estimate 0.97×")
    # a short W8A8 prefill: the estimate's unfused activations make it memory-bound, the bound is compute-bound
    w8a8 = rs["W8A8 FP8"]
    assert w8a8.regime == "memory-bound" and w8a8.regime_lower_bound == "compute-bound"
    assert w8a8.speedup_lower_bound > w8a8.speedup_estimate
    assert rs[BASELINE].label_both == "1.00× (compute-bound), both" and rs[BASELINE].same_both


def test_the_levers_name_the_default_8_bit_recipe():
    for lev in LEVER_SPECS[1:]:
        if "weights_dtype" in lev.changes:
            assert lev.recipe.startswith("the linear layers of the blocks") and "lm_head" in lev.recipe
    assert LEVER_SPECS[0].recipe.startswith("none")


def test_lesson07_exercises_3_to_5_ask_for_the_bound_and_the_estimate_is_within_the_tolerance():
    """7.3–7.5 ask for the bound's speed-up; the checkers' 1 % also covers the estimate's there (the solutions say
    so), and the quantise-everything figure is outside it."""
    from roofline_lessons.course.checks import lesson07

    for phase, lever in (("decode", "weight-only 8-bit (W8A16)"), ("prefill", "W8A8 FP8"), ("decode", "W8A8 FP8")):
        r = lever_speedup(MODEL, "h100-sxm", phase, lever)
        assert r.speedup_estimate == pytest.approx(r.speedup_lower_bound, rel=0.01)
    r = lever_speedup(MODEL, "h100-sxm", "decode", "weight-only 8-bit (W8A16)")
    assert lesson07.decode_fp8_weights_speedup(r.speedup_lower_bound).passed
    assert lesson07.decode_fp8_weights_speedup(r.speedup_estimate).passed
    every = {m.label: m.value for m in lesson07._m73()}["quantise the embedding and lm_head too (the recipe keeps them BF16)"]
    assert every > 1.02 * r.speedup_lower_bound


def test_measured_matmul_figures_are_the_sources_and_dated():
    """The MAMF rows store the source's figures (not rounded), when the catalog took them, and say what the
    source does not give (power cap, clocks)."""
    from roofline_lessons import get_part

    expected = {("h100-sxm", "bf16"): 794.5e12, ("h100-sxm", "fp8"): 1402.6e12, ("a100-80gb", "bf16"): 271.2e12,
                ("h200", "fp8"): 1453.4e12, ("b200", "bf16"): 1745.0e12, ("b200", "fp8"): 3432.5e12,
                ("mi300x", "bf16"): 668.4e12}
    for (part, dtype), value in expected.items():
        m = best_measurement(part, "matmul_flops_per_s", dtype)
        assert m.value == value and m.date and "power cap" in m.conditions, (part, dtype)
    assert "80 TFLOPS" in get_part("b200").notes and "stas00/ml-engineering" in get_part("b200").notes


def test_lesson07_reads_capacity_in_gib_and_asserts_its_reasons():
    from pathlib import Path

    text = Path(__file__).resolve().parents[1].joinpath("py/notebooks/07_fp8_knee_shift.py").read_text()
    assert "gb(get_part('h100-sxm').memory_capacity_bytes)" not in text and "binary(" in text
    assert "is above the bound" not in text and "at least the bound's time" in text
    assert "assert head_share > 0.5" in text and "last position only" in text
    assert "(weight-only prefill," not in text and "(a short weight-only prefill," in text


def test_the_cost_model_charges_dequantisation_and_4bit_scales_and_the_levers_say_so():
    """Issue 25: lesson 7 and the levers said the cost model charges nothing for dequantising or scales; it
    charges both (dequant FLOPs for weight-only, 4-bit block scales in the bytes). Only what it truly leaves
    out may be listed as not charged, and the 8-bit per-channel scales' size is computed, not called small."""
    import re

    from roofline_lessons.core.costs import DEQUANT_FLOPS_PER_WEIGHT
    from roofline_lessons.core.dtypes import weight_bytes_per_element
    from roofline_lessons.topics.levers import per_channel_scale_share

    w8 = place(MODEL, "h100-sxm", phase="prefill", prompt_tokens=512, **LEVERS["weight-only 8-bit (W8A16)"])
    assert float(w8.cost.dequant_flops) > 0 and float(w8.dequant_time_s) > 0
    assert weight_bytes_per_element("fp4") > 0.5 and weight_bytes_per_element("int4") > 0.5  # block scales counted
    for lev in list(LEVER_SPECS) + list(WEIGHT_RECIPES.values()):
        if "weights_dtype" in lev.changes and "compute_dtype" not in lev.changes:  # weight-only
            assert "charged" in lev.what and f"{DEQUANT_FLOPS_PER_WEIGHT:g} FLOPs a weight" in lev.what, lev.name
        # dequantising the weights is never listed as uncharged (4-bit: only work *beyond* the charged FLOPs)
        assert not re.search(r"dequantis\w* the weights", lev.not_counted), lev.name
        assert "rounding error" not in lev.not_counted and "negligible" not in lev.not_counted, lev.name
        if "block scales" in lev.not_counted:
            assert "weights' block scales are counted" in lev.not_counted, lev.name
    assert per_channel_scale_share(MODEL) == pytest.approx(2 / 5120)  # one BF16 scale per row of >= 5,120 inputs
    assert per_channel_scale_share("deepseek-v3") == pytest.approx(2 / 512)  # MLA's kv_lora_rank inputs


def test_lesson_7_does_not_say_dequantisation_or_weight_scales_are_free():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "py" / "notebooks" / "07_fp8_knee_shift.py").read_text()
    assert "charges nothing for dequantis" not in text and "rounding error" not in text
    assert "per_channel_scale_share(MODEL)" in text and "What the cost model *does* charge" in text


# ---- the second reader's findings on lesson 7 ---------------------------------------------------

def _lesson7_prose():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "py" / "notebooks" / "07_fp8_knee_shift.py").read_text()
    return re.sub(r'"\s*\n\s*(?:\+\s*)?f?"', "", text)


def test_m6_a_slower_short_prefill_is_for_measurement_not_the_estimates_convention():
    text = _lesson7_prose()
    assert "is the estimate's convention, not a property of the lever" not in text
    assert "whether weight-only makes a short prefill slower is for measurement" in text
    assert "dequantises each weight tile again for every block of token rows" in text
    for lev in list(LEVER_SPECS) + list(WEIGHT_RECIPES.values()):
        if "weights_dtype" in lev.changes and "compute_dtype" not in lev.changes:  # weight-only
            assert "once per weight per step" in lev.what, lev.name
            assert "block of token rows" in lev.not_counted or lev.not_counted == "as for each of the two", lev.name


def test_n6_fp4_is_named_as_mxfp4_and_nvfp4_costs_more():
    from roofline_lessons.core.dtypes import weight_bytes_per_element

    assert weight_bytes_per_element("fp4") == 0.53125 and weight_bytes_per_element("fp4", group_size=16) == 0.5625
    text = _lesson7_prose()
    assert "modelled as MXFP4" in text and "NVFP4 (one FP8 scale per 16)" in text


def test_n7_the_h200_has_no_pair_and_the_lesson_says_why():
    from roofline_lessons.topics.levers import SOURCE_NOTES_ONLY

    assert best_measurement("h200", "matmul_flops_per_s", "bf16") is None  # no H200 BF16 run is filed
    assert SOURCE_NOTES_ONLY[("h200", "bf16")] == ("h100-sxm", "H200 is the same")
    theirs, ours = (best_measurement(p, "matmul_flops_per_s", d) for p, d in (("h100-sxm", "bf16"), ("h200", "fp8")))
    assert theirs.software != ours.software  # two builds: the reason the note is not paired
    text = _lesson7_prose()
    assert "def no_pair(pid)" in text and "SOURCE_NOTES_ONLY" in text
    assert "(a format without a measurement or without a rate)" not in text
