"""Unit constants and number formatting for lesson prose. SI (kB, GB, TB/s) and binary
(KiB, MiB, GiB) are kept apart and named as such."""

from __future__ import annotations

KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB = 1024, 1024**2, 1024**3
TERA = 1e12
PETA = 1e15


def si(value: float, unit: str, digits: int = 3) -> str:
    """``si(3.35e12, "B/s")`` → ``"3.35 TB/s"`` (decimal prefixes)."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:,.{digits}g} {prefix}{unit}"
    return f"{value:,.{digits}g} {unit}"


def binary(value_bytes: float, digits: int = 3) -> str:
    """``binary(3 * 2**20)`` → ``"3 MiB"`` (binary prefixes)."""
    for factor, prefix in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if abs(value_bytes) >= factor:
            return f"{value_bytes / factor:,.{digits}g} {prefix}"
    return f"{value_bytes:,.{digits}g} B"


def percent(fraction: float, digits: int = 2) -> str:
    """``percent(0.00338)`` → ``"0.34 %"``."""
    return f"{fraction * 100:,.{digits}f} %"
