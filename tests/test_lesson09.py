"""Lesson 9 (reality check): its checkers accept the solution's values computed from a reality check
and reject stubs and each classic mistake by name; the catalog's new measured entries load with a
source, a date and their conditions."""

import pytest

from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.hardware import get_part
from roofline_lessons.course.checks import lesson09
from roofline_lessons.measure import reality
from roofline_lessons.measure.reality import FP32
from roofline_lessons.topics.datasheets import best_measurement


@pytest.fixture(scope="module")
def check():
    return lesson09.example_check()


def _solution(check):
    step = min(check.decode_by_batch, key=lambda s: s.batch)
    big = max(check.decode_by_batch, key=lambda s: s.batch)
    cost = model_cost(check.model_config(), phase="decode", batch=1, context_tokens=step.tokens, **FP32)
    bound = max(float(cost.flops) / check.peak_flops_per_s, float(cost.bytes) / check.bandwidth_bytes_per_s)
    bf16 = model_cost(check.model_config(), phase="decode", batch=1, context_tokens=step.tokens)
    return {"9.1": bound, "9.2": bound / step.measured_s,
            "9.3": big.bytes / big.measured_s / check.bandwidth_bytes_per_s,
            "9.4": 1 / max(float(bf16.flops) / check.peak_flops_per_s,
                           float(bf16.bytes) / check.bandwidth_bytes_per_s)}


def test_every_exercise_has_mistakes_or_a_reason():
    assert set(lesson09.MISTAKES) | set(lesson09.NO_NUMERIC_MISTAKES) == set(lesson09.EXERCISES)


@pytest.mark.parametrize("ex", sorted(lesson09.EXERCISES))
def test_solution_accepted_stub_rejected(ex, check):
    assert lesson09.EXERCISES[ex](_solution(check)[ex], check).passed
    stub = lesson09.EXERCISES[ex](..., check)
    assert not stub.passed and stub.status == "not attempted"


@pytest.mark.parametrize("ex", sorted(lesson09.EXERCISES))
def test_the_check_must_be_passed_in(ex, check):
    result = lesson09.EXERCISES[ex](_solution(check)[ex])
    assert not result.passed and "reality check" in result.message


@pytest.mark.parametrize("ex,mistake", [(ex, m) for ex, make in lesson09.MISTAKES.items() for m in make()],
                         ids=lambda v: v if isinstance(v, str) else v.label[:30])
def test_classic_mistakes_rejected_by_name(ex, mistake):
    result = lesson09.EXERCISES[ex](mistake.value, *lesson09.MISTAKE_ARGS[ex]())
    assert not result.passed and mistake.label in result.message


def test_mbu_equals_achieved_when_memory_binds(check):
    for s in check.samples:
        if s.binds == "memory":
            assert reality.mbu(s.bytes, s.measured_s, check.bandwidth_bytes_per_s) == pytest.approx(s.achieved)
        else:
            assert reality.mbu(s.bytes, s.measured_s, check.bandwidth_bytes_per_s) < s.achieved


def test_checker_follows_the_check_it_is_given(check):
    """The expected value comes from the check passed in, not from a fixed file."""
    from dataclasses import replace

    step = check.decode_by_batch[0]
    slower = replace(step, measured_s=2 * step.measured_s)
    other = reality.RealityCheck.from_dict({**check.to_dict(), "decode_by_batch": []})
    other.decode_by_batch = [slower] + check.decode_by_batch[1:]
    assert lesson09.batch1_achieved(step.achieved / 2, other).passed
    assert not lesson09.batch1_achieved(step.achieved, other).passed


@pytest.mark.parametrize("part,floor,graphs", [("l4", 0.81, 1.028), ("h100-sxm", 0.27, 1.259)])
def test_batch1_overhead_study_is_in_the_catalog(part, floor, graphs):
    f = best_measurement(part, "decode_fraction_of_memory_floor")
    g = best_measurement(part, "cuda_graphs_decode_speedup")
    assert f.value == pytest.approx(floor) and g.value == pytest.approx(graphs)
    for m in (f, g):
        assert "2605.30571" in m.source and m.date == "2026-05-28"
        assert "Qwen-2.5-7B" in m.conditions and "2048" in m.conditions and "batch-1" in m.conditions


def test_date_is_optional_for_older_entries():
    gpt = best_measurement("a100-80gb", "decode_model_bytes_per_s")
    assert gpt.source and gpt.date == ""
    assert all(isinstance(m.date, str) for p in ("h100-sxm", "l4") for m in get_part(p).measured)
