"""How fast the TUI starts, opens a big report, switches screens and redraws its timeline
(no GPU needed).

    python bench/tui_bench.py                     1,000,000 events, 5 repeats
    python bench/tui_bench.py --events 200000 --repeat 3 --report /tmp/big.json.gz

Targets (issue: interactive terminal UI): ``graphdoctor view`` of a small report shows its
first frame within 0.6 s; a 1,000,000-event report opens in under 2 s; a switch to a screen
shown before takes under 100 ms; each redraw of the timeline takes under 50 ms, and keys
never queue more than a frame behind. Each figure is the median of the repeats, with the
slowest beside it; the machine is noisy, so read them as such.

  --version   ``python -m graphdoctor --version``: a fresh process, from its start to its exit
  first paint ``graphdoctor view SMALL`` (the bundled launch_bound demo, 26 KiB) in a fresh
              process, from its start until the app hands its first frame to the terminal
              driver (headless): Python's start, every import, the loading, the Summary
              composed and drawn. Both with bytecode cached, as an installed package has it
              (compiled by a first run that is not counted, into a folder of its own)
  open        load the report file, start the app headless, show the Summary
  index       the timeline's lanes, built in the background after the Summary shows
  timeline    first switch to the timeline, until its first frame is drawn
  redraw      every visible timeline row rebuilt and turned into strips (our code), at
              the whole run and at deeper zooms, at 80x24 and 200x60
  key         a key, from the moment it is posted until Textual writes the new frame to the
              (headless) terminal: everything a person waits for, Textual included
  burst       BURST_KEYS n keys (each selects the next event) posted at once on the
              timeline: until the last is handled; then from there until the frame that
              shows it is written (one frame behind at most: Textual draws at 60 fps);
              the median of BURSTS bursts
  first/again each screen's number pressed in turn (2 3 4 5 1, SWITCH_ROUNDS times), until
              that screen's first frame is written: its first visit (built), and the median
              of its later visits (the screen kept from before)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual import events

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.synthetic import synthetic_report  # noqa: E402
from graphdoctor.report.io import load, save  # noqa: E402
from graphdoctor.tui.app import SCREENS, GraphDoctorApp  # noqa: E402
from graphdoctor.tui.timeline.view import zoom  # noqa: E402
from graphdoctor.tui.widgets.timeline import Timeline  # noqa: E402

SIZES = ((80, 24), (200, 60))
ZOOMS = (0, 6, 12, 18)  # halvings of the span: the whole run, 1/64, 1/4096, 1/262144
KEYS = ("plus", "minus", "right", "shift+right", "n", "0")
BURST_KEYS = 30
BURSTS = 5
SWITCH_ROUNDS = 4
SMALL_REPORT = ROOT / "graphdoctor" / "demo" / "launch_bound.json.gz"
WAIT_S = 5.0  # how long to wait for a frame before calling it missing

# The child of the first-paint figure: `graphdoctor view PATH` as a terminal would run it,
# but headless, leaving the moment the first frame is handed to the driver.
FIRST_PAINT = """
import os, sys
import graphdoctor.tui as tui

def run_until_first_frame(report, name="", *, headless=False):
    from graphdoctor.tui.app import GraphDoctorApp

    class FirstFrame(GraphDoctorApp):
        def _display(self, screen, renderable):
            super()._display(screen, renderable)
            if renderable is not None:
                print("painted", flush=True)
                os._exit(0)

    FirstFrame(report, name).run(headless=True)

