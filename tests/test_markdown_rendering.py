"""Markdown a learner reads renders as written (issue 26, items 1 and 3): no money dollar sign that
opens TeX math, no unclosed TeX span, no stray bullet from a continued line starting with "+ ".
The lessons' md(...) output is checked by md itself (it raises, so the notebook tests fail);
the markdown cells of every lesson, solution and exercise are checked here."""

from pathlib import Path

import jupytext
import pytest

from roofline_lessons.viz.display import markdown_problems, md

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "py").glob("*/[0-9]*.py"))


def test_the_checker_catches_each_problem_and_passes_clean_text():
    assert markdown_problems("costs $3.24 an hour")  # money
    assert markdown_problems("USD 2.50, or US$ 2.50")  # money
    assert markdown_problems("an unclosed $x span")
    assert markdown_problems("calls × latency\n+ bytes ÷ bandwidth")
    for clean in ("USD 3.24 per million", r"an escaped \$3.24", "the ridge $I^* = P/\\beta$ moves",
                  "a list:\n\n- one\n- two", "- one\n- two", "2 + 2 = 4"):
        assert markdown_problems(clean) == [], clean
    with pytest.raises(ValueError, match="money dollar sign"):
        md("a step costs $0.01")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_markdown_cell_renders_as_written(script):
    nb = jupytext.read(str(script))
    found = [(i, p) for i, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
             for p in markdown_problems(cell.source)]
    assert not found, found
