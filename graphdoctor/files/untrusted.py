"""Reading a file someone else wrote, for reports and spools alike: what it may cost, and
the values JSON can carry that no graphdoctor writes.

Reports and spools travel between people, so a file may be made to hurt its reader. Text
can ask for far more memory than it takes on disk (``{},`` is 3 bytes of text and 72 bytes
as Python objects), and gzip multiplies that by a thousand, so a 100 KB file could take
gigabytes. A file of ``n`` bytes may take :func:`memory_budget` (``n``) bytes to read: its
decompressed text a share of that (:data:`TEXT_SHARE`), and the objects its text will make,
estimated from its punctuation (:func:`estimated_memory`), all of it.

Time is bounded too: reading stays linear in the file's size. Gzip data is fed to zlib a
little at a time (:data:`FEED_BYTES`): each member that ends hands back the input after it as
a new copy, so feeding a whole file made of 400,000 empty members would copy the rest of the
file 400,000 times.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

MAX_FILE_BYTES = 2 * 2**30  # a report or a spool from elsewhere, on disk or decompressed
MIN_MEMORY_BUDGET = 640 * 2**20  # what any file may take to read, however small
MEMORY_PER_FILE_BYTE = 80  # and what a bigger file may take for each byte of it
TEXT_SHARE = 8  # decompressed text may fill an eighth of the budget: it is held as bytes,
# as text and as parsed strings, and a string can take four bytes a character
# Upper bounds of what the JSON parser builds, in bytes: an object or array (a dict with up
# to five keys is 184, a one-item list 88), a value after a comma (its slot and an int or
# float), and a string's header (76 at most; its characters are counted with the text).
CONTAINER_BYTES = 240
VALUE_BYTES = 40
STRING_BYTES_PER_QUOTE = 40
GZIP_MAGIC = b"\x1f\x8b"
FEED_BYTES = 4096  # gzip input handed to zlib at once (see the module doc)
OUT_BYTES = 4 * 2**20  # decompressed bytes asked of zlib at once


LARGEST_NUMBER = 2**64  # an address, a count, a time in ns: none is larger
# What only text with a lone surrogate or an out-of-range number holds: a surrogate's escape
# (or the character itself), a run of 20 digits, an exponent of three digits.
_SUSPECT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]|[0-9]{20}|[eE][+-]?[0-9]{3}")

_SURROGATE = re.compile("[\ud800-\udfff]")


class OutOfRange(ValueError):
    """A number larger than any graphdoctor writes."""


class TooLarge(ValueError):
    """Reading the file would take more than its budget."""


class GzipDamaged(ValueError):
    """The gzip data is damaged or cut short."""


def memory_budget(file_size: int) -> int:
    """The most memory reading a file of ``file_size`` bytes may take."""
    return max(MIN_MEMORY_BUDGET, MEMORY_PER_FILE_BYTE * file_size)


def text_limit(file_size: int) -> int:
    """The most decompressed text a compressed file of ``file_size`` bytes may hold."""
    return min(memory_budget(file_size) // TEXT_SHARE, MAX_FILE_BYTES)


def estimated_memory(data: bytes | bytearray | memoryview, text_size: int) -> int:
    """An upper bound of the memory parsing ``data`` (``text_size`` bytes once decoded as
    a str) takes: the bytes, the text, its characters again in the parsed strings, and what
    each object, array, value and string costs. Brackets, commas and quotes inside strings
    are counted too: an overestimate, cheap to make."""
    raw = bytes(data) if isinstance(data, memoryview) else data
    containers = raw.count(b"{") + raw.count(b"[")
    return (len(raw) + 2 * text_size + CONTAINER_BYTES * containers
            + VALUE_BYTES * raw.count(b",") + STRING_BYTES_PER_QUOTE * raw.count(b'"'))


def gunzip(chunks: Iterable[bytes], limit: int) -> Iterator[bytes]:
    """The decompressed bytes of gzip data given in ``chunks``, member after member (NUL
    padding between members skipped), in linear time; :class:`TooLarge` past ``limit``
    bytes, :class:`GzipDamaged` for data that is not gzip or ends inside a member."""
    inflater = _Inflater(limit)
    for chunk in chunks:
        view = memoryview(chunk)
        for start in range(0, len(view), FEED_BYTES):
            yield from inflater.feed(bytes(view[start:start + FEED_BYTES]))
    if inflater.inside_member:
        raise GzipDamaged("the gzip data is truncated")


class _Inflater:
    """One gzip stream fed piece by piece, its members one after another."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.produced = 0
        self.stream = zlib.decompressobj(wbits=31)
        self.inside_member = False

    def feed(self, piece: bytes) -> Iterator[bytes]:
        while piece:
            if not self.inside_member:
                piece = piece.lstrip(b"\0")
                if not piece:
                    return
                self.inside_member = True
            yield from self._inflate(piece)
            piece = self._next_member() if self.stream.eof else b""

    def _inflate(self, piece: bytes) -> Iterator[bytes]:
        while piece:
            try:
                out = self.stream.decompress(piece, min(OUT_BYTES, self.limit + 1 - self.produced))
            except zlib.error as error:
                raise GzipDamaged(f"the gzip data is damaged ({error})") from None
            self.produced += len(out)
            if self.produced > self.limit:
                raise TooLarge(f"larger than {self.limit >> 20} MiB once decompressed")
            yield out
            piece = self.stream.unconsumed_tail

    def _next_member(self) -> bytes:
        rest = self.stream.unused_data
        self.stream = zlib.decompressobj(wbits=31)
        self.inside_member = False
        return rest


def sane(value: Any, text: str) -> Any:
    """``value``, parsed from ``text``, with every lone surrogate in its strings and keys
    replaced by U+FFFD; :class:`OutOfRange` for a number beyond LARGEST_NUMBER or not
    finite. Walks ``value`` only when ``text`` holds what could be either."""
    return _walk(value) if _SUSPECT.search(text) else value


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict):
        return {_text(k): _walk(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(value)
    return value


def _text(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if not text.isascii() else text


def _check_number(number: float) -> None:
    if isinstance(number, float) and not math.isfinite(number) or abs(number) > LARGEST_NUMBER:
        raise OutOfRange(f"a number out of range ({str(number)[:20]}...)")
