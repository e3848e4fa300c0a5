"""The report as a terminal summary (``graphdoctor report REPORT``).

A pure function: it returns the text, with ANSI colour only when asked, and the CLI asks
only when stdout is a terminal. Every string that came from the report is passed to rich
as plain :class:`~rich.text.Text` (never as markup) after :func:`clean`, so a report
cannot restyle or take over the reader's terminal; :mod:`graphdoctor.report.render.terminal`
cleans what is drawn once more, for text that reached a renderable some other way. A
distributed run's summary covers every rank: findings, graphs, exceptions and phases each
say which rank they are from.
"""

from __future__ import annotations

from collections.abc import Callable

from rich import box
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from graphdoctor import units
from graphdoctor.clean_text import clean, first_line
from graphdoctor.diagnose.findings import (
    FAILED,
    FASTER,
    NEUTRAL,
    RERECORDED,
    SKIPPED,
    SLOWER,
    UNSAFE,
    Finding,
    Verdict,
)
from graphdoctor.facts import locations, queries, tallies
from graphdoctor.report import rank_groups, verdict_groups
from graphdoctor.report.document import Report
from graphdoctor.report.finding_groups import finding_groups
from graphdoctor.report.redact import KEPT_NOTICE, REDACTED_NOTICE
from graphdoctor.report.render import common
from graphdoctor.report.render.terminal import printed
from graphdoctor.trace.model import ExceptionRecord, Graph, Trace
from graphdoctor.trace.names import CAPTURE_FAILED

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
VERDICT_STYLE = {FASTER: "green", FAILED: "bold red", UNSAFE: "bold red", SLOWER: "red",
                 NEUTRAL: "yellow", SKIPPED: "yellow", RERECORDED: "yellow"}
NO_WRAP = frozenset({"graph", "verdict", "speedup", "status", "replays", "host p50", "GPU p50"})
MAX_FINDINGS = 20
UNBOUNDED = 1 << 16  # columns enough for any table, to measure it whole
MAX_EXCEPTIONS = 5


def render_text(report: Report, *, width: int = 100, color: bool = False) -> str:
    """The summary a person reads in a terminal: verdicts, findings with their code line,
    graphs, errors, phases and what was not recorded."""
    return printed(_parts(report, width), width, color)


def _parts(report: Report, width: int) -> list[RenderableType]:
    parts = [_header(report), _ranks(report), _verdicts(report), _baseline(report),
             _findings(report), _children(report), _graphs(report, width), _contents(report),
             _exceptions(report), _stacks(report), _compile(report), _phases(report),
             _notes(report)]
    return [p for p in parts if p is not None]


def _t(text: object, style: str = "") -> Text:
    return Text(clean(str(text)), style=style)


def _title(text: str) -> Text:
    return Text(f"\n{text}", style="bold")


def _header(report: Report) -> RenderableType:
    trace = report.trace
    lines = Text.assemble(("graphdoctor report: ", "bold"), _t(trace.meta.target or "?", "bold"))
    lines.append_text(_t(f"\n{common.headline(report)}", "bold"))
    where = [d.name for d in trace.meta.devices] or ["no GPU recorded"]
    versions = [f"torch {trace.meta.torch}" if trace.meta.torch else "",
                f"CUDA {trace.meta.cuda}" if trace.meta.cuda else "",
                f"Python {trace.meta.python}" if trace.meta.python else ""]
    lines.append_text(_t(f"\nThe run {common.run_outcome(report)}. " + " · ".join(
        [", ".join(where)] + [v for v in versions if v])))
    lines.append_text(_t(f"\n{common.command_line(trace)}", "dim"))
    notice = REDACTED_NOTICE if report.redacted else KEPT_NOTICE
    lines.append_text(_t(f"\n({notice})", "dim"))
    return lines


def _ranks(report: Report) -> RenderableType | None:
    """A job's ranks: where they ran, the groups that did alike (those that differ first),
    and how their clocks were lined up."""
    groups = rank_groups.rank_groups(report)
    if not groups:
        return None
    grid = _grid()
    for group in groups:
        grid.add_row(_t(group.named, "bold" if len(group.ranks) < len(report.ranks) else ""),
                     _t(group.said))
    missing = rank_groups.missing_line(report)
    if missing:
        grid.add_row(_t("missing", "yellow"), _t(missing, "yellow"))
    for line in rank_groups.clock_lines(report):
        grid.add_row(_t("times", "dim"), _t(line, "dim"))
    return Group(_title(f"Ranks: {rank_groups.hosts_line(report)}"), grid)


