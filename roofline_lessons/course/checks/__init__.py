"""Per-lesson exercise checkers: ``from roofline_lessons.course.checks import lesson01 as check``.

Each lesson module lists its exercises in ``EXERCISES`` (id → checker) so the tests can prove that
every stub is rejected and every solution accepted. Expected values come from the package at run
time, so a catalog update never leaves an answer stale.
"""
