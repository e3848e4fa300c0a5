"""Graphs: every capture with its id, API, status, pool, capture time, replays and timings,
beside the same work run eagerly. The selected graph's details show where it was captured,
why it failed if it did, its verdict and its findings; enter shows the capture on the
timeline. A distributed run lists each rank's graphs, rank first (each rank has a graph 0).
Many graphs from one line are one row, which enter opens to list them
(:mod:`graphdoctor.tui.graph_groups`); enter on a graph opens its story: the capture step
by step, and eager beside replay (:mod:`graphdoctor.tui.screens.graph_story`). / filters
the table; down past its last row goes on to the details.
Where the recorder read a graph's content, the table counts its nodes and the details say
what they are: node types, the longest chain and widest level, the largest kernel groups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from graphdoctor.clean_text import clean
from graphdoctor.trace import anatomy
from graphdoctor.trace.anatomy import Anatomy
from graphdoctor.trace.model import NONE
from graphdoctor.tui.aggregate import GraphRow, Timing
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.graph_groups import (
    Entry,
    GraphGroup,
    GroupKey,
    group_of,
    group_rows,
    shown_rows,
)
from graphdoctor.tui.navigation import ShowEvent
from graphdoctor.tui.palette import (
    GRAPH_STATUS_STYLES,
    SEVERITY_BADGES,
    severity_badge,
    severity_style,
)
from graphdoctor.tui.rendering import culprit_source, error_text, hanging, stack_text
from graphdoctor.tui.report_view import GraphKey, ReportView
from graphdoctor.tui.safe_text import report_text
from graphdoctor.tui.screens.base import ScreenEntry
from graphdoctor.tui.screens.filtered import FilteredScreen
from graphdoctor.tui.screens.graph_story import GraphStoryScreen
from graphdoctor.tui.screens.help import binding_lines
from graphdoctor.tui.widgets.table_filter import filter_keys
from graphdoctor.units import NOT_MEASURED_WORDS, counted, format_bytes, format_duration

# What a person reads first comes first, so that 80 columns show it: the graph, how it
# ended, how often it ran and its times against eager; then where and how it was made.
COLUMNS = ("graph", "status", "replays", "replay GPU", "eager GPU", "replay host",
           "eager host", "api", "nodes", "pool", "capture", "function")
KERNEL_LINES = 5  # kernel groups the details list
VERDICT_LABEL = "verdict:"  # a detail's verdict line wraps under its text, after this


def _duration(value: float | None) -> Text:
    return Text("—" if value is None else format_duration(value), justify="right")


def _in_order(cells: dict[str, Any], rank: int | None) -> tuple[Any, ...]:
    """A row's cells in COLUMNS' order, its rank first in a multi-rank report."""
    first = (Text(str(rank), justify="right"),) if rank is not None else ()
    return first + tuple(cells[column] for column in COLUMNS)


def graph_cells(row: GraphRow, with_rank: bool = False) -> tuple[Any, ...]:
    return _in_order(_cells(row), row.rank if with_rank else None)


def _cells(row: GraphRow) -> dict[str, Any]:
    graph = row.graph
    capture = graph.capture_end - graph.capture_start if graph.capture_end != NONE else None
    return {"graph": f"{graph.id}" + (" (internal)" if graph.internal else ""),
            "api": report_text(graph.api),
            "status": report_text(graph.status, GRAPH_STATUS_STYLES.get(graph.status, "")),
            "nodes": Text("—" if graph.anatomy is None else f"{graph.anatomy.nodes:,}",
                          justify="right"),
            "pool": report_text(row.pool or "—"), "capture": _duration(capture),
            "replays": Text(str(row.replays.count), justify="right"),
            "replay host": _duration(row.replays.host), "replay GPU": _duration(row.replays.gpu),
            "eager host": _duration(row.eager.host), "eager GPU": _duration(row.eager.gpu),
            "function": report_text(row.function)}


def group_cells(group: GraphGroup, shown: bool, with_rank: bool = False) -> tuple[Any, ...]:
    """A group's row: how many, how they ended, their replays and median times."""
    cells = {"graph": group.title(shown), "api": report_text(group.key[1]),
             "status": report_text(group.statuses), "nodes": Text("", justify="right"),
             "pool": "", "capture": Text(""),
             "replays": Text(f"{group.replays}", justify="right"),
             "replay host": _duration(group.median("replays", "host")),
             "replay GPU": _duration(group.median("replays", "gpu")),
             "eager host": _duration(group.median("eager", "host")),
             "eager GPU": _duration(group.median("eager", "gpu")),
             "function": report_text(group.where)}
    return _in_order(cells, group.key[0] if with_rank else None)


