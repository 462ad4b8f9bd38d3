"""Lessons 6 and 7 as one-panel dashboards: frames with alt text, errors shown once, type no smaller
than MIN_FONT_PT, lesson 6 cheap at every N (closed forms equal to the simulation), lesson 7's chart
marking the compute ceiling in force."""

from __future__ import annotations

import html
import itertools

import numpy as np
import pytest

from matplotlib.text import Text

from roofline_lessons.core.units import count, duration, num
from roofline_lessons.topics.flash import (closed_form_tiling, tile_map, tiled_attention, tiled_attention_fa2,
                                          visited_tiles)
from roofline_lessons.viz.charts import MIN_FONT_PT
from roofline_lessons.viz.panel import frame_html
from roofline_lessons.viz.dashboards.lesson06 import (D_CHOICES, KINDS, MAX_MAP_CELLS, N_CHOICES,
                                                      SRAM_CHOICES_KIB, Lesson06Chart, lesson06_frame, lesson06_view)
from roofline_lessons.viz.dashboards.lesson07 import (BASELINE, Lesson07Chart, lesson07_frame,
                                                      lesson07_view)


def _figures(chart):
    """The cached static figures a chart has built so far."""
    return [entry[0] for entry in chart.figures._cache.values()]


def _small_texts(fig):
    return [(t.get_text(), t.get_fontsize()) for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and t.get_fontsize() < MIN_FONT_PT]




# ---- lesson 6 ---------------------------------------------------------------------------------

def test_lesson06_frame_has_alt_text_with_live_numbers():
    view = lesson06_view(8192, 128, 228, True)
    frame = lesson06_frame(view, Lesson06Chart())
    assert not frame.error and frame.png.startswith(b"\x89PNG")
    standard = num(view.intensity_by_kind[KINDS[0]])
    assert count(view.n) in frame.alt and standard in frame.alt and count(view.tiles_visited) in frame.alt
    assert f'alt="{html.escape(frame.alt, quote=True)}"' in frame_html(frame)
    assert "e+" not in frame.verdict and "e+" not in frame.alt  # no scientific notation
    assert any(count(view.tiles_visited) in note for note in frame.notes)


def test_lesson06_error_frame_shows_the_error_once_and_no_chart():
    view = lesson06_view(512, 256, 1, False)  # SRAM too small for one tile
    frame = lesson06_frame(view, Lesson06Chart())
    assert frame.error and frame.png is None and frame.alt == ""
    page = frame_html(frame)
    assert page.count(html.escape(view.error)) == 1 and "<img" not in page


def test_lesson06_type_is_never_below_the_minimum():
    chart = Lesson06Chart()
    for part in ("h100-sxm", "tpu-v6e"):
        chart.png(lesson06_view(131072, 256, 48, True, part))
    figures = _figures(chart)
    assert len(figures) == 2
    for fig in figures:
        assert _small_texts(fig) == []


@pytest.mark.parametrize("n,d,sram_kib,causal", [(150, 64, 48, True), (333, 64, 48, False), (256, 128, 100, True),
                                                 (200, 256, 64, True)])
