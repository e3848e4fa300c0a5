"""Everything the screens ask of one report, each answer computed on first use and kept.

Opening the app only reads what the Summary shows; the timeline's lanes, the allocation
totals and the graph timings are built when their screen first asks, so start-up stays
proportional to what is on screen, however big the run. No Textual import.
"""

from __future__ import annotations

import threading
from functools import cached_property

from graphdoctor.diagnose.model import SEVERITY_RANK, Evidence, Finding, Verdict
from graphdoctor.report.document import Report
from graphdoctor.trace.model import NONE, ExceptionRecord
from graphdoctor.trace.phases import PhaseIndex
from graphdoctor.tui.aggregate import AllocGroup, GraphRow, graph_rows, group_allocs
from graphdoctor.tui.events import (
    EventDetails,
    EventRef,
    describe,
    event_span,
    ref_from_evidence,
    stream_names,
)
from graphdoctor.tui.timeline_build import build_lanes
from graphdoctor.tui.timeline_lanes import Lane
from graphdoctor.tui.timeline_layout import Window, column_edges, run_window


class ReportView:
    """A report, and the derived data its screens show."""

    def __init__(self, report: Report, name: str = ""):
        self.report = report
        self.trace = report.trace
        self.name = name or report.trace.meta.target or "report"
        self._alloc_groups: dict[str, list[AllocGroup]] = {}
        self._lanes: list[Lane] | None = None
        self._lanes_lock = threading.Lock()  # built by a background worker or on first use

    # -- diagnosis ------------------------------------------------------------------------
    @cached_property
    def findings(self) -> list[Finding]:
        """Findings, most severe first (the order the report keeps them in, if it has one)."""
        return sorted(self.report.diagnosis.findings,
                      key=lambda f: (SEVERITY_RANK.get(f.severity, 3), f.sort_key))

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        return self.report.diagnosis.verdicts

    def evidence(self, finding: Finding) -> list[tuple[Evidence, EventRef | None]]:
        """Each piece of a finding's evidence with the event it names (None if missing)."""
        return [(item, ref_from_evidence(self.trace, item)) for item in finding.evidence]

    def finding_index(self, finding_id: str, graph: int = NONE) -> int | None:
        for index, finding in enumerate(self.findings):
            if finding.id == finding_id and (graph == NONE or finding.graph == graph):
                return index
        return None

    # -- the run --------------------------------------------------------------------------
    @cached_property
    def run_end(self) -> int:
        """The last recorded moment (the process's wall time includes its exit, after it)."""
        trace = self.trace
        ends = [trace.phases[-1].end] if trace.phases else []
        ends += [max(table.data["t"]) for table in trace.tables.values() if len(table)]
        ends += [item.t for items in (trace.exceptions, trace.compile_events, trace.warnings,
                                      trace.input_events) for item in items[-1:]]
        return max(ends) if ends else trace.status.wall_ns

    @cached_property
    def limits(self) -> Window:
        return run_window(self.run_end)

    @cached_property
    def phase_index(self) -> PhaseIndex:
        return PhaseIndex(self.trace.phases)

    @cached_property
    def streams(self) -> dict[int, str]:
        return stream_names(self.trace)

    @cached_property
    def raised(self) -> list[ExceptionRecord]:
        """What the user saw fail: uncaught exceptions, else the capture_end errors."""
        exceptions = self.trace.exceptions
        return ([e for e in exceptions if e.where == "uncaught"]
                or [e for e in exceptions if e.where == "capture_end"])

    # -- timeline -------------------------------------------------------------------------
    @property
    def lanes(self) -> list[Lane]:
        with self._lanes_lock:
            if self._lanes is None:
                self._lanes = build_lanes(self.trace, self.run_end)
            return self._lanes

    def prepare_timeline(self, width: int = 120) -> None:
        """Build the lanes and their running sums now, so the timeline opens at once."""
        edges = column_edges(self.limits, width)
        for lane in self.lanes:
            lane.rows(edges)

    def describe(self, ref: EventRef) -> EventDetails:
        return describe(self.trace, ref, self.streams)

    def span_of(self, ref: EventRef) -> tuple[int, int] | None:
        return event_span(self.trace, ref)

    def phase_at(self, t: int) -> str:
        return self.phase_index.phase_at(t)

    # -- tables ---------------------------------------------------------------------------
    def alloc_groups(self, by: str) -> list[AllocGroup]:
        if by not in self._alloc_groups:
            self._alloc_groups[by] = group_allocs(self.trace, by)
        return self._alloc_groups[by]

    @cached_property
    def graph_rows(self) -> list[GraphRow]:
        return graph_rows(self.trace)

    def verdict_for(self, graph: int) -> Verdict | None:
        return next((v for v in self.verdicts if v.graph == graph), None)
