"""Measuring the machine in front of you (lesson 8), above :mod:`core` and :mod:`topics`.

- :mod:`.machine` — what this machine is: cores, caches, SIMD width, theoretical peak.
- :mod:`.probes`  — numpy probes: bandwidth across working sets, matmul FLOP/s, kernels placed.
- :mod:`.gpu`     — the same probes on a CUDA GPU when PyTorch sees one (never a dependency).
- :mod:`.results` — saving and loading measurement files; the shipped example.

Before 0.2, :mod:`.probes` was the module ``roofline_lessons.measure``; its names still resolve
here (``from roofline_lessons.measure import measure``) with a warning naming the new path.
"""

from __future__ import annotations

import importlib
import warnings

from .._moved import REMOVED_IN, MovedModuleWarning

_SUBMODULES = frozenset({"machine", "probes", "gpu", "results"})


def __getattr__(name: str):
    """Old ``roofline_lessons.measure.<name>`` (0.1, when this was one module) -> ``.probes``."""
    if name.startswith("__") or name in _SUBMODULES:
        raise AttributeError(name)  # lets ``from roofline_lessons.measure import results`` import it
    probes = importlib.import_module(f"{__name__}.probes")
    if not hasattr(probes, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{__name__}.{name} moved to {__name__}.probes.{name} in roofline_lessons 0.2; the old "
                  f"path stops working in {REMOVED_IN}.", MovedModuleWarning, stacklevel=2)
    return getattr(probes, name)
