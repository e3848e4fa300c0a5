"""graphdoctor's ``sitecustomize``: Python imports it at the start of each process started
below a script under ``graphdoctor run``, whose ``PYTHONPATH`` has this folder first
(:mod:`graphdoctor.record.processes.follow`).

It takes this folder off ``sys.path``, has the process recorded once it imports torch (where
it can import the graphdoctor this file belongs to), and then runs the ``sitecustomize`` the
process would have run without it, found on the rest of ``sys.path``, as that module: an
error there is the process's own, and ``site`` reports it as it would. Where there is none,
this module fails to import as a missing ``sitecustomize`` does, so nothing of it stays in
``sys.modules``.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

_HERE = os.path.dirname(os.path.abspath(__file__))
# The folder that holds the graphdoctor package this file is part of.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_HERE))))
_NAME = "sitecustomize"


def _is_here(entry: object) -> bool:
    try:
        return isinstance(entry, str) and os.path.abspath(entry) == _HERE
    except (TypeError, ValueError):  # a NUL in the entry
        return False


def _follow() -> None:
    """Have the process watched for its import of torch; nothing that fails here may reach
    the process."""
    try:
        if "GRAPHDOCTOR_FOLLOW" not in os.environ:
            return
        if "graphdoctor" not in sys.modules:
            _load("graphdoctor", [_ROOT])
        from graphdoctor.record.processes import follow

        follow.watch()
    except Exception:  # noqa: BLE001 - the process runs on, unrecorded, as without it
        for name in [m for m in sys.modules if m.partition(".")[0] == "graphdoctor"]:
            del sys.modules[name]


def _load(name: str, path: list[str]) -> ModuleType | None:
    """Import top-level module ``name`` from ``path`` only, as the import system would;
    None where it is not there."""
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


sys.path[:] = [entry for entry in sys.path if not _is_here(entry)]
_follow()
if _load(_NAME, list(sys.path)) is None:
    raise ImportError(f"No module named {_NAME!r}", name=_NAME)