tui.can_run_interactively = lambda: True
tui.run_app = run_until_first_frame
from graphdoctor.cli import main
main(["view", sys.argv[1]], prog_name="graphdoctor")
"""


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def start_up(env: dict[str, str]) -> dict[str, float]:
    """The two fresh-process figures: ``--version``, and ``view`` until its first frame."""
    version = [sys.executable, "-m", "graphdoctor", "--version"]
    return {"--version": timed(lambda: subprocess.run(version, check=True, capture_output=True,
                                                        cwd=ROOT, env=env)),
            "first paint (small)": timed(lambda: first_paint(env))}


def fresh_process_env(cache: Path) -> dict[str, str]:
    """A fresh process's environment: its bytecode cached, as an installed package's is
    (in ``cache``, so nothing is written into the checkout), whatever this one says."""
    env = {name: value for name, value in os.environ.items()
           if name != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(cache)}


def first_paint(env: dict[str, str]) -> None:
    """Run ``graphdoctor view SMALL_REPORT`` until its first frame (see FIRST_PAINT)."""
    child = subprocess.Popen([sys.executable, "-c", FIRST_PAINT, str(SMALL_REPORT)], cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, text=True)
    said = child.stdout.readline() if child.stdout else ""
    child.wait()
    if said.strip() != "painted":
        raise RuntimeError(f"the viewer drew no frame (exit code {child.returncode})")


class TimedApp(GraphDoctorApp):
    """The app, noting when each composed frame is handed to the terminal driver, and for
    which screen."""

    frames: list[tuple[float, Any]]

    def _display(self, screen: Any, renderable: Any) -> None:
        if renderable is not None:
            self.frames.append((time.perf_counter(), screen))
        super()._display(screen, renderable)

    def frames_after(self, moment: float, screen: Any = None) -> list[float]:
        return [t for t, shown in self.frames if t > moment and screen in (None, shown)]

    async def next_frame(self, moment: float, screen: Any = None) -> float:
        """When the first frame (of ``screen``, if given) after ``moment`` was written;
        waited for without forcing one, as Textual's own timer draws."""
        deadline = time.perf_counter() + WAIT_S
        while not self.frames_after(moment, screen) and time.perf_counter() < deadline:
            await asyncio.sleep(0.001)
        written = self.frames_after(moment, screen)
        return written[0] if written else float("nan")


def timed_app(path: Path) -> tuple[TimedApp, float]:
    """The app on the report at ``path``, and when its loading started."""
    start = time.perf_counter()
    app = TimedApp(load(path), path.name)
    app.frames = []
    return app, start


async def one_session(path: Path, size: tuple[int, int]) -> dict[str, float]:
    """Open the report, show the timeline, redraw it at each zoom, press the keys."""
    app, start = timed_app(path)
    figures: dict[str, float] = {"load": time.perf_counter() - start}
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        figures["open"] = app.frames[0][0] - start  # the first frame shows the Summary
        await app.workers.wait_for_complete()  # the timeline index, built in the background
        figures["index (background)"] = time.perf_counter() - app.frames[0][0]
        started = time.perf_counter()
        await pilot.press("3")
        figures["timeline"] = await app.next_frame(started, app.screen) - started
        timeline = app.screen.query_one(Timeline)
        for halvings in ZOOMS:
            figures[f"redraw 1/{2 ** halvings}"] = _redraw(timeline, halvings)
        for key in KEYS:
            started = time.perf_counter()
            await pilot.press(key)
            figures[f"key {key}"] = await app.next_frame(started) - started
        figures.update(await _bursts(app, "n"))
    return figures


async def _bursts(app: TimedApp, key: str) -> dict[str, float]:
    """The median of BURSTS bursts (one is a few milliseconds: the noise of a busy host)."""
    runs = [await _burst(app, key) for _ in range(BURSTS)]
    return {name: statistics.median(run[name] for run in runs) for name in runs[0]}


async def _burst(app: TimedApp, key: str) -> dict[str, float]:
    """BURST_KEYS of ``key`` posted at once, as a held key or a fast typist sends them; a
    key is handled when the timeline's state has changed for it."""
    timeline = app.screen.query_one(Timeline)
    timeline.state = replace(timeline.state, lane=_busy_lane(timeline),
                             cursor=timeline.limits.start)
    handled = _note_state_changes(timeline)
    await app.next_frame(time.perf_counter())  # what came before is drawn
    started = time.perf_counter()
    for _ in range(BURST_KEYS):
        app.post_message(_key(app, key))
    deadline = started + WAIT_S
    while len(handled) < BURST_KEYS and time.perf_counter() < deadline:
        await asyncio.sleep(0.001)
    if len(handled) < BURST_KEYS:
        raise RuntimeError(f"{len(handled)} of {BURST_KEYS} keys moved the timeline")
    return {f"burst {BURST_KEYS} {key}: handled": handled[-1] - started,
            f"burst {BURST_KEYS} {key}: then drawn": await app.next_frame(handled[-1])
            - handled[-1]}


