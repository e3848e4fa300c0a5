"""How a run ended: the ``reason`` the parent writes in ``run_end``, kept in the report's status.

The parent of ``graphdoctor run`` writes one of these; a spool without ``run_end`` reads as
:data:`UNKNOWN`, but in a live view, which reads it while the script runs (:data:`RUNNING`).
A run is complete only when the script ended by itself (:data:`EXITED`) and the child wrote
its own end record.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from graphdoctor import units
from graphdoctor.clean_text import clean

if TYPE_CHECKING:
    from graphdoctor.trace.model import Trace


EXITED = "exited"  # the script returned or called sys.exit; its exit code stands


SIGNALLED = "signal"  # a signal ended the script: a crash, the OOM killer, kill -9 of the script


TIMED_OUT = "timeout"  # the script ran past --timeout and graphdoctor ended it
# graphdoctor itself was sent a signal (Ctrl-C, a closed terminal, kill) and passed it on


INTERRUPTED = "interrupted"


UNKNOWN = "unknown"  # no run_end: graphdoctor itself ended before the script


RUNNING = "running"  # a live view's: the script runs on, its end is not recorded yet


def signal_name(number: int | None) -> str:
    """``SIGSEGV`` for 11; ``signal 99`` for a number no signal has."""
    try:
        return signal.Signals(number or 0).name
    except ValueError:
        return f"signal {number}"


def outcome(trace: Trace, timed: bool = True) -> str:
    """How the run ended, as a predicate: "exited with code 1 after 5.33 s"."""
    status = trace.status
    took = units.format_duration(status.wall_ns)
    after = f" after {took}" if status.wall_ns > 0 and timed else ""
    if status.reason == TIMED_OUT:
        return f"timed out and was stopped{after}"
    if status.reason == SIGNALLED:
        return f"was killed by {signal_name(status.signal)} (exit {status.exit_code}){after}"
    if status.reason == INTERRUPTED:
        return (f"was stopped by {signal_name(status.signal)} sent to graphdoctor "
                f"(exit {status.exit_code}){after}")
    if status.reason == RUNNING:
        return f"is still running{' (' + took + ' so far)' if status.wall_ns > 0 else ''}"
    if status.complete and status.exit_code is None:  # a process the script started
        return f"exited{after} (its exit code went to its parent alone)"
    if status.reason == UNKNOWN or status.exit_code is None:
        return f"ended without an exit record ({clean(status.reason)}){after}"
    return f"exited with code {status.exit_code}{after}"
