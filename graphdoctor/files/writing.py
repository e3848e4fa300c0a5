"""Every file graphdoctor writes is written here, by one set of rules.

GPU machines and ML containers run as root, where a careless write replaces anything:
``-o /dev/null`` once replaced the machine's ``/dev/null`` with a regular file (tmux would not
start afterwards), a symlink into a shared results folder became a file of its own, and a
colleague's report written over became root's. Reports (``-o`` of every command, ``merge``,
the in-process API's and the pytest plugin's), kept spools (``--keep-spool``), the spools,
tails and fault files of a run, patched sources (``fix --apply``) and the native library are
all written through this module. A ground module: it imports nothing of graphdoctor but its
errors, so every stage may use it.

**A path the user names** (:func:`write_file`, :func:`move_file`) is written according to
what is there:

- nothing, or a regular file: written whole to a temporary file of this writer's own in the
  same folder, then renamed over it, so a reader never sees half a file and two writers never
  interleave; a file replaced keeps its permissions, and its owner and group (as root; as
  another user, its group where the user is in it);
- a symbolic link: the file it points at is written as above, and the link stays a link;
- a character device (``/dev/null``, a terminal), a FIFO or a socket: written in place, as a
  stream, never replaced; one of this process's own descriptors (``/dev/stdout``,
  ``/dev/fd/3``) is written as it is open (``>>`` appends);
- a block device or a folder: refused.

Temporary names are short, whatever the name written (a name of 245 characters leaves room
for no suffix). Every failure (an empty name, a missing folder, a full disk, a read-only file
system, a refused kind of file) is an :class:`OutputError`: one line, never a traceback.

**Writers racing onto one path lose nothing.** :func:`write_unless_changed` replaces a path
only while it still holds what the caller saw (``graphdoctor run``: what ``-o`` held when the
run began, or nothing), deciding and renaming under an exclusive lock on the file it
replaces: of runs finishing together, one replaces the file and the others learn that it
changed, and write elsewhere.

**A file graphdoctor names itself** (a run's spool, tail and fault file, a report name it
claims, a native run's kept lines) is created new and exclusively (:func:`create_new`), and
opened again only as the regular file of this user's it was made (:func:`open_own`), never
through a link: a name someone else planted is refused, not written through.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from graphdoctor.errors import GraphDoctorError

Identity = tuple[int, int, int, int]  # device, inode, size, modification time (ns)
Data = bytes | Iterable[bytes]
STREAMED = (stat.S_ISCHR, stat.S_ISFIFO, stat.S_ISSOCK)
_DESCRIPTOR = re.compile(r"^/proc/(?P<pid>self|[0-9]+)/fd/(?P<fd>[0-9]+)$")
MOST_LINKS = 40  # as the kernel follows
COPY_BYTES = 1 << 20
EMPTY_NAME = "an empty file name"
BLOCK_DEVICE = "a block device: graphdoctor never writes onto one"
FOLDER = "a folder, not a file"
# Opened without following a last link, without blocking on a FIFO, without taking a
# terminal as this process's own.
_OWN_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY


class OutputError(GraphDoctorError):
    """A file that cannot be written, or must not be: ``why`` says which, in a few words."""

    def __init__(self, path: object, why: object):
        self.path = path
        self.why = str(why)
        super().__init__(f"{path}: cannot write ({self.why})")


# -- a path the user names --------------------------------------------------------------------
def write_file(path: str | os.PathLike[str], data: Data) -> Path:
    """Write ``data`` (bytes, or chunks of them) where ``path`` points (see the module doc);
    the path written: a link's target, for a link."""
    with _said(path):
        return _write(path, data)


def move_file(source: str | os.PathLike[str], path: str | os.PathLike[str], *,
              follow: bool = True) -> Path:
    """Put ``source``, a finished file of graphdoctor's own, where ``path`` points, as
    :func:`write_file` would write its content: renamed into place where it can be (a file,
    on the same file system), else copied; ``source`` is gone afterwards. ``follow=False``
    replaces ``path`` itself, a link included (for a name graphdoctor gives: the native
    library in its private folder)."""
    with _said(path):
        if not follow:
            os.replace(source, path)
            return Path(path)
        target = _regular_target(path)
        if target is None:  # a device, a FIFO, a descriptor: streamed into
            _write(path, _chunks_of(source))
            os.unlink(source)
            return Path(path)
        try:
            _keep_owner_and_mode(source, target)
            os.replace(source, target)
        except OSError as error:
            if error.errno != errno.EXDEV:
                raise
            _replace(target, _chunks_of(source))
            os.unlink(source)
        return target


