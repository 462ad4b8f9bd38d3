"""Checkers for the lesson-8 exercises (measure your own machine). Measurement-based answers are
checked against the measurement you pass in, so they work with yours as well as the example."""

from __future__ import annotations

from dataclasses import replace

from ...core.costs import model_cost
from ...measure.probes import Measurement
from ..checkers import CheckResult, Mistake, _not_attempted, _wrong, check_choice, check_number, is_unanswered

GAP_CHOICES = ("the roofline is wrong", "a cache is feeding it", "the measured roof is too low", "it is compute-bound")

#: 8.5's right answers: the bytes came faster than DRAM's rate because a cache served them, or the DRAM
#: roof drawn is below what the memory delivers to that kernel's traffic (numpy's triad, counted STREAM's
#: way without the write-allocate read, and a mix of reads and writes that a read-only stream commonly beats)
ABOVE_ROOF_RIGHT = ("a cache is feeding it", "the measured roof is too low")

#: 8.5's classic wrong answers (the red flags), each with why it is wrong
ABOVE_ROOF_WRONG = {
    "the roofline is wrong": "a roofline is only as right as the roofs and byte counts it is given. A point above "
                             "one says that a roof or a byte count under-counts what the machine did — bytes came "
                             "from a cache, or the roof was measured too low — not that the model fails.",
    "it is compute-bound": "a compute-bound kernel sits under the compute roof. Arithmetic that limits a kernel "
                           "cannot carry it above a bandwidth roof, which caps bytes per second, not FLOPs.",
}


def _need_measurement(exercise: str, measurement, answer=None) -> CheckResult | None:
    if is_unanswered(answer):
        return _not_attempted(exercise, "a number")
    if not isinstance(measurement, Measurement):
        return _wrong(exercise, f"pass the measurement you used as the second argument (got "
                                f"{type(measurement).__name__}).")
    return None


def _triad_mistakes() -> tuple[Mistake, ...]:
    return (
        Mistake("count the two arrays read and forget the one written", 2 * 10_000_000 * 8 / 1e6),
        Mistake("count 4-byte numbers (float64 is 8 bytes)", 3 * 10_000_000 * 4 / 1e6),
        Mistake("answer in MiB instead of MB", 3 * 10_000_000 * 8 / 2**20),
    )


def triad_megabytes(answer) -> CheckResult:
    """8.1 — by hand: bytes one STREAM triad a = b + s·c moves over 10,000,000 float64, in MB."""
    return check_number("8.1", answer, 3 * 10_000_000 * 8 / 1e6, rel_tol=0.01, unit="MB", mistakes=_triad_mistakes(),
                        hint="read b and c, write a: three arrays of 8-byte numbers.")


def _fastest_cache_bytes_per_s(measurement: Measurement) -> float:
    return max(r.bytes_per_s for r in measurement.roofs() if r.name != "DRAM")


def _ridge_mistakes(measurement: Measurement) -> tuple[Mistake, ...]:
    peak = measurement.peak_flops_per_s("float64")
    return (Mistake("divide by a cache level's bandwidth instead of DRAM's",
                    peak / _fastest_cache_bytes_per_s(measurement)),)


def measured_ridge(answer, measurement=None) -> CheckResult:
    """8.2 — the ridge of the measured roofline: float64 matmul rate ÷ DRAM triad bandwidth."""
    problem = _need_measurement("8.2", measurement, answer)
    if problem is not None:  # (a CheckResult is falsy unless it passed)
        return problem
    return check_number("8.2", answer, measurement.ridge_point_flop_per_byte("float64"), rel_tol=0.02,
                        mistakes=_ridge_mistakes(measurement),
                        unit="FLOP/byte", hint="peak_flops_per_s('float64') ÷ dram_bytes_per_s().")


def _gemv_mistakes() -> tuple[Mistake, ...]:
    n = 4096
    return (
        Mistake("count 4-byte numbers (float64 is 8 bytes)", 2 * n * n / (4 * (n * n + 2 * n))),
        Mistake("count a multiply-add as one FLOP", n * n / (8 * (n * n + 2 * n))),
    )


