"""What the in-process API's tests share: the torch attributes the recorder patches, and one
recording made before any test, so that every module a recording imports is imported by
then (pytester's in-process runs remove the modules they import when they end, and torch's
own cannot be imported twice)."""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import graphdoctor.pytest_plugin  # noqa: E402,F401 - imported once, before pytester's runs
from graphdoctor import api  # noqa: E402
from graphdoctor.record import compat  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def imported_by_a_recording(tmp_path_factory: pytest.TempPathFactory) -> None:
    with api.recording(tmp_path_factory.mktemp("warm-up")):
        pass


def patched_owners() -> list[Any]:
    """Every object a source of the recorder patches attributes of (graphdoctor.record)."""
    owners: list[Any] = [torch, torch.cuda, torch.cuda.CUDAGraph, torch.cuda.graph,
                         torch.cuda.Stream, torch.cuda.Event, torch.cuda.StreamContext]
    if torch.distributed.is_available():
        owners += [torch.distributed, compat.c10d_module()]
    return owners


def torch_as_it_is() -> dict[tuple[int, str], Any]:
    """Each attribute of the patched objects, by owner and name; and the process-wide hooks
    the recorder replaces (sys.meta_path's finder is the child's alone)."""
    found: dict[tuple[int, str], Any] = {}
    for index, owner in enumerate(patched_owners()):
        found.update({(index, name): value for name, value in vars(owner).items()})
    found[(-1, "threading.excepthook")] = threading.excepthook
    found[(-1, "warnings.showwarning")] = warnings.showwarning
    found[(-1, "warnings.filters")] = tuple(warnings.filters)
    return found


def changed_since(before: dict[tuple[int, str], Any]) -> list[tuple[int, str]]:
    after = torch_as_it_is()
    return [key for key, value in before.items()
            if after.get(key, value) is not value and after.get(key, value) != value]


def open_spools() -> list[str]:
    """Files this process holds open whose name says they are spools."""
    folder = Path("/proc/self/fd")
    if not folder.is_dir():
        return []
    names = []
    for fd in os.listdir(folder):
        try:
            names.append(os.readlink(folder / fd))
        except OSError:
            continue
    return [name for name in names if ".spool" in name]


def monitoring_tools_in_use() -> list[int]:
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return []
    return [tool for tool in range(6) if monitoring.get_tool(tool) is not None]


@pytest.fixture
def untouched_torch() -> Iterator[dict[tuple[int, str], Any]]:
    """Torch as it was before the test; the test fails if the recorder left anything."""
    from graphdoctor.record import session

    before, tools, spools = torch_as_it_is(), monitoring_tools_in_use(), open_spools()
    yield before
    assert changed_since(before) == []
    assert session.running() is None
    assert open_spools() == spools  # those of other tests' recorders, if they left any
    assert monitoring_tools_in_use() == tools
