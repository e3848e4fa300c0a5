"""gzip, the one way graphdoctor compresses what it writes: a report, an export or a kept
spool whose name ends in ``.gz``.

One gzip member, written as it comes, with no time or name in its header, so the same
content compresses to the same bytes (as ``gzip.compress(data, mtime=0)`` gives them).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

GZIP = ".gz"
LEVEL = 6  # zlib's own default: most of level 9's saving, at a fraction of its time
_GZIP_WINDOW = 16 + zlib.MAX_WBITS  # a gzip header and trailer around the deflate stream


def gzipped(path: str | os.PathLike[str]) -> bool:
    """Whether a file of this name is written gzip-compressed."""
    return Path(path).suffix == GZIP


def gzip_chunks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``chunks`` compressed as one gzip member, as they come."""
    packer = zlib.compressobj(LEVEL, zlib.DEFLATED, _GZIP_WINDOW)
    for chunk in chunks:
        yield packer.compress(chunk)
    yield packer.flush()


def gzip_bytes(data: bytes) -> bytes:
    """``data`` as one gzip member."""
    return b"".join(gzip_chunks([data]))


def as_named(path: str | os.PathLike[str], data: bytes) -> bytes:
    """The bytes a file named ``path`` holds for ``data``: compressed for a ``.gz`` name."""
    return gzip_bytes(data) if gzipped(path) else data


def chunks_as_named(path: str | os.PathLike[str], chunks: Iterable[bytes]) -> Iterable[bytes]:
    """:func:`as_named`, for data that comes in chunks (a spool of any size)."""
    return gzip_chunks(chunks) if gzipped(path) else chunks
