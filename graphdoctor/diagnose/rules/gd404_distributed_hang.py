"""A distributed run hung: some ranks wait for a collective that others never reach.

A collective completes only when every rank of its group joins it. When the run ends
without finishing (graphdoctor's ``--timeout``), the ranks still inside a collective wait
for the ranks that are not; with a captured collective the wait is on the GPU, and the CPU
sits in the next ``synchronize()`` or replay. graphdoctor dumps every rank's Python stack
before ending them, so the line each rank was on is known, inside a collective or not.

How to fix: look at what the ranks outside the collective were doing (an extra or missing
collective, a failed capture, a data-dependent early exit), and make every rank reach the
same collectives in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphdoctor.diagnose import stacks_at_end, waits
from graphdoctor.diagnose.findings import ERROR, FAILED, Evidence, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.endings import TIMED_OUT

ID, NAME = "GD404", "distributed-hang"


def check(view: TraceView) -> Iterator[Finding]:
    if not view.first_rank:
        return
    views = {r: view.peer_view(r) for r in sorted(view.peers)}
    waiting = {r: item for r, item in ((r, _pending(v)) for r, v in views.items()) if item}
    timed_out = any(v.trace.status.reason == TIMED_OUT for v in views.values())
    unfinished = not all(v.trace.status.complete for v in views.values())
    if timed_out or (waiting and unfinished):
        yield _finding(view, views, waiting)


def _pending(view: TraceView) -> tuple[int, Any] | None:
    """The collective this rank entered last and never left."""
    pending = [(i, c) for i, c in view.rows("collectives") if c.dur < 0]
    return pending[-1] if pending else None


# what a rank's last moments are read from, on the timeline: where it was when it stopped
LAST_EVENT_TABLES = ("collectives", "syncs", "replays", "stream_ops")


def _last_event(view: TraceView) -> tuple[str, int] | None:
    """The table and row of the last event the rank recorded (of LAST_EVENT_TABLES)."""
    last = [(rows[-1][1].t, table, rows[-1][0]) for table in LAST_EVENT_TABLES
            if table in view.trace.tables and (rows := list(view.rows(table)))]
    return max(last)[1:] if last else None


def _last_seen(view: TraceView, rank: int, peer: TraceView) -> Evidence:
    table, index = _last_event(peer)  # type: ignore[misc]
    return view.evidence(table, index, f"the last event rank {rank} recorded", rank=rank)


def _where(view: TraceView) -> str:
    """Where a rank's main thread was and what it waited on, from its dump."""
    threads = stacks_at_end.parse(view.trace.status.stacks_at_end)
    return next((found for found in (waits.describe(t, view.read_line) for t in threads)
                 if found), "")


def _finding(view: TraceView, views: dict[int, TraceView],
             waiting: dict[int, tuple[int, Any]]) -> Finding:
    parts = []
    for rank, peer in views.items():
        if rank in waiting:
            row = waiting[rank][1]
            parts.append(f"rank {rank} waits in {row.op} #{row.seq} of {row.group} at "
                         f"{peer.where(row.stack)}")
        else:
            parts.append(f"rank {rank} was at {_where(peer) or 'an unknown place'}")
    status = views[min(views)].trace.status
    located = min(waiting) if waiting else None
    return RULE.finding(
        title="the run hung: " + "; ".join(parts),
        explanation=(f"The run did not finish ({status.message or status.reason}): "
                     + "; ".join(parts) + ". A collective completes only when every rank of "
                     "its group joins it, on the GPU for a captured one."),
        fix="See what each rank was doing, and make every rank reach the same collectives in "
            "the same order.",
        evidence=tuple(view.evidence("collectives", i, rank=r) for r, (i, _) in waiting.items())
        + tuple(_last_seen(view, r, peer) for r, peer in views.items() if r not in waiting
                and _last_event(peer) is not None),
        location=(views[located].location(waiting[located][1].stack)
                  if located is not None else None),
        rank=located if located is not None else -1)


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
