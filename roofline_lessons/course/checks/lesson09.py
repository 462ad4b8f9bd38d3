"""Checkers for the lesson-9 exercises (reality check: a real decode loop against the roofline).
Every expected value is computed from the reality check you pass in — your own run, or the example
that ships with the course — so the checks hold for any machine. Bounds are priced in the number
formats the check records (``check.dtypes``; float32 for a check that records none: the numpy
decoder's)."""

from __future__ import annotations

from functools import partial

from ...core.costs import model_cost
from ...core.dtypes import bytes_per_element
from ...measure.reality import FP32, RealityCheck, mbu, mfu
from ...measure.reality import example as example_check
from ..checkers import (
    CheckResult,
    Mistake,
    _not_attempted,
    _wrong,
    check_number,
    distinct_mistakes,
    is_unanswered,
)

_REL_TOL = 0.02  #: the tolerance (relative) of the MBU checker (9.3)
#: the bound checkers' tolerance (9.1, 9.4, and 9.2, whose answer is the bound over a stored time; relative):
#: their expected value is the same cost model's, with no measurement noise, and the unfused answer differs
#: from it by a fraction of a percent
_BOUND_REL_TOL = 1e-3
_SMALLEST_REL_TOL = 1e-6  #: never tighter than this (float rounding)


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


def run_dtypes(check: RealityCheck) -> dict:
    """The ``model_cost`` number formats (and flags) the run was priced in: the check's own
    ``dtypes`` where it records them (a GPU run: BF16), else float32 (the numpy decoder's)."""
    return dict(getattr(check, "dtypes", None) or FP32)


def _bf16(dtypes: dict) -> dict:
    """``dtypes`` with every number format BF16 (other flags, e.g. ``flash_attention``, kept)."""
    return {k: ("bf16" if k.endswith("_dtype") else v) for k, v in dtypes.items()}


def _fp32(dtypes: dict) -> dict:
    """``dtypes`` with every number format float32 (other flags kept)."""
    return {k: ("fp32" if k.endswith("_dtype") else v) for k, v in dtypes.items()}


def _formats(dtypes: dict) -> str:
    """The distinct number formats named in ``dtypes``, e.g. ``'fp32'`` or ``'bf16'``."""
    return "/".join(sorted({str(v) for k, v in dtypes.items() if k.endswith("_dtype") and v}))


def _cost(check: RealityCheck, dtypes: dict):
    """The cost model of the batch-1 decode step of ``check``'s batch sweep, priced in ``dtypes``."""
    return model_cost(check.model_config(), phase="decode", batch=1, context_tokens=_first(check).tokens, **dtypes)


def _bound_s(check: RealityCheck, dtypes: dict) -> float:
    """max(FLOPs ÷ peak, compulsory bytes ÷ bandwidth) of the batch-1 decode step priced in ``dtypes``
    (seconds): the lower bound on the measured roofs."""
    cost = _cost(check, dtypes)
    return max(float(cost.flops) / check.peak_flops_per_s, float(cost.compulsory_bytes) / check.bandwidth_bytes_per_s)


#: the named mistakes that differ from the right answer (a mistake giving it is never named)
_distinct = partial(distinct_mistakes, rel_tol=_REL_TOL)


def _unfused_bound_s(check: RealityCheck, dtypes: dict) -> float:
    """The batch-1 step priced with the unfused bytes (``cost.bytes``, the estimate's convention):
    the classic wrong count for a bound (seconds)."""
    cost = _cost(check, dtypes)
    return max(float(cost.flops) / check.peak_flops_per_s, float(cost.bytes) / check.bandwidth_bytes_per_s)


def _bound_tol(check: RealityCheck, dtypes: dict) -> float:
    """The relative tolerance of a bound checker priced in ``dtypes``: ``_BOUND_REL_TOL``, tighter
    where the unfused answer lies within four times that of the right one (a machine whose larger
    model makes the activations a smaller share), so that the unfused answer is always rejected by
    name unless it is the right number to float rounding."""
    gap = abs(_unfused_bound_s(check, dtypes) / _bound_s(check, dtypes) - 1)
    return max(_SMALLEST_REL_TOL, min(_BOUND_REL_TOL, gap / 4))


