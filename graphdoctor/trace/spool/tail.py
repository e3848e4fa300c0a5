"""The spool's tail: records written but not appended to the spool yet, kept where a crash
cannot lose them.

The child appends its records to the spool in batches: one ``os.write`` per batch keeps the
hot path cheap. Between batches they wait in a file of their own, mapped into the child's
memory (``MAP_SHARED``): bytes copied there are in the kernel's page cache at once, so a
SIGSEGV in native code, ``os.abort()``, ``os._exit()`` or SIGKILL loses none of them, and
nothing has to run in the dying process. Once the child is gone, the parent appends what
the tail still holds to the spool (:func:`recover`), before its own ``run_end``.

Layout: a header of two 64-bit numbers (native order: the parent reads them on the same
machine), then the pending bytes. ``base`` is
the spool's size after the last batch the child appended; ``used`` the pending bytes. The
child counts a record in ``used`` only once its bytes are all copied, and after appending a
batch sets ``used`` to 0 and then ``base``. So the spool's size tells recovery how much of
the pending bytes already reached it, were the child killed in the middle of a batch: each
byte is appended once, a torn line completed. The tail lies beside its spool
(:attr:`graphdoctor.files.run_files.RunFiles.tail`).
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from pathlib import Path

from graphdoctor.files.writing import append_to_own, open_own

_HEADER = struct.Struct("=QQ")
TAIL_BYTES = 1 << 20  # pending bytes before a batch is appended whatever the time


class Pending:
    """The pending bytes: in a mapped tail file, or in memory where there is none (a
    recording inside the user's own process, which no parent outlives)."""

    def __init__(self, capacity: int = TAIL_BYTES, tail: str | os.PathLike[str] | None = None):
        self.capacity = capacity
        self.buf: mmap.mmap | bytearray = (bytearray(_HEADER.size + capacity) if tail is None
                                           else _mapped(tail, _HEADER.size + capacity))
        self.used = 0
        self._header = memoryview(self.buf)[:_HEADER.size].cast("Q")  # base, used

    def add(self, data: bytes) -> bool:
        """Copy ``data`` after the pending bytes, then count it; False (and nothing copied)
        if it does not fit."""
        end = self.used + len(data)
        if end > self.capacity:
            return False
        self.buf[_HEADER.size + self.used:_HEADER.size + end] = data
        self.used = self._header[1] = end
        return True

    def take(self) -> bytes:
        return bytes(self.buf[_HEADER.size:_HEADER.size + self.used])

    def written(self, spool_size: int) -> None:
        """The pending bytes are in the spool, which is now ``spool_size`` bytes long."""
        self.used = self._header[1] = 0
        self._header[0] = spool_size

    def close(self) -> None:
        self._header.release()
        if isinstance(self.buf, mmap.mmap):
            self.buf.close()
        self.buf = bytearray(_HEADER.size)
        self._header = memoryview(self.buf).cast("Q")
        self.capacity = self.used = 0


def _mapped(path: str | os.PathLike[str], size: int) -> mmap.mmap:
    """The tail file, its blocks allocated first: a sparse file's page written on a full
    disk would end the script with SIGBUS. OSError where they cannot be (pending bytes then
    wait in memory)."""
    fd = open_own(path, os.O_RDWR | os.O_CREAT)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        os.ftruncate(fd, size)
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, size)
        return mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)


def recover(spool: str | os.PathLike[str], tail: str | os.PathLike[str]) -> int:
    """Append to ``spool`` the pending bytes of ``tail`` it lacks (the child is gone);
    return how many bytes were appended."""
    missing = unappended(spool, tail)
    if missing:
        append_to_own(spool, missing)
    return len(missing)


def unappended(spool: str | os.PathLike[str], tail: str | os.PathLike[str]) -> bytes:
    """The pending bytes of ``tail`` that ``spool`` lacks, once the child is gone."""
    try:
        data = Path(tail).read_bytes()
        size = os.path.getsize(spool)
    except OSError:
        return b""
    if len(data) < _HEADER.size:
        return b""  # the child never mapped it
    base, used = _HEADER.unpack_from(data)
    already = size - base  # of the pending bytes, those the child appended before it died
    if not 0 <= already < used <= len(data) - _HEADER.size:
        return b""
    return data[_HEADER.size + already:_HEADER.size + used]
