"""Where each thread was when the run ended, read from faulthandler's dump."""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphdoctor.trace.frames import classify_path
from graphdoctor.trace.model import LIBRARY, USER

_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-f]+)", re.M)
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


@dataclass(frozen=True)
class ThreadStack:
    current: bool  # the thread that received the signal (the main thread on a time-out)
    frames: tuple[tuple[str, int, str], ...]  # innermost first, as faulthandler writes them

    @property
    def user_frame(self) -> tuple[str, int, str] | None:
        for kinds in ((USER,), (LIBRARY,)):
            for frame in self.frames:
                if classify_path(frame[0]) in kinds and "/graphdoctor/" not in frame[0]:
                    return frame
        return None


def parse(dump: str) -> list[ThreadStack]:
    """Every thread in a faulthandler dump; the current thread first."""
    starts = list(_THREAD.finditer(dump))
    threads = []
    for match, following in zip(starts, [*starts[1:], None]):
        block = dump[match.end():following.start() if following else len(dump)]
        frames = tuple((m.group("file"), int(m.group("line")), m.group("func"))
                       for m in _FRAME.finditer(block))
        threads.append(ThreadStack(match.group(1) == "Current thread", frames))
    return sorted(threads, key=lambda t: not t.current)


def where_it_was(dump: str) -> str:
    """``file.py:12 in f`` of the user's code the main thread was running, or ""."""
    for thread in parse(dump):
        frame = thread.user_frame
        if frame is not None:
            return f"{frame[0].rsplit('/', 1)[-1]}:{frame[1]} in {frame[2]}"
    return ""
