"""Reports built from the committed GPU recordings, as ``graphdoctor run`` would have
written them, with source lines read from this checkout's copies of the scripts."""

from __future__ import annotations

import dataclasses
import functools
import linecache
import re
from pathlib import Path

import pytest

from graphdoctor.diagnose import diagnose, diagnose_ranks
from graphdoctor.files.run_files import RunFiles, is_process_spool
from graphdoctor.report.document import Report, build, build_ranks
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import CHILD_TARGET
from tests.conftest import RECORDINGS, ROOT

SCRIPTS = ROOT / "fixtures" / "scripts"
_SPOOL = re.compile(r"^(?P<name>.+?)(?:\.rank(?P<rank>\d+))?\.spool\.jsonl\.gz$")


def spools(directory: Path = RECORDINGS) -> dict[str, dict[int, Path]]:
    """scenario -> {rank: spool}; a single-process recording is rank 0. The spools of the
    processes a script started are the scenario's too (:func:`child_traces_for`)."""
    found: dict[str, dict[int, Path]] = {}
    for path in directory.glob("*.spool.jsonl.gz"):
        match = _SPOOL.match(path.name)
        if match and not is_process_spool(path):
            found.setdefault(match["name"], {})[int(match["rank"] or 0)] = path
    return found


# Scenarios whose script is written but whose GPU recording is not made yet: their checks
# skip until fixtures/record.py has recorded them (then they leave this set).
# The cuTile scenarios need a GPU cuTile compiles for: its tileiras (13.4 and 13.5) fails on
# Hopper (sm_90, the lent H100/H200), see fixtures/README.md.
# The silent-harm scenarios of round two and their twins wait for their first recording.
AWAITING_RECORDING: frozenset[str] = frozenset({
    "cutile_layer_stack", "cutile_host_read_in_capture", "cutile_new_input_buffer",
    "compile_cpu_index_input", "native_memcpy_in_capture", "native_memcpy_async_in_capture"})


def child_traces_for(name: str, directory: Path = RECORDINGS) -> list[Trace]:
    """The traces of the processes scenario ``name``'s script started, by pid."""
    kept = RunFiles(directory / f"{name}.spool.jsonl.gz")
    return [assemble_file(files.spool) for _, files in kept.children()]


def scenario_names() -> list[str]:
    return sorted(spools())


def unrecorded(name: str) -> bool:
    """Whether a scenario is still awaiting its first recording."""
    return name in AWAITING_RECORDING and name not in spools()


def scenario_params(names: list[str]) -> list[object]:
    """Scenario names for parametrize; one still awaiting its recording is skipped."""
    skip = pytest.mark.skip(reason="not recorded yet: run fixtures/record.py on a GPU")
    return [pytest.param(name, marks=skip) if unrecorded(name) else name for name in names]


def is_distributed(name: str) -> bool:
    return len(spools()[name]) > 1


@functools.cache
def traces_for(name: str, directory: Path = RECORDINGS) -> dict[int, Trace]:
    return {rank: assemble_file(path) for rank, path in spools(directory)[name].items()}


def trace_for(name: str) -> Trace:
    """The scenario's trace (the lowest rank's, for a distributed one)."""
    traces = traces_for(name)
    return traces[min(traces)]


def local_line(file: str, number: int) -> str:
    """A line of a recorded script: the GPU machine's path mapped into this checkout."""
    local = SCRIPTS / Path(file).name
    return linecache.getline(str(local) if local.exists() else file, number)


def report_for(name: str) -> Report:
    traces = traces_for(name)
    if len(traces) == 1:
        trace = next(iter(traces.values()))
        return build(trace, diagnose(trace, read_line=local_line), read_line=local_line)
    return build_ranks(traces, diagnose_ranks(traces, read_line=local_line), read_line=local_line)


def as_child(report: Report, pid: int, parent: int,
             command: tuple[str, ...] = ("/usr/bin/python3", "-u", "item_in_capture.py")
             ) -> Report:
    """``report``, a recording of its own, named as a process a script started: for the
    tests of what reports show of the processes a script started."""
    meta = dataclasses.replace(report.trace.meta, target_kind=CHILD_TARGET, pid=pid,
                               parent_pid=parent, command=command, argv=())
    return dataclasses.replace(report, trace=dataclasses.replace(report.trace, meta=meta))
