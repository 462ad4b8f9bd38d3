"""Lesson 7 dashboard: part, phase, batch, a weight-and-matmul recipe and a KV-cache format -> the
compute ceilings, the all-BF16 point and the chosen point, and the speed-up.

Every recipe is a real configuration (:data:`roofline_lessons.topics.levers.WEIGHT_RECIPES`), so no
choice of widgets is invalid; a recipe whose format has no sourced rate for the part in the catalog
(W8A8 FP8 on an A100, W4A4 FP4 on an H200) gives one clear message instead of a point.

The chart always marks the ceiling in force for the chosen recipe (a heavy grey band along its roof,
with its value written in the corner): a recipe that only raises the compute ceiling leaves a
memory-bound point where it was, and the band, not the point, shows what changed. The verdict then
says why the point did not move, with the step's compute and memory times.

The chart is the **estimate**'s view (``Placement.time_estimate_s``): the unfused intensity, and a
ceiling that blends the FLOP mix's peaks with weight-only dequantisation in series, so a weight-only
recipe's ceiling falls. The verdict gives the step's **lower bound** (``time_lower_bound_s``: compulsory
bytes, dequantisation overlapped) and its speed-up beside the estimate's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.roofline import attainable_flops_per_s
from ...core.units import binary, count, duration, num
from ...topics.levers import (BASELINE, KV_FORMATS, RECIPE_FORMATS, WEIGHT_RECIPES, recipe_not_counted, recipe_steps,
                              regime)
from ..charts import MARKERS, MIN_FONT_PT, PALETTE, TERA, Roof, roofline_chart, roofs_for, set_roof_ylim
from ..dashboard_base import (INTEGER_FORMATS, FigurePerKeyChart, bandwidth, dashboard, dropdown,  # noqa: F401
                              moving_marker, point_key, raise_small_text, rate, rate_unit, roof_label, slider, toggle)
from ..fastfig import bare_figure
from ..panel import Frame

MODEL = "qwen3.8-27b"
INTENSITY_RANGE = (0.1, 1e5)
RECIPES = tuple(WEIGHT_RECIPES)
KV_CHOICES = tuple(KV_FORMATS)
BATCH_CHOICES = (1, 4, 16, 64, 256)
CHOSEN_COLOUR = PALETTE[4]  #: the filled dot (reddish purple: no roof uses it)
BAND_COLOUR = "0.35"  #: the chosen ceiling's band (grey, drawn translucent under the roofs' colours)


@dataclass(frozen=True)
class Lesson07View:
    part: str
    phase: str
    roofs: tuple[Roof, ...]
    baseline: tuple[float, float] | None  #: (intensity, attainable FLOP/s) all BF16
    chosen: tuple[float, float] | None
    ridge_point_flop_per_byte: float | None  #: for the chosen step's mix of FLOPs (the estimate's ceiling)
    speedup: float | None  #: the estimate's speed-up: all-BF16 time_estimate_s ÷ the chosen step's
    text: str
    error: str | None = None
    fits: bool | None = None  #: weights + KV + state of the chosen step fit in memory
    ceiling_flops_per_s: float | None = None  #: the estimate's compute roof for the chosen step's FLOP mix
    baseline_ceiling_flops_per_s: float | None = None  #: compute roof of the all-BF16 step
    bandwidth_bytes_per_s: float | None = None
    compute_time_s: float | None = None  #: the estimate's compute seconds (FLOPs at their peaks + dequant in series)
    memory_time_s: float | None = None  #: the estimate's memory seconds (the unfused bytes at the bandwidth)
    baseline_time_s: float | None = None  #: the all-BF16 step's estimate, seconds
    speedup_lower_bound: float | None = None  #: all-BF16 time_lower_bound_s ÷ the chosen step's
    time_lower_bound_s: float | None = None  #: the chosen step's lower bound, seconds
    time_estimate_s: float | None = None  #: the chosen step's estimate, seconds
    baseline_time_lower_bound_s: float | None = None  #: the all-BF16 step's lower bound, seconds
    recipe: str = BASELINE
    kv: str = "BF16 KV cache"
    ceiling_formats: str = "bf16"  #: e.g. "fp8 matmuls, bf16 rest": the formats behind the ceiling
    notes: tuple[str, ...] = ()


def _speed_words(speedup: float) -> str:
    """``"1.97× faster"``, ``"1.25× slower"`` or ``"as fast as all-BF16"`` (within 0.5 %)."""
    return ("as fast as all-BF16" if abs(speedup - 1) < 5e-3 else
            f"{num(speedup)}× faster" if speedup > 1 else f"{num(1 / speedup)}× slower")


def ceiling_change(base_ceiling: float, ceiling: float, formats: str) -> str:
    """How the compute ceiling moved, worded from the numbers: ``"rises from 989 TFLOP/s to 1,979 TFLOP/s"``,
    ``"stays at 989 TFLOP/s"`` (within a part in 10⁹) or ``"falls from 989 TFLOP/s to 66.7 TFLOP/s"``."""
    word = "rises" if ceiling > base_ceiling * (1 + 1e-9) else "falls" if ceiling < base_ceiling * (1 - 1e-9) else ""
    now = rate(ceiling, formats)
    return f"{word} from {num(base_ceiling / TERA)} TFLOP/s to {now}" if word else f"stays at {now}"


def _dequant_note(new) -> str:
    """For a weight-only step: why the estimate's ceiling fell, and the lower bound's ceiling beside it."""
    dequant_s = float(new.dequant_time_s)
    if dequant_s <= 0:
        return ""
    return (f" (the estimate adds dequantising the weights on the vector units, {duration(dequant_s)}, in series "
            f"with the tensor cores' {duration(float(new.tensor_time_s))}; the lower bound overlaps the two, a "
            f"ceiling of {num(float(new.cost.flops) / float(new.compute_lower_bound_s) / TERA)} TFLOP/s)")


def _why(new, base, ceiling: float, base_ceiling: float) -> str:
    """Why the chosen dot sits where it does relative to the all-BF16 one, with the numbers (the estimate's
    view: its ceiling, its compute and memory times)."""
    same_place = (np.isclose(float(new.intensity), float(base.intensity), rtol=1e-9)
                  and np.isclose(float(new.attainable_flops_per_s), float(base.attainable_flops_per_s), rtol=1e-9))
    raised = ceiling > base_ceiling * (1 + 1e-9)
    compute_t, memory_t = float(new.compute_time_s), float(new.memory_time_s)
    formats = f"{new.workload.compute_dtype} {new.workload.other_compute_dtype}"
    moved = ceiling_change(base_ceiling, ceiling, formats) + _dequant_note(new)
    traffic = f"({duration(float(base.memory_time_s))} of memory traffic all-BF16, {duration(memory_t)} now)"
    if not raised and same_place and moved.startswith("stays"):
        return "This is the all-BF16 step itself: the filled dot sits on the open square."
    if raised and str(new.bound) == "memory":
        moved = ("so the dot did not move: it sits on the open square" if same_place else
                 f"so the faster ceiling alone would not move the dot; what moved it from the open square is the bytes "
                 f"{traffic}")
        return (f"Your recipe raises the compute ceiling from {num(base_ceiling / TERA)} TFLOP/s to "
                f"{rate(ceiling, formats)}, but the step is memory-bound: its FLOPs need {duration(compute_t)} at that "
                f"ceiling ({duration(float(base.compute_time_s))} at BF16's), its bytes {duration(memory_t)} at "
                f"{bandwidth(float(new.bandwidth_bytes_per_s))}. A faster compute roof does not help a step the bytes "
                f"hold back: it runs at intensity × bandwidth = {rate(float(new.attainable_flops_per_s), formats)} "
                f"under either ceiling, {moved}.")
    if raised:
        return (f"The step is compute-bound, so the higher ceiling lifts it: its FLOPs need {duration(compute_t)} at "
                f"{rate(ceiling, formats)} against {duration(float(base.compute_time_s))} at BF16's "
                f"{num(base_ceiling / TERA)} TFLOP/s.")
    if str(new.bound) == "memory":
        return (f"The compute ceiling {moved}; the step is memory-bound (its FLOPs need {duration(compute_t)}, its "
                f"bytes {duration(memory_t)}), so fewer bytes moved the dot along the bandwidth slope {traffic}.")
    return (f"The compute ceiling {moved}, and the step is compute-bound there: its FLOPs need {duration(compute_t)}, "
            f"its bytes only {duration(memory_t)}, so fewer bytes do not shorten it.")


def lesson07_view(part_id: str, phase: str, recipe: str = BASELINE, kv: str = "BF16 KV cache", tokens: int = 8192,
                  batch: int = 1) -> Lesson07View:
    """The all-BF16 step and the step with the chosen recipe and KV format, on the part's compute ceilings."""
    try:
        part = get_part(part_id)
    except RooflineInputError as exc:
        return Lesson07View(str(part_id), phase, (), None, None, None, None, f"Cannot place this: {exc}", str(exc),
                            recipe=recipe, kv=kv)
    # a roof per compute format a recipe uses (BF16 first) that the part has a rate for
    roofs = tuple(roofs_for(part, [dt for dt in RECIPE_FORMATS if dt in part.dense_flops_per_s]))
    try:
        base, new, change = recipe_steps(MODEL, part, phase, recipe, kv, tokens, batch)
    except RooflineInputError as exc:
        return Lesson07View(part.id, phase, roofs, None, None, None, None,
                            f"{recipe} with {kv} is not available on {part.id} (no sourced rate for its format in "
                            f"this catalog): {exc}", error=str(exc), recipe=recipe, kv=kv)
    speedup = float(base.time_estimate_s / new.time_estimate_s)
    fits = bool(new.fits_in_memory)
    ceiling, base_ceiling = float(new.peak_flops_per_s), float(base.peak_flops_per_s)
    a, b = new.workload.compute_dtype, new.workload.other_compute_dtype
    dequant = float(new.dequant_time_s) > 0  # then the ceiling is no format's rate: dequantisation in series lowers it
    formats = (f"{a} matmuls, {b} rest" if a != b else f"all {a}") + (", dequant in series" if dequant else "")
    formats_said = ((f"{a} weight matmuls, {b} for attention and the rest" if a != b else f"all {a}")
                    + (", plus dequantising the weights in series" if dequant else ""))
    what = (f"Prefill of {count(tokens)} tokens × batch {batch}" if phase == "prefill"
            else f"Decode, batch {batch}, {count(tokens)} cached tokens")
    fit_text = (f"Memory: weights, KV cache and state take {binary(float(new.memory_required_bytes))}, which "
                + ("fits" if fits else "does NOT fit") + f" in the {part.id}'s {binary(part.memory_capacity_bytes)} "
                "(no headroom kept).")
    not_charged = recipe_not_counted(MODEL, recipe, kv)
    caveat = f" Not charged by either: {'; '.join(not_charged)}." if not_charged else ""
    bound_s, base_bound_s = float(new.time_lower_bound_s), float(base.time_lower_bound_s)
    speedup_lb = base_bound_s / bound_s
    figures = (f"Step: lower bound {duration(bound_s)}, estimate {duration(float(new.time_estimate_s))} "
               f"(unfused activations{', dequantisation in series' if dequant else ''})")
    timing = (f"{figures}. " if not change else
              f"{figures}; all-BF16: {duration(base_bound_s)} and {duration(float(base.time_estimate_s))}. "
              f"The lower bound is {_speed_words(speedup_lb)}, the estimate {_speed_words(speedup)}.{caveat} ")
    unit_said = (" (tera-operations per second: the INT8 ops/s of the weight matmuls and the BF16 FLOP/s of the "
                 "rest, counted alike)" if rate_unit(formats) == "TOPS" else "")
    recipe_said = f" ({WEIGHT_RECIPES[recipe].recipe})" if "weights_dtype" in change else ""
    text = (f"{what} on the {part.id}: {recipe}{recipe_said}, {kv}. " + timing
            + f"The chart is the estimate's view. Compute ceiling for this FLOP mix ({formats_said}): "
            f"{rate(ceiling, formats)}{unit_said}, ridge {num(float(new.ridge_point_flop_per_byte))} FLOP/byte. "
            f"Intensity of the unfused bytes {num(float(new.intensity))} FLOP/byte (all BF16: "
            f"{num(float(base.intensity))}): {regime(new.intensity, new.ridge_point_flop_per_byte)}. "
            + _why(new, base, ceiling, base_ceiling))
    chosen_attainable = float(attainable_flops_per_s(new.intensity, new.peak_flops_per_s, new.bandwidth_bytes_per_s))
    return Lesson07View(part.id, phase, roofs, (float(base.intensity), float(base.attainable_flops_per_s)),
                        (float(new.intensity), chosen_attainable), float(new.ridge_point_flop_per_byte), speedup, text,
                        fits=fits, ceiling_flops_per_s=ceiling, baseline_ceiling_flops_per_s=base_ceiling,
                        bandwidth_bytes_per_s=float(new.bandwidth_bytes_per_s),
                        compute_time_s=float(new.compute_time_s), memory_time_s=float(new.memory_time_s),
                        baseline_time_s=float(base.time_estimate_s),
                        speedup_lower_bound=speedup_lb, time_lower_bound_s=bound_s,
                        time_estimate_s=float(new.time_estimate_s), baseline_time_lower_bound_s=base_bound_s,
                        recipe=recipe, kv=kv, ceiling_formats=formats, notes=(fit_text,))


