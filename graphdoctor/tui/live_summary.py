"""The top of a live view's Summary: the script runs (or the recording has not begun, or has
just ended), for how long, in which phase each rank is, what it is capturing, where its output
goes and what is being read."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from graphdoctor.clean_text import clean
from graphdoctor.trace.model import NONE, Trace
from graphdoctor.trace.names import STILL_CAPTURING
from graphdoctor.tui.live_facts import LiveFacts
from graphdoctor.tui.rendering import labelled
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.safe_text import report_text
from graphdoctor.units import counted, format_duration

Rows = list[tuple[str, Text]]


def live_outcome(view: ReportView, facts: LiveFacts) -> RenderableType:
    """What the Summary says first while the recording is followed."""
    target = clean(view.trace.meta.target) or "the script"
    headline = Text("● ", style="bold yellow")
    if not view.trace.meta.target and not view.trace.meta.started_at:
        headline.append(f"waiting for the recording to start ({clean(facts.following)})")
    elif facts.ended:
        headline.append(target, style="bold")
        headline.append(" has ended: the report is being built")
    else:
        headline.append(target, style="bold")
        headline.append(f" is running · {format_duration(facts.running_ns)} so far")
    rows = [*_doing(view), *source_rows(facts)]
    return Group(headline, labelled(list(rows))) if rows else headline


def _doing(view: ReportView) -> Rows:
    """Each rank's phase, and the graph it is capturing."""
    rows: Rows = []
    for rank, rank_view in view.rank_views.items():
        label = "now" if rank == NONE else f"rank {rank}"
        rows.append((label, report_text(_now(rank_view.trace))))
    return rows


def _now(trace: Trace) -> str:
    capturing = [g.id for g in trace.graphs if g.status == STILL_CAPTURING and not g.internal]
    if capturing:
        return f"capturing graph {capturing[-1]}"
    graphs = [g for g in trace.graphs if not g.internal]
    replays = len(trace.tables["replays"])
    counts = [counted(len(graphs), "graph")] if graphs else []
    counts += [counted(replays, "replay")] if replays else []
    return f"{trace.status.last_phase}{' · ' + ', '.join(counts) + ' so far' if counts else ''}"


def source_rows(facts: LiveFacts) -> Rows:
    """Where the script's output goes, and what the view reads (how often, while it runs)."""
    rows: Rows = []
    if facts.output:
        rows.append(("output", report_text(f"the script's stdout and stderr: {facts.output}")))
    if not facts.report:
        rows.append(("reading", report_text(f"{facts.following}, every "
                                            f"{facts.every_s:g} s", "dim")))
    return rows
