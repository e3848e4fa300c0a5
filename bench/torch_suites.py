"""PyTorch's own CUDA-graph tests, run plainly and under ``graphdoctor run``: the same outcome
for every test is the promise that graphdoctor does not change the program it records.
Runs on a GPU machine, against test files of PyTorch's source tree (``test/test_cuda.py``,
``test/inductor/test_cudagraph_trees.py``; they import ``torch.testing._internal``, which
ships in the wheel).

    python bench/torch_suites.py --tests DIR [--suite cuda_graphs] [--out FILE.json]

Each suite runs twice, one pytest process each (``-v``, so each test's outcome is printed as
it ends and survives a crash): plain, then as ``graphdoctor run -m pytest``. The result lists
every test id with both outcomes, the tests whose outcome differs, and how each process
ended; graphdoctor's own report of the suite is written beside the result."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# suite -> (test file under --tests, pytest -k expression)
SUITES = {
    # TestCuda's graph tests, TestBlockStateAbsorption, TestCachingHostAllocatorCudaGraph,
    # TestMemPool's and TestCudaOptims' graph tests
    "cuda_graphs": ("test_cuda.py", "graph or BlockStateAbsorption"),
    "cudagraph_trees": ("inductor/test_cudagraph_trees.py", ""),
}
OUTCOME = re.compile(r"^(\S+::\S+) (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b")


def pytest_args(path: Path, expression: str, extra: list[str], ini: Path) -> list[str]:
    """pytest's arguments for one suite: its own empty configuration (not this project's),
    and the plugin that lets a newer test file import on this torch."""
    args = ["-m", "pytest", "-c", str(ini), "--rootdir", str(path.parent), "-v",
            "-p", "no:cacheprovider", "-p", "torch_suites_shim", "--tb=line", str(path)]
    return [*args, *(["-k", expression] if expression else []), *extra]


def run(command: list[str], log: Path, timeout: int) -> dict:
    env = {**os.environ, "PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "bench"),
                                                       os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    with log.open("w") as out:
        try:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                  timeout=timeout, check=False)
            code = done.returncode
        except subprocess.TimeoutExpired:
            code = 124
    text = log.read_text(errors="replace")
    outcomes = {m.group(1): m.group(2) for m in map(OUTCOME.match, text.splitlines()) if m}
    summary = [line for line in text.splitlines() if re.match(r"^=+ .*(passed|failed)", line)]
    return {"exit": code, "seconds": round(time.perf_counter() - started, 1),
            "outcomes": outcomes, "summary": summary[-1] if summary else "(no summary)",
            "tail": text.splitlines()[-40:]}


def compare(plain: dict, recorded: dict) -> dict:
    ids = sorted(set(plain["outcomes"]) | set(recorded["outcomes"]))
    rows = {test: [plain["outcomes"].get(test, "NOT RUN"),
                   recorded["outcomes"].get(test, "NOT RUN")] for test in ids}
    return {"tests": rows, "differ": {t: r for t, r in rows.items() if r[0] != r[1]}}


def device_facts() -> dict:
    import torch
    return {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
            "torch": torch.__version__, "python": sys.version.split()[0],
            "date": datetime.date.today().isoformat()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=Path, required=True, help="PyTorch's test/ folder")
    parser.add_argument("--suite", nargs="*", default=list(SUITES))
    parser.add_argument("--out", type=Path, default=Path("torch-suites.json"))
    parser.add_argument("--timeout", type=int, default=1200)
    parser.add_argument("--only", choices=("plain", "graphdoctor"), help="run one side only")
    parser.add_argument("pytest_extra", nargs="*", help="more pytest arguments, after --")
    args = parser.parse_args()
    result = {**device_facts(), "suites": {}}
    ini = args.out.with_name(f"{args.out.stem}.pytest.ini")
    ini.write_text("[pytest]\n")
    for name in args.suite:
        file, expression = SUITES[name]
        test_args = pytest_args(args.tests / file, expression, args.pytest_extra, ini)
        report = args.out.with_name(f"{args.out.stem}.{name}.graphdoctor.json")
        sides = {}
        if args.only != "graphdoctor":
            sides["plain"] = run([sys.executable, *test_args],
                                 args.out.with_name(f"{args.out.stem}.{name}.plain.log"),
                                 args.timeout)
        if args.only != "plain":
            sides["graphdoctor"] = run(
                [sys.executable, "-m", "graphdoctor", "run", "-q", "-o", str(report),
                 "--timeout", str(args.timeout), *test_args],
                args.out.with_name(f"{args.out.stem}.{name}.graphdoctor.log"), args.timeout + 60)
        suite = {side: {k: v for k, v in got.items() if k != "outcomes"}
                 for side, got in sides.items()}
        if len(sides) == 2:
            suite.update(compare(sides["plain"], sides["graphdoctor"]))
        else:
            suite["tests"] = {t: [o] for got in sides.values() for t, o in got["outcomes"].items()}
        result["suites"][name] = suite
        print(f"{name}: " + "; ".join(f"{side}: exit {got['exit']}, {got['summary']}, "
                                      f"{got['seconds']} s" for side, got in sides.items()))
        for test, (before, after) in suite.get("differ", {}).items():
            print(f"  differs: {test}: plain {before}, under graphdoctor {after}")
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
