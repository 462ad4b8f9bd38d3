"""Errors with messages a learner can act on."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable


class RooflineInputError(ValueError):
    """Bad input to the package: the message names the value and what is allowed."""


def close_matches(name: str, choices: Iterable[str], limit: int = 4) -> list[str]:
    """Ids in ``choices`` that look like ``name``: substring matches first, then fuzzy ones."""
    choices = list(choices)
    key = str(name).strip().lower()
    found = [c for c in choices if key and (key in c or c in key)]
    for c in difflib.get_close_matches(key, choices, n=limit, cutoff=0.5):
        if c not in found:
            found.append(c)
    return found[:limit]


def unknown_name_error(kind: str, name: object, choices: Iterable[str]) -> RooflineInputError:
    """An error for an unknown catalog id that lists the closest ids and all ids."""
    choices = sorted(choices)
    near = close_matches(str(name), choices)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    return RooflineInputError(
        f"unknown {kind} {name!r}{hint} (known {kind}s: {', '.join(choices)})"
    )


def whole_number(name: str, value: object, minimum: int) -> int:
    """One whole number >= ``minimum`` (an int), or a RooflineInputError naming the value and what is
    allowed. Text, booleans, None, nan and fractions are refused; 8.0 is 8."""
    bad = RooflineInputError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise bad
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise bad from None
    if not math.isfinite(v) or v != math.floor(v) or v < minimum:
        raise bad
    return int(v)
