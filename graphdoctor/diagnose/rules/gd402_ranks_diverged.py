"""Ranks issued different collectives: the run hangs or computes garbage.

Collectives match up by order: the n-th all-reduce of a process group on one rank meets the
n-th on every other rank of that group (a rank outside a group issues nothing on it, and
owes nothing: tensor-parallel pairs are compared pair by pair; a send pairs with its peer's
recv, so point-to-point calls are left out). When one rank issues an extra collective, skips
one, or issues a different one (often only inside a captured graph, where a rank-dependent
branch was frozen in), the ranks wait for each other forever or combine unrelated tensors.

Where a rank issues an extra collective, the counts differ only at the end, but the extra
one pairs with the others' next collective, made from another line: the first position
where the same collective comes from different lines is where the ranks part.

The line to look at is where a rank departs, not where the collective is made: every
all_reduce of a program often goes through one helper, so the helper's line is the same on
every rank. From the per-rank sequences, the first position where the ranks differ; for each
rank there, its stack is set beside the stack that did agree (another rank's at the same
position, or its own at the position before), and the first of its own frames that differs
is its departure (``if rank == 1: reduce(out)``). Where captured graphs' contents were read,
each rank's count of NCCL kernels per graph is evidence too: one kernel per captured
collective, so the ranks' graphs differ there as well.

How to fix: make the sequence of collectives independent of the rank: no rank-dependent
branches around collectives, the same captures on every rank.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Location, Rule
from graphdoctor.diagnose.view import TraceView, ranks_named
from graphdoctor.facts import locations
from graphdoctor.trace.model import USER, Collective, Frame
from graphdoctor.trace.names import CAPTURED
from graphdoctor.trace.process_groups import POINT_TO_POINT, group_members

ID, NAME = "GD402", "ranks-diverged"

Issued = tuple[int, Collective]  # a collective's index in its rank's table, and its row


def check(view: TraceView) -> Iterator[Finding]:
    if not view.first_rank:
        return
    sequences = {r: _collectives(view.peer_view(r)) for r in sorted(view.peers)}
    groups = sorted({g for per_rank in sequences.values() for g in per_rank})
    for group in groups:
        members = group_members(group, sequences) or {r for r, s in sequences.items()
                                                      if group in s}
        per_rank = {r: s.get(group, []) for r, s in sequences.items() if r in members}
        divergence = _first_difference(per_rank)
        if divergence is not None:
            earlier = _first_place_difference(view, per_rank, divergence[0])
            yield _finding(view, group, per_rank, *(earlier or divergence))


def _collectives(view: TraceView) -> dict[str, list[Issued]]:
    """A rank's collectives per group, in order, without its point-to-point calls."""
    return {group: kept for group, rows in view.collective_sequences().items()
            if (kept := [(i, row) for i, row in rows if row.op not in POINT_TO_POINT])}


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


def _first_place_difference(view: TraceView, per_rank: dict[int, list[Issued]], before: int
                            ) -> tuple[int, dict[int, Issued | None]] | None:
    """Where, before ``before`` (the first collective the ranks disagree on), the same
    collective came from different lines of the program on different ranks: an extra
    collective on one rank pairs with the next one on the others, which is where the counts
    start to differ, but the line that sent it there comes first (``if rank == 3:
    reduce(out)`` pairs with the others' next ``reduce``)."""
    for position in range(before):
        at = {r: rows[position] for r, rows in per_rank.items() if position < len(rows)}
        if len({_place(view, r, row) for r, (_, row) in at.items()}) > 1:
            return position, dict(at)
    return None


def _place(view: TraceView, rank: int, row: Collective) -> tuple[tuple[str, str, int], ...]:
    """Where in the program a collective came from: its user frames, by place."""
    return tuple((f.file, f.func, f.line) for f in _user_frames(view.peer_view(rank), row))


def _extra(view: TraceView, per_rank: dict[int, list[Issued]], position: int) -> set[int]:
    """The ranks whose next collective comes from where the others' collective at
    ``position`` does: they issued one more first (the rank that went its own way)."""
    places = {r: _place(view, r, rows[position][1]) for r, rows in per_rank.items()
              if position < len(rows)}
    return {r for r, rows in per_rank.items() if position + 1 < len(rows)
            and any(_place(view, r, rows[position + 1][1]) == place
                    for other, place in places.items() if other != r)}


def _signature(item: Issued | None) -> tuple[str, bool] | None:
    return None if item is None else (item[1].op, item[1].graph >= 0)


def _user_frames(view: TraceView, row: Collective) -> list[Frame]:
    """The user's frames of a collective's stack, outermost first."""
    return [f for f in view.trace.stack(row.stack) if f.kind == USER]


def departure(view: TraceView, row: Collective, agreed: list[Frame]) -> Frame | None:
    """The first of ``row``'s user frames that differs from a stack that agreed (compared
    by place: file, function and line), or None where there is nothing to set beside it."""
    own = _user_frames(view, row)
    if not agreed:
        return None
    for mine, theirs in zip(own, agreed):
        if (mine.file, mine.func, mine.line) != (theirs.file, theirs.func, theirs.line):
            return mine
    return own[len(agreed)] if len(own) > len(agreed) else None


