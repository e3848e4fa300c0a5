"""Arrows that flow from one part of a screen to the next: down past the last row of a list,
a table or a pane's text moves the focus to the part below it, up before the first row to
the part above; at the screen's first and last part the focus stays (no wrapping round).

Each part is a Textual widget that knows its own edges (:class:`FlowingList`,
:class:`FlowingTable`, :class:`FlowingScroll`, :class:`FlowingTimeline`); the parts of a
screen follow each other in its focus order (the order Tab visits them), hidden ones
left out."""

from __future__ import annotations

import functools
from collections.abc import Callable

from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import DataTable, OptionList

from graphdoctor.tui.widgets.timeline import Timeline

FLOWS = "flows"  # the CSS class of the parts arrows flow between


def hand_on(part: Widget, step: int) -> None:
    """Focus the part after ``part`` (``step`` 1) or before it (-1), if there is one; up
    from the first part, show the top of what holds it (a summary's headline above it)."""
    parts = _parts(part)
    index = parts.index(part) + step if part in parts else -1
    if 0 <= index < len(parts):
        parts[index].focus()
    elif step < 0:
        _show_top(part)


def move_or_hand_on(part: Widget, step: int, at_edge: bool, move: Callable[[], None]) -> None:
    """An arrow on ``part``: ``move`` within it, or, at its edge that way, hand on."""
    if at_edge:
        hand_on(part, step)
    else:
        move()


def _parts(part: Widget) -> list[Widget]:
    return [widget for widget in part.screen.focus_chain if widget.has_class(FLOWS)]


def _show_top(part: Widget) -> None:
    """Scroll the pane that holds ``part`` to its top, where that is above the first part."""
    holder = next((a for a in part.ancestors if isinstance(a, VerticalScroll)), None)
    if holder is not None:
        holder.scroll_home(animate=False)


class FlowingList(OptionList):
    """An option list whose arrows go on to the part above or below past its ends."""

    DEFAULT_CLASSES = FLOWS

    def action_cursor_down(self) -> None:
        move_or_hand_on(self, 1, self._at_edge(-1), super().action_cursor_down)

    def action_cursor_up(self) -> None:
        move_or_hand_on(self, -1, self._at_edge(0), super().action_cursor_up)

    def action_page_up(self) -> None:
        self._turn_page(super().action_page_up)

    def action_page_down(self) -> None:
        self._turn_page(super().action_page_down)

    @staticmethod
    def _turn_page(turn: Callable[[], None]) -> None:
        """Textual's option list turns a page by its laid-out lines, which a list whose
        options were just replaced (a live report's, a group opened) does not have yet: it
        raises KeyError (Textual 8's ``OptionList._move_page``). That key is dropped; the
        next one finds the list laid out."""
        try:
            turn()
        except KeyError:
            pass
    def action_first(self) -> None:
        """Home: the first option; on a screen's first part, its top too."""
        super().action_first()
        if self.is_mounted and _parts(self)[:1] == [self]:  # OptionList's own start calls it
            _show_top(self)

    def _at_edge(self, end: int) -> bool:
        """Whether the highlight is on the first (``end`` 0) or last (-1) enabled option."""
        enabled = [i for i, option in enumerate(self.options) if not option.disabled]
        return not enabled or self.highlighted == enabled[end]


class FlowingTable(DataTable[object]):
    """A table whose arrows go on to the part above or below past its first and last row."""

    DEFAULT_CLASSES = FLOWS

    def action_cursor_down(self) -> None:
        move_or_hand_on(self, 1, self.cursor_row >= self.row_count - 1,
                        super().action_cursor_down)

    def action_cursor_up(self) -> None:
        move_or_hand_on(self, -1, self.cursor_row <= 0, super().action_cursor_up)


class FlowingScroll(VerticalScroll):
    """A pane of text that scrolls with the arrows, and past its top or bottom hands the
    focus on (at once where all of it fits)."""

    DEFAULT_CLASSES = FLOWS

    def action_scroll_down(self) -> None:
        # the target, not the position: keys outrun the scroll
        move_or_hand_on(self, 1, self.scroll_target_y >= self.max_scroll_y,
                        super().action_scroll_down)

    def action_scroll_up(self) -> None:
        move_or_hand_on(self, -1, self.scroll_target_y <= 0, super().action_scroll_up)


class FlowingTimeline(Timeline):
    """A timeline whose up on its first lane and down on its last hand the focus on."""

    DEFAULT_CLASSES = FLOWS

    def action_lane(self, delta: int) -> None:
        edge = 0 if delta < 0 else len(self.lanes) - 1
        move_or_hand_on(self, delta, self.state.lane == edge,
                        functools.partial(super().action_lane, delta))
