"""How big a large report is on disk, and how fast graphdoctor reads it back.

    python bench/report_load.py [--events 1000000] [--repeat 5]

Targets (from the report issue): a 1,000,000-event report stays under 64 MB on disk and
loads in under 2 s. Loading is the whole path a command takes: read the file, gunzip,
parse the JSON, check it against the schema and its references, build the Report.

Two reports are measured. "synthetic" is bench/synthetic.py's, which repeats one step, so
gzip squeezes it unrealistically well. "jittered" is the same report with noise in every
time, duration, address and size (as in a real run), which is the honest figure for
gzip. Each is written plain (.json) and compressed (.json.gz); load times are the median
of --repeat loads, with the fastest and slowest.
"""

from __future__ import annotations

import argparse
import gc
import random
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
from graphdoctor.report import io  # noqa: E402
from graphdoctor.report.document import Report  # noqa: E402
from graphdoctor.report.render.chrome_trace import to_chrome_trace  # noqa: E402
from graphdoctor.report.render.markdown import render_markdown  # noqa: E402
from graphdoctor.report.render.text import render_text  # noqa: E402

MAX_MB = 64
MAX_LOAD_S = 2.0
NOISY_COLUMNS = {"t": 997, "dur": 1_999, "gpu": 9_973, "addr": 1 << 20, "size": 4_096,
                 "allocated": 1 << 20, "mem_used": 1 << 20}


def jittered(report: Report, seed: int = 0) -> Report:
    """The report with noise in its numbers, so gzip sees what a real run gives it."""
    rng = random.Random(seed)
    for table in report.trace.tables.values():
        for name, spread in NOISY_COLUMNS.items():
            if name in table.data:
                column = table.data[name]
                table.data[name] = [v + rng.randrange(spread) for v in column]
        if "t" in table.data:
            table.data["t"].sort()
    return report


def timed(action: Callable[[], Any], repeat: int) -> tuple[float, float, float, Any]:
    """(median, fastest, slowest) seconds of ``action``, and its last result."""
    seconds, result = [], None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = action()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), min(seconds), max(seconds), result


def measure(label: str, report: Report, folder: Path, repeat: int) -> list[str]:
    rows = []
    for suffix in (".json", ".json.gz"):
        path = folder / f"{label}{suffix}"
        save_s, _, _, _ = timed(lambda p=path: io.save(report, p), 1)
        size_mb = path.stat().st_size / 1e6
        median, fastest, slowest, loaded = timed(lambda p=path: io.load(p), repeat)
        assert loaded.trace.event_count == report.trace.event_count
        verdict = "ok" if size_mb < MAX_MB and median < MAX_LOAD_S else "MISSED"
        rows.append(f"| {label + suffix:<22} | {report.trace.event_count:>9,} | {size_mb:>7.1f} "
                    f"| {save_s:>6.2f} | {median:>6.2f} | {fastest:>5.2f}-{slowest:<5.2f} "
                    f"| {verdict:<6} |")
    return rows


def renderers(report: Report, repeat: int) -> list[str]:
    rows = []
    for name, action in (("text summary", lambda: render_text(report)),
                         ("markdown", lambda: render_markdown(report)),
                         ("chrome trace (dict)", lambda: to_chrome_trace(report))):
        median, fastest, slowest, _ = timed(action, max(1, repeat // 2))
        rows.append(f"| {name:<22} | {median:>6.2f} | {fastest:>5.2f}-{slowest:<5.2f} |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    print(f"Building a {options.events:,}-event report...", file=sys.stderr)
    report = synthetic_report(options.events)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        rows += measure("synthetic", report, Path(folder), options.repeat)
        rows += measure("jittered", jittered(report), Path(folder), options.repeat)
    print(f"\nReport size and load time (targets: < {MAX_MB} MB, load < {MAX_LOAD_S:.0f} s)\n")
    print("| file                   |    events | size MB | save s | load s | range s     "
          "| target |")
    print("|------------------------|-----------|---------|--------|--------|-------------"
          "|--------|")
    print("\n".join(rows))
    print("\nRendering the loaded report (seconds)\n")
    print("| output                 | median | range s     |")
    print("|------------------------|--------|-------------|")
    print("\n".join(renderers(report, options.repeat)))
    return 0 if all("| ok" in row for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
