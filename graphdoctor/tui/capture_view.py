"""What the capture view's timeline shows of one graph: the window, zoomed to fit its
capture, and the lanes the capture touched, taken from the run's own lanes (so an event
selected here is the event the Timeline screen shows). Pure; no Textual import."""

from __future__ import annotations

from graphdoctor.trace.model import Graph
from graphdoctor.tui.capture_story import capture_links
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.timeline.lanes import Lane
from graphdoctor.tui.timeline.layout import Window
from graphdoctor.tui.timeline.links import links_overlay, stream_lane_key
from graphdoctor.tui.timeline.view import Overlay

MARGIN_SHARE = 20  # a twentieth of the capture either side, so its edges show
KEPT = ("phases", "findings", "cpu:0", "syncs", "collectives", "compile")


def capture_limits(view: ReportView, rank: int, graph: Graph) -> Window:
    """The capture and a little either side, inside the run."""
    start, end = view.of(rank).capture_window(graph)
    margin = max((end - start) // MARGIN_SHARE, 1)
    return Window(max(start - margin, 0), min(end + margin, max(view.run_end, end)))


def capture_streams(view: ReportView, rank: int, graph: Graph) -> set[int]:
    """The capture stream and every stream forked from or joined to it."""
    links = capture_links(view.trace_of(rank), graph)
    return {graph.stream, *(s for link in links for s in (link.waiting, link.waited_on))}


def capture_lanes(view: ReportView, rank: int, graph: Graph) -> list[Lane]:
    """The lanes of the graph's rank that tell its capture, in the timeline's order."""
    key = view.rank_key(rank)
    wanted = {_ranked(name, key) for name in KEPT}
    wanted |= {stream_lane_key(s, key) for s in capture_streams(view, rank, graph)}
    lanes = [lane for lane in view.lanes if lane.key in wanted]
    return lanes or view.lanes[:1]


def capture_overlays(view: ReportView, rank: int, graph: Graph,
                     lanes: list[Lane]) -> tuple[Overlay, ...]:
    """The capture's forks and joins, drawn between ``lanes`` (its :func:`capture_lanes`)."""
    links = capture_links(view.trace_of(rank), graph)
    key = view.rank_key(rank)
    return (links_overlay(lanes, [(key, link) for link in links]),)


def run_overlays(view: ReportView) -> tuple[Overlay, ...]:
    """The forks and joins of every capture of every rank, for the Timeline screen."""
    links = [(key, link) for key, rank_view in view.rank_views.items()
             for graph in rank_view.trace.graphs
             for link in capture_links(rank_view.trace, graph)]
    return (links_overlay(view.lanes, links),) if links else ()


def _ranked(name: str, rank: int) -> str:
    return name if rank < 0 else f"r{rank}/{name}"
