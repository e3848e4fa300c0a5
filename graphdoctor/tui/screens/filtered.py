"""A screen whose focus is a table (or list) that / filters in place: the Findings, the
Graphs, the Allocations. Its keys are :func:`~graphdoctor.tui.widgets.table_filter.filter_keys`;
this class does what they ask and gives the table its focus back."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.css.query import NoMatches
from textual.widgets import Footer, Static

from graphdoctor.tui.screens.base import ReportScreen
from graphdoctor.tui.widgets.flow import FlowingScroll, FlowingTable
from graphdoctor.tui.widgets.table_filter import CLEAR_FILTER, TableFilter


class FilteredScreen(ReportScreen):
    """A report screen with a :class:`TableFilter` over its table, ``FILTERED``."""

    FILTERED = ""  # the selector of the table or list the filter keeps rows of

    @property
    def row_filter(self) -> TableFilter:
        return self.query_one(TableFilter)

    def table_and_detail(self, table: str, detail: str, text: str) -> ComposeResult:
        """The filter, the table it filters (id ``table``), the pane under it that tells of
        the row the cursor is on (``detail``, its text ``text``), and the footer."""
        yield TableFilter()
        yield FlowingTable(id=table, cursor_type="row", zebra_stripes=True)
        with FlowingScroll(id=detail):
            yield Static(id=text)
        yield Footer()

    def refilter(self) -> None:
        """Show the rows the filter keeps (each screen knows its own)."""
        raise NotImplementedError

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the filter has the keys, none of the screen's (Findings' enter, a priority
        key, would reach the screen before the filter's own enter); esc clears a filter
        only where there is one, and is the app's (back) otherwise."""
        try:
            row_filter = self.row_filter
        except NoMatches:  # asked before the screen is built, or while it is taken down
            return True
        if row_filter.typing:
            return False
        return bool(row_filter.typed) if action == CLEAR_FILTER else True

    def action_filter(self) -> None:
        self.row_filter.open()

    def action_clear_filter(self) -> None:
        self.row_filter.action_clear()

    def on_table_filter_changed(self) -> None:
        self.refilter()

    def on_table_filter_closed(self) -> None:
        self.query_one(self.FILTERED).focus()
