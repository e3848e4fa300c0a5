"""Verdicts of many graphs captured at one line, read as one.

A loop that captures a graph per sequence length gives dozens of near-identical verdicts.
Where GROUP_FROM or more manual graphs of one rank, captured by one API at one line, got
the same kind of verdict, the rendered outputs show them as one row: how many, the range
of their speedups (with the median), replays, replay times and pool sizes, and the
members listed below it. A pure step over the report: the JSON keeps a verdict per graph,
and lists the groups in its ``summary`` block (``verdict_groups``), for scripts.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from graphdoctor import units
from graphdoctor.diagnose import findings
from graphdoctor.diagnose.findings import Verdict
from graphdoctor.trace import locations, queries
from graphdoctor.trace.model import NONE, Trace

if TYPE_CHECKING:
    from graphdoctor.report.document import Report

GROUP_FROM = 3  # verdicts of one kind from one line, from which they read as one

T = TypeVar("T", int, float)
Key = tuple[int, str, str, str]  # rank, API, the line, the verdict's kind


@dataclass(frozen=True)
class VerdictRow:
    """A row of a verdict table: one verdict, or a group read as one verdict (its subject
    counts the graphs, its speedup is their median) with its members, by graph id."""

    verdict: Verdict
    members: tuple[Verdict, ...] = ()


def rows(report: Report) -> list[VerdictRow]:
    """The report's verdicts in their order, a group taking the place of its first member."""
    verdicts = report.diagnosis.verdicts
    keys = _keys(report, verdicts)
    groups: dict[Key, list[Verdict]] = {}
    for key, verdict in zip(keys, verdicts):
        if key is not None:
            groups.setdefault(key, []).append(verdict)
    out, shown = [], set()
    for key, verdict in zip(keys, verdicts):
        if key is None or len(groups[key]) < GROUP_FROM:
            out.append(VerdictRow(verdict))
        elif key not in shown:
            shown.add(key)
            out.append(_group(report, key, groups[key]))
    return out


def ranked(report: Report) -> list[VerdictRow]:
    """The rows, worst first (a verdict table's order)."""
    return sorted(rows(report), key=lambda row: findings.verdict_rank(row.verdict), reverse=True)


def as_json(report: Report) -> list[dict[str, Any]]:
    """The groups, for the JSON's summary block: each names its members' graph ids."""
    return [{"subject": r.verdict.subject, "kind": r.verdict.kind, "rank": r.verdict.rank,
             "graphs": [v.graph for v in r.members], "speedup": r.verdict.speedup,
             "summary": r.verdict.summary} for r in rows(report) if r.members]


def member_label(verdict: Verdict) -> str:
    """A member, in a compact list: ``graph 7 2.80×``."""
    speedup = f" {units.format_speedup(verdict.speedup)}" if verdict.speedup is not None else ""
    return f"graph {verdict.graph}{speedup}"


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
    return (verdict.rank, graph.api, locations.where(trace, graph.stack), verdict.kind)


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
    replays = [v.measurements["replays"] for v in members if "replays" in v.measurements]
    if replays:
        parts.append(f"replays {_span(replays, str)} each")
    times = [v.measurements["replay"]["median_us"] for v in members
             if "median_us" in v.measurements.get("replay", {})]
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
