"""The report of a recording still being made: what a live view shows every second.

Built as a finished recording's is (:func:`graphdoctor.report.recorded.report_of`), from
the traces of what the spools hold so far, with three differences that keep it from saying
what only the run's end can tell:

- its status is :data:`~graphdoctor.trace.endings.RUNNING`, not a run without its end record
  (nor a run that "ended before" the CUDA state, read at the end, was read);
- the rules that judge how a run ended (:data:`HELD_TILL_THE_END`: a hang, a teardown that
  never returned) wait for the end: every run is "in" its last collective while it runs;
- a graph still capturing has no verdict and no finding yet: it has not failed, it is not
  done.

Once the spools hold the parent's ``run_end``, the finished recording's own report replaces
this one.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from graphdoctor.diagnose.findings import Diagnosis, Rule
from graphdoctor.diagnose.rules import (
    ALL_RULES,
    gd404_distributed_hang,
    gd405_teardown_hang,
    gd406_process_hang,
)
from graphdoctor.errors import ReportError
from graphdoctor.report.document import Report
from graphdoctor.report.io import is_spool
from graphdoctor.report.recorded import report_of
from graphdoctor.report.source_lines import OwnRecording, RecordedElsewhere
from graphdoctor.trace.endings import RUNNING
from graphdoctor.trace.model import NONE, RunStatus, Trace
from graphdoctor.trace.names import CUDA_STATE_UNREAD, STILL_CAPTURING
from graphdoctor.trace.spool.follow import SpoolFollower

HELD_TILL_THE_END: frozenset[Rule] = frozenset({gd404_distributed_hang.RULE,
                                                gd405_teardown_hang.RULE,
                                                gd406_process_hang.RULE})
WHILE_RUNNING: tuple[Rule, ...] = tuple(r for r in ALL_RULES if r not in HELD_TILL_THE_END)


def live_report(traces: Mapping[int, Trace], lines: OwnRecording | RecordedElsewhere,
                running_ns: int) -> Report:
    """The report of the recording so far (``traces``: one a rank, keyed 0, 1...), which has
    run for ``running_ns``."""
    running = {rank: _running(trace, running_ns) for rank, trace in traces.items()}
    report = report_of(running, lines, rules=WHILE_RUNNING)
    report.diagnosis = _without_open_captures(report)
    return report


def _running(trace: Trace, running_ns: int) -> Trace:
    """The trace as a run still going on: running, and without the note of a CUDA state
    the run "ended before" reading (it is read at the end)."""
    notes = tuple(n for n in trace.meta.not_recorded if n.what != CUDA_STATE_UNREAD)
    return dataclasses.replace(
        trace, meta=dataclasses.replace(trace.meta, not_recorded=notes),
        status=RunStatus(reason=RUNNING, message="the script is still running",
                         wall_ns=running_ns, last_phase=trace.status.last_phase))


def _without_open_captures(report: Report) -> Diagnosis:
    """The diagnosis less the verdicts and findings of graphs still capturing."""
    ranks = report.ranks or [NONE]
    open_graphs = {(rank, g.id) for rank in ranks for g in report.trace_of(rank).graphs
                   if g.status == STILL_CAPTURING}
    if not open_graphs:
        return report.diagnosis

    def still_open(rank: int, graph: int) -> bool:
        return (rank if report.ranks else NONE, graph) in open_graphs

    return Diagnosis(
        verdicts=tuple(v for v in report.diagnosis.verdicts if not still_open(v.rank, v.graph)),
        findings=tuple(f for f in report.diagnosis.findings if not still_open(f.rank, f.graph)))


class LiveFeed:
    """The spools of one run (one a rank), followed: each :meth:`look` reads what they
    gained and gives the report of all they hold then. ``own``: graphdoctor's own run
    (``run --live``), whose script's files may be read for its lines; else a spool another
    process writes (``view --follow``), read as a stranger's. ``cost_s``: how long the
    last look took."""

    def __init__(self, spools: Sequence[str | os.PathLike[str]], *, own: bool) -> None:
        self.followers = [SpoolFollower(spool, limited=not own) for spool in spools]
        self.own = own
        self.started = time.monotonic_ns()
        self.cost_s = 0.0
        self.report: Report | None = None
        self._lines: OwnRecording | None = None

    @property
    def ended(self) -> bool:
        """Every spool holds its run's end: the recording is complete."""
        return all(follower.ended for follower in self.followers)

    def look(self) -> Report | None:
        """The report of the recording so far; None while nothing new came since the last
        (or nothing at all yet). OSError where a spool cannot be read; TooLarge where a
        stranger's outgrows its budget."""
        start = time.perf_counter()
        read = self.read()
        if not read and (self.report is not None or not self._any()):
            return None
        self.report = self.build()
        self.cost_s = time.perf_counter() - start
        return self.report

    def read(self) -> int:
        """Take what the spools gained; how many records."""
        return sum(follower.read() for follower in self.followers)

    def build(self) -> Report:
        """The report of all the spools hold (what they hold of a run still going on: a
        live report)."""
        traces = {rank: f.trace() for rank, f in enumerate(self.followers) if f.records}
        lines = self._lines_for(traces)
        return report_of(traces, lines) if self.ended else \
            live_report(traces, lines, self._running_ns(traces))

    def _any(self) -> bool:
        return any(follower.records for follower in self.followers)

    def _lines_for(self, traces: Mapping[int, Trace]) -> OwnRecording | RecordedElsewhere:
        """One reader of the script's files for the whole run (each file read once); a
        stranger's recording's lines only as the digests it holds allow."""
        if not self.own:
            return RecordedElsewhere(t.meta for t in traces.values())
        if self._lines is None:
            self._lines = OwnRecording(next(iter(traces.values())).meta)
        return self._lines

    def _running_ns(self, traces: Mapping[int, Trace]) -> int:
        """How long the run has gone on: since this feed began, for graphdoctor's own run;
        else as far as its records reach."""
        if self.own:
            return time.monotonic_ns() - self.started
        return max((p.end for t in traces.values() for p in t.phases), default=0)


def follow_spools(spools: Sequence[Path]) -> LiveFeed:
    """The feed of spools another process is writing (``view --follow``), each checked to
    be a regular file that starts as a spool does (a report file is opened without
    --follow; a device or a FIFO is never waited on)."""
    for spool in spools:
        if not spool.is_file():
            why = "no such file" if not spool.exists() else "not a regular file"
            raise ReportError(f"{spool}: {why}; --follow reads a recording (a spool) as it grows")
        if spool.stat().st_size and not is_spool(spool):
            raise ReportError(f"{spool}: not a recording (a spool); open a report without "
                              "--follow")
    return LiveFeed(spools, own=False)
