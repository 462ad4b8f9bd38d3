"""Lesson 12 (shrinking the bytes): the topic functions follow the cost model and refuse bad input by
name; the checkers accept the solutions, reject stubs, wrong types and each classic mistake by name,
and follow the package; the lesson states its conventions and prints no scientific notation."""

import math
import re
from dataclasses import FrozenInstanceError, fields
from pathlib import Path

import numpy as np
import pytest

from roofline_lessons import get_model, get_part, place
from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.errors import RooflineInputError
from roofline_lessons.course.checks import lesson12
from roofline_lessons.topics import shrinking as sh

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "py" / "notebooks" / "12_shrinking_the_bytes.py"
SOLUTIONS = ROOT / "py" / "solutions" / "12_shrinking_the_bytes.py"
GiB = 2**30


# ---- KV bytes against context -------------------------------------------------------------------------


def test_kv_curve_has_the_fields_the_chart_reads():
    assert [f.name for f in fields(sh.KvCurve)] == ["label", "context_tokens", "kv_bytes", "state_bytes",
                                                    "beyond_limit_from", "kind"]
    with pytest.raises(FrozenInstanceError):
        sh.kv_curves()[0].label = "x"  # frozen


@pytest.fixture(scope="module")
def curves():
    return {c.label: c for c in sh.kv_curves()}


def test_kv_curves_cover_every_design_1k_to_1m(curves):
    kinds = {c.kind for c in curves.values()}
    assert kinds == set(sh.KINDS)
    for c in curves.values():
        assert c.context_tokens[0] == 1024 and c.context_tokens[-1] == 2**20
        assert c.context_tokens.shape == c.kv_bytes.shape and np.all(np.diff(c.context_tokens) > 0)
    mqa = next(c for c in curves.values() if c.kind == "MQA")
    assert "what-if" in mqa.label


def test_kv_curves_mark_the_models_limit(curves):
    for mid in ("llama-3.1-70b", "deepseek-v3", "qwen3.8-27b"):
        m = get_model(mid)
        c = curves[m.name]
        assert c.beyond_limit_from == m.max_context_tokens
        assert m.max_context_tokens in c.context_tokens  # the limit itself is a point of the curve
        assert np.array_equal(c.within_limit, c.context_tokens <= m.max_context_tokens)
        np.testing.assert_allclose(c.kv_bytes, m.kv_cache_bytes_per_sequence(c.context_tokens, "bf16"))
    short = sh.kv_curves(["llama-3.1-8b"], contexts=[1024, 4096])[0]
    assert short.beyond_limit_from is None and short.within_limit.all()


def test_hybrid_state_is_constant_and_shown_beside_its_kv(curves):
    q = get_model("qwen3.8-27b")
    c = curves[q.name]
    assert c.state_bytes == pytest.approx(q.deltanet_state_bytes() + q.conv_state_bytes())
    assert c.state_bytes > 0 and all(x.state_bytes == 0 for x in curves.values() if x is not c)
    # its KV counts only the full-attention layers
    assert c.kv_bytes_at(32768) == pytest.approx(q.num_full_attention_layers * 32768
                                                 * q.kv_bytes_per_token_per_layer("bf16"))


def test_mla_caches_the_latent_and_windows_cap_only_local_layers(curves):
    d = get_model("deepseek-v3")
    assert curves[d.name].kv_bytes_at(4096) == pytest.approx(d.num_hidden_layers * 576 * 2 * 4096)
    assert sh.mla_per_head_kv_elements(d) == d.num_attention_heads * (128 + 64 + 128)
    g = get_model("gemma-3-27b")
    per = g.kv_bytes_per_token_per_layer("bf16")
    assert curves[g.name].kv_bytes_at(32768) == pytest.approx((10 * 32768 + 52 * 1024) * per)
    assert curves[g.name].kv_bytes_at(1024) == pytest.approx(62 * 1024 * per)


def test_mqa_what_if_divides_the_cache_by_the_kv_heads():
    base, mqa = get_model("llama-3.1-8b"), sh.mqa_what_if("llama-3.1-8b")
    assert mqa.num_key_value_heads == 1 and mqa.id.endswith("what-if")
    assert base.kv_bytes_per_token() / mqa.kv_bytes_per_token() == base.num_key_value_heads
    assert sh.is_what_if(mqa) and not sh.is_what_if("llama-3.1-8b")


def test_kv_table_rows():
    rows = {r.label: r for r in sh.kv_table(context_tokens=32768)}
    g = rows[get_model("gemma-3-27b").name]
    assert (g.full_layers, g.window_layers, g.window_tokens) == (10, 52, 1024)
    q = rows[get_model("qwen3.8-27b").name]
    assert q.deltanet_layers == 48 and q.state_bytes > 0
    assert not any(r.beyond_limit for r in rows.values())


# ---- MLA absorbed vs expanded ------------------------------------------------------------------------


def test_mla_forms_match_the_cost_model_and_widen_with_context():
    f = sh.mla_forms("deepseek-v3", contexts=(1024, 32768))
    e = model_cost("deepseek-v3", phase="decode", context_tokens=32768, mla_absorbed=False)
    assert f.expanded_flops[1] == pytest.approx(e.block_total("mla", "flops"))
    assert np.all(f.expanded_flops > f.absorbed_flops) and f.flops_ratio[1] > f.flops_ratio[0]
    default = model_cost("deepseek-v3", phase="decode", context_tokens=32768)
    assert f.absorbed_flops[1] == pytest.approx(default.block_total("mla", "flops"))  # absorbed in decode