def _table(*columns: str) -> Table:
    """A plain table; the short columns (NO_WRAP) stay on one line, the others fold."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True, expand=False)
    for column in columns:
        table.add_column(column, overflow="fold", no_wrap=column in NO_WRAP,
                         min_width=len(column))
    return table


def _verdicts(report: Report) -> RenderableType:
    verdicts = report.diagnosis.verdicts
    if not verdicts:
        return Group(_title("Verdicts"), _t("  none: the diagnosis gave no verdict", "dim"))
    table = _table("subject", "verdict", "speedup", "summary")
    for row in verdict_groups.ranked(report):
        v = row.verdict
        table.add_row(_t(v.subject), _t(v.kind, VERDICT_STYLE.get(v.kind, "")),
                      _t(units.format_speedup(v.speedup)), _summary(row))
    return Group(_title("Verdicts"), table)


def _summary(row: verdict_groups.VerdictRow) -> Text:
    """A verdict's summary; a group's, with its members in a dim line below."""
    text = _t(summary_without_speedup(row.verdict))
    shown = [v for v in row.members if not row.ranks or v.speedup is not None]
    if shown:  # a group across ranks names them in its subject: listed for their speedups
        labels = ", ".join(row.member_label(v) for v in shown[:MAX_MEMBERS])
        more = f", … and {len(shown) - MAX_MEMBERS} more" if len(shown) > MAX_MEMBERS else ""
        text.append_text(_t(f"\nmembers: {labels}{more}", "dim"))
    return text


MAX_MEMBERS = 16  # a group's members listed under its summary


def summary_without_speedup(verdict: Verdict) -> str:
    """A verdict's summary without the clause that states its speedup, for a line that shows
    the speedup on its own (a table's column, the TUI's verdict title): said once, not as
    "7.54×  7.54x faster: ...". The kind says faster, neutral or slower; a group's median is
    the speedup shown, its range stays. Unchanged where the summary words it otherwise."""
    if verdict.speedup is None:
        return verdict.summary
    summary = verdict.summary
    for said in units.speedup_spellings(verdict.speedup):
        for clause in SPEEDUP_CLAUSES:
            summary = summary.replace(clause.format(said), "", 1)
    return summary


# How the diagnosis's verdict summaries state a speedup (diagnose.verdicts, verdict_groups).
SPEEDUP_CLAUSES = ("{} faster: ", "no speedup ({}): ", "{}, slower than eager: ", " (median {})")


def _baseline(report: Report) -> RenderableType | None:
    lines = common.baseline_lines(report)
    if not lines:
        return None
    return Group(_title(common.BASELINE_TITLE), *(_t(f"  {line}") for line in lines))


def _findings(report: Report) -> RenderableType:
    groups = finding_groups(report.diagnosis.findings)
    counts = common.severities_counted([g.finding for g in groups])
    grid = _grid()
    for group in groups[:MAX_FINDINGS]:
        finding = group.finding
        grid.add_row(_t(finding.severity.upper(), SEVERITY_STYLE.get(finding.severity, "")),
                     _finding(report, finding, group.whose))
    parts: list[RenderableType] = [_title(f"Findings ({counts or 'none'})"), grid]
    if len(groups) > MAX_FINDINGS:
        parts.append(_t(f"  ... and {len(groups) - MAX_FINDINGS} more: "
                        "graphdoctor report --format markdown lists them all", "dim"))
    return Group(*parts)


def _children(report: Report) -> RenderableType | None:
    """Each process the script started: how it ended, then its verdicts, findings and
    exceptions, where it has any; the others in a line each."""
    if not report.children:
        return None
    shown, rest = common.shown_children(report)
    grid = _grid()
    for child in shown:
        grid.add_row(_t("process", "bold"), _t(common.child_heading(report, child), "bold"))
        for v in child.diagnosis.verdicts:
            grid.add_row(_t(v.kind, VERDICT_STYLE.get(v.kind, "")), _t(f"{v.subject}: {v.summary}"))
        for finding in child.diagnosis.findings[:MAX_FINDINGS]:
            grid.add_row(_t(finding.severity.upper(), SEVERITY_STYLE.get(finding.severity, "")),
                         _finding(child, finding, ""))
        for exception in child.trace.exceptions[:MAX_EXCEPTIONS]:
            grid.add_row(_t(exception.where), _exception(child.trace, exception))
    for child in rest[:common.MAX_CHILDREN_NAMED]:
        grid.add_row(_t("process", "dim"), _t(common.child_heading(report, child), "dim"))
    left_out = common.children_left_out(report)
    return Group(_title(common.children_title(report)), grid,
                 *([_t(f"  {left_out}", "dim")] if left_out else []))


def _grid() -> Table:
    """Two columns, the second wrapping under itself (a hanging indent)."""
    grid = Table.grid(padding=(0, 2), pad_edge=True)
    grid.add_column(no_wrap=True, min_width=7)
    grid.add_column(overflow="fold")
    return grid


def _finding(report: Report, finding: Finding, whose: str) -> Text:
    rank = f" ({whose})" if report.ranks and whose else ""
    text = Text.assemble(_t(f"{finding.id} {finding.name}{rank}: ", "bold"),
                         _t(finding.title + common.folded(finding)))
    location = finding.location
    if location is not None:
        path = locations.display_path(location.file, report.trace.meta.cwd)
        text.append_text(_t(f"\nat {path}:{location.line}"
                            + (f" in {location.function}" if location.function else "")))
        if location.code:
            text.append_text(_t(f"\n{location.line:>5} | {location.code}", "bold"))
    if finding.fix:
        text.append_text(_t(f"\nfix: {first_line(finding.fix, 300)}", "green"))
    return text


def _graphs(report: Report, width: int) -> RenderableType | None:
    """Every rank's graphs (graph ids repeat across ranks: a rank column tells them apart).
    Where every column does not fit without breaking a word, the API and the line share a
    column, and the host time and pool (in the JSON, and in the TUI) are left out."""
    graphs = common.ranked_graphs(report)
    if not graphs:
        return None
    table = _graph_table(report, graphs, *WIDE_GRAPHS)
    if not _fits(table, width):
        table = _graph_table(report, graphs, *NARROW_GRAPHS)
    return Group(_title(f"Graphs ({len(graphs)})"), table, *_left_out(report))


Cells = Callable[[Trace, Graph, tallies.ReplayStats | None], list[Text]]


def _graph_table(report: Report, graphs: list[common.RankedGraph], columns: tuple[str, ...],
                 cells: Cells) -> Table:
    ranked = bool(report.ranks)
    table = _table(*(["rank"] if ranked else []), *columns)
    for rank, trace, g, stats in graphs:
        table.add_row(*([_t(rank)] if ranked else []), *cells(trace, g, stats))
    return table


def _fits(table: Table, width: int) -> bool:
    """Whether the table fits in width with no word broken: rich's minimum measure is the
    widest word of each column (measured unbounded: rich caps a measure at the width)."""
    console = Console(width=UNBOUNDED)
    return Measurement.get(console, console.options, table).minimum <= width


def _left_out(report: Report) -> list[Text]:
    left = common.ranks_left_out(report)
    return [_t(f"  {left}", "dim")] if left else []


def _graph_cells(trace: Trace, g: Graph, s: tallies.ReplayStats | None) -> list[Text]:
    return [_t(g.id), _t(g.api), _t(g.status, "red" if g.status == CAPTURE_FAILED else ""),
            _t(locations.site(trace, g.stack, short=True) or "?"), _t(s.count if s else 0),
            _t(units.format_duration(s.host_p50_ns if s else None)),
            _t(units.format_duration(s.gpu_p50_ns if s else None)),
            _t(queries.pool_name(trace, g))]


def _narrow_graph_cells(trace: Trace, g: Graph, s: tallies.ReplayStats | None) -> list[Text]:
    where = locations.site(trace, g.stack, short=True) or "?"
    return [_t(g.id), _t(g.status, "red" if g.status == CAPTURE_FAILED else ""),
            _t(f"{g.api} at {where}"), _t(s.count if s else 0),
            _t(units.format_duration(s.gpu_p50_ns if s else None))]


# the Graphs table's two layouts: its columns, and the cells of a graph's row under them
WIDE_GRAPHS: tuple[tuple[str, ...], Cells] = (
    ("graph", "api", "status", "captured at", "replays", "host p50", "GPU p50", "pool"),
    _graph_cells)
NARROW_GRAPHS: tuple[tuple[str, ...], Cells] = (
    ("graph", "status", "captured", "replays", "GPU p50"), _narrow_graph_cells)


def _contents(report: Report) -> RenderableType | None:
    """What each graph holds: its nodes and shape, and its largest kernel groups."""
    contents = common.graph_contents(report)
    if not contents:
        return None
    grid = _grid()
    for name, line, kernels in contents:
        grid.add_row(_t(name), _t(line + "".join(f"\n  {k}" for k in kernels)))
    return Group(_title("Graph content"), grid)


def _exceptions(report: Report) -> RenderableType | None:
    """Every rank's exceptions, each rank's first."""
    exceptions = [(rank, trace, e) for rank, trace in common.rank_traces(report)
                  for e in trace.exceptions]
    if not exceptions:
        return None
    grid = _grid()
    for rank, trace, exception in exceptions[:MAX_EXCEPTIONS]:
        grid.add_row(_t(f"{common.rank_tag(rank)}{exception.where}"),
                     _exception(trace, exception))
    parts: list[RenderableType] = [_title(f"Exceptions ({len(exceptions)})"), grid]
    if len(exceptions) > MAX_EXCEPTIONS:
        parts.append(_t(f"  ... and {len(exceptions) - MAX_EXCEPTIONS} more", "dim"))
    return Group(*parts)


def _exception(trace: Trace, exception: ExceptionRecord) -> Text:
    if not exception.chain:
        return _t("(no details recorded)")
    raised = exception.chain[-1]
    text = _t(f"{raised.type}: {first_line(raised.message)}", "red")
    if len(exception.chain) > 1:
        text.append_text(_t(f"\nfirst error: {tallies.root_cause(exception)}"))
    where = locations.site(trace, exception.chain[0].stack)
    if where:
        text.append_text(_t(f"\nraised at {where}"))
    return text


def _stacks(report: Report) -> RenderableType | None:
    """Where each thread was when a crash or a time-out ended the run, each rank's."""
    lines: list[RenderableType] = []
    for rank, trace in common.shown_rank_traces(report):
        shown = common.stack_lines(trace.status.stacks_at_end)
        if shown and rank >= 0:
            lines.append(_t(f"  rank {rank}:"))
        indent = "    " if rank >= 0 else "  "
        lines += [_t(f"{indent}{line}") for line in shown]
    if not lines:
        return None
    return Group(_title("Stacks when the run ended"), *lines,
                 _t("  (in full: graphdoctor report --format markdown)", "dim"))


