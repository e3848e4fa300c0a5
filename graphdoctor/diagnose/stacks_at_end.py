"""Where each thread was when the run ended, read from faulthandler's dump."""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphdoctor.facts import locations
from graphdoctor.facts.queries import CULPRIT_KINDS, culprit_of
from graphdoctor.own_code import is_own_file
from graphdoctor.trace.frames import classify_path
from graphdoctor.trace.model import Frame

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
        """The index of the user's frame, by the policy every stack's culprit is chosen by
        (:func:`.queries.culprit_of`); graphdoctor's own frames are never it."""
        indexes = [i for i in reversed(range(len(self.frames)))
                   if not is_own_file(self.frames[i][0])]
        frames = [as_frame(self.frames[i]) for i in indexes]  # outermost first
        culprit = culprit_of(frames)
        return next((i for i, f in zip(indexes, frames) if f is culprit), None)

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


def as_frame(frame: DumpFrame) -> Frame:
    """A dumped frame as a stack's frame, its kind by where its file lives."""
    file, line, func = frame
    return Frame(file, line, func, classify_path(file))


def is_users(frame: DumpFrame) -> bool:
    """Whether a frame is of the user's code (or a library's); graphdoctor's never is."""
    return classify_path(frame[0]) in CULPRIT_KINDS and not is_own_file(frame[0])


def spot(frame: DumpFrame) -> str:
    """``file.py:12 in f`` for messages."""
    return locations.frame_text(as_frame(frame), path=locations.file_name)

