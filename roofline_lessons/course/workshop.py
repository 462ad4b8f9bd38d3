"""For instructors: ``export`` (run every lesson and write HTML handouts plus the cheat sheet, for
learners who cannot run Jupyter) and ``doctor`` (check a learner's set-up before the workshop and
say how to fix each problem)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..core.files import atomic_write_text

# ---- export -------------------------------------------------------------------------------------


def lesson_notebooks(root: Path) -> list[Path]:
    return sorted((Path(root) / "notebooks").glob("[0-9]*.ipynb"))


def export(root: Path | str = ".", out: Path | str = "handouts", only: list[str] | None = None,
           timeout_s: int = 600, log=print) -> list[Path]:
    """Execute each lesson notebook in a fresh kernel and write it as HTML into ``out``, with the cheat
    sheet. ``only`` limits to notebooks whose name starts with one of the given prefixes ("01", "02")."""
    import nbformat
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import ExecutePreprocessor

    from . import cheatsheet

    root, out = Path(root), Path(out)
    notebooks = lesson_notebooks(root)
    if only:
        notebooks = [p for p in notebooks if any(p.name.startswith(o) for o in only)]
    if not notebooks:
        raise FileNotFoundError(f"no lesson notebooks found under {root / 'notebooks'}"
                                + (f" matching {only}" if only else ""))
    out.mkdir(parents=True, exist_ok=True)
    written = []
    exporter = HTMLExporter()
    for nb_path in notebooks:
        log(f"running {nb_path.name} …")
        nb = nbformat.read(str(nb_path), as_version=4)
        ExecutePreprocessor(timeout=timeout_s, kernel_name="python3").preprocess(
            nb, {"metadata": {"path": str(nb_path.parent)}})
        body, _ = exporter.from_notebook_node(nb)
        target = out / nb_path.with_suffix(".html").name
        atomic_write_text(target, body)
        written.append(target)
    written += cheatsheet.write(out)
    return written


# ---- doctor -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    ok: bool
    what: str
    fix: str = ""


def _requirements() -> list[str]:
    try:
        reqs = metadata.requires("roofline-lessons") or []
    except metadata.PackageNotFoundError:
        return []
    return [r for r in reqs if "extra ==" not in r]


def _version_ok(installed: str, spec: str) -> bool:
    try:
        from packaging.specifiers import SpecifierSet

        return installed in SpecifierSet(spec)
    except ImportError:  # packaging is nearly always there (pip, jupyter); if not, do not guess
        return True


def check_python() -> Finding:
    ok = sys.version_info >= (3, 11)
    return Finding(ok, f"Python {sys.version.split()[0]}",
                   "" if ok else "install Python 3.11 or newer and re-run `make lab` (or `make install`)")


def check_packages() -> list[Finding]:
    findings = []
    reqs = _requirements()
    if not reqs:
        return [Finding(False, "the roofline-lessons package is not installed in this environment",
                        "run `make install` (or `pip install -e .` in the course folder)")]
    import re

    for req in reqs:
        m = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", req)
        name, spec = m.group(1), m.group(2).strip()
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            findings.append(Finding(False, f"{name} is missing", f"run `make install` (needs {name}{spec})"))
            continue
        ok = _version_ok(version, spec)
        findings.append(Finding(ok, f"{name} {version}" + ("" if ok else f" (the course needs {spec})"),
                                "" if ok else f"run `pip install '{name}{spec}'` in the course's environment"))
    return findings


#: ipywidgets major version -> the jupyterlab_widgets major version whose front-end matches it
WIDGET_FRONTENDS = {7: 1, 8: 3}


def check_widgets_frontend() -> Finding:
    """The JupyterLab widget manager must match ipywidgets, or learners see 'Error displaying widget'."""
    try:
        ipyw = metadata.version("ipywidgets")
    except metadata.PackageNotFoundError:
        return Finding(False, "ipywidgets is missing", "run `make install`")
    try:
        labw = metadata.version("jupyterlab_widgets")
    except metadata.PackageNotFoundError:
        return Finding(False, f"ipywidgets {ipyw} has no JupyterLab front-end (jupyterlab_widgets missing)",
                       "run `pip install jupyterlab_widgets` in the same environment as JupyterLab")
    want = WIDGET_FRONTENDS.get(int(ipyw.split(".")[0]))
    have = int(labw.split(".")[0])
    ext = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter-widgets" / "jupyterlab-manager"
    if want is not None and have != want:
        return Finding(False, f"ipywidgets {ipyw} needs jupyterlab_widgets {want}.x, found {labw}",
                       f"run `pip install 'jupyterlab_widgets>={want},<{want + 1}'`")
    if not (ext / "package.json").exists():
        return Finding(False, f"the widget front-end extension is not where JupyterLab looks ({ext})",
                       "reinstall it: `pip install --force-reinstall jupyterlab_widgets`")
    return Finding(True, f"ipywidgets {ipyw} with its JupyterLab front-end (jupyterlab_widgets {labw})")


def check_kernel() -> Finding:
    """A 'python3' kernel exists and can import the course package."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        spec = KernelSpecManager().get_kernel_spec("python3")
    except Exception as exc:
        return Finding(False, f"no python3 Jupyter kernel ({type(exc).__name__})",
                       "run `python -m ipykernel install --sys-prefix` in the course's environment")
    exe = spec.argv[0]
    if exe in ("python", "python3", "{python}"):
        exe = sys.executable
    try:
        r = subprocess.run([exe, "-c", "import roofline_lessons"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return Finding(False, f"the python3 kernel ({exe}) cannot be started: {exc}",
                       "run `python -m ipykernel install --sys-prefix` in the course's environment")
    if r.returncode != 0:
        return Finding(False, f"the python3 kernel ({exe}) cannot import roofline_lessons",
                       "start JupyterLab from the course's environment: `make lab`")
    return Finding(True, f"python3 kernel ({exe}) imports roofline_lessons")


def check_chart() -> Finding:
    """A roofline chart renders to PNG."""
    try:
        from ..viz.charts import roofs_for
        from ..viz.dashboards import lesson01_png, lesson01_view

        png = lesson01_png(lesson01_view("qwen3.8-27b", "h100-sxm", "bf16", "decode", 1, 1024))
        roofs_for("h100-sxm")
        ok = png.startswith(b"\x89PNG")
    except Exception as exc:
        return Finding(False, f"a chart does not render ({type(exc).__name__}: {exc})",
                       "reinstall matplotlib: `pip install --force-reinstall matplotlib`")
    return Finding(ok, "a roofline chart renders to PNG" if ok else "chart rendering produced no PNG",
                   "" if ok else "reinstall matplotlib")


def run_doctor() -> list[Finding]:
    return [check_python(), *check_packages(), check_widgets_frontend(), check_kernel(), check_chart()]


def doctor_report(findings: list[Finding]) -> str:
    lines = []
    for f in findings:
        lines.append(f"{'✓' if f.ok else '✗'} {f.what}" + ("" if f.ok else f"\n    fix: {f.fix}"))
    bad = sum(not f.ok for f in findings)
    lines.append("" if not bad else "")
    lines.append("All good: see you at the workshop." if not bad else f"{bad} problem(s) to fix before the workshop.")
    return "\n".join(lines)


def findings_json(findings: list[Finding]) -> str:
    return json.dumps([vars(f) for f in findings], indent=1)