def _busy_lane(timeline: Timeline) -> int:
    """The first lane with BURST_KEYS events or more, so that each n of a burst moves."""
    for index, lane in enumerate(timeline.lanes):
        event, t = None, timeline.limits.start
        for _ in range(BURST_KEYS):
            event = lane.next_event(t)
            if event is None:
                break
            t = event.time
        if event is not None:
            return index
    raise RuntimeError(f"no lane has {BURST_KEYS} events")


def _note_state_changes(timeline: Timeline) -> list[float]:
    """A list that gets the moment of each change of ``timeline``'s state from now on."""
    changes: list[float] = []
    watch = timeline.watch_state

    def noted(old: Any, new: Any) -> None:
        watch(old, new)
        changes.append(time.perf_counter())

    timeline.watch_state = noted  # type: ignore[method-assign]  # Textual looks it up per change
    return changes


def _key(app: TimedApp, key: str) -> events.Key:
    """A key event as the terminal driver sends it."""
    event = events.Key(key, key if len(key) == 1 else None)
    event.set_sender(app)
    return event


async def switch_session(path: Path, size: tuple[int, int]) -> dict[str, float]:
    """Each screen's number in turn, SWITCH_ROUNDS times: its first visit, and the median
    of its later ones."""
    app, _ = timed_app(path)
    visits: dict[str, list[float]] = {SCREENS[0].title: [float("nan")]}  # shown at the start
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        for _ in range(SWITCH_ROUNDS):
            for number, entry in [*list(enumerate(SCREENS, 1))[1:], (1, SCREENS[0])]:
                started = time.perf_counter()
                await pilot.press(str(number))
                took = await app.next_frame(started, app.screen) - started
                visits.setdefault(entry.title, []).append(took)
    firsts = {f"first {title}": times[0] for title, times in visits.items() if title
              != SCREENS[0].title}
    return {**firsts, **{f"again {title}": statistics.median(times[1:])
                         for title, times in visits.items()}}


def _redraw(timeline: Timeline, halvings: int) -> float:
    """Our part of one redraw: every visible row computed afresh and made into strips."""
    state = timeline.state
    for _ in range(halvings):
        state = zoom(state, timeline.limits, zoom_in=True)
    timeline.set_reactive(Timeline.state, state)
    height = timeline.scrollable_content_region.height

    def draw() -> None:
        timeline._rows_for = None  # forget the cached rows, as a change of state does
        for y in range(height):
            timeline.render_line(y)

    return min(timed(draw) for _ in range(3))


def table(runs: list[dict[str, float]], title: str) -> list[str]:
    lines = [f"{title:<44}median    slowest"]
    for name in runs[0]:
        values = [run[name] * 1000 for run in runs]
        lines.append(f"  {name:<36}{statistics.median(values):>10.1f} ms "
                     f"{max(values):>8.1f} ms")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--report", type=Path, help="use (or write) this report file")
    parser.add_argument("--small-only", action="store_true",
                        help="the start-up and the small report's figures only")
    options = parser.parse_args()
    env = fresh_process_env(Path(tempfile.mkdtemp()))
    start_up(env)  # once first, to compile the bytecode: not counted
    print("\n".join(table([start_up(env) for _ in range(options.repeat)], "start-up:")))
    print("\n".join(table([asyncio.run(switch_session(SMALL_REPORT, SIZES[0]))
                           for _ in range(options.repeat)], f"{SMALL_REPORT.name}, 80x24:")))
    if options.small_only:
        return 0
    path = options.report or Path(tempfile.mkdtemp()) / "synthetic.json.gz"
    if not path.exists():
        save(synthetic_report(options.events), path)
    print(f"{path}: {load(path).trace.event_count:,} events, "
          f"{path.stat().st_size / 2**20:.1f} MiB")
    for size in SIZES:
        title = f"{size[0]}x{size[1]}:"
        print("\n".join(table([asyncio.run(one_session(path, size))
                               for _ in range(options.repeat)], title)))
        print("\n".join(table([asyncio.run(switch_session(path, size))
                               for _ in range(options.repeat)], title)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
