"""A job's ranks in groups that behaved alike, the ranks that differ first.

At 64 ranks a line per rank buries the one that matters. Ranks are grouped by what they
did: how they ended, what became of their graphs, how many collectives they issued, what
they raised and which findings name them. The smallest groups come first, so the rank that
departed is read before the 63 that agree; the hosts and how their clocks were lined up
(:mod:`graphdoctor.facts.job_clock`) are said once, above them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphdoctor import units
from graphdoctor.diagnose.view import rank_ranges, ranks_named, runs_text
from graphdoctor.facts import tallies
from graphdoctor.facts.job_clock import JobClock, job_clock
from graphdoctor.trace.endings import outcome
from graphdoctor.trace.model import Trace

if TYPE_CHECKING:
    from graphdoctor.report.document import Report


@dataclass(frozen=True)
class RankGroup:
    """Ranks that did the same; ``said``: what they did, in a phrase."""

    ranks: tuple[int, ...]
    said: str

    @property
    def named(self) -> str:
        return ranks_named(self.ranks)


def rank_groups(report: Report) -> list[RankGroup]:
    """The report's ranks grouped by what they did, the smallest groups first (then by their
    first rank); [] for a single-process report."""
    groups: dict[str, list[int]] = {}
    for rank in report.ranks:
        groups.setdefault(_did(report, rank), []).append(rank)
    ordered = sorted(groups.items(), key=lambda item: (len(item[1]), item[1][0]))
    return [RankGroup(tuple(ranks), said) for said, ranks in ordered]


def missing_ranks(report: Report) -> list[range]:
    """The ranks of the job's world that the report does not hold, as runs in order: the
    world's size is the report's word, and a claimed world of a billion ranks must cost no
    more than the ranks the report holds."""
    world = max((report.trace_of(rank).meta.world_size for rank in report.ranks), default=0)
    runs, start = [], 0
    for rank in sorted({rank for rank in report.ranks if 0 <= rank < world}):
        if rank > start:
            runs.append(range(start, rank))
        start = rank + 1
    return [*runs, range(start, world)] if world > start else runs


def missing_line(report: Report) -> str:
    """What a report of part of a job lacks, and how to see the rest; "" if it has all."""
    missing = missing_ranks(report)
    count = sum(len(run) for run in missing)
    if not count:
        return ""
    return (f"rank{'' if count == 1 else 's'} {runs_text(missing)} of the job's "
            f"{count + len(report.ranks):,} are not in this report: give every rank's file "
            "together (graphdoctor view job.rank*.json) to see the whole job")


def clock_of(report: Report) -> JobClock:
    """The time axis of the report's ranks (empty for a single process)."""
    return job_clock({rank: report.trace_of(rank) for rank in report.ranks})


def hosts_line(report: Report) -> str:
    """``4 ranks on 2 hosts (node-a: 0-1; node-b: 2-3)``: where the ranks ran."""
    clock = clock_of(report)
    where = "; ".join(f"{host or '?'}: {rank_ranges(ranks)}" for host, ranks in clock.hosts.items())
    return (f"{units.counted(len(report.ranks), 'rank')} on "
            f"{units.counted(len(clock.hosts), 'host')} ({where})")


def clock_lines(report: Report) -> tuple[str, ...]:
    """How each host's ranks were set on the job's time axis."""
    return clock_of(report).how


def _did(report: Report, rank: int) -> str:
    trace = report.trace_of(rank)
    named = sorted({f.id for f in report.diagnosis.findings if f.rank == rank})
    parts = [outcome(trace, timed=False), _graphs(trace),
             units.counted(len(trace.tables["collectives"]), "collective"),
             units.counted(len(trace.exceptions), "exception") if trace.exceptions else "",
             ", ".join(named)]
    return " · ".join(p for p in parts if p)


def _graphs(trace: Trace) -> str:
    statuses = sorted(tallies.graph_status_counts(trace).items())
    return ", ".join(f"{units.counted(n, 'graph')} {status}"
                     for status, n in statuses) or "no graphs"
