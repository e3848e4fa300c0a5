"""One capture as a story: it began, the user's code did these things (each with its line),
this one broke it, it ended. What the capture view lists under its timeline.

The story is read from the recorded events inside the capture's window, in time order:
syncs, stream operations, allocations (a run of them from one line counted as one step),
warnings, exceptions, collectives and compile events. The events a finding of this graph
cites as evidence are marked with the finding's severity, and the first one cited by an
error is the culprit. graphdoctor's own time inside the capture (its hooks, which the
phases show as ``graphdoctor``) is one line of its own, so it is never read as the user's.
Each step carries the text of its user's line: as the report kept it, or read from disk
where the report vouches for the file (:mod:`graphdoctor.report.disk_lines`), saying so.
Pure; no Textual import.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, replace

from graphdoctor.diagnose.findings import ERROR, SEVERITY_RANK
from graphdoctor.facts.locations import frame_text
from graphdoctor.facts.queries import culprit_frame, culprit_of
from graphdoctor.facts.stream_links import FORK, JOIN, StreamLink, stream_links
from graphdoctor.facts.stream_names import stream_label
from graphdoctor.report.disk_lines import ReportSources
from graphdoctor.trace import anatomy
from graphdoctor.trace.model import NONE, OWN, Frame, Graph, Trace
from graphdoctor.trace.names import ALLOC_ACTION
from graphdoctor.tui.events import EventRef, describe
from graphdoctor.tui.rank_view import capture_window
from graphdoctor.tui.report_view import ReportView
from graphdoctor.units import counted, format_bytes, format_duration

# The kinds whose events the story tells, each an event of the user's code with a stack.
TABLES = ("syncs", "stream_ops", "allocs", "collectives")
LISTS = ("exceptions", "warnings", "compile_events", "input_events")
BEGIN, END, STEP, OWN_TIME = "begin", "end", "step", "own"


@dataclass(frozen=True)
class StoryLine:
    """A step of the capture: when (ns after the capture began), what, the user's line,
    the event on the timeline, the severity of the finding citing it ('' if none), and the
    text of the user's line ('' where neither the report nor the disk gave it)."""

    offset: int
    what: str
    where: str = ""
    ref: EventRef | None = None
    severity: str = ""
    culprit: bool = False
    kind: str = STEP
    code: str = ""
    code_from_disk: bool = False  # read from disk, the report having not kept it


def own_time(trace: Trace, graph: Graph) -> tuple[int, int]:
    """graphdoctor's own time inside the capture, and in how many stretches."""
    spans = [p for p in trace.phases if p.phase == OWN and p.graph == graph.id]
    return sum(p.end - p.start for p in spans), len(spans)


def story(view: ReportView, rank: int, graph: Graph) -> list[StoryLine]:
    """Begin, the steps in time order (an allocation run folded), graphdoctor's own time,
    end; steps cited by a finding of this graph marked, the first error's the culprit."""
    trace, key = view.trace_of(rank), view.rank_key(rank)
    start, end = capture_window(graph, view.of(rank).run_end)
    told = _Told(trace, start, key, _cited(view, rank, graph.id),
                 {link.row: link for link in capture_links(trace, graph)}, view.of(rank).streams,
                 view.sources)
    steps = _with_culprit(_folded(sorted(_events(trace, start, end)), told))
    return [_begin(told, graph), *steps, *_own_line(trace, graph), _end(graph, end - start)]


@dataclass(frozen=True)
class _Told:
    """What every line of one story is told against."""

    trace: Trace
    start: int  # the capture's beginning, from which offsets count
    rank: int  # the rank refs carry (-1 in a single-process report)
    cited: dict[EventRef, str]
    links: dict[int, StreamLink]  # by stream_ops row
    streams: dict[int, str]  # their names
    sources: ReportSources  # the text of a line, kept or read from disk

    def step(self, t: int, what: str, frame: Frame | None, ref: EventRef) -> StoryLine:
        """The step of an event at ``t`` from ``frame`` (its user's line, if any)."""
        if frame is None:
            return StoryLine(t - self.start, what, "", ref, self.cited.get(ref, ""))
        excerpt = self.sources.excerpt(frame.file, frame.line, radius=0)
        return StoryLine(t - self.start, what, frame_text(frame, self.trace.meta.cwd), ref,
                         self.cited.get(ref, ""), code=excerpt.lines.get(frame.line, "").strip(),
                         code_from_disk=excerpt.from_disk)


def capture_links(trace: Trace, graph: Graph) -> list[StreamLink]:
    """The forks and joins between streams inside the capture."""
    data = trace.tables["stream_ops"]
    times = data.data["t"]
    end = graph.capture_end if graph.capture_end != NONE else times[-1] if times else 0
    rows = range(bisect_left(times, graph.capture_start), bisect_right(times, end))
    return stream_links(((row, data[row]) for row in rows), graph.stream)


def link_text(link: StreamLink, streams: dict[int, str]) -> str:
    """'s1 waits for s2: a fork, never joined back'."""
    waiting, waited_on = (stream_label(streams, s) for s in (link.waiting, link.waited_on))
    role = {FORK: ": a fork into the capture", JOIN: ": the join back"}.get(link.role, "")
    unjoined = ", never joined back" if link.role == FORK and not link.joined else ""
    return f"{waiting} waits for {waited_on}{role}{unjoined}"


