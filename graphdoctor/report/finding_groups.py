"""Findings alike on several ranks, read as one that names the ranks.

Every rank of a job runs the same script, so a problem in it is found on every rank: 64
ranks, 64 findings with one title. Findings of different ranks are alike when one rule
found them at one line, about the same graph or compiled function, in titles that differ at
most in their figures (a count, a time, the rank's own number). The rendered outputs show
each set as one finding naming its ranks ("ranks 0-2"), its title and figures its first
rank's (and say so where the others' differ), its evidence every member's, each item
naming its rank. A pure step over the report: ``diagnosis.findings`` keeps each rank's own
finding, and the JSON lists the groups in its ``summary`` block (``finding_groups``), each
naming its members there by index.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphdoctor.diagnose.findings import Finding
from graphdoctor.diagnose.view import ranks_named
from graphdoctor.trace.model import NONE

FIGURE = re.compile(r"\d+(?:[.,:]\d+)*")  # 12, 1,024, 3.5, 0:42: what differs by rank


@dataclass(frozen=True)
class FindingGroup:
    """One finding, or several of different ranks read as one: ``finding`` is the first
    member with every member's evidence (each item naming its rank); ``members`` each rank's
    own, in rank order; ``indices`` theirs in the diagnosis's findings."""

    finding: Finding
    members: tuple[Finding, ...]
    indices: tuple[int, ...]

    @property
    def ranks(self) -> tuple[int, ...]:
        """The members' ranks; () in a single-process run."""
        return tuple(m.rank for m in self.members if m.rank != NONE)

    @property
    def named(self) -> str:
        """``rank 3``, ``ranks 0-2``; "" in a single-process run."""
        return ranks_named(self.ranks) if self.ranks else ""

    @property
    def same_figures(self) -> bool:
        """Whether every member says just what the first does: its title, and how many
        findings it folds (when they happened differs by rank, as the ranks' clocks do)."""
        return len({(m.title, m.count) for m in self.members}) == 1

    @property
    def whose(self) -> str:
        """The ranks as a finding's line names them: ``ranks 0-2``, or ``ranks 0-63, the
        figures rank 0's`` where the members' figures differ."""
        if len(self.members) < 2 or self.same_figures:
            return self.named
        return f"{self.named}, the figures rank {self.members[0].rank}'s"


def finding_groups(findings: Sequence[Finding]) -> list[FindingGroup]:
    """The findings in their order, those alike on several ranks as one group in the place
    of its first; at most one member a rank (a rank's own repeats are folded by the
    diagnosis, and two left apart there stay apart here)."""
    slots: dict[tuple[Any, ...], int] = {}
    grouped: dict[tuple[Any, ...], list[int]] = {}
    for index, finding in enumerate(findings):
        key = _alike(finding)
        slot = slots.get((*key, finding.rank), 0)
        slots[(*key, finding.rank)] = slot + 1
        grouped.setdefault((*key, slot) if finding.rank != NONE else (index,), []).append(index)
    return [_group(findings, indices) for indices in grouped.values()]


def _alike(f: Finding) -> tuple[Any, ...]:
    where = (f.location.file, f.location.line) if f.location else None
    return (f.id, f.name, f.severity, f.category, where, f.graph, f.function,
            FIGURE.sub("#", f.title))


def _group(findings: Sequence[Finding], indices: list[int]) -> FindingGroup:
    indices.sort(key=lambda index: findings[index].rank)
    members = tuple(findings[index] for index in indices)
    if len(members) == 1:
        return FindingGroup(members[0], members, tuple(indices))
    evidence = tuple(e if e.rank != NONE else dataclasses.replace(e, rank=m.rank)
                     for m in members for e in m.evidence)
    return FindingGroup(dataclasses.replace(members[0], evidence=evidence), members,
                        tuple(indices))


def as_json(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The groups of more than one rank, for the JSON's summary block."""
    return [{"id": g.finding.id, "name": g.finding.name, "severity": g.finding.severity,
             "title": g.finding.title, "ranks": list(g.ranks), "findings": list(g.indices),
             "same_figures": g.same_figures}
            for g in finding_groups(findings) if len(g.members) > 1]
