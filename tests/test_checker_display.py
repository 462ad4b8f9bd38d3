"""How a checker's verdict reads in JupyterLab (issue 26, item 7): prose that wraps between words,
times in the unit a learner says, and a diagnosis that matches the mistake made."""

from roofline_lessons.course.checkers import CheckResult, Mistake, check_number
from roofline_lessons.course.checks.lesson04 import llama8b_batch64_throughput


def test_a_verdict_is_shown_as_wrapping_prose_with_code_spans():
    html = CheckResult("9.1", "incorrect", "replace `...` with <a number>")._repr_html_()
    assert "white-space: normal" in html and "<code>...</code>" in html and "&lt;a number&gt;" in html
    assert "✗ Exercise 9.1:" in html


def test_seconds_are_shown_in_the_unit_a_person_would_say():
    assert "42.62 µs is right" in str(check_number("x", 0.00004262, 0.0000426, unit="s"))
    assert "0.0000" not in str(check_number("x", 0.00003, 0.0000426, unit="s"))
    named = check_number("x", 3.1e-5, 4.26e-5, unit="s", mistakes=[Mistake("forget the KV cache", 3.1e-5)])
    assert "31 µs is what you get when you forget the KV cache" in str(named)


def test_exercise_4_2_names_the_weights_only_mistakes_by_what_was_counted():
    bw = 3.35e12
    for total_bytes, named in ((15.0e9, "forget the KV caches (weights alone)"),
                               (16.06e9, "forget the KV caches and read the whole embedding table")):
        assert named in str(llama8b_batch64_throughput(64 / (total_bytes / bw)))
