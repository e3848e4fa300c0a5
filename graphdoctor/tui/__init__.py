"""graphdoctor's terminal UI over a report. Imports neither torch nor, until it runs, Textual.

    from graphdoctor.tui import can_run_interactively, run_app
    if can_run_interactively():
        run_app(report)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphdoctor.report.document import Report
    from graphdoctor.report.live import LiveFeed
    from graphdoctor.tui.live import LiveApp

__all__ = ["can_run_interactively", "run_app", "run_live"]


def can_run_interactively() -> bool:
    """True when a person is at a terminal: stdin and stdout are TTYs and TERM is usable.
    In CI and in pipes this is False, and nothing interactive should start."""
    try:
        ttys = sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False
    return ttys and os.environ.get("TERM", "") != "dumb"


def run_app(report: Report, name: str = "", *, headless: bool = False) -> str | None:
    """Open the TUI on ``report`` and return when the user quits: None, or if the app
    crashed, what crashed it in one line. (Textual prints the traceback and returns as if
    all went well; the caller decides what a crash means to its exit code.)"""
    from graphdoctor.tui.app import GraphDoctorApp

    app = GraphDoctorApp(report, name)
    app.run(headless=headless)
    return app.crash_summary() if app.return_code else None  # 1 after an unhandled error


def run_live(feed: LiveFeed, name: str, *, following: str, output: str = "",
             started: Callable[[LiveApp], None] | None = None,
             stops_script: bool = False) -> str | None:
    """Open the live view of ``feed`` and return when the user quits, as :func:`run_app`
    does; ``started`` is handed the app before it runs (the caller that will hand it the
    finished report); ``stops_script``: Ctrl-C in the view is passed on to the script."""
    from graphdoctor.tui.live import LiveApp

    app = LiveApp(feed, name, following=following, output=output, stops_script=stops_script)
    if started is not None:
        started(app)
    app.run()
    return app.crash_summary() if app.return_code else None
