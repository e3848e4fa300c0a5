"""Writing a file where the user asked (``-o``), without destroying what the path points at.

GPU machines and ML containers run as root, where a careless write replaces anything:
``-o /dev/null`` once replaced the machine's ``/dev/null`` with a regular file (tmux would not
start afterwards), and a symlink into a shared results folder became a file of its own. So
what is written depends on what is there:

- nothing, or a regular file: written atomically (a temporary file of this writer's own in
  the same folder, then renamed over it), so a reader never sees half a file and two
  writers never interleave; a file replaced keeps its permissions;
- a symbolic link: the file it points at is written as above, and the link stays a link;
- a character device (``/dev/null``, ``/dev/tty``), a FIFO or a socket: written in place,
  as a stream, never replaced; one of this process's own descriptors (``/dev/stdout``,
  ``/dev/fd/3``) is written as it is open (``>>`` appends);
- a block device or a folder: refused, in one line.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from pathlib import Path

STREAMED = (stat.S_ISCHR, stat.S_ISFIFO, stat.S_ISSOCK)
_DESCRIPTOR = re.compile(r"^/proc/(?P<pid>self|[0-9]+)/fd/(?P<fd>[0-9]+)$")
MOST_LINKS = 40  # as the kernel follows


class UnsafeOutput(OSError):
    """A path a report must not be written to; ``strerror`` says why."""


def write_file(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` where ``path`` points (see the module doc); the path written, a link's
    target for a link."""
    if not str(path):
        raise UnsafeOutput(errno.ENOENT, "an empty file name")
    descriptor = _own_descriptor(path)
    if descriptor is not None:  # /dev/stdout, /dev/fd/3: this process's own, as it is open
        _write_all(descriptor, data)
        return Path(path)
    mode = _mode(Path(path))
    if mode is not None and any(streamed(mode) for streamed in STREAMED):
        _write_in_place(Path(path), data)
        return Path(path)
    if mode is not None and stat.S_ISBLK(mode):
        raise UnsafeOutput(errno.EPERM, "a block device: a report is never written onto one")
    if mode is not None and stat.S_ISDIR(mode):
        raise UnsafeOutput(errno.EISDIR, "a folder, not a file")
    target = Path(os.path.realpath(path))  # a link's target, replaced; the link stays
    write_atomically(target, data, stat.S_IMODE(mode) if mode is not None else None)
    return target


def written_in_place(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is written in place: one of this process's descriptors, a device,
    a FIFO or a socket."""
    mode = _mode(Path(path))
    return _own_descriptor(path) is not None or (
        mode is not None and any(streamed(mode) for streamed in STREAMED))


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None


def _own_descriptor(path: str | os.PathLike[str]) -> int | None:
    """The descriptor ``path`` names when its links lead through one of this process's own
    (``/dev/stdout`` -> ``/proc/self/fd/1``): written as it is open, at its offset and in its
    mode (``>>`` appends), never reopened from the start or replaced. Followed link by link:
    resolving it whole would give the file behind the descriptor instead."""
    current = os.path.abspath(path)
    for _ in range(MOST_LINKS):
        # its folder resolved (/dev/fd is /proc/self/fd), its own name not yet
        current = os.path.join(os.path.realpath(os.path.dirname(current)),
                               os.path.basename(current))
        match = _DESCRIPTOR.match(current)
        if match is not None and match["pid"] in ("self", str(os.getpid())):
            return int(match["fd"])
        try:
            current = os.path.join(os.path.dirname(current), os.readlink(current))
        except OSError:  # not a link (or gone): no descriptor of ours
            return None
    return None


def _write_in_place(path: Path, data: bytes) -> None:
    """Stream into what is there; O_NOCTTY: a terminal written to does not become ours."""
    fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_atomically(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file of this writer's own, then rename
    it: a reader never sees half a file, and two writers of one name never interleave.
    ``mode``: the permissions of the file replaced, kept; else the umask's."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "xb") as out:
            out.write(data)
            if mode is not None:
                os.fchmod(out.fileno(), mode)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
