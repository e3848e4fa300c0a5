"""The timeline's ``:`` prompt: a time or a range to show, typed as people write them
(:func:`graphdoctor.tui.timeline.targets.typed_window` reads it)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from graphdoctor.tui.timeline.targets import EXAMPLES

PROMPT = (f"Show a time or a range (e.g. {EXAMPLES}; from the run's start, +D from the "
          "cursor). Enter goes, esc cancels.")


class GoToTime(ModalScreen[str | None]):
    """Asks for a time or a range; dismissed with what was typed, or None."""

    DEFAULT_CSS = """
    GoToTime {
        align: center bottom;
    }
    GoToTime > Vertical {
        height: auto;
        background: $panel;
        padding: 0 1;
    }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]

    def __init__(self) -> None:
        super().__init__()
        self._dismissed = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(PROMPT)
            yield Input(placeholder="1.20s-1.21s", id="go-to")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._close(event.value.strip() or None)

    def action_cancel(self) -> None:
        self._close(None)

    def _close(self, typed: str | None) -> None:
        """Dismissed once, and only while it is the screen shown: a second Esc or Enter
        typed before it has gone, or a number key that switched screens meanwhile, would
        otherwise pop the screen under it (as :class:`~graphdoctor.tui.search.SearchPalette`
        guards against too)."""
        if self._dismissed or self.app.screen is not self:
            return
        self._dismissed = True
        self.dismiss(typed)
