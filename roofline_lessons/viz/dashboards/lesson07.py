"""Lesson 7 dashboard: part, phase, batch, a weight-and-matmul recipe and a KV-cache format -> the
compute ceilings, the all-BF16 point and the chosen point, and the speed-up.

Every recipe is a real configuration (:data:`roofline_lessons.topics.levers.WEIGHT_RECIPES`), so no
choice of widgets is invalid; a recipe whose format has no sourced rate for the part in the catalog
(W8A8 FP8 on an A100, W8A8 INT8 on an H200) gives one clear message instead of a point."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.placement import place
from ...core.roofline import attainable_flops_per_s
from ...core.units import GiB
from ...topics.levers import BASELINE, KV_FORMATS, WEIGHT_RECIPES, recipe_fields, regime
from ..charts import MARKERS, PALETTE, Roof, roofline_chart, set_roof_ylim
from ..fastfig import CachedFigure, bare_figure, message_png

MODEL = "qwen3.8-27b"
FORMATS = ("bf16", "fp8", "fp4")
INTENSITY_RANGE = (0.1, 1e5)
RECIPES = tuple(WEIGHT_RECIPES)
KV_CHOICES = tuple(KV_FORMATS)
BATCH_CHOICES = (1, 4, 16, 64, 256)


@dataclass(frozen=True)
class Lesson07View:
    part: str
    phase: str
    roofs: tuple[Roof, ...]
    baseline: tuple[float, float] | None  #: (intensity, attainable FLOP/s) all BF16
    chosen: tuple[float, float] | None
    ridge_point_flop_per_byte: float | None  #: for the chosen step's mix of FLOPs
    speedup: float | None
    text: str
    error: str | None = None
    fits: bool | None = None  #: weights + KV + state of the chosen step fit in memory


def _roofs(part) -> tuple[Roof, ...]:
    return tuple(Roof(f"{part.id} {dt}", part.peak_flops_per_s(dt), part.memory_bandwidth_bytes_per_s)
                 for dt in FORMATS if dt in part.dense_flops_per_s)


def lesson07_view(part_id: str, phase: str, recipe: str = BASELINE, kv: str = "BF16 KV cache", tokens: int = 8192,
                  batch: int = 1) -> Lesson07View:
    """The all-BF16 step and the step with the chosen recipe and KV format, on the part's compute ceilings."""
    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    try:
        part = get_part(part_id)
    except RooflineInputError as exc:
        return Lesson07View(str(part_id), phase, (), None, None, None, None, f"Cannot place this: {exc}", str(exc))
    roofs = _roofs(part)
    try:
        change = recipe_fields(recipe, kv)
        base = place(MODEL, part, phase=phase, batch=batch, **fields)
        new = place(MODEL, part, phase=phase, batch=batch, **fields, **change)
    except RooflineInputError as exc:
        return Lesson07View(part.id, phase, roofs, None, None, None, None,
                            f"{recipe} with {kv} is not available on {part.id} (no sourced rate for its format in "
                            f"this catalog): {exc}", error=str(exc))
    speedup = float(base.time_lower_bound_s / new.time_lower_bound_s)
    fits = bool(new.fits_in_memory)
    what = (f"prefill of {tokens:,} tokens × batch {batch}" if phase == "prefill"
            else f"decode, batch {batch}, {tokens:,} cached")
    fit_text = ("fits" if fits else "does NOT fit") + (
        f" in {part.memory_capacity_bytes / GiB:,.0f} GiB ({float(new.memory_required_bytes) / GiB:,.0f} GiB of "
        "weights, KV cache and state; no headroom kept)")
    caveat = " (a best case: no cost charged for (de)quantising or scales)" if change else ""
    text = (f"{what} on {part.id}: {recipe}, {kv}. Compute roof for this FLOP mix "
            f"{float(new.peak_flops_per_s) / 1e12:,.0f} TFLOP/s, ridge {float(new.ridge_point_flop_per_byte):,.0f} "
            f"FLOP/byte; I = {float(new.intensity):,.3g} (all BF16: {float(base.intensity):,.3g}); "
            f"{regime(new.intensity, new.ridge_point_flop_per_byte)}. "
            f"Step ≥ {float(new.time_lower_bound_s) * 1e3:,.3g} ms vs {float(base.time_lower_bound_s) * 1e3:,.3g} ms "
            f"all-BF16: {speedup:.2f}× faster{caveat}. Memory: {fit_text}.")
    return Lesson07View(part.id, phase, roofs, (float(base.intensity), float(base.attainable_flops_per_s)),
                        (float(new.intensity), float(attainable_flops_per_s(new.intensity, new.peak_flops_per_s,
                                                                            new.bandwidth_bytes_per_s))),
                        float(new.ridge_point_flop_per_byte), speedup, text, fits=fits)


def _build(roofs):
    fig = bare_figure((7.8, 4.8))
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.11, right=0.95, bottom=0.11, top=0.93)
    roofline_chart(list(roofs), [], title=f"Qwen3.8-27B on {roofs[0].label.split()[0]}: one ceiling per format",
                   intensity_range=INTENSITY_RANGE, ax=ax, fast=True)
    set_roof_ylim(ax, roofs, INTENSITY_RANGE)
    base, = ax.plot([], [], marker=MARKERS[1], markersize=10, linestyle="none", color="black",
                    markerfacecolor="white", animated=True)
    chosen, = ax.plot([], [], marker=MARKERS[0], markersize=11, linestyle="none", color="black",
                      markerfacecolor=PALETTE[3], animated=True)
    return fig, (base, chosen)


class Lesson07Chart:
    def __init__(self) -> None:
        self.figures = CachedFigure(_build)

    def png(self, view: Lesson07View) -> bytes:
        if view.baseline is None or not view.roofs:
            return message_png(view.text)

        def update(state):
            base, chosen = state
            base.set_data([view.baseline[0]], [view.baseline[1] / 1e12])
            chosen.set_data([view.chosen[0]], [view.chosen[1] / 1e12])
            return [base, chosen]

        return self.figures.render(view.roofs, update)


def lesson07_dashboard(part_id: str = "h100-sxm"):
    """Part; phase; batch; weight-and-matmul recipe; KV format -> ceilings, the two points, the speed-up."""
    import ipywidgets as widgets
    from IPython.display import Image, display

    part_w = widgets.Dropdown(options=list_parts(), value=part_id, description="part")
    phase_w = widgets.ToggleButtons(options=["decode", "prefill"], value="decode", description="phase")
    recipe_w = widgets.Dropdown(options=RECIPES, value=BASELINE, description="recipe",
                                layout=widgets.Layout(width="22em"))
    kv_w = widgets.Dropdown(options=KV_CHOICES, value=KV_CHOICES[0], description="KV cache")
    batch_w = widgets.SelectionSlider(options=BATCH_CHOICES, value=1, description="batch")
    chart = Lesson07Chart()

    def _update(part, phase, recipe, kv, batch):
        view = lesson07_view(part, phase, recipe, kv, batch=batch)
        print(view.text)
        if view.baseline is not None:
            print("(open square: all BF16; filled dot: your choice)")
        display(Image(data=chart.png(view), format="png"))

    out = widgets.interactive_output(_update, {"part": part_w, "phase": phase_w, "recipe": recipe_w, "kv": kv_w,
                                               "batch": batch_w})
    ui = widgets.VBox([widgets.HBox([part_w, phase_w, batch_w]), widgets.HBox([recipe_w, kv_w]), out])
    display(ui)
    return ui
