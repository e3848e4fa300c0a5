"""Following the Python processes the script starts: a child ``python`` (``subprocess`` with
``sys.executable``), ``multiprocessing``'s spawned processes, the ranks of a ``torchrun`` the
script runs, and theirs in turn.

A recording process (the script's, each rank's) offers recording to every process it starts,
through the environment those inherit: :func:`offer` puts :data:`SITE_FOLDER` first on
``PYTHONPATH`` and this recording's spool and mode in ``GRAPHDOCTOR_FOLLOW``. It does so
once it has started, so its own ``sys.path`` is as it was; what the script sees is one more
folder on ``os.environ["PYTHONPATH"]``. A Python that starts with that folder on its path
imports the ``sitecustomize`` module there, which takes the folder off ``sys.path`` again,
calls :func:`watch` (where it can import this graphdoctor) and then runs the
``sitecustomize`` the process would have run without it. :func:`watch` waits for the process
to import torch, as the script's process does, and only then records it
(:mod:`graphdoctor.record.processes.followed`): a process that never imports torch (a shell helper,
a
compiler, pip) is not recorded, and its only trace of graphdoctor is that import.

Not followed: a process whose environment is not inherited (``env={...}`` without
``PYTHONPATH``), a Python that ignores it (``-E``, ``-I``) or runs no ``site`` (``-S``), one
that cannot import this graphdoctor, graphdoctor's own recording processes (a ``graphdoctor
run`` inside the script records its own), torch's own helper processes (its compile
workers and autotuning benchmarks, which run a script of torch's), and a process made by
``fork`` (a DataLoader worker, multiprocessing's ``fork`` and ``forkserver`` workers):
that copy of a recording process stops recording (:func:`graphdoctor.record.recorder.
register_fork_guard`).

Torch-free and light at import (what it needs to record is imported once torch is): it is
imported in every Python process started below the script.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from graphdoctor.launch.child_process import CHILD_ENV, FOLLOW_ENV
from graphdoctor.record.on_torch_import import call_when_imported

if TYPE_CHECKING:
    from graphdoctor.files.run_files import RunFiles

SITE_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "follow_site")
PYTHONPATH = "PYTHONPATH"


def offer(files: RunFiles, mode: str,
          environ: MutableMapping[str, str] = os.environ) -> None:
    """Have the processes this one starts recorded too, each into a spool named from
    ``files``' (this recording process's own)."""
    environ[FOLLOW_ENV] = json.dumps({"spool": str(files.spool), "mode": mode})
    paths = [p for p in environ.get(PYTHONPATH, "").split(os.pathsep) if p]
    if SITE_FOLDER not in paths:
        environ[PYTHONPATH] = os.pathsep.join([SITE_FOLDER, *paths])


def withdraw(environ: MutableMapping[str, str] = os.environ) -> None:
    """Follow nothing this process starts (``--no-children``), even where a graphdoctor run
    above this one follows its own children."""
    environ.pop(FOLLOW_ENV, None)
    paths = environ.get(PYTHONPATH, "").split(os.pathsep)
    if SITE_FOLDER in paths:
        kept = [p for p in paths if p != SITE_FOLDER]
        if any(kept):
            environ[PYTHONPATH] = os.pathsep.join(kept)
        else:
            del environ[PYTHONPATH]


def settings(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The settings this process was offered, or None where it is not to be followed: none
    offered, or it is one of graphdoctor's own recording processes."""
    if CHILD_ENV in environ:
        return None
    try:
        offered = json.loads(environ[FOLLOW_ENV])
        return {"spool": str(offered["spool"]), "mode": str(offered["mode"])}
    except (KeyError, TypeError, ValueError):
        return None


def watch(environ: Mapping[str, str] = os.environ) -> None:
    """In a process started below the script (from ``sitecustomize``): record it once it
    imports torch, if it was offered recording. Nothing it does may reach the process: every
    failure ends in a note in its spool, or nowhere."""
    offered = settings(environ)
    if offered is not None:
        call_when_imported(lambda: _start(offered))


def _start(offered: dict[str, Any]) -> None:
    try:
        from graphdoctor.record.processes import followed

        followed.start(offered["spool"], offered["mode"])
    except Exception:  # noqa: BLE001 - the process runs on, unrecorded
        return


def own_helper(script: str, torch_folder: str) -> bool:
    """Whether the process runs a script of torch's own (its compile workers, autotuning
    benchmarks): nothing of the user's code runs there."""
    if not script or script.startswith("-"):
        return False
    real = os.path.realpath(script)
    return real.startswith(os.path.realpath(torch_folder) + os.sep)

