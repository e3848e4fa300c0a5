"""How each kind of event is drawn lives with the views: every kind has a mark of one glyph
in one of the sixteen ANSI colours, and a kind the palette does not know yet is drawn too."""

from __future__ import annotations

import pytest

from graphdoctor.trace.event_kinds import KINDS, EventKind, Replay
from graphdoctor.tui.palette import ANSI_COLOURS, KIND_MARKS, OTHER_KIND, kind_mark


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_every_kind_is_drawable(kind: EventKind) -> None:
    mark = kind_mark(kind)
    assert len(mark.glyph) == 1 and mark.style in ANSI_COLOURS
    assert kind.name in KIND_MARKS


def test_a_kind_the_palette_does_not_know_yet_is_drawn_plainly() -> None:
    newer = EventKind("newer_things", "newer thing", Replay, True, "newer")
    assert kind_mark(newer) == OTHER_KIND and OTHER_KIND.style in ANSI_COLOURS
