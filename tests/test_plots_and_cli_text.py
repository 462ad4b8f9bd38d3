"""Static charts (alt text, type size, part styles, lesson 8's labels and legends) and the CLI's
text (no scientific notation) and JSON (counts as integers)."""

import inspect
import json
import re
from itertools import combinations

import matplotlib.text
import numpy as np
import pytest

from roofline_lessons.cli import main
from roofline_lessons.core.placement import place
from roofline_lessons.core.units import binary, count, duration, num, si
from roofline_lessons.measure import results
from roofline_lessons.topics.batching import decode_sweep
from roofline_lessons.viz import plots
from roofline_lessons.viz.charts import MIN_FONT_PT, part_style
from roofline_lessons.viz.display import alt_of

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")


@pytest.fixture(scope="module")
def example():
    return results.example()


def _prefill():
    return place("qwen3.8-27b", "h100-sxm", phase="prefill", prompt_tokens=8192)


#: every public figure function of plots.py, called as a lesson calls it, with numbers its alt text
#: must state (each computed by the package from the same inputs)
CASES = {
    "measured_roofline": (
        lambda m: plots.measured_roofline(m),
        lambda m: [si(m.peak_flops_per_s("float64"), "FLOP/s"), si(m.dram_bytes_per_s(), "B/s")]
        + [si(r.bytes_per_s, "B/s") for r in m.roofs()] + [num(k.intensity) for k in m.kernels]),
    "bandwidth_sweep_chart": (
        lambda m: plots.bandwidth_sweep_chart(m),
        lambda m: [si(r.bytes_per_s, "B/s") for r in m.roofs()]
        + [binary(max(int(v) for v in m.machine["caches"].values()))]),
    "intensity_vs_batch": (
        lambda m: plots.intensity_vs_batch("qwen3.8-27b", "h100-sxm", contexts=(1024, 131072)),
        lambda m: [num(place("qwen3.8-27b", "h100-sxm").ridge_point_flop_per_byte),
                   num(decode_sweep("qwen3.8-27b", "h100-sxm", plots.DEFAULT_BATCHES, 131072).intensity[-1])]),
    "throughput_vs_latency": (
        lambda m: plots.throughput_vs_latency("qwen3.8-27b", ["h100-sxm", "b200"], context_tokens=8192),
        lambda m: [duration(decode_sweep("qwen3.8-27b", part, plots.DEFAULT_BATCHES, 8192).step_time_s[0])
                   for part in ("h100-sxm", "b200")]),
    "operators_on_roofline": (
        lambda m: plots.operators_on_roofline(_prefill(), "Qwen3.8-27B prefill: every operator"),
        lambda m: [num(float(_prefill().intensity)), num(_prefill().ridge_point_flop_per_byte)]),
    "decode_vs_bound_chart": (
        lambda m: plots.decode_vs_bound_chart(_reality()),
        lambda m: [duration(s.measured_s) for s in _reality().decode_by_batch[::4]]
        + [duration(_reality().decode_by_batch[0].bound_s), count(_reality().critical_batch())]),
    "interconnect_roofline_chart": (
        lambda m: plots.interconnect_roofline_chart(_split(), ["1 chip", "TP 2"]),
        lambda m: [num(_split()[1].interconnect_intensity), num(_split()[1].interconnect_ridge_point_flop_per_byte),
                   num(_split()[1].ridge_point_flop_per_byte), duration(_split()[1].comm_time_s)]),
    "time_breakdown_chart": (
        lambda m: plots.time_breakdown_chart(_split(), ["1 chip", "TP 2"]),
        lambda m: [duration(p.time_estimate_s) for p in _split()] + [duration(_split()[1].comm_time_s)]),
    "kv_bytes_vs_context_chart": (
        lambda m: plots.kv_bytes_vs_context_chart(_kv_curves()),
        lambda m: [binary(c.kv_bytes[list(c.context_tokens).index(32768)]) for c in _kv_curves()]
        + [binary(_kv_curves()[-1].state_bytes)]),
    "byte_budget_chart": (
        lambda m: plots.byte_budget_chart(_formats(), ["BF16", "int4 weights"]),
        lambda m: [duration(p.time_estimate_s) for p in _formats()] + [si(p.cost.bytes, "B") for p in _formats()]
        + [si(_formats()[1].cost.weight_bytes, "B")]),
}


