"""Captures must run on a side stream, and nothing inside one may use the default stream.

The legacy default stream cannot be captured: ``capture_begin()`` on it fails with "CUDA
graphs must be captured on a non-default stream" (``torch.cuda.graph`` picks a side stream
for you; the raw ``CUDAGraph`` API does not). And work switched to the default stream inside
a capture is not captured at all: it runs once, now, and is silently missing from every
replay.

How to fix: capture under ``with torch.cuda.stream(side):`` (or use ``torch.cuda.graph``),
and never select ``torch.cuda.default_stream()`` inside the captured block.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.failures import cause_of
from graphdoctor.diagnose.findings import ERROR, FAILED, UNSAFE, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import Graph
from graphdoctor.trace.names import CAPTURED

ID, NAME = "GD104", "default-stream-capture"


def check(view: TraceView) -> Iterator[Finding]:
    for graph in view.graphs:
        cause = cause_of(view, graph)
        if cause is not None and cause.kind == "default_stream" and cause.link is not None:
            yield RULE.finding(
                title=f"graph {graph.id} was captured on the default stream at "
                      f"{view.where(cause.link.stack)}",
                explanation="capture_begin() ran while the current stream was the legacy "
                            "default stream, which CUDA cannot capture.",
                fix="Wrap the capture in `with torch.cuda.stream(torch.cuda.Stream()):`, or "
                    "use `with torch.cuda.graph(g):`, which does this for you.",
                evidence=(view.evidence("exceptions", cause.exception),),
                location=view.location(cause.link.stack), graph=graph.id)
        yield from _default_stream_inside(view, graph)


def _default_stream_inside(view: TraceView, graph: Graph) -> Iterator[Finding]:
    switches = [(i, op) for i, op in view.in_capture("stream_ops", graph)
                if op.op in ("enter", "set_stream") and op.stream == 0
                and view.culprit_frame(op.stack) is not None]
    if not switches or graph.status != CAPTURED:
        return
    first = switches[0][1]
    yield RULE.finding(
        category=UNSAFE,
        title=f"work at {view.where(first.stack)} runs on the default stream inside the capture "
              f"of graph {graph.id}, so replays leave it out",
        explanation="Inside the captured block this code switched to the legacy default stream, "
                    "which is not captured: its work ran once during capture and does not run "
                    "when the graph is replayed. Nothing raises; results are silently wrong.",
        fix="Keep all captured work on the capture stream (or on side streams forked from it "
            "with wait_stream and joined back).",
        evidence=tuple(view.evidence("stream_ops", i) for i, _ in switches),
        location=view.location(first.stack), graph=graph.id)


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
