"""Summary: how the run ended and why, the verdict for each graph, the top findings, and the
environment it ran in. A distributed run's summary says how each rank ended, and what
failed on it; its verdicts and findings each name their rank."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from graphdoctor.clean_text import clean
from graphdoctor.diagnose.findings import FAILED, UNSAFE, Verdict
from graphdoctor.diagnose.view import rank_ranges
from graphdoctor.report import rank_groups
from graphdoctor.report.render.common import (
    MAX_CHILDREN,
    MAX_RANKS_IN_FULL,
    child_heading,
    ranks_left_out,
    shown_children,
    shown_rank_traces,
)
from graphdoctor.report.render.text import summary_without_speedup
from graphdoctor.report.verdict_groups import VerdictRow, rows
from graphdoctor.trace.endings import (
    EXITED,
    INTERRUPTED,
    RUNNING,
    SIGNALLED,
    TIMED_OUT,
    signal_name,
)
from graphdoctor.trace.event_kinds import KINDS, rows_of
from graphdoctor.trace.model import NONE, RunStatus, Trace
from graphdoctor.tui.navigation import ShowFinding, ShowGraph
from graphdoctor.tui.palette import (
    GRAPH_STATUS_STYLES,
    VERDICT_MARKS,
    verdict_mark,
)
from graphdoctor.tui.rendering import error_text, labelled
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.safe_text import report_text
from graphdoctor.tui.screens.base import ReportScreen
from graphdoctor.tui.screens.findings import finding_line
from graphdoctor.tui.widgets.flow import FlowingList
from graphdoctor.units import (
    counted,
    format_bytes,
    format_duration,
    format_speedup,
    speedup_spellings,
)

TOP_FINDINGS = 5
LISTS = ("verdicts", "top-findings")  # the lists a person moves in, by their ids
CAUSED = frozenset({FAILED, UNSAFE})  # verdicts whose enter opens the finding that says why


class SummaryScreen(ReportScreen):
    open_groups: frozenset[int] = frozenset()  # verdict rows whose group shows its members

    def compose(self) -> ComposeResult:
        yield self.mode_bar()
        with VerticalScroll(id="summary"):
            yield Static(outcome_text(self.view), id="outcome")
            yield Static("Verdicts (enter: the graph, or why it failed)",
                         classes="section-title")
            yield FlowingList(*verdict_options(self.view), id="verdicts")
            yield Static("Top findings (enter: the finding)", classes="section-title")
            yield FlowingList(*finding_options(self.view), id="top-findings")
            yield Static("Environment", classes="section-title")
            yield Static(environment_text(self.view), id="environment")
        yield Footer()

    def on_mount(self) -> None:
        """The verdicts take the keys, but the screen opens on its headline (how the run
        ended), however tall the outcome of a job of many ranks is."""
        self.query_one("#verdicts", OptionList).focus(scroll_visible=False)
        self.call_after_refresh(self.query_one("#summary").scroll_home, animate=False)

    def kept_place(self) -> object:
        return [self.query_one(f"#{name}", OptionList).highlighted for name in LISTS]

    def return_to(self, place: object) -> None:
        for name, highlighted in zip(LISTS, place if isinstance(place, list) else []):
            listed = self.query_one(f"#{name}", OptionList)
            if isinstance(highlighted, int) and highlighted < listed.option_count:
                listed.highlighted = highlighted

    def toggle_group(self, index: int) -> None:
        """Show or hide the members of the group in verdict row ``index``."""
        self.open_groups ^= {index}
        verdicts = self.query_one("#verdicts", OptionList)
        highlighted = verdicts.highlighted
        verdicts.clear_options()
        verdicts.add_options(verdict_options(self.view, self.open_groups))
        verdicts.highlighted = highlighted

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        kind, _, value = (event.option.id or "").partition(":")
        if kind == "group":
            self.toggle_group(int(value))
        elif kind == "finding":
            self.post_message(ShowFinding(int(value)))
        elif kind == "graph":
            rank, _, graph = value.partition(":")
            self.post_message(ShowGraph((int(rank), int(graph))))


def verdict_options(view: ReportView, open_groups: frozenset[int] = frozenset()) -> list[Option]:
    """A verdict per graph or compiled function, a group's for many graphs of one line
    (enter shows its members below it, in ``open_groups``, or hides them); without any
    verdict, what became of each graph. Option ids name the graph with its rank: graph ids
    repeat across ranks."""
    options = []
    for index, row in enumerate(rows(view.report)):
        if row.members:
            options += _group_options(view, index, row, index in open_groups)
        else:
            options.append(_verdict_option(view, row.verdict))
    if not options:
        options = [Option(_verdict(g.status, f"{_rank_prefix(view, rank)}graph {g.id} ({g.api})",
                                   None, "the diagnosis gave no verdict"),
                          id=_graph_id(view, rank, g.id))
                   for rank, rank_view in view.rank_views.items()
                   for g in rank_view.trace.graphs if not g.internal]
    return options or [Option(Text("This run captured no CUDA graph.", style="dim"),
                              disabled=True)]


def _verdict_option(view: ReportView, v: Verdict, indent: str = "") -> Option:
    """A verdict; enter opens its graph, or, for a graph that failed or is unsafe, the
    finding that says why, with the culprit and its fix."""
    graph, finding = _graph_of(view, v), _cause_of(view, v)
    target = f"finding:{finding}" if finding is not None else \
        _graph_id(view, v.rank, graph) if graph != NONE else None
    return Option(_verdict(v.kind, f"{indent}{v.subject}", v.speedup, summary_without_speedup(v)),
                  id=target)


def _cause_of(view: ReportView, verdict: Verdict) -> int | None:
    """The index in the report's findings of the first one a failed or unsafe verdict
    cites; None for other verdicts."""
    if verdict.kind not in CAUSED:
        return None
    return next((index for index, f in enumerate(view.findings) if view.on_rank(f, verdict.rank)
                 and f"{f.id} {f.name}" in verdict.findings), None)


def _group_options(view: ReportView, index: int, row: VerdictRow, shown: bool) -> list[Option]:
    """A group's row (▸ closed, ▾ open), and its members under it when open."""
    v = row.verdict
    hint = "hide" if shown else f"its {len(row.members)} {'ranks' if row.ranks else 'graphs'}"
    group = Option(_verdict(v.kind, f"{'▾' if shown else '▸'} {v.subject}", v.speedup,
                            f"{summary_without_speedup(v)}\n(enter: {hint})"), id=f"group:{index}")
    return [group, *(_verdict_option(view, m, "  ") for m in row.members if shown)]