def gemv_intensity(answer) -> CheckResult:
    """8.3 — by hand: estimated intensity of a 4096×4096 float64 matrix–vector product."""
    n = 4096
    return check_number("8.3", answer, 2 * n * n / (8 * (n * n + 2 * n)), rel_tol=0.02, unit="FLOP/byte",
                        mistakes=_gemv_mistakes(),
                        hint="2·n² FLOPs; the matrix dominates the bytes: n² numbers of 8 bytes.")


def _decode_step_bytes() -> float:
    """The compulsory bytes of one step (what the upper bound on tokens/s divides by)."""
    return float(model_cost("llama-2-7b", phase="decode", context_tokens=256).compulsory_bytes)


def _cpu_decode_mistakes(measurement: Measurement) -> tuple[Mistake, ...]:
    step = _decode_step_bytes()
    return (
        Mistake("use a cache level's bandwidth (the weights do not fit in any cache)",
                _fastest_cache_bytes_per_s(measurement) / step),
        Mistake("count 4-byte (float32) weights", measurement.dram_bytes_per_s() / (2 * step)),
    )


def cpu_decode_tokens_per_s(answer, measurement=None) -> CheckResult:
    """8.4 — the bound on Llama-2-7B (BF16) batch-1 decode tokens/s at the measured DRAM roof (a bound for
    code that streams no faster than numpy's triad did: the roof is a lower bound on the memory)."""
    problem = _need_measurement("8.4", measurement, answer)
    if problem is not None:  # (a CheckResult is falsy unless it passed)
        return problem
    step_bytes = _decode_step_bytes()
    return check_number("8.4", answer, measurement.dram_bytes_per_s() / step_bytes, rel_tol=0.10, unit="tokens/s",
                        mistakes=_cpu_decode_mistakes(measurement),
                        hint="decode is memory-bound: DRAM bytes/s ÷ bytes per token (about the BF16 weights).")


def above_the_roof(answer) -> CheckResult:
    """8.5 — a kernel plots above the DRAM roof. Why? Two answers are right (:data:`ABOVE_ROOF_RIGHT`);
    each red flag (:data:`ABOVE_ROOF_WRONG`) is rejected with its reason."""
    got = answer.strip().lower() if isinstance(answer, str) else None
    expected = got if got in ABOVE_ROOF_RIGHT else ABOVE_ROOF_RIGHT[0]
    result = check_choice("8.5", answer, expected, GAP_CHOICES,
                          hint="the DRAM roof assumes every byte comes from DRAM, at the rate numpy's triad reached.")
    if result.passed:
        other = next(a for a in ABOVE_ROOF_RIGHT if a != got)
        return replace(result, message=f"{got!r} is right — and so is {other!r}: a cache serves bytes faster than "
                                       "DRAM, and the numpy triad's roof can sit below what DRAM delivers to another "
                                       "kernel (STREAM's count leaves out the write-allocate read, and a read-only "
                                       "stream commonly beats a mix of reads and writes). Grow the working set past "
                                       "the caches to tell them apart, and judge on the median run, not the best.")
    if got in ABOVE_ROOF_WRONG:
        return replace(result, message=f"{answer!r} is not right: {ABOVE_ROOF_WRONG[got]}")
    return result


EXERCISES = {
    "8.1": triad_megabytes,
    "8.2": measured_ridge,
    "8.3": gemv_intensity,
    "8.4": cpu_decode_tokens_per_s,
    "8.5": above_the_roof,
}


def _example():
    from ...measure.results import example

    return example()


#: classic wrong answers per numeric exercise (the tests prove each is rejected by name); the
#: measurement-based ones are built from the course's example measurement
MISTAKES = {
    "8.1": _triad_mistakes,
    "8.2": lambda: _ridge_mistakes(_example()),
    "8.3": _gemv_mistakes,
    "8.4": lambda: _cpu_decode_mistakes(_example()),
}

#: the extra arguments a checker needs when the tests feed it a classic mistake
MISTAKE_ARGS = {"8.2": lambda: (_example(),), "8.4": lambda: (_example(),)}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES = {
    "8.5": "a choice among four explanations, two of them right; each red flag in ABOVE_ROOF_WRONG is rejected "
           "with its reason",
}
