"""Which source lines a report may read from this machine's disk.

A report shows the code its findings cite. Those lines are read once, when the report is
built, and kept in it. A report is built from a recording in two cases, trusted differently:

- **This process's own recording** (``graphdoctor run``, ``graphdoctor.check``, ``compare``):
  its stacks name the files the script just ran. Each file read is read whole, once, if it is
  a regular file of at most :data:`MAX_SOURCE_BYTES` (never a device, a FIFO or ``/proc``'s
  endless files), and not changed since the run began; its SHA-256 is kept in the report
  (``meta.sources``) and appended to the spool, so a spool kept with ``--keep-spool`` carries
  it.
- **A spool opened later** (``report``, ``view``, ``export`` given a recording, perhaps a
  stranger's): its records are text anyone could have written, and one that cites
  ``/proc/self/environ`` or ``~/.aws/credentials`` must not make the reader print them. A line
  is read only when the recording was made on this host, the file is a Python file under
  the recording's own folder (where it ran, once links are resolved; never ``/``, a home
  folder itself, a hidden or a system folder), regular and small, and its SHA-256 is the
  digest the recording holds. Where the recording ran is the recording's word too, so the
  digest is what protects: a stranger can only make the reader show a Python file whose
  exact content the stranger already knows.

Every line left out is accounted for: the report's notes say how many files and why.

A report opened later is a stranger's text too: a line it did not keep is read only by the
second rule (:mod:`graphdoctor.report.disk_lines`, for the viewer).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
import stat
from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from graphdoctor.trace.model import Meta, Note, SourceFile, Trace

MAX_SOURCE_BYTES = 2 * 2**20  # far above any source file; far below what hurts to read
# Folders that hold a machine's own files, never a project's.
SYSTEM_FOLDERS = ("/proc", "/sys", "/dev", "/etc", "/run", "/boot", "/usr", "/bin", "/sbin",
                  "/lib", "/lib64", "/var/run", "/var/lib")
HOME_PARENTS = ("home", "Users")
SOURCE_SUFFIX = ".py"  # the only files a spool from elsewhere may have shown
SOURCE_LINES = "source lines"
MODIFIED_SLACK_S = 1.0  # a run's start is recorded to the second
# Why a file's lines were not read, as the report's note says it.
NOT_REGULAR = "not a regular file of at most 2 MiB"
CHANGED_DURING_RUN = "changed while the script ran"
OTHER_MACHINE = "recorded on another machine"
NO_DIGEST = "no digest in the recording"
OUTSIDE_FOLDER = "not a Python file in the recording's own folder"
CHANGED_SINCE = "changed since the recording"


def read_regular(path: str, follow: bool = True) -> bytes | None:
    """The bytes of a regular file of at most MAX_SOURCE_BYTES, or None: opened without
    blocking (a FIFO would wait for a writer for ever) and checked once open, so what is
    read is what was checked."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
            return None
        data = os.read(fd, MAX_SOURCE_BYTES + 1)
        return data if len(data) <= MAX_SOURCE_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Lines:
    """A line reader over files read whole once: ``read_line(file, number)`` returns the line
    with its newline, or "" (linecache's contract), and keeps why a file gave nothing."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.files: dict[str, list[str] | None] = {}
        self.refused: dict[str, str] = {}  # file -> why its lines were not read

    def __call__(self, file: str, number: int) -> str:
        if file not in self.files:
            self.files[file] = self._load(file)
        lines = self.files[file]
        return lines[number - 1] if lines and 0 < number <= len(lines) else ""

    def _load(self, file: str) -> list[str] | None:
        if not file or file.startswith("<"):
            return None  # "<frozen runpy>", "<string>": no file
        data = self.read(file, os.path.join(self.cwd, file))
        return data.decode("utf-8", "replace").splitlines(keepends=True) if data else None

    def read(self, file: str, path: str) -> bytes | None:
        raise NotImplementedError

    def sources(self, meta: Meta) -> tuple[SourceFile, ...]:
        """The digests the finished report keeps for ``meta``'s recording."""
        return meta.sources

    def finished(self, trace: Trace, main: bool = True) -> Trace:
        """The trace with the digests of its files and, on the main trace, a note of the
        files whose lines were not read."""
        note = self._note() if main else None
        notes = (*trace.meta.not_recorded, note) if note else trace.meta.not_recorded
        meta = dataclasses.replace(trace.meta, sources=self.sources(trace.meta),
                                   not_recorded=notes)
        return dataclasses.replace(trace, meta=meta)

    def _note(self) -> Note | None:
        if not self.refused:
            return None
        counts = Counter(self.refused.values())
        reasons = "; ".join(f"{_files(n)} ({why})" for why, n in counts.most_common())
        return Note(SOURCE_LINES, f"not read for {reasons}")


