"""The package imports run one way: no import cycle, counting imports inside functions, and every
import points down the layers (core -> topics -> measure -> viz -> course -> the root and its CLI)."""

import ast
import importlib
import re
import sys
import warnings
from pathlib import Path

import pytest

import roofline_lessons
from roofline_lessons import _moved

ROOT = Path(roofline_lessons.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.startswith("roofline_lessons"):
                found.add(target)
                for alias in node.names:  # "from . import lesson01" names a module
                    found.add(f"{target}.{alias.name}")
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("roofline_lessons")}
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        graph[name] = {t for t in _imports(path, name) if t in modules and t != name}
    return graph


def _cycle(graph):
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycle_in_the_package():
    graph = _graph()
    # a package importing its own submodules (re-exports) is not a cycle through the layers
    for name in graph:
        if (ROOT.parent / Path(*name.split(".")) / "__init__.py").exists():
            graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


#: lowest first; a module may import its own layer and the layers before it
LAYERS = ("core", "topics", "measure", "viz", "course")
#: third-party packages that only the drawing and notebook layers may import
DRAWING = ("matplotlib", "ipywidgets", "IPython")


def _layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] == "_moved":
        return -1  # bookkeeping of old paths, standard library only: anyone may use it
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return len(LAYERS)  # the root package, cli, __main__


def test_every_import_points_down_the_layers():
    upward = [f"{a} -> {t}" for a, targets in _graph().items() for t in targets
              if _layer(t) > _layer(a) and not t.startswith(a + ".")]
    assert upward == []


def test_the_layer_check_sees_an_upward_import():
    assert _layer("roofline_lessons.core.costs") < _layer("roofline_lessons.viz.charts")
    assert _layer("roofline_lessons.course.checks.lesson01") < _layer("roofline_lessons.cli")
    assert _layer("roofline_lessons._moved") < _layer("roofline_lessons.core.units")


@pytest.mark.parametrize("layer", ["core", "topics", "measure"])
def test_lower_layers_never_import_drawing_libraries(layer):
    offenders = []
    for path in (ROOT / layer).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in DRAWING]
    assert offenders == []


def test_at_most_fifteen_modules_at_the_root():
    assert len(list(ROOT.glob("*.py"))) <= 15


def test_the_public_api_is_at_the_root():
    for name in roofline_lessons.__all__:
        assert getattr(roofline_lessons, name) is not None
    from roofline_lessons import Workload, get_model, get_part, place  # what learners write
    assert place(get_model("llama-3.1-8b"), get_part("h100-sxm"), phase="decode").workload == Workload()


def _forget(old: str) -> None:
    for name in [n for n in sys.modules if n == old or n.startswith(old + ".")]:
        del sys.modules[name]


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_import_path_warns_and_gives_the_same_module(old):
    new = f"roofline_lessons.{_moved.MOVED[old]}"
    _forget(f"roofline_lessons.{old}")
    with pytest.warns(_moved.MovedModuleWarning, match=re.escape(new)):
        module = importlib.import_module(f"roofline_lessons.{old}")
    assert module is importlib.import_module(new)  # one module object, not a second copy


def test_an_old_submodule_path_resolves_to_the_one_module():
    _forget("roofline_lessons.dashboards")
    with pytest.warns(_moved.MovedModuleWarning):
        from roofline_lessons.dashboards import lesson01 as old
    from roofline_lessons.viz.dashboards import lesson01 as new
    assert old is new


def test_old_names_of_the_measure_module_warn_and_resolve():
    from roofline_lessons.measure import probes
    with pytest.warns(_moved.MovedModuleWarning, match="measure.probes.measure"):
        from roofline_lessons.measure import measure
    assert measure is probes.measure
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from roofline_lessons.measure import results  # a submodule imports without a warning
    assert results.__name__ == "roofline_lessons.measure.results"
    with pytest.raises(ImportError):
        from roofline_lessons.measure import no_such_name  # noqa: F401


def test_the_readme_lists_every_old_path():
    readme = (ROOT.parent / "README.md").read_text(encoding="utf-8")
    missing = [old for old, new in _moved.MOVED.items()
               if not old.startswith("_") and f"`{old}` | `{new}`" not in readme]
    assert missing == []