def test_expanded_mla_decode_costs_flops_not_compulsory_bytes():
    """The expanded form's extra bytes are the estimate's unfused K and V; its compulsory bytes are the
    absorbed form's, so by the bound it is slower only through its FLOPs."""
    f = sh.mla_forms("deepseek-v3", contexts=(1024, 131072))
    e = model_cost("deepseek-v3", phase="decode", context_tokens=131072, mla_absorbed=False)
    assert f.expanded_compulsory_bytes[1] == pytest.approx(e.block_total("mla", "compulsory_bytes"))
    assert np.allclose(f.expanded_compulsory_bytes, f.absorbed_compulsory_bytes)
    assert f.expanded_bytes[1] > 10 * f.expanded_compulsory_bytes[1]  # unfused at long context: far more
    part = get_part("b200")
    assert f.compute_time_s("b200", "expanded")[1] == pytest.approx(f.expanded_flops[1] / part.peak_flops_per_s("bf16"))
    bandwidth = part.memory_bandwidth_bytes_per_s
    assert f.memory_lower_bound_s(part)[1] == pytest.approx(f.absorbed_compulsory_bytes[1] / bandwidth)
    absorbed, expanded = f.lower_bound_s(part), f.lower_bound_s(part, "expanded")
    assert np.all(absorbed == f.memory_lower_bound_s(part))  # absorbed: memory-bound
    assert expanded[1] == f.compute_time_s(part, "expanded")[1] > 10 * absorbed[1]  # expanded: compute-bound
    with pytest.raises(RooflineInputError, match="form"):
        f.lower_bound_s(part, "latent")


# ---- the byte budget and the levers ----------------------------------------------------------------


def test_byte_budget_adds_up_to_the_placement():
    b = sh.byte_budget("llama-3.1-70b", "b200", 16, 8192, weights_dtype="int4")
    p = place("llama-3.1-70b", "b200", phase="decode", batch=16, context_tokens=8192, weights_dtype="int4")
    assert b.total_bytes == pytest.approx(float(p.cost.bytes))
    assert b.step_estimate_s == pytest.approx(float(p.time_estimate_s))
    assert b.step_lower_bound_s == pytest.approx(float(p.time_lower_bound_s)) and b.step_lower_bound_s <= b.step_estimate_s
    assert b.compulsory_bytes == pytest.approx(float(p.cost.compulsory_bytes)) and b.compulsory_bytes < b.total_bytes
    assert sum(b.shares().values()) == pytest.approx(1.0)
    assert list(b.parts()) == list(sh.BUDGET_PARTS)


@pytest.fixture(scope="module")
def levers():
    return {lv.lever.split(" (")[0]: lv for lv in sh.byte_levers("llama-3.1-70b", "b200", 16, 8192)}


def test_each_format_lever_moves_its_own_part(levers):
    assert levers["int4 weights"].moves == ("weights",)
    assert levers["FP8 KV cache"].moves == ("KV cache",)
    assert levers["FP8 KV cache"].change()["KV cache"] == pytest.approx(-0.5, abs=0.01)
    assert levers["INT4 KV cache"].moves == ("KV cache",)
    batching = next(v for k, v in levers.items() if k.startswith("batching"))
    assert batching.moves == ("weights",) and batching.change()["weights"] == pytest.approx(1 / 8 - 1, rel=1e-4)  # embedding rows grow


def test_architecture_levers_are_what_ifs_that_cut_the_kv(levers):
    arch = [lv for lv in levers.values() if lv.what_if]
    assert len(arch) == 4 and all(lv.main_part == "KV cache" for lv in arch)
    hybrid = next(lv for lv in arch if lv.lever.startswith("hybrid"))
    assert "state" in hybrid.moves and math.isinf(hybrid.change()["state"])
    assert levers["sliding windows"].change()["weights"] == pytest.approx(0.0)


# ---- weight formats and 4-bit -------------------------------------------------------------------------


def test_int4_costs_its_scale_and_keeps_the_embedding_bf16():
    assert sh.int4_bytes_per_weight(128) == 0.5 + 2 / 128
    m = get_model("llama-3.1-70b")
    kept = 2 * m.vocab_size * m.hidden_size + (2 * m.num_hidden_layers + 1) * m.hidden_size
    s = sh.stored_weights(m, "int4")
    assert s.bytes == pytest.approx((m.parameter_count() - kept) * (0.5 + 2 / 128) + kept * 2)
    assert s.recipe == "linear" and s.ratio < 2 / (0.5 + 2 / 128)
    shipped = sh.stored_weights("gpt-oss-120b", "fp4", quantized_weights="experts")
    assert shipped.bytes < get_part("h100-sxm").memory_capacity_bytes < shipped.bf16_bytes


def test_format_speedup_is_below_every_naive_ratio_by_both_figures():
    s = sh.format_speedup("llama-3.1-70b", "b200", 4096)
    bf16 = place("llama-3.1-70b", "b200", phase="decode", context_tokens=4096)
    assert s.speedup_estimate == pytest.approx(float(bf16.time_estimate_s / s.quantized.time_estimate_s))
    assert s.speedup_of_bounds == pytest.approx(float(bf16.time_lower_bound_s / s.quantized.time_lower_bound_s))
    assert s.speedup_estimate < s.speedup_of_bounds < s.weight_bytes_ratio < s.element_ratio < 4
    assert s.speedup_of_bounds == pytest.approx(s.speedup_estimate, rel=0.01)  # batch 1: the figures agree
    q = s.quantized.cost
    assert s.other_bytes(compulsory=True) == pytest.approx(float(q.compulsory_bytes - q.weight_bytes))
    assert s.other_bytes() == pytest.approx(float(q.bytes - q.weight_bytes))
    assert s.other_bytes() > s.other_bytes(compulsory=True)
    # the bound's ratio is the compulsory bytes' ratio: both steps are memory-bound at batch 1
    bf16_bytes = float(s.bf16.cost.weight_bytes) + s.other_bytes("bf16", compulsory=True)
    assert s.speedup_of_bounds == pytest.approx(bf16_bytes / float(q.compulsory_bytes))


