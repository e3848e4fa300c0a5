"""A spool read as it grows: what a live view shows while the run is still recording.

The child appends whole lines (a batch at most a quarter of a second after its first
record; the records a post-mortem needs at once), and the parent its ``run_end`` last. A
:class:`SpoolFollower` reads only the bytes appended since its last read, takes their whole
lines into the trace being assembled (a torn last line waits for the rest), and hands out
the trace of what it has read so far without re-reading anything: the cost of a look is
that of the lines new since the last, plus assembling what the builder holds (measured in
``bench/live_view.py``). A gzip spool is a finished recording: read whole, once.

A spool being followed may be a stranger's (``graphdoctor view --follow`` of a file on a
shared disk): a line past :data:`MAX_LINE_BYTES` or nested too deeply counts as a record
that could not be read, as it does in a spool read whole, and reading stops with
``TooLarge`` once the records read would take more memory than a report of the spool's
size may (:mod:`graphdoctor.files.untrusted`).
"""

from __future__ import annotations

import os
from pathlib import Path

from graphdoctor.files.untrusted import GZIP_MAGIC, TooLarge, estimated_memory, memory_budget
from graphdoctor.trace.assemble import so_far, take
from graphdoctor.trace.builder import Builder
from graphdoctor.trace.model import Trace
from graphdoctor.trace.spool.file import MAX_LINE_BYTES, parsed_lines, read_records

READ_MOST = 16 << 20  # bytes taken in one look: a spool far ahead is caught up over several


class SpoolFollower:
    """Follows one spool; :meth:`read` takes what was appended, :meth:`trace` is the
    recording so far."""

    def __init__(self, path: str | os.PathLike[str], *, limited: bool = False):
        self.path = Path(path)
        self.limited = limited
        self.builder = Builder()
        self.offset = 0  # bytes of the file taken, up to the end of its last whole line
        self.records = 0
        self._held = b""  # a line still being written
        self._skipping = False  # inside a line too long to hold
        self._used = 0  # the memory the records read would take, as a report's is budgeted
        self._whole = False  # a gzip spool, read at once

    @property
    def ended(self) -> bool:
        """Whether the parent's ``run_end`` was read: the recording is complete."""
        return self.builder.run_end is not None or self._whole

    def read(self, most: int = READ_MOST) -> int:
        """Take the whole lines appended since the last read (at most ``most`` bytes of
        them); how many records that was. A file not there (yet, or any more: the run that
        writes it makes it as it starts, and may remove it once it has read it) has none;
        OSError if it cannot be read."""
        if self._whole:
            return 0
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - closed below, opened or not
        except FileNotFoundError:
            return 0
        with handle:
            if self.offset == 0 and handle.read(2) == GZIP_MAGIC:
                return self._read_whole()
            handle.seek(self.offset)
            chunk = handle.read(most)
        if not chunk:
            return 0
        self.offset += len(chunk)
        return self._take(self._lines(chunk))

    def _lines(self, chunk: bytes) -> list[bytes]:
        """The whole lines ``chunk`` ends, after what was held; a line too long to hold is
        counted once as a record that could not be read, and dropped as it goes by."""
        pieces = chunk.split(b"\n")
        if self._skipping:
            if len(pieces) == 1:
                return []
            pieces, self._skipping = pieces[1:], False
        else:
            pieces[0] = self._held + pieces[0]
        self._held = pieces.pop()
        if len(self._held) > MAX_LINE_BYTES:
            self._held, self._skipping = b"", True
            self.builder.bad_records += 1
        return pieces

    def _take(self, lines: list[bytes]) -> int:
        taken = 0
        for line in lines:
            if self.limited:
                self._meter(line)
            for raw in parsed_lines([line]):
                take(self.builder, raw)
                taken += 1
        self.records += taken
        return taken

    def _meter(self, line: bytes) -> None:
        self._used += estimated_memory(line, len(line))
        if self._used > memory_budget(self.offset):
            raise TooLarge(f"would take more than {memory_budget(self.offset) >> 20} MiB of "
                           "memory to read")

    def _read_whole(self) -> int:
        self._whole = True
        taken = 0
        for raw in read_records(self.path, limited=self.limited):
            take(self.builder, raw)
            taken += 1
        self.records += taken
        return taken

    def trace(self) -> Trace:
        """The recording read so far, assembled (the follower reads on after)."""
        return so_far(self.builder)
