"""The palette keeps its promises: colours that stay apart after Textual's conversion and in
16 colours, and one meaning per glyph on the lanes."""

from __future__ import annotations

from typing import Any

import pytest
from rich.color import Color, ColorSystem
from textual.app import App

from graphdoctor.report.render.drawn_kinds import DRAWN_APART
from graphdoctor.trace.event_kinds import KINDS
from graphdoctor.trace.model import CAPTURE, EAGER, REPLAY, WARMUP
from graphdoctor.trace.names import CUDAGRAPH_RECORD, TREE_RECORDING
from graphdoctor.tui import palette
from tests.tui.helpers import demo_app

ANSI_NAMES = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
              "bright_black", "bright_red", "bright_green", "bright_yellow", "bright_blue",
              "bright_magenta", "bright_cyan", "bright_white")


def theme_rgb(number: int) -> tuple[int, int, int]:
    return tuple(palette.ANSI_THEME.ansi_colors[number])  # type: ignore[return-value]


def test_every_ansi_colour_gets_its_own_rgb() -> None:
    colours = [theme_rgb(number) for number in range(16)]
    assert len(set(colours)) == 16


@pytest.mark.parametrize("number", range(16), ids=ANSI_NAMES)
def test_a_16_colour_terminal_gets_the_same_colour_back(number: int) -> None:
    """Textual turns an ANSI name into RGB through the theme; a 16-colour terminal then
    takes the nearest of the standard sixteen. That must be the name it started as, or a
    failed capture (bright red) would again look like a capture (magenta)."""
    downgraded = Color.from_rgb(*theme_rgb(number)).downgrade(ColorSystem.STANDARD)
    assert ANSI_NAMES[downgraded.number or 0] == ANSI_NAMES[number]


def test_a_failed_capture_and_a_capture_differ_in_glyph_and_colour() -> None:
    failed, captured = palette.FAILED_CAPTURE_SPAN, palette.CAPTURE_SPAN
    assert failed.glyph != captured.glyph
    assert failed.style.split()[-1] != captured.style.split()[-1]


async def test_the_app_converts_with_the_palette_theme() -> None:
    app: App[Any] = demo_app("item_in_capture")
    async with app.run_test(size=(80, 24)):
        assert app.ansi_theme is palette.ANSI_THEME


def lane_meanings() -> dict[str, set[str]]:
    """Every glyph drawn on a lane for an event (span fills excepted: █ and the shades say
    how much of a column a span covers), with what it means there."""
    meanings: dict[str, set[str]] = {}

    def add(mark: palette.Mark, meaning: str) -> None:
        meanings.setdefault(mark.glyph, set()).add(meaning)

    for name in ("EXCEPTION", "WARNING_MARK", "INPUT_EVENT", "ALLOC_ON_STREAM",
                 "CAPTURED_COLLECTIVE", "NEVER_RETURNED", "TEARDOWN", "OTHER_EVENT",
                 "CAPTURE_SPAN", "FAILED_CAPTURE_SPAN", "NODE_COPY", "NODE_HOST", "NODE_OTHER",
                 "NODE_UNKNOWN"):
        add(getattr(palette, name), name)
    for op, mark in palette.STREAM_OP_MARKS.items():
        add(mark, "wait" if "wait" in op else op)  # three APIs of one wait
    for phase in (EAGER, WARMUP, REPLAY):
        add(palette.SYNC_MARKS[phase], "sync")  # the phase lane above says which phase
    add(palette.SYNC_MARKS[CAPTURE], "sync in a capture")
    for kind, mark in palette.COMPILE_MARKS.items():
        recorded = kind in (CUDAGRAPH_RECORD, TREE_RECORDING)  # two logs of one recording
        add(mark, "cudagraph recorded" if recorded else kind)
    for severity, mark in palette.FINDING_MARKS.items():
        add(mark, f"finding ({severity})")
    for kind in KINDS:
        if kind.name not in DRAWN_APART:
            add(palette.kind_mark(kind), kind.name)
    del meanings["█"]
    return meanings


def test_no_glyph_means_two_things_on_the_lanes() -> None:
    shared = {glyph: sorted(what) for glyph, what in lane_meanings().items() if len(what) > 1}
    assert shared == {}


def test_severities_differ_without_colour() -> None:
    glyphs = [mark.glyph for mark in palette.FINDING_MARKS.values()]
    assert len(set(glyphs)) == len(glyphs) == 3
