"""What graphdoctor costs, and how true its timings are. Runs on a GPU machine.

    python bench/overhead.py [--repeats 5] [--out bench/results/overhead.json]

For each workload in bench/workloads/, ``python workload.py`` and ``graphdoctor run`` (default
mode and --full) run alternately, in rotating order, ``--repeats`` times. Each workload times
its own steady-state loop with CUDA events; the table gives, per mode, the median ratio of
that per-step time to the plain run of the same repeat, with the min and max. Fidelity
compares the step time graphdoctor reports with the workload's own timing in the same run.
Start-up is the wall-clock difference on a script that only imports torch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "bench" / "workloads"
LOOPS = ("eager_loop", "replay_loop", "compile_decode", "alloc_churn")
# capture cost: per measure, the target is plain x 1.1 + this many ms
CAPTURES = {"first_capture_ms": 5.0, "later_capture_ms": 1.0, "deep_capture_ms": 1.0}
VARIANTS = ("plain", "default", "full")
sys.path.insert(0, str(ROOT))


CPUS: list[str] = []  # --cpus: pin every run to the same cores, so runs compete less


def command(variant: str, script: Path, report: Path) -> list[str]:
    pin = ["taskset", "-c", ",".join(CPUS)] if CPUS else []
    if variant == "plain":
        return [*pin, sys.executable, str(script)]
    extra = {"full": ["--full"], "cupti": ["--cupti"]}.get(variant.split("-off:")[0], [])
    return [*pin, sys.executable, "-m", "graphdoctor", "run", "-q", *extra, "-o", str(report),
            str(script)]


def environment(variant: str) -> dict[str, str]:
    """``off:a+b`` runs the default mode with parts a and b switched off (GRAPHDOCTOR_OFF),
    to find what each part costs; ``cupti-off:a+b`` the same with --cupti."""
    env = _env()
    _, off, parts = variant.partition("off:")
    if off:
        env["GRAPHDOCTOR_OFF"] = parts.replace("+", ",")
    return env


def _env() -> dict[str, str]:
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def run_once(variant: str, name: str, workdir: Path) -> dict:
    report = workdir / f"{name}-{variant}.json"
    started = time.perf_counter()
    done = subprocess.run(command(variant, WORKLOADS / f"{name}.py", report), cwd=WORKLOADS,
                          capture_output=True, text=True, env=environment(variant))
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{name} ({variant}) failed:\n{done.stderr[-3000:]}")
    line = next(x for x in done.stdout.splitlines() if x.startswith("BENCH "))
    result = {"wall_s": wall, **json.loads(line[len("BENCH "):])}
    if variant != "plain" and name in ("eager_loop", "replay_loop", "cupy_replay_loop"):
        result["reported_us"] = reported_step_us(report, name)
    return result


def reported_step_us(report: Path, name: str) -> float | None:
    """The step time graphdoctor's report gives for the timed loop."""
    from graphdoctor.report.io import load

    trace = load(report).trace
    if name in ("replay_loop", "cupy_replay_loop"):
        times = [r.gpu for r in trace.tables["replays"] if r.gpu >= 0]
    else:
        times = [c.gpu for c in trace.tables["calls"] if c.mode == "eager" and c.gpu >= 0]
    return statistics.median(times) / 1000 if times else None


def rotate(variants: list[str], repeat: int) -> list[str]:
    shift = repeat % len(variants)
    return variants[shift:] + variants[:shift]


