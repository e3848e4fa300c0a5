"""Text laid out for a terminal of 80 columns, the size every help text and list fits.

A list of terms and their descriptions (``--fail-on`` conditions, rules, demos) wraps each
description under itself, past its term, so an 80-column terminal reads it as a table; and
graphdoctor's own lines on stderr wrap at the terminal's width, under themselves.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterable

HELP_WIDTH = 79  # click's help indents its own text by two; a line of 80 would wrap


def term_list(rows: Iterable[tuple[str, str]], indent: int = 2,
              width: int = HELP_WIDTH) -> str:
    """``  term    description`` lines, each description wrapped at ``width`` under itself."""
    rows = list(rows)
    term_width = max((len(term) for term, _ in rows), default=0)
    lead = " " * (indent + term_width + 2)
    return "\n".join(textwrap.fill(text, width, initial_indent=lead,
                                   subsequent_indent=lead, break_on_hyphens=False)
                     .replace(lead, f"{' ' * indent}{term:<{term_width}}  ", 1)
                     for term, text in rows)


def prose(text: str, width: int) -> str:
    """A docstring's text (a rule's explanation) refilled to ``width``: paragraphs and
    ``- `` list items wrapped (items under themselves), indented lines kept as written
    (code), and reStructuredText's ````code```` shown as Markdown's `code`."""
    blocks = [_block(block, width) for block in textwrap.dedent(text).strip().split("\n\n")]
    return "\n\n".join(blocks).replace("``", "`")


def _block(block: str, width: int) -> str:
    lines = block.splitlines()
    if all(line.startswith("    ") for line in lines):
        return block  # code, as written
    items: list[list[str]] = []
    for line in lines:
        if line.startswith(("- ", "* ")) or not items:
            items.append([line.strip()])
        else:
            items[-1].append(line.strip())
    return "\n".join(_filled(" ".join(item), width) for item in items)


def _filled(text: str, width: int) -> str:
    listed = text.startswith(("- ", "* "))
    return textwrap.fill(text, width, subsequent_indent="  " if listed else "",
                         break_on_hyphens=False, break_long_words=False)


PIPE_WIDTH = 100  # the columns of a pipe or a file, where no COLUMNS says otherwise
HANGING = "  "  # a wrapped line goes on under its first, this much further in


def stderr_width() -> int:
    """The columns graphdoctor's lines on stderr have: COLUMNS, else the terminal's (that
    of stderr, which stays a terminal when stdout is piped), else :data:`PIPE_WIDTH`."""
    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (AttributeError, OSError, ValueError):  # not a terminal, closed, or not a file
        return PIPE_WIDTH


def notice(message: str, width: int) -> str:
    """A message of graphdoctor's own for stderr, each of its lines wrapped at ``width``,
    going on under itself a little further in than it began (its own indent and
    :data:`HANGING`); a word longer than the line (a path) is kept whole."""
    return "\n".join(_wrapped(line, width) for line in message.split("\n"))


def _wrapped(line: str, width: int) -> str:
    line = line.rstrip()
    if len(line) <= width:
        return line
    indent = line[:len(line) - len(line.lstrip())]
    return textwrap.fill(line.lstrip(), width, initial_indent=indent,
                         subsequent_indent=indent + HANGING, break_long_words=False,
                         break_on_hyphens=False)