def _graph_id(view: ReportView, rank: int, graph: int) -> str:
    return f"graph:{view.rank_key(rank)}:{graph}"


def _rank_prefix(view: ReportView, rank: int) -> str:
    return f"rank {rank}: " if view.multi_rank else ""


def _graph_of(view: ReportView, verdict: Verdict) -> int:
    """The graph a verdict is about: its own, or its compiled function's first."""
    if verdict.graph != NONE:
        return verdict.graph
    graphs = [g.id for g in view.trace_of(verdict.rank).graphs if g.function == verdict.function]
    return graphs[0] if graphs and verdict.function != NONE else NONE


def _verdict(kind: str, subject: str, speedup: float | None, summary: str) -> Table:
    mark = verdict_mark(kind)
    style = mark.style if kind in VERDICT_MARKS else GRAPH_STATUS_STYLES.get(kind, "")
    body = report_text(subject, "bold")
    if speedup is not None and not any(said in summary  # said once, here or there
                                       for said in speedup_spellings(speedup)):
        body.append(f"  {format_speedup(speedup)}", style=style)
    body.append(f"\n{clean(summary)}")
    return labelled([(report_text(f"{mark.glyph} {kind}", style), body)], label_width=12)


def finding_options(view: ReportView) -> list[Option]:
    options = [Option(finding_line(f, view.whose(f, figures=False)), id=f"finding:{index}")
               for index, f in enumerate(view.findings[:TOP_FINDINGS])]
    if not view.findings:
        options.append(Option(Text("No findings: nothing in this run needs changing.",
                                   style="green"), disabled=True))
    elif len(view.findings) > TOP_FINDINGS:
        more = len(view.findings) - TOP_FINDINGS
        options.append(Option(Text(f"… and {more} more: press 2", style="dim"), disabled=True))
    return options


def outcome_text(view: ReportView) -> RenderableType:
    """How the run ended, and the error the user saw with the one that caused it; for a
    distributed run, how each rank ended and what it raised."""
    live = view.live
    if live is not None and not live.report:
        from graphdoctor.tui.live_summary import live_outcome

        return live_outcome(view, live)
    status, meta = view.trace.status, view.trace.meta
    headline = Text()
    ok = all(_ended_well(rank.trace.status) for rank in view.rank_views.values())
    headline.append("✓ " if ok else "✗ ", style="bold green" if ok else "bold bright_red")
    headline.append(clean(meta.target) or "the script", style="bold")
    headline.append(f" {clean(ending(status.reason, status.exit_code, status.signal))}")
    if status.wall_ns:
        headline.append(f" after {format_duration(status.wall_ns)}")
    rows = _rank_rows(view) if view.multi_rank else _run_rows(view)
    rows += _children_rows(view)
    if live is not None:  # the finished report of a live view: its output stays named
        from graphdoctor.tui.live_summary import source_rows

        rows += source_rows(live)
    return Group(headline, labelled(rows)) if rows else headline


def _children_rows(view: ReportView) -> Rows:
    """A row for each process the script started (those with findings first), and how to
    explore one."""
    report = view.report
    shown, rest = shown_children(report)
    rows: Rows = [("child", report_text(child_heading(report, child),
                                        "yellow" if child.diagnosis.findings else ""))
                  for child in [*shown, *rest][:MAX_CHILDREN]]
    if report.children:
        more = len(report.children) - len(rows)
        rows.append(("", report_text((f"and {more} more; " if more > 0 else "") + "each in "
                                     "full: graphdoctor view REPORT --child PID", "dim")))
    return rows


