"""What the text report, the markdown and the TUI say alike of a report: its headline and
outcome, the command, the ranks, folded findings, compile costs, crash stacks and graph
contents, worded once."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from graphdoctor import units
from graphdoctor.clean_text import clean
from graphdoctor.diagnose import compile_costs, stacks_at_end
from graphdoctor.diagnose.findings import ERROR, Finding, severity_counts, verdict_rank
from graphdoctor.diagnose.view import ranks_named
from graphdoctor.facts import locations, queries
from graphdoctor.facts.tallies import ReplayStats, replay_stats
from graphdoctor.own_code import is_own_file
from graphdoctor.report import children, rank_groups
from graphdoctor.trace import anatomy
from graphdoctor.trace.endings import outcome
from graphdoctor.trace.model import Graph, Trace
from graphdoctor.trace.names import CAPTURE_FAILED, CHILD_TARGET, IN_PROCESS_TARGET

if TYPE_CHECKING:
    from graphdoctor.report.document import Report

# A job of more ranks has its per-rank details shown for one rank of each group that did
# alike: beyond this, a line per rank buries the rank that differs.
MAX_RANKS_IN_FULL = 4


def compile_costs_by_function(trace: Trace) -> list[tuple[str, int, int, int, str]]:
    """(function, compiles, recompiles, compile time in ns, share of the run) of each
    function torch.compile compiled."""
    rows = []
    for frame in compile_costs.compiled_frames(trace):
        share = compile_costs.share(trace, frame.compile_ns)
        rows.append((frame.name, frame.compiles, len(frame.recompiles), frame.compile_ns,
                     f"{share:.0%}" if share is not None else "-"))
    return rows


def folded(finding: Finding) -> str:
    """`` (×40, first at 1.2 s, last at 9.8 s)`` for a finding that stands for several."""
    if finding.count <= 1:
        return ""
    first, last = units.format_duration(finding.first_t), units.format_duration(finding.last_t)
    when = f", first at {first}, last at {last}" if finding.first_t >= 0 else ""
    return f" (×{finding.count}{when})"


BASELINE_TITLE = "Baseline run (graphdoctor run --baseline)"


def baseline_lines(report: Report) -> list[str]:
    """What the second run of ``run --baseline`` was, one line each: how it ended and what
    it timed, then what it switched off and what it kept; [] without one."""
    run = report.baseline
    if run is None:
        return []
    lines = [f"the script ran again with CUDA graphs off and {run.outcome}; "
             f"{units.counted(run.eager_calls, 'eager call')} timed"]
    lines += [f"switched off: {what}" for what in run.switched_off]
    lines += [f"kept as written: {what}" for what in run.kept_as_written]
    return [clean(line) for line in lines]


def command_line(trace: Trace) -> str:
    """The command that made the recording, or what recorded it inside the user's process."""
    if trace.meta.target_kind == IN_PROCESS_TARGET:
        return clean(f"# recorded in-process: {trace.meta.target}")
    if trace.meta.target_kind == CHILD_TARGET:  # a process the script started: its own
        return clean(shlex.join(trace.meta.command))
    argv = trace.meta.argv or ("run", trace.meta.target)
    return clean("graphdoctor " + shlex.join(argv))


def severities_counted(findings: Sequence[Finding]) -> str:
    """``3 errors, 1 info``: the findings by severity, most severe first; "" for none."""
    return ", ".join(units.counted(n, severity, plural=severity if severity == "info" else "")
                     for severity, n in severity_counts(findings).items())


def rank_traces(report: Report) -> list[tuple[int, Trace]]:
    """(rank, trace) for every rank of a distributed run's report; [(-1, trace)] otherwise."""
    return [(rank, report.trace_of(rank)) for rank in report.ranks] or [(-1, report.trace)]


def shown_rank_traces(report: Report) -> list[tuple[int, Trace]]:
    """The ranks whose details a summary shows: every rank of a job of up to
    MAX_RANKS_IN_FULL, else the first rank of each group of ranks that did alike (the
    Ranks section lists the groups; :func:`ranks_left_out` says who is not shown)."""
    if len(report.ranks) <= MAX_RANKS_IN_FULL:
        return rank_traces(report)
    return [(group.ranks[0], report.trace_of(group.ranks[0]))
            for group in rank_groups.rank_groups(report)]


def ranks_left_out(report: Report) -> str:
    """Which ranks' details :func:`shown_rank_traces` leaves out, or ""."""
    shown = {rank for rank, _ in shown_rank_traces(report)}
    left = [rank for rank in report.ranks if rank not in shown]
    return (f"{ranks_named(left)} not shown: each did what the first rank of its group did "
            "(see Ranks)") if left else ""


RankedGraph = tuple[int, Trace, Graph, ReplayStats | None]


def ranked_graphs(report: Report) -> list[RankedGraph]:
    """The user graphs of every rank shown (:func:`shown_rank_traces`), each with its rank,
    trace and replay statistics."""
    found: list[RankedGraph] = []
    for rank, trace in shown_rank_traces(report):
        stats = replay_stats(trace)
        found += [(rank, trace, g, stats.get(g.id)) for g in queries.user_graphs(trace)]
    return found


def rank_tag(rank: int) -> str:
    """"rank 1 " before what belongs to a rank; nothing in a single-process report."""
    return f"rank {rank} " if rank >= 0 else ""


