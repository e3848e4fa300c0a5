"""Start recording when the script first imports torch, not before.

Importing torch is the script's to do: done earlier by graphdoctor, it would print what
torch prints on import (its NumPy warning, for one) in runs of scripts that never import it,
and cost them its seconds. A finder on ``sys.meta_path`` waits for the import of ``torch``,
lets it run exactly as it would, and calls back once the module has executed: every later
line of the script then runs recorded. Scripts that import torch on their first line, which
is nearly all, are recorded from that line on, as before.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

TORCH = "torch"


def call_when_imported(callback: Callable[[], None]) -> None:
    """Call ``callback`` once torch is imported: now if it already is."""
    if TORCH in sys.modules:
        callback()
        return
    sys.meta_path.insert(0, _TorchFinder(callback))


class _TorchFinder(importlib.abc.MetaPathFinder):
    def __init__(self, callback: Callable[[], None]):
        self._callback = callback
        self._finding = False

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name != TORCH or self._finding:
            return None
        self._finding = True
        try:
            spec = importlib.util.find_spec(TORCH)  # the other finders, as without us
        finally:
            self._finding = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ThenCall(spec.loader, self._done)
        return spec

    def _done(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self._callback()


class _ThenCall(importlib.abc.Loader):
    """The real loader; once the module has executed, its loader is the real one again and
    the callback runs."""

    def __init__(self, loader: Any, then: Callable[[], None]):
        self._loader = loader
        self._then = then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._then()
