"""Data flows one way, and only the recorder may touch torch, nvtx or pynvml: a person who
triages a ticket opens reports on a laptop with none of them installed."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "graphdoctor"
BLOCK = "import sys\nfor name in ('torch', 'nvtx', 'pynvml'): sys.modules[name] = None\n"


LAUNCH_MODULES = sorted(f"graphdoctor.launch.{p.stem}" for p in (PACKAGE / "launch").glob("*.py")
                        if p.stem != "__init__")
# Torch-free too, and imported by the child before the script imports torch.
CHILD_BEFORE_TORCH = ["graphdoctor.record.child"]


# Imported where torch may be missing: the in-process API imports torch only to record, and
# the pytest plugin is loaded into every pytest run wherever graphdoctor is installed.
IN_TESTS = ["graphdoctor", "graphdoctor.api", "graphdoctor.pytest_plugin"]


@pytest.mark.parametrize("module", ["graphdoctor.trace.assemble", "graphdoctor.diagnose",
                                    "graphdoctor.report.io", "graphdoctor.cli",
                                    "graphdoctor.launch", *LAUNCH_MODULES, *CHILD_BEFORE_TORCH,
                                    *IN_TESTS])
def test_imports_without_torch(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", BLOCK + f"import {module}"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_launcher_side_imports_nothing_heavy_even_where_torch_is_installed() -> None:
    """Not one module of torch, nvtx or pynvml, nor of the recorder, is imported with it."""
    probe = ("import sys\n" + "".join(f"import {m}\n" for m in LAUNCH_MODULES)
             + "print(' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split()
    assert not [m for m in loaded if m.split(".")[0] in ("torch", "nvtx", "pynvml")]
    assert not [m for m in loaded if m.startswith("graphdoctor.record")]


@pytest.mark.parametrize("path", sorted((PACKAGE / "launch").rglob("*.py")), ids=str)
def test_the_launcher_side_never_imports_the_recorder(path: Path) -> None:
    """graphdoctor.record may use graphdoctor.launch, never the other way round."""
    assert not [m for m in imported_modules(path) if m.startswith("graphdoctor.record")]


def test_the_child_module_the_supervisor_names_exists() -> None:
    from graphdoctor.launch.child_process import CHILD_MODULE

    assert (PACKAGE.parent / (CHILD_MODULE.replace(".", "/") + ".py")).is_file()


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, a name imported from a package included as the module it
    may be (``from graphdoctor import api`` imports ``graphdoctor.api``)."""
    return _imported(ast.walk(ast.parse(path.read_text())))


def _imported(nodes: Iterable[ast.AST]) -> set[str]:
    """The modules these statements import (see :func:`imported_modules`)."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names
                      if _is_module(f"{node.module}.{alias.name}")}
    return names


def _is_module(name: str) -> bool:
    path = PACKAGE.parent / name.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


# Modules below every stage: they import nothing of graphdoctor (but each other), so any stage
# may use them.
GROUND = ["graphdoctor.errors", "graphdoctor.units", "graphdoctor.version",
          "graphdoctor.clean_text", "graphdoctor.columns", "graphdoctor.own_code",
          "graphdoctor.files",
          *sorted(f"graphdoctor.files.{p.stem}" for p in (PACKAGE / "files").glob("*.py")
                  if p.stem != "__init__")]


STAGES = ["trace", "facts", "diagnose", "report", "tui"]


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py")
                                        if "record" not in p.parts), ids=str)
def test_only_the_recorder_imports_torch(path: Path) -> None:
    heavy = {m for m in imported_modules(path) if m.split(".")[0] in ("torch", "nvtx", "pynvml")}
    assert not heavy


@pytest.mark.parametrize("stage", STAGES)
def test_stages_import_only_earlier_stages(stage: str) -> None:
    later = STAGES[STAGES.index(stage) + 1:] + ["record", "launch", "cli"]
    for path in (PACKAGE / stage).rglob("*.py"):
        for name in imported_modules(path):
            parts = name.split(".")
            assert not (parts[0] == "graphdoctor" and len(parts) > 1 and parts[1] in later), (
                f"{path.relative_to(PACKAGE)} imports {name}")


@pytest.mark.parametrize("module", GROUND)
def test_ground_modules_import_nothing_above_them(module: str) -> None:
    path = PACKAGE.parent / module.replace(".", "/")
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    ours = {m for m in imported_modules(path) if m.startswith("graphdoctor")}
    assert ours <= set(GROUND), ours


STAGE_FILES = sorted(p for stage in STAGES for p in (PACKAGE / stage).rglob("*.py"))


@pytest.mark.parametrize("path", STAGE_FILES, ids=str)
def test_a_stage_imports_from_the_package_root_only_ground_modules(path: Path) -> None:
    """``from graphdoctor import X``: X is a ground module, never the API (which imports the
    recorder and the report) reached through the package's lazy names."""
    stages = [*STAGES, "record", "launch", "cli"]
    rooted = {m for m in imported_modules(path) if m.count(".") == 1
              and m.startswith("graphdoctor.") and m.split(".")[1] not in stages}
    assert rooted <= set(GROUND), rooted


@pytest.mark.parametrize("path", sorted(p for p in (PACKAGE / "report").rglob("*.py")
                                        if "render" not in p.parts), ids=str)
def test_the_document_never_imports_its_renderers(path: Path) -> None:
    """report/ is the document (model, io, schema, redact, gates, diff); report/render/ draws
    it as text, markdown, Chrome trace and DOT: data flows one way between them too."""
    assert not [m for m in imported_modules(path) if m.startswith("graphdoctor.report.render")]


@pytest.mark.parametrize("init", sorted(PACKAGE.rglob("__init__.py")), ids=str)
def test_every_package_says_what_it_holds(init: Path) -> None:
    """A newcomer finds where a thing goes from the packages' docstrings (and the README)."""
    assert ast.get_docstring(ast.parse(init.read_text())), f"{init} has no docstring"


def module_level_imports(path: Path) -> set[str]:
    """The graphdoctor modules a file imports when it is imported: its body's imports, not
    those inside functions (imported when called) or under ``if TYPE_CHECKING:``."""
    names = _imported(ast.parse(path.read_text()).body)
    return {name for name in names if name.startswith("graphdoctor") and _is_module(name)}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, each a cycle's members (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            members = []
            while (member := stack.pop()) != module:
                members.append(member)
            if members:
                found.append(sorted([module, *members]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_modules_import_each_other_when_loaded() -> None:
    """A cycle of imports made when modules load breaks on the order they are first
    imported in; a package's own ``__init__`` importing its children is not one of them."""
    graph = {module_name(path): {name for name in module_level_imports(path)
                                 if not module_name(path).startswith(name + ".")}
             for path in PACKAGE.rglob("*.py")}
    assert import_cycles(graph) == []


def test_an_import_cycle_is_found() -> None:
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
