"""environment.yml (conda / Binder) and pyproject.toml must list the same dependencies."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _norm(spec: str) -> tuple[str, str]:
    spec = spec.replace(" ", "")
    m = re.match(r"([A-Za-z0-9_.\-]+)(.*)", spec)
    name, constraint = m.group(1).lower().replace("_", "-"), m.group(2)
    return name, ",".join(sorted(constraint.split(","))) if constraint else ""


def _conda_deps() -> dict[str, str]:
    deps, inside = {}, False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        if re.match(r"^dependencies:\s*$", line):
            inside = True
            continue
        if inside and re.match(r"^\S", line):
            inside = False
        m = re.match(r"^\s+-\s+([^#\s][^#]*?)\s*(#.*)?$", line) if inside else None
        if m and not m.group(1).endswith(":"):
            name, constraint = _norm(m.group(1))
            deps[name] = constraint
    return deps


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = dict(_norm(s) for s in project["dependencies"] + project["optional-dependencies"]["test"])
    conda = _conda_deps()
    conda.pop("python", None)
    conda.pop("pip", None)
    assert conda == wanted


def test_no_exact_pins_and_major_caps():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for spec in project["dependencies"] + project["optional-dependencies"]["test"]:
        assert "==" not in spec and ">=" in spec and "<" in spec, spec


def test_binder_installs_the_package():
    post = (ROOT / "postBuild").read_text()
    assert "pip install" in post and "-e ." in post
