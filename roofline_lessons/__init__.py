"""Roofline Lessons: the helper package behind the course.

The package is layered; each layer imports only from the layers above it in this list:

- :mod:`roofline_lessons.core`   — the analytic core: dtypes, units, catalogs (hardware, models),
  per-operator costs, the roofline, memory footprint, placement. No plotting, no widgets.
- :mod:`roofline_lessons.topics`  — one module per idea a lesson teaches (batching, hybrid, flash,
  levers, datasheets, reports).
- :mod:`roofline_lessons.measure` — the probes that measure your own machine, and saved results.
- :mod:`roofline_lessons.viz`     — charts, figures and the ipywidgets dashboards.
- :mod:`roofline_lessons.course`  — exercise generation, checkers, flashcards, drill, cheat sheet,
  workshop tools.
- :mod:`roofline_lessons.cli`     — the ``roofline-lessons`` command.

The everyday names are here at the top: ``from roofline_lessons import place, get_part, get_model,
Workload``. Module paths from 0.1 (``roofline_lessons.costs`` …) still import, with a warning naming
the new path, until 0.3 (:mod:`roofline_lessons._moved`).
"""

import importlib
from typing import TYPE_CHECKING

from . import _moved

#: the everyday names, and the module each comes from. They are imported on first use (PEP 562), so
#: ``import roofline_lessons`` (and the ``roofline-lessons`` command, whose ``doctor`` must run where
#: numpy is missing) needs only the standard library.
_EXPORTS = {
    "Workload": "core.costs", "model_cost": "core.costs",
    "RooflineInputError": "core.errors",
    "Part": "core.hardware", "get_part": "core.hardware", "list_parts": "core.hardware",
    "footprint": "core.memory", "max_batch_that_fits": "core.memory", "weight_bytes": "core.memory",
    "model_from_config": "core.model_config",
    "Model": "core.models", "get_model": "core.models", "list_models": "core.models",
    "Parallelism": "core.parallel",
    "Placement": "core.placement", "place": "core.placement",
    "attainable_flops_per_s": "core.roofline", "bound": "core.roofline",
    "ridge_point_flop_per_byte": "core.roofline", "time_lower_bound_s": "core.roofline",
}
#: the layers, reachable as attributes (``roofline_lessons.core.units``) as when they were imported here
_LAYERS = ("core", "topics", "measure", "viz", "course")

if TYPE_CHECKING:  # what readers and type checkers see
    from .core.costs import Workload, model_cost
    from .core.errors import RooflineInputError
    from .core.hardware import Part, get_part, list_parts
    from .core.memory import footprint, max_batch_that_fits, weight_bytes
    from .core.model_config import model_from_config
    from .core.models import Model, get_model, list_models
    from .core.parallel import Parallelism
    from .core.placement import Placement, place
    from .core.roofline import attainable_flops_per_s, bound, ridge_point_flop_per_byte, time_lower_bound_s


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name in _LAYERS:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_LAYERS))


_moved.install()

__all__ = [
    "Model",
    "Parallelism",
    "Part",
    "Placement",
    "RooflineInputError",
    "Workload",
    "attainable_flops_per_s",
    "bound",
    "footprint",
    "get_model",
    "get_part",
    "list_models",
    "list_parts",
    "max_batch_that_fits",
    "model_cost",
    "model_from_config",
    "place",
    "ridge_point_flop_per_byte",
    "time_lower_bound_s",
    "weight_bytes",
]
__version__ = "0.2.0"
