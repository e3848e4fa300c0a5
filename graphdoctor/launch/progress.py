"""The progress of a long run, in a line on stderr now and then: how long it has run, the
phase it has reached (running, capturing a graph, replaying), and its graphs so far::

    graphdoctor: 0:42 replaying · 3 graphs captured, 1 failed · 12,345 replays

Read from the spools as the child appends to them: the records of captures begun and ended
are appended as they happen, the replay counts twice a second (with the batches in between).
Whole lines, not one line drawn over: the script writes to the same terminal, and a line
drawn over would be drawn over its output. So a line is written when the phase or the graphs
change (at most one every ``EVERY_S``) and otherwise every ``QUIET_FOR_S``, and none before
the run has lasted ``FIRST_AFTER_S``: a short run prints none. Only where stderr is a
terminal and ``-q`` was not given (:func:`wanted`); never an error of its own.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphdoctor.launch.notice import tell
from graphdoctor.trace.names import CAPTURE_FAILED
from graphdoctor.trace.spool import records as sr

FIRST_AFTER_S = 5.0
EVERY_S = 2.0
QUIET_FOR_S = 30.0
READ_MOST = 64 << 20  # bytes read from a spool at a time: a line behind is not worth more
TAGS = {sr.TAGS[sr.GraphBegin], sr.TAGS[sr.GraphEnd], sr.TAGS[sr.Progress]}
# the records read, found without decoding the others (allocations, calls...)
WANTED = re.compile(rb'^\["(' + b"|".join(t.encode() for t in sorted(TAGS)) + rb')",.*$',
                    re.MULTILINE)
Key = tuple[int, int]  # the spool's index (its rank), the graph's id


def wanted(quiet: bool) -> bool:
    """Whether to write progress lines: not with -q, and only to a terminal."""
    try:
        return not quiet and sys.stderr.isatty()
    except (AttributeError, ValueError):  # stderr replaced, or closed
        return False


@dataclass
class SoFar:
    """What the spools say of the run so far."""

    capturing: set[Key] = field(default_factory=set)
    captured: int = 0
    failed: int = 0
    replays: dict[Key, int] = field(default_factory=dict)

    def take(self, spool: int, tag: str, fields: list[Any]) -> None:
        if tag == sr.TAGS[sr.GraphBegin]:
            self.capturing.add((spool, int(fields[0]["id"])))
        elif tag == sr.TAGS[sr.GraphEnd]:
            self.capturing.discard((spool, int(fields[0]["id"])))
            failed = fields[0].get("status") == CAPTURE_FAILED
            self.failed, self.captured = self.failed + failed, self.captured + (not failed)
        else:
            counts = fields[1].get("replays", {})
            self.replays.update({(spool, int(g)): int(n) for g, n in counts.items()})

    def phase(self) -> str:
        if self.capturing:
            return "capturing"
        return "replaying" if any(self.replays.values()) else "running"

    def line(self, elapsed_s: float) -> str:
        minutes, seconds = divmod(int(elapsed_s), 60)
        parts = [f"graphdoctor: {minutes}:{seconds:02d} {self.phase()}"]
        if self.captured or self.failed:
            failed = f", {self.failed} failed" if self.failed else ""
            parts.append(f"{self.captured} graph{'s' * (self.captured != 1)} captured{failed}")
        replays = sum(self.replays.values())
        if replays:
            parts.append(f"{replays:,} replay{'s' * (replays != 1)}")
        return " · ".join(parts)


class ProgressLines:
    """Follows the run's spools; :meth:`tick`, called as the run is waited for, writes a
    line when one is due."""

    def __init__(self, spools: list[Path]):
        self.spools = spools
        self.offsets = [0] * len(spools)
        self.so_far = SoFar()
        self.said: tuple[str, int, int] | None = None  # the phase and graphs last said
        self.said_at = 0.0

    def tick(self, elapsed_s: float) -> None:
        if elapsed_s < FIRST_AFTER_S or elapsed_s - self.said_at < EVERY_S:
            return
        for index, spool in enumerate(self.spools):
            self._read(index, spool)
        state = (self.so_far.phase(), self.so_far.captured, self.so_far.failed)
        if state != self.said or elapsed_s - self.said_at >= QUIET_FOR_S:
            tell(self.so_far.line(elapsed_s))
            self.said, self.said_at = state, elapsed_s

    def _read(self, index: int, spool: Path) -> None:
        """The whole lines appended since the last read (a torn last one waits)."""
        try:
            with spool.open("rb") as file:
                file.seek(self.offsets[index])
                chunk = file.read(READ_MOST)
        except OSError:
            return
        whole = chunk[:chunk.rfind(b"\n") + 1]
        self.offsets[index] += len(whole)
        for match in WANTED.finditer(whole):
            try:
                tag, *fields = json.loads(match.group(0))
                self.so_far.take(index, tag, fields)
            except (ValueError, TypeError, KeyError, AttributeError, IndexError):
                continue  # a record of another shape: the report will say more
