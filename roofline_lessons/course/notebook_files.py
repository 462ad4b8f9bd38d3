"""Notebook files: jupytext pairs (.ipynb + .py percent script) and sync checks.

The two halves live apart, so a learner's file browser shows each lesson once: ``notebooks/x.ipynb``
is paired with ``py/notebooks/x.py`` (likewise ``exercises/`` and ``solutions/``). The pairing is
declared by a ``.jupytext.toml`` in each lesson folder and a ``jupytext.toml`` in each ``py/``
folder, so JupyterLab's jupytext extension saves both halves whichever one is edited.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

import jupytext
import nbformat

from ..core.files import atomic_write_text  # noqa: F401  (its 0.1 home; still importable from here)

#: the folder, next to notebooks/ exercises/ solutions/, that holds their .py twins
MIRROR = "py"
#: what the notebooks' own metadata says of jupytext (the pairing itself is in the folder configs)
JUPYTEXT_METADATA = {"notebook_metadata_filter": "-jupytext.text_representation.jupytext_version"}


def scripts_dir(notebook_dir: Path | str) -> Path:
    """``<root>/notebooks`` -> ``<root>/py/notebooks``: where a lesson folder's scripts live."""
    notebook_dir = Path(notebook_dir)
    return notebook_dir.parent / MIRROR / notebook_dir.name


def script_for(ipynb: Path | str) -> Path:
    """``notebooks/01_x.ipynb`` -> ``py/notebooks/01_x.py``."""
    ipynb = Path(ipynb)
    return scripts_dir(ipynb.parent) / ipynb.with_suffix(".py").name


def notebook_for(script: Path | str) -> Path:
    """``py/notebooks/01_x.py`` -> ``notebooks/01_x.ipynb``."""
    script = Path(script)
    return script.parent.parent.parent / script.parent.name / script.with_suffix(".ipynb").name
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def read_notebook(path: Path | str) -> nbformat.NotebookNode:
    """Read a .py percent script or an .ipynb as a notebook."""
    return jupytext.read(str(path))


def pair_texts(nb: nbformat.NotebookNode) -> tuple[str, str]:
    """(.ipynb text, .py percent text) for ``nb``, outputs cleared, kernelspec and pairing set."""
    nb = nbformat.from_dict(nb)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    # No version stamp (files would differ between installs); the pairing is in the folder configs.
    nb.metadata["jupytext"] = dict(JUPYTEXT_METADATA)
    for i, cell in enumerate(nb.cells):
        # Stable cell ids, so regenerating an unchanged notebook gives byte-identical files.
        cell["id"] = hashlib.sha1(f"{i}:{cell.cell_type}:{cell.source}".encode("utf-8")).hexdigest()[:12]
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    py_text = jupytext.writes(nb, fmt="py:percent")
    py_text = _drop_text_representation(py_text)
    return jupytext.writes(nb, fmt="ipynb"), py_text


def _drop_text_representation(py_text: str) -> str:
    """Remove the version-stamped ``text_representation`` block from a script's YAML header."""
    out, skipping = [], False
    for line in py_text.splitlines(keepends=True):
        if line.startswith("#     text_representation:"):
            skipping = True
            continue
        if skipping and line.startswith("#       "):
            continue
        skipping = False
        out.append(line)
    return "".join(out)


def cell_signature(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """What must agree between the two files of a pair: each cell's type and source."""
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def pair_problems(py_path: Path | str) -> list[str]:
    """Problems with the pair whose script is ``py_path``: missing, out of sync, or holding outputs."""
    py_path = Path(py_path)
    ipynb = notebook_for(py_path)
    if not ipynb.exists():
        return [f"{ipynb} is missing (run `make sync`)"]
    problems = []
    nb_py, nb_ipynb = read_notebook(py_path), nbformat.read(str(ipynb), as_version=4)
    if cell_signature(nb_py) != cell_signature(nb_ipynb):
        problems.append(f"{ipynb} and {py_path} are out of sync (run `make sync`)")
    for i, cell in enumerate(nb_ipynb.cells):
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            problems.append(f"{ipynb} cell {i} holds outputs (clear them before committing)")
            break
    if nb_ipynb.metadata.get("kernelspec", {}).get("name") != "python3":
        problems.append(f"{ipynb} has no python3 kernelspec (JupyterLab would ask for a kernel)")
    return problems


#: JupyterLab's cell metadata for "source collapsed" (jupytext keeps it in the .py cell header)
HIDDEN_SOURCE = {"jupyter": {"source_hidden": True}}


def is_narration(source: str) -> bool:
    """True for a code cell whose only job is to say something in prose: every top-level statement
    is an ``md(...)`` call, an assignment, a helper function or an import feeding it, or an
    ``assert`` that keeps its words honest, with at least one ``md`` call or ``assert``. So a cell
    with no ``md`` call counts too when it asserts something and otherwise only assigns, imports or
    defines (the checks that keep the prose above it honest, and what they need). Such a cell is shown
    collapsed, so a lesson reads as prose with live numbers (the asserts still run under the notebook
    tests); its code is one click away."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False

    def is_md(stmt) -> bool:
        return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "md")

    quiet = (ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.Import, ast.ImportFrom, ast.Assert)
    return ((any(is_md(s) for s in tree.body) or any(isinstance(s, ast.Assert) for s in tree.body))
            and all(is_md(s) or isinstance(s, quiet) for s in tree.body))


def is_source_hidden(cell) -> bool:
    return bool(cell.get("metadata", {}).get("jupyter", {}).get("source_hidden", False))


def hide_narration(nb: nbformat.NotebookNode) -> int:
    """Collapse every narration cell's source and show every other cell's; returns cells changed."""
    changed = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        want = is_narration(cell.source)
        if want == is_source_hidden(cell):
            continue
        changed += 1
        jupyter = dict(cell.metadata.get("jupyter", {}))
        if want:
            jupyter["source_hidden"] = True
        else:
            jupyter.pop("source_hidden", None)
        if jupyter:
            cell.metadata["jupyter"] = jupyter
        else:
            cell.metadata.pop("jupyter", None)
    return changed


def collapse_narration(root: Path | str = ".", folders=("notebooks", "solutions")) -> list[Path]:
    """For authors (``make sync``): mark narration cells collapsed in the lesson scripts under
    ``py/<folder>/``; returns the scripts rewritten (atomically). Only cell metadata changes."""
    written = []
    for folder in folders:
        for script in sorted((Path(root) / MIRROR / folder).glob("[0-9]*.py")):
            nb = jupytext.read(str(script))
            if hide_narration(nb):
                atomic_write_text(script, jupytext.writes(nb, fmt="py:percent"))
                written.append(script)
    return written