from roofline_lessons.topics.shrinking import KvCurve as _KvCurve  # noqa: E402  (curves built by hand below)


def _kv_curves():
    """GQA, MLA, sliding-window and hybrid models from 1K to 1M tokens, by the package's KV sizes."""
    from roofline_lessons.core.memory import kv_cache_bytes_per_sequence, state_bytes_per_sequence
    from roofline_lessons.core.models import get_model

    ctx = 2.0 ** np.arange(10, 21)
    out = []
    for model_id, kind in (("llama-3.1-70b", "GQA"), ("deepseek-v3", "MLA"), ("gemma-3-27b", "sliding window"),
                           ("qwen3.8-27b", "hybrid linear")):
        m = get_model(model_id)
        out.append(_KvCurve(m.name, ctx, kv_cache_bytes_per_sequence(m, ctx), state_bytes_per_sequence(m),
                            m.max_context_tokens if m.max_context_tokens < ctx[-1] else None, kind))
    return tuple(out)


def _formats():
    """Llama-3.1-70B decode on one H100 with BF16 weights and with int4 weights."""
    return [place("llama-3.1-70b", "h100-sxm", context_tokens=4096, weights_dtype=w) for w in ("bf16", "int4")]


def _split():
    """Llama-3.1-70B decode at batch 1 on one H100 and on two (tensor parallel)."""
    from roofline_lessons.core.parallel import Parallelism

    return [place("llama-3.1-70b", "h100-sxm", batch=1, context_tokens=4096, parallelism=Parallelism(tensor=n))
            for n in (1, 2)]


def _reality():
    """A RealityCheck built by hand (no measurement): five decode batches on made-up roofs."""
    from roofline_lessons.measure.decoder import sized_for_cache
    from roofline_lessons.measure.reality import RealityCheck, StepSample

    model = sized_for_cache(32 * 2**20)
    bw, peak = 30e9, 150e9
    steps = []
    for b in (1, 2, 4, 8, 16):
        flops, moved = 2.6e8 * b, 2.6e8 + 2e6 * b
        bound = max(flops / peak, moved / bw)
        steps.append(StepSample("decode", b, 128, bound * (2 + 0.3 * b), bound * 2, flops, moved, flops / peak,
                                moved / bw))
    fields = {k: v for k, v in model.__dict__.items() if v not in (None, 0, 0.0, False, "")}
    return RealityCheck("quick", "2026-01-01T00:00:00+00:00", fields, bw, peak, 32 * 2**20,
                        int(model.parameter_count() * 4), decode_by_batch=steps)


def _public_functions(module):
    return {name for name, f in inspect.getmembers(module, inspect.isfunction)
            if not name.startswith("_") and f.__module__ == module.__name__}


def _visible_texts(fig):
    fig.canvas.draw()
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]


def test_every_public_plot_function_has_a_case():
    assert _public_functions(plots) == set(CASES)  # a new figure function needs a case here


@pytest.mark.parametrize("name", sorted(CASES))
def test_chart_has_alt_text_with_live_numbers_and_readable_type(name, example):
    make, expected = CASES[name]
    fig = make(example)
    alt = alt_of(fig)
    assert alt and len(alt) > 80
    for number in expected(example):
        assert number in alt, (name, number, alt)
    assert not SCIENTIFIC.search(alt), alt
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    small = [(t.get_text(), t.get_fontsize()) for t in _visible_texts(fig) if t.get_fontsize() < MIN_FONT_PT]
    assert not small, small