def _events(trace: Trace, start: int, end: int) -> Iterator[tuple[int, str, int]]:
    """(time, kind, row) of every told event in [start, end]."""
    for kind in TABLES:
        times = trace.tables[kind].data["t"]
        for row in range(bisect_left(times, start), bisect_right(times, end)):
            yield times[row], kind, row
    for kind in LISTS:
        for row, item in enumerate(getattr(trace, kind)):
            if start <= item.t <= end:
                yield item.t, kind, row


def _cited(view: ReportView, rank: int, graph: int) -> dict[EventRef, str]:
    """The events the findings of this graph cite, with the worst severity citing each."""
    cited: dict[EventRef, str] = {}
    for finding in view.findings:
        if finding.graph != graph or not view.on_rank(finding, rank):
            continue
        for _, ref in view.evidence(finding):
            if ref is not None and _worse(finding.severity, cited.get(ref, "")):
                cited[ref] = finding.severity
    return cited


def _worse(severity: str, than: str) -> bool:
    return not than or SEVERITY_RANK.get(severity, 9) < SEVERITY_RANK.get(than, 9)


def _folded(events: list[tuple[int, str, int]], told: _Told) -> list[StoryLine]:
    """A line per event, but a run of uncited allocations from one line is one line."""
    lines: list[StoryLine] = []
    run: list[int] = []
    for t, kind, row in events:
        ref = EventRef(kind, row, told.rank)
        foldable = kind == "allocs" and ref not in told.cited
        if foldable and _same_site(told.trace, run, row):
            run.append(row)
            continue
        lines += _alloc_run(told, run)
        run = [row] if foldable else []
        if not foldable:
            lines.append(_line(told, ref, t))
    return lines + _alloc_run(told, run)


def _same_site(trace: Trace, run: list[int], row: int) -> bool:
    if not run:
        return True
    stacks = trace.tables["allocs"].data["stack"]
    return _where(trace, stacks[run[0]]) == _where(trace, stacks[row])


def _alloc_run(told: _Told, run: list[int]) -> list[StoryLine]:
    """One line for a run of allocator actions from one line of code."""
    if not run:
        return []
    data = told.trace.tables["allocs"].data
    allocated = [data["size"][row] for row in run if data["action"][row] == ALLOC_ACTION]
    what = f"{counted(len(allocated), 'allocation')} of {format_bytes(sum(allocated))}"
    if len(allocated) < len(run):  # frees, and the segments the pool reserved
        what += f" and {counted(len(run) - len(allocated), 'other allocator action')}"
    frame = culprit_frame(told.trace, data["stack"][run[0]])
    return [told.step(data["t"][run[0]], what, frame, EventRef("allocs", run[0], told.rank))]


def _line(told: _Told, ref: EventRef, t: int) -> StoryLine:
    """An event as the details pane titles it, at its user line."""
    details = describe(told.trace, ref, told.streams)
    link = told.links.get(ref.index) if ref.kind == "stream_ops" else None
    what = details.title if link is None else link_text(link, told.streams)
    return told.step(t, what, culprit_of(details.stack), ref)


def _where(trace: Trace, stack: int) -> str:
    frame = culprit_frame(trace, stack)
    return frame_text(frame, trace.meta.cwd) if frame is not None else ""


def _with_culprit(lines: list[StoryLine]) -> list[StoryLine]:
    """The first step an error cites is the culprit; without one, none is named."""
    for index, line in enumerate(lines):
        if line.severity == ERROR:
            return [*lines[:index], _culprit(line), *lines[index + 1:]]
    return lines


def _culprit(line: StoryLine) -> StoryLine:
    return replace(line, culprit=True)


def _begin(told: _Told, graph: Graph) -> StoryLine:
    """The capture's first line; a finding citing the graph marks no step of it."""
    step = told.step(told.start, f"capture of graph {graph.id} begins ({graph.api})",
                     culprit_frame(told.trace, graph.stack),
                     EventRef("graphs", _index(told.trace, graph), told.rank))
    return replace(step, kind=BEGIN, severity="")


def _end(graph: Graph, length: int) -> StoryLine:
    outcome = {"failed": "capture ends: failed", "captured": "capture ends: captured"}
    what = outcome.get(graph.status, "the recording ends with the capture still open")
    if graph.anatomy is not None:  # what the driver listed in it, where it could be asked
        what += f"; the graph holds {anatomy.summary(graph.anatomy)}"
    return StoryLine(length, what, kind=END)


def _own_line(trace: Trace, graph: Graph) -> list[StoryLine]:
    own, stretches = own_time(trace, graph)
    if not own:
        return []
    return [StoryLine(0, f"graphdoctor's own hooks: {format_duration(own)} in "
                         f"{counted(stretches, 'stretch', 'stretches')}, not your code's time",
                      kind=OWN_TIME)]


def _index(trace: Trace, graph: Graph) -> int:
    return next(i for i, g in enumerate(trace.graphs) if g is graph or g.id == graph.id)
