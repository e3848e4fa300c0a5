"""Where an event happened, in words: a stack's user line as each kind of reader prints it.

Which frame of a stack is the user's is :func:`.queries.culprit_frame`'s answer, the one
policy every reader shares; this module only writes it down: ``train.py:12`` in a rule's
message (:func:`where`), the path as the user would type it in a report (:func:`site`), and
``path:12 in f`` on a stack's line (:func:`frame_text`, the one way a frame is written as
text, its path as short as each reader wants it).
"""

from __future__ import annotations

from collections.abc import Callable

from graphdoctor.facts.queries import culprit_frame
from graphdoctor.trace.model import Frame, Trace

UNKNOWN_LINE = "an unknown line"  # what a message says of a stack with no user frame
PACKAGE_FOLDERS = ("site-packages/", "dist-packages/")


def file_name(path: str) -> str:
    """The file's name alone, from a POSIX or a Windows path."""
    return path.replace("\\", "/").rsplit("/", 1)[-1] or path


def display_path(path: str, cwd: str) -> str:
    """A path as the user would write it: relative when inside the run's folder."""
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1:]
    return path


def package_path(path: str, cwd: str = "") -> str:
    """A path as short as it can be and still be recognised: relative to the run's folder,
    else to the packages folder it is installed in (``torch/_ops.py``)."""
    shown = display_path(path, cwd)
    if shown != path:
        return shown
    return _in_packages(path) or path


def package_or_name(path: str) -> str:
    """A package's file by its place in the package (``torch/cuda/__init__.py``), any other
    by its name alone."""
    path = path.replace("\\", "/")
    return _in_packages(path) or file_name(path)


def _in_packages(path: str) -> str | None:
    """The path inside the packages folder it is installed in; None outside one."""
    for folder in PACKAGE_FOLDERS:
        if folder in path:
            return path.split(folder, 1)[1]
    return None


def spot(frame: Frame | None) -> str:
    """``file.py:12`` of a frame, for messages; "an unknown line" for none."""
    return f"{file_name(frame.file)}:{frame.line}" if frame else UNKNOWN_LINE


def where(trace: Trace, stack: int) -> str:
    """``file.py:12`` of a stack's user frame, for messages."""
    return spot(culprit_frame(trace, stack))


def site(trace: Trace, stack: int, short: bool = False) -> str:
    """``path:line`` of a stack's user frame, the path relative to the run's folder (only
    the file's name if ``short``); "" for a stack with no user frame."""
    frame = culprit_frame(trace, stack)
    if frame is None:
        return ""
    path = file_name(frame.file) if short else display_path(frame.file, trace.meta.cwd)
    return f"{path}:{frame.line}"


def frame_text(frame: Frame, cwd: str = "", path: Callable[[str], str] | None = None) -> str:
    """One frame on a line of a stack: ``path:12 in f``, the path as ``path`` writes it, by
    default as short as recognisable (:func:`package_path`)."""
    shown = path(frame.file) if path is not None else package_path(frame.file, cwd)
    return f"{shown}:{frame.line} in {frame.func}"
