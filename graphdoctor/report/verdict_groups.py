"""Verdicts of many graphs captured at one line, read as one; and alike verdicts of a job's
ranks, read as one.

A loop that captures a graph per sequence length gives dozens of near-identical verdicts.
Where GROUP_FROM or more manual graphs of one rank, captured by one API at one line
(:mod:`graphdoctor.facts.graph_sites`, the grouping every reader shares), got the same
kind of verdict, the rendered outputs show them as one row: how many, the range
of their speedups (with the median), replays, replay times and pool sizes, and the
members listed below it. Every rank of a job runs the same script, so its 64 ranks give
64 rows of one verdict: rows of different ranks alike in kind, subject and summary but for
their figures are one row naming the ranks ("ranks 0-63: graph 0 ..."), with the range of
their figures, each rank's row its member. A pure step over the report: the JSON keeps a
verdict per graph, and lists the groups in its ``summary`` block (``verdict_groups``), for
scripts.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from graphdoctor import units
from graphdoctor.diagnose import findings, measure_read_back
from graphdoctor.diagnose.findings import Verdict
from graphdoctor.diagnose.view import ranks_named
from graphdoctor.facts import queries
from graphdoctor.facts.graph_sites import grouped, site
from graphdoctor.trace.model import NONE, Trace

if TYPE_CHECKING:
    from graphdoctor.report.document import Report

T = TypeVar("T", int, float)
Key = tuple[int, str, str, str]  # rank, API, the line, the verdict's kind


@dataclass(frozen=True)
class VerdictRow:
    """A row of a verdict table: one verdict, or a group read as one verdict (its subject
    counts the graphs, or names the ranks, its speedup is their median) with its members,
    by graph id, or (``ranks``, a group across ranks) each rank's row in rank order."""

    verdict: Verdict
    members: tuple[Verdict, ...] = ()
    ranks: tuple[int, ...] = ()

    def member_label(self, verdict: Verdict) -> str:
        """A member, in a compact list: ``graph 7 2.80×`` or ``rank 3 2.80×``."""
        speedup = f" {units.format_speedup(verdict.speedup)}" \
            if verdict.speedup is not None else ""
        return f"{'rank' if self.ranks else 'graph'} " \
               f"{verdict.rank if self.ranks else verdict.graph}{speedup}"


def rows(report: Report) -> list[VerdictRow]:
    """The report's verdicts in their order, a group taking the place of its first member;
    in a job's report, rows alike on several ranks as one (:func:`across_ranks`)."""
    within = rows_of_ranks(report)
    return across_ranks(report, within) if report.ranks else within


def rows_of_ranks(report: Report) -> list[VerdictRow]:
    """The rows of each rank, graphs of one line grouped within their rank only."""
    verdicts = report.diagnosis.verdicts
    return [VerdictRow(members[0]) if key is None else _group(report, key, members)
            for key, members in grouped(verdicts, _keys(report, verdicts))]


def ranked(report: Report) -> list[VerdictRow]:
    """The rows, worst first (a verdict table's order)."""
    return sorted(rows(report), key=lambda row: findings.verdict_rank(row.verdict), reverse=True)


def as_json(report: Report) -> list[dict[str, Any]]:
    """The groups, for the JSON's summary block: each names its members' graph ids; a group
    across ranks names each member's rank too (``ranks``, paired with ``graphs``)."""
    within = rows_of_ranks(report)
    across = [r for r in across_ranks(report, within) if r.ranks] if report.ranks else []
    return [{"subject": r.verdict.subject, "kind": r.verdict.kind, "rank": r.verdict.rank,
             "graphs": [v.graph for v in r.members], "speedup": r.verdict.speedup,
             "summary": r.verdict.summary, **({"ranks": list(r.ranks)} if r.ranks else {})}
            for r in [*within, *across] if r.members]


FIGURE = re.compile(r"\d+(?:[.,:]\d+)*")  # 12, 1,024, 3.5, 0:42: what differs by rank
RANK_PREFIX = re.compile(r"^rank -?\d+: ")  # how a job's verdict subject starts