def measure(names: list[str], repeats: int, variants: list[str],
            out: Path | None = None) -> dict[str, list[dict[str, dict]]]:
    """Every workload under every variant, ``repeats`` times; written to ``out`` after each
    run, so a benchmark cut short still leaves what it measured."""
    results: dict[str, list[dict[str, dict]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):
            for name in names:
                runs = {v: run_once(v, name, Path(tmp)) for v in rotate(variants, repeat)}
                results[name].append(runs)
                if out is not None:
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_text(json.dumps(results, indent=1))
                print(f"repeat {repeat + 1}/{repeats} {name}: " + ", ".join(
                    f"{v} {_headline(r):.1f}" for v, r in runs.items()), flush=True)
    return results


def _headline(result: dict) -> float:
    for key in ("gpu_us_per_step", "first_capture_ms"):
        if key in result:
            return float(result[key])
    return float(result["wall_s"])


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def summarize(results: dict[str, list[dict[str, dict]]], variants: list[str]) -> list[str]:
    measured = {v for name, repeats in results.items() if name not in ("startup", "capture")
                for r in repeats for v in r}  # a saved file may hold fewer than asked for
    shown = [v for v in variants if v != "plain" and v in measured]
    rows = ["| workload | runs | plain µs/step | " + " | ".join(f"{v} ratio" for v in shown)
            + " | fidelity (default) |", "|---" * (len(shown) + 4) + "|"]
    for name, repeats in results.items():
        if name in ("startup", "capture"):
            continue
        plain = [r["plain"]["gpu_us_per_step"] for r in repeats]
        ratios = [spread([r[v]["gpu_us_per_step"] / r["plain"]["gpu_us_per_step"]
                          for r in repeats]) for v in shown]
        rows.append(f"| {name} | {len(repeats)} | {statistics.median(plain):.1f} | "
                    + " | ".join(ratios)
                    + f" | {fidelity(repeats)} |")
    return rows


def host_rows(results: dict[str, list[dict[str, dict]]], variants: list[str]) -> list[str]:
    """Host time per step, where the loop is host-bound: what a hook on every launch costs."""
    rows = ["", "| workload | plain host µs/step | " + " | ".join(
        f"{v} host ratio" for v in variants if v != "plain") + " |",
        "|---" * len(variants) + "|---|"]
    for name, repeats in results.items():
        if name in ("startup", "capture") or "host_us_per_step" not in repeats[0]["plain"]:
            continue
        plain = statistics.median(r["plain"]["host_us_per_step"] for r in repeats)
        ratios = [spread([r[v]["host_us_per_step"] / r["plain"]["host_us_per_step"]
                          for r in repeats if v in r]) for v in variants if v != "plain"]
        rows.append(f"| {name} | {plain:.2f} | " + " | ".join(ratios) + " |")
    return rows


def fidelity(repeats: list[dict[str, dict]]) -> str:
    diffs = [r["default"]["reported_us"] / r["default"]["gpu_us_per_step"] - 1
             for r in repeats if r.get("default", {}).get("reported_us")]
    if not diffs:
        return "n/a"
    return f"{statistics.median(diffs) * 100:+.1f}% (max {max(map(abs, diffs)) * 100:.1f}%)"


def capture_rows(repeats: list[dict[str, dict]], variants: list[str]) -> list[str]:
    """Capture times: plain, and per variant the median of (variant - plain) and of
    variant / plain over the repeats that ran it (n); "(over)" where the variant's median is
    above the target, the plain median x 1.1 + N ms."""
    shown = [v for v in variants if v != "plain"]
    rows = ["| capture | plain ms | " + " | ".join(f"{v}: +ms, ratio" for v in shown)
            + " | target |", "|---" * (len(shown) + 3) + "|"]
    for key, allowance in CAPTURES.items():
        plain = [r["plain"][key] for r in repeats]
        cells = [_capture_cell([r for r in repeats if v in r], v, key, allowance)
                 for v in shown]
        rows.append(f"| {key.removesuffix('_ms').replace('_', ' ')} | "
                    f"{statistics.median(plain):.2f} | " + " | ".join(cells)
                    + f" | x1.1 + {allowance:g} ms |")
    return rows


def _capture_cell(repeats: list[dict[str, dict]], variant: str, key: str,
                  allowance: float) -> str:
    if not repeats:
        return "-"
    extra = [r[variant][key] - r["plain"][key] for r in repeats]
    ratio = [r[variant][key] / r["plain"][key] for r in repeats]
    within = statistics.median(r[variant][key] for r in repeats) <= \
        statistics.median(r["plain"][key] for r in repeats) * 1.1 + allowance
    return f"{spread(extra)}, {spread(ratio)}, n={len(repeats)}{'' if within else ' (over)'}"


def startup_rows(repeats: list[dict[str, dict]]) -> list[str]:
    extra = [r["default"]["wall_s"] - r["plain"]["wall_s"] for r in repeats]
    plain = [r["plain"]["wall_s"] for r in repeats]
    return [f"start-up: python imports torch in {statistics.median(plain):.2f} s; graphdoctor run "
            f"adds {spread(extra)} s"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workloads", nargs="*", default=[*LOOPS, "capture", "startup"])
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS),
                        help="plain, default, full, cupti (--cupti), or off:PART[+PART] (see "
                             "GRAPHDOCTOR_OFF)")
    parser.add_argument("--cpus", default="", help="pin runs to these cores, e.g. 4,5")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--summarize", type=Path, metavar="JSON",
                        help="print the tables of results saved by --out, measuring nothing")
    options = parser.parse_args()
    CPUS.extend(filter(None, options.cpus.split(",")))
    if options.summarize:
        results = {k: v for k, v in json.loads(options.summarize.read_text()).items() if v}
        print(f"\n{options.summarize}: ratios of per-step time (runs: repeats of each)")
    else:
        results = measure(options.workloads, options.repeats, options.variants, options.out)
        import torch

        print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}, "
              f"{time.strftime('%Y-%m-%d')}, {options.repeats} repeats, ratios of per-step time")
    print("\n".join(summarize(results, options.variants)))
    print("\n".join(host_rows(results, options.variants)))
    if "capture" in results:
        print("\n".join(capture_rows(results["capture"], options.variants)))
    if "startup" in results:
        print("\n".join(startup_rows(results["startup"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