def _agreed(view: TraceView, rank: int, position: int, per_rank: dict[int, list[Issued]],
            at: dict[int, Issued | None]) -> list[Frame]:
    """The stack a rank's collective at ``position`` is set beside: another rank's there
    (one that issued something else), else this rank's own at the position before."""
    for other, item in sorted(at.items()):
        if other != rank and item is not None:
            return _user_frames(view.peer_view(other), item[1])
    rows = per_rank[rank]
    return _user_frames(view.peer_view(rank), rows[position - 1][1]) if position else []


def _part(view: TraceView, rank: int, row: Collective, left: Frame | None) -> str:
    peer = view.peer_view(rank)
    where = peer.where(row.stack)
    captured = " inside a capture" if row.graph >= 0 else ""
    if left is None or locations.spot(left) == where:
        return f"rank {rank} issued {row.op}{captured} at {where}"
    return f"rank {rank} issued {row.op}{captured} at {locations.spot(left)}, through {where}"


def _nccl_kernels(view: TraceView) -> dict[int, dict[int, int]]:
    """{rank: {graph: NCCL kernels in it}} for the graphs whose contents were read."""
    counts: dict[int, dict[int, int]] = {}
    for rank in sorted(view.peers):
        for graph in view.peer_view(rank).trace.graphs:
            if graph.anatomy is not None and not graph.internal:
                counts.setdefault(rank, {})[graph.id] = graph.anatomy.nccl_kernels
    return counts


def _kernels_said(counts: dict[int, dict[int, int]]) -> str:
    if not counts:
        return ""
    graphs = sorted({g for per_rank in counts.values() for g in per_rank})
    said = [f"graph {g}: " + ", ".join(f"{per_rank.get(g, 0)} on rank {r}"
                                       for r, per_rank in sorted(counts.items()))
            for g in graphs]
    return " NCCL kernels captured, one per collective: " + "; ".join(said) + "."


def _finding(view: TraceView, group: str, per_rank: dict[int, list[Issued]], position: int,
             at: dict[int, Issued | None]) -> Finding:
    issued = {r: item for r, item in at.items() if item is not None}
    left = {r: departure(view.peer_view(r), row, _agreed(view, r, position, per_rank, at))
            for r, (_, row) in issued.items()}
    parts = [_part(view, r, row, left[r]) for r, (_, row) in sorted(issued.items())]
    missing = sorted(r for r, item in at.items() if item is None)
    if missing:
        parts.append(f"{ranks_named(missing)} issued none")
    extra = _extra(view, per_rank, position)
    culprit = min(issued, key=lambda r: (r not in extra, left[r] is None, r))
    _, culprit_row = issued[culprit]
    counts = _nccl_kernels(view)
    return RULE.finding(
        title=f"ranks diverge at collective #{position} of group {group}: " + "; ".join(parts),
        explanation=(f"Up to collective #{position} every rank issued the same collectives on "
                     f"group {group}; there they differ (" + "; ".join(parts) + "). "
                     "Collectives pair up by order, so the ranks now wait for each other or "
                     "combine unrelated data." + _kernels_said(counts)),
        fix=_fix(view, culprit, left[culprit], missing),
        evidence=tuple(view.evidence("collectives", i, rank=r) for r, (i, _) in issued.items())
        + tuple(view.evidence("graphs", g, rank=r) for r, per_rank in counts.items()
                for g in per_rank),
        location=(_location(left[culprit]) if left[culprit] is not None
                  else view.peer_view(culprit).location(culprit_row.stack)),
        rank=culprit, graph=culprit_row.graph,
        measurements={"position": position, "departures": {
            str(r): locations.spot(f) for r, f in left.items() if f is not None}}
        | ({"nccl_kernels": {str(r): {str(g): n for g, n in c.items()}
                             for r, c in counts.items()}} if counts else {}))


def _stopped(view: TraceView, ranks: list[int]) -> list[int]:
    """The ranks among ``ranks`` whose capture failed or that raised: they stopped short of
    the collective, no branch sent the others past them."""
    return [r for r in ranks if any(g.status != CAPTURED for g in view.peer_view(r).graphs)
            or view.peer_view(r).trace.exceptions]


def _fix(view: TraceView, rank: int, left: Frame | None, missing: list[int]) -> str:
    same = "Make the collectives each rank issues the same; "
    if left is None:
        return same + "look for a branch on the rank around this line."
    stopped = _stopped(view, missing)
    if stopped:
        return (same + f"rank {rank} went on to {locations.spot(left)}, which "
                f"{ranks_named(stopped)} never reached: it stopped before (its own failure "
                "is the one to fix).")
    return same + f"the branch at {locations.spot(left)} sends rank {rank} its own way."


def _location(frame: Frame | None) -> Location | None:
    return Location(frame.file, frame.line, frame.func) if frame is not None else None


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