class GraphsScreen(FilteredScreen):
    FILTERED = "#graphs-table"
    BINDINGS = [Binding("enter", "open", "Open graph or group"),
                Binding("t", "show_capture", "Capture on timeline"), *filter_keys()]

    def __init__(self, view: ReportView, screens: Sequence[ScreenEntry], name: str) -> None:
        super().__init__(view, screens, name)
        self._pending: GraphKey | None = None  # asked for before the rows were in
        self._entries: list[Entry] | None = None  # graphs and groups, once counted
        self._open: frozenset[GroupKey] = frozenset()
        self._shown: list[Entry] = []  # the table's rows, in order

    @classmethod
    def key_help(cls) -> list[tuple[str, str]]:
        return binding_lines(cls.BINDINGS)

    def compose(self) -> ComposeResult:
        yield self.mode_bar()
        yield from self.table_and_detail("graphs-table", "graph-detail", "graph-text")

    def on_mount(self) -> None:
        table = self.query_one("#graphs-table", DataTable)
        table.add_columns(*(("rank",) if self.view.multi_rank else ()), *COLUMNS)
        table.loading = True
        table.focus()
        self._compute()

    @work(thread=True, exclusive=True)
    def _compute(self) -> None:
        """Replay timings read every replay: off the UI thread."""
        view = self.view
        entries = group_rows(view, view.graph_rows)
        self.app.call_from_thread(self._fill, entries, view)

    def _fill(self, entries: list[Entry], view: ReportView | None = None) -> None:
        if view is not None and view is not self.view:
            return  # counted for the report a live view had before
        self._entries = entries
        self.query_one("#graphs-table", DataTable).loading = False
        self._show_rows()
        if not entries:
            self.query_one("#graph-text", Static).update("This run captured no CUDA graph.")
        pending, self._pending = self._pending, None
        if pending is not None:
            self.reveal(pending)

    def _show_rows(self, cursor: int = 0) -> None:
        """The table's rows again, groups open or closed as ``_open`` says, those the filter
        keeps."""
        table = self.query_one("#graphs-table", DataTable)
        table.clear()
        rows = [(entry, self._cells(entry)) for entry in shown_rows(self._entries or [],
                                                                    self._open)]
        kept = self.row_filter.kept(rows, lambda row: row[1])
        self._shown = [entry for entry, _ in kept]
        for _, cells in kept:
            table.add_row(*cells)
        if self._shown:
            table.move_cursor(row=min(cursor, len(self._shown) - 1))

    def _cells(self, entry: Entry) -> tuple[Any, ...]:
        if isinstance(entry, GraphGroup):
            return group_cells(entry, entry.key in self._open, self.view.multi_rank)
        return graph_cells(entry, self.view.multi_rank)

    def refilter(self) -> None:
        if self._entries is not None:  # else the rows, once counted, are filtered then
            self._show_rows()

    def toggle(self, group: GraphGroup) -> None:
        """Open a group to list its graphs under it, or close it."""
        self._open ^= {group.key}
        self._show_rows(self._shown.index(group))

    def reveal(self, key: GraphKey) -> None:
        """Highlight the graph ``key``. Asked before the rows are in (they are counted off the
        UI thread), it waits for them."""
        if self._entries is None:
            self._pending = key
            return
        group = group_of(self._entries, *key)
        if group is not None and group.key not in self._open:
            self.toggle(group)
        if key not in self._graph_keys() and self.row_filter.typed:  # filtered out
            self.row_filter.action_clear()
            self._show_rows()
        rows = self._graph_keys()
        if key in rows:
            self.query_one("#graphs-table", DataTable).move_cursor(row=rows.index(key))

    def _graph_keys(self) -> list[GraphKey | None]:
        """The graph each row shows (None for a group's row)."""
        return [(e.rank, e.graph.id) if isinstance(e, GraphRow) else None for e in self._shown]

    def kept_place(self) -> object:
        entry = self._entry()
        return (entry.rank, entry.graph.id) if isinstance(entry, GraphRow) else None

    def return_to(self, place: object) -> None:
        """The rows are counted anew off the UI thread: the graph is shown once they are in."""
        self._entries = None
        if isinstance(place, tuple):
            self._pending = place

    def _entry(self) -> Entry | None:
        cursor = self.query_one("#graphs-table", DataTable).cursor_row
        return self._shown[cursor] if 0 <= cursor < len(self._shown) else None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        entry = self._entry()
        if entry is not None:
            shown = entry if isinstance(entry, GraphRow) else group_text(entry)
            self.query_one("#graph-text", Static).update(
                self.graph_text(shown) if isinstance(shown, GraphRow) else shown)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open(self) -> None:
        """A group opens or closes; a graph's story opens on its own screen."""
        entry = self._entry()
        if isinstance(entry, GraphGroup):
            self.toggle(entry)
        elif entry is not None:
            self.app.push_screen(GraphStoryScreen(self.view, entry.rank, entry.index))

    def action_show_capture(self) -> None:
        entry = self._entry()
        row = entry.members[0] if isinstance(entry, GraphGroup) else entry
        if row is not None:
            self.post_message(ShowEvent(EventRef("graphs", row.index, row.rank)))

    def graph_text(self, row: GraphRow) -> RenderableType:
        """What became of a graph: verdict, timings, pool, errors, findings, where."""
        graph, view, trace = row.graph, self.view, self.view.trace_of(row.rank)
        whose = f"rank {row.rank} · " if view.multi_rank else ""
        text = report_text(f"{whose}graph {graph.id} · {graph.api} · {graph.status}\n", "bold")
        if graph.internal:
            text.append("torch.compile's own capture, which keeps its memory pool; not yours\n",
                        style="dim")
        verdict = view.verdict_for(graph.id, row.rank)
        if verdict is not None:  # its summary names the kind and the speedup itself
            text.append(clean(f"{VERDICT_LABEL} {verdict.summary}\n"))
        text.append_text(timings_text(row.replays, row.eager))
        text.append_text(_content(graph.anatomy, graph.id))
        if graph.pool_bytes:
            text.append(clean(f"its pool ({row.pool}) holds "
                              f"{format_bytes(graph.pool_bytes)}\n"))
        text.append_text(self._problems(graph.id, row.rank))
        text.append("captured at (innermost last)", style="underline")
        frames = trace.stack(graph.stack)
        source = culprit_source(view, frames)
        return Group(hanging(text, (*SEVERITY_BADGES.values(), VERDICT_LABEL)),
                     stack_text(frames, trace.meta.cwd),
                     *([source] if source is not None else []))

    def _problems(self, graph: int, rank: int) -> Text:
        """The error that failed the capture, with its cause, and the graph's findings."""
        text, view = Text(), self.view
        for record in view.trace_of(rank).exceptions:
            if record.graph == graph and record.where == "capture_end":
                text.append("raised  ", style="dim")
                text.append_text(error_text(view, record.raised, rank))
                text.append("\nbecause ", style="dim")
                text.append_text(error_text(view, record.root, rank))
                text.append("\n")
        for finding in view.findings:
            if finding.graph == graph and view.on_rank(finding, rank):
                text.append(clean(f"{severity_badge(finding.severity)} "),
                            style=severity_style(finding.severity))
                text.append(clean(f"{finding.id} {finding.title}\n"))
        return text


