"""Ctrl-C while graphdoctor finishes the report, once the script has ended.

Building and writing the report takes a moment after the script is gone, long for a large
recording, and a user who pressed Ctrl-C to stop the script often presses it again. Python's
own handling would end graphdoctor with a traceback (click's ``Aborted!``) and no report.
While :class:`FinishingReport` is in effect, the first SIGINT, SIGTERM or SIGHUP is noted and
answered (the report is on its way); a further one stops the work with
:class:`ReportStopped`, which the caller turns into one line that says where the raw
recording is kept. The signal relay of a run started meanwhile takes precedence, and hands
on what comes after its run (:mod:`graphdoctor.launch.relay`).
"""

from __future__ import annotations

import signal
from types import FrameType, TracebackType

from graphdoctor.launch.notice import tell
from graphdoctor.launch.relay import Handler
from graphdoctor.trace.endings import signal_name

# Not SIGQUIT: it asks for a core dump, as it always does.
NOTED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class ReportStopped(BaseException):  # noqa: N818 - not an error: the user's choice
    """A further signal stopped the report. A BaseException, as KeyboardInterrupt is: no
    ``except Exception`` on the way may take it for a failure of its own."""

    def __init__(self, signum: int):
        super().__init__(signal_name(signum))
        self.exit_code = 128 + signum


class FinishingReport:
    """While in effect, the first ending signal is noted, a further one stops the work."""

    def __init__(self) -> None:
        self.noted: int | None = None
        self._previous: dict[int, Handler] = {}

    def __enter__(self) -> FinishingReport:
        # one ignored when graphdoctor started (nohup) stays ignored, and the script inherits
        # it as it always has
        heeded = [s for s in NOTED_SIGNALS if signal.getsignal(s) != signal.SIG_IGN]
        self._previous = {s: signal.signal(s, self._on_signal) for s in heeded}
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.noted is not None:
            raise ReportStopped(signum)
        self.noted = signum
        again = "Ctrl-C" if signum == signal.SIGINT else signal_name(signum)
        tell(f"graphdoctor: finishing the report ({again} again to stop and keep the raw "
             "recording)")
