"""A captured graph holds a host node: every replay stops the GPU for a CPU callback.

A host callback launched on the capture stream (``cuLaunchHostFunc``, ``cudaLaunchHostFunc``,
a library's progress or logging hook) becomes a host node of the graph. At each replay the
GPU work after it waits until the CPU has run the callback, and the CPU thread that runs it
is the driver's: the replay pays a round trip to the host in the middle of its work, the
overhead a graph was meant to remove.

How to fix: run the callback outside the captured region (after the replay, or from an event
the host polls), or record an event in the graph and wait for it on the host.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import WARNING, WASTEFUL, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace import anatomy
from graphdoctor.trace.names import CAPTURED

ID, NAME = "GD210", "host-node-in-graph"


def check(view: TraceView) -> Iterator[Finding]:
    for graph in view.graphs:
        held = graph.anatomy
        if held is None or graph.status != CAPTURED or not held.count_of(anatomy.HOST):
            continue
        hosts = held.count_of(anatomy.HOST)
        named = ", ".join(held.host_functions[:3]) or "not named"
        yield RULE.finding(
            title=f"graph {graph.id} holds {hosts} host node{'s' if hosts > 1 else ''}: each "
                  "replay stops the GPU for a CPU callback",
            explanation=(f"Graph {graph.id} (captured at {view.where(graph.stack)}) has "
                         f"{anatomy.summary(held)}. Its host nodes run CPU functions ({named}) "
                         "in the middle of each replay, and the GPU work after them waits "
                         "until the driver's thread has run them."),
            fix="Call the function outside the captured region, after the replay, or poll an "
                "event recorded in the graph.",
            location=view.location(graph.stack), graph=graph.id,
            measurements={"host_nodes": hosts, "nodes": held.nodes})


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=WASTEFUL)
