"""Text from a recording, made safe to show: what a terminal or an editor would act on
instead of showing becomes ``?``. A ground module (it imports nothing of graphdoctor): every
stage shows text a recording holds, and a recording may be a stranger's."""

from __future__ import annotations

import re

# What a terminal or an editor acts on instead of showing: the C0 controls but tab and
# newline (ESC starts every escape sequence), DEL, the C1 controls (some terminals take U+009B
# as ESC [) and the bidirectional overrides and isolates, which reorder the rest of a line.


UNSAFE_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """Text from a report, safe to print: each character a terminal would act on (the start
    of an escape sequence, a bidi override) becomes ?."""
    return UNSAFE_CHARACTERS.sub("?", text)


def clean_line(text: str) -> str:
    """Text from a report as one line, safe to print: :func:`clean`, with each line break and
    run of white space made one space, so that the text cannot start a line of its own (one
    that reads as graphdoctor's)."""
    return " ".join(clean(text).split())


def clean_json(text: str) -> str:
    """JSON text safe to print, holding the same data: each character a terminal would act on
    is written as its \\u escape (JSON escapes most controls itself, but not DEL, C1 or bidi)."""
    return UNSAFE_CHARACTERS.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


def first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."
