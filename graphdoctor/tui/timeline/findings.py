"""Findings on the timeline. Each piece of a finding's evidence that the trace holds is a
:class:`Problem`: a moment of the run. They are drawn as markers on a lane of their own (one
per rank, under its phases), visited in time order by the keys for the next and previous
problem, and framed together when a finding is shown from the Findings screen.

A marker is an event of the source :data:`FINDINGS` whose row is its place among its rank's
problems, so the lanes, the keys and the details pane treat it as any other event. Pure;
no Textual import.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from graphdoctor.diagnose.findings import INFO, Finding
from graphdoctor.tui.events import EventDetails, EventRef
from graphdoctor.tui.palette import FINDING_MARKS, severity_badge
from graphdoctor.tui.timeline.lanes import Lane
from graphdoctor.tui.timeline.series import Series

FINDINGS = "findings"
"""The source of the markers' series and the key of their lane."""

Span = tuple[int, int]


@dataclass(frozen=True)
class Problem:
    """One piece of a finding's evidence, placed in time: number ``number`` of the
    ``of`` pieces of finding ``finding`` (an index into the view's findings) that the
    timeline can show."""

    start: int
    end: int
    ref: EventRef
    finding: int
    number: int
    of: int


def place_evidence(evidence: Sequence[Sequence[EventRef | None]],
                   span_of: Callable[[EventRef], Span | None]) -> list[Problem]:
    """The problems of every finding (``evidence[i]``: finding i's evidence events, None
    where the trace lacks one), in time order."""
    problems = []
    for finding, refs in enumerate(evidence):
        placed = [(ref, span) for ref in refs if ref is not None
                  and (span := span_of(ref)) is not None]
        problems += [Problem(span[0], span[1], ref, finding, number, len(placed))
                     for number, (ref, span) in enumerate(placed, 1)]
    return sorted(problems, key=lambda p: (p.start, p.finding, p.number))


def of_rank(problems: Sequence[Problem], rank: int) -> list[Problem]:
    """The problems in ``rank``'s trace: row i of that rank's markers is the i-th."""
    return [problem for problem in problems if problem.ref.rank == rank]


# -- the lane -----------------------------------------------------------------------------------
def findings_lane(problems: Sequence[Problem], severities: Sequence[str]) -> Lane:
    """A marker at each of one rank's ``problems``, in the glyph of its finding's severity
    (``severities[i]``: finding i's)."""
    series = []
    for severity, mark in FINDING_MARKS.items():
        rows = [row for row, problem in enumerate(problems)
                if _known(severities[problem.finding]) == severity]
        series.append(Series(FINDINGS, f"{severity} finding", mark,
                             [problems[row].start for row in rows], rows))
    glyphs = ", ".join(f"{mark.glyph} {severity}" for severity, mark in FINDING_MARKS.items())
    return Lane(FINDINGS, "Findings", [s for s in series if len(s)],
                about=f"where a finding's evidence points: {glyphs}")


def _known(severity: str) -> str:
    return severity if severity in FINDING_MARKS else INFO


def under_phases(lanes: list[Lane], findings: Lane) -> list[Lane]:
    """``lanes`` with ``findings`` right under the phases (the first lane), if it has any."""
    return [*lanes[:1], findings, *lanes[1:]] if findings.series else lanes


# -- what the details pane says --------------------------------------------------------------
def marker_details(marker: EventRef, problem: Problem, finding: Finding,
                   evidence: EventDetails) -> EventDetails:
    """A marker's details: the finding, then the evidence event's own details."""
    title = f"{finding.id} {severity_badge(finding.severity)}: {finding.title}"
    about = ("evidence", f"{evidence.title} ({problem.number} of {problem.of})")
    return dataclasses.replace(evidence, ref=marker, title=title,
                               fields=(about, *evidence.fields))


def evidence_lines(problems: Sequence[Problem], ref: EventRef,
                   findings: Sequence[Finding]) -> list[str]:
    """Which findings ``ref`` is evidence of, a line each."""
    return [f"evidence of {findings[p.finding].id} {findings[p.finding].title} "
            f"({p.number} of {p.of})" for p in problems if p.ref == ref]


# -- moving from problem to problem ------------------------------------------------------------
def next_problem(problems: Sequence[Problem], cursor: int, selected: EventRef | None,
                 forward: bool) -> Problem | None:
    """The first problem after the cursor (or the last before it), each event once. One at
    the cursor counts as after (before) it when it comes after (before) the selected one."""
    stops = _each_event_once(problems)
    at = next((i for i, p in enumerate(stops) if p.ref == selected and p.start == cursor),
              len(stops) if forward else -1)
    now = (cursor, at)  # stops compare by (time, place in time order)
    if forward:
        return next((p for i, p in enumerate(stops) if (p.start, i) > now), None)
    return next((p for i, p in reversed(list(enumerate(stops))) if (p.start, i) < now), None)


def _each_event_once(problems: Sequence[Problem]) -> list[Problem]:
    seen: set[EventRef] = set()
    stops = []
    for problem in problems:
        if problem.ref not in seen:
            seen.add(problem.ref)
            stops.append(problem)
    return stops


def finding_span(problems: Sequence[Problem], finding: int, rank: int) -> Span | None:
    """From the first to the last moment of ``finding``'s evidence in ``rank``'s trace."""
    mine = [p for p in problems if p.finding == finding and p.ref.rank == rank]
    if not mine:
        return None
    return min(p.start for p in mine), max(p.end for p in mine)
