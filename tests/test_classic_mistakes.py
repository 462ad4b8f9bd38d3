"""Every numeric exercise lists its classic wrong answers, and each is rejected with a hint that
names the mistake; every exercise without one says why. (Issue: checker 3.2 once accepted the
answer that forgets the KV cache.)"""

import importlib

import pytest

from roofline_lessons.course.checkers import Mistake

LESSONS = [f"roofline_lessons.course.checks.lesson{n:02d}" for n in range(1, 15)]


def _modules():
    return [importlib.import_module(name) for name in LESSONS]


@pytest.mark.parametrize("name", LESSONS)
def test_every_exercise_has_mistakes_or_a_reason(name):
    mod = importlib.import_module(name)
    mistakes = getattr(mod, "MISTAKES", {})
    reasons = getattr(mod, "NO_NUMERIC_MISTAKES", {})
    assert set(mistakes) | set(reasons) == set(mod.EXERCISES), name
    assert not set(mistakes) & set(reasons)
    for why in reasons.values():
        assert len(why) > 20


def _cases():
    for mod in _modules():
        for ex, make in getattr(mod, "MISTAKES", {}).items():
            for m in make():
                yield pytest.param(mod, ex, m, id=f"{ex}-{m.label[:30]}")


@pytest.mark.parametrize("mod,ex,mistake", list(_cases()))
def test_classic_mistake_is_rejected_by_name(mod, ex, mistake):
    assert isinstance(mistake, Mistake) and mistake.label
    extra = getattr(mod, "MISTAKE_ARGS", {}).get(ex, lambda: ())()
    result = mod.EXERCISES[ex](mistake.value, *extra)
    assert not result.passed, f"{ex} accepts the classic mistake '{mistake.label}' ({mistake.value})"
    assert mistake.label in result.message


def test_a_near_miss_of_a_mistake_is_named_too():
    from roofline_lessons.course.checks import lesson03

    forgot_kv = lesson03.MISTAKES["3.2"]()[0]
    result = lesson03.llama8b_tpot_ms(forgot_kv.value * 1.005)
    assert not result.passed and "KV cache" in result.message


def test_whole_number_answers_must_be_whole():
    from roofline_lessons.course.checks import lesson02, lesson04

    assert not lesson04.weight_lens_critical_batch(295.3).passed
    assert "whole number" in lesson04.weight_lens_critical_batch(295.3).message
    assert lesson04.weight_lens_critical_batch(296).passed
    assert lesson04.weight_lens_critical_batch(296.0).passed
    assert not lesson02.llama70b_fp8_batch_on_h200(30.5).passed


def test_lesson1_rounded_figure_passes():
    """Lesson 1 quotes 'three tenths of one percent'; its checker must accept 0.3."""
    from roofline_lessons.course.checks import lesson01

    assert lesson01.decode_percent_of_peak(0.3).passed
    assert lesson01.decode_percent_of_peak(0.34).passed