class Lesson07Chart(FigurePerKeyChart):
    """A figure per part's roofs; a move draws the band along the ceiling in force, the two points, its label."""

    def figure_key(self, view: Lesson07View):
        return view.roofs

    def skeleton(self, roofs) -> dict:
        from matplotlib.lines import Line2D

        fig = bare_figure((8.4, 5.0))
        ax = fig.add_subplot()
        fig.subplots_adjust(left=0.1, right=0.95, bottom=0.1, top=0.93)
        roofline_chart(list(roofs), [], title=f"Qwen3.8-27B on the {roofs[0].label.split()[0]}: one compute ceiling "
                                              "per format", intensity_range=INTENSITY_RANGE, ax=ax, fast=True)
        set_roof_ylim(ax, roofs, INTENSITY_RANGE)  # top: 2.5 × the highest roof, so every recipe's ceiling is inside
        integer = any(rate_unit(r.label.split()[-1]) == "TOPS" for r in roofs)
        ax.set_ylabel("Attainable (TFLOP/s; TOPS for INT8)" if integer else "Attainable (TFLOP/s)")
        for line, roof in zip([ln for ln in ax.get_lines() if not ln.get_label().startswith("_")], roofs):
            line.set_label(roof_label(roof))  # num()-formatted, as in every other chart's alt text
        band, = ax.plot([], [], color=BAND_COLOUR, linewidth=10, alpha=0.35, solid_capstyle="butt", animated=True,
                        zorder=1.5)
        base = moving_marker(ax, MARKERS[1], "white", 15, markeredgewidth=1.6)
        chosen = moving_marker(ax, MARKERS[0], CHOSEN_COLOUR, 9)
        ceiling_label = ax.text(0.02, 0.97, "", transform=ax.transAxes, ha="left", va="top", fontsize=10, animated=True,
                                bbox={"boxstyle": "round", "fc": "white", "ec": BAND_COLOUR, "alpha": 0.95})
        handles = ax.get_legend_handles_labels()[0]  # the roofs, drawn and labelled by roofline_chart
        handles += [Line2D([], [], color=BAND_COLOUR, linewidth=10, alpha=0.35,
                           label="grey band: your recipe's compute ceiling"),
                    point_key(MARKERS[1], "open square: all-BF16 step", "white", 11),
                    point_key(MARKERS[0], "filled dot: your recipe", CHOSEN_COLOUR)]
        ax.legend(handles=handles, fontsize=MIN_FONT_PT, loc="lower right", framealpha=0.92)
        raise_small_text(fig)
        return {"fig": fig, "moving": (band, base, chosen, ceiling_label)}

    def move(self, shared: dict, view: Lesson07View) -> list:
        band, base, chosen, ceiling_label = shared["moving"]
        # the flat part of the roof in force: from its ridge to the right edge
        band.set_data([view.ridge_point_flop_per_byte, INTENSITY_RANGE[1]], [view.ceiling_flops_per_s / TERA] * 2)
        base.set_data([view.baseline[0]], [view.baseline[1] / TERA])
        chosen.set_data([view.chosen[0]], [view.chosen[1] / TERA])
        ceiling_label.set_text(f"your recipe's ceiling: {rate(view.ceiling_flops_per_s, view.ceiling_formats)}\n"
                               f"({view.ceiling_formats}; ridge {num(view.ridge_point_flop_per_byte)})")
        return [band, base, chosen, ceiling_label]


