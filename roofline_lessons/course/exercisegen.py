"""Write the exercise notebooks from the solution notebooks (one source, never drifting apart).

In ``solutions/NN_name.py`` (a jupytext percent script):

- a code region between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` becomes a stub that runs:
  every name the region assigns becomes ``name = ...``, every function it defines keeps its
  signature and returns ``...``. Checkers treat ``...`` as "not answered yet".
- a cell tagged ``solution`` (``# %% [markdown] tags=["solution"]``) is left out of the exercise.

The generator never overwrites an exercise notebook a learner has edited: it remembers a hash of
what it wrote (``exercises/.generated.json``) and refuses when the file on disk differs, unless
``force=True``, which first keeps the edited file as ``<name>.bak-<time>``. Files are written
atomically. Nothing here executes notebook code; the regions are parsed with :mod:`ast`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..core.files import atomic_write_text
from .notebook_files import pair_texts, read_notebook, scripts_dir

BEGIN = "# BEGIN SOLUTION"
END = "# END SOLUTION"
MANIFEST = ".generated.json"


class ExerciseGenerationError(RuntimeError):
    pass


def _targets(node: ast.AST) -> list[str]:
    names: list[str] = []
    if isinstance(node, ast.Name):
        names.append(node.id)
    elif isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            names += _targets(elt)
    return names


def stub_for_region(code: str, where: str = "") -> list[str]:
    """The stub lines that replace one solution region."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ExerciseGenerationError(f"{where}: the solution region does not parse: {exc}") from None
    lines: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            lines.append(f"def {node.name}({ast.unparse(node.args)}):")
            doc = ast.get_docstring(node)
            if doc and '"""' not in doc:
                lines.append(f'    """{doc}"""')
            lines.append("    return ...  # your code here")
            lines.append("")  # a blank line after a function, as PEP 8 and readers expect
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for name in _targets(t):
                    stub = f"{name} = ...  # your answer here"
                    if stub not in lines:
                        lines.append(stub)
    if not lines:
        lines.append("# your code here")
    return lines


def exercise_source(source: str, where: str = "") -> str:
    """Replace every solution region of one code cell with its stub."""
    out: list[str] = []
    region: list[str] | None = None
    indent = ""
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if region is not None:
                raise ExerciseGenerationError(f"{where}: nested {BEGIN}")
            region, indent = [], line[: len(line) - len(line.lstrip())]
        elif stripped == END:
            if region is None:
                raise ExerciseGenerationError(f"{where}: {END} without {BEGIN}")
            import textwrap

            out += [indent + s for s in stub_for_region(textwrap.dedent("\n".join(region)), where)]
            region = None
        elif region is not None:
            region.append(line)
        else:
            out.append(line)
    if region is not None:
        raise ExerciseGenerationError(f"{where}: {BEGIN} without {END}")
    return "\n".join(out).rstrip()


def exercise_notebook(solution: nbformat.NotebookNode, name: str = "") -> nbformat.NotebookNode:
    """The exercise version of a solution notebook."""
    nb = nbformat.from_dict(solution)
    cells = []
    for i, cell in enumerate(nb.cells):
        if "solution" in cell.get("metadata", {}).get("tags", []):
            continue
        if cell.cell_type == "code" and BEGIN in cell.source:
            cell.source = exercise_source(cell.source, f"{name} cell {i}")
        cells.append(cell)
    nb.cells = cells
    return nb


@dataclass(frozen=True)
class Planned:
    path: Path
    text: str


def exercise_texts(solution_script: Path | str) -> tuple[str, str]:
    """The exercise generated from one solution script: its ``.ipynb`` text (what is written) and the
    same notebook as a percent script (what the tests run to prove the stubs are rejected)."""
    sol = Path(solution_script)
    return pair_texts(exercise_notebook(read_notebook(sol), sol.name))


def plan(solutions_dir: Path, exercises_dir: Path) -> list[Planned]:
    """Every exercise notebook and the text it should hold. The solutions are read from their scripts
    (``py/solutions/``, the one source); each exercise is written as ``exercises/x.ipynb`` only: a
    generated notebook needs no tracked script twin (no one edits it as a script), and a learner
    works in the notebook."""
    return [Planned(Path(exercises_dir) / sol.with_suffix(".ipynb").name, exercise_texts(sol)[0])
            for sol in sorted(scripts_dir(solutions_dir).glob("[0-9]*.py"))]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _manifest(exercises_dir: Path) -> dict[str, str]:
    path = Path(exercises_dir) / MANIFEST
    try:
        data = json.loads(path.read_text("utf-8"))
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (FileNotFoundError, ValueError):
        return {}


def stale_files(solutions_dir: Path, exercises_dir: Path) -> list[Path]:
    """Exercise files that are missing or differ from what the solutions generate."""
    return [p.path for p in plan(solutions_dir, exercises_dir)
            if not p.path.exists() or p.path.read_text("utf-8") != p.text]


def generate(solutions_dir: Path, exercises_dir: Path, *, force: bool = False) -> list[Path]:
    """Write the stale exercise files; returns the paths written.

    Raises :class:`ExerciseGenerationError` (and writes nothing) when a file to be replaced was
    edited since the generator last wrote it, unless ``force``; then the edited file is kept as a
    ``.bak-<time>`` copy first.
    """
    exercises_dir = Path(exercises_dir)
    manifest = _manifest(exercises_dir)
    todo = [p for p in plan(solutions_dir, exercises_dir)
            if not p.path.exists() or p.path.read_text("utf-8") != p.text]
    edited = [p.path for p in todo if p.path.exists() and manifest.get(p.path.name) != _sha(p.path.read_text("utf-8"))]
    if edited and not force:
        raise ExerciseGenerationError(
            "these exercise files were edited since they were generated and would be overwritten: "
            + ", ".join(str(p) for p in edited)
            + ". Move your work elsewhere, or regenerate with --force (your files are kept as .bak-<time> copies)."
        )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for path in edited:
        shutil.copy2(path, path.with_name(f"{path.name}.bak-{stamp}"))
    for p in todo:
        atomic_write_text(p.path, p.text)
        manifest[p.path.name] = _sha(p.text)
    if todo:
        atomic_write_text(exercises_dir / MANIFEST, json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    return [p.path for p in todo]
