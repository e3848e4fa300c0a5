"""The last search, remembered: once a hit is chosen, n and N step to the next and previous
hit from any screen, round from the last to the first, and the bar on top says which
("hit 3 of 122 · n/N"). Esc, or a new search, forgets it; n and N are then each screen's
own again (the timeline's next event).

Its hits are those the search listed, in its order; or, where the hit chosen stands for a
sort of event ("sync item", first of 122), each event of that sort, in the order they
happened. The app holds one :class:`SearchHits`; its keys are :data:`HIT_KEYS`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from textual.app import App, ScreenStackError, UnknownModeError
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.signal import Signal

STEP_HIT = "step_hit"
CLEAR_SEARCH = "clear_search"
SEARCH_ACTIONS = frozenset({STEP_HIT, CLEAR_SEARCH})

HIT_KEYS: list[BindingType] = [
    # Priority, so that they come before the timeline's n and N; its own while no search is on
    # (the app's check_action turns them down then, and the key goes on to the timeline).
    Binding("n", f"{STEP_HIT}(1)", "Next hit of the search (once one is chosen)",
            show=False, priority=True),
    Binding("N", f"{STEP_HIT}(-1)", "Previous hit of the search", key_display="N", show=False,
            priority=True),
    Binding("escape", CLEAR_SEARCH, "Forget the search (esc again: back)", show=False),
]
"""The app's keys for a search's hits; before its esc for back, which they come ahead of."""


@dataclass(frozen=True)
class HitTrail:
    """A search's hits in order, and which one is on show: ``message_at(n)`` is the message
    that opens hit ``n`` (of ``count``)."""

    count: int
    message_at: Callable[[int], Message]
    position: int = 0

    def moved(self, step: int) -> HitTrail:
        return replace(self, position=(self.position + step) % self.count)

    def wraps(self, step: int) -> bool:
        """Whether ``step`` goes round, past the last hit or before the first."""
        return not 0 <= self.position + step < self.count

    @property
    def note(self) -> str:
        return f"hit {self.position + 1} of {self.count} · n/N"

    def message(self) -> Message:
        return self.message_at(self.position)


class SearchChosen(Message):
    """A hit was chosen in the search: open it, and remember its ``trail`` for n and N."""

    def __init__(self, trail: HitTrail) -> None:
        super().__init__()
        self.trail = trail


class SearchHits:
    """The app's last search: its hits, the one on show, and a signal with the bar's note
    ("" once forgotten) for each change."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.trail: HitTrail | None = None
        self.changed: Signal[str] = Signal(app, "search-hits-changed")

    @property
    def note(self) -> str:
        return self.trail.note if self.trail is not None else ""

    def holds_keys(self) -> bool:
        """Whether n, N and esc are the search's: a hit was chosen, and neither a box (the
        search, the help) nor a text field (a table's filter) has the keys."""
        from textual.widgets import Input  # not at start-up: Textual loads widgets lazily

        if self.trail is None:
            return False
        try:
            shown = self.app.screen
        except (ScreenStackError, UnknownModeError):  # the footer asks while the app closes
            return False
        return not shown.is_modal and not isinstance(self.app.focused, Input)

    def choose(self, trail: HitTrail) -> None:
        self._show(trail)

    def step(self, step: int) -> None:
        """To the next (1) or previous (-1) hit; past the last, round to the first, said."""
        if self.trail is None:
            return
        if self.trail.wraps(step):
            end = "first" if step > 0 else "last"
            self.app.notify(f"Search wrapped round to the {end} hit.", timeout=2)
        self._show(self.trail.moved(step))

    def clear(self) -> None:
        if self.trail is not None:
            self.trail = None
            self.changed.publish("")

    def _show(self, trail: HitTrail) -> None:
        self.trail = trail
        self.app.post_message(trail.message())
        self.changed.publish(trail.note)


def search_hits(app: App[Any]) -> SearchHits | None:
    """The search an app remembers, for the widgets that show it (None in an app without)."""
    hits = getattr(app, "search_hits", None)
    return hits if isinstance(hits, SearchHits) else None
