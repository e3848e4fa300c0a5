"""Ranks issued different collectives: the run hangs or computes garbage.

Collectives match up by order: the n-th all-reduce of a process group on one rank meets the
n-th on every other rank. When one rank issues an extra collective, skips one, or issues a
different one (often only inside a captured graph, where a rank-dependent branch was frozen
in), the ranks wait for each other forever or combine unrelated tensors.

How to fix: make the sequence of collectives independent of the rank: no rank-dependent
branches around collectives, the same captures on every rank.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.view import TraceView, ranks_named
from graphdoctor.trace.model import Collective

ID, NAME = "GD402", "ranks-diverged"

Issued = tuple[int, Collective]  # a collective's index in its rank's table, and its row


def check(view: TraceView) -> Iterator[Finding]:
    if not view.first_rank:
        return
    sequences = {r: view.peer_view(r).collective_sequences() for r in sorted(view.peers)}
    groups = sorted({g for per_rank in sequences.values() for g in per_rank})
    for group in groups:
        divergence = _first_difference({r: s.get(group, []) for r, s in sequences.items()})
        if divergence is not None:
            yield _finding(view, group, *divergence)


def _first_difference(per_rank: dict[int, list[Issued]]
                      ) -> tuple[int, dict[int, Issued | None]] | None:
    """(position, {rank: (index, row) or None}) of the first collective the ranks disagree
    on: a different op, or one that some ranks never issued."""
    longest = max((len(rows) for rows in per_rank.values()), default=0)
    for position in range(longest):
        at = {r: rows[position] if position < len(rows) else None for r, rows in per_rank.items()}
        if len({_signature(item) for item in at.values()}) > 1:
            return position, at
    return None


def _signature(item: Issued | None) -> tuple[str, bool] | None:
    return None if item is None else (item[1].op, item[1].graph >= 0)


def _finding(view: TraceView, group: str, position: int,
             at: dict[int, Issued | None]) -> Finding:
    issued = {r: item for r, item in at.items() if item is not None}
    missing = sorted(r for r, item in at.items() if item is None)
    parts = [f"rank {r} issued {row.op}{' inside a capture' if row.graph >= 0 else ''} at "
             f"{view.peer_view(r).where(row.stack)}" for r, (_, row) in sorted(issued.items())]
    if missing:
        parts.append(f"{ranks_named(missing)} issued none")
    first_rank, (_, first_row) = min(issued.items())
    return Finding(
        ID, NAME, ERROR, FAILED,
        title=f"ranks diverge at collective #{position} of group {group}: " + "; ".join(parts),
        explanation=(f"Up to collective #{position} every rank issued the same collectives on "
                     f"group {group}; there they differ (" + "; ".join(parts) + "). "
                     "Collectives pair up by order, so the ranks now wait for each other or "
                     "combine unrelated data."),
        fix="Make the collectives each rank issues the same; look for a branch on the rank "
            "around this line.",
        evidence=tuple(view.evidence("collectives", i, rank=r) for r, (i, _) in issued.items()),
        location=view.peer_view(first_rank).location(first_row.stack), rank=first_rank,
        graph=first_row.graph)


RULE = Rule(ID, NAME, check, __doc__ or "")
