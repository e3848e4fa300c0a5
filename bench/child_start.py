"""What being followed costs a process the script starts, at its start: a Python that
imports nothing (a helper that never imports torch, which graphdoctor only looks at), and one
that imports torch (which graphdoctor then records), each started plainly and as a process
started below ``graphdoctor run`` is (its ``PYTHONPATH`` and settings as a recording process
leaves them, :func:`graphdoctor.record.processes.follow.offer`).

    python bench/child_start.py [--repeat 21] [--torch-repeat 5]

Plain and followed runs alternate; the table gives each one's median wall time with the
fastest and slowest, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphdoctor.files.run_files import RunFiles  # noqa: E402
from graphdoctor.record.processes import follow  # noqa: E402

CODES = {"python -c pass": "pass", "python -c 'import torch'": "import torch"}


def seconds(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - started


def row(name: str, plain: list[float], followed: list[float]) -> str:
    def shown(values: list[float]) -> str:
        return (f"{statistics.median(values) * 1000:8.1f} ms "
                f"({min(values) * 1000:.0f}-{max(values) * 1000:.0f})")

    ratio = statistics.median(followed) / statistics.median(plain)
    return f"{name:28} {shown(plain):>24} {shown(followed):>24} {ratio:7.2f}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--torch-repeat", type=int, default=5)
    options = parser.parse_args()
    plain_env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHDOCTOR_")}
    print(f"{'process':28} {'plain, median (range)':>24} {'followed':>24} {'ratio':>8}")
    with tempfile.TemporaryDirectory() as folder:
        followed_env = dict(plain_env)
        follow.offer(RunFiles(Path(folder) / "bench.spool"), "default", followed_env)
        for name, code in CODES.items():
            repeat = options.torch_repeat if "torch" in code else options.repeat
            plain, followed = [], []
            for _ in range(repeat):
                plain.append(seconds(code, plain_env))
                followed.append(seconds(code, followed_env))
            print(row(name, plain, followed), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