def test_critical_batch_moves_down_for_weight_only_and_up_for_w4a4():
    bf16, int4, w4a4 = sh.critical_batches("llama-3.1-70b", "b200", 128)
    assert int4.critical_batch_estimate < bf16.critical_batch_estimate < w4a4.critical_batch_estimate
    assert int4.critical_batch_lower_bound < bf16.critical_batch_lower_bound < w4a4.critical_batch_lower_bound
    assert int4.matmul_peak_flops_per_s == bf16.matmul_peak_flops_per_s  # weight-only: the same roof
    for b, roof in ((int4.critical_batch_estimate, "bound"), (int4.critical_batch_lower_bound, "lower_bound_roof")):
        for n, want in ((b - 1, "memory"), (b, "compute")):
            assert getattr(place("llama-3.1-70b", "b200", phase="decode", batch=n, context_tokens=128,
                                 weights_dtype="int4"), roof) == want
    assert all(s.critical_batch_estimate is None and s.critical_batch_lower_bound is None
               for s in sh.critical_batches("llama-3.1-70b", "b200", 8192, max_batch=512))


def test_weight_lens_int4_meets_the_matmul_ridge_by_the_bound_and_sooner_by_the_estimate():
    """Issue 23: the estimate's 49 comes from the dequantisation in series; overlapped (the bound) the
    int4 weight lens is BF16's ÷ the weight-byte ratio (282 ÷ 3.72 ≈ 76 on a B200)."""
    from roofline_lessons.topics.batching import critical_batch

    bf16, int4, w4a4 = sh.critical_batches("llama-3.1-70b", "b200", 128)
    assert int4.weight_lens_critical_batch_estimate == critical_batch("llama-3.1-70b", "b200", 128,
                                                                      lens="weights only", weights_dtype="int4")
    assert bf16.weight_lens_critical_batch_estimate == critical_batch("llama-3.1-70b", "b200", 128, lens="weights only")
    for s in (bf16, w4a4):  # no dequantisation: one figure
        assert s.weight_lens_critical_batch_lower_bound == s.weight_lens_critical_batch_estimate
    ratio = sh.format_speedup("llama-3.1-70b", "b200", 128).weight_bytes_ratio
    assert int4.weight_lens_critical_batch_lower_bound == pytest.approx(
        bf16.weight_lens_critical_batch_lower_bound / ratio, abs=1.0)
    assert int4.weight_lens_critical_batch_estimate < int4.weight_lens_critical_batch_lower_bound
    assert int4.ridge_point_lower_bound_flop_per_byte[75] == pytest.approx(bf16.ridge_point_lower_bound_flop_per_byte[75])
    assert int4.ridge_point_flop_per_byte[75] < bf16.ridge_point_flop_per_byte[75]  # in series: a lower roof


def test_weight_only_crossover_is_where_int4_stops_winning():
    x = sh.weight_only_crossover("llama-3.1-70b", "b200", 128)
    step = lambda n, **f: float(place("llama-3.1-70b", "b200", phase="decode", batch=n, context_tokens=128,
                                      **f).time_estimate_s)
    assert step(x, weights_dtype="int4") >= step(x) and step(x - 1, weights_dtype="int4") < step(x - 1)
    assert sh.weight_only_crossover("llama-3.1-70b", "b200", 8192, max_batch=512) is None


def test_w4a4_needs_an_fp4_part():
    with pytest.raises(RooflineInputError, match="fp4"):
        sh.critical_batches("llama-3.1-70b", "h100-sxm", 128)


# ---- paged KV ---------------------------------------------------------------------------------------


def test_window_pages():
    assert sh.window_pages(1024, 32768, 16) == 64  # the window starts on a page boundary
    assert sh.window_pages(1024, 32769, 16) == 65  # … and one page more when it starts mid-page
    assert sh.window_pages(1024, 100, 16) == 7  # shorter than the window: ceil(100 / 16)


def test_paged_capacity_by_hand():
    g, h200 = get_model("gemma-3-27b"), get_part("h200")
    c = sh.paged_capacity(g, h200, 32768, 16)
    page = 16 * g.kv_bytes_per_token_per_layer("bf16")
    pool = 0.9 * h200.memory_capacity_bytes - g.parameter_count() * 2
    assert c.pool_bytes == pytest.approx(pool)
    assert c.uniform_sequences == math.floor(pool / (62 * 2048 * page))
    assert c.per_kind_sequences == math.floor(pool / ((10 * 2048 + 52 * 64) * page))
    assert 0 < c.uniform_loss < 1


@pytest.mark.parametrize("call,named", [
    (lambda: sh.kv_curves(["no-such-model"]), "no-such-model"),
    (lambda: sh.kv_curves(contexts=[0, 1024]), "contexts"),
    (lambda: sh.kv_curves(kv_dtype="fp3"), "fp3"),
    (lambda: sh.kv_table(context_tokens=-1), "-1"),
    (lambda: sh.byte_budget("llama-3.1-70b", "b200", batch=0), "batch"),
    (lambda: sh.byte_budget("llama-3.1-70b", "b200", batch=2.5), "2.5"),
    (lambda: sh.mla_forms("llama-3.1-70b"), "llama-3.1-70b"),
    (lambda: sh.mqa_what_if("deepseek-v3"), "deepseek-v3"),
    (lambda: sh.paged_capacity("llama-3.1-70b"), "llama-3.1-70b"),
    (lambda: sh.paged_capacity(page_tokens=0), "page_tokens"),
    (lambda: sh.window_pages(1024, "32K"), "32K"),
    (lambda: sh.int4_bytes_per_weight(True), "True"),
    (lambda: sh.byte_levers(batch_factor=1), "batch_factor"),
])
def test_bad_input_is_refused_by_name(call, named):
    with pytest.raises(RooflineInputError) as err:
        call()
    assert named in str(err.value)


# ---- the checkers ----------------------------------------------------------------------------------


