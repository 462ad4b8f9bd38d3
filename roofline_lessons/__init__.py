"""Roofline Lessons: the helper package behind the course.

Small modules, one idea each:

- :mod:`roofline_lessons.dtypes`     — element sizes of the number formats (bytes per element).
- :mod:`roofline_lessons.hardware`   — the hardware catalog (peak FLOP/s, bandwidth, capacity).
- :mod:`roofline_lessons.models`     — the model catalog and parameter counts derived from it.
- :mod:`roofline_lessons.costs`      — FLOPs and bytes per operator for prefill and decode.
- :mod:`roofline_lessons.roofline`   — attainable performance, ridge point, bound, time bounds.
- :mod:`roofline_lessons.memory`     — memory footprint against capacity, largest batch that fits.
- :mod:`roofline_lessons.placement`  — a model + a part + a workload -> one point on the roofline.
- :mod:`roofline_lessons.charts`     — matplotlib roofline charts.
- :mod:`roofline_lessons.dashboards` — ipywidgets dashboards (update logic is plain functions).
- :mod:`roofline_lessons.checkers`   — exercise checkers; :mod:`roofline_lessons.checks` per lesson.
"""

from .costs import Workload, model_cost
from .hardware import Part, get_part, list_parts
from .models import Model, get_model, list_models
from .placement import Placement, place
from .roofline import attainable_flops_per_s, bound, ridge_point_flop_per_byte, time_lower_bound_s

__all__ = [
    "Model",
    "Part",
    "Placement",
    "Workload",
    "attainable_flops_per_s",
    "bound",
    "get_model",
    "get_part",
    "list_models",
    "list_parts",
    "model_cost",
    "place",
    "ridge_point_flop_per_byte",
    "time_lower_bound_s",
]
__version__ = "0.1.0"
