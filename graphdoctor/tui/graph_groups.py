"""Many graphs from one line, read as one: the Graphs screen's groups.

A loop that captures a graph per batch size or sequence length makes dozens of graphs
from one line. Where GROUP_FROM or more graphs of one rank were captured by one API at
one line, the Graphs screen shows them as one row (how many, how their captures ended,
their replays and median times), which opens to list its members under it. The Summary
groups their verdicts the same way (:mod:`graphdoctor.report.verdict_groups`; both by
:mod:`graphdoctor.facts.graph_sites`). Pure.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from graphdoctor.facts.graph_sites import grouped, sites
from graphdoctor.tui.aggregate import GraphRow
from graphdoctor.tui.report_view import ReportView
from graphdoctor.units import counted

GroupKey = tuple[int, str, str]  # rank, API, the line


@dataclass(frozen=True)
class GraphGroup:
    """Graphs of one rank captured by one API at one line."""

    key: GroupKey
    members: tuple[GraphRow, ...]

    @property
    def where(self) -> str:
        return self.key[2]

    @property
    def statuses(self) -> str:
        """'12 captured' or '10 captured, 2 failed'."""
        counts = Counter(row.graph.status for row in self.members)
        return ", ".join(f"{count} {status}" for status, count in counts.most_common())

    @property
    def replays(self) -> int:
        return sum(row.replays.count for row in self.members)

    def median(self, side: str, clock: str) -> float | None:
        """The median over members of their median ``side`` ("replays" or "eager") time
        on ``clock`` ("host" or "gpu")."""
        values = [v for row in self.members
                  if (v := getattr(getattr(row, side), clock)) is not None]
        return statistics.median(values) if values else None

    def title(self, shown: bool) -> str:
        return f"{'▾' if shown else '▸'} {counted(len(self.members), 'graph')}"


Entry = GraphRow | GraphGroup


def group_rows(view: ReportView, rows: Sequence[GraphRow]) -> list[Entry]:
    """The rows with each group in the place of its first member."""
    site_of = {rank: sites(rank_view.trace) for rank, rank_view in view.rank_views.items()}
    keys: list[GroupKey | None] = [(row.rank, *site_of[view.rank_key(row.rank)][row.graph.id])
                                   for row in rows]
    return [members[0] if key is None else GraphGroup(key, tuple(members))
            for key, members in grouped(rows, keys)]


def shown_rows(entries: Sequence[Entry], open_groups: frozenset[GroupKey]) -> list[Entry]:
    """What the table lists: each group, its members under it when it is open."""
    out: list[Entry] = []
    for entry in entries:
        out.append(entry)
        if isinstance(entry, GraphGroup) and entry.key in open_groups:
            out += entry.members
    return out


def group_of(entries: Sequence[Entry], rank: int, graph: int) -> GraphGroup | None:
    """The group that holds graph ``graph`` of ``rank``, if it is in one."""
    for entry in entries:
        if isinstance(entry, GraphGroup) and any(
                (row.rank, row.graph.id) == (rank, graph) for row in entry.members):
            return entry
    return None
