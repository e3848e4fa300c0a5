"""Run every rule over a trace and give each graph its verdict.

Each rule runs on its own: one that raises becomes an internal-error finding naming the
rule, and the rest of the diagnosis still stands (``strict=True`` lets it raise instead).
Identical findings (one rule, one title, one culprit line: the same skip logged at every
call) are folded into one that says how many there were and when the first and the last
happened.
"""

from __future__ import annotations

import dataclasses
import traceback
from collections.abc import Sequence

from graphdoctor.diagnose.findings import (
    ERROR,
    INTERNAL,
    INTERNAL_ERROR_ID,
    Diagnosis,
    Finding,
    LineReader,
    Rule,
    no_source,
)
from graphdoctor.diagnose.rules import ALL_RULES
from graphdoctor.diagnose.verdicts import verdicts
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import Trace


def diagnose(trace: Trace, rules: Sequence[Rule] = ALL_RULES, strict: bool = False,
             read_line: LineReader = no_source, baseline: Trace | None = None) -> Diagnosis:
    """Findings and verdicts for one trace; ``read_line`` reads the recorded files' lines
    where they are at hand (a stuck thread's line says what it waited on); ``baseline`` is
    the trace of the same script run with CUDA graphs off (``run --baseline``), whose eager
    calls measure the graphs this run never ran eagerly."""
    view = TraceView(trace, read_line=read_line, baseline=baseline)
    findings = _run_rules(view, rules, strict)
    return Diagnosis(verdicts=tuple(verdicts(view, findings)), findings=tuple(findings))


def diagnose_ranks(traces: dict[int, Trace], rules: Sequence[Rule] = ALL_RULES,
                   strict: bool = False, read_line: LineReader = no_source) -> Diagnosis:
    """One diagnosis for every rank of a distributed run: each rank's own findings and
    verdicts, tagged with its rank, and the rules that compare ranks, run once."""
    views = {rank: TraceView(traces[rank], rank, traces, read_line) for rank in sorted(traces)}
    findings = [f if f.rank >= 0 else dataclasses.replace(f, rank=rank)  # a rule comparing
                for rank, view in views.items()                           # ranks names its own
                for f in _run_rules(view, rules, strict)]
    findings.sort(key=lambda f: f.sort_key)
    all_verdicts = [dataclasses.replace(v, rank=rank, subject=f"rank {rank}: {v.subject}")
                    for rank, view in views.items()
                    for v in verdicts(view, [f for f in findings if f.rank == rank])]
    return Diagnosis(verdicts=tuple(all_verdicts), findings=tuple(findings))


def _run_rules(view: TraceView, rules: Sequence[Rule], strict: bool) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules:
        try:
            findings.extend(rule.check(view))
        except Exception as error:
            if strict:
                raise
            findings.append(_internal_error(rule, error))
    findings = fold(view, findings)
    findings.sort(key=lambda f: f.sort_key)
    return findings


def fold(view: TraceView, findings: list[Finding]) -> list[Finding]:
    """The findings, each set of identical ones as one (in the place of its first)."""
    same: dict[tuple[object, ...], list[Finding]] = {}
    for finding in findings:
        same.setdefault(_identity(finding), []).append(finding)
    return [_folded(view, group) for group in same.values()]


def _identity(f: Finding) -> tuple[object, ...]:
    where = (f.location.file, f.location.line) if f.location else None
    return (f.id, f.title, where, f.rank, f.graph, f.function)


def _folded(view: TraceView, group: list[Finding]) -> Finding:
    if len(group) == 1:
        return group[0]
    evidence = tuple(dict.fromkeys(e for f in group for e in f.evidence))
    times = [t for t in (view.time_of(e) for e in evidence) if t is not None and t >= 0]
    return dataclasses.replace(group[0], evidence=evidence, count=sum(f.count for f in group),
                               first_t=min(times, default=-1), last_t=max(times, default=-1))


def _internal_error(rule: Rule, error: Exception) -> Finding:
    where = traceback.extract_tb(error.__traceback__)[-1]
    return Finding(
        id=INTERNAL_ERROR_ID, name="internal-error", severity=ERROR, category=INTERNAL,
        title=f"rule {rule.name} failed: {type(error).__name__}: {error}",
        explanation=(f"graphdoctor's rule {rule.id} {rule.name} raised an exception at "
                     f"{where.filename}:{where.lineno}. The other findings are unaffected."),
        fix="Report this with the report file attached.",
    )
