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

from . import _moved
from .core.costs import Workload, model_cost
from .core.errors import RooflineInputError
from .core.hardware import Part, get_part, list_parts
from .core.memory import footprint, max_batch_that_fits, weight_bytes
from .core.models import Model, get_model, list_models
from .core.parallel import Parallelism
from .core.placement import Placement, place
from .core.roofline import attainable_flops_per_s, bound, ridge_point_flop_per_byte, time_lower_bound_s

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
    "place",
    "ridge_point_flop_per_byte",
    "time_lower_bound_s",
    "weight_bytes",
]
__version__ = "0.2.0"
