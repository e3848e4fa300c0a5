"""``graphdoctor run --live``: the viewer open on the run while it is being recorded.

The viewer holds the terminal, in graphdoctor's own process (never the recorded one): the
run is supervised from a thread of its own, as ``run`` supervises it, while the main thread
draws. The script's stdout and stderr go to a file beside the report, which the view names,
and its stdin is /dev/null. Signals sent to graphdoctor are passed on to the script as ever,
by a relay put in effect here, in the main thread (Ctrl-C in the view is passed on the same
way; Ctrl-Z is the view's). When the run ends, the report it wrote takes the live one's place
in the view. Quitting the view leaves the script running: graphdoctor waits for it, says
so, and writes the report as ``run`` would.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from graphdoctor.cli.common import say
from graphdoctor.files.run_files import output_of
from graphdoctor.launch.relay import SignalRelay

if TYPE_CHECKING:
    from graphdoctor.cli.run import RunOptions
    from graphdoctor.launch.supervisor import RunRequest
    from graphdoctor.report.document import Report
    from graphdoctor.tui.live import LiveApp

Outcome = tuple[int, "Report | None", "Path | None"]  # the exit code, the report, its file
Recording = Callable[["RunOptions", "RunRequest", SignalRelay], Outcome]
WAIT_S = 0.2  # the main thread waits in steps, so that the signals it handles come through


@dataclasses.dataclass
class _Run:
    """The run, supervised from its own thread; what it gave, or what it raised."""

    options: RunOptions
    request: RunRequest
    recording: Recording
    relay: SignalRelay
    app: LiveApp | None = None
    outcome: Outcome | None = None
    error: BaseException | None = None

    def __call__(self) -> None:
        try:
            self.outcome = self.recording(self.options, self.request, self.relay)
        except BaseException as error:  # noqa: BLE001 - raised again in the main thread
            self.error = error
        self._hand_over()

    def _hand_over(self) -> None:
        """The report written, to the view still open (if it is)."""
        app, outcome = self.app, self.outcome
        if app is None or outcome is None or outcome[1] is None or outcome[2] is None:
            return
        report, written = outcome[1], outcome[2]
        try:
            app.call_from_thread(app.finish, report, written)
        except RuntimeError:  # the view was closed meanwhile
            pass


def record_live(options: RunOptions, request: RunRequest, recording: Recording) -> Outcome:
    """Record as ``recording`` does, from a thread, with the live view open meanwhile; its
    outcome once both the run and the view are done."""
    from graphdoctor.report.live import LiveFeed
    from graphdoctor.tui import run_live

    output = output_of(options.output, streamed=options.in_place)
    request = dataclasses.replace(request, output=output, progress=False)
    quiet = dataclasses.replace(options, quiet=True)  # its lines are said after the view
    with SignalRelay(None, suspends=False) as relay:
        run = _Run(quiet, request, recording, relay)
        thread = threading.Thread(target=run, name="graphdoctor-run", daemon=True)

        def started(app: LiveApp) -> None:
            run.app = app
            thread.start()

        feed = LiveFeed(request.files.spools(), own=True)
        crash = run_live(feed, Path(options.target).name, output=str(output),
                         following=", ".join(map(str, request.files.spools())),
                         started=started, stops_script=True)
        _wait(thread, crash, output)
    if run.error is not None:
        raise run.error
    say(f"graphdoctor: the script's output is in {output}")
    return run.outcome if run.outcome is not None else (1, None, None)


def _wait(thread: threading.Thread, crash: str | None, output: Path) -> None:
    if crash is not None:
        say(f"graphdoctor: the viewer crashed ({crash}); the run goes on")
    if thread.is_alive():
        say(f"graphdoctor: the view is closed; the script runs on (its output goes to "
            f"{output}); Ctrl-C stops it")
    while thread.is_alive():
        thread.join(WAIT_S)
