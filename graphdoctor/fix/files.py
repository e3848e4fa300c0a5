"""The user's files, read and written only as a report from anywhere may touch them.

Read: recorded on this machine, a Python file in the recording's own folder, with the content
the recording digested (:class:`graphdoctor.report.source_lines.RecordedElsewhere`, the rule
for showing a line, is the rule for patching one). A report says where it ran, and that is
its word only: ``fix`` patches a file only where the person at the keyboard is, under the
current folder (:func:`patchable_files`), and never one that belongs to an installation
rather than a project: inside a virtual environment (a folder with ``pyvenv.cfg`` or
``conda-meta`` above it), a ``site-packages`` or ``dist-packages`` folder, or the Python
installation (``sys.prefix``, ``sys.base_prefix`` and the folders ``sysconfig`` names).

Written only when asked, in place of the file itself (a link's target), through
:mod:`graphdoctor.files.writing`: atomically, its owner and permissions kept; refused when the
file changed since it was read for the patch, or changes while it is written.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from functools import cache
from pathlib import Path

from graphdoctor.errors import GraphDoctorError
from graphdoctor.files.writing import identity, write_unless_changed
from graphdoctor.fix.plan import FilePatch, SourceReader
from graphdoctor.fix.source import Source
from graphdoctor.report.document import Report
from graphdoctor.report.source_lines import CHANGED_SINCE, RecordedElsewhere, read_regular

NOT_TEXT = "not UTF-8 text"
UNREADABLE = "not readable"
NOT_HERE = "not under the current folder (fix patches only files under the folder it runs in)"
INSTALLED = ("inside a virtual environment, a site-packages folder or the Python installation: "
             "not a project's file")
PACKAGE_FOLDERS = ("site-packages", "dist-packages")
ENVIRONMENT_MARKS = ("pyvenv.cfg", "conda-meta")


def recorded_files(report: Report) -> SourceReader:
    """The files a report may read, wherever they are (to show a patch, never to write one)."""
    traces = [report.trace, *report.other_ranks.values()]
    lines = RecordedElsewhere([trace.meta for trace in traces])

    def read(file: str) -> Source | str:
        path = os.path.join(lines.cwd, file)
        data = lines.read(file, path)
        if data is None:
            return lines.refused.get(file, UNREADABLE)
        try:
            return Source(file, data.decode("utf-8"), os.path.realpath(path))
        except UnicodeDecodeError:
            return NOT_TEXT

    return read


def patchable_files(report: Report, here: str | None = None) -> SourceReader:
    """The files a report may read that ``fix`` may also write: under ``here`` (the current
    folder) and not an installation's (see the module doc)."""
    read = recorded_files(report)
    folder = os.path.realpath(here if here is not None else os.getcwd())

    def patchable(file: str) -> Source | str:
        got = read(file)
        if isinstance(got, str):
            return got
        return why_not_patched(got.path, folder) or got

    return patchable


def why_not_patched(path: str, here: str) -> str:
    """Why ``fix`` must not write the file at ``path`` (real: links resolved) when run in
    ``here``; "" where it may."""
    if not _under(path, os.path.realpath(here)):
        return NOT_HERE
    parts = Path(path).parts
    if any(part in PACKAGE_FOLDERS for part in parts) or \
            any(_under(path, place) for place in installation_folders()):
        return INSTALLED
    folders = Path(path).parents
    if any((folder / mark).exists() for folder in folders for mark in ENVIRONMENT_MARKS):
        return INSTALLED
    return ""


@cache
def installation_folders() -> tuple[str, ...]:
    """The folders of this Python's installation and its environment, links resolved."""
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              *sysconfig.get_paths().values(), *_site_folders()}
    return tuple(sorted({os.path.realpath(p) for p in places if p and p != os.sep}))


def _site_folders() -> list[str]:
    try:
        return [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # a virtualenv's old site module
        return []


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def write(patch: FilePatch, here: str | None = None) -> Path:
    """Write the patched file where the recording's file is; GraphDoctorError where it may
    not be written here, or changed since it was read."""
    path = patch.source.path
    why = why_not_patched(path, here if here is not None else os.getcwd())
    if why:
        raise GraphDoctorError(f"{patch.name} is {why}; nothing was written to it")
    seen = identity(path)
    now = read_regular(path, follow=False)
    if seen is None or now is None or now.decode("utf-8", "replace") != patch.source.text \
            or not write_unless_changed(path, "".join(patch.after).encode(), seen):
        raise GraphDoctorError(f"{patch.name} {CHANGED_SINCE}; nothing was written to it")
    return Path(path)
