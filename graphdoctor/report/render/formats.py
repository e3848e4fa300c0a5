"""What an output format is, and the formats each command offers: every ``--format`` choice
list, and every dispatch on it, reads these registries.

A format has a name (what ``-f`` takes), the suffix of a file of it, a renderer (what it is
drawn from, and the options a command gives, to the content), and two facts about where it
may go: whether it is printed where no file is named (a summary is; a Chrome trace is written
to a file named after the report, as a profiler's trace is), and whether it is binary (never
printed on a terminal). Each registry holds the formats of one kind of result, the first its
default. Adding a format is its renderer's module and one entry here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from graphdoctor.files.json_text import COMPACT, PRETTY, PRETTY_NARROW, json_bytes

if TYPE_CHECKING:
    from graphdoctor.report.compare import CompareResult
    from graphdoctor.report.diff import ReportDiff
    from graphdoctor.report.document import Report

Subject = TypeVar("Subject")
LARGE_TRACE_BYTES = 300 * 2**20  # Perfetto's UI struggles well before 1 GB (google/perfetto#99)


@dataclass(frozen=True)
class Options:
    """What a command asks of a renderer; each format reads the fields it needs."""

    width: int = 100
    color: bool = False
    phases: tuple[str, ...] = ()  # export: only these phases' moments
    graph: int | None = None  # export -f dot: the graph to draw
    rank: int = -1  # export -f dot, in a multi-rank report: the rank of that graph


@dataclass(frozen=True)
class Rendered:
    """The content, and the lines to say once it is written to a file (given its name)."""

    content: str | bytes
    said: Callable[[str], list[str]] = field(default=lambda where: [])


def _no_problem(options: Options) -> str | None:
    return None


@dataclass(frozen=True)
class Format(Generic[Subject]):
    name: str
    suffix: str  # of a file of it; ``{graph}`` and the other Options fields filled in
    render: Callable[[Subject, Options], Rendered]
    to_terminal: bool = True  # printed where no file is named; else written to a file
    binary: bool = False  # never printed on a terminal
    read_by_programs: bool = False  # on stdout, nothing else may share it (the script's prints)
    problem: Callable[[Options], str | None] = _no_problem  # a usage error in the options

    def file_suffix(self, options: Options) -> str:
        return self.suffix.format_map(dataclasses.asdict(options))


class Formats(Generic[Subject]):
    """The formats of one kind of result, by name; the first is the default."""

    def __init__(self, *formats: Format[Subject]):
        self._by_name = {one.name: one for one in formats}
        self.default = formats[0]

    def names(self) -> list[str]:
        return list(self._by_name)

    def __getitem__(self, name: str) -> Format[Subject]:
        return self._by_name[name]

    def __iter__(self) -> Iterator[Format[Subject]]:
        return iter(self._by_name.values())


# -- the report ---------------------------------------------------------------------------------
def _report_text(report: Report, options: Options) -> Rendered:
    from graphdoctor.report.render.text import render_text

    return Rendered(render_text(report, width=options.width, color=options.color))


def _report_markdown(report: Report, options: Options) -> Rendered:
    from graphdoctor.report.render.markdown import render_markdown

    return Rendered(render_markdown(report))


def _report_json(report: Report, options: Options) -> Rendered:
    from graphdoctor.report.document import to_json

    return Rendered(json_bytes(to_json(report), COMPACT, end="\n"))


TEXT, MARKDOWN, JSON = "text", "markdown", "json"
REPORT_FORMATS: Formats[Report] = Formats(
    Format(TEXT, ".txt", _report_text),
    Format(MARKDOWN, ".md", _report_markdown),
    Format(JSON, ".json", _report_json, read_by_programs=True),
)


# -- the report, in another tool's format (export) --------------------------------------------
def _chrome_trace(report: Report, options: Options) -> Rendered:
    from graphdoctor.report.render.chrome_trace import to_chrome_trace

    trace = to_chrome_trace(report, options.phases)
    data = json_bytes(trace, COMPACT)
    return Rendered(data, lambda where: _trace_said(where, len(trace["traceEvents"]), len(data)))


def _trace_said(where: str, events: int, size: int) -> list[str]:
    said = [f"graphdoctor: wrote {events:,} trace events to {where}; "
            "open it at https://ui.perfetto.dev or chrome://tracing"]
    if size > LARGE_TRACE_BYTES:
        said.append(f"graphdoctor: the trace is {size / 2**20:.0f} MiB of JSON, more than "
                    "Perfetto's UI opens comfortably; try --phase replay (or capture) to "
                    "export less")
    return said


def _dot(report: Report, options: Options) -> Rendered:
    from graphdoctor.report.render.graph_dot import to_dot

    graph = options.graph if options.graph is not None else -1
    return Rendered(to_dot(report, graph, options.rank).encode(), lambda where: [
        f"graphdoctor: wrote graph {graph} to {where}; draw it with "
        f"dot -Tsvg {where} -o graph{graph}.svg"])


def _dot_problem(options: Options) -> str | None:
    return "--format dot draws one graph: name it with --graph N" if options.graph is None \
        else None


EXPORT_FORMATS: Formats[Report] = Formats(
    Format("chrome-trace", ".trace.json", _chrome_trace, to_terminal=False,
           read_by_programs=True),
    Format("dot", ".graph{graph}.dot", _dot, to_terminal=False, read_by_programs=True,
           problem=_dot_problem),
)


# -- what changed between two reports (diff) ----------------------------------------------------
def _diff_text(diff: ReportDiff, options: Options) -> Rendered:
    from graphdoctor.report.render.diff import render_diff_text

    return Rendered(render_diff_text(diff, width=options.width, color=options.color))


def _diff_markdown(diff: ReportDiff, options: Options) -> Rendered:
    from graphdoctor.report.render.diff import render_diff_markdown

    return Rendered(render_diff_markdown(diff))


def _diff_json(diff: ReportDiff, options: Options) -> Rendered:
    from graphdoctor.report.diff import to_json

    return Rendered(json_bytes(to_json(diff), PRETTY, end="\n"))


DIFF_FORMATS: Formats[ReportDiff] = Formats(
    Format(TEXT, ".txt", _diff_text),
    Format(MARKDOWN, ".md", _diff_markdown),
    Format(JSON, ".json", _diff_json, read_by_programs=True),
)


# -- variants compared per call (compare) -------------------------------------------------------
def _compare_text(result: CompareResult, options: Options) -> Rendered:
    from graphdoctor.report.render.compare import render_compare

    return Rendered(render_compare(result, width=options.width, color=options.color))


def _compare_json(result: CompareResult, options: Options) -> Rendered:
    from graphdoctor.report.compare import to_json

    return Rendered(json_bytes(to_json(result), PRETTY_NARROW, end="\n"))


COMPARE_FORMATS: Formats[CompareResult] = Formats(
    Format(TEXT, ".txt", _compare_text),
    Format(JSON, ".json", _compare_json, read_by_programs=True),
)