def test_throughput_chart_keeps_each_parts_style():
    parts = ["h100-sxm", "h200", "b200"]
    fig = plots.throughput_vs_latency("qwen3.8-27b", parts, context_tokens=8192)
    lines = fig.axes[0].get_lines()
    for part in parts:
        look = part_style(part)
        assert any(line.get_color() == look.colour and line.get_marker() == look.marker for line in lines), part
        assert any(line.get_color() == look.colour and line.get_linestyle() == {"-": "-", "--": "--"}[look.linestyle]
                   for line in lines), part
    assert len(fig.axes[0].get_legend().get_texts()) == len(parts) + 1  # one entry per part, one for "dotted"


def test_operators_chart_draws_the_part_in_its_style():
    fig = plots.operators_on_roofline(_prefill(), "prefill")
    colours = {line.get_color() for line in fig.axes[0].get_lines()}
    assert part_style("h100-sxm").colour in colours


def _boxes(fig, gid):
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in fig.findobj(matplotlib.text.Text) if t.get_gid() == gid]


def _kernel_at_the_ceiling_end(m):
    """``m`` with its last gemm moved to the far right, just under the float64 ceiling, where that
    ceiling's label goes first."""
    import dataclasses

    from roofline_lessons.measure.probes import KernelSample, Timing

    kernels = list(m.kernels)
    j = max(i for i, k in enumerate(kernels) if k.name.startswith("gemm"))
    k = kernels[j]
    seconds = k.flops / (0.9 * m.peak_flops_per_s("float64"))
    kernels[j] = KernelSample(k.name, k.shape, k.flops, k.flops / 300, Timing(seconds, seconds, seconds))
    return dataclasses.replace(m, kernels=kernels)


@pytest.mark.parametrize("variant", ["example", "kernel at the ceiling's end"])
def test_measured_roofline_numbers_every_kernel_without_overlaps(example, variant):
    if variant != "example":
        example = _kernel_at_the_ceiling_end(example)
    fig = plots.measured_roofline(example)
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_gid() == "kernel-number"]
    assert sorted(int(t.get_text()) for t in labels) == list(range(1, len(example.kernels) + 1))
    boxes = _boxes(fig, "kernel-number")
    for a, b in combinations(boxes, 2):
        assert not a.overlaps(b), (a, b)
    # no number covers a kernel's marker (8 pt square around each point)
    half = 8 * fig.dpi / 72 / 2
    centres = ax.transData.transform([(k.intensity, k.flops_per_s / 1e9) for k in example.kernels])
    for box in boxes:
        for cx, cy in centres:
            assert not (box.x0 < cx + half and cx - half < box.x1 and box.y0 < cy + half and cy - half < box.y1)
    for ceiling in _boxes(fig, "ceiling-label"):  # the matmul ceilings' labels cover no number and no marker
        assert not any(ceiling.overlaps(b) for b in boxes)
        assert not any(ceiling.x0 < cx + half and cx - half < ceiling.x1 and ceiling.y0 < cy + half
                       and cy - half < ceiling.y1 for cx, cy in centres)
    inside = ax.get_window_extent()
    assert all(inside.x0 <= b.x0 and b.x1 <= inside.x1 and inside.y0 <= b.y0 and b.y1 <= inside.y1 for b in boxes)
    # the key names every kernel by its number and sits clear of the legend
    key = next(t for t in fig.texts if t.get_gid() == "kernel-key")
    for j, k in enumerate(example.kernels, start=1):
        assert f"{j:>2}  {k.name}" in key.get_text()
    renderer = fig.canvas.get_renderer()
    assert not key.get_window_extent(renderer).overlaps(ax.get_legend().get_window_extent(renderer))


def test_lesson8_legends_are_short(example):
    legend = plots.measured_roofline(example).axes[0].get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    assert len(texts) <= 8, texts
    assert any("DRAM" in s and si(example.dram_bytes_per_s(), "B/s") in s for s in texts)
    assert any("gemv" in s for s in texts)
    assert all(t.get_fontsize() >= MIN_FONT_PT for t in legend.get_texts())
    sweep = plots.bandwidth_sweep_chart(example).axes[0].get_legend()
    assert len(sweep.get_texts()) <= 8


