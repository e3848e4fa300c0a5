"""What changed between two runs (``graphdoctor diff A B``): A is the baseline, B the new run.

Runs are compared by what a person would call "the same thing", not by ids, which shift
between runs:
- a verdict by its subject, then, for those left, by its graph and function ids;
- a finding by its rule, file and line text (the code, so an edit above it that moves the
  line does not make it look new), else its line number, else its title;
- captures and compile events by their counts.

A *regression* is something that got worse: a verdict of a worse kind, a speedup that fell
by more than the tolerance, a new finding of severity warning or error, more failed
captures, more graph breaks or CUDA-graph skips, or a run that no longer completes.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from graphdoctor.clean_text import clean
from graphdoctor.diagnose import findings
from graphdoctor.diagnose.findings import SEVERITY_RANK, SLOWER, WARNING, Finding, Verdict
from graphdoctor.facts import locations, tallies
from graphdoctor.report.document import Report
from graphdoctor.trace import endings
from graphdoctor.trace.names import CUDAGRAPH_SKIP, GRAPH_BREAK, RERECORD

DIFF_FORMAT = "graphdoctor-diff"
DIFF_VERSION = 1
DEFAULT_TOLERANCE = 0.10
WATCHED_COMPILE_EVENTS = (GRAPH_BREAK, CUDAGRAPH_SKIP, RERECORD)


@dataclass(frozen=True)
class VerdictChange:
    subject: str
    before: Verdict | None
    after: Verdict | None

    @property
    def kind_changed(self) -> bool:
        before = self.before.kind if self.before else None
        return before != (self.after.kind if self.after else None)

    @property
    def speedup_change(self) -> float | None:
        """Relative change of the speedup, B over A minus one; None if either is unknown."""
        a = self.before.speedup if self.before else None
        b = self.after.speedup if self.after else None
        return b / a - 1 if a and b is not None and a > 0 else None


@dataclass(frozen=True)
class FindingChange:
    finding: Finding
    before: int  # how many findings with this key in A
    after: int


@dataclass(frozen=True)
class Figure:
    """A number from both runs (a count, a time in ns, or bytes)."""

    name: str
    before: float | None
    after: float | None
    unit: str = ""  # "ns" | "bytes" | "" (a count)


@dataclass(frozen=True)
class Regression:
    condition: str  # verdict-worse | speedup-drop | new-finding | capture-failed | ...
    reason: str


@dataclass(frozen=True)
class ReportDiff:
    before_name: str
    after_name: str
    before_target: str
    after_target: str
    tolerance: float
    verdicts: tuple[VerdictChange, ...] = ()
    findings: tuple[FindingChange, ...] = ()
    run: tuple[tuple[str, str, str], ...] = ()
    environment: tuple[tuple[str, str, str], ...] = ()
    figures: tuple[Figure, ...] = ()
    regressions: tuple[Regression, ...] = field(default=())

    @property
    def appeared(self) -> list[FindingChange]:
        return [c for c in self.findings if c.after > c.before]

    @property
    def gone(self) -> list[FindingChange]:
        return [c for c in self.findings if c.after < c.before]


def compare(before: Report, after: Report, before_name: str = "A", after_name: str = "B",
            tolerance: float = DEFAULT_TOLERANCE) -> ReportDiff:
    diff = ReportDiff(
        before_name, after_name, before.trace.meta.target, after.trace.meta.target, tolerance,
        verdicts=tuple(_match_verdicts(before.diagnosis.verdicts, after.diagnosis.verdicts)),
        findings=tuple(_finding_changes(before, after)),
        run=tuple(_run_changes(before, after)),
        environment=tuple(_environment_changes(before, after)),
        figures=tuple(_figures(before, after)))
    return dataclasses.replace(diff, regressions=tuple(_regressions(diff)))


def _match_verdicts(before: tuple[Verdict, ...], after: tuple[Verdict, ...]) -> list[VerdictChange]:
    left, right = list(before), list(after)
    pairs: list[VerdictChange] = []
    for same in (lambda a, b: a.subject == b.subject,
                 lambda a, b: (a.graph, a.function) == (b.graph, b.function)):
        for a in list(left):
            match = next((b for b in right if same(a, b)), None)
            if match is not None:
                pairs.append(VerdictChange(match.subject, a, match))
                left.remove(a)
                right.remove(match)
    pairs += [VerdictChange(a.subject, a, None) for a in left]
    pairs += [VerdictChange(b.subject, None, b) for b in right]
    return pairs


def finding_key(report: Report, finding: Finding) -> tuple[str, ...]:
    location = finding.location
    if location is None:
        return (finding.id, "", finding.title)
    path = locations.display_path(location.file, report.trace.meta.cwd)
    return (finding.id, path, location.code.strip() or str(location.line))


def _finding_changes(before: Report, after: Report) -> list[FindingChange]:
    counts_a = Counter(finding_key(before, f) for f in before.diagnosis.findings)
    counts_b = Counter(finding_key(after, f) for f in after.diagnosis.findings)
    examples = {finding_key(before, f): f for f in before.diagnosis.findings}
    examples.update({finding_key(after, f): f for f in after.diagnosis.findings})
    return [FindingChange(finding, counts_a[key], counts_b[key])
            for key, finding in examples.items()]


def _run_changes(before: Report, after: Report) -> list[tuple[str, str, str]]:
    a, b = before.trace.status, after.trace.status
    rows = [("script", before.trace.meta.target, after.trace.meta.target),
            ("outcome", endings.outcome(before.trace, timed=False),
             endings.outcome(after.trace, timed=False)),
            ("complete", str(a.complete).lower(), str(b.complete).lower())]
    return [row for row in rows if row[1] != row[2]]


def _environment_changes(before: Report, after: Report) -> list[tuple[str, str, str]]:
    a = dict(tallies.environment(before.trace))
    b = dict(tallies.environment(after.trace))
    names = [n for n in dict.fromkeys([*a, *b]) if n != "started"]
    return [(n, a.get(n, "-"), b.get(n, "-")) for n in names if a.get(n) != b.get(n)]


def _figures(before: Report, after: Report) -> list[Figure]:
    def numbers(report: Report) -> dict[tuple[str, str], float | None]:
        trace = report.trace
        out: dict[tuple[str, str], float | None] = {("wall time", "ns"): trace.status.wall_ns}
        out.update({(f"time in {p.phase}", "ns"): p.total_ns for p in tallies.phase_totals(trace)})
        replays = list(tallies.replay_stats(trace).values())
        out[("replay host p50", "ns")] = _median_of(r.host_p50_ns for r in replays)
        out[("replay GPU p50", "ns")] = _median_of(r.gpu_p50_ns for r in replays)
        out.update({(f"graphs {s}", ""): n for s, n in tallies.graph_status_counts(trace).items()})
        out.update({(k.replace("_", " "), ""): n for k, n in tallies.compile_counts(trace).items()})
        return out

    a, b = numbers(before), numbers(after)
    return [Figure(name, a.get((name, unit)), b.get((name, unit)), unit)
            for name, unit in dict.fromkeys([*a, *b])]


def _median_of(values: Any) -> float | None:
    known = sorted(v for v in values if v is not None)
    return known[len(known) // 2] if known else None


def _regressions(diff: ReportDiff) -> list[Regression]:
    found: list[Regression] = []
    for change in diff.verdicts:
        found += _verdict_regressions(change, diff.tolerance)
    for appeared in diff.appeared:
        f = appeared.finding
        if SEVERITY_RANK.get(f.severity, 9) <= SEVERITY_RANK[WARNING]:
            reason = clean(f"new {f.severity} {f.id}: {f.title}")
            found.append(Regression("new-finding", reason))
    found += _count_regressions(diff)
    if ("complete", "true", "false") in diff.run:
        found.append(Regression("incomplete", "the run no longer completes"))
    return found


def _count_regressions(diff: ReportDiff) -> list[Regression]:
    """More failed captures, or more of the compile events that cost CUDA graphs."""
    figures = {f.name: f for f in diff.figures}
    watched = {"graphs failed": "capture-failed"}
    watched.update({kind.replace("_", " "): "compile" for kind in WATCHED_COMPILE_EVENTS})
    found = []
    for name, condition in watched.items():
        figure = figures.get(name)
        before, after = (figure.before or 0, figure.after or 0) if figure else (0, 0)
        if after > before:
            found.append(Regression(condition, f"{name}: {before:g} → {after:g}"))
    return found


def _verdict_regressions(change: VerdictChange, tolerance: float) -> list[Regression]:
    a, b = change.before, change.after
    subject = clean(change.subject)
    if b is None:
        return []
    if a is None:
        worse = findings.verdict_rank(b) >= findings.VERDICT_RANK[SLOWER]
        return [Regression("verdict-worse", f"{subject}: new, {b.kind}")] if worse else []
    found = []
    if findings.verdict_rank(b) > findings.verdict_rank(a):
        found.append(Regression("verdict-worse", f"{subject}: {a.kind} → {b.kind}"))
    drop = change.speedup_change
    if drop is not None and drop < -tolerance:
        found.append(Regression("speedup-drop", f"{subject}: speedup {a.speedup:.2f}× → "
                                f"{b.speedup:.2f}× ({drop:+.0%})"))
    return found


def to_json(diff: ReportDiff) -> dict[str, Any]:
    """The diff as plain JSON data, for scripts (``graphdoctor diff --format json``)."""
    plain = dataclasses.asdict(diff)
    plain["verdicts"] = [{**dataclasses.asdict(c), "kind_changed": c.kind_changed,
                          "speedup_change": c.speedup_change} for c in diff.verdicts]
    plain["findings"] = {
        "appeared": [_finding_json(c) for c in diff.appeared],
        "gone": [_finding_json(c) for c in diff.gone],
        "unchanged": sum(1 for c in diff.findings if c.before == c.after)}
    plain["run"] = [dict(zip(("field", "before", "after"), row, strict=True)) for row in diff.run]
    plain["environment"] = [dict(zip(("name", "before", "after"), row, strict=True))
                            for row in diff.environment]
    plain["regression"] = bool(diff.regressions)
    return {"format": DIFF_FORMAT, "version": DIFF_VERSION, **plain}


def _finding_json(change: FindingChange) -> dict[str, Any]:
    return {**dataclasses.asdict(change.finding), "before": change.before, "after": change.after}
