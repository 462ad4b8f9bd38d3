"""Checkers for the lesson-9 exercises (reality check: a real decode loop against the roofline).
Every expected value is computed from the reality check you pass in — your own run, or the example
that ships with the course — so the checks hold for any machine."""

from __future__ import annotations

from ...core.costs import model_cost
from ...measure.reality import FP32, RealityCheck, mbu, mfu
from ...measure.reality import example as example_check
from ..checkers import CheckResult, Mistake, _not_attempted, _wrong, check_number, is_unanswered


def _need_check(exercise: str, check, answer) -> CheckResult | None:
    if is_unanswered(answer):
        return _not_attempted(exercise, "a number")
    if not isinstance(check, RealityCheck):
        return _wrong(exercise, f"pass the reality check you used as the second argument (got "
                                f"{type(check).__name__}).")
    if not check.decode_by_batch:
        return _wrong(exercise, "the reality check you passed has no decode steps by batch.")
    return None


def _first(check: RealityCheck):
    """The batch-1 decode step of the batch sweep."""
    return min(check.decode_by_batch, key=lambda s: s.batch)


def _last(check: RealityCheck):
    """The largest-batch decode step of the batch sweep."""
    return max(check.decode_by_batch, key=lambda s: s.batch)


def _bound_s(check: RealityCheck, **dtypes) -> float:
    s = _first(check)
    cost = model_cost(check.model_config(), phase="decode", batch=1, context_tokens=s.tokens, **dtypes)
    return max(float(cost.flops) / check.peak_flops_per_s, float(cost.bytes) / check.bandwidth_bytes_per_s)


def _bound_mistakes(check: RealityCheck) -> tuple[Mistake, ...]:
    s = _first(check)
    cost = model_cost(check.model_config(), phase="decode", batch=1, context_tokens=s.tokens, **FP32)
    return (
        Mistake("give milliseconds where seconds were asked", 1e3 * _bound_s(check, **FP32)),
        Mistake("take the compute time (FLOPs ÷ peak) instead of the larger of compute and memory",
                float(cost.flops) / check.peak_flops_per_s),
        Mistake("price the model in BF16 (the numpy decoder runs float32: 4 bytes a weight)", _bound_s(check)),
    )


def batch1_bound_s(answer, check=None) -> CheckResult:
    """9.1 — the roofline bound (seconds) of the batch-1 decode step, from the measured roofs and the
    cost model of the model that ran (float32)."""
    problem = _need_check("9.1", check, answer)
    if problem is not None:  # (a CheckResult is falsy unless it passed)
        return problem
    return check_number("9.1", answer, _bound_s(check, **FP32), rel_tol=0.02, unit="s",
                        mistakes=_bound_mistakes(check),
                        hint="model_cost(check.model_config(), phase='decode', batch=1, context_tokens=…, **FP32); "
                             "max(FLOPs ÷ check.peak_flops_per_s, bytes ÷ check.bandwidth_bytes_per_s).")


def _achieved_mistakes(check: RealityCheck) -> tuple[Mistake, ...]:
    s = _first(check)
    return (
        Mistake("invert it (measured ÷ bound is how many times slower, not the fraction of the roof)",
                s.measured_s / s.bound_s),
        Mistake("mix milliseconds and seconds (bound in s over measured in ms)", s.bound_s / (1e3 * s.measured_s)),
    )


def batch1_achieved(answer, check=None) -> CheckResult:
    """9.2 — the achieved fraction of the batch-1 decode step: bound ÷ measured (1 is on the roof)."""
    problem = _need_check("9.2", check, answer)
    if problem is not None:
        return problem
    return check_number("9.2", answer, _first(check).achieved, rel_tol=0.02, mistakes=_achieved_mistakes(check),
                        hint="bound_s ÷ measured_s of the batch-1 step: a fraction between 0 and 1.")


def _mbu_mistakes(check: RealityCheck) -> tuple[Mistake, ...]:
    s = _last(check)
    return (
        Mistake("compute MFU (FLOPs over the peak) instead of MBU",
                mfu(s.flops, s.measured_s, check.peak_flops_per_s)),
        Mistake("invert it (time × bandwidth ÷ bytes)", 1 / mbu(s.bytes, s.measured_s, check.bandwidth_bytes_per_s)),
        Mistake("mix milliseconds and seconds (a step time in ms)",
                mbu(s.bytes, 1e3 * s.measured_s, check.bandwidth_bytes_per_s)),
    )


def largest_batch_mbu(answer, check=None) -> CheckResult:
    """9.3 — MBU of the largest-batch decode step: bytes it must move ÷ measured time ÷ measured bandwidth."""
    problem = _need_check("9.3", check, answer)
    if problem is not None:
        return problem
    s = _last(check)
    return check_number("9.3", answer, mbu(s.bytes, s.measured_s, check.bandwidth_bytes_per_s), rel_tol=0.02,
                        mistakes=_mbu_mistakes(check),
                        hint="step.bytes ÷ step.measured_s ÷ check.bandwidth_bytes_per_s (MBU's numerator is the "
                             "model's byte count).")


def _bf16_tokens_per_s(check: RealityCheck) -> float:
    return 1 / _bound_s(check)  # model_cost's default dtypes: BF16 weights, KV and activations


def _bf16_mistakes(check: RealityCheck) -> tuple[Mistake, ...]:
    return (
        Mistake("keep the float32 byte count", 1 / _bound_s(check, **FP32)),
        Mistake("double the measured rate (overhead, not bytes, set most of that)", 2 * _first(check).tokens_per_s),
    )


def bf16_tokens_per_s(answer, check=None) -> CheckResult:
    """9.4 — the batch-1 decode bound in tokens/s if weights, KV cache and activations were BF16
    (same measured roofs: this CPU's matmul is not faster in BF16)."""
    problem = _need_check("9.4", check, answer)
    if problem is not None:
        return problem
    return check_number("9.4", answer, _bf16_tokens_per_s(check), rel_tol=0.02, unit="tokens/s",
                        mistakes=_bf16_mistakes(check),
                        hint="model_cost(...) with its default (BF16) dtypes; 1 ÷ max(compute time, memory time).")


EXERCISES = {
    "9.1": batch1_bound_s,
    "9.2": batch1_achieved,
    "9.3": largest_batch_mbu,
    "9.4": bf16_tokens_per_s,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name), built from
#: the course's example reality check
MISTAKES = {
    "9.1": lambda: _bound_mistakes(example_check()),
    "9.2": lambda: _achieved_mistakes(example_check()),
    "9.3": lambda: _mbu_mistakes(example_check()),
    "9.4": lambda: _bf16_mistakes(example_check()),
}

#: the extra arguments a checker needs when the tests feed it a classic mistake
MISTAKE_ARGS = {ex: lambda: (example_check(),) for ex in EXERCISES}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES: dict[str, str] = {}
