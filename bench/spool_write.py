"""What one spool write costs the thread that records: the hot path (a sync, an allocation, a
batch of replays) and an urgent record (a compile log line, appended at once). CPU only.

    python bench/spool_write.py [--against REV] [--n 200000]

Each case writes ``--n`` records into a fresh spool in a temporary folder and reports the
fastest of 7 runs in ns per record, flushes included. ``tail`` is the child's writer (pending
records in a mapped tail file); ``memory`` a writer without one; ``--against REV`` adds the
SpoolWriter of that git revision (with that revision's urgent records), for the cost of a
change.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphdoctor.trace.event_kinds import Alloc, Replay, Sync  # noqa: E402
from graphdoctor.trace.spool import file as spool  # noqa: E402
from graphdoctor.trace.spool import records as sr  # noqa: E402

SYNC = Sync(123_456_789, "item", 0, -1, 0, 17)
ALLOC = Alloc(123_456_789, "alloc", 139_872_551_190_528, 1_048_576, 0, "(0, 1)", 3, 42)
REPLAYS = [Replay(123_456_789 + i, 10_000, 9_000, 0, 7, 0) for i in range(100)]
LOG = sr.LogRecord(123_456_789, "torch._inductor.cudagraph_utils.__cudagraphs", "WARNING",
                   "skipping cudagraphs due to mutated inputs (12 instances). Found from: \n"
                   '   File "modeling_llama.py", line 42, in forward', "0/0", 12)


def writers(against: str | None) -> dict[str, Callable[[Path], Any]]:
    made: dict[str, Callable[[Path], Any]] = {
        "tail": lambda d: spool.SpoolWriter(d / "s.spool", tail=d / "s.tail"),
        "memory": lambda d: spool.SpoolWriter(d / "s.spool"),
    }
    if against:
        old = _module_at(against)
        made[against] = lambda d: old.SpoolWriter(d / "s.spool")
    return made


def _module_at(rev: str) -> Any:
    """graphdoctor.trace.spool.file as it was at ``rev``, with the urgent records of then."""
    module = _load(rev, "spool")
    then = _load(rev, "spool_records")
    module.URGENT = frozenset(getattr(sr, cls.__name__) for cls in then.URGENT)
    return module


def _load(rev: str, name: str) -> Any:
    source = subprocess.run(["git", "show", f"{rev}:graphdoctor/trace/{name}.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / f"{name}_at_rev.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"{name}_at_rev", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases() -> dict[str, Callable[[Any, int], None]]:
    def one(record: Any) -> Callable[[Any, int], None]:
        def go(writer: Any, n: int) -> None:
            write = writer.write
            for _ in range(n):
                write(record)
        return go

    def batches(writer: Any, n: int) -> None:
        for _ in range(n // len(REPLAYS)):
            writer.write_many(REPLAYS)

    return {"sync": one(SYNC), "alloc": one(ALLOC), "replays (write_many of 100)": batches,
            "compile log (urgent)": one(LOG)}


def measure(make: Callable[[Path], Any], case: Callable[[Any, int], None], n: int) -> float:
    runs = []
    for _ in range(7):
        with tempfile.TemporaryDirectory() as folder:
            writer = make(Path(folder))
            start = time.perf_counter_ns()
            case(writer, n)
            writer.close()
            runs.append((time.perf_counter_ns() - start) / n)
    return min(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="a git revision whose SpoolWriter to compare")
    parser.add_argument("--n", type=int, default=200_000)
    options = parser.parse_args()
    made = writers(options.against)
    print(f"{'ns per record':<30}" + "".join(f"{name:>12}" for name in made))
    for label, case in cases().items():
        n = options.n // 20 if "urgent" in label else options.n
        row = [measure(make, case, n) for make in made.values()]
        print(f"{label:<30}" + "".join(f"{ns:>12.0f}" for ns in row))


if __name__ == "__main__":
    main()
