"""How fast the TUI opens a big report and redraws its timeline (no GPU needed).

    python bench/tui_bench.py                     1,000,000 events, 5 repeats
    python bench/tui_bench.py --events 200000 --repeat 3 --report /tmp/big.json.gz

Targets (issue: interactive terminal UI): a 1,000,000-event report opens in under 2 s, and
each redraw of the timeline takes under 50 ms. Each figure is the median of the repeats,
with the slowest beside it; the machine is noisy, so read them as such.

  open        load the report file, start the app headless, show the Summary
  index       the timeline's lanes, built in the background after the Summary shows
  timeline    first switch to the timeline, until its first frame is drawn
  redraw      every visible timeline row rebuilt and turned into strips (our code), at
              the whole run and at deeper zooms, at 80x24 and 200x60
  key         a key, from the moment it is posted until Textual writes the new frame to the
              (headless) terminal: everything a person waits for, Textual included
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.synthetic import synthetic_report  # noqa: E402
from graphdoctor.report.io import load, save  # noqa: E402
from graphdoctor.tui.app import GraphDoctorApp  # noqa: E402
from graphdoctor.tui.timeline.view import zoom  # noqa: E402
from graphdoctor.tui.widgets.timeline import Timeline  # noqa: E402

SIZES = ((80, 24), (200, 60))
ZOOMS = (0, 6, 12, 18)  # halvings of the span: the whole run, 1/64, 1/4096, 1/262144
KEYS = ("plus", "minus", "right", "shift+right", "n", "0")


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


async def one_session(path: Path, size: tuple[int, int]) -> dict[str, float]:
    """Open the report, show the timeline, redraw it at each zoom, press the keys."""
    figures: dict[str, float] = {}
    start = time.perf_counter()
    report = load(path)
    figures["load"] = time.perf_counter() - start
    app = TimedApp(report, path.name)
    app.frames = frames = []
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        figures["open"] = frames[0] - start  # the first frame shows the Summary
        await app.workers.wait_for_complete()  # the timeline index, built in the background
        figures["index (background)"] = time.perf_counter() - frames[0]
        started = time.perf_counter()
        await pilot.press("3")
        await pilot.pause()
        figures["timeline"] = next(t for t in frames if t > started) - started
        timeline = app.screen.query_one(Timeline)
        for halvings in ZOOMS:
            figures[f"redraw 1/{2 ** halvings}"] = _redraw(timeline, halvings)
        for key in KEYS:
            started = time.perf_counter()
            await pilot.press(key)
            written = [t for t in frames if t > started]
            figures[f"key {key}"] = (written[0] if written else float("nan")) - started
    return figures


class TimedApp(GraphDoctorApp):
    """The app, noting when each composed frame is handed to the terminal driver."""

    frames: list[float]

    def _display(self, screen: Any, renderable: Any) -> None:
        if renderable is not None:
            self.frames.append(time.perf_counter())
        super()._display(screen, renderable)


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


def table(runs: list[dict[str, float]], size: tuple[int, int]) -> list[str]:
    lines = [f"{'':<22}{size[0]}x{size[1]}: median    slowest"]
    for name in runs[0]:
        values = [run[name] * 1000 for run in runs]
        lines.append(f"  {name:<20}{statistics.median(values):>10.1f} ms {max(values):>8.1f} ms")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--report", type=Path, help="use (or write) this report file")
    options = parser.parse_args()
    path = options.report or Path(tempfile.mkdtemp()) / "synthetic.json.gz"
    if not path.exists():
        save(synthetic_report(options.events), path)
    print(f"{path}: {load(path).trace.event_count:,} events, "
          f"{path.stat().st_size / 2**20:.1f} MiB")
    for size in SIZES:
        runs = [asyncio.run(one_session(path, size)) for _ in range(options.repeat)]
        print("\n".join(table(runs, size)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
