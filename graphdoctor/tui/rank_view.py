"""What the screens ask of one trace (the whole run, or one rank of a distributed run), each
answer computed on first use and kept. No Textual import.
"""

from __future__ import annotations

from functools import cached_property

from graphdoctor.trace import tallies
from graphdoctor.trace.model import NONE, ExceptionRecord, Trace
from graphdoctor.trace.phases import PhaseIndex
from graphdoctor.trace.stream_names import stream_names
from graphdoctor.tui.aggregate import AllocGroup, GraphRow, graph_rows, group_allocs
from graphdoctor.tui.events import EventDetails, EventRef, describe, event_span
from graphdoctor.tui.timeline.build import build_lanes
from graphdoctor.tui.timeline.findings import under_phases
from graphdoctor.tui.timeline.lanes import Lane
from graphdoctor.tui.timeline.ranks import rank_lanes


class RankView:
    """One trace and the data derived from it; ``rank`` is -1 in a single-process report."""

    def __init__(self, trace: Trace, rank: int = NONE):
        self.trace = trace
        self.rank = rank
        self._alloc_groups: dict[str, list[AllocGroup]] = {}

    @cached_property
    def run_end(self) -> int:
        """The last recorded moment (the process's wall time includes its exit, after it)."""
        trace = self.trace
        ends = [trace.phases[-1].end] if trace.phases else []
        ends += [max(table.data["t"]) for table in trace.tables.values() if len(table)]
        ends += [item.t for items in (trace.exceptions, trace.compile_events, trace.warnings,
                                      trace.input_events, trace.teardown) for item in items[-1:]]
        return max(ends) if ends else trace.status.wall_ns

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

    @cached_property
    def devices(self) -> list[int]:
        return tallies.used_devices(self.trace)

    def phase_at(self, t: int) -> str:
        return self.phase_index.phase_at(t)

    def describe(self, ref: EventRef) -> EventDetails:
        return describe(self.trace, ref, self.streams)

    def span_of(self, ref: EventRef) -> tuple[int, int] | None:
        return event_span(self.trace, ref)

    def lanes(self, findings: Lane | None = None) -> list[Lane]:
        """The trace's lanes, with the markers of its findings (see timeline_findings) under
        its phases; a rank's are tagged with it (see timeline_ranks)."""
        lanes = build_lanes(self.trace, self.run_end)
        if findings is not None:
            lanes = under_phases(lanes, findings)
        return lanes if self.rank == NONE else rank_lanes(self.rank, lanes, self.devices)

    def alloc_groups(self, by: str) -> list[AllocGroup]:
        if by not in self._alloc_groups:
            self._alloc_groups[by] = group_allocs(self.trace, by, self.rank)
        return self._alloc_groups[by]

    @cached_property
    def graph_rows(self) -> list[GraphRow]:
        return graph_rows(self.trace, self.rank)
