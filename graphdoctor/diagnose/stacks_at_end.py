"""Where each thread was when the run ended, read from faulthandler's dump."""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphdoctor.own_code import is_own_file
from graphdoctor.trace.frames import classify_path
from graphdoctor.trace.model import LIBRARY, USER

_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-f]+)", re.M)
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
MAIN_THREAD = "the main thread"
_MAIN_ENTRIES = frozenset({"<module>", "_run_module_as_main"})

DumpFrame = tuple[str, int, str]  # file, line, function


@dataclass(frozen=True)
class ThreadStack:
    current: bool  # the thread that received the signal (the main thread on a time-out)
    frames: tuple[DumpFrame, ...]  # innermost first, as faulthandler writes them
    ident: str = ""  # faulthandler's thread id, 0x...

    @property
    def main(self) -> bool:
        """Whether this is the main thread: its outermost frame runs a module, where another
        thread's runs threading's bootstrap (the signal may land in any thread)."""
        return bool(self.frames) and self.frames[-1][2] in _MAIN_ENTRIES

    @property
    def label(self) -> str:
        """How a message names the thread: faulthandler gives ids, not names."""
        return MAIN_THREAD if self.main else f"thread {hex(int(self.ident or '0', 16))}"

    @property
    def user_index(self) -> int | None:
        """The index of the innermost frame of the user's code (a library's if the user has
        none)."""
        for kinds in ((USER,), (LIBRARY,)):
            for index, frame in enumerate(self.frames):
                if is_users(frame, kinds):
                    return index
        return None

    @property
    def user_frame(self) -> DumpFrame | None:
        index = self.user_index
        return self.frames[index] if index is not None else None

    @property
    def called(self) -> tuple[DumpFrame, ...]:
        """The frames below the user's line (what it called), innermost first."""
        index = self.user_index
        return self.frames[:index] if index is not None else self.frames


def parse(dump: str) -> list[ThreadStack]:
    """Every thread in a faulthandler dump; the main thread first."""
    starts = list(_THREAD.finditer(dump))
    threads = []
    for match, following in zip(starts, [*starts[1:], None]):
        block = dump[match.end():following.start() if following else len(dump)]
        frames = tuple((m.group("file"), int(m.group("line")), m.group("func"))
                       for m in _FRAME.finditer(block))
        threads.append(ThreadStack(match.group(1) == "Current thread", frames, match.group(2)))
    return sorted(threads, key=lambda t: not t.main)


def is_users(frame: DumpFrame, kinds: tuple[str, ...] = (USER, LIBRARY)) -> bool:
    """Whether a frame is of the user's code (or a library's); graphdoctor's never is."""
    return classify_path(frame[0]) in kinds and not is_own_file(frame[0])


def spot(frame: DumpFrame) -> str:
    """``file.py:12 in f`` for messages."""
    name = frame[0].replace("\\", "/").rsplit("/", 1)[-1]
    return f"{name}:{frame[1]} in {frame[2]}"