def _check_bound(exercise: str, answer, expected: float, rel_tol: float, unit: str, mistakes, hint: str):
    """``check_number`` at a tight relative tolerance (shown to the learner with the digits it needs)."""
    return check_number(exercise, answer, expected, rel_tol=rel_tol, unit=unit, mistakes=mistakes, hint=hint)


_UNFUSED = ("count the unfused bytes (cost.bytes: every operator's activations through memory) — that is the "
            "estimate's convention; the bound counts cost.compulsory_bytes")


def _bound_mistakes(check: RealityCheck) -> tuple[Mistake, ...]:
    dtypes = run_dtypes(check)
    cost = _cost(check, dtypes)
    all_weight_bytes = float(check.model_config().parameter_count()) * bytes_per_element(dtypes["weights_dtype"])
    other = _bf16(dtypes) if _formats(dtypes) == "fp32" else _fp32(dtypes)
    return _distinct(_bound_s(check, dtypes), (
        Mistake("give milliseconds where seconds were asked", 1e3 * _bound_s(check, dtypes)),
        Mistake("take the compute time (FLOPs ÷ peak) instead of the larger of compute and memory",
                float(cost.flops) / check.peak_flops_per_s),
        Mistake("divide all the weight bytes by the bandwidth (a decode step reads one row of the embedding "
                "table per token, not the whole table)", all_weight_bytes / check.bandwidth_bytes_per_s),
        Mistake(f"price the model in {_formats(other)} (this run's weights, KV cache and activations are "
                f"{_formats(dtypes)})", _bound_s(check, other)),
        Mistake(_UNFUSED, _unfused_bound_s(check, dtypes)),
    ), rel_tol=_bound_tol(check, dtypes))


def batch1_bound_s(answer, check=None) -> CheckResult:
    """9.1 — the roofline bound (seconds) of the batch-1 decode step, from the measured roofs and the
    cost model of the model that ran, in the number formats it ran in."""
    problem = _need_check("9.1", check, answer)
    if problem is not None:  # (a CheckResult is falsy unless it passed)
        return problem
    dtypes = run_dtypes(check)
    return _check_bound("9.1", answer, _bound_s(check, dtypes), _bound_tol(check, dtypes), "s",
                        _bound_mistakes(check),
                        f"cost = model_cost(check.model_config(), phase='decode', batch=1, context_tokens=…, "
                        f"**dtypes) with this run's dtypes ({_formats(dtypes)}); max(cost.flops ÷ "
                        f"check.peak_flops_per_s, cost.compulsory_bytes ÷ check.bandwidth_bytes_per_s) — the "
                        f"compulsory bytes, not cost.bytes.")


def _achieved_tol(check: RealityCheck) -> float:
    """9.2's relative tolerance: the achieved fraction is the bound over a stored time, so a slip in
    it is a slip in the bound — the bound checkers' tolerance (tight enough to reject the estimate)."""
    return _bound_tol(check, run_dtypes(check))


def _achieved_mistakes(check: RealityCheck) -> tuple[Mistake, ...]:
    s = _first(check)
    return _distinct(s.achieved, (
        Mistake("invert it (measured ÷ bound is how many times slower, not the fraction of the roof)",
                s.measured_s / s.bound_s),
        Mistake("mix milliseconds and seconds (bound in s over measured in ms)", s.bound_s / (1e3 * s.measured_s)),
        Mistake("take the estimate (step.estimate_s: every operator's activations through memory) over the "
                "measured time instead of the bound — the achieved fraction is the lower bound (compulsory bytes) "
                "÷ measured",
                s.estimate_s / s.measured_s),
    ), rel_tol=_achieved_tol(check))


def batch1_achieved(answer, check=None) -> CheckResult:
    """9.2 — the achieved fraction of the batch-1 decode step: bound ÷ measured (1 is on the roof)."""
    problem = _need_check("9.2", check, answer)
    if problem is not None:
        return problem
    return check_number("9.2", answer, _first(check).achieved, rel_tol=_achieved_tol(check),
                        mistakes=_achieved_mistakes(check),
                        hint="bound_s (9.1: compulsory bytes, not step.estimate_s) ÷ step.measured_s of the batch-1 "
                             "step: below 1 unless the step beat its bound.")


def _largest_mbu(check: RealityCheck) -> float:
    s = _last(check)
    return mbu(_must_move(s), s.measured_s, check.bandwidth_bytes_per_s)


