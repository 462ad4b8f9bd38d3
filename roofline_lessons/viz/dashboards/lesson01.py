"""Lesson 1 dashboard: one model, one part, one workload -> its point on the roofline."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from ...core.dtypes import DTYPES
from ...core.errors import RooflineInputError
from ...core.hardware import get_part, list_parts
from ...core.models import list_models
from ...core.placement import place
from ..charts import Point, Roof, RooflineCanvas, point_on_roof, roofline_chart
from ..fastfig import bare_figure, figure_png

BATCH_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
TOKEN_CHOICES = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class Lesson01View:
    """Everything the lesson-1 dashboard shows for one setting of its controls."""

    title: str
    roof: Roof | None
    point: Point | None
    ridge_point_flop_per_byte: float | None
    intensity_flop_per_byte: float | None
    intensity_per_weight_byte: float | None
    attainable_flops_per_s: float | None
    fraction_of_peak: float | None
    bound: str | None
    time_lower_bound_s: float | None
    verdict: str
    error: str | None = None


def lesson01_view(model_id: str, part_id: str, dtype: str, phase: str, batch: int, tokens: int) -> Lesson01View:
    """Compute the lesson-1 dashboard for one setting; bad combinations give a view with ``error``.

    ``tokens`` is the prompt length for prefill and the context already cached for decode.
    """
    try:
        fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
        # One format throughout (weights, activations, KV cache, every matmul): a real W8A8/W4A4
        # recipe when dtype is 8 or 4 bits, so the point moves (fewer bytes) as well as the ridge.
        p = place(model_id, part_id, phase=phase, batch=batch, compute_dtype=dtype, weights_dtype=dtype,
                  activations_dtype=dtype, kv_dtype=dtype, attention_compute_dtype=dtype, **fields)
    except RooflineInputError as exc:
        return Lesson01View("Roofline", None, None, None, None, None, None, None, None, None,
                            verdict=f"Cannot place this: {exc}", error=str(exc))
    part = get_part(part_id)
    roof = Roof(f"{part.id} {dtype}", p.peak_flops_per_s, p.bandwidth_bytes_per_s)
    what = (f"{phase} of {tokens:,} tokens × batch {batch}" if phase == "prefill"
            else f"decode, batch {batch}, {tokens:,} tokens cached")
    intensity = float(p.intensity)
    point = point_on_roof(what, intensity, roof)
    bound = str(p.bound)
    frac = float(p.fraction_of_peak)
    ridge = float(p.ridge_point_flop_per_byte)
    if bound == "memory":
        verdict = (f"Memory-bound: I = {intensity:,.3g} FLOP/byte is {ridge / intensity:,.3g}× left of the ridge "
                   f"({ridge:,.0f}). The best possible is {frac:.2%} of peak: shop for bytes "
                   f"(batching, smaller weights or KV cache), not FLOPs.")
    else:
        verdict = (f"Compute-bound: I = {intensity:,.3g} FLOP/byte is {intensity / ridge:,.3g}× right of the ridge "
                   f"({ridge:,.0f}). The compute roof caps it: shop for FLOPs (a faster format, better "
                   f"tensor-core use).")
    if p.context_beyond_model:
        verdict += (f" Note: {p.model.name} was built for at most {p.model.max_context_tokens:,} tokens "
                    "(config.json max_position_embeddings); this length is a what-if.")
    return Lesson01View(
        title=f"{p.model.name} on {part.name} ({dtype} throughout)",
        roof=roof,
        point=point,
        ridge_point_flop_per_byte=ridge,
        intensity_flop_per_byte=intensity,
        intensity_per_weight_byte=float(p.intensity_per_weight_byte),
        attainable_flops_per_s=float(p.attainable_flops_per_s),
        fraction_of_peak=frac,
        bound=bound,
        time_lower_bound_s=float(p.time_lower_bound_s),
        verdict=verdict,
    )


def lesson01_draw(view: Lesson01View):
    """Render a :class:`Lesson01View` as a roofline chart; returns the figure."""
    if view.roof is None:
        fig = bare_figure((7.5, 1.2))
        ax = fig.add_subplot()
        ax.axis("off")
        ax.text(0.0, 0.5, textwrap.fill(view.verdict, 110), fontsize=9, va="center")
        return fig
    fig = bare_figure((7.5, 4.8))
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.11, right=0.95, bottom=0.11, top=0.93)
    roofline_chart([view.roof], [view.point], title=view.title, intensity_range=(0.1, 1e5), ax=ax, fast=True)
    return fig


def lesson01_png(view: Lesson01View, canvas: RooflineCanvas | None = None) -> bytes:
    """The dashboard chart as PNG bytes (what the learner's browser receives on every update).

    With a :class:`RooflineCanvas`, only the moving point is redrawn when the roof is unchanged.
    """
    if canvas is not None and view.roof is not None:
        return canvas.render_png([view.roof], view.point, view.title)
    return figure_png(lesson01_draw(view))


def lesson01_dashboard(model_id: str = "qwen3.8-27b", part_id: str = "h100-sxm"):
    """The lesson-1 dashboard: model, part, dtype, phase, batch and length → chart and verdict."""
    import ipywidgets as widgets
    from IPython.display import Image, display

    part_w = widgets.Dropdown(options=list_parts(), value=part_id, description="part")
    # All dtypes stay offered: a part without that rate says so in the verdict (A100 has no FP8),
    # and changing the part never fires a second, spurious update.
    dtype_w = widgets.Dropdown(options=DTYPES, value="bf16", description="dtype")
    model_w = widgets.Dropdown(options=list_models(), value=model_id, description="model")
    phase_w = widgets.ToggleButtons(options=["decode", "prefill"], value="decode", description="phase")
    batch_w = widgets.SelectionSlider(options=BATCH_CHOICES, value=1, description="batch")
    tokens_w = widgets.SelectionSlider(options=TOKEN_CHOICES, value=8192, description="tokens",
                                       tooltip="prompt length (prefill) or tokens already cached (decode)")

    canvas = RooflineCanvas()

    def _update(model, part, dtype, phase, batch, tokens):
        view = lesson01_view(model, part, dtype, phase, batch, tokens)
        print(view.verdict)
        display(Image(data=lesson01_png(view, canvas), format="png"))

    out = widgets.interactive_output(_update, {"model": model_w, "part": part_w, "dtype": dtype_w,
                                               "phase": phase_w, "batch": batch_w, "tokens": tokens_w})
    ui = widgets.VBox([widgets.HBox([model_w, part_w, dtype_w]), phase_w, widgets.HBox([batch_w, tokens_w]), out])
    display(ui)
    return ui
