"""The spool: the append-only file the recording child streams its events to.

One JSON array per line, its first element a tag (``["replay", t, dur, ...]``): the records
of :mod:`graphdoctor.trace.spool_records`. Lines are appended whole with ``os.write`` on an
``O_APPEND`` descriptor. The records a post-mortem needs (``URGENT``: compile logs, warnings,
exceptions, graphs begun and ended, notes) are appended as they are written, before the
script's next statement runs; the others in batches, waiting in between in the child's tail
file (:mod:`graphdoctor.trace.spool_tail`), which a crash cannot lose either: the parent
appends what it holds once the child is gone. A torn last line, or a gzip copy cut short, is
skipped on reading. The parent appends one ``run_end`` record after the child is gone, so the
spool alone holds everything the trace is built from.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from graphdoctor.trace.spool_records import URGENT, NoteRecord, SpoolRecord, encode
from graphdoctor.trace.spool_tail import Pending


class SpoolWriter:
    """Buffers records and appends them to the spool file; safe to call from any thread.

    Buffered records wait in a :class:`~graphdoctor.trace.spool_tail.Pending`: with
    ``tail`` (the child's), a mapped file a crash cannot lose, which the parent appends once
    the child is gone. An ``URGENT`` record is appended with all before it at once."""

    def __init__(self, path: str | os.PathLike[str], *, max_delay_s: float = 0.25,
                 tail: str | os.PathLike[str] | None = None):
        self.path = str(path)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()
        self._max_delay_ns = int(max_delay_s * 1e9)
        self._last_flush = time.perf_counter_ns()
        self._json = _json_encoder()
        self._pending, unmapped = _pending(tail)
        self._size = os.fstat(self._fd).st_size  # the spool's, counted on from here
        self._pending.written(self._size)
        if unmapped:
            self.write(NoteRecord("the last records before a crash", unmapped))

    def write(self, record: SpoolRecord) -> None:
        self._add((self._json(encode(record)) + "\n").encode(), type(record) in URGENT)

    def write_many(self, records: Sequence[SpoolRecord]) -> None:
        text = "".join([self._json(encode(record)) + "\n" for record in records])
        self._add(text.encode(), False)

    def _add(self, data: bytes, urgent: bool) -> None:
        with self._lock:
            if self._fd is None:
                return
            if not self._pending.add(data):
                self._flush_locked()
                if not self._pending.add(data):  # larger than the tail: straight out
                    self._append(data)
            if urgent or time.perf_counter_ns() - self._last_flush > self._max_delay_ns:
                self._flush_locked()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        self._last_flush = time.perf_counter_ns()
        if self._fd is not None and self._pending.used:
            self._append(self._pending.take())

    def _append(self, data: bytes) -> None:
        assert self._fd is not None
        try:
            _write_all(self._fd, data)
        except OSError:
            self._size = os.fstat(self._fd).st_size  # as far as it went (a full disk)
            raise
        self._size += len(data)
        self._pending.written(self._size)

    def close(self) -> None:
        with self._lock:
            self._flush_locked()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self._pending.close()

    def detach(self) -> None:
        """Forget the file without writing: for a forked child that must not interleave
        (nor write into the tail it shares with its parent)."""
        self._fd = None
        self._pending = Pending(0)


def _json_encoder() -> Callable[[Any], str]:
    """The JSON text of a value, ASCII only, with ``str`` for what JSON has no type for:
    json's C encoder, made once (``JSONEncoder.encode`` makes one per call, which doubles
    the cost of a record)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.JSONEncoder(separators=(",", ":"), default=str).encode
    chunks = make(None, str, json.encoder.encode_basestring_ascii, None, ":", ",", False,
                  False, True)
    return lambda value: "".join(chunks(value, 0))


def _pending(tail: str | os.PathLike[str] | None) -> tuple[Pending, str]:
    """The pending bytes' place, and why it is not the tail file when it is not."""
    if tail is None:
        return Pending(), ""
    try:
        return Pending(tail=tail), ""
    except (OSError, ValueError) as error:
        return Pending(), (f"kept in memory, where a crash loses them: the file {tail} "
                           f"could not be mapped ({error})")


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
