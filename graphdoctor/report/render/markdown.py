"""The report as GitHub-flavoured markdown, ready to paste into an issue.

Short parts are shown (the verdict table, each finding with its code lines); long parts
are folded in ``<details>`` (evidence, exception chains, phases, environment, the command).
Every string from the report goes through :func:`markdown_escape.escape`, told whether it
lands in markdown text, in code or in a fold's HTML summary, so that it cannot close a fold,
inject HTML, mention anyone or make a link. GitHub refuses issue bodies over 65,536
characters: optional sections are dropped from the end, with a note, until the result fits
in :data:`MAX_CHARS`; if the required ones alone do not fit, whole lines are cut from the
end and the fold and code block left open are closed. A distributed run's markdown covers
every rank: findings, their evidence, graphs, exceptions, phases and crash stacks each say
which rank.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graphdoctor import units
from graphdoctor.clean_text import clean, first_line
from graphdoctor.diagnose.findings import Evidence, Finding
from graphdoctor.diagnose.view import rank_ranges
from graphdoctor.facts import locations, queries, tallies
from graphdoctor.report import rank_groups, verdict_groups
from graphdoctor.report.document import Report
from graphdoctor.report.finding_groups import FindingGroup, finding_groups
from graphdoctor.report.redact import KEPT_NOTICE, REDACTED_NOTICE
from graphdoctor.report.render import common
from graphdoctor.report.render.markdown_escape import Where
from graphdoctor.report.render.markdown_escape import escape as escape  # as markdown.escape too
from graphdoctor.report.render.text import summary_without_speedup
from graphdoctor.trace.model import ExceptionRecord, Graph, Trace

MAX_CHARS = 60_000
# Character budgets that keep the required parts under MAX_CHARS together.
FINDINGS_BUDGET = 25_000  # findings shown in full
REST_BUDGET = 8_000  # the table of the findings left over
MAX_ROWS = 30
MAX_CELL = 200
MAX_TITLE = 1_000  # a finding's title, which is one line
MAX_VERDICT_CELL = 500  # a verdict says how it measured: both figures, samples, spread
MAX_EVIDENCE = 20
MAX_EXCEPTIONS = 10
MAX_CHILD_FINDINGS = 5  # of each process the script started
CONTEXT = 2  # lines of code shown around a finding's line
TRUNCATED = "\n\n_(truncated)_\n"
_FENCE_OPENING = re.compile(r"(`{3,})[^`]*")  # as CommonMark reads one: no ` after the run
SEVERITY_MARK = {"error": "🔴 error", "warning": "🟠 warning", "info": "🔵 info"}


def render_markdown(report: Report) -> str:
    """The report as markdown (see the module docstring)."""
    required = [s for s in (_header(report), _ranks(report), _verdicts(report),
                            _baseline(report), _findings(report)) if s]
    optional = [s for s in (_children(report), _graphs(report), _contents(report),
                            _exceptions(report),
                            _crash(report), _compile(report), _phases(report),
                            _environment(report), _command(report), _notes(report)) if s]
    footer = _footer(report)
    sections = required + optional
    while len(_join(sections + [footer])) > MAX_CHARS and len(sections) > len(required):
        sections.pop()
        footer = ("_Some sections were left out to fit GitHub's size limit: attach the "
                  "report file for everything._\n\n" + _footer(report))
    text = clean(_join(sections + [footer]))  # text a part did not escape, cleaned too
    return text if len(text) <= MAX_CHARS else _truncated(text)


def _join(sections: list[str]) -> str:
    return "\n\n".join(s.strip("\n") for s in sections) + "\n"


def _truncated(text: str) -> str:
    """The first whole lines of ``text`` that fit in MAX_CHARS with the fold and the code
    block they leave open closed, and a note. Whole lines, because only folds and code
    blocks span lines here: a cut inside a line could split an escape or an entity, or
    leave a code span without its end, so that the HTML in it is read as HTML."""
    kept = text[:MAX_CHARS - len(TRUNCATED)]
    while kept:
        kept = kept.rsplit("\n", 1)[0] if "\n" in kept else ""
        shortened = kept + _closing(kept) + TRUNCATED
        if len(shortened) <= MAX_CHARS:
            return shortened
    return TRUNCATED.lstrip()


def _closing(text: str) -> str:
    """What closes the code block and the folds open at the end of ``text``."""
    fence, folds = "", 0
    for line in text.splitlines():
        if fence:
            fence = "" if line == fence else fence
        elif opening := _FENCE_OPENING.fullmatch(line):
            fence = opening[1]
        elif line.startswith("<details>"):
            folds += 1
        elif line == "</details>":
            folds -= 1
    return (f"\n{fence}" if fence else "") + "\n\n</details>" * folds


def paragraphs(text: str) -> str:
    """Escaped text that keeps its line breaks."""
    return "  \n".join(escape(line, Where.LINE) for line in text.strip().splitlines())


def code(text: str, in_table: bool = False) -> str:
    """Inline code (see :attr:`Where.CODE`)."""
    return escape(text, Where.TABLE_CODE if in_table else Where.CODE)


def block(text: str, language: str = "") -> str:
    """A fenced code block (see :attr:`Where.BLOCK`)."""
    return escape(text, Where.BLOCK, language=language)


def details(summary: str, body: str) -> str:
    """A fold. Its summary is inside an HTML block, where markdown is not read."""
    return (f"<details><summary>{escape(summary, Where.HTML)}</summary>\n\n{body.strip()}"
            "\n\n</details>")


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _header(report: Report) -> str:
    trace = report.trace
    devices = ", ".join(d.name for d in trace.meta.devices) or "no GPU recorded"
    versions = ", ".join(v for v in (f"torch {trace.meta.torch}" if trace.meta.torch else "",
                                     f"CUDA {trace.meta.cuda}" if trace.meta.cuda else "",
                                     f"Python {trace.meta.python}" if trace.meta.python else "")
                         if v)
    headline = first_line(common.headline(report), MAX_CELL)
    target = code(first_line(trace.meta.target, MAX_CELL) or "?")
    lines = [f"### graphdoctor: {target}: {escape(headline)}",
             "", f"The run {escape(common.run_outcome(report))} on {escape(devices)}"
             + (f" ({escape(versions)})" if versions else "") + "."]
    notice = REDACTED_NOTICE if report.redacted else KEPT_NOTICE
    lines.append(f"_{escape(notice[0].upper() + notice[1:])}._")
    return "\n".join(lines)


def _ranks(report: Report) -> str:
    """A job's ranks: where they ran, the groups that did alike (those that differ first),
    and how their times were lined up."""
    groups = rank_groups.rank_groups(report)
    if not groups:
        return ""
    rows = [[cell(rank_ranges(g.ranks)), cell(g.said)] for g in groups]
    times = "; ".join(rank_groups.clock_lines(report))
    missing = rank_groups.missing_line(report)
    return (f"**Ranks**: {escape(rank_groups.hosts_line(report))}\n\n"
            + table(["Ranks", "What they did"], rows) + f"\n\n_Times: {escape(times)}._"
            + (f"\n\n**{escape(missing[0].upper() + missing[1:])}.**" if missing else ""))


def cell(text: str, most: int = MAX_CELL) -> str:
    """A table cell: escaped, on one line, and at most ``most`` characters of the text."""
    return escape(text, most=most)


def _verdicts(report: Report) -> str:
    """A row per verdict, or per group of verdicts from one line; each group's members in a
    fold below the table."""
    shown = verdict_groups.ranked(report)
    if not shown:
        return "**Verdicts:** none (the diagnosis gave no verdict)."
    rows = [[cell(r.verdict.subject), f"**{cell(r.verdict.kind)}**",
             units.format_speedup(r.verdict.speedup),
             cell(summary_without_speedup(r.verdict), MAX_VERDICT_CELL)]
            for r in shown[:MAX_ROWS]]
    parts = [table(["Subject", "Verdict", "Speedup", "Summary"], rows)]
    if len(shown) > MAX_ROWS:
        parts.append(f"... and {len(shown) - MAX_ROWS} more verdicts.")
    parts += [_members(r) for r in shown[:MAX_ROWS] if r.members]
    return "\n\n".join(parts)


def _members(row: verdict_groups.VerdictRow) -> str:
    """A group's verdicts, one line each (each rank's, for a group across ranks)."""
    label = "rank" if row.ranks else "graph"
    items = [f"- {label} {v.rank if row.ranks else v.graph}: {cell(v.summary)}"
             for v in row.members[:MAX_ROWS]]
    if len(row.members) > MAX_ROWS:
        items.append(f"- ... and {len(row.members) - MAX_ROWS} more")
    return details(f"{row.verdict.subject}: each {label}", "\n".join(items))


def _baseline(report: Report) -> str:
    lines = common.baseline_lines(report)
    if not lines:
        return ""
    return f"#### {escape(common.BASELINE_TITLE)}\n\n" + "\n".join(f"- {escape(line)}"
                                                              for line in lines)


def _findings(report: Report) -> str:
    """Findings in full, worst first, until FINDINGS_BUDGET; the rest in a folded table.
    Findings alike on several ranks are one, naming its ranks (report.finding_groups)."""
    groups = finding_groups(report.diagnosis.findings)
    if not groups:
        return "#### Findings\n\nNone."
    counts = escape(common.severities_counted([g.finding for g in groups]))
    parts, used = [f"#### Findings ({counts})"], 0
    for index, group in enumerate(groups):
        shown = _finding(report, group)
        if used + len(shown) > FINDINGS_BUDGET and index > 0:
            parts.append(_more_findings(groups[index:]))
            break
        parts.append(shown)
        used += len(shown)
    return "\n\n".join(parts)


def _more_findings(rest: Sequence[FindingGroup]) -> str:
    rows: list[list[str]] = []
    used = 0
    for group in rest:
        f = group.finding
        whose = f"{group.named}: " if group.ranks else ""
        row = [cell(f.severity), code(f.id, True), cell(whose + f.title + common.folded(f))]
        used += sum(map(len, row)) + 10
        if used > REST_BUDGET:
            break
        rows.append(row)
    body = table(["Severity", "Rule", "Title"], rows)
    if len(rest) > len(rows):
        body += f"\n\n... and {len(rest) - len(rows)} more."
    return details(f"{len(rest)} more findings", body)


def _finding(report: Report, group: FindingGroup) -> str:
    finding = group.finding
    mark = SEVERITY_MARK.get(finding.severity, escape(finding.severity))
    rank = f" · {escape(group.whose)}" if report.ranks and group.ranks else ""
    lines = [f"**{mark} · {code(finding.id)} {escape(finding.name)}{rank}:** "
             f"{escape(finding.title, most=MAX_TITLE)}{escape(common.folded(finding))}"]
    if not group.same_figures:
        lines += ["", _figures(group)]
    location = finding.location
    if location is not None:
        path = locations.display_path(location.file, report.trace.meta.cwd)
        function = f" in {code(location.function)}" if location.function else ""
        lines += ["", f"{code(f'{path}:{location.line}')}{function}"]
        snippet = _snippet(report, location.file, location.line, location.code)
        if snippet:
            lines += ["", block(snippet, "python")]
    if finding.explanation:
        lines += ["", paragraphs(_bounded(finding.explanation))]
    if finding.fix:
        lines += ["", f"**Fix:** {paragraphs(_bounded(finding.fix))}"]
    if finding.evidence:
        lines += ["", _evidence(finding, bool(report.ranks))]
    return "\n".join(lines)


def _children(report: Report) -> str:
    """Each process the script started that has more to show than its end, with its
    verdicts, its first findings in full and its exceptions; the others a line each."""
    if not report.children:
        return ""
    shown, rest = common.shown_children(report)
    parts = [f"#### {escape(common.children_title(report))}"]
    for child in shown:
        parts.append(f"**{escape(common.child_heading(report, child))}**")
        parts += [f"- **{escape(v.kind)}** {escape(v.subject)}: {cell(v.summary)}"
                  for v in child.diagnosis.verdicts[:MAX_ROWS]]
        groups = finding_groups(child.diagnosis.findings)[:MAX_CHILD_FINDINGS]
        parts += [_finding(child, group) for group in groups]
        parts += [_exception(-1, child.trace, e) for e in child.trace.exceptions[:2]]
    parts += [f"- {escape(common.child_heading(report, child))}"
              for child in rest[:common.MAX_CHILDREN_NAMED]]
    left_out = common.children_left_out(report)
    return "\n\n".join([*parts, *([escape(left_out)] if left_out else [])])


def _figures(group: FindingGroup) -> str:
    """Each rank's own title, where the ranks' figures differ."""
    items = [f"- rank {m.rank}: {escape(m.title, most=MAX_TITLE)}{escape(common.folded(m))}"
             for m in group.members[:MAX_EVIDENCE]]
    if len(group.members) > MAX_EVIDENCE:
        items.append(f"- ... and {len(group.members) - MAX_EVIDENCE} more ranks")
    return details(f"Each rank's figures ({len(group.members)})", "\n".join(items))


def _bounded(text: str, limit: int = 3000) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _snippet(report: Report, file: str, line: int, fallback: str) -> str:
    """The cited line with a little context, the cited line marked with ``>``."""
    source = report.sources.get(file, {})
    numbers = [n for n in range(line - CONTEXT, line + CONTEXT + 1) if n in source]
    if line not in source:
        return f"> {line:>4} | {fallback}" if fallback else ""
    width = len(str(max(numbers)))
    return "\n".join(f"{'>' if n == line else ' '} {n:>{width}} | {source[n]}" for n in numbers)


def _evidence(finding: Finding, ranked: bool) -> str:
    """Where the evidence is: table and row, and in a multi-rank report whose trace (evidence
    that names no rank is in its finding's)."""
    def rank(e: Evidence) -> str:
        return common.rank_tag(e.rank if e.rank >= 0 else finding.rank) if ranked else ""

    items = [f"- {rank(e)}{code(f'{e.kind}[{e.index}]')}"
             + (f": {escape(e.note)}" if e.note else "") for e in finding.evidence[:MAX_EVIDENCE]]
    if len(finding.evidence) > MAX_EVIDENCE:
        items.append(f"- ... and {len(finding.evidence) - MAX_EVIDENCE} more")
    return details(f"Evidence ({len(finding.evidence)})", "\n".join(items))


def _graphs(report: Report) -> str:
    """Every rank's graphs, with a rank column in a multi-rank report (ids repeat)."""
    ranked = bool(report.ranks)
    rows = [[*([str(rank)] if ranked else []), *_graph_cells(trace, g, stats)]
            for rank, trace, g, stats in common.ranked_graphs(report)]
    if not rows:
        return ""
    body = table([*(["Rank"] if ranked else []), "Graph", "API", "Status", "Captured at",
                  "Replays", "Host p50", "GPU p50", "Pool"], rows)
    return details(f"Graphs ({len(rows)})", body)


def _graph_cells(trace: Trace, g: Graph, s: tallies.ReplayStats | None) -> list[str]:
    return [str(g.id), escape(g.api), escape(g.status),
            code(locations.site(trace, g.stack, short=True) or "?", True), str(s.count if s else 0),
            units.format_duration(s.host_p50_ns if s else None),
            units.format_duration(s.gpu_p50_ns if s else None),
            escape(queries.pool_name(trace, g) or "-")]


def _contents(report: Report) -> str:
    """What each graph holds: its nodes and shape, and its largest kernel groups."""
    contents = common.graph_contents(report)
    items = [f"- **{escape(name)}**: {cell(line)}" + "".join(
        f"\n  - {code(kernel)}" for kernel in kernels) for name, line, kernels in contents]
    return details(f"Graph content ({len(items)})", "\n".join(items)) if items else ""


def _exceptions(report: Report) -> str:
    exceptions = [(rank, trace, e) for rank, trace in common.rank_traces(report)
                  for e in trace.exceptions]
    if not exceptions:
        return ""
    parts = [_exception(rank, trace, e) for rank, trace, e in exceptions[:MAX_EXCEPTIONS]]
    if len(exceptions) > MAX_EXCEPTIONS:
        parts.append(f"... and {len(exceptions) - MAX_EXCEPTIONS} more.")
    return details(f"Exceptions ({len(exceptions)})", "\n\n".join(parts))


def _exception(rank: int, trace: Trace, exception: ExceptionRecord) -> str:
    on_rank = f" on rank {rank}" if rank >= 0 else ""
    lines = [f"**At {escape(exception.where)}{on_rank}**, first error first:", ""]
    for link in exception.chain:
        cuda = f" ({code(link.cuda_error)})" if link.cuda_error else ""
        where = locations.site(trace, link.stack)
        at = f" at {code(where)}" if where else ""
        lines.append(f"1. {code(link.type)}{cuda}{at}: {escape(first_line(link.message))}")
    return "\n".join(lines)


def _crash(report: Report) -> str:
    """The faulthandler dump of each process that left one (each rank of a distributed run)."""
    folds = []
    for rank, trace in common.rank_traces(report):
        stacks = trace.status.stacks_at_end
        if not stacks:
            continue
        lines = stacks.strip().splitlines()
        shown = "\n".join(lines[:80])
        if len(lines) > 80:
            shown += f"\n... ({len(lines) - 80} more lines)"
        whose = f", rank {rank}" if rank >= 0 else ""
        folds.append(details(f"Stacks when the run ended (faulthandler{whose})", block(shown)))
    return "\n\n".join(folds)


def _compile(report: Report) -> str:
    counts = tallies.compile_counts(report.trace)
    if not counts:
        return ""
    rows = [[escape(kind.replace("_", " ")), str(n)] for kind, n in counts.items()]
    costs = [[escape(name), str(compiles), str(recompiles), units.format_duration(ns), share]
             for name, compiles, recompiles, ns, share in common.compile_costs_by_function(
                 report.trace)]
    return details("torch.compile events", table(["Event", "Count"], rows)
                   + ("\n\n" + table(["Function", "Compiles", "Recompiles", "Compile time",
                                       "Share of the run"], costs) if costs else ""))


def _phases(report: Report) -> str:
    ranked = bool(report.ranks)
    rows = [[*([str(rank)] if ranked else []), escape(p.phase), units.format_duration(p.total_ns),
             str(p.spans)]
            for rank, trace in common.shown_rank_traces(report)
            for p in tallies.phase_totals(trace)]
    header = [*(["Rank"] if ranked else []), "Phase", "Time", "Spans"]
    body = table(header, rows) if rows else "No phases recorded."
    left = common.ranks_left_out(report)
    body += f"\n\n_{escape(left)}._" if left else ""
    for rank, trace in common.shown_rank_traces(report):
        events = tallies.event_summary(trace)
        if events:
            whose = f"Rank {rank} events" if rank >= 0 else "Events"
            body += f"\n\n{whose}: {escape(events)}."
    return details("Phases and events", body)


def _environment(report: Report) -> str:
    """The main trace's environment; a multi-rank report names its world, not one rank."""
    pairs = tallies.environment(report.trace)
    if report.ranks:  # the main trace says "0 of 2": the report holds every rank
        world = f"{', '.join(map(str, report.ranks))} of {report.trace.meta.world_size}"
        pairs = [("ranks", world) if name == "rank" else (name, value) for name, value in pairs]
    rows = [[escape(name), escape(value)] for name, value in pairs]
    return details("Environment", table(["Setting", "Value"], rows)) if rows else ""


def _command(report: Report) -> str:
    return details("Command", block(common.command_line(report.trace), "sh"))


def _notes(report: Report) -> str:
    notes = report.trace.meta.not_recorded
    if not notes:
        return ""
    return details("Not recorded", "\n".join(f"- {escape(n.what, Where.LINE)}: {escape(n.why)}"
                                             for n in notes))


def _footer(report: Report) -> str:
    return (f"<sub>graphdoctor {escape(report.tool_version)} · report schema "
            f"{escape(report.schema_version)}. Open the attached report with "
            f"{code('graphdoctor view REPORT')}.</sub>")
