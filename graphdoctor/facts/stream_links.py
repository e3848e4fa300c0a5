"""Forks and joins between streams inside a capture, read from its stream operations.

A capture follows the capture stream's dependencies. A side stream that waits on it (a
fork: ``side.wait_stream(capture)``, or a wait on an event recorded there) joins the
capture; the capture stream waiting on that side stream in turn is the join that
``capture_end`` needs. A wait on an event is traced to the stream that recorded the event.
The unjoined-stream rule and the capture view both read them from here. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

WAITS = ("wait_stream", "wait_event", "event_wait")
RECORDS = ("record", "record_event")
FORK, JOIN, WAIT = "fork", "join", "wait"


@dataclass(frozen=True)
class StreamLink:
    """One stream waiting for another's work: ``row`` in the stream_ops table, at ``t``.
    ``joined`` tells of a fork whether its side stream was joined back."""

    row: int
    t: int
    waiting: int
    waited_on: int
    role: str
    joined: bool = True


def stream_links(ops: Iterable[tuple[int, Any]], capture_stream: int) -> list[StreamLink]:
    """The waits among ``ops`` ((row, stream op) pairs of one capture, in time order),
    each called a fork, a join or a plain wait; forks never joined say so."""
    ops = list(ops)
    recorded_on = {op.other: op.stream for _, op in ops if op.op in RECORDS}
    links: list[StreamLink] = []
    forked: set[int] = set()
    for row, op in ops:
        source = op.other if op.op == "wait_stream" else recorded_on.get(op.other)
        if op.op not in WAITS or source is None:
            continue
        role = _role(op.stream, source, capture_stream, forked)
        if role == FORK:
            forked.add(op.stream)
        links.append(StreamLink(row, op.t, op.stream, source, role))
    joined = {link.waited_on for link in links if link.role == JOIN}
    return [_with_join(link, joined) for link in links]


def _role(waiting: int, source: int, capture_stream: int, forked: set[int]) -> str:
    if source == capture_stream and waiting != capture_stream and waiting not in forked:
        return FORK
    if waiting == capture_stream and source in forked:
        return JOIN
    return WAIT


def _with_join(link: StreamLink, joined: set[int]) -> StreamLink:
    if link.role != FORK or link.waiting in joined:
        return link
    return StreamLink(link.row, link.t, link.waiting, link.waited_on, FORK, joined=False)


def unjoined_forks(links: Iterable[StreamLink]) -> list[StreamLink]:
    return [link for link in links if link.role == FORK and not link.joined]
