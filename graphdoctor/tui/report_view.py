"""Everything the screens ask of one report, each answer computed on first use and kept.

Opening the app only reads what the Summary shows; the timeline's lanes, the allocation
totals and the graph timings are built when their screen first asks, so start-up stays
proportional to what is on screen, however big the run. No Textual import.

A distributed run's report holds a trace per rank. Each has its own :class:`RankView`;
what names an event, a graph or a finding carries the rank it belongs to, and
:meth:`ReportView.of` finds that rank's trace. In a single-process report every rank is -1.
"""

from __future__ import annotations

import dataclasses
import threading
from functools import cached_property

from graphdoctor.diagnose.findings import SEVERITY_RANK, Evidence, Finding, Verdict
from graphdoctor.fix.files import recorded_files
from graphdoctor.fix.plan import Plan, diff_of, plan
from graphdoctor.report import rank_groups
from graphdoctor.report.disk_lines import ReportSources
from graphdoctor.report.document import Report
from graphdoctor.report.finding_groups import FindingGroup, finding_groups
from graphdoctor.trace.model import NONE, Trace
from graphdoctor.tui.aggregate import AllocGroup, GraphRow
from graphdoctor.tui.events import EventDetails, EventRef, ref_from_evidence
from graphdoctor.tui.live_facts import LiveFacts
from graphdoctor.tui.rank_view import RankView
from graphdoctor.tui.same_line import SameLine, same_line
from graphdoctor.tui.timeline.findings import (
    FINDINGS,
    Problem,
    findings_lane,
    marker_details,
    of_rank,
    place_evidence,
)
from graphdoctor.tui.timeline.lanes import Lane
from graphdoctor.tui.timeline.layout import Window, column_edges, run_window

GraphKey = tuple[int, int]
"""A graph as the Graphs screen is asked to show it: (rank, graph id)."""


