"""The notebook pipeline: pairs in sync and clean, exercises current, stubs rejected, solutions accepted."""

import importlib
import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_lessons.course.notebook_files import notebook_for, pair_problems, script_for, scripts_dir

ROOT = Path(__file__).resolve().parents[1]


def committed_text(path: Path) -> str | None:
    """The file as last committed (None outside git or when untracked).

    A learner's working copy legitimately differs: JupyterLab saves outputs, exercises get answered.
    The checks below fall back to the committed version for such files, so `make test` still passes
    for a learner who worked through the course, while a stale or output-laden commit still fails.
    """
    try:
        r = subprocess.run(["git", "show", f"HEAD:{path.relative_to(ROOT).as_posix()}"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None
DIRS = ("notebooks", "exercises", "solutions")
#: the folders whose notebooks are authored and paired with a script; exercises/ is generated from the
#: solutions and holds notebooks only
PAIRED = ("notebooks", "solutions")
SCRIPTS = sorted(p for d in PAIRED for p in scripts_dir(ROOT / d).glob("[0-9]*.py"))
SOLUTIONS = sorted(scripts_dir(ROOT / "solutions").glob("[0-9]*.py"))


def test_there_are_notebooks():
    assert (ROOT / "notebooks" / "01_the_concept.ipynb").exists()
    assert (ROOT / "py" / "notebooks" / "01_the_concept.py").exists()
    assert SOLUTIONS


@pytest.mark.parametrize("folder", DIRS)
def test_the_file_browser_shows_each_lesson_once(folder):
    """No .py twin next to the notebooks: a learner sees one file per lesson."""
    assert sorted((ROOT / folder).glob("*.py")) == []


@pytest.mark.parametrize("folder", PAIRED)
def test_jupytext_pairs_each_folder_with_its_mirror(folder):
    """The folder configs pair both ways: from the notebook and from its script."""
    from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file
    from jupytext.paired_paths import paired_paths

    nb = sorted((ROOT / folder).glob("[0-9]*.ipynb"))[0]
    script = script_for(nb)
    for path, fmt in ((nb, "ipynb"), (script, "py:percent")):
        config = load_jupytext_configuration_file(find_jupytext_configuration_file(str(path.parent)))
        pairs = {Path(p).resolve() for p, _ in paired_paths(str(path), fmt, config.default_formats(str(path)))}
        assert pairs == {nb.resolve(), script.resolve()}, path


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pair_in_sync_without_outputs(script, tmp_path):
    problems = pair_problems(script)
    if problems and all("holds outputs" in p for p in problems):
        # A learner ran the notebook and JupyterLab saved its outputs: judge what was committed.
        ipynb = notebook_for(script)
        committed = committed_text(ipynb)
        if committed is not None and committed != ipynb.read_text(encoding="utf-8"):
            copy = tmp_path / "py" / script.parent.name / script.name
            copy.parent.mkdir(parents=True)
            copy.write_text(committed_text(script) or script.read_text(encoding="utf-8"))
            (tmp_path / script.parent.name).mkdir()
            (tmp_path / script.parent.name / ipynb.name).write_text(committed)
            problems = pair_problems(copy)
    assert problems == []


def heading_comments(source: str) -> list[str]:
    """Lines of a code cell that are a markdown heading written as a comment (`# ## Title`): in a
    jupytext percent script that is a heading whose `# %% [markdown]` marker is missing."""
    return [ln for ln in source.splitlines() if re.match(r"#\s*#{1,6}\s+\S", ln)]


def test_heading_comments_are_recognised():
    assert heading_comments("# ## 9. Measured against the bound\nx = 1") == ["# ## 9. Measured against the bound"]
    assert heading_comments("## Explore\n# ### Try") == ["## Explore", "# ### Try"]
    assert heading_comments("#  #### deep") == ["#  #### deep"]
    # an ordinary comment, a comment after code, an f-string's markdown and a bare "#" are not headings
    assert heading_comments("# the ridge, 2 × 3\nx = 1  # ## not a line of its own\nmd('## shown')\n#\n# #") == []


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_prose_hiding_in_code_cells(script):
    """A missing `# %% [markdown]` marker turns prose into comments inside a code cell."""
    import jupytext

    for i, cell in enumerate(jupytext.read(script).cells):
        if cell.cell_type != "code":
            continue
        lines = [ln for ln in cell.source.splitlines() if ln.strip()]
        prose = [ln for ln in lines if ln.startswith("# ") and "SOLUTION" not in ln]
        assert not (len(prose) >= 4 and len(prose) > 0.5 * len(lines)), f"{script} cell {i} reads like prose"
        headings = heading_comments(cell.source)
        assert not headings, (f"{script} cell {i} holds a markdown heading as a comment (the learner never sees it; "
                              f"give it a `# %% [markdown]` cell): {headings}")


def test_generated_exercises_are_notebooks_only():
    """A learner works in the exercise notebook; nothing pairs it with a script a save would rewrite."""
    from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file
    from jupytext.paired_paths import paired_paths

    assert not (ROOT / "py" / "exercises").exists()
    nb = sorted((ROOT / "exercises").glob("[0-9]*.ipynb"))[0]
    config = load_jupytext_configuration_file(find_jupytext_configuration_file(str(nb.parent)))
    pairs = {Path(p).resolve() for p, _ in paired_paths(str(nb), "ipynb", config.default_formats(str(nb)))}
    assert pairs == {nb.resolve()}, pairs


def test_every_ipynb_has_its_script():
    for d in PAIRED:
        for nb in (ROOT / d).glob("*.ipynb"):
            assert script_for(nb).exists(), f"{nb} has no paired .py script"


def test_exercises_are_generated_from_current_solutions():
    from roofline_lessons.course.exercisegen import plan

    stale = []
    for p in plan(ROOT / "solutions", ROOT / "exercises"):
        if p.path.exists() and p.path.read_text(encoding="utf-8") == p.text:
            continue
        committed = committed_text(p.path)
        if committed == p.text:  # a learner's answers in the working copy; the commit is current
            continue
        stale.append(p.path)
    assert not stale, f"exercises/ is stale, run `make exercises`: {stale}"


def _run_and_log(script: Path, tmp_path: Path) -> list[dict]:
    log = tmp_path / f"{script.parent.name}-{script.stem}.jsonl"
    env = dict(os.environ, ROOFLINE_LESSONS_CHECK_LOG=str(log), MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, str(script)], cwd=script.parent, env=env, capture_output=True, text=True,
                       timeout=600)  # a deadline for a busy machine, not a speed target
    assert r.returncode == 0, f"{script} failed:\n{r.stderr[-3000:]}"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _lesson_checks(script: Path):
    return importlib.import_module(f"roofline_lessons.course.checks.lesson{script.name[:2]}").EXERCISES


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.name)
def test_solutions_are_accepted_and_stubs_rejected(solution, tmp_path):
    expected_ids = set(_lesson_checks(solution))
    solved = _run_and_log(solution, tmp_path)
    assert {r["exercise"] for r in solved} == expected_ids, "every exercise must be checked in the solutions"
    rejected_solutions = [r for r in solved if r["status"] != "correct"]
    assert not rejected_solutions, f"solutions rejected: {rejected_solutions}"

    # Run the stubs exactly as the generator writes them (a learner's answered copy may differ).
    from roofline_lessons.course.exercisegen import exercise_texts

    stub_script = tmp_path / "exercises" / solution.name
    stub_script.parent.mkdir()
    stub_script.write_text(exercise_texts(solution)[1], encoding="utf-8")
    stubs = _run_and_log(stub_script, tmp_path)
    assert {r["exercise"] for r in stubs} == expected_ids
    accepted_stubs = [r for r in stubs if r["status"] == "correct"]
    assert not accepted_stubs, f"stubs accepted: {accepted_stubs}"
    assert all(r["status"] == "not attempted" for r in stubs)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_narration_cells_are_collapsed_and_only_they(script):
    """A cell that only says something in prose opens collapsed; code to read and play with stays open."""
    import jupytext

    from roofline_lessons.course.notebook_files import hide_narration, is_source_hidden

    nb = jupytext.read(script)
    assert hide_narration(nb) == 0, f"{script}: run `make sync` to collapse narration cells"
    ipynb = jupytext.read(notebook_for(script))
    assert [is_source_hidden(c) for c in ipynb.cells] == [is_source_hidden(c) for c in nb.cells]


def test_the_narration_rule():
    from roofline_lessons.course.notebook_files import is_narration

    assert is_narration('x = f(1)\nmd(f"{x}")')
    assert not is_narration('roofline_chart(roofs)\nmd("a")')  # a chart: code to play with
    assert not is_narration("x = 1")  # says nothing
    assert not is_narration('for i in range(3):\n    md(str(i))')
    assert not is_narration("md(")  # not Python
    assert is_narration("x = f(1)\nassert x > 0")  # a check that keeps the prose above honest
    assert not is_narration("x = f(1)\nassert x > 0\nprint(x)")  # prints: code to read
