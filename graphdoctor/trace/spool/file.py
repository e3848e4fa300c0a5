"""The spool: the append-only file the recording child streams its events to.

One JSON array per line, its first element a tag (``["replay", t, dur, ...]``): the records
of :mod:`graphdoctor.trace.spool.records`. Lines are appended whole with ``os.write`` on an
``O_APPEND`` descriptor. The records a post-mortem needs (``URGENT``: compile logs, warnings,
exceptions, graphs begun and ended, notes) are appended as they are written, before the
script's next statement runs; the others in batches, waiting in between in the child's tail
file (:mod:`graphdoctor.trace.spool.tail`), which a crash cannot lose either: the parent
appends what it holds once the child is gone. A torn last line, or a gzip copy cut short, is
skipped on reading. The parent appends one ``run_end`` record after the child is gone, so the
spool alone holds everything the trace is built from.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from graphdoctor.columns import notice, stderr_width
from graphdoctor.files.untrusted import (
    GZIP_MAGIC,
    MAX_FILE_BYTES,
    GzipDamaged,
    OutOfRange,
    TooLarge,
    estimated_memory,
    gunzip,
    memory_budget,
    sane,
    text_limit,
)
from graphdoctor.files.writing import append_to_own, open_own, write_all
from graphdoctor.trace.names import RECORDING_STOPPED
from graphdoctor.trace.spool.records import URGENT, NoteRecord, SpoolRecord, encode
from graphdoctor.trace.spool.tail import Pending


class SpoolWriter:
    """Buffers records and appends them to the spool file; safe to call from any thread.

    Buffered records wait in a :class:`~graphdoctor.trace.spool.tail.Pending`: with
    ``tail`` (the child's), a mapped file a crash cannot lose, which the parent appends once
    the child is gone. An ``URGENT`` record is appended with all before it at once.

    Writing never fails the script: a spool that cannot be written (a full disk, a file-size
    limit, a folder gone) stops the recording there, said once on stderr, and ``failure``
    says when and why; the note saying so waits in the tail for the parent to append, should
    space be found by then."""

    def __init__(self, path: str | os.PathLike[str], *, max_delay_s: float = 0.25,
                 tail: str | os.PathLike[str] | None = None):
        self.path = str(path)
        self.failure: str | None = None
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._max_delay_ns = int(max_delay_s * 1e9)
        self._last_flush = time.perf_counter_ns()
        self._json = _json_encoder()
        self._pending, unmapped = _pending(tail)
        self._fd, self._size = None, 0
        try:
            self._fd = open_own(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            self._size = os.fstat(self._fd).st_size  # the spool's, counted on from here
        except OSError as error:
            self._stop(error)
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
            write_all(self._fd, data)
        except OSError as error:
            self._stop(error)
            return
        self._size += len(data)
        self._pending.written(self._size)

    def _stop(self, error: OSError) -> None:
        """Recording stops: the spool cannot be written (see the class doc)."""
        seconds, why = time.monotonic() - self._started, error.strerror or error
        self.failure = (f"stopped {seconds:.1f} s into the run: {self.path} could not be "
                        f"written ({why}); nothing later was recorded") if self._size else \
            f"could not start: {self.path} could not be written ({why}); nothing was recorded"
        if self._fd is not None:
            self._size = _size_or(self._fd, self._size)  # as far as the last write went
            os.close(self._fd)
            self._fd = None
        self._pending.written(self._size)
        note = self._json(encode(NoteRecord(RECORDING_STOPPED, self.failure)))
        self._pending.add(f"\n{note}\n".encode())  # "\n": after a torn line
        _say(f"graphdoctor: recording {self.failure}; the script goes on\n")

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
    """The JSON text of a value, ASCII only, with ``str`` for what JSON has no type for and
    null for a number JSON cannot hold (NaN, an infinity: a reader refuses them): json's C
    encoder, made once (``JSONEncoder.encode`` makes one per call, which doubles the cost of
    a record)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    fast: Callable[[Any], str]
    if make is None:
        fast = json.JSONEncoder(separators=(",", ":"), default=str, allow_nan=False).encode
    else:
        chunks = make(None, str, json.encoder.encode_basestring_ascii, None, ":", ",", False,
                      False, False)
        fast = lambda value: "".join(chunks(value, 0))  # noqa: E731 - made once, called often

    def encoded(value: Any) -> str:
        try:
            return fast(value)
        except ValueError:  # a number JSON cannot hold, somewhere in it (rare)
            return fast(finite(value))

    return encoded


def finite(value: Any) -> Any:
    """``value`` with null for every number JSON cannot hold."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def _pending(tail: str | os.PathLike[str] | None) -> tuple[Pending, str]:
    """The pending bytes' place, and why it is not the tail file when it is not."""
    if tail is None:
        return Pending(), ""
    try:
        return Pending(tail=tail), ""
    except (OSError, ValueError) as error:
        return Pending(), (f"kept in memory, where a crash loses them: the file {tail} "
                           f"could not be mapped ({error})")


def _size_or(fd: int, otherwise: int) -> int:
    try:
        return os.fstat(fd).st_size
    except OSError:
        return otherwise


def _say(text: str) -> None:
    """A line on the process's own stderr, whatever the script made of ``sys.stderr``."""
    try:
        os.write(2, (notice(text.rstrip("\n"), stderr_width()) + "\n").encode(errors="replace"))
    except OSError:
        pass


def append_record(path: str | os.PathLike[str], record: SpoolRecord) -> None:
    """Append one record from outside the child (the parent's ``run_end``)."""
    append_records(path, [record])


def append_records(path: str | os.PathLike[str], records: Sequence[SpoolRecord]) -> None:
    """Append records from outside the child, after a line break that ends a torn line."""
    append_to_own(path, encoded(records))


def encoded(records: Sequence[SpoolRecord]) -> bytes:
    """Records as the spool holds them, after a line break that ends a torn line."""
    lines = [json.dumps(finite(encode(r)), separators=(",", ":"), default=str,
                        allow_nan=False) for r in records]
    return ("\n" + "".join(line + "\n" for line in lines)).encode()


def appended_or_kept(path: str | os.PathLike[str], data: bytes) -> tuple[bytes, str]:
    """Append ``data``'s lines to the spool. What could not be appended (a full disk, a
    file-size limit), in whole lines, which the report is then built with from memory, and
    why; ``(b"", "")`` once all is written. A line cut short in the file is skipped there,
    as a torn line is."""
    written = 0
    try:
        fd = open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            while written < len(data):
                written += os.write(fd, data[written:])
        finally:
            os.close(fd)
    except OSError as error:
        return data[data.rfind(b"\n", 0, written) + 1:], str(error.strerror or error)
    return b"", ""


MAX_LINE_BYTES = 64 * 2**20  # a record is a few hundred bytes; the longest seen, 200 KB
# What a line too long or too deeply nested to read yields: a record with no tag, which
# the assembler counts among the records that could not be read.
UNREADABLE: list[Any] = []


def read_records(path: str | os.PathLike[str], *, limited: bool = False
                 ) -> Iterator[list[Any]]:
    """Yield the spool's records in order, skipping blank and torn lines: a spool cut in the
    middle of a record, plain or gzip, still yields every record before the cut. A line
    longer than MAX_LINE_BYTES, or nested too deeply to parse, yields :data:`UNREADABLE`.
    ``limited``: the spool may be a stranger's, and reading it keeps to the budget of a
    report of its size (:mod:`graphdoctor.files.untrusted`), raising ``TooLarge`` past it."""
    meter = _Meter(path) if limited else None
    for line in _lines(path, meter):
        if line is None:
            yield UNREADABLE
            continue
        line = line.strip()
        if not line:
            continue
        if meter is not None:
            meter.parsing(line)
        yield from _parsed(line)


def parsed_lines(lines: Iterable[bytes]) -> Iterator[list[Any]]:
    """The records of whole lines (a followed spool's, read as they come)."""
    for line in lines:
        if line.strip():
            yield from _parsed(line.strip())


def records_in(data: bytes) -> Iterator[list[Any]]:
    """The records of spool lines held in memory (what could not be appended to a spool)."""
    for line in _split([data]):
        if line is None:
            yield UNREADABLE
        elif line.strip():
            yield from _parsed(line.strip())


def _parsed(line: bytes) -> Iterator[list[Any]]:
    text = line.decode("utf-8", "replace")
    try:
        record = sane(json.loads(text, parse_constant=_not_a_number), text)
    except (RecursionError, OutOfRange):
        yield UNREADABLE
        return
    except ValueError:
        return  # the line the child was writing when it died
    if isinstance(record, list) and record and isinstance(record[0], str):
        yield record


def _not_a_number(text: str) -> Any:
    """NaN and the infinities, which no graphdoctor writes: the record is unreadable, as one
    with a number out of range is."""
    raise OutOfRange(f"{text} is not a JSON number")


class _Meter:
    """What reading a spool from elsewhere has cost so far, against its file's budget."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        size = os.stat(path).st_size
        if size > MAX_FILE_BYTES:
            raise TooLarge(f"larger than {MAX_FILE_BYTES >> 30} GiB")
        self.budget, self.text_limit, self.used = memory_budget(size), text_limit(size), 0

    def parsing(self, line: bytes) -> None:
        self.used += estimated_memory(line, len(line))
        if self.used > self.budget:
            raise TooLarge(f"would take more than {self.budget >> 20} MiB of memory to read")


def _lines(path: str | os.PathLike[str], meter: _Meter | None) -> Iterator[bytes | None]:
    """The file's lines, decompressed if it is gzip; None for a line too long to read."""
    if not _is_gzip(path):
        return _split(_chunks(path))
    return _split(_gunzipped(path, meter.text_limit if meter is not None else sys.maxsize))


def _split(chunks: Iterable[bytes]) -> Iterator[bytes | None]:
    """Lines of the bytes in ``chunks``; None in place of one longer than MAX_LINE_BYTES,
    which is dropped as it streams by, never held whole."""
    held, too_long = bytearray(), False
    for chunk in chunks:
        *ended, rest = chunk.split(b"\n")
        for piece in ended:
            if too_long or len(held) + len(piece) > MAX_LINE_BYTES:
                yield None
            else:
                yield bytes(held + piece) if held else piece
            held, too_long = bytearray(), False
        if not too_long:
            held += rest
            too_long = len(held) > MAX_LINE_BYTES
            held = bytearray() if too_long else held
    if held:
        yield bytes(held)


def _chunks(path: str | os.PathLike[str], size: int = 1 << 20) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while chunk := handle.read(size):
            yield chunk


def _gunzipped(path: str | os.PathLike[str], limit: int) -> Iterator[bytes]:
    """The decompressed bytes of a gzip file, member after member, as far as they go: a
    stream cut short or damaged ends the bytes there instead of raising."""
    try:
        yield from gunzip(_chunks(path), limit)
    except GzipDamaged:
        return


def _is_gzip(path: str | os.PathLike[str]) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def file_chunks(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The bytes of a file, a MiB at a time."""
    return _chunks(path)