def _solution():
    """The solutions, computed independently of the checkers (by hand where the exercise says so)."""
    d, llama, g, h200 = (get_model("deepseek-v3"), get_model("llama-3.1-70b"), get_model("gemma-3-27b"),
                         get_part("h200"))
    mla = d.num_hidden_layers * (d.kv_lora_rank + d.qk_rope_head_dim) * 2
    kept = 2 * llama.vocab_size * llama.hidden_size + (2 * llama.num_hidden_layers + 1) * llama.hidden_size
    int4 = ((llama.parameter_count() - kept) * (0.5 + 2 / 128) + kept * 2) / GiB
    step = lambda **f: float(place("llama-3.1-70b", "b200", phase="decode", context_tokens=4096,
                                   **f).time_estimate_s)
    per = g.kv_bytes_per_token_per_layer("bf16")
    gemma = (10 * 32768 + 52 * 1024) * per / GiB
    pool = 0.9 * h200.memory_capacity_bytes - g.parameter_count() * 2
    loss = 1 - math.floor(pool / (62 * 2048 * 16 * per)) / math.floor(pool / ((10 * 2048 + 52 * 64) * 16 * per))
    b = np.arange(1, 4097)
    bound = np.asarray(place("llama-3.1-70b", "b200", phase="decode", batch=b, context_tokens=128,
                             weights_dtype="int4").bound)
    return {"12.1": mla, "12.2": int4, "12.3": step() / step(weights_dtype="int4"), "12.4": gemma, "12.5": loss,
            "12.6": int(b[bound == "compute"][0])}


@pytest.mark.parametrize("ex", sorted(lesson12.EXERCISES))
def test_solution_accepted_stub_rejected(ex):
    result = lesson12.EXERCISES[ex](_solution()[ex])
    assert result.passed, result
    stub = lesson12.EXERCISES[ex](...)
    assert not stub.passed and stub.status == "not attempted"


def _by_hand_mistakes():
    """The brief's classic mistakes, computed here by hand (not taken from the checkers' lists)."""
    s = _solution()
    d, llama, g = get_model("deepseek-v3"), get_model("llama-3.1-70b"), get_model("gemma-3-27b")
    kept = 2 * llama.vocab_size * llama.hidden_size + (2 * llama.num_hidden_layers + 1) * llama.hidden_size
    per = g.kv_bytes_per_token_per_layer("bf16")
    b200 = place("llama-3.1-70b", "b200", phase="decode", batch=np.arange(1, 4097), context_tokens=128,
                 weights_dtype="fp4", compute_dtype="fp4")
    return [
        ("12.1", "per-head K and V", d.num_hidden_layers * 2 * d.num_attention_heads * d.head_dim * 2),
        # the DeepSeek-V2 paper's MHA baseline: 2 × heads × d_h per token and layer, d_h = 128
        ("12.1", "DeepSeek-V2 paper's multi-head-attention baseline", d.num_hidden_layers * 2 * d.num_attention_heads
         * 128 * 2),
        ("12.2", "forget the scales: exactly 0.5 byte", ((llama.parameter_count() - kept) * 0.5 + kept * 2) / GiB),
        ("12.2", "quantise the embedding, the lm_head", llama.parameter_count() * (0.5 + 2 / 128) / GiB),
        ("12.2", "GB (10^9 bytes) where GiB", s["12.2"] * GiB / 1e9),
        ("12.3", "assume a 4× speed-up", 4.0),
        ("12.3", "ignoring the KV cache and the activations",
         float(place("llama-3.1-70b", "b200", phase="decode", context_tokens=4096).cost.weight_bytes
               / place("llama-3.1-70b", "b200", phase="decode", context_tokens=4096,
                       weights_dtype="int4").cost.weight_bytes)),
        ("12.4", "window the global layers too", 62 * 1024 * per / GiB),
        ("12.4", "not cap the local layers", 62 * 32768 * per / GiB),
        ("12.4", "GB (10^9 bytes) where GiB", s["12.4"] * GiB / 1e9),
        ("12.5", "uniform allocator's capacity per layer kind", 0.0),
        ("12.6", "weight-only int4 raises the compute roof",
         int(np.arange(1, 4097)[np.asarray(b200.bound) == "compute"][0])),
        ("12.6", "weight lens by the lower bound", _weight_lens_lower_bound_int4()),
    ]


def _weight_lens_lower_bound_int4():
    """Lesson 12 section 6's bolded weight-lens batch for int4, by the lower bound: the first batch whose
    weight-matmul FLOPs per weight byte reach the bound's ridge (FLOPs ÷ compute lower bound ÷ bandwidth)."""
    b = np.arange(1, 4097)
    p = place("llama-3.1-70b", "b200", phase="decode", batch=b, context_tokens=128, weights_dtype="int4")
    ridge = np.asarray(p.cost.flops, dtype=float) / np.asarray(p.compute_lower_bound_s, dtype=float) \
        / get_part("b200").memory_bandwidth_bytes_per_s
    return int(b[np.asarray(p.intensity_per_weight_byte) >= ridge][0])


def test_the_papers_mha_baseline_and_the_weight_lens_bound_are_distinct_named_answers():
    """N3/N4: the DeepSeek-V2 paper's MHA count (2 × 128 heads × 128 × 61 layers × 2 bytes) and the
    bolded weight-lens lower-bound batch are named, while the solutions still pass."""
    d = get_model("deepseek-v3")
    assert d.num_hidden_layers * 2 * d.num_attention_heads * 128 * 2 == 3_997_696
    assert not lesson12.mla_kv_bytes_per_token(3_997_696).passed
    assert lesson12.mla_kv_bytes_per_token(_solution()["12.1"]).passed
    wl = _weight_lens_lower_bound_int4()
    assert wl != _solution()["12.6"] and not lesson12.int4_critical_batch(wl).passed
    assert "weight lens by the lower bound" in lesson12.int4_critical_batch(wl).message
    assert lesson12.int4_critical_batch(_solution()["12.6"]).passed


