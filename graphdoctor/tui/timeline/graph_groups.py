"""Many graphs from one line, as one lane of the timeline that opens into a row per graph.

A loop that captures a graph per shape puts dozens of captures on one stream lane, and
nothing there says which capture is which graph. Each group of the Graphs screen
(:mod:`graphdoctor.tui.graph_groups`: graphs of one site, :mod:`graphdoctor.facts.graph_sites`)
gets a lane of its own: all its captures and replays on one row, labelled with the count
and the line; ``x`` on it lists each graph on a row of its own under it, and closes them
again. Pure; no Textual import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from graphdoctor.facts.graph_sites import grouped, site
from graphdoctor.trace.model import NONE, Graph, Trace
from graphdoctor.tui import palette as marks
from graphdoctor.tui.timeline.lanes import Lane, LaneRow
from graphdoctor.tui.timeline.series import Series, TimeOrder

GROUP_KEY = "graph-group:"


@dataclass(eq=False)
class GraphGroupLane(Lane):
    """A group's lane: its first row draws every member; open, a row per member follows."""

    members: list[Lane] = field(default_factory=list)
    opened: bool = False

    def rows(self, edges: Sequence[int]) -> list[LaneRow]:
        rows = [(self.label, self.merged(edges)[0])]
        if self.opened:
            rows += [(member.label, member.merged(edges)[0]) for member in self.members]
        return rows

    def toggle(self) -> None:
        """Open (a row per graph) or close (one row for all)."""
        self.opened = not self.opened
        self.height = 1 + (len(self.members) if self.opened else 0)


def graph_group_lanes(trace: Trace, replays: TimeOrder, run_end: int) -> list[Lane]:
    """A lane per group of graphs from one line, in the order of their first capture."""
    lanes: list[Lane] = []
    for where, graphs in _groups(trace).items():
        members = [_member_lane(trace, replays, run_end, graph) for graph in graphs]
        lanes.append(GraphGroupLane(
            f"{GROUP_KEY}{graphs[0].id}", f"{len(graphs)}× {where}",
            [series for member in members for series in member.series], members=members,
            about=f"{len(graphs)} graphs captured at {where}: x lists them one per row"))
    return lanes


def _groups(trace: Trace) -> dict[str, list[Graph]]:
    """The groups of graphs that share a site (:mod:`.graph_sites`), keyed by the line."""
    keys = [site(trace, graph) for graph in trace.graphs]
    return {key[1]: graphs for key, graphs in grouped(trace.graphs, keys) if key is not None}


def _member_lane(trace: Trace, replays: TimeOrder, run_end: int, graph: Graph) -> Lane:
    """One graph: its capture (hatched if it failed) and its replays' GPU spans."""
    index = trace.graphs.index(graph)
    failed = graph.status == "failed"
    end = graph.capture_end if graph.capture_end != NONE else run_end
    capture = Series("graphs", "capture", marks.FAILED_CAPTURE_SPAN if failed
                     else marks.CAPTURE_SPAN, [graph.capture_start], [index],
                     [max(end, graph.capture_start)], shaded=False)
    positions = replays.where(graph=graph.id)
    gpu_ends = list(map(max, replays.ends_at(positions, "gpu"), replays.ends_at(positions, "dur")))
    replayed = Series("replays", "replay (GPU)", marks.REPLAY_GPU, replays.times_at(positions),
                      replays.rows_at(positions), gpu_ends, boundaries=True)
    return Lane(f"graph:{graph.id}", f"  graph {graph.id}",
                [series for series in (capture, replayed) if len(series)])