def test_bandwidth_sweep_labels_each_plateau_and_tells_kernels_apart_without_colour(example):
    fig = plots.bandwidth_sweep_chart(example)
    fig.canvas.draw()
    ax = fig.axes[0]
    roof_labels = [t.get_text() for t in ax.texts if t.get_gid() == "roof-label"]
    assert sorted(roof_labels) == sorted(f"{r.name} roof\n{si(r.bytes_per_s, 'B/s')}" for r in example.roofs())
    boxes = _boxes(fig, "roof-label")
    for a, b in combinations(boxes, 2):
        assert not a.overlaps(b)
    series = [line for line in ax.get_lines() if line.get_label() in ("read", "copy", "triad")]
    assert len(series) == 3
    assert len({(line.get_linestyle(), line.get_marker()) for line in series}) == 3


# --- the command line ------------------------------------------------------------------------------

EXTREME = [
    ["hardware"],
    ["models"],
    ["place", "--hardware", "h100-sxm", "--model", "qwen3.8-27b", "--phase", "decode", "--batch", "512",
     "--context", "1048576"],
    ["place", "--hardware", "l4", "--model", "llama-3.1-70b", "--phase", "prefill", "--prompt", "131072"],
    ["place", "--hardware", "l4", "--model", "qwen3-30b-a3b", "--phase", "prefill", "--prompt", "131072",
     "--batch", "512"],
    ["place", "--hardware", "gb200", "--model", "llama-3.1-8b", "--phase", "decode", "--weights", "fp4",
     "--compute", "fp4", "--kv", "fp8"],
    ["place", "--hardware", "b200", "--model", "llama-2-7b", "--phase", "decode", "--context", "0"],
    ["place", "--hardware", "tpu-v5e", "--model", "qwen3.8-27b", "--phase", "prefill", "--prompt", "1",
     "--no-flash-attention"],
]