class ReportView:
    """A report, and the derived data its screens show."""

    def __init__(self, report: Report, name: str = "", live: LiveFacts | None = None):
        self.report = report
        self.live = live  # a live view's: the recording is read as it grows
        self.trace = report.trace  # the main (lowest) rank's, or the only one
        self.name = name or report.trace.meta.target or "report"
        self.ranks: list[int] = report.ranks  # [] for a single-process run
        # the job's time axis, every rank's times moved onto it (facts.job_clock)
        self.clock = clock = rank_groups.clock_of(report)
        self.rank_views = {rank: RankView(report.trace_of(rank), rank, clock.offset(rank))
                           for rank in self.ranks} or {NONE: RankView(report.trace)}
        self._lanes: list[Lane] | None = None
        self._lanes_lock = threading.Lock()  # built by a background worker or on first use
        self._same_line: tuple[EventRef, SameLine | None] | None = None  # the last selection's

    # -- source lines ---------------------------------------------------------------------
    @cached_property
    def sources(self) -> ReportSources:
        """The lines the report kept and, for a line it did not keep, its file's as read
        from disk where the rule for a stranger's recording allows (once, on first need)."""
        return ReportSources(self.report)

    # -- patches --------------------------------------------------------------------------
    @cached_property
    def patches(self) -> Plan:
        """graphdoctor fix's patches, its files read as it reads them (once, when first
        asked for: a report opened only to look reads nothing from disk before)."""
        return plan(self.report, recorded_files(self.report))

    def patch_of(self, finding: Finding) -> str:
        """The diff of the finding's patch, or "" where it has none."""
        return diff_of(self.patches, finding)

    # -- ranks ----------------------------------------------------------------------------
    @property
    def multi_rank(self) -> bool:
        return bool(self.ranks)

    def rank_key(self, rank: int) -> int:
        """How this view names ``rank``: -1 in a single-process report; in a multi-rank one,
        the rank itself, with -1 (or a rank the report lacks) meaning the main rank, as in
        :meth:`Report.trace_of`."""
        if not self.ranks:
            return NONE
        return rank if rank in self.rank_views else self.ranks[0]

    def of(self, rank: int) -> RankView:
        return self.rank_views[self.rank_key(rank)]

    def trace_of(self, rank: int) -> Trace:
        return self.of(rank).trace

    # -- diagnosis ------------------------------------------------------------------------
    @cached_property
    def finding_groups(self) -> list[FindingGroup]:
        """Findings, most severe first (the order the report keeps them in, if it has one),
        those alike on several ranks as one (:mod:`graphdoctor.report.finding_groups`)."""
        return finding_groups(sorted(self.report.diagnosis.findings,
                                     key=lambda f: (SEVERITY_RANK.get(f.severity, 3),
                                                    f.sort_key)))

    @cached_property
    def findings(self) -> list[Finding]:
        """What the screens list: one finding a group, its evidence every member's."""
        return [group.finding for group in self.finding_groups]

    @cached_property
    def _group_of(self) -> dict[int, FindingGroup]:
        return {id(group.finding): group for group in self.finding_groups}

    def ranks_of(self, finding: Finding) -> tuple[int, ...]:
        """The ranks a finding of :attr:`findings` stands for (its own for any other)."""
        group = self._group_of.get(id(finding))
        return group.ranks if group is not None and group.ranks else (finding.rank,)

    def on_rank(self, finding: Finding, rank: int) -> bool:
        """Whether the finding (a group's: any of its members) is of ``rank``."""
        return self.rank_key(rank) in {self.rank_key(r) for r in self.ranks_of(finding)}

    def whose(self, finding: Finding, figures: bool = True) -> str:
        """The ranks a finding is listed with ("rank 3", "ranks 0-2", and with ``figures``
        "ranks 0-63, the figures rank 0's" where theirs differ); "" in a single-process
        report."""
        if not self.multi_rank:
            return ""
        group = self._group_of.get(id(finding))
        if group is None or not group.ranks:
            return f"rank {self.rank_key(finding.rank)}"
        return group.whose if figures else group.named

    def members(self, finding: Finding) -> tuple[Finding, ...]:
        """Each rank's own finding that a finding of :attr:`findings` stands for."""
        group = self._group_of.get(id(finding))
        return group.members if group is not None else (finding,)

    def evidence(self, finding: Finding) -> list[tuple[Evidence, EventRef | None]]:
        """Each piece of a finding's evidence with the event it names (None if missing).
        Evidence that names no rank is taken to be in its finding's rank's trace."""
        pairs = []
        for item in finding.evidence:
            rank = self.rank_key(item.rank if item.rank != NONE else finding.rank)
            pairs.append((item, ref_from_evidence(self.of(rank).trace, item, rank)))
        return pairs

    def finding_index(self, finding_id: str, graph: int = NONE, rank: int = NONE) -> int | None:
        for index, finding in enumerate(self.findings):
            if finding.id == finding_id and (graph == NONE or finding.graph == graph) \
                    and (rank == NONE or self.on_rank(finding, rank)):
                return index
        return None

    @cached_property
    def problems(self) -> list[Problem]:
        """Every finding's evidence that the traces hold, in time order (all ranks)."""
        return place_evidence([[ref for _, ref in self.evidence(finding)]
                               for finding in self.findings], self.span_of)

    def problem_at(self, marker: EventRef) -> Problem:
        """The evidence a marker on a Findings lane stands for."""
        return of_rank(self.problems, self.rank_key(marker.rank))[marker.index]

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        return self.report.diagnosis.verdicts

    def verdict_for(self, graph: int, rank: int = NONE) -> Verdict | None:
        return next((v for v in self.verdicts if v.graph == graph
                     and self.rank_key(v.rank) == self.rank_key(rank)), None)

    # -- the run --------------------------------------------------------------------------
    @cached_property
    def run_end(self) -> int:
        """The last recorded moment of any rank: the ranks share one time axis."""
        return max(view.end_on_axis for view in self.rank_views.values())

    @cached_property
    def limits(self) -> Window:
        return run_window(self.run_end)

    @cached_property
    def wall_ns(self) -> int:
        """How long the longest-running process ran, start-up and exit included."""
        return max(view.trace.status.wall_ns for view in self.rank_views.values())

    def phase_at(self, t: int, rank: int = NONE) -> str:
        return self.of(rank).phase_at(t)

    # -- timeline -------------------------------------------------------------------------
    @property
    def lanes(self) -> list[Lane]:
        with self._lanes_lock:
            if self._lanes is None:
                self._lanes = [lane for rank, view in self.rank_views.items()
                               for lane in view.lanes(self._findings_lane(rank))]
            return self._lanes

    def _findings_lane(self, rank: int) -> Lane:
        return findings_lane(of_rank(self.problems, rank), [f.severity for f in self.findings])

    def prepare_timeline(self, width: int = 120) -> None:
        """Build the lanes and their running sums now, so the timeline opens at once."""
        edges = column_edges(self.limits, width)
        for lane in self.lanes:
            lane.rows(edges)

    def describe(self, ref: EventRef) -> EventDetails:
        """The event's details (a finding's, for its marker); in a multi-rank report, headed
        by the rank it is from."""
        details = self._marker_details(ref) if ref.kind == FINDINGS else \
            self.of(ref.rank).describe(ref)
        if not self.multi_rank:
            return details
        return dataclasses.replace(details, title=f"rank {self.rank_key(ref.rank)} · "
                                                  f"{details.title}")

    def _marker_details(self, marker: EventRef) -> EventDetails:
        problem = self.problem_at(marker)
        evidence = self.of(problem.ref.rank).describe(problem.ref)
        return marker_details(marker, problem, self.findings[problem.finding], evidence)

    def span_of(self, ref: EventRef) -> tuple[int, int] | None:
        if ref.kind == FINDINGS:
            problem = self.problem_at(ref)
            return problem.start, problem.end
        return self.of(ref.rank).span_of(ref)

    def same_line(self, ref: EventRef) -> SameLine | None:
        """The events from the user's line that ``ref`` (a marker: its evidence) came from,
        on the lanes of its rank; kept for the last event asked about."""
        if ref.kind == FINDINGS:
            ref = self.problem_at(ref).ref
        if self._same_line is None or self._same_line[0] != ref:
            frames = self.of(ref.rank).describe(ref).stack
            self._same_line = ref, same_line(self.trace_of(ref.rank), ref.rank, self.lanes,
                                              frames, self.of(ref.rank).offset)
        return self._same_line[1]

    # -- tables ---------------------------------------------------------------------------
    def alloc_groups(self, by: str) -> list[AllocGroup]:
        return [group for view in self.rank_views.values() for group in view.alloc_groups(by)]

    @cached_property
    def graph_rows(self) -> list[GraphRow]:
        return [row for view in self.rank_views.values() for row in view.graph_rows]

    def graph_key(self, rank: int, graph: int) -> GraphKey:
        return self.rank_key(rank), graph
