"""How each kind of event is drawn lives with the views: every kind has a mark of one glyph
in one of the sixteen ANSI colours, a kind the palette does not name by its initial."""

from __future__ import annotations

import pytest

from graphdoctor.trace.event_kinds import KINDS, EventKind, Replay
from graphdoctor.tui.palette import ANSI_COLOURS, OTHER_KIND_STYLE, kind_mark


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_every_kind_is_drawable(kind: EventKind) -> None:
    mark = kind_mark(kind)
    assert len(mark.glyph) == 1 and mark.style in ANSI_COLOURS


def test_a_kind_the_palette_does_not_name_is_drawn_with_its_initial() -> None:
    newer = EventKind("newer_things", "newer thing", Replay, True, "newer")
    assert kind_mark(newer) == (newer.label[0].upper(), OTHER_KIND_STYLE, 1)
    assert OTHER_KIND_STYLE in ANSI_COLOURS
