"""Exercise checkers: a clear ✓ or ✗ with a hint, never a crash, never executing text.

``...`` and ``None`` mean "not answered yet". A wrong-typed answer (text, a list, True) gets an
explanation of what was expected. Every check returns a :class:`CheckResult`, which Jupyter shows
as one line. When the environment variable ``ROOFLINE_LESSONS_CHECK_LOG`` names a file, each result
is also appended there as a JSON line (the tests use it to prove stubs fail and solutions pass).
"""

from __future__ import annotations

import json
import math
import numbers
import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..core.units import duration, num

CORRECT = "correct"
INCORRECT = "incorrect"
NOT_ATTEMPTED = "not attempted"

LOG_ENV = "ROOFLINE_LESSONS_CHECK_LOG"


@dataclass(frozen=True)
class CheckResult:
    exercise: str
    status: str
    message: str

    @property
    def passed(self) -> bool:
        return self.status == CORRECT

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        mark = {CORRECT: "✓", INCORRECT: "✗", NOT_ATTEMPTED: "…"}[self.status]
        return f"{mark} Exercise {self.exercise}: {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        """What Jupyter shows: the same sentence as prose that wraps between words (a repr is shown
        as monospace text that wraps mid-word), `code` spans as code, the mark in a colour-blind-safe colour."""
        import html
        import re

        colour = {CORRECT: "#0072B2", INCORRECT: "#D55E00", NOT_ATTEMPTED: "#555555"}[self.status]
        mark = {CORRECT: "✓", INCORRECT: "✗", NOT_ATTEMPTED: "…"}[self.status]
        text = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(self.message))
        return (f'<div class="rl-check" style="white-space: normal; overflow-wrap: normal; word-break: normal; '
                f'font-family: var(--jp-content-font-family, sans-serif); max-width: 60em;">'
                f'<b style="color: {colour}">{mark} Exercise {html.escape(self.exercise)}:</b> {text}</div>')


def _finish(result: CheckResult) -> CheckResult:
    path = os.environ.get(LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"exercise": result.exercise, "status": result.status}) + "\n")
    return result


def _not_attempted(exercise: str, what: str = "your answer") -> CheckResult:
    return _finish(CheckResult(exercise, NOT_ATTEMPTED, f"not answered yet: replace `...` with {what}."))


def _wrong(exercise: str, message: str) -> CheckResult:
    return _finish(CheckResult(exercise, INCORRECT, message))


def is_unanswered(answer: Any) -> bool:
    return answer is ... or answer is None


def as_number(answer: Any) -> tuple[float | None, str | None]:
    """(value, None) for a usable real number; (None, explanation) otherwise. Never raises."""
    if isinstance(answer, bool):
        return None, f"expected a number, got the boolean {answer!r}."
    if isinstance(answer, str):
        return None, (f"expected a number, got the text {answer!r}; write it without quotes "
                      "(e.g. 295 or 2.95e2).")
    try:
        import numpy as np

        if isinstance(answer, np.ndarray):
            if answer.size != 1:
                return None, f"expected one number, got an array of shape {answer.shape}."
            answer = answer.reshape(()).item()
        elif isinstance(answer, np.generic):
            answer = answer.item()
    except Exception:  # numpy missing or an odd object: fall through to the generic checks
        pass
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return None, f"expected a number, got {_a(type(answer).__name__)}."
    try:
        value = float(answer)
    except Exception:
        return None, f"expected a number, got {type(answer).__name__} that cannot be read as one."
    if not math.isfinite(value):
        return None, f"got {value}, which is not a finite number."
    return value, None


@dataclass(frozen=True)
class Mistake:
    """A classic wrong answer: the value it gives and the name of the mistake behind it."""

    label: str  #: names the mistake, e.g. "forgot the KV cache: weights ÷ bandwidth alone"
    value: float


def distinct_mistakes(expected: float, mistakes: Sequence[Mistake], rel_tol: float = 0.02,
                      abs_tol: float = 0.0) -> tuple[Mistake, ...]:
    """The mistakes whose value is not (within twice the tolerances) the right answer: a 'mistake'
    that gives the right number must never be named."""
    return tuple(m for m in mistakes if not math.isclose(m.value, expected, rel_tol=2 * rel_tol, abs_tol=2 * abs_tol))


def check_number(exercise: str, answer: Any, expected: float, *, rel_tol: float = 0.02, abs_tol: float = 0.0,
                 unit: str = "", hint: str = "", whole: bool = False,
                 mistakes: Sequence[Mistake] = ()) -> CheckResult:
    """Accept ``answer`` within ``rel_tol`` (relative) or ``abs_tol`` (absolute) of ``expected``.

    ``whole=True``: the answer must be a whole number (a batch of sequences, a count).
    ``mistakes``: classic wrong answers; an answer nearer one of them than the right value (and
    within the tolerance of it) is rejected with a hint that names the mistake.
    """
    if is_unanswered(answer):
        return _not_attempted(exercise, ("a whole number" if whole else "a number") + (f" in {unit}" if unit else ""))
    value, problem = as_number(answer)
    if problem:
        return _wrong(exercise, problem + (f" Hint: {hint}" if hint else ""))
    unit_s = f" {unit}" if unit else ""
    if whole and value != math.floor(value):
        return _wrong(exercise, f"{num(value, 6)}{unit_s} is not a whole number: you cannot run a fraction of one. "
                                "Round to the count that actually fits or is needed."
                                + (f" Hint: {hint}" if hint else ""))
    named = [m for m in mistakes if math.isclose(value, m.value, rel_tol=rel_tol, abs_tol=abs_tol)
             and abs(value - m.value) < abs(value - expected)]
    if named:
        m = min(named, key=lambda m: abs(value - m.value))
        return _wrong(exercise, f"{_quantity(value, unit)} is what you get when you {m.label}."
                                + (f" Hint: {hint}" if hint else ""))
    if math.isclose(value, expected, rel_tol=rel_tol, abs_tol=abs_tol):
        return _finish(CheckResult(exercise, CORRECT,
                                   f"{_quantity(value, unit)} is right (the package computes "
                                   f"{_quantity(expected, unit)})."))
    ratio = value / expected if expected else float("inf")
    scale = ""
    for factor, words in ((1e3, "1,000"), (1e6, "a million"), (1e9, "a billion"), (1e12, "10^12"), (100, "100")):
        for r in (factor, 1 / factor):
            if math.isclose(ratio, r, rel_tol=rel_tol):
                scale = f" It is off by a factor of {words}: check your units."
    direction = "too high" if value > expected else "too low"
    allowed = f"±{abs_tol:g}" if abs_tol else f"±{_percent_text(rel_tol)}"
    return _wrong(exercise, f"{_quantity(value, unit)} is {direction} (allowed {allowed}).{scale}"
                            + (f" Hint: {hint}" if hint else ""))


def check_choice(exercise: str, answer: Any, expected: str, choices: Sequence[str], *, hint: str = "") -> CheckResult:
    """Accept one of ``choices`` (case and surrounding spaces ignored)."""
    if is_unanswered(answer):
        return _not_attempted(exercise, "one of " + ", ".join(repr(c) for c in choices))
    if not isinstance(answer, str):
        return _wrong(exercise, f"expected one of {', '.join(repr(c) for c in choices)} as text, "
                                f"got {_a(type(answer).__name__)}.")
    got = answer.strip().lower()
    if got not in [c.lower() for c in choices]:
        return _wrong(exercise, f"{answer!r} is not one of {', '.join(repr(c) for c in choices)}.")
    if got == expected.lower():
        return _finish(CheckResult(exercise, CORRECT, f"{expected!r} is right."))
    return _wrong(exercise, f"{answer!r} is not right." + (f" Hint: {hint}" if hint else ""))


def check_function(exercise: str, fn: Any, cases: Sequence[tuple[tuple, float]], *, rel_tol: float = 1e-6,
                   hint: str = "") -> CheckResult:
    """Call the learner's function on each case's arguments and compare with the expected value."""
    if is_unanswered(fn):
        return _not_attempted(exercise, "a function")
    if not callable(fn):
        return _wrong(exercise, f"expected a function, got {_a(type(fn).__name__)}.")
    for args, expected in cases:
        shown = ", ".join(f"{num(a, 4)}" if isinstance(a, (int, float)) else repr(a) for a in args)
        try:
            got = fn(*args)
        except Exception as exc:  # the learner's code failed: report it, never crash
            return _wrong(exercise, f"calling it with ({shown}) raised {type(exc).__name__}: {exc}")
        if is_unanswered(got):
            return _not_attempted(exercise, "a function body that returns a number")
        value, problem = as_number(got)
        if problem:
            return _wrong(exercise, f"with ({shown}) it returned something unusable: {problem}")
        if not math.isclose(value, expected, rel_tol=rel_tol, abs_tol=1e-300):
            return _wrong(exercise, f"with ({shown}) it returned {num(value, 6)}; expected {num(expected, 6)}."
                                    + (f" Hint: {hint}" if hint else ""))
    return _finish(CheckResult(exercise, CORRECT, f"right on all {len(cases)} test cases."))


def _quantity(value: float, unit: str, digits: int = 4) -> str:
    """``value`` in ``unit`` as a learner reads it: seconds in the unit a person would say (µs, ms),
    anything else as a number with its unit."""
    if unit == "s":
        return duration(value, digits)
    return f"{num(value, digits)}{' ' + unit if unit else ''}"


def _a(type_name: str) -> str:
    return ("an " if type_name[:1].lower() in "aeiou" else "a ") + type_name


CheckFn = Callable[[Any], CheckResult]


def _percent_text(fraction: float) -> str:
    """A tolerance as a percentage with the digits it needs: 0.05 → '5%', 0.001 → '0.1%'."""
    pct = 100 * float(fraction)
    if pct >= 1 or pct == 0:
        return f"{pct:.0f}%"
    return f"{pct:.2g}%"
