"""Figures and phrases derived from a report, shared by every renderer and by the diff.

Everything here is a pure function of the report. Reports come from files people send
each other, so nothing here trusts a reference: a stack, graph or function id that points
nowhere gives "unknown", never an IndexError.
"""

from __future__ import annotations

import re
import shlex
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphdoctor import units
from graphdoctor.diagnose import compile_costs, stacks_at_end
from graphdoctor.diagnose.model import (
    FAILED,
    FASTER,
    NEUTRAL,
    RERECORDED,
    SEVERITY_RANK,
    SKIPPED,
    SLOWER,
    UNMEASURED,
    UNSAFE,
    Finding,
    Verdict,
)
from graphdoctor.trace import anatomy, locations, queries
from graphdoctor.trace.endings import INTERRUPTED, SIGNALLED, TIMED_OUT, UNKNOWN, signal_name
from graphdoctor.trace.event_kinds import HOST_NOT_TIMED, KINDS, rows_of
from graphdoctor.trace.model import PHASES, ExceptionRecord, Graph, Trace
from graphdoctor.trace.names import CAPTURE_FAILED, IN_PROCESS_TARGET

if TYPE_CHECKING:
    from graphdoctor.report.document import Report

# moved to graphdoctor.units; kept for callers outside this change (report/io.py)
format_bytes = units.format_bytes

# How bad a verdict is, worst highest; a kind this version does not know ranks as unmeasured.
VERDICT_RANK = {FASTER: 0, UNMEASURED: 1, NEUTRAL: 2, RERECORDED: 3, SKIPPED: 3, SLOWER: 4,
                UNSAFE: 5, FAILED: 6}
MAX_THREADS = 8  # threads, and frames of each, in a compact stack dump
MAX_FRAMES = 4
# What a terminal or an editor acts on instead of showing: the C0 controls but tab and
# newline (ESC starts every escape sequence), DEL, the C1 controls (some terminals take U+009B
# as ESC [) and the bidirectional overrides and isolates, which reorder the rest of a line.
UNSAFE_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True)
class PhaseTotal:
    phase: str
    spans: int
    total_ns: int


@dataclass(frozen=True)
class ReplayStats:
    graph: int
    count: int
    host_p50_ns: int | None
    gpu_p50_ns: int | None


def clean(text: str) -> str:
    """Text from a report, safe to print: each character a terminal would act on (the start
    of an escape sequence, a bidi override) becomes ?."""
    return UNSAFE_CHARACTERS.sub("?", text)


def clean_json(text: str) -> str:
    """JSON text safe to print, holding the same data: each character a terminal would act on
    is written as its \\u escape (JSON escapes most controls itself, but not DEL, C1 or bidi)."""
    return UNSAFE_CHARACTERS.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


def phase_totals(trace: Trace) -> list[PhaseTotal]:
    """Time in each phase, known phases first in their usual order."""
    spans: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for span in trace.phases:
        spans[span.phase] += 1
        totals[span.phase] += max(0, span.end - span.start)
    order = [p for p in PHASES if p in spans] + sorted(p for p in spans if p not in PHASES)
    return [PhaseTotal(p, spans[p], totals[p]) for p in order]


def event_counts(trace: Trace) -> dict[str, int]:
    """How many events of each kind the trace holds, in the registry's order."""
    return {kind.name: len(rows_of(trace, kind)) for kind in KINDS}


def graph_status_counts(trace: Trace) -> dict[str, int]:
    return dict(Counter(g.status for g in queries.user_graphs(trace)))


def verdict_rank(verdict: Verdict) -> int:
    return VERDICT_RANK.get(verdict.kind, VERDICT_RANK[UNMEASURED])


def severity_counts(findings: Iterable[Finding]) -> dict[str, int]:
    counts = Counter(f.severity for f in findings)
    return {s: counts[s] for s in sorted(counts, key=lambda s: (SEVERITY_RANK.get(s, 9), s))}


def used_devices(trace: Trace) -> list[int]:
    """The CUDA devices the traced process allocated on or captured on, in order; [] when
    it did neither. (A rank's NVML samples cover every GPU of the host, so they do not say.)"""
    devices = set(trace.tables["allocs"].column("device")) | {g.device for g in trace.graphs}
    return sorted(d for d in devices if d >= 0)


