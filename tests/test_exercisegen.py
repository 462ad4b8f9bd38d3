import json
from pathlib import Path

import pytest

from roofline_lessons.course.exercisegen import (ExerciseGenerationError, exercise_source, exercise_texts, generate,
                                                 stale_files,
                                                 stub_for_region)

SOLUTION = '''# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Exercises

# %% [markdown] tags=["solution"]
# Only in the solutions.

# %%
# BEGIN SOLUTION
x = 6 * 7
a, b = 1, 2
# END SOLUTION
print(x)

# %%
# BEGIN SOLUTION
def f(n, *, scale=2):
    """Scale n."""
    return n * scale
# END SOLUTION
print(f)
'''


def test_stubs_keep_names_and_signatures():
    assert stub_for_region("x = 1\ny: int = 2\nz += 3\n") == [
        "x = ...  # your answer here", "y = ...  # your answer here", "z = ...  # your answer here"]
    lines = stub_for_region("def g(a, b=3):\n    return a + b\n")
    assert lines[0] == "def g(a, b=3):" and lines[1] == "    return ...  # your code here"


def test_regions_must_be_balanced():
    with pytest.raises(ExerciseGenerationError):
        exercise_source("# BEGIN SOLUTION\nx = 1\n")
    with pytest.raises(ExerciseGenerationError):
        exercise_source("x = 1\n# END SOLUTION\n")


def _setup(tmp_path: Path):
    sol, ex = tmp_path / "solutions", tmp_path / "exercises"
    (tmp_path / "py" / "solutions").mkdir(parents=True)
    (tmp_path / "py" / "solutions" / "01_demo.py").write_text(SOLUTION)
    return sol, ex


def test_generate_writes_runnable_stubs_and_drops_solution_cells(tmp_path):
    sol, ex = _setup(tmp_path)
    written = generate(sol, ex)
    assert {p.name for p in written} == {"01_demo.ipynb"}  # a notebook only: no script twin
    assert not (tmp_path / "py" / "exercises").exists()
    text = exercise_texts(tmp_path / "py" / "solutions" / "01_demo.py")[1]
    assert "6 * 7" not in text and "Only in the solutions" not in text
    assert "x = ...  # your answer here" in text and "def f(n, *, scale=2):" in text
    compile(text, "01_demo.py", "exec")  # the stub is valid Python
    nb = json.loads((ex / "01_demo.ipynb").read_text())
    assert all(c.get("outputs", []) == [] for c in nb["cells"])
    assert stale_files(sol, ex) == []
    assert generate(sol, ex) == []  # nothing to do the second time


def test_edited_exercise_is_never_overwritten_silently(tmp_path):
    sol, ex = _setup(tmp_path)
    generate(sol, ex)
    mine = ex / "01_demo.ipynb"
    mine.write_text(mine.read_text().replace("x = ...", "x = 42"))
    (tmp_path / "py" / "solutions" / "01_demo.py").write_text(SOLUTION.replace("6 * 7", "7 * 6"))
    with pytest.raises(ExerciseGenerationError, match="edited"):
        generate(sol, ex)
    assert "x = 42" in mine.read_text()  # untouched
    generate(sol, ex, force=True)
    backups = list(mine.parent.glob("01_demo.ipynb.bak-*"))
    assert len(backups) == 1 and "x = 42" in backups[0].read_text()
    assert "x = 42" not in mine.read_text()
    assert not list(ex.glob(".*.tmp")) and not list(mine.parent.glob(".*.tmp"))  # atomic writes leave no temporaries
