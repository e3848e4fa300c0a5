"""What the screens ask of one trace (the whole run, or one rank of a distributed run), each
answer computed on first use and kept. No Textual import.
"""

from __future__ import annotations

import dataclasses
from functools import cached_property

from graphdoctor.facts import tallies
from graphdoctor.facts.stream_names import stream_names
from graphdoctor.trace.model import NONE, ExceptionRecord, Graph, Trace
from graphdoctor.trace.phases import PhaseIndex
from graphdoctor.tui.aggregate import AllocGroup, GraphRow, graph_rows, group_allocs
from graphdoctor.tui.events import EventDetails, EventRef, describe, event_span
from graphdoctor.tui.timeline.build import build_lanes
from graphdoctor.tui.timeline.findings import under_phases
from graphdoctor.tui.timeline.lanes import Lane
from graphdoctor.tui.timeline.ranks import rank_lanes, shift_lanes


class RankView:
    """One trace and the data derived from it; ``rank`` is -1 in a single-process report.

    ``offset``: where the trace's time 0 lies on the job's time axis, which the timeline
    draws every rank on. Its lanes and the spans, details and capture windows it gives are
    on that axis; what is asked of it at a moment (``phase_at``) is moved back."""

    def __init__(self, trace: Trace, rank: int = NONE, offset: int = 0):
        self.trace = trace
        self.rank = rank
        self.offset = offset
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

    @property
    def end_on_axis(self) -> int:
        return self.run_end + self.offset

    def phase_at(self, t: int) -> str:
        return self.phase_index.phase_at(t - self.offset)

    def describe(self, ref: EventRef) -> EventDetails:
        details = describe(self.trace, ref, self.streams)
        if not self.offset:
            return details
        return dataclasses.replace(details, start=_moved(details.start, self.offset),
                                   end=_moved(details.end, self.offset))

    def span_of(self, ref: EventRef) -> tuple[int, int] | None:
        span = event_span(self.trace, ref)
        return None if span is None else (span[0] + self.offset, span[1] + self.offset)

    def capture_window(self, graph: Graph) -> tuple[int, int]:
        """A capture's [start, end] on the job's axis."""
        start, end = capture_window(graph, self.run_end)
        return start + self.offset, end + self.offset

    def lanes(self, findings: Lane | None = None) -> list[Lane]:
        """The trace's lanes, with the markers of its findings (see timeline_findings) under
        its phases; a rank's are tagged with it (see timeline_ranks)."""
        lanes = build_lanes(self.trace, self.run_end)
        shift_lanes(lanes, self.offset)  # before the findings, whose spans are moved already
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


def _moved(t: int | None, offset: int) -> int | None:
    return None if t is None else t + offset


def capture_window(graph: Graph, run_end: int) -> tuple[int, int]:
    """The capture's [start, end]; one that never ended runs to the end of the recording."""
    end = graph.capture_end if graph.capture_end != NONE else run_end
    return graph.capture_start, max(end, graph.capture_start + 1)
