"""How fast a job of many ranks opens: in the TUI, and combined from its ranks' files.

    python bench/tui_ranks.py                 64 ranks, 5 repeats
    python bench/tui_ranks.py --ranks 256 --repeat 3

The job is the two-node recording (fixtures/jobs/two_nodes) grown to N ranks on hosts of 8:
every rank as its rank 0, one as its departing rank 3 (tests/report/jobs.py). Target (issue:
ranks at scale): a 64-rank report opens in under 2 s. Each figure is the median of the
repeats, with the slowest beside it.

  combine     read N per-rank reports and diagnose them as one job (merge, or report/view
              given the files)
  open        load the combined report, start the app headless, show the Summary
  timeline    first switch to the timeline (every rank's lanes), until its first frame
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.tui_bench import one_session  # noqa: E402
from graphdoctor.report.document import Report  # noqa: E402
from graphdoctor.report.io import save  # noqa: E402
from graphdoctor.report.opening import open_report  # noqa: E402
from tests.report.jobs import as_rank, many_ranks  # noqa: E402

SIZES = ((200, 60), (80, 24))
SHOWN = ("load", "open", "timeline")


def rank_files(folder: Path, ranks: int) -> list[Path]:
    """The job as its ranks would have written it: one report per rank."""
    job = many_ranks(ranks)
    paths = []
    for rank in job.ranks:
        trace = job.trace_of(rank)
        own = Report(as_rank(trace, rank, ranks, trace.meta.hostname), sources=job.sources)
        paths.append(save(own, folder / f"job.rank{rank}.json.gz"))
    return paths


def combine_time(paths: list[Path]) -> float:
    start = time.perf_counter()
    open_report(paths)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    merged = save(many_ranks(options.ranks), folder / "job.json.gz")
    paths = rank_files(folder, options.ranks)
    combined = [combine_time(paths) * 1000 for _ in range(options.repeat)]
    print(f"{options.ranks} ranks; combine {len(paths)} files: median "
          f"{statistics.median(combined):.0f} ms, slowest {max(combined):.0f} ms")
    for size in SIZES:
        runs = [asyncio.run(one_session(merged, size)) for _ in range(options.repeat)]
        for name in SHOWN:
            values = [run[name] * 1000 for run in runs]
            print(f"  {size[0]}x{size[1]} {name:<10} median {statistics.median(values):7.0f} ms"
                  f"   slowest {max(values):7.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