def write_unless_changed(path: str | os.PathLike[str], data: Data,
                         seen: Identity | None) -> bool:
    """Write ``data`` where ``path`` points if it still holds what it held when ``seen``
    (None: nothing); False, writing nothing, once another writer changed it. Decided and
    written under a lock on the file replaced, so that racing writers lose nothing."""
    with _said(path):
        target = _regular_target(path)
        if target is None:  # a device: every writer streams into it
            _write(path, data)
            return True
        with _locked(target) as now:
            if now is not None:
                if now != seen:
                    return False
                _replace(target, data)
                return True
        # nothing there (or gone since): the first to create it writes it, under its lock
        # like any other (a writer that saw the empty file may be waiting for it)
        try:
            fd = create_new(target)
        except FileExistsError:
            return False
        try:
            mine = _identity(os.fstat(fd))
        finally:
            os.close(fd)
        return write_unless_changed(path, data, mine)


def check_writable(path: str | os.PathLike[str]) -> None:
    """OutputError now for a path no file may be written to (a block device, a folder, an
    empty name, a missing folder), so a run can say so before its script starts."""
    with _said(path):
        _refuse(path, _mode(Path(path)))
        if _own_descriptor(path) is None and not os.path.isdir(
                os.path.dirname(os.path.realpath(path)) or "."):
            raise FileNotFoundError(errno.ENOENT, "no such folder")


