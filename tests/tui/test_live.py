"""The live view: a recording shown while it grows, as ``view --follow`` and ``run --live``
open it.

No GPU records here, so the moments of a run are made from a committed GPU recording, the
launch_bound spool (an H100; 400 tiny kernels captured, then timed eagerly, then replayed
1000 times): cut at a record boundary, in time order, a spool is exactly what a live reader
sees at that moment, since the child appends whole records in the order they happen (the
parent's ``run_end`` last). Three moments are pictured at 80x24 and 200x60: before the first
capture (cut before its ``graph`` record), during the replays (cut halfway through them),
and after the end (the whole spool, ``run_end`` included). The rest drives the app on a
spool that grows while it is shown.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import textual
from textual.css.query import NoMatches

from graphdoctor.report.live import LiveFeed
from graphdoctor.tui.live import LiveApp
from graphdoctor.tui.screens.findings import FindingsScreen
from graphdoctor.tui.screens.timeline import TimelineScreen
from graphdoctor.tui.timeline.layout import Window
from graphdoctor.tui.timeline.view import TimelineState
from tests.conftest import RECORDINGS
from tests.tui.helpers import screen_text, settle
from tests.tui.test_key_bursts import key_event
from tests.tui.test_snapshots import SIZES, SNAPSHOT_TEXTUAL, settled

SPOOL = RECORDINGS / "launch_bound.spool.jsonl.gz"
SHOWN_AS = "launch_bound.spool.jsonl"  # what the view says it reads (not the test's tmp path)


@functools.cache
def spool_lines() -> list[bytes]:
    return gzip.decompress(SPOOL.read_bytes()).splitlines(keepends=True)


def tags() -> list[str]:
    return [line[2:line.index(b'"', 2)].decode() if line.startswith(b'["') else ""
            for line in spool_lines()]


def first(tag: str) -> int:
    return tags().index(tag)


def moment(name: str) -> int:
    """How many of the spool's records a live reader has read at ``name``."""
    replays = [i for i, tag in enumerate(tags()) if tag == "replay"]
    return {"before-the-first-capture": first("graph"),
            "during-replays": replays[len(replays) // 2],
            "after-the-end": len(spool_lines())}[name]


def cut(folder: Path, records: int) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "run.spool.jsonl"
    path.write_bytes(b"".join(spool_lines()[:records]))
    return path


def live_app(path: Path) -> LiveApp:
    return LiveApp(LiveFeed([path], own=False), "launch_bound.py", following=SHOWN_AS)


MOMENTS = ["before-the-first-capture", "during-replays", "after-the-end"]


@pytest.mark.skipif(textual.__version__ != SNAPSHOT_TEXTUAL,
                    reason=f"snapshots were made with Textual {SNAPSHOT_TEXTUAL}")
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("keys", [pytest.param([], id="summary"),
                                  pytest.param(["3"], id="timeline")])
@pytest.mark.parametrize("when", MOMENTS)
def test_the_live_view_at_three_moments(snap_compare: Any, tmp_path: Path, when: str,
                                        keys: list[str], size: tuple[int, int]) -> None:
    app = live_app(cut(tmp_path, moment(when)))
    assert snap_compare(app, terminal_size=size, run_before=settled(keys))


def test_the_three_moments_say_what_a_live_reader_knows_then(tmp_path: Path) -> None:
    before = LiveFeed([cut(tmp_path / "a", moment("before-the-first-capture"))], own=False)
    during = LiveFeed([cut(tmp_path / "b", moment("during-replays"))], own=False)
    after = LiveFeed([cut(tmp_path / "c", moment("after-the-end"))], own=False)
    reports = [feed.look() for feed in (before, during, after)]
    assert all(report is not None for report in reports)
    early, mid, end = (r for r in reports if r is not None)
    assert not early.trace.graphs and early.trace.status.reason == "running"
    assert [g.status for g in mid.trace.graphs] == ["captured"]
    assert 0 < len(mid.trace.tables["replays"]) < len(end.trace.tables["replays"]) == 1000
    assert [v.kind for v in end.diagnosis.verdicts] == ["faster"] and after.ended
    assert not before.ended and not during.ended


@pytest.fixture
def growing(tmp_path: Path) -> tuple[Path, Callable[[int], None]]:
    """A spool and what appends to it the records up to a count (in time order)."""
    lines, path = spool_lines(), tmp_path / "growing.spool.jsonl"
    path.write_bytes(b"")
    written = [0]

    def grow(to: int) -> None:
        with path.open("ab") as handle:
            handle.write(b"".join(lines[written[0]:to]))
        written[0] = to

    return path, grow


async def wait_for(pilot: Any, ready: Callable[[], bool], most_s: float = 8.0) -> None:
    for _ in range(int(most_s / 0.1)):
        try:
            if ready():
                return
        except NoMatches:  # the screen is being built anew
            pass
        await pilot.pause(0.1)
    raise AssertionError("the live view did not catch up")


async def test_the_view_grows_with_the_spool_and_ends_on_its_report(
        growing: tuple[Path, Callable[[int], None]]) -> None:
    path, grow = growing
    grow(moment("before-the-first-capture"))
    app = live_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "is running" in screen_text(app) and "captured no CUDA graph" in screen_text(app)
        grow(moment("during-replays"))
        await wait_for(pilot, lambda: "faster" in screen_text(app))
        assert "is running" in screen_text(app)
        grow(moment("after-the-end"))
        await wait_for(pilot, lambda: "exited with code 0" in screen_text(app))
        assert app.view.live is not None and app.view.live.ended
    assert app.return_code is None, app.crash_summary()


async def test_a_screen_keeps_its_place_as_the_report_grows(
        growing: tuple[Path, Callable[[int], None]]) -> None:
    """The timeline's window, cursor and lane stay where the user put them; the whole-run
    window goes on showing the whole run, which grows."""
    path, grow = growing
    grow(moment("during-replays"))
    app = live_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        whole = screen.timeline.state.window
        grow(moment("during-replays") + 200)
        await wait_for(pilot, lambda: app.screen.timeline.state.window.end > whole.end)  # type: ignore[attr-defined]
        zoomed = TimelineState(Window(whole.start, whole.start + whole.span // 4),
                               whole.start + 10, 2)
        app.screen.timeline.state = zoomed  # type: ignore[attr-defined]
        view = app.view
        grow(moment("after-the-end"))
        await wait_for(pilot, lambda: app.view is not view and app.screen.view is app.view)  # type: ignore[attr-defined]
        await settle(pilot)
        kept = app.screen.timeline.state  # type: ignore[attr-defined]
        assert (kept.window, kept.cursor, kept.lane) == (zoomed.window, zoomed.cursor, 2)
    assert app.return_code is None, app.crash_summary()


async def test_keys_typed_while_the_view_is_rebuilt_never_crash_it(
        growing: tuple[Path, Callable[[int], None]]) -> None:
    path, grow = growing
    grow(40)
    app = live_app(path)
    keys = ["1", "2", "3", "4", "5", "down", "up", "enter", "escape", "pageup", "pagedown",
            "tab", "plus", "n", "p", "ctrl+p", "escape", "question_mark", "escape", "slash", "x"]
    chooser = random.Random(5)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for step in range(1, 9):
            grow(40 + (len(spool_lines()) - 40) * step // 8)
            for _ in range(10):
                app.post_message(key_event(chooser.choice(keys)))
            if step == 4:
                await pilot.resize_terminal(80, 24)
            await pilot.pause(0.6)
        await wait_for(pilot, lambda: app.view.live is not None and app.view.live.ended)
        await pilot.press("escape", "escape", "2")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen) and "GD211" in screen_text(app)
    assert app.return_code is None, app.crash_summary()


async def test_the_runs_own_report_takes_the_live_ones_place(
        growing: tuple[Path, Callable[[int], None]], tmp_path: Path) -> None:
    from tests.reports import report_for

    path, grow = growing
    grow(moment("during-replays"))
    app = LiveApp(LiveFeed([path], own=True), "launch_bound.py", following=SHOWN_AS,
                  output="graphdoctor-launch_bound.output.txt", stops_script=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "graphdoctor-launch_bound.output.txt" in screen_text(app)
        app.finish(report_for("launch_bound"), "graphdoctor-launch_bound.json")
        await wait_for(pilot, lambda: "exited with code 0" in screen_text(app))  # rebuilt
        text = screen_text(app)
        assert "exited with code 0" in text and "graphdoctor-launch_bound.json" in text
        assert "graphdoctor-launch_bound.output.txt" in text  # the output stays named
        grow(moment("after-the-end"))  # the feed is no longer looked at
        await asyncio.sleep(1.5)
        assert app.view.report is not None and app.view.name == "graphdoctor-launch_bound.json"
    assert app.return_code is None, app.crash_summary()


async def test_graphdoctors_own_lines_during_the_run_are_said_in_the_view(
        growing: tuple[Path, Callable[[int], None]]) -> None:
    """The terminal is the view's: a line the supervisor writes on stderr meanwhile (the
    script went on after Ctrl-C and is killed) is a notification, not lost."""
    import sys

    path, grow = growing
    grow(moment("during-replays"))
    app = LiveApp(LiveFeed([path], own=True), "launch_bound.py", following=SHOWN_AS,
                  output="out.txt", stops_script=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        sys.stderr.write("graphdoctor: the script went on 10 s after SIGINT;")
        sys.stderr.write(" killing it (SIGKILL)\n")
        await pilot.pause(0.3)
        said = [str(n.message) for n in app._notifications]
        assert said == ["the script went on 10 s after SIGINT; killing it (SIGKILL)"]
    assert app.return_code is None, app.crash_summary()
