"""/ on a screen with a table: a one-line filter over the table that keeps, as one types,
the rows whose text holds what was typed (case aside). Enter keeps the filter and gives the
table its focus back; Esc clears it. The line says how many rows match.

The widget filters the rows its screen hands it (:meth:`TableFilter.kept`): the screen
keeps its own list of what each row shows, so its keys still find a row's graph or
finding, whichever rows are left."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static

from graphdoctor.units import counted

FILTER = "filter"  # the screen's action that opens it
CLEAR_FILTER = "clear_filter"  # the screen's action that clears it
HINT = "type to keep the rows that hold it · enter keeps · esc clears"
CLEAR_WORDS = "Clear the filter"

Row = TypeVar("Row")


def filter_keys(search_in_footer: bool = True) -> list[BindingType]:
    """A filtered screen's keys: / filters its table, so the search is ctrl+f there (left out
    of a footer that has no room for it, where the help still lists it)."""
    return [Binding("slash", FILTER, "Filter", key_display="/"),
            Binding("ctrl+f", "app.search", "Search", show=search_in_footer),
            Binding("escape", CLEAR_FILTER, CLEAR_WORDS, show=False)]


def row_text(cells: Iterable[object]) -> str:
    """What a row shows, as plain text: its cells' text, a space between them."""
    return " ".join(cell.plain if isinstance(cell, Text) else str(cell) for cell in cells)


def match_line(kept: int, total: int, typed: str) -> str:
    """``12 of 240 rows match 'foo'``."""
    verb = "matches" if kept == 1 and total == 1 else "match"
    return f"{kept} of {counted(total, 'row')} {verb} {typed!r}"


class FilterInput(Input):
    """The filter's text field, its enter named in the footer (Textual's is not shown)."""

    BINDINGS = [Binding("enter", "submit", "Keep the filter")]


class TableFilter(Horizontal):
    """The filter line: what is typed, and how many rows it keeps. Hidden until opened."""

    DEFAULT_CSS = """
    TableFilter { height: 1; display: none; background: $boost; }
    TableFilter.-open { display: block; }
    TableFilter > Input { width: 1fr; }
    TableFilter > Static { width: auto; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "clear", CLEAR_WORDS)]

    class Changed(Message):
        """What the filter keeps changed: the screen shows its rows again."""

    class Closed(Message):
        """Enter or Esc in the filter: its table takes the focus back."""

    def __init__(self) -> None:
        super().__init__()
        self._applied = ""  # the text the rows were last kept by

    def compose(self) -> ComposeResult:
        # Disabled while hidden: else Textual's auto-focus, which looks past a hidden parent,
        # may give it the keys of a screen whose table is still loading.
        yield FilterInput(placeholder="/ filter", compact=True, disabled=True)
        yield Static(HINT)

    # Both asked for by the footer too, at any moment: before the field is composed, and
    # while it is taken down.
    @property
    def typed(self) -> str:
        """What the filter holds ("" for none)."""
        return next((field.value for field in self.query(FilterInput)), "")

    @property
    def typing(self) -> bool:
        """Whether the filter has the keys (its screen's own keys are not for now)."""
        return any(field.has_focus for field in self.query(FilterInput))

    def open(self) -> None:
        self.add_class("-open")
        field = self.query_one(FilterInput)
        field.disabled = False
        field.focus()

    def action_clear(self) -> None:
        """Forget the filter: every row again, the line hidden, the table focused."""
        self.query_one(FilterInput).value = ""
        self._hide()
        self.post_message(self.Closed())

    def _hide(self) -> None:
        self.remove_class("-open")
        self.query_one(FilterInput).disabled = True

    def kept(self, rows: Sequence[Row], cells: Callable[[Row], Iterable[object]]) -> list[Row]:
        """The ``rows`` whose ``cells`` hold the typed text; the line says how many."""
        self._applied = self.typed
        wanted = self.typed.casefold()
        kept = [row for row in rows if wanted in row_text(cells(row)).casefold()]
        said = match_line(len(kept), len(rows), self.typed) if wanted else HINT
        self.query_one(Static).update(Text(said))  # typed text, not markup
        return kept

    def on_input_changed(self, event: Input.Changed) -> None:
        """Ask for the rows again, unless its screen already showed them for this text (a
        screen that clears the filter to show a row shows the rows there and then)."""
        event.stop()
        if event.value != self._applied:
            self.post_message(self.Changed())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value:
            self._hide()
        self.post_message(self.Closed())