Rows = list[tuple[str, RenderableType]]


def _ended_well(status: RunStatus) -> bool:
    return status.reason == EXITED and status.exit_code == 0


def _run_rows(view: ReportView) -> Rows:
    status = view.trace.status
    rows: Rows = []
    if not status.complete:
        rows.append(("note", report_text(f"the recording is incomplete: "
                                         f"{status.message or status.reason}", "yellow")))
    return rows + _raised_rows(view, NONE, "")


def _raised_rows(view: ReportView, rank: int, indent: str) -> Rows:
    rows: Rows = []
    for record in view.of(rank).raised[:1]:
        rows.append((f"{indent}raised", error_text(view, record.raised, rank)))
        if record.root != record.raised:
            rows.append((f"{indent}because", error_text(view, record.root, rank)))
    return rows


def _rank_rows(view: ReportView) -> Rows:
    """The world, then each rank's ending and what it raised; beyond MAX_RANKS_IN_FULL
    ranks, the groups of ranks that did alike instead, the ranks that differ first."""
    meta = view.trace.meta
    world = f"world size {meta.world_size}" if meta.world_size > 0 else "world size unknown"
    rows: Rows = [("ranks", report_text(f"{rank_groups.hosts_line(view.report)} · "
                                        f"{meta.backend or 'unknown'} backend · {world}"))]
    missing = rank_groups.missing_line(view.report)
    rows += [("missing", report_text(missing, "yellow"))] if missing else []
    if len(view.ranks) > MAX_RANKS_IN_FULL:
        return rows + _group_rows(view)
    for rank, rank_view in view.rank_views.items():
        status = rank_view.trace.status
        line = report_text(ending(status.reason, status.exit_code, status.signal),
                           "" if _ended_well(status) else "bright_red")
        if not status.complete:
            line.append(clean(f" · incomplete: {status.message or status.reason}"),
                        style="yellow")
        rows.append((f"rank {rank}", line))
        rows += _raised_rows(view, rank, "  ")
    return rows


def _group_rows(view: ReportView) -> Rows:
    """A row per group of ranks that did alike: the rank as its label where it is one,
    else "ranks", with the ranks at the start of the line."""
    rows: Rows = []
    for group in rank_groups.rank_groups(view.report):
        first = view.of(group.ranks[0]).trace.status
        single = len(group.ranks) == 1
        said = group.said if single else f"{rank_ranges(group.ranks)}: {group.said}"
        rows.append((f"rank {group.ranks[0]}" if single else "ranks",
                     report_text(said, "" if _ended_well(first) else "bright_red")))
        rows += _raised_rows(view, group.ranks[0], "  ")
    return rows


def ending(reason: str, exit_code: int | None, signal_number: int | None) -> str:
    if reason == SIGNALLED and signal_number:
        return f"was killed by signal {signal_number} ({signal_name(signal_number)})"
    if reason == INTERRUPTED:
        return f"was stopped by {signal_name(signal_number)} sent to graphdoctor"
    return {EXITED: f"exited with code {exit_code}", "exception": "raised an uncaught exception",
            TIMED_OUT: "ran past its time-out", "killed": "was killed",
            RUNNING: "is running",
            "not-started": "never started"}.get(reason, f"ended ({reason})")


def environment_text(view: ReportView) -> Table:
    meta, trace = view.trace.meta, view.trace
    rows: list[tuple[str, RenderableType]] = [
        ("versions", f"torch {meta.torch or '?'} · CUDA {meta.cuda or '—'} · "
                     f"Python {meta.python or '?'}"),
        ("recorded", f"{meta.started_at or '?'} on {meta.hostname or '?'}"),
    ]
    rows += [(f"GPU {d.index}", f"{d.name} · {format_bytes(d.memory_total)} · "
                                f"sm {d.compute_capability} · driver {d.driver}")
             for d in meta.devices]
    if not meta.devices:
        rows.append(("GPU", Text("CUDA ran; its devices were not recorded" if meta.cuda_available
                                 else "no CUDA device was recorded", style="yellow")))
    rows.append(("command", " ".join(("graphdoctor", *meta.argv))))
    if view.multi_rank:
        rows += [(f"rank {rank}", _devices_used(view.of(rank).devices) + event_counts(trace))
                 for rank, trace in shown_rank_traces(view.report)]
        left = ranks_left_out(view.report)
        rows += [("", report_text(left, "dim"))] if left else []
        rows += [("times", report_text(line)) for line in rank_groups.clock_lines(view.report)]
    else:
        rows.append(("events", event_counts(trace)))
    rows += [("not rec.", report_text(f"{note.what}: {note.why}", "yellow"))
             for note in meta.not_recorded]
    return labelled(rows)


def event_counts(trace: Trace) -> str:
    counts = [kind.counted(len(rows)) for kind in KINDS if len(rows := rows_of(trace, kind))]
    counts.append(counted(len(trace.graphs), "graph"))
    return " · ".join(counts)


def _devices_used(devices: list[int]) -> str:
    return f"on GPU {', '.join(map(str, devices))} · " if devices else ""