def world(report: Report) -> str:
    """A distributed run's ranks, in a phrase ("2 ranks, nccl backend", "8 ranks on 2
    hosts, nccl backend"); "" for one process."""
    if not report.ranks:
        return ""
    backend = f", {clean(report.trace.meta.backend)} backend" if report.trace.meta.backend else ""
    hosts = {report.trace_of(rank).meta.hostname for rank in report.ranks}
    spread = f" on {units.counted(len(hosts), 'host')}" if len(hosts) > 1 else ""
    return f"{units.counted(len(report.ranks), 'rank')}{spread}{backend}"


def run_outcome(report: Report) -> str:
    """How the run ended, as :func:`outcome` says: "exited with code 1 after 5.33 s"; for a
    distributed run, with its world, and how its ranks ended if they ended differently (the
    ranks that ended alike named together)."""
    main = outcome(report.trace)
    if not report.ranks:
        return main
    endings: dict[str, list[int]] = {}
    for rank, trace in rank_traces(report):
        endings.setdefault(outcome(trace, timed=False), []).append(rank)
    if len(endings) == 1:
        return f"({world(report)}) {main}"
    each = "; ".join(f"{ranks_named(ranks)} {ending}" for ending, ranks in endings.items())
    return f"({world(report)}) ended differently: {each}"


def headline(report: Report) -> str:
    """One line that says what happened, for a title: the worst verdict or what the trace shows."""
    verdicts = report.diagnosis.verdicts
    if verdicts:
        worst = max(verdicts, key=verdict_rank)
        return clean(f"{worst.subject}: {worst.summary}")
    errors = [f for f in report.diagnosis.findings if f.severity == ERROR]
    if errors:  # a job whose ranks diverged, or hung, has no graph to give a verdict on
        return clean(errors[0].title)
    failed = [g for g in queries.user_graphs(report.trace) if g.status == CAPTURE_FAILED]
    if failed:
        return f"capture of {len(failed)} graph{'s' if len(failed) > 1 else ''} failed"
    if not report.trace.status.complete:
        return f"the run did not complete ({outcome(report.trace)})"
    graphs = queries.user_graphs(report.trace)
    return f"{len(graphs)} graph{'s' if len(graphs) != 1 else ''} captured, no verdict"


MAX_THREADS = 8  # threads, and frames of each, in a compact stack dump


MAX_FRAMES = 4


def stack_lines(dump: str) -> list[str]:
    """A faulthandler dump, compactly: a line per thread with the user's frames (innermost
    first), then what they called; threads with no frame of the user's are counted."""
    threads = stacks_at_end.parse(dump)
    shown = [t for t in threads if t.user_frame][:MAX_THREADS]
    lines = [line for thread in shown for line in _thread_lines(thread)]
    hidden = len(threads) - len(shown)
    if hidden:
        lines.append(f"{units.counted(hidden, 'other thread')} (graphdoctor's, Python's or "
                     "torch's own) left out")
    return [clean(line) for line in lines]


def _thread_lines(thread: stacks_at_end.ThreadStack) -> list[str]:
    start = thread.user_index or 0
    users = [f for f in thread.frames[start:] if stacks_at_end.is_users(f)][:MAX_FRAMES]
    called = [locations.frame_text(stacks_at_end.as_frame(f), path=locations.package_or_name)
              for f in reversed(thread.called) if not is_own_file(f[0])]
    lines = [f"{thread.label}: " + " < ".join(stacks_at_end.spot(f) for f in users)]
    return lines + ([f"  called: {' > '.join(called[:MAX_FRAMES])}"] if called else [])


MAX_CONTENTS = 12  # graphs whose content the text and markdown reports list


def graph_contents(report: Report) -> list[tuple[str, str, list[str]]]:
    """What each graph holds, for the reports: (its name, with the rank in a multi-rank
    report; its nodes and shape in a line; its largest kernel groups), for the graphs whose
    anatomy was read, at most MAX_CONTENTS of them."""
    read = [(rank, g, g.anatomy) for rank, trace in rank_traces(report)
            for g in queries.user_graphs(trace) if g.anatomy is not None][:MAX_CONTENTS]
    return [(f"{rank_tag(rank)}graph {g.id}", anatomy.summary(found),
             anatomy.top_kernels(found) + [f"host node: {f}" for f in found.host_functions[:3]])
            for rank, g, found in read]


MAX_CHILDREN = 10  # processes the script started whose verdicts and findings are shown
MAX_CHILDREN_NAMED = 30  # and the others, named in a line each


def shown_children(report: Report) -> tuple[list[Report], list[Report]]:
    """The processes the script started whose details the reports show (those with more to
    show than how they ended, up to MAX_CHILDREN), and the rest, each named in a line."""
    noteworthy = [child for child in report.children if children.noteworthy(child)]
    shown = noteworthy[:MAX_CHILDREN]
    kept = {id(child) for child in shown}
    return shown, [child for child in report.children if id(child) not in kept]


def children_left_out(report: Report) -> str:
    """How many of the processes the script started no line names, or ""."""
    left = len(shown_children(report)[1]) - MAX_CHILDREN_NAMED
    return f"... and {left} more: graphdoctor report --format json lists them all" \
        if left > 0 else ""


def child_heading(report: Report, child: Report) -> str:
    """``child 12345 (python -c ...), started by the script: exited with code 1 after 2.1 s
    · 1 error``."""
    counts = severities_counted(child.diagnosis.findings)
    return clean(f"{children.label(child.trace.meta)}, started by "
                 f"{children.started_by(report, child)}: {outcome(child.trace)}"
                 + (f" · {counts}" if counts else ""))


def children_title(report: Report) -> str:
    return f"Processes the script started ({len(report.children)})"