def _files(count: int) -> str:
    return "1 file" if count == 1 else f"{count} files"


class OwnRecording(_Lines):
    """The lines of this process's own recording, each file digested as it is read (see the
    module doc)."""

    def __init__(self, meta: Meta) -> None:
        super().__init__(meta.cwd)
        self.digests: dict[str, SourceFile] = {}
        self.started = _started(meta.started_at)

    def read(self, file: str, path: str) -> bytes | None:
        data = read_regular(path)
        if data is None:
            if os.path.lexists(path):
                self.refused[file] = NOT_REGULAR
            return None
        if self.started is not None and _modified_after(path, self.started):
            self.refused[file] = CHANGED_DURING_RUN
            return None
        self.digests[file] = SourceFile(file, len(data), sha256(data))
        return data

    def sources(self, meta: Meta) -> tuple[SourceFile, ...]:
        return tuple(self.digests.values())


def _started(started_at: str) -> float | None:
    try:
        return datetime.strptime(started_at, "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None


def _modified_after(path: str, started: float) -> bool:
    try:
        return os.stat(path).st_mtime > started + MODIFIED_SLACK_S
    except OSError:
        return False


class RecordedElsewhere(_Lines):
    """The lines of a spool opened later: only those the recording vouches for (see the
    module doc)."""

    def __init__(self, metas: Iterable[Meta], host: str | None = None) -> None:
        metas = list(metas)
        super().__init__(metas[0].cwd if metas else "")
        self.digests = {s.file: s for meta in metas for s in meta.sources}
        self.hosts = {meta.hostname for meta in metas}
        self.host = socket.gethostname() if host is None else host
        self.folders = [_real(m.cwd) for m in metas if is_project_folder(_real(m.cwd))]

    def read(self, file: str, path: str) -> bytes | None:
        why = self._refusal(file, path)
        data = read_regular(_real(path), follow=False) if why is None else None
        if why is None and (data is None or sha256(data) != self.digests[file].sha256):
            why = CHANGED_SINCE
        if why is not None:
            self.refused[file] = why
            return None
        return data

    def _refusal(self, file: str, path: str) -> str | None:
        # no digest first: the reason a digest-less report gives is then the same anywhere
        if file not in self.digests:
            return NO_DIGEST
        if self.hosts != {self.host}:
            return OTHER_MACHINE
        real = _real(path)
        if not _under(real, self.folders) or not real.endswith(SOURCE_SUFFIX):
            return OUTSIDE_FOLDER
        return None


def _real(path: str) -> str:
    """``path`` with its links resolved; "" for a name no file can have (a NUL in it, which
    a report's text may hold)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return ""


def is_project_folder(path: str) -> bool:
    """Whether ``path`` can be a project's folder: absolute, two levels deep at least
    (``/``, ``/root`` and ``/work`` hold too much), not a home folder itself, not hidden
    (``~/.aws``, ``~/.ssh``: where secrets are kept) and not a system folder."""
    parts = [p for p in path.split("/") if p]
    if not path.startswith("/") or len(parts) < 2 or any(p.startswith(".") for p in parts):
        return False
    if len(parts) == 2 and parts[0] in HOME_PARENTS:
        return False
    return not any(path == s or path.startswith(s + "/") for s in SYSTEM_FOLDERS)


def _under(path: str, folders: list[str]) -> bool:
    return any(path.startswith(folder.rstrip("/") + "/") for folder in folders)
