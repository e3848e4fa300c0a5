"""CI gates: conditions on a report (``--fail-on``) that turn into a non-zero exit code.

Each condition looks at the diagnosis and, where the diagnosis may not have judged (an
older report, a rule that raised), at the recorded events too, so a gate never passes
only because a rule was missing. A rule id (``GD012``) is a condition as well: any
finding from that rule trips it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from graphdoctor.clean_text import clean
from graphdoctor.columns import term_list
from graphdoctor.diagnose.findings import (
    ERROR,
    FAILED,
    INTERNAL_ERROR_ID,
    NEUTRAL,
    RERECORDED,
    SEVERITY_RANK,
    SKIPPED,
    SLOWER,
    UNSAFE,
    WARNING,
    WASTEFUL,
)
from graphdoctor.errors import GraphDoctorError
from graphdoctor.facts import locations, queries
from graphdoctor.report import children
from graphdoctor.report.diff import ReportDiff
from graphdoctor.report.document import Report
from graphdoctor.trace import endings
from graphdoctor.trace.names import CAPTURE_FAILED, CUDAGRAPH_SKIP, GRAPH_BREAK, RECOMPILE, RERECORD

GATE_EXIT = 3  # the exit code when a --fail-on condition trips
_RULE_ID = re.compile(r"GD\d{3}")


@dataclass(frozen=True)
class Trip:
    """A condition that tripped, and why, in words for the CI log."""

    condition: str
    reason: str

    def __str__(self) -> str:
        return f"{self.condition}: {self.reason}"


Check = Callable[[Report], list[str]]


def _verdicts(*kinds: str) -> Check:
    return lambda report: [f"{v.subject}: {v.summary}" for v in report.diagnosis.verdicts
                           if v.kind in kinds]


def _findings(*categories: str) -> Check:
    return lambda report: [f"{f.id} {f.title}" for f in report.diagnosis.findings
                           if f.category in categories]


def _compile_events(kind: str, label: str) -> Check:
    def check(report: Report) -> list[str]:
        count = sum(1 for e in report.trace.compile_events if e.kind == kind)
        return [f"{count} {label}{'s' if count > 1 else ''} recorded"] if count else []

    return check


def _failed_captures(report: Report) -> list[str]:
    return [f"capture of graph {g.id} ({g.api}) failed"
            + (f" at {locations.site(report.trace, g.stack)}" if g.stack >= 0 else "")
            for g in queries.user_graphs(report.trace) if g.status == CAPTURE_FAILED]


def _incomplete(report: Report) -> list[str]:
    status = report.trace.status
    return [] if status.complete else [f"the run {endings.outcome(report.trace)}"]


def _severity(worst: str) -> Check:
    rank = SEVERITY_RANK[worst]
    return lambda report: [f"{f.severity} {f.id} {f.title}" for f in report.diagnosis.findings
                           if SEVERITY_RANK.get(f.severity, 9) <= rank]


def _any(*checks: Check) -> Check:
    def check(report: Report) -> list[str]:
        reasons: list[str] = []
        for one in checks:
            reasons += [r for r in one(report) if r not in reasons]
        return reasons

    return check


# name -> (what it means, for --help and the README; how to check it)
CONDITIONS: dict[str, tuple[str, Check]] = {
    "capture-failed": ("a graph capture failed",
                       _any(_failed_captures, _verdicts(FAILED), _findings(FAILED))),
    "neutral": ("a graph gave no speedup over eager",
                _any(_verdicts(NEUTRAL), _findings(NEUTRAL))),
    "slower": ("a graph was slower than eager", _verdicts(SLOWER)),
    "skipped": ("torch.compile skipped CUDA graphs",
                _any(_verdicts(SKIPPED), _findings(SKIPPED),
                     _compile_events(CUDAGRAPH_SKIP, "CUDA graph skip"))),
    "rerecorded": ("torch.compile re-recorded graphs (e.g. one per shape)",
                   _any(_verdicts(RERECORDED), _compile_events(RERECORD, "re-recording"))),
    "unsafe": ("a graph's results or inputs are unsafe (overwritten outputs, freed inputs)",
               _any(_verdicts(UNSAFE), _findings(UNSAFE))),
    "wasteful": ("memory or work is wasted (a pool per graph, copies per replay, an empty "
                 "graph, a host node or a chain of tiny kernels in one)",
                 _findings(WASTEFUL)),
    "graph-break": ("torch.compile broke a graph", _compile_events(GRAPH_BREAK, "graph break")),
    "recompile": ("torch.compile recompiled", _compile_events(RECOMPILE, "recompilation")),
    "incomplete": ("the script crashed, was killed or timed out", _incomplete),
    "error": ("any finding of severity error", _severity(ERROR)),
    "warning": ("any finding of severity warning or error", _severity(WARNING)),
}


# What a test checks unless told otherwise (graphdoctor.check's Result.assert_ok, pytest
# --graphdoctor): what went wrong with the graphs, not how fast they ran, which a shared CI
# machine makes noisy.
TEST_CONDITIONS = ("capture-failed", "skipped", "rerecorded", "unsafe")


def describe_conditions() -> str:
    """The conditions, one a line, for --help and the README."""
    rows = [(name, text) for name, (text, _) in CONDITIONS.items()]
    return term_list([*rows, ("GD###", "any finding of that rule")])


def parse_conditions(text: str, known: Iterable[str] = CONDITIONS,
                     rule_ids: bool = True) -> tuple[str, ...]:
    """``"capture-failed,neutral"`` -> the names; an unknown name is a usage error."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    known = tuple(known)
    if rule_ids:
        names = tuple(n.upper() if _RULE_ID.fullmatch(n.upper()) else n for n in names)
        _check_rule_ids([n for n in names if _RULE_ID.fullmatch(n)])
    unknown = [n for n in names if n not in known and not (rule_ids and _RULE_ID.fullmatch(n))]
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, 1)
        meant = f" (did you mean {close[0]}?)" if close else ""
        also = " or a rule id such as GD101" if rule_ids else ""
        raise GraphDoctorError(f"unknown --fail-on condition {', '.join(map(repr, unknown))}"
                               f"{meant}; choose from {', '.join(known)}{also}")
    return names


