"""What a trace holds, counted and summed: time per phase, events per kind, graphs per
status, replays and their medians per graph, compile events, devices, the environment.

Pure functions of a trace, shared by the report, its renderers, the diff and the TUI. Traces
come from files people send each other, so nothing here trusts a reference: a stack, graph
or function id that points nowhere gives "unknown", never an IndexError.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from graphdoctor import units
from graphdoctor.clean_text import clean, first_line
from graphdoctor.facts import queries
from graphdoctor.trace.event_kinds import HOST_NOT_TIMED, KINDS, rows_of
from graphdoctor.trace.model import PHASES, ExceptionRecord, Trace


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


def replay_stats(trace: Trace) -> dict[int, ReplayStats]:
    """Replays of each graph that replayed (counted as :func:`queries.replay_count` does, the
    recorder's running count included), with median host and GPU time of those measured
    (GPU time -1, host time HOST_NOT_TIMED: not)."""
    table = trace.tables["replays"]
    host: dict[int, list[int]] = {}
    gpu: dict[int, list[int]] = {}
    columns = (table.column("graph"), table.column("dur"), table.column("gpu"))
    for graph, dur, gpu_ns in zip(*columns, strict=True):
        if dur != HOST_NOT_TIMED:
            host.setdefault(graph, []).append(dur)
        if gpu_ns >= 0:
            gpu.setdefault(graph, []).append(gpu_ns)
    return {g: ReplayStats(g, n, _median(host.get(g, [])), _median(gpu.get(g, [])))
            for g, n in queries.replay_counts(trace).items() if n}


def _median(values: Sequence[int]) -> int | None:
    return int(statistics.median(values)) if values else None


def compile_counts(trace: Trace) -> dict[str, int]:
    return dict(sorted(Counter(e.kind for e in trace.compile_events).items()))


def event_summary(trace: Trace) -> str:
    """"11 allocator actions, 2 synchronizations, ..." (kinds with no events left out)."""
    return ", ".join(kind.counted(len(rows)) for kind in KINDS
                     if len(rows := rows_of(trace, kind)))


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


def root_cause(exception: ExceptionRecord) -> str:
    """The first error of a chain, which is the one that names the real problem."""
    if not exception.chain:
        return f"an exception at {exception.where}"
    link = exception.chain[0]
    suffix = f" ({link.cuda_error})" if link.cuda_error else ""
    return clean(f"{link.type}: {first_line(link.message)}{suffix}")