def written_in_place(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is written in place: one of this process's descriptors, a device,
    a FIFO or a socket."""
    try:
        return _regular_target(path) is None
    except (OSError, ValueError):
        return False


def identity(path: str | os.PathLike[str]) -> Identity | None:
    """What ``path`` holds now, to tell later whether another writer wrote it."""
    try:
        return _identity(os.stat(path))
    except (OSError, ValueError):
        return None


# -- a file graphdoctor names itself ----------------------------------------------------------
def create_new(path: str | os.PathLike[str], mode: int = 0o666) -> int:
    """A new, empty file at ``path``, created by this call alone (never through a link);
    its descriptor, open for writing. ``mode`` as the umask leaves it. FileExistsError where
    the name is taken."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OWN_FLAGS, mode)


def created(path: str | os.PathLike[str], mode: int = 0o666) -> bool:
    """Whether ``path`` was created now, empty (False where the name is taken)."""
    try:
        os.close(create_new(path, mode))
    except FileExistsError:
        return False
    return True


def open_own(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """``path``, a file graphdoctor made, opened with ``flags`` (``os.O_APPEND``...): a regular
    file of this user's, or a device or a FIFO to stream into; never through a link, never
    another user's file. OSError otherwise."""
    fd = os.open(path, flags | _OWN_FLAGS, mode)
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_uid != os.geteuid():
            raise PermissionError(errno.EPERM, "another user's file", str(path))
        if not stat.S_ISREG(info.st_mode) and not any(s(info.st_mode) for s in STREAMED):
            raise IsADirectoryError(errno.EISDIR, "not a file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def append_to_own(path: str | os.PathLike[str], data: bytes) -> None:
    """Append ``data`` to a file graphdoctor made (as :func:`open_own` opens it)."""
    fd = open_own(path, os.O_WRONLY | os.O_APPEND)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | memoryview) -> None:
    """All of ``data``: ``os.write`` may write part of it."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# -- how ----------------------------------------------------------------------------------------
@contextmanager
def _said(path: str | os.PathLike[str]) -> Iterator[None]:
    """Every OSError of writing ``path`` as one OutputError."""
    try:
        yield
    except OSError as error:
        raise OutputError(path, _why(error)) from None
    except ValueError as error:  # a NUL in the name
        raise OutputError(repr(str(path)), error) from None


def _why(error: OSError) -> str:
    if error.errno == errno.ENOENT and not error.strerror:
        return "no such folder"
    return str(error.strerror or error)


def _write(path: str | os.PathLike[str], data: Data) -> Path:
    descriptor = _own_descriptor(path)
    if descriptor is not None:  # /dev/stdout, /dev/fd/3: this process's own, as it is open
        _stream(descriptor, data)
        return Path(path)
    target = _regular_target(path)
    if target is None:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
        try:
            _stream(fd, data)
        finally:
            os.close(fd)
        return Path(path)
    _replace(target, data)
    return target


def _regular_target(path: str | os.PathLike[str]) -> Path | None:
    """The regular file (or free name) ``path`` leads to, its links followed; None for what
    is written in place (a device, a FIFO, a socket, a descriptor of this process's);
    OSError for what is refused."""
    if _own_descriptor(path) is not None:
        return None
    mode = _mode(Path(path))
    _refuse(path, mode)
    if mode is not None and any(streamed(mode) for streamed in STREAMED):
        return None
    return Path(os.path.realpath(path))


def _refuse(path: str | os.PathLike[str], mode: int | None) -> None:
    if not str(path):
        raise FileNotFoundError(errno.ENOENT, EMPTY_NAME)
    if mode is not None and stat.S_ISBLK(mode):
        raise PermissionError(errno.EPERM, BLOCK_DEVICE)
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, FOLDER)


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
    if not str(path):
        return None
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


def _stream(fd: int, data: Data) -> None:
    for chunk in [data] if isinstance(data, bytes) else data:
        write_all(fd, chunk)


def _replace(target: Path, data: Data) -> None:
    """Write ``data`` to a temporary file beside ``target``, then rename it over ``target``,
    keeping the owner and permissions of the file replaced."""
    temporary = _temporary_beside(target)
    try:
        with os.fdopen(create_new(temporary), "wb") as out:
            _stream(out.fileno(), data)
        _keep_owner_and_mode(temporary, target)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _temporary_beside(target: Path) -> Path:
    """A new name in ``target``'s folder, short whatever ``target``'s name."""
    return target.with_name(f".graphdoctor-{os.getpid()}-{secrets.token_hex(6)}.tmp")


def _keep_owner_and_mode(new: str | os.PathLike[str], replaced: Path) -> None:
    """Give ``new`` the owner, group and permissions of ``replaced``, where it exists. The
    owner first: changing it clears the set-id bits, which the permissions then restore."""
    try:
        before = os.stat(replaced)
    except FileNotFoundError:
        return
    now = os.stat(new)
    if (now.st_uid, now.st_gid) != (before.st_uid, before.st_gid):
        try:
            os.chown(new, before.st_uid, before.st_gid)
        except PermissionError:  # not root: the group, where the user is in it
            _keep_group(new, before.st_gid)
    os.chmod(new, stat.S_IMODE(before.st_mode))


def _keep_group(new: str | os.PathLike[str], gid: int) -> None:
    try:
        os.chown(new, -1, gid)
    except PermissionError:
        pass


@contextmanager
def _locked(target: Path) -> Iterator[Identity | None]:
    """An exclusive lock on the file at ``target`` while the block runs, and what it holds
    (None where there is none); every writer of :func:`write_unless_changed` takes it, so
    they decide one after another. A file replaced while waiting is not what ``target``
    holds any more: what it holds then is given."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | _OWN_FLAGS)
    except FileNotFoundError:
        yield None
        return
    except PermissionError:  # a file this user may replace but not read: decided unlocked
        yield identity(target)
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # a file system without locks: decided without one
            pass
        held = os.fstat(fd)
        now = identity(target)
        yield _identity(held) if now is not None and now[:2] == (held.st_dev, held.st_ino) \
            else now
    finally:
        os.close(fd)


def _identity(info: os.stat_result) -> Identity:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _chunks_of(path: str | os.PathLike[str]) -> Iterator[bytes]:
    with open(path, "rb") as source:
        while chunk := source.read(COPY_BYTES):
            yield chunk
