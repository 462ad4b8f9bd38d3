"""`roofline-lessons doctor` diagnoses a broken set-up instead of crashing (issue 17, part 2b).

The main test builds the package's wheel once (offline: the build backend of this environment,
``--no-build-isolation --no-index``), installs it with ``--no-deps`` into a fresh venv that sees
no other site-packages, and runs the installed ``roofline-lessons`` there: no numpy, matplotlib,
Jupyter or jupytext.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from roofline_lessons.cli import main
from roofline_lessons.course import workshop

REPO = Path(__file__).resolve().parents[1]
#: pyproject's dependencies, as written there ("numpy>=1.24,<3")
DEPENDENCIES = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]


def _name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9._-]+", requirement).group(0)


def _clean_env() -> dict:
    """This process's environment without anything that would lend the venv our packages."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "COVERAGE_PROCESS_START")}
    env.update(PYTHONNOUSERSITE="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, env=_clean_env(), **kw)


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory) -> Path:
    """A venv holding roofline-lessons and none of its dependencies; returns its bin/ folder."""
    root = tmp_path_factory.mktemp("bare")
    src = root / "src"  # build from a copy: building writes build/ and egg-info beside the sources
    shutil.copytree(REPO / "roofline_lessons", src / "roofline_lessons",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "jupyter-config", src / "jupyter-config")  # pyproject's data-files
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                  "-w", root / "wheels", src], cwd=root)
    assert built.returncode == 0, (
        "building the wheel offline needs setuptools >= 77 in this environment (`make install-test`):\n"
        + built.stderr[-2000:])
    (wheel,) = (root / "wheels").glob("roofline_lessons-*.whl")
    made = _run([sys.executable, "-m", "venv", "--without-pip", root / "venv"], cwd=root)
    assert made.returncode == 0, made.stderr
    python = root / "venv" / "bin" / "python"
    installed = _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q",
                      wheel], cwd=root)
    assert installed.returncode == 0, installed.stderr[-2000:]
    return root / "venv" / "bin"


def test_doctor_names_each_missing_dependency_and_its_fix(bare_venv, tmp_path):
    probe = _run([bare_venv / "python", "-c", "import numpy"], cwd=tmp_path)
    assert probe.returncode != 0  # the venv really lacks them
    r = _run([bare_venv / "roofline-lessons", "doctor"], cwd=tmp_path)
    output = r.stdout + r.stderr
    assert r.returncode != 0, output
    assert "Traceback" not in output, output
    problems = [line for line in r.stdout.splitlines() if line.startswith("✗ ")]
    assert len(problems) == len(DEPENDENCIES), output
    for requirement in DEPENDENCIES:
        name = _name(requirement)
        (line,) = [p for p in problems if p.startswith(f"✗ {name} ")]
        assert "missing" in line and f"pip install '{requirement.replace(' ', '')}'" in line, line
    assert r.stdout.splitlines()[0].startswith("✓ Python")
    assert f"{len(DEPENDENCIES)} problem(s)" in r.stdout and workshop.SKIPPED in r.stdout


def test_doctor_json_and_help_work_without_dependencies(bare_venv, tmp_path):
    r = _run([bare_venv / "roofline-lessons", "doctor", "--json"], cwd=tmp_path)
    findings = json.loads(r.stdout)
    assert r.returncode == 1 and sum(not f["ok"] for f in findings) == len(DEPENDENCIES)
    r = _run([bare_venv / "roofline-lessons", "--help"], cwd=tmp_path)
    assert r.returncode == 0 and "doctor" in r.stdout and "place" in r.stdout


def test_other_commands_say_what_is_missing_in_one_line(bare_venv, tmp_path):
    r = _run([bare_venv / "roofline-lessons", "place", "--hardware", "h100-sxm", "--model", "llama-3.1-8b",
              "--phase", "decode"], cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == "" and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "numpy" in line and "roofline-lessons doctor" in line


def test_the_cli_module_loads_only_the_standard_library():
    code = ("import sys, roofline_lessons.cli as c; c.build_parser; "
            "print(sorted(m for m in ('numpy', 'matplotlib', 'jupytext', 'ipywidgets') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def test_a_version_outside_the_bounds_is_named_with_its_pip_line(monkeypatch, capsys):
    real = workshop.metadata.version
    monkeypatch.setattr(workshop.metadata, "version", lambda name: "1.20.0" if name == "numpy" else real(name))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("✗")]
    numpy_req = next(d for d in DEPENDENCIES if _name(d) == "numpy").replace(" ", "")
    assert line.startswith("✗ numpy 1.20.0 is outside") and f"pip install '{numpy_req}'" in line
    assert "python3 kernel" not in out and workshop.SKIPPED in out  # the later checks wait for the fix


def test_a_dependency_that_does_not_import_is_named(monkeypatch, capsys):
    real = workshop.importlib.import_module

    def broken(name, *a, **kw):
        if name == "jupytext":
            raise ImportError("libfoo.so: cannot open shared object file")
        return real(name, *a, **kw)

    monkeypatch.setattr(workshop.importlib, "import_module", broken)
    assert main(["doctor"]) == 1
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("✗")]
    assert "jupytext" in line and "does not import" in line and "libfoo.so" in line and "--force-reinstall" in line


