"""Whether a frame's file is graphdoctor's own code: the one answer the recorder, the
launcher, the trace, the rules and the reports share.

A user reading a stack should see their program, not the recorder. A file is graphdoctor's
when it lies under this package's folder (its real path, so a linked install is seen as
itself), or, for a path recorded on another machine where the package lived elsewhere, when
it names one of this package's modules inside a folder called ``graphdoctor``
(``.../graphdoctor/record/child.py``; not a user's ``.../graphdoctor/train.py``). It reads
the path's text alone and never the reader's disk: a path from a report is a stranger's.
A live frame's file is given as its real path.
"""

from __future__ import annotations

import os
import pkgutil
import re

PACKAGE_FOLDER = os.path.dirname(os.path.realpath(__file__))
# graphdoctor's top-level modules and packages: record, launch, api, ...
PARTS = frozenset(name for _, name, _ in pkgutil.iter_modules([PACKAGE_FOLDER]))
RUNNER_PARTS = frozenset({"record", "launch"})  # what runs the user's script
_INSIDE = PACKAGE_FOLDER.replace("\\", "/").rstrip("/") + "/"
_NAMED = re.compile(r"(?:(?<=/)|^)graphdoctor/(?=(\w+)(?:\.py)?(?:/|$))")


def own_part(path: str) -> str | None:
    """The part of graphdoctor (a top-level module or package: ``record``, ``api``) whose
    file ``path`` is; None for a file that is not graphdoctor's."""
    normalized = path.replace("\\", "/")
    if normalized.startswith(_INSIDE):
        return normalized[len(_INSIDE):].split("/", 1)[0].removesuffix(".py")
    for match in _NAMED.finditer(normalized):
        if match.group(1) in PARTS:
            return match.group(1)
    return None


def is_own_file(path: str) -> bool:
    """Whether ``path`` is a file of graphdoctor's own code."""
    return own_part(path) is not None
