"""Short lines that say how a run went, for the end of ``graphdoctor run``."""

from __future__ import annotations

from graphdoctor import units
from graphdoctor.clean_text import clean
from graphdoctor.diagnose.findings import ERROR, Finding, Verdict
from graphdoctor.report import children, verdict_groups
from graphdoctor.report.document import Report
from graphdoctor.trace import endings
from graphdoctor.trace.endings import TIMED_OUT
from graphdoctor.trace.model import Meta
from graphdoctor.trace.names import CUDA_STATE_UNREAD

PREFIX = "graphdoctor: "


def outcome_lines(report: Report) -> list[str]:
    """How the run went: its end where it did not end by itself, its verdicts, the errors
    no verdict speaks of; then the same of each process the script started, named."""
    status = report.trace.status
    lines = []
    if not status.complete and status.message:
        lines.append(f"graphdoctor: {status.message} (last phase: {status.last_phase})")
    lines += _cuda_lines(report.trace.meta)
    return lines + _diagnosis_lines(report) + _children_lines(report)


def _diagnosis_lines(report: Report) -> list[str]:
    status, lines = report.trace.status, []
    verdicts = report.diagnosis.verdicts
    if status.reason != TIMED_OUT:  # an error no verdict speaks of (a run spent recompiling)
        lines += [line for finding in report.diagnosis.findings if finding.severity == ERROR
                  and not any(_cites(v, finding) for v in verdicts)
                  for line in _finding_lines(finding)]
    lines += [f"graphdoctor: {row.verdict.subject}: {row.verdict.summary}"  # a group: one line
              for row in verdict_groups.rows(report)]
    if status.reason == TIMED_OUT:  # a hung run: say where it was stuck, not just that it was
        lines += [line for finding in report.diagnosis.findings if finding.severity == ERROR
                  for line in _finding_lines(finding)]
    return lines


def _children_lines(report: Report) -> list[str]:
    """Each child with something to say: how it ended, where not by itself with code 0,
    and its verdicts and errors, each line naming it; then how many were recorded."""
    lines = []
    for child in report.children:
        status, named = child.trace.status, children.label(child.trace.meta)
        if not status.complete or status.exit_code not in (0, None):
            lines.append(f"graphdoctor: {named} {endings.outcome(child.trace)}")
        lines += [line.replace(PREFIX, f"{PREFIX}in {named}: ", 1) if line.startswith(PREFIX)
                  else line for line in _diagnosis_lines(child)]
    if report.children:
        started = units.counted(len(report.children), "process", "processes")
        lines.append(f"{PREFIX}recorded too: {started} the script started (each in the report; "
                     "--no-children leaves them out)")
    return lines


def _cuda_lines(meta: Meta) -> list[str]:
    """What the run had of CUDA, where it had none or graphdoctor could not read it (the run
    died first: then what it recorded of CUDA, never that there was none)."""
    unread = [note for note in meta.not_recorded if note.what == CUDA_STATE_UNREAD]
    if unread:
        return [f"graphdoctor: {note.what}: {note.why}" for note in unread]
    if meta.torch and not meta.cuda_available:  # no torch: nothing was recorded, as noted
        return ["graphdoctor: no CUDA device was found; only compile events were recorded"]
    return []


def _cites(verdict: Verdict, finding: Finding) -> bool:
    return f"{finding.id} {finding.name}" in verdict.findings and verdict.rank == finding.rank


def _finding_lines(finding: Finding) -> list[str]:
    rank = f" (rank {finding.rank})" if finding.rank >= 0 else ""
    lines = [f"graphdoctor: {finding.id} {finding.name}{rank}: {clean(finding.title)}"]
    if finding.location is not None and finding.location.code:
        lines.append(f"  {finding.location.line:>5} | {clean(finding.location.code)}")
    return lines