def lesson07_alt(view: Lesson07View) -> str:
    """The chart's message in words, with the live numbers."""
    ceilings = ", ".join(f"{r.label} {rate(r.peak_flops_per_s, r.label.split()[-1])}" for r in view.roofs)
    return (f"Log-log roofline of the {view.part} (bandwidth {bandwidth(view.bandwidth_bytes_per_s)}) with one "
            f"compute ceiling per format its recipes use: {ceilings}. The ceiling in force for {view.recipe} with "
            f"{view.kv} is marked by a band at {rate(view.ceiling_flops_per_s, view.ceiling_formats)} "
            f"({view.ceiling_formats}; ridge {num(view.ridge_point_flop_per_byte)} FLOP/byte). The all-BF16 "
            f"{view.phase} step (open square) is at {num(view.baseline[0])} FLOP/byte, {num(view.baseline[1] / TERA)} "
            f"TFLOP/s; the chosen step (filled dot) is at {num(view.chosen[0])} FLOP/byte, "
            f"{rate(view.chosen[1], view.ceiling_formats)}, {regime(view.chosen[0], view.ridge_point_flop_per_byte)}"
            + (", on top of the open square" if view.chosen == view.baseline else "")
            + f"; the step's lower bound is {_speed_words(view.speedup_lower_bound)}, its estimate "
            f"{_speed_words(view.speedup)}.")


