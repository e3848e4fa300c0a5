"""JSON as graphdoctor writes it: one writer, in named styles, always safe to show.

Every JSON value graphdoctor writes for someone (a report, a Chrome trace, ``diff`` and
``compare`` with ``-f json``) is written here. Whatever the style, the text holds each
character as UTF-8 (not as ``\\u`` escapes), but for those a terminal would act on (DEL, C1
controls, bidirectional overrides), which are escaped (:func:`graphdoctor.clean_text.clean_json`):
a report is a stranger's text, and ``cat report.json`` must not obey it. A lone surrogate,
which UTF-8 cannot hold and reading never gives, is written as U+FFFD.

The spool's records are not written here: the recorder encodes them on its own hot path
(:mod:`graphdoctor.trace.spool.file`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from graphdoctor.clean_text import clean_json


@dataclass(frozen=True)
class JsonStyle:
    """How the text is laid out: ``indent`` spaces a level, or one line with no spaces."""

    name: str
    indent: int | None = None


COMPACT = JsonStyle("compact")  # for programs: reports and traces, the smallest text
PRETTY = JsonStyle("pretty", indent=2)  # for a person: ``diff -f json``
# For a person too, one space a level: ``compare -f json`` and the published schema have
# always been written so, and their bytes stay as they were.
PRETTY_NARROW = JsonStyle("pretty-narrow", indent=1)


def json_text(value: Any, style: JsonStyle) -> str:
    """``value`` as JSON text in ``style``, cleaned for a terminal."""
    separators = (",", ":") if style.indent is None else None
    return clean_json(json.dumps(value, indent=style.indent, separators=separators,
                                 ensure_ascii=False))


def json_bytes(value: Any, style: JsonStyle, end: str = "") -> bytes:
    """:func:`json_text` as UTF-8, followed by ``end`` (``"\\n"`` for a file a person reads)."""
    return (json_text(value, style) + end).encode("utf-8", "replace")
