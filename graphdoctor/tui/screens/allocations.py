"""Allocations: the caching allocator's activity by phase, by pool or by call site, sortable
by any column. The selected row's details show its source line (call sites) or the graphs
that share its pool; enter shows its largest allocation on the timeline. / filters the
table; down past its last row goes on to the details."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static, Tab, Tabs

from graphdoctor.clean_text import clean
from graphdoctor.tui.aggregate import ALLOC_COLUMNS, AllocGroup, sort_groups
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.navigation import ShowEvent
from graphdoctor.tui.rendering import culprit_source, stack_text
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.safe_text import report_text
from graphdoctor.tui.screens.base import ScreenEntry
from graphdoctor.tui.screens.filtered import FilteredScreen
from graphdoctor.tui.screens.help import binding_lines
from graphdoctor.tui.widgets.table_filter import filter_keys
from graphdoctor.units import counted, format_bytes, format_count

GROUP_TITLES = {"phase": "By phase", "pool": "By pool", "site": "By call site"}
HEADINGS = {"key": "", "allocs": "allocs", "allocated": "allocated", "frees": "frees",
            "freed": "freed", "net": "net", "reserved": "reserved", "largest": "largest"}
BYTE_COLUMNS = {"allocated", "freed", "net", "reserved", "largest"}
KEY_HEADINGS = {"phase": "phase", "pool": "pool", "site": "call site (your innermost line)"}


def cell(group: AllocGroup, column: str) -> Text:
    if column == "key":
        return report_text(group.label)  # with its rank, in a multi-rank report
    value = getattr(group, column)
    shown = format_bytes(value) if column in BYTE_COLUMNS else format_count(value)
    return Text(shown, justify="right")


# Keys the footer shows together, so that q Quit fits in 80 columns (the help lists each)
GROUP_BY = Binding.Group("Group", compact=True)  # by phase, pool, call site
SORT = Binding.Group("Sort", compact=True)


class AllocationsScreen(FilteredScreen):
    FILTERED = "#alloc-table"
    BINDINGS = [
        Binding("p", "group('phase')", "By phase", group=GROUP_BY),
        Binding("o", "group('pool')", "By pool", group=GROUP_BY),
        Binding("c", "group('site')", "By call site", group=GROUP_BY),
        Binding("less_than_sign", "sort_by(-1)", "Sort ←", key_display="<", group=SORT),
        Binding("greater_than_sign", "sort_by(1)", "Sort →", key_display=">", group=SORT),
        Binding("r", "reverse", "Reverse"),
        *filter_keys(),
    ]

    def __init__(self, view: ReportView, screens: Sequence[ScreenEntry], name: str) -> None:
        super().__init__(view, screens, name)
        self.grouping = "phase"
        self.sort_column = "allocated"
        self.descending = True
        self._groups: list[AllocGroup] = []
        self._sorted: list[AllocGroup] = []  # as the table shows them

    @classmethod
    def key_help(cls) -> list[tuple[str, str]]:
        return [*binding_lines(cls.BINDINGS),
                ("enter", "show the group's largest allocation on the timeline")]

    def compose(self) -> ComposeResult:
        yield self.mode_bar()
        yield Tabs(*(Tab(title, id=key) for key, title in GROUP_TITLES.items()), id="groupings")
        yield from self.table_and_detail("alloc-table", "alloc-detail", "alloc-text")

    def on_mount(self) -> None:
        self.query_one("#alloc-table", DataTable).focus()
        self._load(self.grouping)

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        if event.tab.id and event.tab.id != self.grouping:
            self._load(event.tab.id)

    def action_group(self, grouping: str) -> None:
        self.query_one("#groupings", Tabs).active = grouping

    def action_sort_by(self, step: int) -> None:
        index = ALLOC_COLUMNS.index(self.sort_column) + step
        self.sort_column = ALLOC_COLUMNS[index % len(ALLOC_COLUMNS)]
        self.descending = self.sort_column != "key"
        self._fill()

    def action_reverse(self) -> None:
        self.descending = not self.descending
        self._fill()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        self.descending = not self.descending if column == self.sort_column else column != "key"
        self.sort_column = column
        self._fill()

    # -- loading and filling ----------------------------------------------------------------
    def _load(self, grouping: str) -> None:
        self.grouping = grouping
        self.query_one("#alloc-table", DataTable).loading = True
        self._compute(grouping)

    @work(thread=True, exclusive=True)
    def _compute(self, grouping: str) -> None:
        """Totals of a million allocations take a moment: count them off the UI thread."""
        view = self.view
        groups = view.alloc_groups(grouping)
        self.app.call_from_thread(self._loaded, grouping, groups, view)

    def _loaded(self, grouping: str, groups: list[AllocGroup],
                view: ReportView | None = None) -> None:
        if grouping != self.grouping or view is not None and view is not self.view:
            return  # another grouping asked for since, or counted for a live view's last
        self._groups = groups
        table = self.query_one("#alloc-table", DataTable)
        table.loading = False
        self._fill()
        table.focus()  # a loading table gives its focus away: ↓ and enter are for its rows

    def refilter(self) -> None:
        self._fill()

    def _fill(self) -> None:
        """The table again: its headings, and the groups the filter keeps, sorted."""
        table = self.query_one("#alloc-table", DataTable)
        self._add_columns(table)
        rows = [(group, [cell(group, c) for c in ALLOC_COLUMNS])
                for group in sort_groups(self._groups, self.sort_column, self.descending)]
        kept = self.row_filter.kept(rows, lambda row: row[1])
        self._sorted = [group for group, _ in kept]
        for index, (_, cells) in enumerate(kept):
            table.add_row(*cells, key=str(index))
        if not self._groups:
            self.query_one("#alloc-text", Static).update(
                "No allocator events were recorded (graphdoctor records them in captures; "
                "run with --full for every allocation).")

    def _add_columns(self, table: DataTable[object]) -> None:
        """The table emptied, and its headings, the sorted column's with its arrow."""
        table.clear(columns=True)
        for column in ALLOC_COLUMNS:
            heading = KEY_HEADINGS[self.grouping] if column == "key" else HEADINGS[column]
            arrow = (" ▼" if self.descending else " ▲") if column == self.sort_column else ""
            table.add_column(heading + arrow, key=column)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self._sorted):
            group = self._sorted[event.cursor_row]
            self.query_one("#alloc-text", Static).update(self.group_text(group))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if 0 <= event.cursor_row < len(self._sorted):
            group = self._sorted[event.cursor_row]
            if group.largest_row >= 0:
                largest = EventRef("allocs", group.largest_row, group.rank)
                self.post_message(ShowEvent(largest))

    def group_text(self, group: AllocGroup) -> RenderableType:
        text = Text()
        text.append(f"{clean(group.label)}\n", style="bold")
        text.append(f"{counted(group.allocs, 'allocation')} of {format_bytes(group.allocated)}"
                    f", {counted(group.frees, 'free')} of {format_bytes(group.freed)}; "
                    f"largest {format_bytes(group.largest)} (enter: show it on the timeline)\n")
        if self.grouping == "pool":
            text.append_text(self._pool_users(group.key, group.rank))
        if self.grouping != "site" or group.stack < 0:
            return text
        trace = self.view.trace_of(group.rank)
        frames = trace.stack(group.stack)
        source = culprit_source(self.view, frames)
        return Group(text, stack_text(frames, trace.meta.cwd),
                     *([source] if source is not None else []))

    def _pool_users(self, pool: str, rank: int) -> Text:
        """The graphs of the group's rank captured into ``pool``: pool names repeat across
        ranks, as graph ids do."""
        users = [g for g in self.view.trace_of(rank).graphs if g.pool == pool]
        if not users:
            return Text("no graph captured into this pool\n", style="dim")
        shared = " (shared)" if len(users) > 1 else ""
        names = ", ".join(f"graph {g.id}" for g in users)
        return Text(f"captured into it{shared}: {names}\n")