def run(capsys, args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args", EXTREME, ids=lambda a: " ".join(a[:8]))
def test_text_output_has_no_scientific_notation(capsys, args):
    code, out, err = run(capsys, args)
    assert code == 0
    bad = [line for line in (out + err).splitlines() if SCIENTIFIC.search(line)]
    assert not bad, bad


#: wording the CLI once printed and a reader flagged (issue 25): a unit disagreeing with its number, an upper-case
#: SI prefix, a clipped label, a blended compute roof called the part's peak
MISWORDED = re.compile(r"(?<![\d.,])1 bytes\b|\bKB\b|out\. token|% of peak\b")


@pytest.mark.parametrize("args", EXTREME, ids=lambda a: " ".join(a[:8]))
def test_text_has_none_of_the_flagged_wording(capsys, args):
    code, out, err = run(capsys, args)
    assert code == 0
    bad = [line for line in (out + err).splitlines() if MISWORDED.search(line)]
    assert not bad, bad


@pytest.mark.parametrize("args", [a for a in EXTREME if a[0] == "place"], ids=lambda a: " ".join(a[1:8]))
def test_text_states_times_and_memory_in_a_persons_units(capsys, args):
    _, text, _ = run(capsys, args)
    _, out, _ = run(capsys, args + ["--json"])
    d = json.loads(out)
    assert f"{duration(d['time_lower_bound_s'])} for the whole step" in text
    assert f"{binary(d['memory_required_bytes'])} of {binary(d['memory_capacity_bytes'])}" in text
    assert f"batch {count(d['batch'])}" in text


def test_long_prefill_on_a_small_part_reads_in_minutes_and_tebibytes(capsys):
    _, text, _ = run(capsys, EXTREME[3])
    assert re.search(r"time lower bound +[\d.]+ min ", text)
    _, text, _ = run(capsys, EXTREME[2])
    assert re.search(r"memory +[\d.]+ TiB of 80 GiB", text)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


@pytest.mark.parametrize("args", [a for a in EXTREME if a[0] == "place"], ids=lambda a: " ".join(a[1:8]))
def test_json_counts_are_integers(capsys, args):
    code, out, _ = run(capsys, args + ["--json"])
    d = json.loads(out)
    assert code == 0
    assert _is_int(d["batch"]) and _is_int(d["max_context_tokens"])
    flag, key = ("--prompt", "prompt_tokens") if d["phase"] == "prefill" else ("--context", "context_tokens")
    assert _is_int(d[key])
    if flag in args:
        assert d[key] == int(args[args.index(flag) + 1])
    assert all(_is_int(op["layers"]) for op in d["ops"])
    assert isinstance(d["flops"], float) and isinstance(d["intensity"], float)  # raw numbers stay raw
    assert '"batch": 1.0' not in out


def test_catalogs_as_json(capsys):
    code, out, _ = run(capsys, ["models", "--json"])
    models = json.loads(out)
    assert code == 0 and {m["id"] for m in models} >= {"qwen3.8-27b", "llama-3.1-70b"}
    for m in models:
        for key in ("layers", "hidden_size", "head_dim", "parameters", "active_parameters", "max_context_tokens",
                    "kv_bytes_per_token_bf16"):
            assert _is_int(m[key]), (m["id"], key)
    q = next(m for m in models if m["id"] == "qwen3.8-27b")
    assert q["full_attention_layers"] + q["deltanet_layers"] == q["layers"]
    code, out, _ = run(capsys, ["hardware", "--json"])
    parts = json.loads(out)
    h200 = next(p for p in parts if p["id"] == "h200")
    assert _is_int(h200["memory_capacity_bytes"]) and h200["memory_capacity_bytes"] == 141 * 2**30
    bf16 = h200["dense_flops_per_s"]["bf16"]
    assert np.isclose(h200["ridge_point_bf16"], bf16 / h200["memory_bandwidth_bytes_per_s"])


def test_catalog_tables_use_the_units_helpers(capsys):
    from roofline_lessons.core.models import get_model

    _, out, _ = run(capsys, ["models"])
    m = get_model("llama-3.1-70b")
    assert f"{num(m.parameter_count() / 1e9)} billion" in out and count(m.hidden_size) in out
    _, out, _ = run(capsys, ["hardware"])
    assert "10^12 bytes/s" in out and "1e12" not in out


def test_quantity_puts_the_unit_in_the_numbers_grammatical_number():
    from roofline_lessons.core.units import quantity

    assert quantity(1, "byte") == "1 byte" and quantity(1.0001, "byte") == "1 byte"  # as printed
    assert quantity(0.516, "byte") == "0.516 bytes" and quantity(2, "byte") == "2 bytes"
    assert quantity(1, "decode step", whole=True) == "1 decode step"
    assert quantity(131072, "token", whole=True) == "131,072 tokens"
    assert quantity(3, "child", "children") == "3 children"


def test_lesson_9_chart_bound_is_the_max_of_the_lines_it_draws():
    """The memory line is the bound's own memory term (compulsory bytes), not the unfused bytes: the
    lower bound drawn is the larger of the two lines drawn, and its legend says compulsory bytes."""
    from dataclasses import replace

    check = _reality()
    check.decode_by_batch[:] = [replace(s, compulsory_bytes=0.6 * s.bytes) for s in check.decode_by_batch]
    fig = plots.decode_vs_bound_chart(check)
    lines = {line.get_label(): np.asarray(line.get_ydata(), dtype=float) for line in fig.axes[0].get_lines()}
    bound = next(v for k, v in lines.items() if k.startswith("lower bound"))
    memory = next(v for k, v in lines.items() if k.startswith("memory time"))
    compute = next(v for k, v in lines.items() if k.startswith("compute time"))
    np.testing.assert_allclose(bound, np.maximum(memory, compute))
    np.testing.assert_allclose(memory, [s.memory_lower_bound_s * 1e3 for s in check.decode_by_batch])
    assert any("compulsory bytes" in k for k in lines if k.startswith("memory time"))
