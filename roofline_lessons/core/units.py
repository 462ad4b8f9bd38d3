"""Unit constants and number formatting for lesson prose. SI (kB, GB, TB/s) and binary
(KiB, MiB, GiB) are kept apart and named as such."""

from __future__ import annotations

import math

KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB = 1024, 1024**2, 1024**3
TERA = 1e12
PETA = 1e15


def num(value: float, digits: int = 3) -> str:
    """A number for a person to read: ``digits`` significant figures, thousands separators, never
    scientific notation. ``num(8076.3)`` → ``"8,076"``, ``num(0.012345)`` → ``"0.0123"``."""
    x = float(value)
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    if x == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{x:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def count(value: float) -> str:
    """A whole number with thousands separators: ``count(131072)`` → ``"131,072"``."""
    return f"{round(float(value)):,}"


def si(value: float, unit: str, digits: int = 3) -> str:
    """``si(3.35e12, "B/s")`` → ``"3.35 TB/s"`` (decimal prefixes, up to E; never scientific notation)."""
    for factor, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{num(value / factor, digits)} {prefix}{unit}"
    return f"{num(value, digits)} {unit}"


def binary(value_bytes: float, digits: int = 3) -> str:
    """``binary(3 * 2**20)`` → ``"3 MiB"`` (binary prefixes, up to PiB)."""
    for factor, prefix in ((1024**5, "PiB"), (1024**4, "TiB"), (GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if abs(value_bytes) >= factor:
            return f"{num(value_bytes / factor, digits)} {prefix}"
    return f"{num(value_bytes, digits)} B"


def duration(seconds: float, digits: int = 3) -> str:
    """A time in the unit a person would say: ns, µs, ms, s, min, h or days.
    ``duration(3.96)`` → ``"3.96 s"``, ``duration(513.2)`` → ``"8.55 min"``, ``duration(5.06e-9)`` → ``"5.06 ns"``."""
    s = float(seconds)
    if abs(s) >= 86400 * 2:
        return f"{num(s / 86400, digits)} days"
    if abs(s) >= 7200:
        return f"{num(s / 3600, digits)} h"
    if abs(s) >= 120:
        return f"{num(s / 60, digits)} min"
    for factor, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if abs(s) >= factor:
            return f"{num(s / factor, digits)} {unit}"
    return f"{num(s / 1e-9, digits)} ns" if s else "0 s"


def percent(fraction: float, digits: int = 2) -> str:
    """``percent(0.00338)`` → ``"0.34 %"``."""
    return f"{fraction * 100:,.{digits}f} %"


def share_percent(fraction: float) -> str:
    """A share for a person to read: whole percents from 1 % (as rounded), one decimal below,
    "under 0.1 %" below that, never a bare "0 %" for a share that is not zero; so "1 %" and
    "1.0 %" never appear side by side (0.996 is "1 %", not "1.0 %")."""
    if fraction <= 0:
        return "0 %"
    if fraction < 0.001:
        return "under 0.1 %"
    return percent(fraction, 0 if round(fraction * 100, 1) >= 1 else 1)


def quantity(value: float, singular: str, plural: str | None = None, digits: int = 3, whole: bool = False) -> str:
    """A number with its unit in the grammatical number the printed figure takes: ``quantity(1, "byte")``
    → ``"1 byte"``, ``quantity(0.516, "byte")`` → ``"0.516 bytes"``, ``quantity(255, "decode step",
    whole=True)`` → ``"255 decode steps"``. The figure is :func:`num` (``whole=True``: :func:`count`);
    the unit is singular exactly when that text reads 1. ``plural`` defaults to ``singular + "s"``."""
    text = count(value) if whole else num(value, digits)
    return f"{text} {singular if text in ('1', '-1') else (plural or singular + 's')}"
