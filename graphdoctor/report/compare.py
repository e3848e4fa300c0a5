"""``graphdoctor compare``: runs of one script under several variants, side by side.

Each run is a normal recording with a report of its own; the as-written run of each repeat
is measured against the graphs-off run of the same repeat, as ``run --baseline`` does, and
the other variants on their own. A row is one subject (a graph the script captured, or a
function graphdoctor followed: compiled, graphed, or called inside a capture) under one
variant, the samples of all its repeats pooled: per call (a replay; an eager or replaying
call of the function; warm-up and recording calls left out), the p50 and p95 of GPU time
and of host time, the samples, and the variant's verdict over its repeats: their kind when
they agree, "mixed" when they do not, and the median speedup.
"""

from __future__ import annotations

import shlex
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from graphdoctor.diagnose.findings import Verdict
from graphdoctor.diagnose.measure import Stat, stat
from graphdoctor.facts import locations, queries
from graphdoctor.report import gates
from graphdoctor.report.document import Report
from graphdoctor.trace import endings
from graphdoctor.trace.model import Function, Graph, Trace
from graphdoctor.trace.names import COMPILED, EAGER_CALL, REPLAYING_CALL, STEP_FUNCTION

FORMAT = "graphdoctor-compare"
VERSION = 1
MIXED = "mixed"
STEADY_CALLS = (EAGER_CALL, REPLAYING_CALL)  # a call the loop repeats; not one that compiled
REPLAY = "replay"


@dataclass(frozen=True)
class VariantInfo:
    name: str
    env: tuple[tuple[str, str], ...] = ()
    args: tuple[str, ...] = ()

    def describe(self) -> str:
        """What it sets, as a shell would read it: ``A=1 --steps 20``."""
        words = [f"{k}={v}" for k, v in self.env] + list(self.args)
        return shlex.join(words) if words else "the script as written"


@dataclass(frozen=True)
class CompareRun:
    variant: str
    repeat: int
    order: int  # its place in the schedule, from 0
    report: Report
    exit_code: int
    saved_to: str = ""  # where its report was written (--keep-reports), or ""


@dataclass(frozen=True)
class VerdictOverRuns:
    kind: str  # the kind every run gave, or "mixed"
    kinds: dict[str, int]
    speedup: float | None  # the median over the runs that measured one
    summary: str  # the summary of the run whose speedup is that median (else the first)


@dataclass(frozen=True)
class Row:
    subject: str
    variant: str
    calls: str  # what was timed: "replay", "eager", "eager+replay", or "" (nothing)
    gpu: Stat | None
    host: Stat | None
    verdict: VerdictOverRuns | None
    ran: bool = True  # whether the subject was in this variant's runs at all


@dataclass(frozen=True)
class CompareResult:
    target: str
    args: tuple[str, ...]
    repeats: int
    variants: tuple[VariantInfo, ...]
    runs: tuple[CompareRun, ...]
    rows: tuple[Row, ...] = ()
    trips: tuple[gates.Trip, ...] = ()

    @property
    def exit_code(self) -> int:
        """GATE_EXIT if a gate tripped, else the first run's exit code that is not 0."""
        if self.trips:
            return gates.GATE_EXIT
        return next((run.exit_code for run in self.runs if run.exit_code), 0)


@dataclass
class _Pool:
    """One subject's samples under one variant, over its runs."""

    label: str
    modes: set[str] = field(default_factory=set)
    gpu: list[int] = field(default_factory=list)
    host: list[int] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)


Key = tuple[Any, ...]


def compared(target: str, args: tuple[str, ...], repeats: int,
             variants: tuple[VariantInfo, ...], runs: Iterable[CompareRun],
             conditions: tuple[str, ...] = ()) -> CompareResult:
    """The rows and tripped gates of a comparison's runs."""
    runs = tuple(sorted(runs, key=lambda r: r.order))
    pools: dict[str, dict[Key, _Pool]] = {v.name: {} for v in variants}
    for run in runs:
        _pool_run(pools.setdefault(run.variant, {}), run.report)
    return CompareResult(target, args, repeats, variants, runs, tuple(_rows(pools)),
                         tuple(_trips(runs, conditions)))


def _pool_run(pools: dict[Key, _Pool], report: Report) -> None:
    trace = report.trace
    verdicts = [v for v in report.diagnosis.verdicts if v.rank < 0]
    for key, label, graph in _graphs(trace):
        pool = pools.setdefault(key, _Pool(label))
        replays = queries.replays_of(trace, graph)
        pool.modes |= {REPLAY} if replays else set()
        pool.gpu += [r.gpu for r in replays]
        pool.host += [r.dur for r in replays]
        pool.verdicts += [v for v in verdicts if v.graph == graph.id]
    for key, label, fn in _functions(trace):
        pool = pools.setdefault(key, _Pool(label))
        calls = [c for c in trace.tables["calls"] if c.fn == fn.id and c.mode in STEADY_CALLS]
        pool.modes |= {c.mode for c in calls}
        pool.gpu += [c.gpu for c in calls]
        pool.host += [c.dur for c in calls]
        pool.verdicts += [v for v in verdicts if v.function == fn.id and v.graph < 0]