def test_lesson06_closed_forms_equal_the_simulation(n, d, sram_kib, causal):
    """The dashboard never simulates; what it shows is what the tile-by-tile simulation counts."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((n, d)).astype(np.float16) * np.float16(0.1) for _ in range(3))
    sram = sram_kib * 1024
    view = lesson06_view(n, d, sram_kib, causal)
    _, t1 = tiled_attention(q, k, v, sram, causal=causal)
    _, t2 = tiled_attention_fa2(q, k, v, sram, causal=causal)
    assert view.bytes_by_kind[KINDS[1]] == t1.hbm_bytes
    assert view.bytes_by_kind[KINDS[2]] == t2.hbm_bytes
    assert (view.block_rows, view.block_cols) == (t1.block_rows, t1.block_cols)
    assert view.tiles_visited == len(t1.visited) == len(t2.visited)
    assert view.tile_grid == (-(-n // t1.block_rows), -(-n // t1.block_cols))
    # the map, ranked, is the simulation's visiting order (no aggregation at these N)
    for order, traffic in (("fa1", t1), ("fa2", t2)):
        full = tile_map(n, t1.block_rows, t1.block_cols, causal, order=order)
        cells = [tuple(ij) for ij in np.argwhere(~np.isnan(full))]
        assert sorted(cells, key=lambda ij: full[ij]) == traffic.visited


@pytest.mark.parametrize("causal,order", list(itertools.product((True, False), ("fa1", "fa2"))))
def test_lesson06_aggregated_map_matches_brute_force(causal, order):
    """Each cell: visited if any of its tiles is, valued by its first visited tile's rank."""
    n, rows, cols, cells = 5000, 23, 37, 16
    full = tile_map(n, rows, cols, causal, max_cells=10**6, order=order)
    small = tile_map(n, rows, cols, causal, max_cells=cells, order=order)
    sr, sc = -(-full.shape[0] // cells), -(-full.shape[1] // cells)
    assert small.shape == (-(-full.shape[0] // sr), -(-full.shape[1] // sc))
    for i, j in np.ndindex(small.shape):
        block = full[i * sr:(i + 1) * sr, j * sc:(j + 1) * sc]
        expected = np.nan if np.isnan(block).all() else np.nanmin(block)
        assert np.isnan(small[i, j]) if np.isnan(expected) else small[i, j] == expected
    assert visited_tiles(n, rows, cols, causal) == int((~np.isnan(full)).sum())


def test_lesson06_is_closed_form_at_every_extreme():
    """Every combination of the extremes of N, head dim and SRAM (both loop orders, causal or not) gives a
    frame, and the tile map never exceeds MAX_MAP_CELLS a side (a simulation at N = 131,072 would take
    minutes; the time per update is measured by benchmarks/widget_update.py, not here)."""
    chart = Lesson06Chart()
    chart.png(lesson06_view(512, 64, 48, True))  # the static figure, once
    extremes = itertools.product((N_CHOICES[0], N_CHOICES[-1]), (D_CHOICES[0], D_CHOICES[-1]),
                                 (SRAM_CHOICES_KIB[0], SRAM_CHOICES_KIB[-1]), (True, False), ("fa1", "fa2"))
    for n, d, sram, causal, order in extremes:
        view = lesson06_view(n, d, sram, causal, order=order)
        frame = lesson06_frame(view, chart)
        assert frame.png and not frame.error, (n, d, sram, causal, order)
        assert max(view.tile_map.shape) <= MAX_MAP_CELLS


def test_lesson06_dashboard_reacts(capsys):
    import ipywidgets as widgets

    from roofline_lessons.viz.dashboards.lesson06 import lesson06_dashboard

    ui = lesson06_dashboard()
    before = ui.panel.value
    assert '<img class="rl-chart"' in before and 'alt="' in before
    n_w = ui.by_label["N (tokens)"]
    n_w.value = N_CHOICES[-1]
    assert ui.panel.value != before and count(N_CHOICES[-1]) in ui.panel.value
    ui.by_label["head dim"].value = D_CHOICES[-1]
    ui.by_label["SRAM (KiB)"].value = SRAM_CHOICES_KIB[0]
    assert "This setting cannot be drawn" not in ui.panel.value and "<img" in ui.panel.value
    toggle = ui.by_label["tile order"]
    assert isinstance(toggle, widgets.ToggleButtons) and toggle.style.description_width == "initial"
    assert not n_w.continuous_update
    capsys.readouterr()


# ---- lesson 7 ---------------------------------------------------------------------------------

def test_lesson07_frame_has_alt_text_with_live_numbers():
    view = lesson07_view("h200", "decode", "W8A8 FP8")
    frame = lesson07_frame(view, Lesson07Chart())
    assert not frame.error and frame.png.startswith(b"\x89PNG")
    assert num(view.ceiling_flops_per_s / 1e12) in frame.alt and num(view.chosen[0]) in frame.alt
    assert f'alt="{html.escape(frame.alt, quote=True)}"' in frame_html(frame)


def test_lesson07_unavailable_format_shows_its_error_once_without_a_chart():
    view = lesson07_view("h200", "decode", "W4A4 FP4")  # the H200 has no FP4 rate in the catalog
    frame = lesson07_frame(view, Lesson07Chart())
    assert frame.error and frame.png is None and frame.alt == ""
    page = frame_html(frame)
    assert page.count("no fp4 rate") == 1 and page.count("not available on h200") == 1
    assert "<img" not in page and "rl-note" not in page  # no stale chart, no stale caption


def test_lesson07_chart_marks_the_ceiling_in_force():
    """Weight-only 8-bit and W8A8 FP8 put a decode step at the same point (same bytes, memory-bound); the
    chart must still show which ceiling is in force, so the two pictures differ."""
    chart = Lesson07Chart()
    w8a16 = lesson07_view("h200", "decode", "weight-only 8-bit (W8A16)")
    w8a8 = lesson07_view("h200", "decode", "W8A8 FP8")
    assert w8a16.chosen == pytest.approx(w8a8.chosen)  # the dot does not move ...
    assert w8a8.ceiling_flops_per_s > 1.5 * w8a16.ceiling_flops_per_s  # ... the ceiling does
    assert chart.png(w8a16) != chart.png(w8a8)


def test_lesson07_verdict_says_why_a_faster_roof_does_not_move_a_memory_bound_dot():
    view = lesson07_view("h200", "decode", "W8A8 FP8")
    assert "memory-bound" in view.text and "does not help" in view.text
    assert duration(view.compute_time_s) in view.text and duration(view.memory_time_s) in view.text
    assert num(view.ceiling_flops_per_s / 1e12) in view.text and num(view.baseline_ceiling_flops_per_s / 1e12) in view.text
    prefill = lesson07_view("h100-sxm", "prefill", "W8A8 FP8", batch=16)
    assert "compute-bound" in prefill.text and "does not help" not in prefill.text
    same = lesson07_view("h200", "decode", BASELINE)
    assert "sits on the open square" in same.text


def test_lesson07_key_is_in_the_legend_and_type_is_never_below_the_minimum():
    chart = Lesson07Chart()
    for part in ("b200", "a100-80gb"):
        chart.png(lesson07_view(part, "decode", BASELINE))
    for fig in _figures(chart):
        legend = fig.axes[0].get_legend()
        labels = [t.get_text() for t in legend.get_texts()]
        assert any("open square" in t for t in labels) and any("filled dot" in t for t in labels)
        assert any("your recipe's compute ceiling" in t for t in labels)
        assert _small_texts(fig) == []


def test_lesson07_dashboard_reacts(capsys):
    from roofline_lessons.viz.dashboards.lesson07 import lesson07_dashboard

    ui = lesson07_dashboard()
    first = ui.panel.value
    assert '<img class="rl-chart"' in first and 'alt="' in first and "sits on the open square" in first
    ui.by_label["recipe"].value = "W8A8 FP8"
    assert ui.panel.value != first and "<img" in ui.panel.value and "raises the compute ceiling" in ui.panel.value
    ui.by_label["part"].value = "h200"
    ui.by_label["recipe"].value = "W4A4 FP4"
    page = ui.panel.value
    assert page.count("no fp4 rate") == 1 and "<img" not in page
    assert ui.by_label["phase"].style.description_width == "initial"
    capsys.readouterr()


# ---- reviewer fixes -----------------------------------------------------------------------------

def test_lesson06_dots_that_overlap_stay_visible_and_the_alt_says_they_coincide():
    """At N = 8,192, d = 128, 228 KiB, causal, Algorithm 1 (132 FLOP/byte) sits a few pixels from the
    FlashAttention-2 order (121): the triangle is hollow and drawn over the diamond, and the alt says so."""
    from roofline_lessons.viz.dashboards.lesson06 import HOLLOW_KIND

    chart = Lesson06Chart()
    view = lesson06_view(8192, 128, 228, True)
    frame = lesson06_frame(view, chart)
    fig = _figures(chart)[0]
    moving = [ln for ln in fig.axes[0].get_lines() if ln.get_animated()]
    hollow, under = moving[HOLLOW_KIND], moving[2]
    assert hollow.get_markerfacecolor() == "none" and hollow.get_zorder() > under.get_zorder()
    assert hollow.get_markersize() > under.get_markersize()
    pairs = {(a, b) for a, b, _ in chart.coinciding()}
    assert (KINDS[1], KINDS[2]) in pairs
    assert "Algorithm 1 and the FlashAttention-2 order coincide" in frame.alt
    apart = lesson06_frame(lesson06_view(512, 64, 48, True), chart)
    assert "coincide" not in apart.alt and chart.coinciding() == []


def test_lesson06_tile_map_arrow_points_the_way_query_blocks_grow():
    chart = Lesson06Chart()
    chart.png(lesson06_view(2048, 128, 228, True))
    ax2 = _figures(chart)[0].axes[1]
    bottom, top = ax2.get_ylim()
    assert bottom > top  # origin="upper": query block i grows downward ...
    label = ax2.get_ylabel()
    assert ax2.yaxis.label.get_rotation() == 90 and label.startswith("←") and "→" not in label  # ... so does the arrow
    left, right = ax2.get_xlim()
    assert right > left and ax2.get_xlabel().endswith("→")


def test_lesson06_causal_verdict_says_which_flops_are_counted():
    """An eager standard kernel computes the full N² square and masks it (the cost model's count); the
    dots count unmasked work, and the verdict says both."""
    from roofline_lessons.core.units import si
    from roofline_lessons.topics.flash import attention_flops

    view = lesson06_view(8192, 128, 228, True)
    eager = float(attention_flops(8192, 128, False))
    assert view.standard_computed_flops == eager and view.flops == float(attention_flops(8192, 128, True))
    assert si(eager, "FLOP") in view.text and si(view.flops, "FLOP") in view.text
    assert "unmasked" in view.text and "masks them" in view.text
    full = lesson06_view(8192, 128, 228, False)
    assert "unmasked" not in full.text and full.flops == eager


def _band_margin_px(chart, view):
    """Pixels between the top of the chosen ceiling's band and the top of the axes (negative: cut off)."""
    chart.png(view)
    fig = [f for f in _figures(chart) if f.axes[0].get_title().split(" on the ")[1].startswith(view.part)][0]
    ax = fig.axes[0]
    band = [ln for ln in ax.get_lines() if ln.get_animated()][0]
    half_px = band.get_linewidth() / 72 * fig.dpi / 2
    y_band = ax.transData.transform((1, view.ceiling_flops_per_s / 1e12))[1]
    return ax.bbox.y1 - (y_band + half_px)


def test_lesson07_draws_every_format_its_recipes_use_and_the_band_is_inside():
    """W8A8 INT8 on the A100: the INT8 roof is drawn and listed in the alt, the band sits inside the axes,
    the integer rate is called TOPS, not TFLOP/s."""
    from roofline_lessons.core.hardware import get_part, list_parts
    from roofline_lessons.viz.dashboards.lesson07 import KV_CHOICES, RECIPES

    chart = Lesson07Chart()
    view = lesson07_view("a100-80gb", "decode", "W8A8 INT8", "FP8 KV cache", batch=64)
    assert not view.error
    labels = [r.label for r in view.roofs]
    assert "a100-80gb int8" in labels and "a100-80gb bf16" in labels
    assert view.ceiling_flops_per_s <= max(r.peak_flops_per_s for r in view.roofs)
    assert _band_margin_px(chart, view) >= 0
    frame = lesson07_frame(view, chart)
    fig = _figures(chart)[-1]
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    for roof in view.roofs:  # the alt lists exactly the roofs drawn
        assert roof.label in frame.alt and any(t.startswith(roof.label + ":") for t in legend)
    int8 = get_part("a100-80gb").peak_flops_per_s("int8")
    assert f"a100-80gb int8 {num(int8 / 1e12)} TOPS" in frame.alt
    assert any(f"{num(int8 / 1e12)} TOPS (integer ops/s)" in t for t in legend)
    ceiling = num(view.ceiling_flops_per_s / 1e12)
    for text in (view.text, frame.alt):
        assert f"{ceiling} TOPS" in text and f"{ceiling} TFLOP/s" not in text
    # every recipe's ceiling on every part lies under the highest roof drawn, and inside the axes
    for part in list_parts():
        for recipe in RECIPES:
            v = lesson07_view(part, "prefill", recipe, KV_CHOICES[0], batch=16)
            if v.error:
                continue
            assert v.ceiling_flops_per_s <= max(r.peak_flops_per_s for r in v.roofs) * (1 + 1e-9), (part, recipe)
            assert _band_margin_px(chart, v) >= 0, (part, recipe)


def test_lesson07_bandwidth_reads_as_in_the_other_charts():
    """TB/s via num(): "8 TB/s" (not "8.00 TB/s") and "0.819 TB/s" (not "819 GB/s")."""
    from roofline_lessons.core.hardware import get_part

    chart = Lesson07Chart()
    for part, recipe, said in (("b200", "W8A8 FP8", "8 TB/s"), ("tpu-v5e", "W8A8 INT8", "0.819 TB/s")):
        assert num(get_part(part).memory_bandwidth_bytes_per_s / 1e12) + " TB/s" == said
        view = lesson07_view(part, "decode", recipe)  # memory-bound under a raised ceiling: the verdict names the bandwidth
        frame = lesson07_frame(view, chart)
        assert said in frame.alt and said in view.text and "GB/s" not in frame.alt + view.text
        fig = [f for f in _figures(chart) if part in f.axes[0].get_title()][0]
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        roof_entries = [t for t in legend if t.startswith(part)]
        assert roof_entries and all(f", {said}," in t and ".00 TB/s" not in t for t in roof_entries)


def test_lesson07_ceiling_words_follow_the_numbers():
    """The verdict says rises / stays / falls from the two ceilings (weight-only decode on an H100: the estimate's
    ceiling falls, dequantisation in series), and it gives the lower bound beside the estimate."""
    from roofline_lessons.viz.dashboards.lesson07 import ceiling_change

    assert ceiling_change(989e12, 1979e12, "fp8 bf16").startswith("rises from 989 TFLOP/s to")
    assert ceiling_change(989e12, 989e12, "bf16 bf16") == "stays at 989 TFLOP/s"
    assert ceiling_change(989e12, 66.7e12, "bf16 bf16") == "falls from 989 TFLOP/s to 66.7 TFLOP/s"
    view = lesson07_view("h100-sxm", "decode", "weight-only 8-bit (W8A16)")
    assert view.ceiling_flops_per_s < view.baseline_ceiling_flops_per_s
    assert "The compute ceiling falls from 989 TFLOP/s" in view.text and "stays" not in view.text
    assert "in series" in view.text and "the lower bound overlaps the two" in view.text
    assert duration(view.time_lower_bound_s) in view.text and duration(view.time_estimate_s) in view.text
    assert "≥" not in view.text and "linear layers of the blocks" in view.text
    kv = lesson07_view("h100-sxm", "decode", BASELINE, "FP8 KV cache")
    assert "The compute ceiling stays at 989 TFLOP/s" in kv.text
    frame = lesson07_frame(view, Lesson07Chart())
    assert "lower bound is" in frame.alt and "estimate" in frame.alt


def test_lesson07_ceiling_word_matches_the_ceilings_everywhere():
    """Issue 25: "stays at 66.7 TFLOP/s" where the ceiling fell from 989. Over every part, phase, recipe, KV
    format and batch, the verdict's word is the one the two ceilings give, and the alt text's numbers are the
    view's own (one call), with the weight-only ceiling named as dequantisation in series."""
    from roofline_lessons.core.hardware import get_part, list_parts
    from roofline_lessons.viz.dashboards.lesson07 import (BATCH_CHOICES, KV_CHOICES, RECIPES, lesson07_alt, rate)

    seen = set()
    for part, phase, recipe, kv, batch in itertools.product(list_parts(), ("decode", "prefill"), RECIPES, KV_CHOICES,
                                                             (BATCH_CHOICES[0], BATCH_CHOICES[-1])):
        view = lesson07_view(part, phase, recipe, kv, batch=batch)
        if view.error is not None:
            continue
        new, base = view.ceiling_flops_per_s, view.baseline_ceiling_flops_per_s
        word = "rises" if new > base * (1 + 1e-9) else "falls" if new < base * (1 - 1e-9) else "stays"
        seen.add(word)
        if word == "falls":
            assert "falls from" in view.text and "stays" not in view.text and "raises" not in view.text, view.text
            # a ceiling falls through dequantisation in series, or through matmul units slower than BF16's
            # (Blackwell Ultra's INT8: 153.5 TOPS dense against 2,250 TFLOP/s BF16)
            rates = get_part(part).dense_flops_per_s
            slower = [f for f in rates if f in view.ceiling_formats.split()[0] and rates[f] < rates["bf16"]]
            assert "dequant in series" in view.ceiling_formats or slower, view.ceiling_formats
        elif word == "stays":
            assert "falls" not in view.text and "raises" not in view.text, view.text
        else:
            assert "raises the compute ceiling" in view.text or "higher ceiling lifts it" in view.text, view.text
        alt = lesson07_alt(view)
        assert f"band at {rate(view.ceiling_flops_per_s, view.ceiling_formats)} ({view.ceiling_formats}; ridge " \
               f"{num(view.ridge_point_flop_per_byte)} FLOP/byte)" in alt
        assert f"is at {num(view.chosen[0])} FLOP/byte" in alt and f"is at {num(view.baseline[0])} FLOP/byte" in alt
    assert seen == {"rises", "falls", "stays"}


def test_lesson07_caveat_sizes_the_per_channel_scales():
    from roofline_lessons.core.units import percent
    from roofline_lessons.topics.levers import per_channel_scale_share

    view = lesson07_view("h100-sxm", "decode", "weight-only 8-bit (W8A16)")
    assert f"at most {percent(per_channel_scale_share('qwen3.8-27b'), 3)} of an 8-bit weight matrix's bytes" in view.text
    assert "rounding error" not in view.text


# ---- the closed forms and the recipe comparison live in topics (issue 27) -------------------------

def test_closed_form_tiling_is_what_the_simulations_count():
    """topics.flash.closed_form_tiling, which the dashboard shows, equals both tiled simulations at a small N."""
    n, d, sram = 300, 64, 48 * 1024
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((n, d)).astype(np.float16) * np.float16(0.1) for _ in range(3))
    for causal in (True, False):
        tiling = closed_form_tiling(n, d, sram, causal)
        _, t1 = tiled_attention(q, k, v, sram, causal=causal)
        _, t2 = tiled_attention_fa2(q, k, v, sram, causal=causal)
        assert tiling.hbm_bytes[1:3] == (t1.hbm_bytes, t2.hbm_bytes)
        assert (tiling.sizes.rows, tiling.sizes.cols) == (t1.block_rows, t1.block_cols)
        assert tiling.tiles_visited == len(t1.visited)
        assert tiling.hbm_bytes[0] > tiling.hbm_bytes[1] > tiling.hbm_bytes[3]  # standard > tiled > compulsory


def test_recipe_steps_and_caveats_are_the_views():
    from roofline_lessons.topics.levers import recipe_not_counted, recipe_steps

    base, new, change = recipe_steps("qwen3.8-27b", "h100-sxm", "decode", "W8A8 FP8", "FP8 KV cache")
    view = lesson07_view("h100-sxm", "decode", "W8A8 FP8", "FP8 KV cache")
    assert change["kv_dtype"] == "fp8" and view.speedup == float(base.time_estimate_s / new.time_estimate_s)
    caveats = recipe_not_counted("qwen3.8-27b", "W8A8 FP8", "FP8 KV cache")
    assert len(caveats) == 2 and all(c in view.text for c in caveats)
    assert recipe_not_counted("qwen3.8-27b", BASELINE) == []
