"""The signals sent to ``graphdoctor run``, passed on to the run it supervises.

The script runs in a session of its own (so that a time-out can end all it started), out of
the terminal's reach: the terminal's signals reach graphdoctor alone, and it passes them on.
Ctrl-C, SIGTERM, a closed terminal (SIGHUP) and Ctrl-\\ (SIGQUIT) go to the script's
process group (a distributed run's launcher passes them to the ranks, as torchrun does); the
first one is kept as the reason the run ended. Ctrl-Z stops every group of the run before
graphdoctor stops itself, and ``fg`` resumes them with it: SIGSTOP, since a group in another
session ignores SIGTSTP.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable
from types import FrameType, TracebackType

ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

Handler = Callable[[int, FrameType | None], object] | int | None


class SignalRelay:
    """While in effect, passes graphdoctor's signals on to the run's process groups."""

    def __init__(self, script_group: int, every_group: Callable[[], set[int]]):
        self.received: int | None = None  # the first ending signal graphdoctor was sent
        self._script_group = script_group
        self._every_group = every_group
        self._previous: dict[int, Handler] = {}

    def __enter__(self) -> SignalRelay:
        handlers: dict[int, Handler] = dict.fromkeys(ENDING_SIGNALS, self._pass_on)
        handlers[signal.SIGTSTP] = self._suspend
        self._previous = {s: signal.signal(s, h) for s, h in handlers.items()}
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _pass_on(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        send(signum, [self._script_group])

    def _suspend(self, signum: int, frame: FrameType | None) -> None:
        groups = self._every_group()
        send(signal.SIGSTOP, groups)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # graphdoctor stops here until SIGCONT (fg)
        signal.signal(signal.SIGTSTP, self._suspend)
        send(signal.SIGCONT, groups)


def send(signum: int, groups: Iterable[int]) -> None:
    """Send to each process group still there."""
    for group in groups:
        try:
            os.killpg(group, signum)
        except (ProcessLookupError, PermissionError):
            pass
