"""What a thread that never finished was waiting on, read from its stack at the end.

faulthandler writes Python frames only. A wait written in Python (``Queue.get()``,
``Thread.join()``, ``torch.cuda.synchronize()``, a collective, ``Popen.wait()``) leaves
frames below the user's line: they are matched first, from the call the user made inward. A
wait inside C (``lock.acquire()``, ``time.sleep()``, ``sock.recv()``, ``.item()``) leaves
none, so the text of the innermost line is matched instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from graphdoctor.diagnose.findings import LineReader
from graphdoctor.diagnose.stacks_at_end import DumpFrame, ThreadStack, spot

GPU_SYNC = "a GPU sync"
COLLECTIVE = "a collective"
TEARDOWN = "the process group's teardown"
LOCK = "a lock"
QUEUE = "a queue"
EVENT = "an event or condition"
JOIN = "another thread to end"
FUTURE = "a future's result"
SUBPROCESS = "a subprocess"
SOCKET = "a socket"
FILE = "a file or pipe"
SLEEP = "a sleep"


@dataclass(frozen=True)
class Wait:
    kind: str  # one of the kinds above
    call: str  # the call it waited in, as the user would write it

    def __str__(self) -> str:
        return f"{self.kind} in {self.call}"


# kind, the file a frame is in (its path ends so), its functions (empty: any), and the call
# to name ({func}: the frame's function); the first match from the user's call inward wins
_FRAME_WAITS: tuple[tuple[str, str, frozenset[str], str], ...] = (
    (TEARDOWN, "torch/distributed/distributed_c10d.py", frozenset({"destroy_process_group"}),
     "torch.distributed.destroy_process_group()"),
    (COLLECTIVE, "torch/distributed/distributed_c10d.py", frozenset(),
     "torch.distributed.{func}()"),
    (GPU_SYNC, "torch/cuda/__init__.py", frozenset({"synchronize"}), "torch.cuda.synchronize()"),
    (GPU_SYNC, "torch/cuda/streams.py", frozenset({"synchronize"}), "Stream/Event.synchronize()"),
    (GPU_SYNC, "torch/_tensor_str.py", frozenset(), "print(tensor)"),
    (QUEUE, "/queue.py", frozenset(), "Queue.{func}()"),
    (QUEUE, "multiprocessing/queues.py", frozenset(), "multiprocessing Queue.{func}()"),
    (FUTURE, "concurrent/futures/_base.py", frozenset(), "concurrent.futures {func}()"),
    (JOIN, "/threading.py", frozenset({"join", "_wait_for_tstate_lock"}), "Thread.join()"),
    (EVENT, "/threading.py", frozenset({"wait", "wait_for"}), "Event/Condition.{func}()"),
    (LOCK, "/threading.py", frozenset({"acquire", "__enter__"}), "threading {func}()"),
    (SUBPROCESS, "/subprocess.py", frozenset(), "subprocess {func}()"),
    (SOCKET, "/socket.py", frozenset(), "socket {func}()"),
    (SOCKET, "/ssl.py", frozenset(), "ssl {func}()"),
    (SOCKET, "/selectors.py", frozenset(), "selectors {func}()"),
)
# kind, what the innermost line calls (the group "call"), and the call to name ({call}),
# checked in this order
_LINE_WAITS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (GPU_SYNC, re.compile(r"\.(?P<call>item|tolist|cpu|numpy|synchronize)\("), ".{call}()"),
    (LOCK, re.compile(r"\.(?P<call>acquire)\(|\bwith\s+[\w.]*lock\w*\s*:", re.I),
     "Lock.acquire()"),
    (SLEEP, re.compile(r"\b(?P<call>sleep)\("), "time.sleep()"),
    (SOCKET, re.compile(r"\.(?P<call>recv\w*|accept|connect|send\w*)\("), "socket.{call}()"),
    (SUBPROCESS, re.compile(r"\b(?P<call>waitpid|wait3|wait4|waitid)\("), "os.{call}()"),
    (FILE, re.compile(r"\b(?P<call>read|readline|readlines|readinto|input)\("), "{call}()"),
)


def classify(called: Sequence[DumpFrame], line: str) -> Wait | None:
    """What a thread waited on. ``called``: the frames below the user's line, innermost
    first; ``line``: the text of the innermost frame's line ("" if unknown)."""
    for file, _, func in reversed(called):
        path = file.replace("\\", "/")
        for kind, ending, functions, call in _FRAME_WAITS:
            if path.endswith(ending) and (not functions or func in functions):
                return Wait(kind, call.format(func=func))
    for kind, pattern, call in _LINE_WAITS:
        match = pattern.search(line)
        if match:
            return Wait(kind, call.format(call=match["call"]))
    return None


def wait_of(thread: ThreadStack, read_line: LineReader) -> Wait | None:
    """What a thread of a faulthandler dump waited on, reading its innermost line."""
    innermost = thread.frames[0] if thread.frames else None
    line = read_line(innermost[0], innermost[1]) if innermost else ""
    return classify(thread.called, line)


def describe(thread: ThreadStack, read_line: LineReader) -> str:
    """``file.py:12 in f, waiting on a lock in acquire()`` for a thread, or "" when no frame
    of it is the user's or a library's."""
    frame = thread.user_frame
    if frame is None:
        return ""
    wait = wait_of(thread, read_line)
    return spot(frame) + (f", waiting on {wait}" if wait else "")