def across_ranks(report: Report, rows: list[VerdictRow]) -> list[VerdictRow]:
    """``rows``, those of different ranks alike (one kind, one subject and one summary but
    for their figures) as one, in the place of the first; at most one row a rank each."""
    slots: dict[tuple[str, ...], int] = {}
    alike: dict[tuple[object, ...], list[VerdictRow]] = {}
    for index, row in enumerate(rows):
        v = row.verdict
        key = (v.kind, FIGURE.sub("#", RANK_PREFIX.sub("", v.subject)), FIGURE.sub("#", v.summary))
        slot = slots.get((*key, str(v.rank)), 0)
        slots[(*key, str(v.rank))] = slot + 1
        alike.setdefault((*key, slot) if v.rank != NONE else (index,), []).append(row)
    return [group[0] if len(group) == 1 else _of_ranks(report, group)
            for group in alike.values()]


def _of_ranks(report: Report, group: list[VerdictRow]) -> VerdictRow:
    group = sorted(group, key=lambda row: row.verdict.rank)
    members = tuple(row.verdict for row in group)
    first, ranks = members[0], tuple(v.rank for v in members)
    speedups = [v.speedup for v in members if v.speedup is not None]
    said = first.summary if any(row.members for row in group) or \
        len({v.summary for v in members}) == 1 else summary(report, first.kind, members)
    findings = tuple(dict.fromkeys(f for v in members for f in v.findings))
    subject = f"{ranks_named(ranks)}: {RANK_PREFIX.sub('', first.subject)}"
    verdict = dataclasses.replace(first, subject=subject, summary=said, findings=findings,
                                  speedup=statistics.median(speedups) if speedups else None,
                                  measurements={})
    return VerdictRow(verdict, members, ranks)


def _keys(report: Report, verdicts: Sequence[Verdict]) -> list[Key | None]:
    return [_key(report.trace_of(v.rank), v)
            for v in verdicts]


def _key(trace: Trace, verdict: Verdict) -> Key | None:
    """Where a manual graph's verdict groups; None for a compiled function's."""
    if verdict.graph == NONE or verdict.function != NONE:
        return None
    graph = queries.graph_by_id(trace, verdict.graph)
    if graph is None or graph.function != NONE:
        return None
    return (verdict.rank, *site(trace, graph), verdict.kind)


def _group(report: Report, key: Key, members: list[Verdict]) -> VerdictRow:
    rank, api, where, kind = key
    members = sorted(members, key=lambda v: v.graph)
    speedups = [v.speedup for v in members if v.speedup is not None]
    prefix = f"rank {rank}: " if rank != NONE else ""
    findings = tuple(dict.fromkeys(f for v in members for f in v.findings))
    verdict = Verdict(f"{prefix}{len(members)} graphs ({api}, {where})", kind,
                      summary(report, kind, members), graph=members[0].graph,
                      speedup=statistics.median(speedups) if speedups else None,
                      findings=findings, rank=rank)
    return VerdictRow(verdict, tuple(members))


def summary(report: Report, kind: str, members: Sequence[Verdict]) -> str:
    """``faster 2.10x–3.40x (median 2.80x), replays 10–400 each, replay 212 µs–1.1 ms,
    pool 12.0 MiB–96.0 MiB``: what the members' verdicts and graphs have."""
    parts = [_head(kind, members)]
    measured = [measure_read_back.from_dict(v.measurements) for v in members if v.measurements]
    replays = [m.replays for m in measured]
    if replays:
        parts.append(f"replays {_span(replays, str)} each")
    times = [m.replay.median_us for m in measured if m.replay is not None]
    if times:
        parts.append(f"replay {_span([round(t * 1000) for t in times], units.format_duration)}")
    pools = [g.pool_bytes for v in members
             if (g := queries.graph_by_id(report.trace_of(v.rank), v.graph)) and g.pool_bytes]
    if pools:
        parts.append(f"pool {_span(pools, units.format_bytes)}")
    shared = "" if parts[0] != kind else _shared(members)
    return ", ".join(parts) + (f"; {shared}" if shared else "")


def _head(kind: str, members: Sequence[Verdict]) -> str:
    """The kind, with the speedups' range where they have speedups."""
    speedups = [v.speedup for v in members if v.speedup is not None]
    if not speedups:
        return kind
    return (f"{kind} {_span(speedups, units.format_speedup)} "
            f"(median {units.format_speedup(statistics.median(speedups))})")


def _shared(members: Sequence[Verdict]) -> str:
    """What every member's summary says, clause by clause: why they failed, or why no
    speedup is claimed."""
    said = [set(v.summary.split("; ")) for v in members]
    return "; ".join(c for c in members[0].summary.split("; ") if all(c in s for s in said))


def _span(values: Sequence[T], text: Callable[[T], str]) -> str:
    low, high = min(values), max(values)
    return text(low) if low == high else f"{text(low)}–{text(high)}"
