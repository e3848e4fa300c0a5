"""Work forked onto a side stream inside a capture must be joined back before it ends.

A capture follows the capture stream's dependencies: a side stream that waits on it (a
fork, ``side.wait_stream(torch.cuda.current_stream())``) joins the capture, and everything it
then does is part of the graph. ``capture_end`` needs the capture stream to wait for that
work in turn (a join, ``torch.cuda.current_stream().wait_stream(side)``); without it CUDA fails
with "capturing stream has unjoined work", and the traceback names no line of yours.

How to fix: before the captured block ends, make the capture stream wait for every side
stream that forked from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphdoctor.diagnose.failures import cause_of
from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.facts.stream_links import stream_links, unjoined_forks
from graphdoctor.facts.stream_names import stream_label
from graphdoctor.trace.model import Graph
from graphdoctor.trace.names import is_native_api

ID, NAME = "GD103", "unjoined-side-stream"
FIX = "Add torch.cuda.current_stream().wait_stream(side) before the captured block ends."
NATIVE_FIX = ("Join the side stream back before cudaStreamEndCapture: record an event on it after "
              "its work (cudaEventRecord(joined, side)) and make the capture stream wait on it "
              "(cudaStreamWaitEvent(capture, joined, 0)).")


def forks_without_joins(view: TraceView, graph: Graph) -> list[tuple[int, Any]]:
    """(index, op) of each fork from the capture stream whose side never joined back."""
    ops = view.in_capture("stream_ops", graph)
    op_at = dict(ops)
    return [(link.row, op_at[link.row])
            for link in unjoined_forks(stream_links(ops, graph.stream))]


def check(view: TraceView) -> Iterator[Finding]:
    for graph in view.graphs:
        cause = cause_of(view, graph)
        if cause is None or cause.kind != "unjoined":
            continue
        unjoined = forks_without_joins(view, graph)
        yield _finding(view, graph, unjoined, cause.exception)


def _finding(view: TraceView, graph: Graph, unjoined: list[tuple[int, Any]],
             exception: int) -> Finding:
    evidence = tuple(view.evidence("stream_ops", i) for i, _ in unjoined)
    if not unjoined:
        return RULE.finding(
            title=f"graph {graph.id}: a side stream's work was never joined back",
            explanation="capture_end failed with \"capturing stream has unjoined "
                        "work\"; no fork was recorded, so the side stream forked "
                        "outside graphdoctor's view (a library, or raw CUDA).",
            fix="Join every side stream back into the capture stream before the "
                "captured block ends.",
            evidence=(view.evidence("exceptions", exception),), graph=graph.id)
    fork = unjoined[0][1]
    created = _creation(view, fork.stream)
    return RULE.finding(
        title=f"the side stream forked at {view.where(fork.stack)} is never joined back into "
              f"the capture of graph {graph.id}",
        explanation=(f"Stream {stream_label(view.stream_names, fork.stream)}{created} waits "
                     f"on the capture stream at "
                     f"{view.where(fork.stack)}, so its work joined the capture, but the capture "
                     "stream never waits for it in turn; capture_end failed with \"capturing "
                     "stream has unjoined work\"."),
        fix=NATIVE_FIX if is_native_api(graph.api) else FIX,
        evidence=evidence + (view.evidence("exceptions", exception),),
        location=view.location(fork.stack), graph=graph.id)


def _creation(view: TraceView, stream: int) -> str:
    for _, op in view.rows("stream_ops"):
        if op.op == "create" and op.stream == stream:
            return f" (created at {view.where(op.stack)})"
    return ""


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
