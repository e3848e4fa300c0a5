"""What the TUI tests share: the reports they open and reading what a widget shows."""

from __future__ import annotations

import io

from rich.console import Console, RenderableType
from textual.pilot import Pilot
from textual.widgets import Static
from textual.worker import WorkerCancelled, WorkerState

from graphdoctor.demo import load_demo
from graphdoctor.report.document import Report
from graphdoctor.tui.app import GraphDoctorApp


def plain(renderable: RenderableType, width: int = 100) -> str:
    """A renderable as the plain text a terminal of ``width`` columns would show."""
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


def shown(app: GraphDoctorApp, selector: str, width: int = 100) -> str:
    """The text of a Static on the current screen."""
    return plain(app.screen.query_one(selector, Static).content,  # type: ignore[arg-type]
                 width)


def demo_app(name: str = "item_in_capture") -> GraphDoctorApp:
    """An app on a bundled demo: a GPU recording whose diagnosis is frozen in the file, so
    tests of findings do not move when the rules do."""
    return GraphDoctorApp(load_demo(name), f"demo: {name}")


def app_for(report: Report, name: str = "") -> GraphDoctorApp:
    return GraphDoctorApp(report, name)


async def settle(pilot: Pilot[None]) -> None:
    """Let background work (timeline index, totals) finish and the screen catch up. A
    search closed while it gathered hits cancels its worker on purpose (SearchPalette):
    waiting on that one raises WorkerCancelled, which is no error of the app's."""
    try:
        await pilot.app.workers.wait_for_complete()
    except WorkerCancelled:
        await pilot.app.workers.wait_for_complete(
            [w for w in pilot.app.workers if w.state != WorkerState.CANCELLED])
    await pilot.pause()


def screen_text(app: GraphDoctorApp) -> str:
    """The whole screen as plain text (Textual has no public call for it)."""
    update = app.screen._compositor.render_full_update()
    return "\n".join("".join(strip.text for strip in line) for line in update.strips)
