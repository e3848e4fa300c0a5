"""A replay opened into its graph's nodes, on rows under the stream that replayed it.

Zoomed in until a replay spans a few columns, each replay on a stream shows the nodes of
the graph it replayed, where :mod:`graphdoctor.facts.node_schedule` estimates they
ran: kernels named (demangled, shortened) where the run of columns has room, one graph
branch per row, the longest chain in colour and the other nodes grey. Node lengths are
a profiled replay's kernel times where ``run --full`` took them, else equal shares; the
lane's description says which. Zoomed out, where replays are narrower than that, the lane
shows where replays are, in grey.

The lane's events are the replays themselves, so enter selects the replay and n/N step
through them; :meth:`NodeLane.describe` names the node under the cursor. Pure; no Textual.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from graphdoctor.clean_text import clean
from graphdoctor.facts.node_schedule import NodeSchedule, PlacedNode, schedule
from graphdoctor.trace import anatomy as shapes
from graphdoctor.trace.anatomy import Anatomy
from graphdoctor.tui import palette as marks
from graphdoctor.tui.timeline.lanes import Lane, LaneRow
from graphdoctor.tui.timeline.layout import BLANK, Cell, write_labels
from graphdoctor.tui.timeline.series import Series
from graphdoctor.units import format_duration

MAX_ROWS = 4  # branches beyond the fourth are drawn on the fourth row
OPEN_FROM_COLUMNS = 4  # a replay opens into its nodes when it spans this many columns
NODE_LANE = "nodes:"  # lane keys: nodes:<stream>
NODES_LABEL = " └ nodes"  # under the stream lane whose replays it opens
CLOSED_STYLE = "bright_black"


Plan = tuple[Anatomy, NodeSchedule]  # a graph's content and where its nodes run


@dataclass(eq=False)
class NodeLane(Lane):
    """The nodes of the replays on one stream; ``replays`` is that stream's replay series
    (GPU spans), ``graphs`` the graph each of them replayed, ``plans`` each graph's
    schedule (absent where its nodes were not kept)."""

    replays: Series = field(default_factory=lambda: Series("replays", "", marks.NODE_OTHER, []))
    graphs: Sequence[int] = ()
    plans: Mapping[int, Plan] = field(default_factory=dict)

    def rows(self, edges: Sequence[int]) -> list[LaneRow]:
        width = len(edges) - 1
        grid = Grid([[BLANK] * width for _ in range(self.height)],
                    [[None] * width for _ in range(self.height)], {})
        visible = self.replays_in(edges[0], edges[-1])
        if len(visible) * OPEN_FROM_COLUMNS > width:
            _closed(self.replays, edges, grid.cells[0])
        else:
            for replay in visible:
                self._open(replay, edges, grid)
        labelled = [write_labels(cells, keys, grid.names)
                    for cells, keys in zip(grid.cells, grid.keys, strict=True)]
        return list(zip([self.label, *[""] * (self.height - 1)], labelled, strict=True))

    def replays_in(self, start: int, end: int) -> range:
        """The replays that overlap [start, end) (on one stream, one runs after another)."""
        first = max(bisect_right(self.replays.times, start) - 1, 0)
        if first < len(self.replays) and _end(self.replays, first) <= start:
            first += 1
        return range(first, bisect_left(self.replays.times, end))

    def _open(self, replay: int, edges: Sequence[int], grid: Grid) -> None:
        start, end = self.replays.times[replay], _end(self.replays, replay)
        columns = range(max(bisect_right(edges, start) - 1, 0),
                        min(bisect_left(edges, end), len(edges) - 1))
        plan = self.plans.get(self.graphs[replay])
        if plan is None:
            for column in columns:
                grid.cells[0][column] = (marks.NODE_UNKNOWN.glyph, marks.NODE_UNKNOWN.style)
            return
        found, nodes = plan
        length = max(end - start, 1)
        for row_index, row in enumerate(nodes.rows):
            at = min(row_index, self.height - 1)
            for column in columns:
                node = row.at((edges[column] - start) / length,
                              (edges[column + 1] - start) / length)
                if node is not None:
                    grid.put(at, column, f"{replay}:{node.node}", node_cell(found, node),
                             node_label(found, node.node))
        _mark_boundary(grid, columns, replay)

    def describe(self, t: int) -> str:
        """The node under moment ``t``: its number, kernel, estimated length and chain."""
        replay = bisect_right(self.replays.times, t) - 1
        if replay < 0 or _end(self.replays, replay) <= t:
            return ""
        graph = self.graphs[replay]
        plan = self.plans.get(graph)
        if plan is None:
            return f"graph {graph}: its nodes were not recorded"
        start, end = self.replays.times[replay], _end(self.replays, replay)
        share = (t - start) / max(end - start, 1)
        node = next((n for row in plan[1].rows for n in row.nodes if n.start <= share < n.end),
                    None)
        return _node_text(plan, node, end - start, graph)


@dataclass(frozen=True)
class Grid:
    """The lane's rows being drawn: cells, the node each column shows, and node names."""

    cells: list[list[Cell]]
    keys: list[list[str | None]]
    names: dict[str, str]

    def put(self, row: int, column: int, key: str, cell: Cell, name: str) -> None:
        self.cells[row][column] = cell
        self.keys[row][column] = key
        self.names[key] = name