@pytest.mark.parametrize("ex,label,value", _by_hand_mistakes(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_briefs_classic_mistakes_are_named(ex, label, value):
    """MLA as per-head K and V, the scales forgotten, the embedding quantised, windows on the global
    layers or none on the local ones, GB for GiB, a 4× speed-up, weight-only raising the roof, a uniform
    allocator priced per kind: each is in its checker's list and named when given."""
    assert any(label in m.label for m in lesson12.MISTAKES[ex]()), label
    result = lesson12.EXERCISES[ex](value)
    assert not result.passed and label in result.message, result


def test_checkers_compute_from_the_package(monkeypatch):
    """Expected values are computed when the checker runs: a model with a smaller latent moves 12.1."""
    from dataclasses import replace

    base = _solution()["12.1"]
    real = lesson12.get_model
    monkeypatch.setattr(lesson12, "get_model", lambda mid: replace(real(mid), kv_lora_rank=256))
    assert not lesson12.mla_kv_bytes_per_token(base).passed
    d = get_model("deepseek-v3")
    assert lesson12.mla_kv_bytes_per_token(d.num_hidden_layers * (256 + d.qk_rope_head_dim) * 2).passed


# ---- the lesson's text -----------------------------------------------------------------------------


def _lesson_parts(path):
    """Everything the lesson's cells display, as text (md and tables printed outside a notebook), in two parts:
    the main path (above the first "Going further" heading) and the rest. Every cell runs, in order, but the
    dashboard's (it has its own tests)."""
    import contextlib
    import io

    import IPython.display
    import jupytext
    import matplotlib

    matplotlib.use("Agg")
    parts = {"main": io.StringIO(), "further": io.StringIO()}
    shown = parts["main"]
    real = IPython.display.display
    IPython.display.display = lambda obj, *a, **k: shown.write(str(getattr(obj, "data", obj)) + "\n")
    scope = {"__name__": "__main__"}
    try:
        for cell in jupytext.read(str(path)).cells:
            if cell.cell_type == "markdown":
                if cell.source.startswith("## Going further"):
                    shown = parts["further"]
                continue
            if "lesson12_dashboard(" in cell.source:
                continue
            source = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
            with contextlib.redirect_stdout(shown):
                exec(compile(source, str(path), "exec"), scope)
    finally:
        IPython.display.display = real
    return parts["main"].getvalue(), parts["further"].getvalue()


def _lesson_output(path):
    """Everything the lesson's cells display, as text."""
    return "".join(_lesson_parts(path))


@pytest.fixture(scope="module")
def lesson_parts():
    return _lesson_parts(LESSON)


@pytest.fixture(scope="module")
def lesson_text(lesson_parts):
    return "".join(lesson_parts)


def test_lesson_prints_no_scientific_notation(lesson_text):
    readable = re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,…", lesson_text)
    assert not re.search(r"\d(\.\d+)?e[+-]?\d", readable)


def test_lesson_states_its_conventions_and_formats(lesson_text):
    text = LESSON.read_text("utf-8")
    assert "**what-if**" in text and "**lower bound**" in text and "**estimate**" in text and "binary (GiB)" in text
    assert "default recipe" in text and "DEQUANT_FLOPS_PER_WEIGHT FLOPs" not in lesson_text
    assert "absorbed" in lesson_text and "expanded in prefill" in lesson_text
    assert "one bf16 scale" in lesson_text and "no zero" in lesson_text and "stay BF16" in lesson_text
    assert "MXFP4 weights for its MoE experts only" in lesson_text
    assert "with it" in lesson_text and "without" in lesson_text and "37B activated" in lesson_text
    assert "*Hypothesis:*" in lesson_text
    assert "exercises/12_shrinking_the_bytes.ipynb" in text


MAIN_PATH = ("## 1. Decode is shopping for bytes", "## 2. What a token leaves behind", "## 3. MLA in decode",
             "## 4. What a 4-bit weight costs", "## 5. 4-bit weights at batch 1", "## 6. The critical batch moves",
             "## 7. Which lever moves", "## 8. Paged KV")


def _headings():
    import jupytext

    return [line for cell in jupytext.read(str(LESSON)).cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if line.startswith("## ")]


def test_every_section_is_there_in_the_chapter_order():
    """Issue 26: the main path's short sections, the dashboard, the summary, then the deeper material, each of
    its sections headed "Going further"."""
    text = LESSON.read_text("utf-8")
    heads = _headings()
    first_further = next(i for i, h in enumerate(heads) if h.startswith("## Going further"))
    main = heads[:first_further]
    assert [next(h for h in main if h.startswith(want)) for want in MAIN_PATH] == main[:len(MAIN_PATH)]
    assert main[len(MAIN_PATH):] == ["## Explore: the byte-budget dashboard", "## Summary"]
    assert all(h.startswith("## Going further: ") for h in heads[first_further:]) and len(heads) - first_further >= 5
    assert "**Interview questions this lesson prepares you for**" in text
    assert text.count("**Question.**") >= 9
    # the dashboard opens on the settings its prompt names (issue 26, item 9): Llama-3.1-70B on a B200
    assert "from roofline_lessons.viz.dashboards import lesson12_dashboard\n\ndashboard = lesson12_dashboard(MODEL, PART)" in text
    assert 'MODEL, PART = "llama-3.1-70b", "b200"' in text


def test_every_main_section_ends_in_a_question():
    """Each numbered section of the main path ends with a question for the reader (and its folded answer)."""
    import jupytext

    cells = jupytext.read(str(LESSON)).cells
    starts = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## ")]
    for a, b in zip(starts, starts[1:]):
        if not cells[a].source.startswith(MAIN_PATH):
            continue
        section = [c.source for c in cells[a:b]]
        assert "**Question.**" in section[-2] and "<details><summary>Answer</summary>" in section[-1], cells[a].source


def test_the_conventions_are_stated_once_in_a_box_at_the_top(lesson_parts):
    """Issue 26: the conventions (lower bound: compulsory traffic, overlap, no latency; estimate: its conventions)
    in one blockquote at the top; the main path then says "bound" and "estimate" without re-hedging, and the
    implementation details (vLLM's docstrings, Marlin's README, the hypotheses to measure) live in the going-further
    sections."""
    import jupytext

    first = jupytext.read(str(LESSON)).cells[0].source
    box = first[first.index("> **Conventions.**"):]
    assert all(line.startswith(">") for line in box.splitlines())
    for said in ("**lower bound**", "compulsory traffic only", "overlap", "no latency", "**estimate**", "not fused",
                 "**in series**", "**what-if**", "binary (GiB)"):
        assert said in box, said
    main, further = lesson_parts
    for hedge in ("the course's rule", "a hypothesis", "*Hypothesis:*", "assumed latency", "docstring", "vLLM's MLA",
                  "Marlin", "README"):
        assert hedge.lower() not in main.lower(), hedge
    assert "*Hypothesis:*" in further and "Marlin" in further and "mla/common.py" in further


def test_main_path_tables_have_at_most_five_columns(lesson_parts):
    main, _ = lesson_parts
    headers = [line for line, nxt in zip(main.splitlines(), main.splitlines()[1:])
               if line.startswith("| ") and nxt.startswith("|---")]
    assert len(headers) >= 6
    wide = [h for h in headers if h.count(" | ") + 1 > 5]
    assert not wide, wide


def test_no_assert_in_a_cell_the_learner_sees():
    """The checks that keep the prose honest stay (and run under nbval) in collapsed cells: narration cells, or
    cells of asserts only. Target (issue 26): at most 5 visible assert lines; this lesson has none."""
    import nbformat

    nb = nbformat.read(str(ROOT / "notebooks" / "12_shrinking_the_bytes.ipynb"), as_version=4)
    shown = [c for c in nb.cells if c.cell_type == "code"
             and not c.get("metadata", {}).get("jupyter", {}).get("source_hidden")]
    visible = [line for c in shown for line in c.source.splitlines() if line.lstrip().startswith("assert ")]
    assert not visible, visible
    hidden = [c for c in nb.cells if c.cell_type == "code" and c not in shown]
    assert sum(line.lstrip().startswith("assert ") for c in hidden for line in c.source.splitlines()) >= 60


def test_the_lesson_holds_its_claims_with_asserts():
    text = LESSON.read_text("utf-8")
    assert text.count("\nassert ") + text.count("    assert ") >= 15


def test_no_interview_question_or_summary_types_a_measured_number():
    text = LESSON.read_text("utf-8")
    block = text.split("## Summary")[1].split("## Going further")[0]
    # formulas are fine ("2 × KV heads"); a measured figure is a number with a unit or a speed-up ("3.5×")
    assert not re.search(r"\d[\d,.]*\s*(GB|GiB|TB|ms|µs|%|tokens/s|FLOP)|\d×", block), block


# ---- the review's fixes -----------------------------------------------------------------------------


def test_checkers_are_exact_where_the_answer_is_a_whole_number():
    m = get_model("deepseek-v3")
    per_layer = m.kv_bytes_per_token_per_layer("bf16")
    right = m.kv_bytes_per_token("bf16")
    assert lesson12.mla_kv_bytes_per_token(right).passed
    for layers in (m.num_mla_layers - 1, m.num_mla_layers + 1):  # one layer short, or the MTP layer counted
        assert not lesson12.mla_kv_bytes_per_token(layers * per_layer).passed
    mtp = lesson12.mla_kv_bytes_per_token((m.num_mla_layers + m.mtp_layers) * per_layer)
    assert "multi-token-prediction" in mtp.message and "allowed exact" not in mtp.message
    crit = int(sh.critical_batches("llama-3.1-70b", "b200", 128)[1].critical_batch_estimate)
    assert lesson12.int4_critical_batch(crit).passed
    below, above = lesson12.int4_critical_batch(crit - 1), lesson12.int4_critical_batch(crit + 1)
    assert not below.passed and "last memory-bound batch" in below.message
    assert not above.passed and "allowed exact" in above.message


def test_paged_checker_rejects_a_pool_without_the_utilisation():
    p = sh.paged_capacity("gemma-3-27b", "h200", 32768, 16, memory_utilization=1.0)
    forgot = lesson12.paged_uniform_loss(p.uniform_loss)
    assert p.uniform_loss != pytest.approx(lesson12._paged_loss(), rel=1e-9)
    assert not forgot.passed and "0.9" in forgot.message
    right = sh.paged_capacity("gemma-3-27b", "h200", 32768, 16, memory_utilization=0.9)
    assert not lesson12.paged_uniform_loss(1 - (right.uniform_sequences + 1) / right.per_kind_sequences).passed


def test_speedup_checker_accepts_a_rounded_answer_and_prints_a_readable_tolerance():
    s = sh.format_speedup("llama-3.1-70b", "b200", 4096).speedup_estimate
    assert lesson12.int4_batch1_speedup(round(s, 1)).passed
    low = lesson12.int4_batch1_speedup(s * 0.98)
    assert not low.passed and "±1.0 %" in low.message and "±0%" not in low.message
    assert "±0.5 %" in lesson12.int4_weights_gib(1.0).message


def test_overlapped_dequant_never_loses_to_bf16():
    bf16, int4, _ = sh.critical_batches("llama-3.1-70b", "b200", 128)
    assert sh.weight_only_crossover("llama-3.1-70b", "b200", 128) is not None  # in series: a crossover
    assert np.all(int4.overlapped_step_time_s <= bf16.step_estimate_s * (1 + 1e-12))  # overlapped: none
    assert np.all(int4.step_lower_bound_s <= bf16.step_lower_bound_s * (1 + 1e-12))  # nor by the bound
    assert sh.weight_only_crossover("llama-3.1-70b", "b200", 128, figure="lower bound") == \
        bf16.critical_batch_lower_bound  # by the bound they only meet, where BF16 turns compute-bound
    assert int4.critical_batch_estimate < int4.critical_batch_without_dequant < bf16.critical_batch_estimate
    assert bf16.critical_batch_without_dequant == bf16.critical_batch_estimate  # no dequant in BF16
    assert np.array_equal(bf16.overlapped_step_time_s, bf16.step_estimate_s)
    with pytest.raises(RooflineInputError, match="figure"):
        sh.weight_only_crossover(figure="bound")


def test_zero_points_and_nvfp4_cost_bytes():
    assert sh.int4_bytes_per_weight(128, zero_point=True) == pytest.approx(0.5 + 2 / 128 + 0.5 / 128)
    assert sh.nvfp4_bytes_per_weight() == pytest.approx(0.5 + 1 / 16)
    assert sh.nvfp4_bytes_per_weight(1024) == pytest.approx(0.5 + 1 / 16 + 4 / 1024)
    with pytest.raises(RooflineInputError, match="tensor_elements"):
        sh.nvfp4_bytes_per_weight(0)


def test_mla_per_head_count_uses_the_value_width():
    m = get_model("deepseek-v3")
    assert m.head_dim != m.v_head_dim  # K is wider than V: 2 × heads × head_dim would overcount
    assert sh.mla_per_head_kv_elements(m) == m.num_attention_heads * (m.head_dim + m.v_head_dim)
    assert sh.mla_per_head_kv_elements(m) < 2 * m.num_attention_heads * m.head_dim


def test_w4a4_rises_only_through_all_the_traffic():
    """The card and §6: W4A4's weight-lens critical batch stays near BF16's; its all-traffic one rises,
    with the per-token bytes (KV, activations) the larger share at that batch."""
    from roofline_lessons.course import flashcards
    from roofline_lessons.topics.batching import critical_batch

    w4a4 = {"weights_dtype": "fp4", "compute_dtype": "fp4"}
    wl_bf16 = critical_batch("llama-3.1-70b", "b200", 128, lens="weights only")
    wl_fp4 = critical_batch("llama-3.1-70b", "b200", 128, lens="weights only", **w4a4)
    all_bf16 = critical_batch("llama-3.1-70b", "b200", 128)
    all_fp4 = critical_batch("llama-3.1-70b", "b200", 128, **w4a4)
    assert wl_fp4 == pytest.approx(wl_bf16, rel=0.25) and all_fp4 > 2 * all_bf16
    split = sh.byte_budget("llama-3.1-70b", "b200", all_fp4, 128, **w4a4).shares()
    assert split["weights"] < 0.5 < split["KV cache"] + split["activations"]
    card = flashcards.get_card("shrink-int4-batch1-speedup").detailed
    assert f"{all_fp4:,.0f} against {all_bf16:,.0f}" in flashcards.get_card("shrink-int4-batch1-speedup").fill(card)
    # "compute-bound only because the course adds the dequantisation in series"
    p = place("llama-3.1-70b", "b200", phase="decode", batch=256, context_tokens=1024, weights_dtype="int4")
    assert p.bound == "compute" and float(p.compute_time_s - p.dequant_time_s) < float(p.memory_time_s)


def test_vllm_fp8_mla_layout_is_656_bytes_per_layer():
    from roofline_lessons.course.flashcards import NUMERIC_FUNCTIONS

    m = get_model("deepseek-v3")
    layer = NUMERIC_FUNCTIONS["mla_fp8_vllm_bytes"]("deepseek-v3", per_layer=True)
    assert layer == m.kv_lora_rank + 4 * (m.kv_lora_rank // 128) + 2 * m.qk_rope_head_dim
    assert layer > m.kv_bytes_per_token_per_layer("fp8")  # the real layout costs more than the idealised count


def test_byte_budget_chart_says_which_bar_does_not_fit_and_ticks_span_the_axis():
    import matplotlib

    matplotlib.use("Agg")
    from roofline_lessons.viz.display import alt_of
    from roofline_lessons.viz.plots import byte_budget_chart

    small = sh.byte_budget("llama-3.1-70b", "b200", 1, 8192)
    big = sh.byte_budget("llama-3.1-70b", "b200", 64, 8192)
    assert small.placement.fits_in_memory and not big.placement.fits_in_memory
    fig = byte_budget_chart([small.placement, big.placement], ["batch 1", "batch 64"])
    ends = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_gid() == "step-bytes"]
    assert sum("does not fit" in t for t in ends) == 1 and "does not fit" in alt_of(fig)
    ax = fig.axes[0]
    ticks, (lo, hi) = ax.get_xticks(), ax.get_xlim()
    assert min(ticks) == lo == 0 and max(ticks) <= hi  # ticks over the whole axis, none outside it
    assert max(ticks) >= big.total_bytes / 1e9 and hi - max(ticks) < ticks[1] - ticks[0]  # past the longest bar


def test_kv_chart_state_label_sits_clear_of_the_curves():
    import matplotlib

    matplotlib.use("Agg")
    from roofline_lessons.viz.plots import kv_bytes_vs_context_chart

    curves = sh.kv_curves(contexts=[2 ** k for k in range(8, 21)])
    fig = kv_bytes_vs_context_chart(curves)
    fig.canvas.draw()
    ax, label = next((a, t) for a in fig.axes for t in a.texts if "state" in t.get_text())  # the hybrid's panel
    box = label.get_window_extent().transformed(ax.transData.inverted())
    for c in curves:  # no curve passes through the label's box (nor would it in any other panel: shared axes)
        inside = (c.context_tokens >= box.x0) & (c.context_tokens <= box.x1)
        assert not np.any((c.kv_bytes[inside] >= box.y0) & (c.kv_bytes[inside] <= box.y1)), c.label


def test_added_sequence_intensity_decides_whether_any_batch_turns():
    """At a long context each added sequence brings fewer FLOPs per compulsory byte than the ridge of those
    FLOPs, so no batch turns the step compute-bound; at a short one it brings more, and every format turns."""
    short = sh.critical_batches("llama-3.1-70b", "b200", 128)
    long = sh.critical_batches("llama-3.1-70b", "b200", 8192)
    for s in long:
        assert s.added_sequence_intensity_lower_bound == pytest.approx(long[0].added_sequence_intensity_lower_bound)
        assert 50 < s.added_sequence_intensity_lower_bound < 70  # ≈ 60 FLOP/byte
        assert s.added_sequence_intensity_estimate < s.added_sequence_intensity_lower_bound
        assert s.memory_bound_at_every_batch_lower_bound and s.critical_batch_lower_bound is None
    assert long[0].added_sequence_ridge_flop_per_byte == pytest.approx(2250e12 / 8e12)  # BF16's ridge, 281
    for s in short:
        assert s.added_sequence_intensity_lower_bound > s.added_sequence_ridge_flop_per_byte
        assert not s.memory_bound_at_every_batch_lower_bound and s.critical_batch_lower_bound is not None
    # the slope is exact: a sweep to 64 gives what a sweep to 4,096 gives
    small = sh.batch_sweep("llama-3.1-70b", "b200", 8192, max_batch=64)
    assert small.added_sequence_intensity_lower_bound == pytest.approx(long[0].added_sequence_intensity_lower_bound)
    with pytest.raises(RooflineInputError, match="two batches"):
        _ = sh.batch_sweep("llama-3.1-70b", "b200", 8192, max_batch=1).added_sequence_intensity_lower_bound


def test_the_dequant_convention_never_sets_the_lessons_bound():
    """The dequantisation's price (FLOPs per weight at the FP32 rate) is a convention; the bound the lesson quotes
    must rest on the FLOPs and the compulsory bytes alone."""
    for ctx in (128, 8192):
        for s in sh.critical_batches("llama-3.1-70b", "b200", ctx):
            assert not s.dequant_sets_lower_bound.any(), (ctx, s.label)


def test_lesson_names_its_hypotheses_and_reasons_from_the_numbers(lesson_text):
    assert "hides some of it, not all" not in lesson_text and "hide most of it, not all" not in lesson_text
    assert "close to ideal (4x) speedups up to batchsizes of 16-32 tokens" in lesson_text  # Marlin's README
    assert "as fast as the FLOPs do" not in lesson_text and "added sequence" in lesson_text
    assert "BF16 embedding, lm_head and norms" not in lesson_text
    assert "of its lower bound" in lesson_text  # "close to its compute roof" with its share


def test_counting_rules_do_not_put_a_real_kernel_between_the_two_figures():
    import roofline_lessons.core.costs as costs

    root = Path(__file__).resolve().parents[1]
    doc = " ".join(costs.__doc__.split())
    solution = " ".join(root.joinpath("py/solutions/12_shrinking_the_bytes.py").read_text("utf-8").replace("#", "").split())
    for text in (doc, solution):
        assert "lies between the two" not in text and "lie between the two" not in text
    assert "not a ceiling" in doc and "at least the bound" in doc


# ---- issue 25 strict reader, lessons 11–12 ---------------------------------------------------------


def test_deepseek_node_capacity_uses_the_packages_per_chip_footprints(lesson_text):
    """N6 (and the lead's data-parallel figure): TP 8 replicates q_a_proj and kv_a_proj, so its per-chip
    weights exceed an even eighth; both capacities come from max_batch_that_fits_on_chips, not a hand split."""
    from roofline_lessons.core.parallel import Parallelism, max_batch_that_fits_on_chips

    d, h200 = get_model("deepseek-v3"), get_part("h200")
    tp = place(d, h200, phase="decode", context_tokens=32768, weights_dtype="int4",
               parallelism=Parallelism(tensor=8)).footprint.weight_bytes
    assert tp > sh.stored_weights("deepseek-v3", "int4").bytes / 8  # the replicated down-projections
    tp_n = max_batch_that_fits_on_chips(d, h200, 32768, Parallelism(tensor=8), weights_dtype="int4")
    dp_n = max_batch_that_fits_on_chips(d, h200, 32768, Parallelism(expert=8), weights_dtype="int4")
    assert 7 < dp_n / tp_n < 8
    assert f"**{tp_n:,} sequences** of 32,768 tokens" in lesson_text and f"**{dp_n:,} sequences**" in lesson_text
    text = LESSON.read_text("utf-8")
    assert "(node_bytes - dsv3_stored.bytes) / NODE" not in text and "mla_layer_parameters" not in text


def test_summary_says_int4_is_slower_only_at_short_context():
    """N7: the estimate's int4 crossover exists at 128 tokens cached, not at 8,192 (section 7 asserts both)."""
    assert sh.weight_only_crossover("llama-3.1-70b", "b200", 128) is not None
    assert sh.weight_only_crossover("llama-3.1-70b", "b200", 8192) is None
    summary = " ".join(LESSON.read_text("utf-8").split("## Summary")[1].split("## Going further")[0]
                       .replace("#", " ").split())
    assert "at short context, becomes slower than BF16 at a large enough batch" in summary
    assert "at long context the KV cache keeps both memory-bound and it never does" in summary


def test_a_lever_names_its_what_if_and_its_misfit_once_each():
    import dataclasses

    levers = sh.byte_levers("llama-3.1-70b", "b200", context_tokens=8192)
    misfit = next(e for e in levers if not e.fits_in_memory)
    assert misfit.display_name.count("what-if") == 1 and misfit.display_name.endswith("what-if (does not fit)")
    both = dataclasses.replace(misfit, what_if=True)
    assert both.display_name.endswith("— what-if — does not fit") and both.display_name.count("what-if") == 1