def _must_move(s) -> float:
    """The bytes a step must move: its compulsory bytes (its whole count for a hand-made sample)."""
    return s.bytes if s.compulsory_bytes is None else s.compulsory_bytes


def _mbu_mistakes(check: RealityCheck) -> tuple[Mistake, ...]:
    s = _last(check)
    step_mfu = mfu(s.flops, s.measured_s, check.peak_flops_per_s)
    if s.binds == "compute":  # MFU is then bound ÷ measured: the achieved fraction itself
        wrong_roof = Mistake("give the achieved fraction (bound ÷ measured) — equal to MFU when compute binds — "
                             "not MBU", step_mfu)
    else:  # memory binds: MBU is the achieved fraction, MFU is a different number
        wrong_roof = Mistake("compute MFU (FLOPs over the peak) instead of MBU", step_mfu)
    return _distinct(_largest_mbu(check), (
        wrong_roof,
        Mistake("invert it (time × bandwidth ÷ bytes)", 1 / _largest_mbu(check)),
        Mistake("mix milliseconds and seconds (a step time in ms)",
                mbu(_must_move(s), 1e3 * s.measured_s, check.bandwidth_bytes_per_s)),
        Mistake("count the unfused bytes (step.bytes, every operator's activations through memory) — MBU's "
                "numerator is the bytes the step must move, step.compulsory_bytes",
                mbu(s.bytes, s.measured_s, check.bandwidth_bytes_per_s)),
    ))


def _mbu_hint(check: RealityCheck) -> str:
    s = _last(check)
    where = ("memory binds this step, so MBU equals its achieved fraction (bound ÷ measured)"
             if s.binds == "memory" else
             "compute binds this step, so its achieved fraction (bound ÷ measured) is its MFU, and MBU is "
             "smaller")
    return (f"step.compulsory_bytes ÷ step.measured_s ÷ check.bandwidth_bytes_per_s (MBU's numerator is the "
            f"bytes the step must move, by the model's count). At batch {s.batch} {where}.")


def largest_batch_mbu(answer, check=None) -> CheckResult:
    """9.3 — MBU of the largest-batch decode step: bytes it must move ÷ measured time ÷ measured bandwidth."""
    problem = _need_check("9.3", check, answer)
    if problem is not None:
        return problem
    return check_number("9.3", answer, _largest_mbu(check), rel_tol=_REL_TOL, mistakes=_mbu_mistakes(check),
                        hint=_mbu_hint(check))


def _bf16_tokens_per_s(check: RealityCheck) -> float:
    return 1 / _bound_s(check, _bf16(run_dtypes(check)))


def _bf16_mistakes(check: RealityCheck) -> tuple[Mistake, ...]:
    dtypes = run_dtypes(check)
    bf16 = _bf16(dtypes)
    return _distinct(_bf16_tokens_per_s(check), (
        Mistake(f"keep this run's {_formats(dtypes)} byte count", 1 / _bound_s(check, dtypes)),
        Mistake("give seconds per token, not tokens per second (take 1 ÷ the bound)", _bound_s(check, bf16)),
        Mistake("double the measured batch-1 rate (the question asks for the bound, 1 ÷ max(compute, memory) "
                "with BF16 bytes, not a measured rate)", 2 * _first(check).tokens_per_s),
        Mistake(_UNFUSED, 1 / _unfused_bound_s(check, bf16)),
    ), rel_tol=_bound_tol(check, bf16))


def bf16_tokens_per_s(answer, check=None) -> CheckResult:
    """9.4 — the batch-1 decode bound in tokens/s if weights, KV cache and activations were BF16
    (same measured roofs: this CPU's matmul is not faster in BF16)."""
    problem = _need_check("9.4", check, answer)
    if problem is not None:
        return problem
    return _check_bound("9.4", answer, _bf16_tokens_per_s(check), _bound_tol(check, _bf16(run_dtypes(check))),
                        "tokens/s", _bf16_mistakes(check),
                        "cost = model_cost(...) with every *_dtype 'bf16' (model_cost's defaults); 1 ÷ "
                        "max(cost.flops ÷ check.peak_flops_per_s, cost.compulsory_bytes ÷ "
                        "check.bandwidth_bytes_per_s) — the compulsory bytes, not cost.bytes.")


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
