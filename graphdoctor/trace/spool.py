"""The spool: the append-only file the recording child streams its events to.

One JSON array per line, its first element a tag (``["replay", t, dur, ...]``): the records
of :mod:`graphdoctor.trace.spool_records`. Lines are written whole with ``os.write`` on an
``O_APPEND`` descriptor and flushed often, so a child that segfaults, hangs or is SIGKILLed
still leaves every event written before that moment; a torn last line, or a gzip copy cut
short, is skipped on reading. The parent appends one ``run_end`` record after the child is
gone, so the spool alone holds everything the trace is built from.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from graphdoctor.trace.spool_records import URGENT, SpoolRecord, encode


class SpoolWriter:
    """Buffers records and appends them to the spool file; safe to call from any thread."""

    def __init__(self, path: str | os.PathLike[str], *, max_buffer: int = 4096,
                 max_delay_s: float = 0.25):
        self.path = str(path)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._buffer: list[SpoolRecord] = []
        self._lock = threading.Lock()
        self._max_buffer = max_buffer
        self._max_delay_ns = int(max_delay_s * 1e9)
        self._last_flush = time.perf_counter_ns()
        self._encode = json.JSONEncoder(separators=(",", ":"), default=str).encode

    def write(self, record: SpoolRecord) -> None:
        with self._lock:
            self._buffer.append(record)
        if (type(record) in URGENT or len(self._buffer) >= self._max_buffer
                or time.perf_counter_ns() - self._last_flush > self._max_delay_ns):
            self.flush()

    def write_many(self, records: Sequence[SpoolRecord]) -> None:
        with self._lock:
            self._buffer.extend(records)
        if (len(self._buffer) >= self._max_buffer
                or time.perf_counter_ns() - self._last_flush > self._max_delay_ns):
            self.flush()

    def flush(self) -> None:
        with self._lock:
            records, self._buffer = self._buffer, []
            self._last_flush = time.perf_counter_ns()
            if not records or self._fd is None:
                return
            text = "".join(self._encode(encode(r)) + "\n" for r in records)
            data = text.encode("utf-8", "replace")
            _write_all(self._fd, data)

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def detach(self) -> None:
        """Forget the file without writing: for a forked child that must not interleave."""
        self._buffer = []
        self._fd = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def append_record(path: str | os.PathLike[str], record: SpoolRecord) -> None:
    """Append one record from outside the child (the parent's ``run_end``)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\n" + json.dumps(encode(record), separators=(",", ":"), default=str) + "\n")


def read_records(path: str | os.PathLike[str]) -> Iterator[list[Any]]:
    """Yield the spool's records in order, skipping blank and torn lines: a spool cut in the
    middle of a record, plain or gzip, still yields every record before the cut."""
    for line in _lines(path):
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            continue  # the line the child was writing when it died
        if isinstance(record, list) and record and isinstance(record[0], str):
            yield record


def _lines(path: str | os.PathLike[str]) -> Iterator[bytes]:
    chunks = _gunzipped(path) if _is_gzip(path) else _chunks(path)
    rest = b""
    for chunk in chunks:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        yield from lines
    yield rest


def _chunks(path: str | os.PathLike[str], size: int = 1 << 20) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while chunk := handle.read(size):
            yield chunk


def _gunzipped(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The decompressed bytes of a gzip file, member after member, as far as they go: a
    stream cut short or damaged ends the bytes there instead of raising."""
    stream = zlib.decompressobj(wbits=31)
    for chunk in _chunks(path):
        while chunk:
            try:
                yield stream.decompress(chunk)
            except zlib.error:
                return
            chunk = stream.unused_data if stream.eof else b""
            if stream.eof:
                stream = zlib.decompressobj(wbits=31)
    yield stream.flush() if not stream.eof else b""


def _is_gzip(path: str | os.PathLike[str]) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == b"\x1f\x8b"


def compress(path: str | os.PathLike[str], dest: str | os.PathLike[str]) -> Path:
    """Write a gzip copy of a spool (how fixtures are stored)."""
    with open(path, "rb") as src, gzip.open(dest, "wb", compresslevel=9) as out:
        out.write(src.read())
    return Path(dest)