@pytest.mark.parametrize("with_packaging", [True, False])
@pytest.mark.parametrize("version, spec, ok", [
    ("1.26.4", ">=1.24,<3", True), ("2.4.6", ">=1.24,<3", True), ("1.23.5", ">=1.24,<3", False),
    ("3.0.0", ">=1.24,<3", False), ("4.0", ">=4.0,<5", True), ("1.15.0", "~=1.15", True), ("2.0", "~=1.15", False),
    ("8.1.2", "==8.1.*", True), ("8.2.0", "==8.1.*", False), ("1.0", "!=1.0", False), ("1.0", "", True),
])
def test_version_bounds(monkeypatch, with_packaging, version, spec, ok):
    if not with_packaging:  # the fallback used where packaging is not installed
        monkeypatch.setitem(sys.modules, "packaging.specifiers", None)
    assert workshop.version_ok(version, spec) is ok


def test_requirements_are_read_with_their_bounds():
    assert workshop.parse_requirement("numpy<3,>=1.24") == ("numpy", ">=1.24,<3")
    assert workshop.parse_requirement("jupyterlab (>=4.0,<5)") == ("jupyterlab", ">=4.0,<5")
    names = [workshop.parse_requirement(r)[0] for r in workshop._requirements()]
    # the installed package's own dependencies, without its test extras (an older install may lag pyproject)
    assert names and set(names) <= {_name(d) for d in DEPENDENCIES} and "pytest" not in names


def test_export_without_lessons_is_one_line_and_exit_2(tmp_path, capsys):
    """`export` (now the offline handouts of course/handouts.py) keeps the CLI's bad-input contract."""
    assert main(["export", "--root", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no lesson notebooks" in err and not (tmp_path / "x").exists()


def _kernelspec(root: Path, python: Path) -> Path:
    """A JUPYTER_PATH folder whose 'python3' kernel runs ``python``."""
    folder = root / "jupyter"
    (folder / "kernels" / "python3").mkdir(parents=True)
    (folder / "kernels" / "python3" / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python"}), encoding="utf-8")
    return folder


def _doctor_with_kernel(monkeypatch, capsys, python: Path, jupyter_root: Path) -> tuple[int, list[str]]:
    monkeypatch.setenv("JUPYTER_PATH", str(_kernelspec(jupyter_root, python)))
    monkeypatch.chdir(REPO)  # the checkout in the working folder must not stand in for an installed course
    code = main(["doctor"])
    lines = capsys.readouterr().out.splitlines()
    return code, [x for x in lines if "python3 kernel" in x]


def test_a_kernel_whose_python_lacks_numpy_is_named_with_its_fix(bare_venv, tmp_path, monkeypatch, capsys):
    code, (line,) = _doctor_with_kernel(monkeypatch, capsys, bare_venv / "python", tmp_path)
    assert code == 1 and line.startswith(f"✗ the python3 kernel ({bare_venv / 'python'})"), line
    assert "numpy" in line and "— fix: " in line and "ipykernel install" in line


def test_a_kernel_without_the_course_is_not_fooled_by_the_checkout(tmp_path, monkeypatch, capsys):
    """`import roofline_lessons` needs only the standard library and the checkout sits in the working
    folder: the probe must run isolated, elsewhere, and import what the lessons use."""
    made = _run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "empty"], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python = tmp_path / "empty" / "bin" / "python"
    code, (line,) = _doctor_with_kernel(monkeypatch, capsys, python, tmp_path)
    assert code == 1 and line.startswith("✗ ") and "roofline_lessons" in line, line


def test_this_environments_kernel_passes(tmp_path, monkeypatch, capsys):
    _, (line,) = _doctor_with_kernel(monkeypatch, capsys, Path(sys.executable), tmp_path)
    assert line.startswith("✓ python3 kernel") and "numpy" in line, line
