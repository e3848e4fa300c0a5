"""One rank's capture failed while the others captured: the others wait for it.

In a distributed run every rank captures its share of the step. When the capture fails on
one rank (a sync, an allocation, an exception there), that rank leaves the capture and often
the program, while the others have captured their collectives and block in their first
replay or at the next collective, waiting for a partner that is gone. The job hangs or is
torn down by the launcher, and the other ranks' errors say nothing about why.

How to fix: fix the failure on the rank named here (its own finding says why); capture the
same code on every rank.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.view import TraceView, ranks_named
from graphdoctor.trace.model import Graph
from graphdoctor.trace.names import CAPTURED

ID, NAME = "GD403", "rank-capture-failed"


def check(view: TraceView) -> Iterator[Finding]:
    if not view.first_rank:
        return
    failed = {r: _failed_graphs(view.peer_view(r)) for r in sorted(view.peers)}
    bad = [r for r, graphs in failed.items() if graphs]
    good = [r for r in failed if not failed[r] and view.peer_view(r).graphs]
    if not bad or not good:
        return
    rank = bad[0]
    peer = view.peer_view(rank)
    graph = failed[rank][0]
    yield RULE.finding(
        title=f"rank {rank}'s capture of graph {graph.id} failed while "
              f"{ranks_named(good)} captured theirs",
        explanation=(f"The capture started at {peer.where(graph.stack)} failed on "
                     f"{ranks_named(bad)} only; {ranks_named(good)} "
                     f"captured and went on, so they wait for a partner that is not coming. "
                     + _how_they_ended(view, good)),
        fix=f"Fix the capture failure on rank {rank} (see its capture finding).",
        evidence=tuple(view.evidence("graphs", peer.trace.graphs.index(g), rank=r)
                       for r in bad for g in failed[r]),
        location=peer.location(graph.stack), graph=graph.id, rank=rank)


def _failed_graphs(view: TraceView) -> list[Graph]:
    return [g for g in view.graphs if g.status != CAPTURED]


def _how_they_ended(view: TraceView, ranks: list[int]) -> str:
    endings = {view.peer_view(r).trace.status.message for r in ranks} - {""}
    return ("They ended: " + "; ".join(sorted(endings)) + ".") if endings else ""


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
