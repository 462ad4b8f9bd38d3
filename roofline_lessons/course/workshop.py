"""For instructors: ``doctor`` (check a learner's set-up before the workshop and say how to fix
each problem). The offline handouts (``roofline-lessons export``) are :mod:`.handouts`.

The doctor imports only the standard library until it checks a dependency, and then imports each
one on its own: it runs, and says what to install, in an environment that lacks numpy or Jupyter.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path


# ---- doctor -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    ok: bool
    what: str
    fix: str = ""
    #: "environment" for the Python and dependency checks (whose failure skips the later ones)
    check: str = ""


def _requirements() -> list[str] | None:
    """The installed package's own ``Requires-Dist`` lines (pyproject's dependencies, no extras);
    None where the package is not installed."""
    try:
        reqs = metadata.requires("roofline-lessons") or []
    except metadata.PackageNotFoundError:
        return None
    return [r for r in reqs if "extra ==" not in r]


_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?([^;)]*)\)?")


def parse_requirement(req: str) -> tuple[str, str]:
    """``"numpy<3,>=1.24"`` → ``("numpy", ">=1.24,<3")``: the name and its bounds, lower bound first."""
    m = _REQUIREMENT.match(req)
    if not m:
        return req.strip(), ""
    clauses = [c.strip() for c in m.group(2).split(",") if c.strip()]
    clauses.sort(key=lambda c: 0 if c.startswith(">") else 1)
    return m.group(1), ",".join(clauses)


def _release(version: str) -> tuple[int, ...]:
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", version)
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def _compare(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (a > b) - (a < b)


def version_ok(installed: str, spec: str) -> bool:
    """Whether ``installed`` meets ``spec`` (``">=1.24,<3"``): PEP 440 through ``packaging`` where
    it imports, else by release numbers (``1.26.4`` → 1, 26, 4) with the same operators."""
    if not spec:
        return True
    try:
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        return SpecifierSet(spec).contains(Version(installed), prereleases=True)
    except (ImportError, ValueError):  # no packaging here, or a version it cannot parse
        pass
    have = _release(installed)
    for clause in spec.split(","):
        m = re.match(r"\s*(~=|===|==|!=|<=|>=|<|>)\s*(\S+)", clause)
        if not m:
            continue
        op, want = m.group(1), m.group(2)
        if want.endswith(".*"):
            prefix = _release(want[:-2])
            if (op == "==") != (have[:len(prefix)] == prefix):
                return False
            continue
        c = _compare(have, _release(want))
        if op == "~=":
            w = _release(want)
            if c < 0 or have[:len(w) - 1] != w[:-1]:
                return False
        elif not {"==": c == 0, "===": c == 0, "!=": c != 0, "<=": c <= 0, ">=": c >= 0, "<": c < 0,
                  ">": c > 0}[op]:
            return False
    return True


#: distribution name → the module it provides, where the rule (lower case, ``-`` → ``_``) does not hold
IMPORT_NAMES: dict[str, str] = {}


#: the ``check`` of the findings that come before (and gate) the widget, kernel and chart checks
ENV = "environment"


def check_python() -> Finding:
    ok = sys.version_info >= (3, 11)
    return Finding(ok, f"Python {sys.version.split()[0]}",
                   "" if ok else "install Python 3.11 or newer and re-run `make lab` (or `make install`)", ENV)


def check_dependency(req: str) -> Finding:
    """One ``Requires-Dist`` line: installed (``importlib.metadata``), within the package's bounds,
    and importable (``importlib.import_module``, alone, so one broken package hides no other)."""
    name, spec = parse_requirement(req)
    pip = f"pip install '{name}{spec}'"
    try:
        version = metadata.version(name)
    except metadata.PackageNotFoundError:
        return Finding(False, f"{name} is missing (the course needs {name}{spec})",
                       f"run `{pip}` (or `make install` in the course folder, which installs every dependency)", ENV)
    if not version_ok(version, spec):
        return Finding(False, f"{name} {version} is outside the course's bounds {spec}",
                       f"run `{pip}` in the course's environment", ENV)
    module = IMPORT_NAMES.get(name, name.lower().replace("-", "_"))
    try:
        importlib.import_module(module)
    except Exception as exc:  # any failure to import is the finding
        why = " ".join(f"{type(exc).__name__}: {exc}".split())
        return Finding(False, f"{name} {version} is installed but does not import ({why[:200]})",
                       f"run `pip install --force-reinstall '{name}{spec}'` in the course's environment", ENV)
    return Finding(True, f"{name} {version}", check=ENV)


def check_packages() -> list[Finding]:
    """Every dependency the installed package declares (its ``Requires-Dist``), each on its own."""
    reqs = _requirements()
    if reqs is None:
        return [Finding(False, "the roofline-lessons package is not installed in this environment",
                        "run `make install` (or `pip install -e .` in the course folder)", ENV)]
    return [check_dependency(r) for r in reqs]


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


#: what the kernel's python must import for the lessons to run (the course's numerics, charts, widgets)
KERNEL_IMPORTS = ("roofline_lessons.core.costs", "numpy", "matplotlib", "ipywidgets")


def check_kernel() -> Finding:
    """A 'python3' kernel exists and its python imports what the lessons need
    (:data:`KERNEL_IMPORTS`). The probe runs isolated (``python -I``: no PYTHONPATH, no user site,
    no current folder on the path) from the temporary folder, so a checkout of the course in the
    folder the doctor runs from cannot stand in for an installed package."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        spec = KernelSpecManager().get_kernel_spec("python3")
    except Exception as exc:
        return Finding(False, f"no python3 Jupyter kernel ({type(exc).__name__})",
                       "run `python -m ipykernel install --sys-prefix` in the course's environment")
    exe = spec.argv[0] if spec.argv else ""
    if exe in ("python", "python3", "{python}"):
        exe = sys.executable
    code = "import " + ", ".join(KERNEL_IMPORTS)
    try:
        r = subprocess.run([exe, "-I", "-c", code], capture_output=True, text=True, timeout=60,
                           cwd=tempfile.gettempdir())
    except (OSError, subprocess.SubprocessError) as exc:
        return Finding(False, f"the python3 kernel ({exe}) cannot be started: {_one_line(exc)}",
                       "run `python -m ipykernel install --sys-prefix` in the course's environment")
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no error message"])[-1]
        return Finding(False, f"the python3 kernel ({exe}) cannot import what the lessons need ({last[:200]})",
                       "install the course into the kernel's environment (`make install` there), or register "
                       "this environment's kernel: `python -m ipykernel install --sys-prefix`, and start "
                       "JupyterLab from it (`make lab`)")
    return Finding(True, f"python3 kernel ({exe}) imports roofline_lessons, numpy, matplotlib and ipywidgets")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


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


#: what the report says when the dependency checks failed and the later checks did not run
SKIPPED = "the widget, kernel and chart checks run once the dependencies above are fixed"


def run_doctor() -> list[Finding]:
    """Python, then every dependency on its own; the widget front-end, kernel and chart checks only
    when all the dependencies are there (they import them)."""
    first = [check_python(), *check_packages()]
    if not all(f.ok for f in first):
        return first
    return [*first, check_widgets_frontend(), check_kernel(), check_chart()]


def doctor_report(findings: list[Finding]) -> str:
    """One line per finding (a problem's line names it and its fix), then a summary."""
    lines = [f"✓ {f.what}" if f.ok else f"✗ {f.what} — fix: {f.fix}" for f in findings]
    bad = sum(not f.ok for f in findings)
    lines.append("")
    if not bad:
        lines.append("All good: see you at the workshop.")
    else:
        skipped = any(f.check == ENV and not f.ok for f in findings)
        lines.append(f"{bad} problem(s) to fix before the workshop" + (f"; {SKIPPED}." if skipped else "."))
    return "\n".join(lines)


def findings_json(findings: list[Finding]) -> str:
    return json.dumps([vars(f) for f in findings], indent=1)
