"""What every screen of the app shares: the mode bar, the footer, the report's view, and
receiving a target (a finding, an event, a graph) that another screen asked it to show."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.screen import Screen

from graphdoctor.tui.report_view import ReportView

NARROW = 120  # below this many columns, panes stack instead of standing side by side


class ReportScreen(Screen[None]):
    MODE: ClassVar[str] = ""

    @property
    def view(self) -> ReportView:
        return self.app.view  # type: ignore[attr-defined, no-any-return]

    def reveal(self, target: Any) -> None:
        """Show ``target``; each screen knows its own kind of target."""

    def on_screen_resume(self) -> None:
        target = self.app.take_target(self.MODE)  # type: ignore[attr-defined]
        if target is not None:
            self.reveal(target)

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "narrow")
