"""Report text on screen: shown as it was written, never obeyed.

What a report says was written by someone else, perhaps to attack whoever opens it. Widgets
get it as :class:`~rich.text.Text` from :func:`report_text`, never as markup (so
``[link=...]`` in a message is shown, not followed) and cleaned by :func:`clean` (so an
escape sequence is shown as ``?[2J``, not sent to the terminal). :class:`ShowControls`, a
line filter over the whole app, cleans every line drawn as well: a control character that
reached a widget some other way is shown as ``?`` too.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.filter import LineFilter

from graphdoctor.clean_text import clean


def report_text(text: object, style: str | Style = "") -> Text:
    """``text`` (from the report) as plain, cleaned text in ``style``."""
    return Text(clean(str(text)), style=style)


class ShowControls(LineFilter):
    """Every line the app draws, with each character a terminal would act on shown as ?."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [segment if segment.control else
                Segment(clean(segment.text), segment.style, segment.control)
                for segment in segments]


class GiveStyle(LineFilter):
    """Every segment with a style: Textual's monochrome filter (which ``NO_COLOR`` turns on)
    reads each segment's style, and one drawn with none ended the app on its first frame
    (AttributeError in ``textual.filter``). Put before that filter only: elsewhere a
    segment's missing style is drawn as it is."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [segment if segment.style is not None or segment.control else
                Segment(segment.text, NO_STYLE) for segment in segments]


NO_STYLE = Style.null()
