"""The report: the trace, its diagnosis and the source lines they point at, in one object.

This is what ``graphdoctor run`` writes and every other command reads. The JSON layout is
versioned by ``SCHEMA_VERSION`` (major.minor) and described by ``report.schema.json`` in
this package: a minor bump only adds optional fields, which older readers ignore; a reader
refuses a newer major version with a clear message (see :mod:`graphdoctor.report.io`).
The ``summary`` block is derived from the trace as the report is written, for people and
scripts that read the JSON without graphdoctor; readers rebuild everything from the trace.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from graphdoctor.diagnose.findings import (
    Diagnosis,
    Evidence,
    Finding,
    LineReader,
    Location,
    Verdict,
    no_source,
    severity_counts,
)
from graphdoctor.facts import tallies
from graphdoctor.report import children, finding_groups, verdict_groups
from graphdoctor.trace import codec, endings
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import EAGER_CALL, KEPT_AS_WRITTEN, SWITCHED_OFF
from graphdoctor.version import __version__

FORMAT = "graphdoctor-report"
# 1.15: host state frozen into a graph besides numbers (tables.frozen_values.use), a
# graph's outputs kept across replays (tables.kept_outputs), calls a native program made
# during a capture that ran outside it (tables.uncaptured_calls), the inputs of a compiled
# call that failed inside torch (tables.call_inputs); where graphs that share a pool were
# replayed (tables.replay_sites); the processes the script started, each a report of its
# own (children), and each trace's process (meta.pid, meta.parent_pid, meta.command);
# findings alike on several ranks, grouped as the rendered outputs show them
# (summary.finding_groups); eager kernels, as CUPTI saw a native program's run
# (tables.kernels)
# 1.14: the wall clock at a trace's time 0 (meta.clock_unix_ns), which lines a job's ranks up
# 1.13: a graph's loop pace over back-to-back replays (graphs[].paces, trace.loop_pace)
# 1.12: where a freed captured input was let go (input_events[].dropped), a measurement's
# smallest and largest sample (low_us, high_us); 1.11: host values frozen into a graph
# (tables.frozen_values); 1.10: processes the script
# left running (tables.left_running); 1.9: the digests of the
# recording's source files (meta.sources), why a recording stopped early; 1.8: graph
# instantiations (seen through CUPTI, --cupti); 1.7: a graph's anatomy (its nodes, kernels
# and shape, read from the driver); 1.6: the trace's guarded tensors (what a
# recompile's failed guard or a re-recording named, as the recorder found it); 1.5: the
# summary's verdict groups (many graphs of one line read as one); 1.4: a finding's count,
# first_t and last_t (identical findings folded into one); 1.3: a graph's eager basis and
# step; 1.2: the baseline run
SCHEMA_VERSION = "1.15"
CONTEXT_LINES = 4


@dataclass(frozen=True)
class BaselineRun:
    """The second run of ``graphdoctor run --baseline``: the same script with CUDA graphs
    off. The verdicts whose eager figures it gave say so (``eager_source`` "baseline run")."""

    outcome: str  # how it ended, in words
    complete: bool
    exit_code: int | None
    wall_ns: int
    eager_calls: int  # eager calls of followed functions it timed
    switched_off: tuple[str, ...] = ()  # what it ran without CUDA graphs
    kept_as_written: tuple[str, ...] = ()  # what it could not switch off

    @classmethod
    def of(cls, trace: Trace) -> BaselineRun:
        notes = trace.meta.not_recorded
        return cls(endings.outcome(trace), trace.status.complete, trace.status.exit_code,
                   trace.status.wall_ns,
                   sum(1 for c in trace.tables["calls"] if c.mode == EAGER_CALL),
                   tuple(n.why for n in notes if n.what == SWITCHED_OFF),
                   tuple(n.why for n in notes if n.what == KEPT_AS_WRITTEN))


@dataclass
class Report:
    trace: Trace
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    sources: dict[str, dict[int, str]] = field(default_factory=dict)
    tool_version: str = __version__
    created_at: str = ""
    schema_version: str = SCHEMA_VERSION
    redacted: bool = False
    # a distributed run: the traces of the ranks other than the main one (``trace``, the
    # lowest rank); findings, verdicts and evidence say which rank they belong to
    other_ranks: dict[int, Trace] = field(default_factory=dict)
    baseline: BaselineRun | None = None  # the run with CUDA graphs off (run --baseline)
    # the Python processes the script started that were recorded, each a report of its own
    # (graphdoctor.report.children), in the order they started
    children: list[Report] = field(default_factory=list)

    def source_line(self, file: str, line: int) -> str:
        return self.sources.get(file, {}).get(line, "")

    @property
    def ranks(self) -> list[int]:
        """Every rank in the report; [] for a single-process run."""
        if not self.other_ranks and self.trace.meta.world_size <= 1:
            return []
        return sorted({max(self.trace.meta.rank, 0), *self.other_ranks})

    def trace_of(self, rank: int) -> Trace:
        """The trace a finding, verdict or evidence of ``rank`` (-1: the main one) refers to."""
        return self.other_ranks.get(rank, self.trace)


def build(trace: Trace, diagnosis: Diagnosis, read_line: LineReader = no_source,
          baseline: Trace | None = None) -> Report:
    """A report whose source lines are read now, while the files are at hand.

    ``read_line(file, number)`` returns a line with its newline, or "" (linecache's
    contract): :mod:`graphdoctor.report.source_lines` decides what may be read; tests pass
    one that finds a recording's scripts in this checkout. By default nothing is read.
    ``baseline`` is the run with CUDA graphs off that the diagnosis measured eager from."""
    report = build_ranks({max(trace.meta.rank, 0): trace}, diagnosis, read_line)
    report.baseline = BaselineRun.of(baseline) if baseline is not None else None
    return report


def build_ranks(traces: dict[int, Trace], diagnosis: Diagnosis,
                read_line: LineReader = no_source) -> Report:
    """A report of one or more ranks' traces; the lowest rank's is the main trace."""
    main, *others = sorted(traces)
    report = Report(traces[main], diagnosis, created_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    other_ranks={r: traces[r] for r in others})
    for trace in traces.values():
        for file, line in _cited_lines(trace, diagnosis):
            _keep_source(report.sources, file, line, read_line)
    report.diagnosis = _with_code(diagnosis, report)
    return report


def _with_code(diagnosis: Diagnosis, report: Report) -> Diagnosis:
    """Findings whose location carries the text of its line."""
    findings = tuple(
        dataclasses.replace(f, location=dataclasses.replace(
            f.location, code=report.source_line(f.location.file, f.location.line).strip()))
        if f.location and not f.location.code else f
        for f in diagnosis.findings)
    return dataclasses.replace(diagnosis, findings=findings)


def _cited_lines(trace: Trace, diagnosis: Diagnosis) -> list[tuple[str, int]]:
    cited = [(f.location.file, f.location.line) for f in diagnosis.findings if f.location]
    for graph in trace.graphs:
        cited += [(fr.file, fr.line) for fr in trace.stack(graph.stack) if fr.kind == "user"]
    for exc in trace.exceptions:
        for link in exc.chain:
            cited += [(fr.file, fr.line) for fr in trace.stack(link.stack) if fr.kind == "user"]
    return cited


def _keep_source(sources: dict[str, dict[int, str]], file: str, line: int,
                 read_line: LineReader) -> None:
    lines = sources.setdefault(file, {})
    for number in range(max(1, line - CONTEXT_LINES), line + CONTEXT_LINES + 1):
        if number not in lines:
            text = read_line(file, number)
            if text:
                lines[number] = text.rstrip("\n")
    if not lines:
        del sources[file]


def to_json(report: Report) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,  # what this writes, whatever version it read
        "tool": {"name": "graphdoctor", "version": report.tool_version},
        "created_at": report.created_at,
        "redacted": report.redacted,
        "summary": _summary(report),
        "diagnosis": _plain(report.diagnosis),
        "sources": _sources(report),
        "trace": codec.encode(report.trace),
        **({"ranks": [{"rank": rank, "trace": codec.encode(trace)}
                      for rank, trace in sorted(report.other_ranks.items())]}
           if report.other_ranks else {}),
        **({"baseline": _plain(report.baseline)} if report.baseline else {}),
        **({"children": [_child(child) for child in report.children]}
           if report.children else {}),
    }


def _child(child: Report) -> dict[str, Any]:
    """A process the script started: its label, then its report's own parts."""
    return {"label": children.label(child.trace.meta), "summary": _summary(child),
            "diagnosis": _plain(child.diagnosis), "sources": _sources(child),
            "trace": codec.encode(child.trace)}


