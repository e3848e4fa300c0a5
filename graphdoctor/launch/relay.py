"""The signals sent to ``graphdoctor run``, passed on to the run it supervises.

The script runs in a session of its own (so that a time-out can end all it started), out of
the terminal's reach: the terminal's signals reach graphdoctor alone, and it passes them on.
Ctrl-C, SIGTERM, a closed terminal (SIGHUP) and Ctrl-\\ (SIGQUIT) go to the script's
process group (a distributed run's launcher passes them to the ranks, as torchrun does); the
first one is kept as the reason the run ended. Ctrl-Z stops every group of the run before
graphdoctor stops itself, and ``fg`` resumes them with it: SIGSTOP, since a group in another
session ignores SIGTSTP.

A signal ignored as graphdoctor starts (``nohup``, or a shell's background job, which
starts with SIGINT and SIGQUIT ignored) stays ignored, by graphdoctor and by the script,
which inherits it: as under plain Python, it reaches neither. A Ctrl-C the script itself
ignores (``signal.signal(SIGINT, SIG_IGN)``) is passed on, and ignored there, as it would be
without graphdoctor: the script runs on, and the run does not end for it.

The relay also notes when graphdoctor was first asked to stop the run, so that a script that
goes on regardless can be killed (the supervisor decides when). Once the run is over, the
signals that still come are kept, and raised again when the relay steps down: they are for
whoever handles them next (finishing the report), not for a run that is gone: the script's
process is looked at, so a Ctrl-C just after the script exited is not taken for the reason
the run ended.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable
from types import FrameType, TracebackType

from graphdoctor.launch.notice import tell

ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# Those after which a script that goes on is killed. Not SIGQUIT: it asks for a core dump,
# which a large process can take long to write.
STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

Handler = Callable[[int, FrameType | None], object] | int | None


class SignalRelay:
    """While in effect, passes graphdoctor's signals on to the run's process groups."""

    def __init__(self, script_group: int | None, every_group: Callable[[], set[int]] = set,
                 *, suspends: bool = True):
        self.received: int | None = None  # the first ending signal graphdoctor was sent
        self._stop_asked: tuple[int, float] | None = None  # the first stopping one, and when
        self._script_group = script_group
        self._every_group = every_group
        self._suspends = suspends
        self._previous: dict[int, Handler] = {}
        self._over = False
        self._late: list[int] = []  # sent once the run was over
        self._told_ignored = False

    def __enter__(self) -> SignalRelay:
        heeded = [s for s in ENDING_SIGNALS if signal.getsignal(s) != signal.SIG_IGN]
        handlers: dict[int, Handler] = dict.fromkeys(heeded, self._pass_on)
        if self._suspends:
            handlers[signal.SIGTSTP] = self._suspend
        self._previous = {s: signal.signal(s, h) for s, h in handlers.items()}
        return self

    def watch(self, script_group: int, every_group: Callable[[], set[int]]) -> None:
        """The run to pass signals on to, for a relay put in effect before it started (by
        the main thread, for a run started from another: ``run --live``, whose terminal
        the viewer holds, so that Ctrl-Z is the viewer's). A signal sent before is passed
        on now."""
        self._script_group, self._every_group = script_group, every_group
        if self.received is not None:
            send(self.received, [script_group])

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        for signum in self._late:
            signal.raise_signal(signum)

    def run_over(self) -> None:
        """The script has ended: the signals that come from now on are not passed on."""
        self._over = True

    def unheeded(self, grace_s: float) -> int | None:
        """The stopping signal passed on to the script more than ``grace_s`` ago, if any."""
        if self._stop_asked is None:
            return None
        signum, when = self._stop_asked
        return signum if time.monotonic() - when > grace_s else None

    def _pass_on(self, signum: int, frame: FrameType | None) -> None:
        group = self._script_group
        if self._over or group is not None and _ended(group):
            self._late.append(signum)
            return
        if group is not None and signum == signal.SIGINT and ignores(group, signum):
            send(signum, [group])  # as a terminal's Ctrl-C would: ignored there
            if not self._told_ignored:
                self._told_ignored = True
                tell("graphdoctor: the script ignores SIGINT, so it runs on, as it would "
                     "without graphdoctor (SIGTERM or Ctrl-\\ end it)")
            return
        if self.received is None:
            self.received = signum
        if signum in STOPPING_SIGNALS and self._stop_asked is None:
            self._stop_asked = (signum, time.monotonic())
        if group is not None:  # one sent before the run started is passed on by watch
            send(signum, [group])

    def _suspend(self, signum: int, frame: FrameType | None) -> None:
        groups = self._every_group()
        send(signal.SIGSTOP, groups)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # graphdoctor stops here until SIGCONT (fg)
        signal.signal(signal.SIGTSTP, self._suspend)
        send(signal.SIGCONT, groups)


def _ended(child: int) -> bool:
    """Whether this process's child has ended (the supervisor may not have noticed yet),
    without reaping it; False where that cannot be told."""
    try:
        return os.waitid(os.P_PID, child, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped already
        return True
    except (AttributeError, OSError):  # no waitid (macOS), or not this process's child
        return False


def ignores(pid: int, signum: int) -> bool:
    """Whether process ``pid`` ignores ``signum`` (its SigIgn mask in /proc); False where
    that cannot be told."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def send(signum: int, groups: Iterable[int]) -> None:
    """Send to each process group still there."""
    for group in groups:
        try:
            os.killpg(group, signum)
        except (ProcessLookupError, PermissionError):
            pass
