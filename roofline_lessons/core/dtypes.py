"""Number formats and their sizes in bytes per element."""

from __future__ import annotations

from .errors import unknown_name_error

#: Bytes per element of each number format the course uses. fp4 packs two values per byte.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
}

DTYPES: tuple[str, ...] = tuple(BYTES_PER_ELEMENT)


def check_dtype(name: object) -> str:
    """Return ``name`` if it is a known dtype, else raise an error listing the allowed names."""
    if not isinstance(name, str) or name not in BYTES_PER_ELEMENT:
        raise unknown_name_error("dtype", name, DTYPES)
    return name


def bytes_per_element(name: str) -> float:
    """Size of one element of ``name`` in bytes (fp4 → 0.5)."""
    return BYTES_PER_ELEMENT[check_dtype(name)]
