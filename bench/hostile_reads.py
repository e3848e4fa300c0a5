"""How long reading a hostile file takes, and how much memory: reading must stay linear in
the file's size and within the budget of a report of that size.

    python bench/hostile_reads.py [--repeat 5]

Each file is read by a fresh ``graphdoctor report FILE`` process (as a ticket's reader would
run it); the table gives its exit code, the median wall time over --repeat runs with the
fastest and slowest, and its peak memory. Targets: 400,000 empty gzip members (8 MB) read in
at most 2 s; a 6 MB gzip spool of 6 GiB without a newline refused within the memory budget
(MIN_MEMORY_BUDGET); a line nested 200,000 deep read without a traceback; a 4.7 KB spool
naming frame 1,000,000,000 (which once took 7.8 GB and 61 s) read like any small one. A
plain report's read is given for scale.

A second table gives what checking a stranger's records against their declared types
costs (graphdoctor.trace.spool.typed): the assembly of the largest fixture recording's
records, repeated 20 times, checked over unchecked, in one process, alternating, as the
median ratio of --repeat pairs with its range.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphdoctor.files.untrusted import MIN_MEMORY_BUDGET  # noqa: E402
from graphdoctor.trace.assemble import assemble  # noqa: E402
from graphdoctor.trace.spool.file import read_records  # noqa: E402
from tests.report.hostile_spools import (  # noqa: E402
    HUGE_RECORDS,
    RECORDING,
    deeply_nested,
    empty_members,
    endless_line,
    with_lines,
)

LARGEST = ROOT / "fixtures" / "recordings" / "real_tv_compile_batch_sizes.spool.jsonl.gz"

PEAK = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], "
        "capture_output=True); print(done.returncode, "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def files(folder: Path) -> dict[str, Path]:
    recording = gzip.decompress(RECORDING.read_bytes())
    report = gzip.decompress((ROOT / "graphdoctor/demo/launch_bound.json.gz").read_bytes())
    return {
        "a real recording (item_in_capture)": RECORDING,
        "400,000 empty gzip members after a report": empty_members(
            folder / "members.json.gz", report),
        "400,000 empty gzip members after a spool": empty_members(
            folder / "members.spool.gz", recording),
        "6 GiB without a newline, 6 MB of gzip": endless_line(folder / "endless.spool.gz"),
        "a line nested 200,000 deep": deeply_nested(folder / "deep.spool"),
        "frame 1,000,000,000 named": with_lines(folder / "frame.spool",
                                                [json.dumps(HUGE_RECORDS["a frame's id"])]),
    }


def checking_cost(repeat: int) -> None:
    """Assembly checked over unchecked (see the module doc)."""
    records = list(read_records(LARGEST)) * 20
    ratios = []
    for _ in range(repeat):
        seconds = {}
        for checked in (False, True):
            copies = [list(r) for r in records]
            started = time.perf_counter()
            assemble(iter(copies), checked=checked)
            seconds[checked] = time.perf_counter() - started
        ratios.append(seconds[True] / seconds[False])
    print(f"\nchecking {len(records):,} records of a stranger's spool: "
          f"{statistics.median(ratios):.2f}x unchecked ({min(ratios):.2f}–{max(ratios):.2f}, "
          f"{repeat} pairs)")


def measure(path: Path) -> tuple[int, float, int]:
    """Exit code, wall seconds and peak memory (bytes) of one ``report`` of ``path``."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", PEAK, sys.executable, "-m", "graphdoctor",
                           "report", str(path)], capture_output=True, text=True, check=True)
    seconds = time.monotonic() - started
    code, peak_kib = done.stdout.split()
    return int(code), seconds, int(peak_kib) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    print(f"memory budget {MIN_MEMORY_BUDGET >> 20} MiB; {repeat} runs each\n")
    print(f"{'file':44} {'MB':>6} {'exit':>4} {'median s':>9} {'range s':>13} {'peak MiB':>9}")
    with tempfile.TemporaryDirectory() as folder:
        for name, path in files(Path(folder)).items():
            runs = [measure(path) for _ in range(repeat)]
            times = [seconds for _, seconds, _ in runs]
            print(f"{name:44} {path.stat().st_size / 1e6:6.1f} {runs[0][0]:4} "
                  f"{statistics.median(times):9.2f} {min(times):6.2f}–{max(times):<6.2f} "
                  f"{max(peak for _, _, peak in runs) >> 20:9}")
    checking_cost(repeat)


if __name__ == "__main__":
    main()
