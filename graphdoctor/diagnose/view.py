"""TraceView: the read-only queries rules share."""

from __future__ import annotations

from graphdoctor.trace.model import Graph, Trace


class TraceView:
    def __init__(self, trace: Trace):
        self.trace = trace

    @property
    def graphs(self) -> list[Graph]:
        return [g for g in self.trace.graphs if not g.internal]
