"""What diagnosis produces: findings (one problem, with its evidence and fix) and a verdict
for each graph and compiled function."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphdoctor.diagnose.view import TraceView


ERROR = "error"


WARNING = "warning"


INFO = "info"


SEVERITY_RANK = {ERROR: 0, WARNING: 1, INFO: 2}


# What a finding says about its graph.


FAILED = "failed"


NEUTRAL = "neutral"


UNSAFE = "unsafe"


WASTEFUL = "wasteful"


SKIPPED = "skipped"


INTERNAL = "internal"


INTERNAL_ERROR_ID = "GD000"  # the finding of a rule that raised (it names the rule)


# A verdict's kind: what graphs did for a graph or a compiled function (FAILED, NEUTRAL,


# UNSAFE and SKIPPED above name verdicts too).


FASTER = "faster"


SLOWER = "slower"


UNMEASURED = "unmeasured"


RERECORDED = "rerecorded"


NOT_REPLAYED = "not-replayed"


WITHOUT_GRAPHS = "graphs-off"  # ran without CUDA graphs, in a run that switched them off


@dataclass(frozen=True)
class Evidence:
    """A pointer into the trace: ``kind`` names a table or list, ``index`` a row in it."""

    kind: str
    index: int
    note: str = ""
    rank: int = -1  # in a multi-rank report, the rank whose trace the index points into


@dataclass(frozen=True)
class Location:
    """Where in the user's code: the file, the line, and the line's text."""

    file: str
    line: int
    function: str = ""
    code: str = ""


@dataclass(frozen=True)
class Finding:
    id: str  # the rule's id, GD###
    name: str  # the rule's kebab-case name
    severity: str
    category: str  # failed | neutral | unsafe | wasteful | skipped | internal
    title: str
    explanation: str
    fix: str
    evidence: tuple[Evidence, ...] = ()
    location: Location | None = None
    graph: int = -1
    function: int = -1
    measurements: dict[str, Any] = field(default_factory=dict)
    rank: int = -1  # the rank whose trace it comes from; -1 in a single-process run
    # identical findings (same rule, title and culprit line) are folded into one: how many
    # there were, and when the first and the last of them happened (-1: not folded)
    count: int = 1
    first_t: int = -1
    last_t: int = -1

    @property
    def sort_key(self) -> tuple[int, str, int, int]:
        return (SEVERITY_RANK.get(self.severity, 3), self.id, self.rank, self.graph)


@dataclass(frozen=True)
class Verdict:
    """The answer for one graph or one compiled function."""

    subject: str
    # faster | neutral | slower | failed | skipped | rerecorded | unsafe | unmeasured
    # | not-replayed | graphs-off
    kind: str
    summary: str
    graph: int = -1
    function: int = -1
    speedup: float | None = None
    measurements: dict[str, Any] = field(default_factory=dict)
    findings: tuple[str, ...] = ()
    rank: int = -1


@dataclass(frozen=True)
class Diagnosis:
    verdicts: tuple[Verdict, ...] = ()
    findings: tuple[Finding, ...] = ()


CheckFn = Callable[["TraceView"], Iterable[Finding]]


# A line of a source file, with its newline, or "" (linecache.getline's contract).
LineReader = Callable[[str, int], str]


def no_source(file: str, line: int) -> str:
    """The reader for a trace whose files are not at hand."""
    return ""


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    check: CheckFn
    explanation: str  # the rule module's docstring: what graphdoctor prints for ``explain``
    severity: str  # of its findings, unless a case calls for another
    category: str

    def finding(self, title: str, explanation: str, fix: str, *, severity: str = "",
                category: str = "", evidence: tuple[Evidence, ...] = (),
                location: Location | None = None, graph: int = -1, function: int = -1,
                measurements: dict[str, Any] | None = None, rank: int = -1) -> Finding:
        """A finding of this rule, under its id and name, with its severity and category
        unless this one differs."""
        return Finding(self.id, self.name, severity or self.severity,
                       category or self.category, title, explanation, fix, evidence,
                       location, graph, function, measurements or {}, rank)

    @property
    def title(self) -> str:
        return self.explanation.strip().splitlines()[0] if self.explanation.strip() else self.name


# How bad a verdict is, worst highest; a kind this version does not know ranks as unmeasured.
VERDICT_RANK = {FASTER: 0, UNMEASURED: 1, NEUTRAL: 2, RERECORDED: 3, SKIPPED: 3, SLOWER: 4,
                UNSAFE: 5, FAILED: 6}


def verdict_rank(verdict: Verdict) -> int:
    return VERDICT_RANK.get(verdict.kind, VERDICT_RANK[UNMEASURED])


def severity_counts(findings: Iterable[Finding]) -> dict[str, int]:
    counts = Counter(f.severity for f in findings)
    return {s: counts[s] for s in sorted(counts, key=lambda s: (SEVERITY_RANK.get(s, 9), s))}
