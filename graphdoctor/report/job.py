"""One report of a job from its ranks' files: per-rank reports or spools, from one host or many.

Under a launcher every rank runs graphdoctor and writes its own report
(``torchrun ... -m graphdoctor run -o job.json train.py`` writes ``job.rank0.json``,
``job.rank1.json``... on each node). Given together, they become one report, diagnosed
again as a whole, so the rules that compare ranks (diverged collectives, a hang, one rank's
failed capture) see the whole job: ranks in global-rank order, each rank's times set on
one axis by :mod:`graphdoctor.facts.job_clock`.

Files that are not one job are refused, never combined: a rank given twice, ranks of
different world sizes, scripts or launches (torchrun's run id, a scheduler's job id, the
rendezvous address), or ranks that did not run at the same time. The source lines of the
combined report are those its files kept: nothing is read from the reader's disk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphdoctor.diagnose import diagnose_ranks
from graphdoctor.errors import ReportError
from graphdoctor.report.document import Report, build_ranks
from graphdoctor.report.redact import ENV_VALUE
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import RENDEZVOUS_ENV, RUN_ID_ENV, SCHEDULER_JOB_ENV

# Ranks of one job run at once; hosts' clocks may disagree by this much and still count.
CLOCK_SLACK_NS = 60 * 10**9


@dataclass(frozen=True)
class RankFile:
    """One rank's trace and the file it came from."""

    rank: int
    trace: Trace
    path: str


def ranks_of(report: Report, path: str) -> list[RankFile]:
    """The ranks a report holds; ReportError for one of a run that was not distributed."""
    if not report.ranks:
        raise ReportError(f"{path}: not a rank of a distributed run (no RANK or WORLD_SIZE "
                          "was set): there is nothing to combine it with")
    return [RankFile(rank, report.trace_of(rank), path) for rank in report.ranks]


def combine(reports: Sequence[tuple[Report, str]]) -> Report:
    """One report of the job whose ranks ``reports`` ((report, its file's name)) hold."""
    files = [f for report, path in reports for f in ranks_of(report, path)]
    _one_each(files)
    _one_job(files)
    traces = {f.rank: f.trace for f in sorted(files, key=lambda f: f.rank)}
    read = LineFromReports(_kept_lines([report for report, _ in reports]))
    combined = build_ranks(traces, diagnose_ranks(traces, read_line=read), read)
    combined.redacted = any(report.redacted for report, _ in reports)
    return combined


def _one_each(files: list[RankFile]) -> None:
    seen: dict[int, RankFile] = {}
    for file in files:
        if file.rank in seen:
            raise ReportError(f"rank {file.rank} is in both {seen[file.rank].path} and "
                              f"{file.path}: give each rank once")
        seen[file.rank] = file


def _one_job(files: list[RankFile]) -> None:
    """ReportError naming the first two files that are not of one job, and how they differ."""
    first = files[0]
    for other in files[1:]:
        for what, mine, theirs in _differences(first.trace, other.trace):
            raise ReportError(f"{first.path} (rank {first.rank}) and {other.path} (rank "
                              f"{other.rank}) are not one job: {what} differ ({mine} and "
                              f"{theirs})")


def _differences(a: Trace, b: Trace) -> list[tuple[str, str, str]]:
    differ = [(what, x, y) for what, x, y in (
        ("world sizes", str(a.meta.world_size), str(b.meta.world_size)),
        ("scripts", a.meta.target, b.meta.target),
        *((f"{name} values", _env(a, name), _env(b, name))
          for name in (RUN_ID_ENV, SCHEDULER_JOB_ENV, *RENDEZVOUS_ENV)))
        if x and y and x != y]
    if not differ and not _overlap(a, b):
        differ.append(("times", _span(a), _span(b)))
    return differ


def _env(trace: Trace, name: str) -> str:
    """The variable's value as recorded; "" where it was not, or redacted."""
    value = dict(trace.meta.env).get(name, "")
    return "" if value == ENV_VALUE else value


def _overlap(a: Trace, b: Trace) -> bool:
    """Whether two ranks could have run at once (always, where a clock was not recorded)."""
    if not a.meta.clock_unix_ns or not b.meta.clock_unix_ns:
        return True
    a0, b0 = a.meta.clock_unix_ns, b.meta.clock_unix_ns
    return (a0 <= b0 + b.status.wall_ns + CLOCK_SLACK_NS
            and b0 <= a0 + a.status.wall_ns + CLOCK_SLACK_NS)


def _span(trace: Trace) -> str:
    return f"started {trace.meta.started_at or 'at an unknown time'}"


def _kept_lines(reports: list[Report]) -> dict[str, dict[int, str]]:
    """The source lines every report kept, together."""
    sources: dict[str, dict[int, str]] = {}
    for report in reports:
        for file, lines in report.sources.items():
            sources.setdefault(file, {}).update(lines)
    return sources


class LineFromReports:
    """A line reader over what the reports kept (``linecache``'s contract: "" if absent)."""

    def __init__(self, sources: dict[str, dict[int, str]]):
        self.sources = sources

    def __call__(self, file: str, line: int) -> str:
        text = self.sources.get(file, {}).get(line)
        return "" if text is None else text + "\n"