# Conditions on the script's own run alone: a process it started may end as it was meant to
# (a test's child that is to fail), and the script says how that went.
SCRIPT_ONLY = frozenset({"incomplete"})
def _check_rule_ids(ids: list[str]) -> None:
    """A rule id no finding can have (no such rule) is a usage error naming the nearest."""
    if not ids:
        return
    from graphdoctor.diagnose.rules import ALL_RULES, no_such_rule  # loaded when one is named

    known = {INTERNAL_ERROR_ID, *(rule.id for rule in ALL_RULES)}
    for rule_id in ids:
        if rule_id not in known:
            raise GraphDoctorError(no_such_rule(rule_id))


def check(report: Report, conditions: Iterable[str]) -> list[Trip]:
    """The conditions that trip on this report, each with its reasons (at most 5 shown): on
    the script's run, and but for SCRIPT_ONLY on each process it started, named."""
    trips = []
    for name in conditions:
        reasons = _reasons(report, name)
        if name not in SCRIPT_ONLY:
            reasons += [f"in {children.label(child.trace.meta)}: {reason}"
                        for child in report.children for reason in _reasons(child, name)]
        if reasons:
            trips.append(Trip(name, _shown(reasons)))
    return trips


def _reasons(report: Report, name: str) -> list[str]:
    return _rule_findings(report, name) if _RULE_ID.fullmatch(name) else \
        CONDITIONS[name][1](report)


def _shown(reasons: list[str], most: int = 5) -> str:
    more = f" (and {len(reasons) - most} more)" if len(reasons) > most else ""
    return "; ".join(clean(r) for r in reasons[:most]) + more


def _rule_findings(report: Report, rule_id: str) -> list[str]:
    return [f"{f.id} {f.title}" for f in report.diagnosis.findings if f.id == rule_id]


# Conditions of `graphdoctor diff --fail-on`: each names regressions of one kind (see
# graphdoctor.report.diff), "regression" any of them, "verdict-changed" any change at all.
DIFF_CONDITIONS: dict[str, str] = {
    "regression": "anything got worse (any of the conditions below but verdict-changed)",
    "verdict-worse": "a verdict got worse (e.g. faster -> neutral, captured -> failed)",
    "speedup-drop": "a speedup fell by more than --tolerance",
    "new-finding": "a finding of severity warning or error appeared",
    "capture-failed": "more graph captures failed",
    "compile": "more graph breaks, CUDA-graph skips or re-recordings",
    "incomplete": "the new run no longer completes",
    "verdict-changed": "any verdict changed, appeared or went away, better or worse",
}


def describe_diff_conditions() -> str:
    return term_list(DIFF_CONDITIONS.items())


def check_diff(diff: ReportDiff, conditions: Iterable[str]) -> list[Trip]:
    """The diff conditions that trip, each with its reasons."""
    trips = []
    for name in conditions:
        if name == "verdict-changed":
            reasons = [clean(c.subject) for c in diff.verdicts if c.kind_changed]
        else:
            reasons = [r.reason for r in diff.regressions if name in ("regression", r.condition)]
        if reasons:
            trips.append(Trip(name, _shown(reasons)))
    return trips
