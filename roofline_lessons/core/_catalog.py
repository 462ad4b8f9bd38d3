"""Loading the TOML catalogs that ship inside the package."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any


@cache
def load_catalog(filename: str) -> dict[str, Any]:
    """Parse ``roofline_lessons/data/<filename>`` once and return it (treat it as read-only)."""
    text = resources.files("roofline_lessons").joinpath("data", filename).read_text("utf-8")
    return tomllib.loads(text)