def lesson07_frame(view: Lesson07View, chart: Lesson07Chart) -> Frame:
    """What the dashboard shows for ``view``: the verdict, the chart and its alt text; a configuration the
    part cannot run shows its message once, with no chart."""
    if view.error is not None or view.baseline is None:
        return Frame(verdict=view.text, png=None, alt="", error=True)
    return Frame(verdict=view.text, png=chart.png(view), alt=lesson07_alt(view), notes=view.notes)


def lesson07_dashboard(part_id: str = "h100-sxm"):
    """Part; phase; batch; weight-and-matmul recipe; KV format -> ceilings, the two points, the speed-up."""
    controls = {"part": dropdown("part", list_parts(), part_id, "14em"),
                "phase": toggle("phase", ["decode", "prefill"], "decode", "6em"),
                "batch": slider("batch", BATCH_CHOICES, 1, "18em", fmt=None),
                "recipe": dropdown("recipe", RECIPES, BASELINE, "24em"),
                "kv": dropdown("KV cache", KV_CHOICES, KV_CHOICES[0], "16em")}
    chart = Lesson07Chart()

    def render(part, phase, batch, recipe, kv):
        return lesson07_frame(lesson07_view(part, phase, recipe, kv, batch=batch), chart)

    return dashboard(controls, [["part", "phase", "batch"], ["recipe", "kv"]], render)
