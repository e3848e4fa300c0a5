"""What the eager history keeps of each function: its latest timed calls, and what it
learnt of the function (what it calls, the numbers it was given, whether it is a step).
Imports no torch."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

from graphdoctor.record.device.gpu_sample import TIMED_FIRST
from graphdoctor.record.eager.open_calls import Open
from graphdoctor.record.recorder import TimerToken

TIMED_CALLS = 256  # per function, from its first; then it costs nothing more
KEPT = 32  # the latest timed calls of a function, what medians are taken from
MAX_TIMED = 4096  # CUDA event pairs held at once for kept calls
# a CUDA event pair costs 10-30 us of host time on a busy GPU host (an H200's, measured):
# more than graphdoctor's callbacks of a whole step, so kept calls are timed on the GPU for a
# sample (their host time always), enough for a median where the latest KEPT are claimed
GPU_EVERY = 4
STEP_CALLS = 3  # kept calls a step function needs besides its cold first one


@dataclass(slots=True)
class KeptCall:
    t0: int
    dur: int
    mode: str
    token: TimerToken | None


@dataclass
class KeptFunction:
    calls: deque[KeptCall] = field(default_factory=deque)  # the latest KEPT
    timed: int = 0  # calls timed so far, kept or not
    open: dict[int, list[Open]] = field(default_factory=dict)  # by thread
    makes: set[str] = field(default_factory=set)  # what it calls (calls.call_key)
    inner: set[CodeType] = field(default_factory=set)  # the user functions it calls
    step: int = -1  # its function id once a graph replays inside it
    # the numbers its calls were given, by argument: what a graph that froze one is told of
    arguments: dict[str, list[Any]] | None = None  # None: a library's function, not kept
    users_own: bool = False  # torch's step part: timed at the user's call sites
    claimed: bool = False  # handed over: its call sites time it no more

    def gpu_due(self) -> bool:
        """Whether the call starting now is in the GPU sample: the first ``TIMED_FIRST``,
        then one in ``GPU_EVERY``."""
        return self.timed < TIMED_FIRST or self.timed % GPU_EVERY == 0


def innermost(functions: dict[CodeType, KeptFunction],
               frame: FrameType | None) -> tuple[CodeType, KeptFunction] | None:
    """The innermost frame's function that is a step already, or ran often enough before
    to be one (a helper that timed one eager loop is not a step)."""
    while frame is not None:
        function = functions.get(frame.f_code)
        if function is not None and not function.users_own \
                and (len(function.calls) > STEP_CALLS or function.step >= 0) \
                and function.timed < TIMED_CALLS:
            return frame.f_code, function
        frame = frame.f_back
    return None


def place(code: CodeType) -> tuple[str, int, str]:
    """Where a function is defined: the same for the code torch.compile rebuilds from it."""
    return (code.co_filename, code.co_firstlineno, code.co_name)
