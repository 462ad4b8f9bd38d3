"""Old import paths, kept working for one release.

Version 0.2 grouped the package's modules by layer (``model``, ``topics``, ``measure``, ``viz``,
``course``). A learner's notebook written against 0.1 may still say ``from roofline_lessons.costs
import model_cost``; that keeps working until 0.3 and warns once, naming the new path. The import
finder below hands back the *same* module object as the new path (never a second copy), so state
such as a catalog cache is shared.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

PACKAGE = "roofline_lessons"
REMOVED_IN = "0.3"

#: old module (below ``roofline_lessons``) -> where it lives now. ``measure`` itself is now a
#: package; its old top-level names are served by ``roofline_lessons.measure.__getattr__``.
MOVED: dict[str, str] = {
    "dtypes": "core.dtypes",
    "units": "core.units",
    "errors": "core.errors",
    "_catalog": "core._catalog",
    "hardware": "core.hardware",
    "models": "core.models",
    "costs": "core.costs",
    "roofline": "core.roofline",
    "memory": "core.memory",
    "placement": "core.placement",
    "batching": "topics.batching",
    "hybrid": "topics.hybrid",
    "flash": "topics.flash",
    "levers": "topics.levers",
    "datasheets": "topics.datasheets",
    "reports": "topics.reports",
    "machine": "measure.machine",
    "measure_gpu": "measure.gpu",
    "results": "measure.results",
    "charts": "viz.charts",
    "plots": "viz.plots",
    "fastfig": "viz.fastfig",
    "display": "viz.display",
    "dashboards": "viz.dashboards",
    "exercisegen": "course.exercisegen",
    "notebook_files": "course.notebook_files",
    "checkers": "course.checkers",
    "flashcards": "course.flashcards",
    "drill": "course.drill",
    "cheatsheet": "course.cheatsheet",
    "workshop": "course.workshop",
    "checks": "course.checks",
}


class MovedModuleWarning(FutureWarning):
    """An old import path was used; the message names the new one.

    A ``FutureWarning`` rather than a ``DeprecationWarning`` so that a learner sees it in Jupyter
    (a ``DeprecationWarning`` raised from inside the import system is hidden by default)."""


def new_location(fullname: str) -> str | None:
    """``"roofline_lessons.costs"`` -> ``"roofline_lessons.core.costs"``; ``None`` if not moved."""
    head, _, rest = fullname.partition(".")
    if head != PACKAGE or not rest:
        return None
    first, _, tail = rest.partition(".")
    if first not in MOVED:
        return None
    return ".".join(filter(None, (PACKAGE, MOVED[first], tail)))


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def create_module(self, spec):
        warnings.warn(f"{self.old} moved to {self.new} in roofline_lessons 0.2; the old path stops "
                      f"working in {REMOVED_IN}. Change the import to: {self.new}",
                      MovedModuleWarning, stacklevel=2)  # warnings skips the import system's frames
        return importlib.import_module(self.new)

    def exec_module(self, module):
        """The module was executed under its new name; nothing to run again."""


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new = new_location(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(fullname, new))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once), ahead of the normal path finder, so an old
    name never loads a second copy of a module from its new file."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())