def _sources(report: Report) -> dict[str, dict[str, str]]:
    return {file: {str(n): text for n, text in sorted(lines.items())}
            for file, lines in report.sources.items()}


def _summary(report: Report) -> dict[str, Any]:
    trace, status = report.trace, report.trace.status
    return {
        "outcome": {"complete": status.complete, "reason": status.reason,
                    "exit_code": status.exit_code, "wall_ns": status.wall_ns,
                    "description": endings.outcome(trace)},
        "phases": {p.phase: {"spans": p.spans, "total_ns": p.total_ns}
                   for p in tallies.phase_totals(trace)},
        "events": tallies.event_counts(trace),
        "graphs": tallies.graph_status_counts(trace),
        "verdicts": dict(Counter(v.kind for v in report.diagnosis.verdicts)),
        "verdict_groups": verdict_groups.as_json(report),
        "findings": severity_counts(report.diagnosis.findings),
        "finding_groups": finding_groups.as_json(report.diagnosis.findings),
    }


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def from_json(data: dict[str, Any]) -> Report:
    """The report in ``data``; raises ValueError or KeyError if a part is malformed."""
    return Report(
        trace=codec.decode(data["trace"]),
        diagnosis=_diagnosis(data),
        sources=_read_sources(data),
        tool_version=str((data.get("tool") or {}).get("version", "")),
        created_at=str(data.get("created_at", "")),
        schema_version=str(data.get("schema_version", SCHEMA_VERSION)),
        redacted=data.get("redacted") is True,
        other_ranks={int(item["rank"]): codec.decode(item["trace"])
                     for item in data.get("ranks") or []},
        baseline=_baseline(data.get("baseline")),
        children=[Report(trace=codec.decode(child["trace"]), diagnosis=_diagnosis(child),
                         sources=_read_sources(child)) for child in data.get("children") or []],
    )