def _end(series: Series, index: int) -> int:
    return series.ends[index] if series.ends is not None else series.times[index] + 1


def _closed(replays: Series, edges: Sequence[int], cells: list[Cell]) -> None:
    """Where replays are, in grey: too narrow here to open."""
    for column, cell in enumerate(replays.cells(edges)):
        if cell is not None:
            cells[column] = (cell[0], CLOSED_STYLE)


def _mark_boundary(grid: Grid, columns: range, replay: int) -> None:
    """The replay's first column as a boundary where the replay before it ends in the
    column just before (back-to-back replays would otherwise read as one bar)."""
    first, keys = columns.start, grid.keys[0]
    before = keys[first - 1] if 0 < first < len(keys) else None
    if before is not None and not before.startswith(f"{replay}:") and keys[first] is not None:
        grid.cells[0][first] = (marks.BOUNDARY, grid.cells[0][first][1])


def node_cell(found: Anatomy, placed: PlacedNode) -> Cell:
    """A node's glyph, by its type, in its colour on the longest chain and grey off it;
    kernels alternate two blues so that neighbours read as two."""
    kind = found.type_of(placed.node)
    if kind == shapes.KERNEL and found.kernel_of(placed.node).startswith(shapes.NCCL_KERNEL):
        mark = marks.NODE_COLLECTIVE
    else:
        mark = marks.NODE_MARKS.get(kind, marks.NODE_OTHER)
    if not placed.on_chain:
        return (mark.glyph, CLOSED_STYLE)
    style = mark.style
    if mark is marks.NODE_KERNEL and placed.node % 2:
        style = marks.NODE_KERNEL_ALTERNATE
    return (mark.glyph, style)


def node_label(found: Anatomy, node: int) -> str:
    """What a node's run of columns says: its kernel's own short name, or its type (the
    report's text, cleaned)."""
    name = found.kernel_of(node)
    return clean(short_label(name)) if name else found.type_of(node)


_SUFFIXES = ("_kernel_cuda", "_kernel_impl", "_kernel")


def short_label(name: str) -> str:
    """``vectorized_elementwise_kernel<tanh_kernel_cuda>`` → ``tanh``; an NCCL kernel by its
    collective (``AllReduce_Sum_f32``); otherwise the function's own name."""
    short = shapes.short_kernel_name(name)
    inner = short[short.find("<") + 1:-1] if short.endswith(">") else short
    inner = inner.removeprefix("ncclDevKernel_").removeprefix("ncclKernel_")
    for suffix in _SUFFIXES:
        inner = inner.removesuffix(suffix)
    return inner or short


def _node_text(plan: Plan, node: PlacedNode | None, length: int, graph: int) -> str:
    """``graph 0 node 8/400 ≈1.71 µs (equal shares) · longest chain · nvjet_sm90_…``: the
    name last, where a narrow terminal cuts it."""
    found, nodes = plan
    if node is None:
        return f"graph {graph}: between nodes"
    kernel = found.type_of(node.node) == shapes.KERNEL
    how = ("kernel time" if kernel else "median kernel's") if nodes.timed else "equal shares"
    chain = "longest chain" if node.on_chain else "off the longest chain"
    estimate = format_duration(round((node.end - node.start) * length))
    name = shapes.short_kernel_name(found.kernel_of(node.node)) if kernel else \
        found.type_of(node.node)
    return (f"graph {graph} node {node.node}/{found.nodes} ≈{estimate} ({how}) · {chain} · "
            f"{clean(name)}")


def node_lane(stream_lane: Lane, stream: int, replays: Series, graphs: Sequence[int],
              anatomies: Mapping[int, Anatomy]) -> list[Lane]:
    """The node lane to follow ``stream_lane`` (its own copy of the stream's ``replays``,
    which a rank's offset moves once per lane), where a replay on it has a graph whose
    nodes were kept; none otherwise."""
    plans = {graph: (anatomies[graph], found) for graph in set(graphs) if graph in anatomies
             for found in (schedule(anatomies[graph]),) if found is not None}
    rows = max((len(nodes.rows) for _, nodes in plans.values()), default=0)
    if not rows:
        return []
    timed = any(nodes.timed for _, nodes in plans.values())
    own = Series(replays.source, "replay (GPU)", replays.mark, replays.times, replays.rows,
                 replays.ends, boundaries=True)
    return [NodeLane(f"{NODE_LANE}{stream}", NODES_LABEL, [own], height=min(rows, MAX_ROWS),
                     rank=stream_lane.rank, about=_about(timed), replays=own, graphs=graphs,
                     plans=plans)]


def _about(timed: bool) -> str:
    lengths = "kernel times from the profiled replay" if timed else \
        "lengths estimated as equal shares (run --full to time kernels)"
    return (f"each replay's graph nodes, zoomed in: kernels {marks.NODE_KERNEL.glyph}, "
            f"copies {marks.NODE_COPY.glyph}, host callbacks {marks.NODE_HOST.glyph}, other "
            f"{marks.NODE_OTHER.glyph}; the longest chain in colour, the rest grey; {lengths}")