def _compile(report: Report) -> RenderableType | None:
    counts = tallies.compile_counts(report.trace)
    if not counts:
        return None
    events = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in counts.items())
    costs = [_t(f"  {name}: {units.counted(compiles, 'compile')}"
                + (f" ({units.counted(recompiles, 'recompile')})" if recompiles else "")
                + f", {units.format_duration(ns)} of compiling, {share} of the run")
             for name, compiles, recompiles, ns, share in common.compile_costs_by_function(
                 report.trace)]
    return Group(_title("torch.compile"), _t(f"  {events}"), *costs)


def _phases(report: Report) -> RenderableType:
    lines: list[RenderableType] = [_title("Phases and events")]
    for rank, trace in common.shown_rank_traces(report):
        totals = tallies.phase_totals(trace)
        phases = " · ".join(f"{p.phase} {units.format_duration(p.total_ns)}"
                            + (f" ({p.spans} spans)" if p.spans > 1 else "") for p in totals)
        events = tallies.event_summary(trace)
        tag = f"rank {rank}: " if rank >= 0 else ""
        lines += [_t(f"  {tag}{phases or 'no phases recorded'}"),
                  _t(f"  {tag}{events or 'no events recorded'}")]
    return Group(*lines, *_left_out(report))


def _notes(report: Report) -> RenderableType | None:
    notes = report.trace.meta.not_recorded
    if not notes:
        return None
    return Group(_title("Not recorded"),
                 *(_t(f"  {n.what}: {n.why}", "dim") for n in notes))
