"""Text from a report, made safe for the markdown that graphdoctor writes for GitHub issues.

Every string a report holds (a title, a path, a graph's API, a severity...) reaches the
markdown through :func:`escape`, which is told where the text lands, because each place
reads text differently:

* :attr:`Where.TEXT`: a paragraph, heading, list item or table cell. Markdown is read
  there, so its markup characters get a backslash and HTML's ``< > &`` become entities.
* :attr:`Where.LINE`: text that starts a line (of a paragraph that keeps its line breaks)
  or a list item: as TEXT, and its start cannot begin a list or underline a heading.
* :attr:`Where.HTML`: inside an HTML block, such as a fold's ``<summary>``. Markdown is
  *not* read there (a backslash or a backtick would show as typed), so the text is only
  HTML-escaped, and code is a ``<code>`` element.
* :attr:`Where.CODE` and :attr:`Where.TABLE_CODE`: one code span, its fence longer than
  any run of backticks inside (in a table, a pipe is escaped even in code, or GitHub
  splits the cell).
* :attr:`Where.BLOCK`: a fenced code block, its fence longer than any run inside.

In TEXT and HTML, spans that the rules wrote in backticks (like `` `.item()` ``) stay code,
and so does whatever GitHub would turn into a link (``https://...``, ``www....``): GitHub
links nothing inside code, and a URL shown as code still reads as itself. Each ``@`` gets
a zero-width space after it, so that pasting the markdown mentions nobody and links no
e-mail address; an entity such as ``&#64;`` would not do, as GitHub looks for mentions in
the text after its entities are decoded.

``most`` bounds the report's text *before* it is escaped, piece by piece, so a cut never
splits a backslash escape, an entity or a code span (a code span that is cut is closed).
"""

from __future__ import annotations

import enum
import html
import re
from typing import NamedTuple

from graphdoctor.clean_text import clean


class Where(enum.Enum):
    """Where in the markdown a text lands (see the module docstring)."""

    TEXT = "text"
    LINE = "line"
    HTML = "html"
    CODE = "code"
    TABLE_CODE = "table code"
    BLOCK = "block"


class _Piece(NamedTuple):
    text: str
    is_code: bool


ELLIPSIS = "..."
NO_MENTION = "@\u200b"  # a zero-width space keeps "@name" from being a mention
# Markdown's markup characters, ~ among them: GitHub strikes out the text between two.
_MARKUP = re.compile(r"([\\`*_\[\]|#~])")
# What begins a block at the start of a line: a list item ("-", "+", "1." or "1)"), or the
# "-" or "=" that underlines the line before it as a heading.
_BLOCK_START = re.compile(r"^(\d{0,9})([-+=.)])")
_RULE_CODE_SPAN = re.compile(r"`([^`|\n]+)`")  # no pipe: it would split a table cell
# What GitHub (or CommonMark with a linkifier) links: a scheme:// or www. up to a space,
# and no backtick or pipe, so that the code span it becomes holds neither. A scheme is
# looked for only where a run of its characters starts, or a long run would take time
# growing with its square.
_LINKABLE = re.compile(r"(?:(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://|www\.)[^\s`|]*",
                       re.IGNORECASE)
_CODE_PLACES = (Where.CODE, Where.TABLE_CODE)


def escape(text: str, where: Where = Where.TEXT, most: int | None = None, *,
           language: str = "") -> str:
    """``text`` from a report, written safely for ``where``: at most ``most`` characters of
    it (with ``...`` when cut). ``language`` names a code block's language."""
    text = clean(text)
    if where is Where.BLOCK:
        return _fenced_block(_shortened(text.rstrip(), most), language)
    flat = text.replace("\n", " ")
    if where in _CODE_PLACES:
        return _code_span(_shortened(flat, most), in_table=where is Where.TABLE_CODE)
    written = "".join(_written(piece, where) for piece in _cut(_pieces(flat), most))
    return _BLOCK_START.sub(r"\1\\\2", written.lstrip()) if where is Where.LINE else written


def _shortened(text: str, most: int | None) -> str:
    return text if most is None or len(text) <= most else text[:most - len(ELLIPSIS)] + ELLIPSIS


def _pieces(text: str) -> list[_Piece]:
    """The text split into plain text and code: the rules' code spans, and what GitHub
    would link. Adjacent code is one piece, as two spans side by side would read as one
    longer backtick run."""
    pieces: list[_Piece] = []
    for index, part in enumerate(_RULE_CODE_SPAN.split(text)):
        pieces += [_Piece(part, True)] if index % 2 else _linkables_as_code(part)
    return _merged(pieces)


def _linkables_as_code(text: str) -> list[_Piece]:
    """Plain text split around what GitHub would link, which becomes code."""
    pieces, start = [], 0
    for found in _LINKABLE.finditer(text):
        pieces += [_Piece(text[start:found.start()], False), _Piece(found[0], True)]
        start = found.end()
    return pieces + [_Piece(text[start:], False)]


def _merged(pieces: list[_Piece]) -> list[_Piece]:
    """The pieces without empty ones, each run of one kind joined into one piece."""
    merged: list[_Piece] = []
    for piece in (p for p in pieces if p.text):
        if merged and merged[-1].is_code == piece.is_code:
            piece = _Piece(merged.pop().text + piece.text, piece.is_code)
        merged.append(piece)
    return merged


def _cut(pieces: list[_Piece], most: int | None) -> list[_Piece]:
    """The pieces shortened to ``most`` characters in all, then an ellipsis (as plain text,
    after a code piece that was cut, which stays a whole span)."""
    if most is None or sum(len(piece.text) for piece in pieces) <= most:
        return pieces
    kept, room = [], most - len(ELLIPSIS)
    for piece in pieces:
        if room <= 0:
            break
        kept.append(_Piece(piece.text[:room], piece.is_code))
        room -= len(piece.text)
    return _merged([*kept, _Piece(ELLIPSIS, False)])


def _written(piece: _Piece, where: Where) -> str:
    """A piece as markdown, or as HTML where markdown is not read."""
    if where is not Where.HTML:
        return _code_span(piece.text) if piece.is_code else _plain_markdown(piece.text)
    if piece.is_code:
        return f"<code>{html.escape(piece.text, quote=False)}</code>"
    return html.escape(_unmentioned(piece.text), quote=False)


def _plain_markdown(text: str) -> str:
    """A backslash before markdown's markup characters, HTML's < > & as entities."""
    return html.escape(_MARKUP.sub(r"\\\1", _unmentioned(text)), quote=False)


def _unmentioned(text: str) -> str:
    return text.replace("@", NO_MENTION)


def _code_span(text: str, in_table: bool = False) -> str:
    """Inline code. In a table a pipe gets a backslash even in code; GitHub reads a backslash
    before that one as escaping it instead, so such text is written as plain text there."""
    if in_table and "\\|" in text:
        return _plain_markdown(text)
    text = text.replace("|", "\\|") if in_table else text
    ticks = "`" * (_longest_backtick_run(text) + 1)
    padding = " " if _needs_padding(text) else ""
    return f"{ticks}{padding}{text}{padding}{ticks}"


def _needs_padding(text: str) -> bool:
    """Whether a code span needs a space inside each end: a backtick at an end would join its
    fence, CommonMark takes a space off both ends of a span that has one at each (and other
    text), and an empty span would be a lone run of backticks."""
    return (not text or "`" in (text[0], text[-1])
            or (text[0] == text[-1] == " " and bool(text.strip())))


def _fenced_block(text: str, language: str) -> str:
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
