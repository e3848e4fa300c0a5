"""The calls of one function under way on one thread, told apart by their frames.

``sys.monitoring`` gives a function's start and its return, but no return for a call that
raised, and returns of calls that were never opened (under way when timing began, or
started inside a capture). So each open call keeps the identity of its frame (never the
frame: a frame kept after its call raised keeps every local of it alive, the tensors and
graphs of a test that failed among them): a return closes the call whose frame it is, and
calls whose frames are gone are dropped, their CUDA events given back by the caller. A
frame's identity is its own while it runs; one found again in a new call is a stale entry's.
"""

from __future__ import annotations

from types import FrameType

from graphdoctor.record.recorder import TimerToken

# a call under way: its start, mode, GPU timer token, and its frame's id()
Open = tuple[int, str, TimerToken | None, int]


def running_ids(frame: FrameType | None) -> set[int]:
    """The ids of ``frame`` and the frames that called it."""
    running = set()
    while frame is not None:
        running.add(id(frame))
        frame = frame.f_back
    return running


def drop_finished(opened: list[Open], frame: FrameType) -> list[TimerToken | None]:
    """The open calls whose frames are no longer on the stack above ``frame`` (they
    raised), taken off, and any kept under ``frame``'s own id (a frame now running cannot
    be theirs); their tokens returned."""
    running = running_ids(frame.f_back)
    finished = [call for call in opened if call[3] not in running]
    for call in finished:
        opened.remove(call)
    return [call[2] for call in finished]


def closed(opened: list[Open], frame: FrameType) -> tuple[Open | None, list[TimerToken | None]]:
    """The open call whose frame returns, taken off with the calls above it, which raised
    instead of returning (a return fires for none of them): it, and their tokens. One that
    raised below it goes at the next start (:func:`drop_finished`). None where no open call
    is this frame's."""
    for index in range(len(opened) - 1, -1, -1):
        if opened[index][3] == id(frame):
            call, stale = opened[index], [call[2] for call in opened[index + 1:]]
            del opened[index:]
            return call, stale
    return None, []
