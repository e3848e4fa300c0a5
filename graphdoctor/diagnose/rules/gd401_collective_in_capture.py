"""Collectives inside a captured graph: allowed with NCCL, with conditions.

NCCL (2.9.6 and later) can be captured: each replay then runs the all-reduce with the
graph. The conditions: every rank must capture the same collectives in the same order and
replay its graphs in the same order as the others; a host sync between replays on one rank
only stalls the others; graphs of several communicators replayed from one thread can
deadlock (``NCCL_GRAPH_MIXING_SUPPORT=0``); and ``destroy_process_group()`` hangs while a
graph that captured a collective is alive (pytorch/pytorch#115388).

How to fix: nothing, if the conditions hold. Before ``destroy_process_group()``, call
``torch.cuda.synchronize()`` and delete (or ``reset()``) every such graph.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import INFO, NEUTRAL, Finding, Rule
from graphdoctor.diagnose.view import TraceView, ranks_named
from graphdoctor.trace.process_groups import DEFAULT_GROUP

ID, NAME = "GD401", "collective-in-capture"


def check(view: TraceView) -> Iterator[Finding]:
    captured = [(i, c) for i, c in view.rows("collectives") if c.graph >= 0]
    if not captured or _reported_by_a_lower_rank(view):
        return
    ops = sorted({c.op for _, c in captured})
    graphs = sorted({c.graph for _, c in captured})
    ranks = [r for r in sorted(view.peers) if _captures(view.peer_view(r))] or [view.rank]
    where = f" on {ranks_named(ranks)}" if view.peers else ""
    where += _over_groups(view)
    yield RULE.finding(
        title=f"{len(captured)} collective{_s(len(captured))} ({', '.join(ops)}) captured in "
              f"graph{_s(len(graphs))} {', '.join(map(str, graphs))}{where}",
        explanation=("These collectives are part of the captured graphs: each replay runs them. "
                     "Every rank must capture and replay the same graphs in the same order, no "
                     "rank may sync with the host between replays alone, and the graphs must be "
                     "destroyed before destroy_process_group() or it can hang."),
        fix="Keep captures identical on every rank; synchronize and delete the graphs before "
            "destroy_process_group().",
        evidence=tuple(view.evidence("collectives", i) for i, _ in captured[:50]),
        location=view.location(captured[0][1].stack), graph=captured[0][1].graph)


def _over_groups(view: TraceView) -> str:
    """`` over groups 1[0, 1], 2[2, 3]``: the process groups other than the world that any
    rank captured collectives on."""
    views = [view.peer_view(r) for r in sorted(view.peers)] or [view]
    groups = sorted({c.group for v in views for c in v.trace.tables["collectives"]
                     if c.graph >= 0} - {DEFAULT_GROUP})
    return f" over group{_s(len(groups))} {', '.join(groups)}" if groups else ""


def _captures(view: TraceView) -> bool:
    return any(c.graph >= 0 for c in view.trace.tables["collectives"])


def _reported_by_a_lower_rank(view: TraceView) -> bool:
    return any(r < view.rank and _captures(view.peer_view(r)) for r in view.peers)


def _s(count: int) -> str:
    return "" if count == 1 else "s"


RULE = Rule(ID, NAME, check, __doc__ or "", severity=INFO, category=NEUTRAL)
