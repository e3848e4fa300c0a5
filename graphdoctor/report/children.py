"""The processes the script started, recorded with it (:mod:`graphdoctor.record.processes.follow`).

Each is a report of its own inside the run's (``Report.children``): its trace, diagnosed on
its own (a rule that compares ranks compares the ranks of the run, never a child with them),
and the source lines its findings cite. Everything that speaks of a child names it by its
label: its pid, its rank where it joined a process group (the ranks of a ``torchrun`` the
script ran), and its command line, shortened: ``child 12345 (python -c 'import torch...')``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from graphdoctor.errors import GraphDoctorError
from graphdoctor.trace.model import Meta

if TYPE_CHECKING:
    from graphdoctor.report.document import Report

COMMAND_WIDTH = 60  # characters of a child's command line in its label


def label(meta: Meta) -> str:
    """How reports name the process ``meta`` is of."""
    rank = f", rank {meta.rank}" if meta.backend and meta.rank >= 0 else ""
    return f"child {meta.pid}{rank} ({command(meta.command)})"


def command(parts: Sequence[str], width: int = COMMAND_WIDTH) -> str:
    """A command line to read, not to paste: on one line, its program by name alone, an
    argument with spaces in double quotes, cut to ``width``."""
    if not parts:
        return "?"
    words = [os.path.basename(parts[0]), *(f'"{p}"' if not p or " " in p else p
                                            for p in parts[1:])]
    text = " ".join(" ".join(words).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def ordered(children: Sequence[Report]) -> list[Report]:
    """In the order they started recording (their pids, where the clock was not read)."""
    return sorted(children, key=lambda c: (c.trace.meta.clock_unix_ns, c.trace.meta.pid))


def started_by(report: Report, child: Report) -> str:
    """Who started the child: the script (or its rank), another child, or a process
    graphdoctor did not record (a shell between them, ``torchrun``'s launcher)."""
    parent = child.trace.meta.parent_pid
    if parent == report.trace.meta.pid and parent >= 0:
        return "the rank 0 process" if report.other_ranks else "the script"
    for rank, trace in report.other_ranks.items():
        if trace.meta.pid == parent:
            return f"the rank {rank} process"
    others = [c for c in report.children if c.trace.meta.pid == parent]
    return label(others[0].trace.meta) if others else f"process {parent}"


def noteworthy(child: Report) -> bool:
    """Whether a child has more to show than its name: a verdict, a finding, a graph, an
    exception, or an end other than its own."""
    trace = child.trace
    return bool(child.diagnosis.verdicts or child.diagnosis.findings or trace.graphs
                or trace.exceptions) or not trace.status.complete


def child_report(report: Report, pid: int) -> Report:
    """The report of process ``pid``, one the script started, as a report of its own;
    GraphDoctorError where the report recorded no such process."""
    for child in report.children:
        if child.trace.meta.pid == pid:
            return child
    recorded = ", ".join(str(child.trace.meta.pid) for child in report.children)
    raise GraphDoctorError(f"no process {pid} among those the script started in this report "
                           f"({'pids ' + recorded if recorded else 'it recorded none'})")