def group_text(group: GraphGroup) -> Text:
    """A group: where its graphs come from, how they ended, and each member in brief."""
    text = report_text(f"{counted(len(group.members), 'graph')} captured by {group.key[1]} "
                       f"at {group.where}\n", "bold")
    text.append(clean(f"{group.statuses} · {counted(group.replays, 'replay')} in all\n"))
    text.append("enter lists them; each opens on its own\n", style="dim")
    for row in group.members:
        text.append(clean(f"  graph {row.graph.id} · {row.graph.status} · "
                          f"{counted(row.replays.count, 'replay')}\n"))
    return text


def _content(found: Anatomy | None, graph_id: int) -> Text:
    """What the graph holds: nodes by type and shape, its largest kernel groups (with their
    GPU time in a profiled replay, under --full), its host nodes' functions."""
    if found is None:
        return Text()
    text = Text("content: ", style="bold")
    text.append(clean(anatomy.summary(found) + "\n"))
    for line in anatomy.top_kernels(found, KERNEL_LINES):
        text.append(clean(f"  {line}\n"))
    for function in found.host_functions[:KERNEL_LINES]:
        text.append(clean(f"  host node: {function}\n"), style="red")
    if found.nodes_kept and found.nodes:
        text.append(f"  every node and edge: graphdoctor export REPORT -f dot --graph {graph_id}\n",
                    style="dim")
    return text


def timings_text(replays: Timing, eager: Timing) -> Text:
    """The replays' and the eager steps' medians, a side not measured said so."""
    text = Text()
    if replays.count:
        text.append(f"{replays.count} replays, medians: {_sides(replays)}\n")
    if eager.count:
        text.append(f"{eager.count} eager steps of the same work, medians: {_sides(eager)}\n")
    return text


def _sides(timing: Timing) -> str:
    """``host 7.74 µs, GPU 686 µs``, each side "not measured" where it was not."""
    host, gpu = (NOT_MEASURED_WORDS if ns is None else format_duration(ns)
                 for ns in (timing.host, timing.gpu))
    return f"host {host}, GPU {gpu}"
