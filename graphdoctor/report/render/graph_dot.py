"""One captured graph as Graphviz DOT (``graphdoctor export --format dot --graph N``), drawn
from the anatomy its report keeps: each node with its type (a kernel with its short name),
each dependency an edge. Host nodes stand out, since each one stops the GPU for the CPU."""

from __future__ import annotations

from graphdoctor.clean_text import clean
from graphdoctor.errors import GraphDoctorError
from graphdoctor.facts import queries
from graphdoctor.report.document import Report
from graphdoctor.report.render import common
from graphdoctor.trace import anatomy
from graphdoctor.trace.anatomy import Anatomy
from graphdoctor.trace.model import Graph

SHAPES = {anatomy.KERNEL: "box", anatomy.HOST: "octagon", anatomy.MEMCPY: "ellipse",
          anatomy.MEMSET: "ellipse"}
_HOST_INDEX = anatomy.NODE_TYPES.index(anatomy.HOST)
HOST_STYLE = ', style=filled, fillcolor="#f4a6a6"'


class NoGraphDrawing(GraphDoctorError):
    """The graph asked for is not in the report, or its nodes were not kept."""


def to_dot(report: Report, graph_id: int, rank: int = -1) -> str:
    """Graph ``graph_id`` (of ``rank``, in a multi-rank report) as DOT text."""
    graph = _graph(report, graph_id, rank)
    found = graph.anatomy
    if found is None:
        raise NoGraphDrawing(f"graph {graph_id} has no anatomy in this report (it failed, "
                             "it was recorded without cuda-bindings, or before schema 1.7)")
    if not found.nodes_kept:
        why = (f"it has {found.nodes:,} nodes, more than the {anatomy.MAX_STRUCTURE:,} whose "
               "edges a report keeps" if found.nodes > anatomy.MAX_STRUCTURE else
               "the report keeps its counts but not its nodes and edges")
        raise NoGraphDrawing(f"graph {graph_id} cannot be drawn: {why}")
    title = f"graph {graph_id}: {anatomy.summary(found)}"
    lines = [f'digraph "graph_{graph_id}" {{', f"  label={_quoted(title)};",
             "  node [fontname=monospace, fontsize=10];"]
    lines += [f"  n{i} [{_node_attributes(found, i)}];" for i in range(len(found.node_type))]
    lines += [f"  n{a} -> n{b};" for a, b in found.edge_list]
    return "\n".join([*lines, "}", ""])


def _graph(report: Report, graph_id: int, rank: int) -> Graph:
    for on_rank, trace in common.rank_traces(report):
        for graph in queries.user_graphs(trace):
            if graph.id == graph_id and (rank < 0 or on_rank == rank):
                return graph
    ranks = f" of rank {rank}" if rank >= 0 else ""
    raise NoGraphDrawing(f"no graph {graph_id}{ranks} in this report")


def _node_attributes(found: Anatomy, index: int) -> str:
    node_type, kernel = found.type_of(index), found.kernel_of(index)
    lines = [f"{index}: {anatomy.short_kernel_name(kernel) if kernel else node_type}"]
    extra = ""
    if node_type == anatomy.HOST:
        hosts_before = sum(1 for t in found.node_type[:index] if t == _HOST_INDEX)
        lines += list(found.host_functions[hosts_before:hosts_before + 1])
        extra = HOST_STYLE
    return f"label={_quoted(*lines)}, shape={SHAPES.get(node_type, 'ellipse')}{extra}"


def _quoted(*lines: str) -> str:
    """A DOT string of ``lines`` (shown one under another), cleaned and escaped."""
    escaped = (clean(line).replace("\\", "\\\\").replace('"', '\\"') for line in lines)
    return '"' + "\\n".join(escaped) + '"'
