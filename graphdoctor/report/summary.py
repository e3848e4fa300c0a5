"""Short lines that say how a run went, for the end of ``graphdoctor run``."""

from __future__ import annotations

from graphdoctor.report.document import Report


def outcome_lines(report: Report) -> list[str]:
    status = report.trace.status
    lines = []
    if not status.complete and status.message:
        lines.append(f"graphdoctor: {status.message} (last phase: {status.last_phase})")
    if not report.trace.meta.cuda_available:
        lines.append("graphdoctor: no CUDA device was found; only compile events were recorded")
    lines += [f"graphdoctor: {v.subject}: {v.summary}" for v in report.diagnosis.verdicts]
    return lines
