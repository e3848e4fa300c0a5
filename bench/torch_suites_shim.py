"""A pytest plugin for ``bench/torch_suites.py``: lets a test file of a newer PyTorch import
on the torch installed. Each name the file imports from a torch module that this torch lacks
gets a stand-in: false as a condition, and as a decorator it returns what it decorates, so a
skip condition reads "not supported" and a helper decorator changes nothing. A test that
calls a stand-in fails, on both sides of the comparison alike (both load this plugin). The
names stood in for are printed at the start, and end up in each side's log."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path
from typing import Any


class Missing:
    """What the test file imported and this torch lacks."""

    def __init__(self, name: str):
        self.name = name

    def __bool__(self) -> bool:
        return False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator
        return self  # used as a decorator factory: the decorator is this again

    def __repr__(self) -> str:
        return f"<missing {self.name}>"


# names this torch has under another name: the newer one first
RENAMED = {"HAS_CUDA": "HAS_CUDA_AND_TRITON", "HAS_GPU": "HAS_GPU_AND_TRITON"}


def stand_in(path: Path) -> list[str]:
    """Give each name ``path`` imports from a torch module that lacks it a stand-in."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    added = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("torch"):
            continue
        try:
            module = importlib.import_module(node.module or "")
        except ImportError:
            continue
        for alias in node.names:
            if alias.name == "*" or hasattr(module, alias.name):
                continue
            renamed = RENAMED.get(alias.name, "")
            if hasattr(module, renamed):
                setattr(module, alias.name, getattr(module, renamed))
                added.append(f"{node.module}.{alias.name} (as {renamed})")
            else:
                setattr(module, alias.name, Missing(f"{node.module}.{alias.name}"))
                added.append(f"{node.module}.{alias.name}")
    return added


def pytest_configure(config: Any) -> None:
    for arg in config.args:
        path = Path(str(arg).split("::")[0])
        if path.suffix == ".py" and path.is_file():
            for name in stand_in(path):
                print(f"torch_suites_shim: {path.name}: no {name} in this torch, stood in for",
                      file=sys.stderr)


def pytest_runtest_logreport(report: Any) -> None:
    """A failure's message printed as it happens: a process that dies later (a segfault)
    never reaches pytest's summary."""
    if report.failed:
        text = str(getattr(report, "longreprtext", ""))[-1500:]
        print(f"\ntorch_suites_shim: {report.nodeid} {report.when} failed:\n{text}",
              file=sys.stderr, flush=True)
