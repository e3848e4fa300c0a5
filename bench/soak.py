"""A soak of the recorder: ``bench/workloads/soak_graphs.py`` (1,000 graphs captured and
freed, a million replays, graph breaks and recompiles between) run plainly and under
``graphdoctor run``, on a GPU machine.

    python bench/soak.py [--out bench/results/soak-DEVICE-DATE.json]

It says whether the recorded run ended as the plain one did, with its own checks passing,
how its resident memory grew over the run beside the plain run's (the recorder's memory is
the difference), and what the report holds: every graph and every replay counted."""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = ROOT / "bench" / "workloads" / "soak_graphs.py"


def run(command: list[str], log: Path) -> dict:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=WORKLOAD.parent, capture_output=True, text=True,
                          check=False)
    log.write_text(done.stdout + done.stderr)
    bench = [line[6:] for line in done.stdout.splitlines() if line.startswith("BENCH ")]
    result = json.loads(bench[-1]) if bench else {}
    return {"exit": done.returncode, "wall_s": round(time.perf_counter() - started, 1),
            **result}


def report_counts(path: Path) -> dict:
    """Graphs and replays the report counted, and its size."""
    if not path.exists():
        return {"report": "missing"}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as file:
        report = json.load(file)
    trace = report.get("trace", {})
    counts = trace.get("replay_counts", {})
    return {"report_mb": round(path.stat().st_size / 2**20, 1),
            "graphs": len(trace.get("graphs", [])),
            "replays": sum(int(v) for v in counts.values()),
            "findings": sorted({f.get("id") for f in report.get("diagnosis", {})
                                .get("findings", [])})}


def growth(rss: list[float]) -> float:
    """Resident memory gained from the first tenth of the run to its end, MiB."""
    return round(rss[-1] - rss[0], 1) if len(rss) > 1 else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("soak.json"))
    args = parser.parse_args()
    report = args.out.with_name(args.out.stem + ".report.json.gz")
    plain = run([sys.executable, str(WORKLOAD)], args.out.with_name(args.out.stem + ".plain.log"))
    recorded = run([sys.executable, "-m", "graphdoctor", "run", "-q", "-o", str(report),
                    str(WORKLOAD)], args.out.with_name(args.out.stem + ".graphdoctor.log"))
    result = {"plain": plain, "graphdoctor": recorded, "report": report_counts(report),
              "rss_growth_mb": {"plain": growth(plain.get("rss_mb", [])),
                                "graphdoctor": growth(recorded.get("rss_mb", []))}}
    args.out.write_text(json.dumps(result, indent=1))
    for side in ("plain", "graphdoctor"):
        got = result[side]
        print(f"{side}: exit {got['exit']}, ok {got.get('ok')}, {got.get('seconds')} s, "
              f"rss {got.get('rss_mb', ['?'])[0]} -> {got.get('rss_mb', ['?'])[-1]} MiB")
    print(f"report: {result['report']}")
    return 0 if plain["exit"] == recorded["exit"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