def _graphs(trace: Trace) -> list[tuple[Key, str, Graph]]:
    """The graphs the script captured itself (torch.compile's are its functions' rows), each
    keyed by its API, its line and its place among the graphs of that line."""
    found: list[tuple[Key, str, Graph]] = []
    seen: Counter[Key] = Counter()
    for graph in (g for g in trace.graphs if not g.internal and g.api != COMPILED):
        frame = queries.culprit_frame(trace, graph.stack)
        site = (frame.file, frame.line) if frame else ("", 0)
        seen[(graph.api, *site)] += 1
        number = seen[(graph.api, *site)]
        where = locations.site(trace, graph.stack, short=True) or "?"
        label = f"graph ({graph.api}, {where})" + (f" #{number}" if number > 1 else "")
        found.append((("graph", graph.api, *site, number), label, graph))
    return found


def _functions(trace: Trace) -> list[tuple[Key, str, Function]]:
    """Compiled, graphed and captured functions; not a graph's step function, whose calls
    with and without the graph would pool into one figure (its graph's row has them)."""
    return [(("function", fn.kind, fn.name, fn.file, fn.line),
             f"{fn.kind} {fn.name} ({locations.file_name(fn.file) if fn.file else '?'}:{fn.line})",
             fn) for fn in trace.functions if fn.kind != STEP_FUNCTION]


def _rows(pools: dict[str, dict[Key, _Pool]]) -> list[Row]:
    """A row per subject and variant, subjects in the order they first appear."""
    subjects: dict[Key, str] = {}
    for variant_pools in pools.values():
        for key, pool in variant_pools.items():
            subjects.setdefault(key, pool.label)
    rows = []
    for key, label in subjects.items():
        for variant, variant_pools in pools.items():
            found = variant_pools.get(key)
            rows.append(_row(label, variant, found) if found else
                        Row(label, variant, "", None, None, None, ran=False))
    return rows


def _row(label: str, variant: str, pool: _Pool) -> Row:
    return Row(label, variant, "+".join(sorted(pool.modes)), stat(pool.gpu), stat(pool.host),
               over_runs(pool.verdicts))


def over_runs(verdicts: list[Verdict]) -> VerdictOverRuns | None:
    """One variant's verdicts on one subject, one per run, as one."""
    if not verdicts:
        return None
    kinds = Counter(v.kind for v in verdicts)
    measured = sorted((v for v in verdicts if v.speedup is not None),
                      key=lambda v: v.speedup or 0.0)
    middle = measured[(len(measured) - 1) // 2] if measured else verdicts[0]
    speedup = statistics.median(v.speedup for v in measured if v.speedup is not None) \
        if measured else None
    return VerdictOverRuns(next(iter(kinds)) if len(kinds) == 1 else MIXED, dict(kinds),
                           speedup, middle.summary)


def _trips(runs: tuple[CompareRun, ...], conditions: tuple[str, ...]) -> list[gates.Trip]:
    """Each run's tripped gates, the run named in the reason."""
    return [gates.Trip(trip.condition, f"{run.variant} run {run.repeat + 1}: {trip.reason}")
            for run in runs for trip in gates.check(run.report, conditions)] \
        if conditions else []


def to_json(result: CompareResult) -> dict[str, Any]:
    return {
        "format": FORMAT, "version": VERSION, "target": result.target,
        "args": list(result.args), "repeats": result.repeats,
        "variants": [{"name": v.name, "env": dict(v.env), "args": list(v.args)}
                     for v in result.variants],
        "runs": [{"variant": r.variant, "repeat": r.repeat, "order": r.order,
                  "exit_code": r.exit_code, "outcome": endings.outcome(r.report.trace),
                  "complete": r.report.trace.status.complete, "report": r.saved_to or None}
                 for r in result.runs],
        "rows": [_row_json(row) for row in result.rows],
        "gates": [{"condition": t.condition, "reason": t.reason} for t in result.trips],
        "exit_code": result.exit_code,
    }


def _row_json(row: Row) -> dict[str, Any]:
    verdict = row.verdict
    return {
        "subject": row.subject, "variant": row.variant, "ran": row.ran, "calls": row.calls,
        "samples": row.host.n if row.host else 0,
        "gpu_us": _percentiles(row.gpu), "host_us": _percentiles(row.host),
        "verdict": None if verdict is None else {
            "kind": verdict.kind, "kinds": verdict.kinds,
            "speedup": None if verdict.speedup is None else round(verdict.speedup, 3),
            "summary": verdict.summary},
    }


def _percentiles(value: Stat | None) -> dict[str, float | int] | None:
    if value is None:
        return None
    return {"p50": round(value.median_us, 2), "p95": round(value.p95_us, 2), "n": value.n}