def main_device(trace: Trace) -> int:
    """The device the process did most of its allocating on (else its first graph's, else
    0): where its events that name no device most likely ran."""
    counts: Counter[int] = Counter(d for d in trace.tables["allocs"].column("device") if d >= 0)
    if counts:
        return counts.most_common(1)[0][0]
    return trace.graphs[0].device if trace.graphs else 0


def teardown_calls(trace: Trace) -> list[tuple[int, int | None]]:
    """Each destroy_process_group() call: the index of its beginning in ``trace.teardown``
    and the time it returned, None if it never did (a teardown hang)."""
    calls: list[tuple[int, int | None]] = []
    for index, event in enumerate(trace.teardown):
        if event.kind == "begin":
            calls.append((index, None))
        elif event.kind == "end" and calls and calls[-1][1] is None:
            calls[-1] = (calls[-1][0], event.t)
    return calls


def function_name(trace: Trace, function_id: int) -> str:
    match = next((f for f in trace.functions if f.id == function_id), None)
    return match.name if match else f"function {function_id}"


def replay_stats(trace: Trace) -> dict[int, ReplayStats]:
    """Replays of each graph, with median host and GPU time, of those that were measured
    (GPU time -1, host time HOST_NOT_TIMED: not)."""
    table = trace.tables["replays"]
    count: Counter[int] = Counter()
    host: dict[int, list[int]] = {}
    gpu: dict[int, list[int]] = {}
    columns = (table.column("graph"), table.column("dur"), table.column("gpu"))
    for graph, dur, gpu_ns in zip(*columns, strict=True):
        count[graph] += 1
        if dur != HOST_NOT_TIMED:
            host.setdefault(graph, []).append(dur)
        if gpu_ns >= 0:
            gpu.setdefault(graph, []).append(gpu_ns)
    return {g: ReplayStats(g, n, _median(host.get(g, [])), _median(gpu.get(g, [])))
            for g, n in count.items()}


def _median(values: Sequence[int]) -> int | None:
    return int(statistics.median(values)) if values else None


def compile_counts(trace: Trace) -> dict[str, int]:
    return dict(sorted(Counter(e.kind for e in trace.compile_events).items()))


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


def event_summary(trace: Trace) -> str:
    """"11 allocator actions, 2 synchronizations, ..." (kinds with no events left out)."""
    return ", ".join(kind.counted(len(rows)) for kind in KINDS
                     if len(rows := rows_of(trace, kind)))


def outcome(trace: Trace, timed: bool = True) -> str:
    """How the run ended, as a predicate: "exited with code 1 after 5.33 s"."""
    status = trace.status
    took = units.format_duration(status.wall_ns)
    after = f" after {took}" if status.wall_ns > 0 and timed else ""
    if status.reason == TIMED_OUT:
        return f"timed out and was stopped{after}"
    if status.reason == SIGNALLED:
        return f"was killed by {signal_name(status.signal)} (exit {status.exit_code}){after}"
    if status.reason == INTERRUPTED:
        return (f"was stopped by {signal_name(status.signal)} sent to graphdoctor "
                f"(exit {status.exit_code}){after}")
    if status.reason == UNKNOWN or status.exit_code is None:
        return f"ended without an exit record ({clean(status.reason)}){after}"
    return f"exited with code {status.exit_code}{after}"


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


def environment(trace: Trace) -> list[tuple[str, str]]:
    """(name, value) pairs describing where the run happened, leaving out unknowns."""
    meta = trace.meta
    devices = ", ".join(_device(d.name, d.compute_capability, d.memory_total)
                        for d in meta.devices)
    drivers = ", ".join(sorted({d.driver for d in meta.devices if d.driver}))
    pairs = [("GPU", devices), ("driver", drivers), ("torch", meta.torch), ("CUDA", meta.cuda),
             ("Python", meta.python), ("platform", meta.platform),
             ("recording mode", meta.mode), ("graphdoctor", meta.tool_version),
             ("started", meta.started_at)]
    if meta.world_size > 0:
        pairs.append(("rank", f"{meta.rank} of {meta.world_size}"))
    pairs += [(f"${name}", value) for name, value in meta.env]
    return [(name, clean(str(value))) for name, value in pairs if value]


def _device(name: str, compute_capability: str, memory: int) -> str:
    """A GPU as the environment names it: ``H100 (sm 9.0, 79.2 GiB)``."""
    if not compute_capability:
        return name
    return f"{name} (sm {compute_capability}, {units.format_bytes(memory)})"


