"""What the live view costs: the recorded program's time, and the view's own.

    python bench/live_view.py [--repeats 7] [--steps 100000] [--sizes 20000,200000,1000000]

1. The recorded program. A CPU-only script times its own loop (a 128x128 matmul and tanh a
   step, the median of its steps after a warm-up) in three ways, alternating, ``--repeats``
   times: ``python script.py``, ``graphdoctor run script.py`` and ``graphdoctor run --live
   script.py`` on a pseudo-terminal, its view drawing while the script runs (the bench reads
   what it draws, as a terminal would, and quits it once the report is written). Given: the
   median of each way's step, and of the ratios to the plain run of the same repeat, with
   the lowest and highest.
2. The view's own work, in graphdoctor's process. A spool of N records (the launch_bound
   recording's replays and eager calls, repeated on later times) grows by a second's worth
   of records (2,000); a look reads what was added and builds the report of all of it.
   Given for each N: the look split into reading the new lines and building the report,
   beside reading the whole spool again (what a view that re-read it would pay each second).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphdoctor.report.live import LiveFeed  # noqa: E402
from graphdoctor.trace.assemble import assemble_file  # noqa: E402

SCRIPT = """
import json, statistics, sys, time
import torch
x = torch.randn(128, 128)
times = []
for step in range({steps}):
    start = time.perf_counter()
    y = (x @ x).tanh()
    times.append(time.perf_counter() - start)
print(json.dumps({{"step_us": statistics.median(times[len(times) // 4:]) * 1e6}}), flush=True)
"""
PER_SECOND = 2_000  # records a second of a busy replay loop appends
WAYS = ("plain", "run", "live")


def step_us(way: str, script: Path, folder: Path, repeat: int) -> float:
    report = folder / f"{way}-{repeat}.json"
    if way == "plain":
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              check=True)
        return float(json.loads(done.stdout.splitlines()[-1])["step_us"])
    command = [sys.executable, "-m", "graphdoctor", "run", "-q", "-o", str(report)]
    if way == "run":  # the script's stdout is graphdoctor's own
        done = subprocess.run([*command, str(script)], capture_output=True, text=True,
                              check=True)
        return float(json.loads(done.stdout.splitlines()[-1])["step_us"])
    _on_a_terminal([*command, "--live", str(script)], report)
    output = report.with_name(f"{report.stem}.output.txt")  # where --live sends it
    return float(json.loads(output.read_text().splitlines()[-1])["step_us"])


def _on_a_terminal(command: list[str], report: Path) -> None:
    """Run ``command`` on a pseudo-terminal of 120x40, reading all it draws; q once the
    report is written."""
    leader, follower = pty.openpty()
    os.set_blocking(leader, False)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower,
                               env=env, start_new_session=True)
    os.close(follower)
    quit_sent = 0.0
    while process.poll() is None:
        ready, _, _ = select.select([leader], [], [], 0.1)
        if ready:
            try:
                os.read(leader, 1 << 16)
            except OSError:
                pass
        written = report.exists() and report.stat().st_size > 0
        if written and time.monotonic() - quit_sent > 1.0:
            os.write(leader, b"q")
            quit_sent = time.monotonic()
    os.close(leader)


def cost_to_the_program(repeats: int, steps: int) -> None:
    folder = Path(tempfile.mkdtemp())
    script = folder / "loop.py"
    script.write_text(SCRIPT.format(steps=steps))
    results: dict[str, list[float]] = {way: [] for way in WAYS}
    for repeat in range(repeats):
        order = WAYS[repeat % 3:] + WAYS[:repeat % 3]  # each way first in turn
        for way in order:
            results[way].append(step_us(way, script, folder, repeat))
    print(f"1. the recorded program: a CPU loop's median step, {repeats} repeats, {steps} steps")
    for way in WAYS:
        values = results[way]
        ratios = [v / p for v, p in zip(values, results["plain"], strict=True)]
        print(f"  {way:<6} {statistics.median(values):8.1f} us   vs plain: median "
              f"{statistics.median(ratios):.3f}x  ({min(ratios):.3f}-{max(ratios):.3f})")


def synthetic_spool(path: Path, records: int) -> int:
    """The launch_bound spool, its replays and calls repeated on later times to ``records``
    records (its run_end left out: the run goes on); the records written."""
    lines = gzip.decompress((ROOT / "fixtures/recordings/launch_bound.spool.jsonl.gz")
                            .read_bytes()).splitlines()
    head = [line for line in lines if not line.startswith((b'["replay"', b'["call"',
                                                            b'["run_end"', b'["end"'))]
    body = [json.loads(line) for line in lines if line.startswith((b'["replay"', b'["call"'))]
    span = max(r[1] for r in body) - min(r[1] for r in body) + 1
    written = len(head)
    with path.open("wb") as out:
        out.write(b"\n".join(head) + b"\n")
        shift = 0
        while written < records:
            chunk = [json.dumps([r[0], r[1] + shift, *r[2:]], separators=(",", ":")).encode()
                     for r in body[:records - written]]
            out.write(b"\n".join(chunk) + b"\n")
            written += len(chunk)
            shift += span
    return written


def cost_of_a_look(sizes: list[int]) -> None:
    print(f"2. a look once a second's records ({PER_SECOND:,}) were added, by spool size")
    folder = Path(tempfile.mkdtemp())
    for size in sizes:
        spool = folder / f"spool-{size}.jsonl"
        synthetic_spool(spool, size)
        extra = folder / "extra.jsonl"
        synthetic_spool(extra, size + PER_SECOND)
        tail = extra.read_bytes()[spool.stat().st_size:]
        feed = LiveFeed([spool], own=False)
        while feed.read():  # caught up: a look takes at most READ_MOST bytes
            pass
        with spool.open("ab") as handle:
            handle.write(tail)
        start = time.perf_counter()
        read = feed.read()
        read_s = time.perf_counter() - start
        start = time.perf_counter()
        feed.build()
        build_s = time.perf_counter() - start
        start = time.perf_counter()
        assemble_file(spool)
        again_s = time.perf_counter() - start
        print(f"  {size:>9,} records: read the {read:,} new ones {read_s * 1e3:7.1f} ms; build "
              f"the report {build_s * 1e3:7.0f} ms; reading the whole spool again "
              f"{again_s * 1e3:7.0f} ms (its trace only, before any diagnosis)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--sizes", default="20000,200000,1000000")
    parser.add_argument("--only", choices=("program", "look"))
    options = parser.parse_args()
    if options.only != "look":
        cost_to_the_program(options.repeats, options.steps)
    if options.only != "program":
        cost_of_a_look([int(n) for n in options.sizes.split(",")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
