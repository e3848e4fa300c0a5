"""A capture that recorded nothing.

PyTorch warns "The CUDA Graph is empty" (and the driver lists no node in the graph) when no
work reached the capturing stream: the step ran on another stream that never forked from the
capture stream, on another device, or it did nothing on the GPU. Every replay of such a
graph is a no-op while the real work runs (or not) outside it.

An empty graph is legal and computes nothing wrong: it is waste, never unsafe. Replayed, it
is a warning (each replay launches nothing, and the work meant for it ran elsewhere or not
at all); never replayed, a note (PyTorch's own tests capture empty graphs on purpose).

How to fix: run the captured work on the capture stream (the current stream inside
``torch.cuda.graph``), on the device being captured; fork side streams from it.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import INFO, WARNING, WASTEFUL, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.facts import queries
from graphdoctor.trace.model import NONE, Graph
from graphdoctor.trace.names import CAPTURED

ID, NAME = "GD109", "empty-graph"


def check(view: TraceView) -> Iterator[Finding]:
    warned = _warned(view)
    for graph in view.graphs:
        no_nodes = graph.anatomy is not None and not graph.anatomy.nodes
        if graph.status != CAPTURED or not (graph.id in warned or no_nodes):
            continue  # a failed capture explains itself; the warning is a side effect
        replays = queries.replay_count(view.trace, graph)
        said = "PyTorch warned that the graph is empty" if graph.id in warned else ""
        read = "the driver listed 0 nodes in it" if no_nodes else ""
        yield RULE.finding(
            severity=WARNING if replays else INFO,
            title=f"graph {graph.id} captured nothing ({replays} replays did no work)",
            explanation=f"No work reached the capture stream of graph {graph.id} "
                        f"(captured at {view.where(graph.stack)}); "
                        f"{' and '.join(p for p in (said, read) if p)}.",
            fix="Run the step on the capture stream inside the captured block.",
            evidence=tuple(view.evidence("warnings", i) for i in warned.get(graph.id, ())),
            location=view.location(graph.stack), graph=graph.id)


def _warned(view: TraceView) -> dict[int, tuple[int, ...]]:
    """Graph -> the indices of PyTorch's "The CUDA Graph is empty" warnings about it."""
    found: dict[int, tuple[int, ...]] = {}
    for index, warning in enumerate(view.trace.warnings):
        graph = _graph_at(view, warning.t) if "CUDA Graph is empty" in warning.message else None
        if graph is not None:
            found[graph.id] = (*found.get(graph.id, ()), index)
    return found


def _graph_at(view: TraceView, t: int) -> Graph | None:
    for graph in view.graphs:
        end = graph.capture_end if graph.capture_end != NONE else view.end_time
        if graph.capture_start <= t <= end + 1_000_000:  # the warning comes from capture_end
            return graph
    return None


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=WASTEFUL)