def command_line(trace: Trace) -> str:
    """The command that made the recording, or what recorded it inside the user's process."""
    if trace.meta.target_kind == IN_PROCESS_TARGET:
        return clean(f"# recorded in-process: {trace.meta.target}")
    argv = trace.meta.argv or ("run", trace.meta.target)
    return clean("graphdoctor " + shlex.join(argv))


def root_cause(exception: ExceptionRecord) -> str:
    """The first error of a chain, which is the one that names the real problem."""
    if not exception.chain:
        return f"an exception at {exception.where}"
    link = exception.chain[0]
    suffix = f" ({link.cuda_error})" if link.cuda_error else ""
    return clean(f"{link.type}: {first_line(link.message)}{suffix}")


def first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def rank_traces(report: Report) -> list[tuple[int, Trace]]:
    """(rank, trace) for every rank of a distributed run's report; [(-1, trace)] otherwise."""
    return [(rank, report.trace_of(rank)) for rank in report.ranks] or [(-1, report.trace)]


def ranked_graphs(report: Report) -> list[tuple[int, Trace, Graph, ReplayStats | None]]:
    """Every rank's user graphs, each with its rank, trace and replay statistics."""
    found: list[tuple[int, Trace, Graph, ReplayStats | None]] = []
    for rank, trace in rank_traces(report):
        stats = replay_stats(trace)
        found += [(rank, trace, g, stats.get(g.id)) for g in queries.user_graphs(trace)]
    return found


def rank_tag(rank: int) -> str:
    """"rank 1 " before what belongs to a rank; nothing in a single-process report."""
    return f"rank {rank} " if rank >= 0 else ""


def world(report: Report) -> str:
    """A distributed run's ranks, in a phrase ("2 ranks, nccl backend"); "" for one process."""
    if not report.ranks:
        return ""
    backend = f", {clean(report.trace.meta.backend)} backend" if report.trace.meta.backend else ""
    return f"{units.counted(len(report.ranks), 'rank')}{backend}"


def run_outcome(report: Report) -> str:
    """How the run ended, as :func:`outcome` says: "exited with code 1 after 5.33 s"; for a
    distributed run, with its world, and how each rank ended if they ended differently."""
    main = outcome(report.trace)
    if not report.ranks:
        return main
    endings = {rank: outcome(trace) for rank, trace in rank_traces(report)}
    if len(set(endings.values())) == 1:
        return f"({world(report)}) {main}"
    each = "; ".join(f"rank {rank} {ending}" for rank, ending in endings.items())
    return f"({world(report)}) ended differently: {each}"


def headline(report: Report) -> str:
    """One line that says what happened, for a title: the worst verdict or what the trace shows."""
    verdicts = report.diagnosis.verdicts
    if verdicts:
        worst = max(verdicts, key=verdict_rank)
        return clean(f"{worst.subject}: {worst.summary}")
    failed = [g for g in queries.user_graphs(report.trace) if g.status == CAPTURE_FAILED]
    if failed:
        return f"capture of {len(failed)} graph{'s' if len(failed) > 1 else ''} failed"
    if not report.trace.status.complete:
        return f"the run did not complete ({outcome(report.trace)})"
    graphs = queries.user_graphs(report.trace)
    return f"{len(graphs)} graph{'s' if len(graphs) != 1 else ''} captured, no verdict"


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
    called = [_frame_text(f) for f in reversed(thread.called) if not _is_graphdoctors(f)]
    lines = [f"{thread.label}: " + " < ".join(stacks_at_end.spot(f) for f in users)]
    return lines + ([f"  called: {' > '.join(called[:MAX_FRAMES])}"] if called else [])


def _frame_text(frame: stacks_at_end.DumpFrame) -> str:
    """``torch/cuda/__init__.py:1162 in synchronize``: a package's file by its place in the
    package, any other by its name."""
    path = frame[0].replace("\\", "/")
    inside = path.split("-packages/", 1)[1] if "-packages/" in path else locations.file_name(path)
    return f"{inside}:{frame[1]} in {frame[2]}"


def _is_graphdoctors(frame: stacks_at_end.DumpFrame) -> bool:
    return "/graphdoctor/" in frame[0].replace("\\", "/")


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

