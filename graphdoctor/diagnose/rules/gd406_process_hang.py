"""The run hung: when ``--timeout`` ended it, its threads were waiting for something.

Before it ends a run that went past ``--timeout``, graphdoctor has every thread's Python
stack dumped. This finding says where each of your threads was (the line of your code, or
of a library's) and what it waited on: the GPU (``torch.cuda.synchronize()``,
``Event.synchronize()``, ``.item()`` behind work that never ends), another thread (a lock, a
queue, an event, a ``join()``), I/O (a socket, a pipe, a subprocess) or ``sleep``.
Threads with no frame of yours (graphdoctor's own, Python's) are left out; the full dump is
in the report. A distributed run's hang is GD404's, and a ``destroy_process_group()`` that
never returned is GD405's.

How to fix: start from what the main thread waited on. A GPU sync that never returns waits
for GPU work that never ends (a kernel that spins, a collective no peer joins); a lock,
queue, event or join waits for another thread, whose line is listed too; I/O waits for the
other end. If the run was only slow, give it a longer ``--timeout``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from graphdoctor.diagnose import stacks_at_end, waits
from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Location, Rule
from graphdoctor.diagnose.rules.gd405_teardown_hang import unfinished_teardown
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.endings import TIMED_OUT
from graphdoctor.units import counted

ID, NAME = "GD406", "process-hang"
MAX_THREADS_IN_TITLE = 3

# What to do, by what the main thread waited on.
_FIXES = {
    waits.GPU_SYNC: "Find the GPU work queued before this sync that never ends (a kernel that "
                    "spins, a collective no peer joins) and make it finish.",
    waits.COLLECTIVE: "Make every process of the group reach the same collectives.",
    waits.LOCK: "Find the thread holding the lock and make it release it, or take locks in "
                "one order everywhere.",
    waits.QUEUE: "Make sure a thread fills the queue (or reads it), or pass a timeout.",
    waits.EVENT: "Make sure another thread sets the event or notifies the condition.",
    waits.JOIN: "See where the other thread was (listed above) and make it end.",
    waits.FUTURE: "See where the worker threads were and make the task finish.",
    waits.SLEEP: "The script was sleeping: if it is only slow, give it a longer --timeout.",
}
_DEFAULT_FIX = ("Make what the main thread waited on arrive (the other end of the I/O, the "
                "other thread), or give the run a longer --timeout if it is only slow.")


def check(view: TraceView) -> Iterator[Finding]:
    status = view.trace.status
    if status.reason != TIMED_OUT or view.peers or unfinished_teardown(view) is not None:
        return  # several ranks: GD404 explains the hang; a teardown: GD405
    threads = [t for t in stacks_at_end.parse(status.stacks_at_end) if t.user_frame]
    yield _finding(view, [_stuck(view, t) for t in threads])


@dataclass(frozen=True)
class _Stuck:
    """One thread of the user's when the run was ended."""

    label: str
    frame: stacks_at_end.DumpFrame
    wait: waits.Wait | None
    sync: int | None  # the row of the syncs table it waited in, if one was recorded

    def sentence(self) -> str:
        waiting = f", waiting on {self.wait}" if self.wait else ""
        return f"{self.label} was at {stacks_at_end.spot(self.frame)}{waiting}"

    def measured(self) -> dict[str, str]:
        return {"thread": self.label, "at": stacks_at_end.spot(self.frame),
                "waits_on": self.wait.kind if self.wait else "",
                "call": self.wait.call if self.wait else ""}


def _stuck(view: TraceView, thread: stacks_at_end.ThreadStack) -> _Stuck:
    frame = thread.user_frame
    assert frame is not None  # check() keeps only threads with one
    wait = waits.wait_of(thread, view.read_line)
    sync = _last_sync_at(view, frame) if thread.main else None
    if wait is None and sync is not None:  # an implicit sync the source line does not show
        wait = waits.Wait(waits.GPU_SYNC, view.trace.tables["syncs"][sync].kind)
    return _Stuck(thread.label, frame, wait, sync)


def _last_sync_at(view: TraceView, frame: stacks_at_end.DumpFrame) -> int | None:
    """The row of the last recorded sync when it was made at this line: the sync the run
    never came back from."""
    syncs = view.trace.tables["syncs"]
    if not len(syncs):
        return None
    culprit = view.culprit_frame(syncs[len(syncs) - 1].stack)
    at_line = culprit is not None and (culprit.file, culprit.line) == (frame[0], frame[1])
    return len(syncs) - 1 if at_line else None


def _finding(view: TraceView, threads: list[_Stuck]) -> Finding:
    status = view.trace.status
    sentences = [t.sentence() for t in threads] or ["no thread was in your code"]
    more = len(sentences) - MAX_THREADS_IN_TITLE
    main = threads[0] if threads else None
    return RULE.finding(
        title="the run hung: " + "; ".join(sentences[:MAX_THREADS_IN_TITLE])
              + (f"; and {counted(more, 'more thread')}" if more > 0 else ""),
        explanation=(f"The run did not finish ({status.message or status.reason}). When it "
                     "was ended, " + "; ".join(sentences) + "."),
        fix=_FIXES.get(main.wait.kind, _DEFAULT_FIX) if main and main.wait else _DEFAULT_FIX,
        evidence=tuple(view.evidence("syncs", t.sync, "the sync it waited in")
                       for t in threads if t.sync is not None),
        location=Location(*main.frame) if main else None,
        measurements={"threads": [t.measured() for t in threads]})


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