def _diagnosis(data: dict[str, Any]) -> Diagnosis:
    diagnosis = data.get("diagnosis") or {}
    return Diagnosis(verdicts=tuple(_verdict(v) for v in diagnosis.get("verdicts", [])),
                     findings=tuple(_finding(f) for f in diagnosis.get("findings", [])))


def _read_sources(data: dict[str, Any]) -> dict[str, dict[int, str]]:
    return {str(file): {int(n): str(text) for n, text in lines.items()}
            for file, lines in (data.get("sources") or {}).items()}


def _baseline(data: dict[str, Any] | None) -> BaselineRun | None:
    if not data:
        return None
    fields = _known(BaselineRun, data)
    for name in ("switched_off", "kept_as_written"):
        fields[name] = tuple(fields.get(name, ()))
    return BaselineRun(**fields)


def _known(cls: Any, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _verdict(data: dict[str, Any]) -> Verdict:
    fields = _known(Verdict, data)
    fields["findings"] = tuple(fields.get("findings", ()))
    return Verdict(**fields)


def _finding(data: dict[str, Any]) -> Finding:
    fields = _known(Finding, data)
    fields["evidence"] = tuple(Evidence(**_known(Evidence, e)) for e in fields.get("evidence", ()))
    location = fields.get("location")
    fields["location"] = Location(**_known(Location, location)) if location else None
    return Finding(**fields)
