"""Build a :class:`Trace` from a spool: a pure function of the records.

The recording child writes raw records; this is where they become the trace: graphs from
their begin and end records, compile events from log text, phases from intervals, the run's
end from the parent's ``run_end``. Because it is pure, a spool recorded on a GPU can be
re-assembled anywhere, by any later graphdoctor. The handler of each record lives in
:mod:`graphdoctor.trace.handlers`.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Iterable
from typing import Any

from graphdoctor.trace import anatomy, cuda_state, loop_pace, phases
from graphdoctor.trace.builder import Builder
from graphdoctor.trace.endings import (
    EXITED,
    INTERRUPTED,
    SIGNALLED,
    TIMED_OUT,
    UNKNOWN,
    signal_name,
)
from graphdoctor.trace.event_kinds import COLUMNAR
from graphdoctor.trace.handlers import HANDLERS
from graphdoctor.trace.model import (
    CAPTURE,
    EAGER,
    NONE,
    OWN,
    REPLAY,
    WARMUP,
    CompileEvent,
    Device,
    Frame,
    Graph,
    Meta,
    Note,
    RunStatus,
    Trace,
)
from graphdoctor.trace.names import (
    COMPILE,
    CUDA_GRAPH,
    EAGER_CALL,
    PATH_TARGET,
    RECOMPILE,
    RECORDING_STOPPED,
    RECORDING_TRIGGER,
    REPLAYING_CALL,
    STILL_CAPTURING,
    WARMUP_CALL,
)
from graphdoctor.trace.spool.file import read_records, records_in
from graphdoctor.trace.spool.records import SpoolDrift, decode


def assemble_file(path: str | os.PathLike[str], *, limited: bool = False,
                  unwritten: bytes = b"") -> Trace:
    """The trace of a spool file; ``limited`` keeps a stranger's to a report's budget;
    ``unwritten``: its last lines, which could not be appended to it."""
    return assemble(itertools.chain(read_records(path, limited=limited), records_in(unwritten)))


def assemble(records: Iterable[list[Any]]) -> Trace:
    """The trace of a spool's raw records (JSON arrays, tag first)."""
    builder = Builder()
    for raw in records:
        take(builder, raw)
    return _finish(builder)


def take(builder: Builder, raw: list[Any]) -> None:
    """One raw record into the trace being assembled."""
    try:
        record = decode(raw)
        HANDLERS[type(record)](builder, record)
    except SpoolDrift:
        builder.unknown_tags.add(str(raw[0]))
    except (IndexError, KeyError, TypeError, ValueError):
        builder.bad_records += 1


def so_far(builder: Builder) -> Trace:
    """The trace of the records taken so far, the builder left as it was, to take more:
    what a live view shows of a spool still being written."""
    return _finish(builder.copy())


def _finish(b: Builder) -> Trace:
    trace = b.trace
    real = b._place_text_stacks()
    trace.compile_events = [dataclasses.replace(e, stack=real.get(e.stack, e.stack))
                            for e in trace.compile_events]
    trace.frames = _dense(b.frames, Frame("?", 0, "?", "python"))
    trace.stacks = _dense(b.stacks, ())
    trace.graphs = [_graph(g, b.last_t) for _, g in sorted(b.graphs.items())]
    # compiles that never ended (the run stopped inside one), keyed "compile id:trigger"
    trace.compile_events += [CompileEvent(t, COMPILE, key.rsplit(":", 1)[0], reason=trigger,
                                          stack=stack, dur=0)
                             for key, (t, trigger, stack) in b.compile_spans.items()]
    trace.compile_events = _with_compile_costs(trace.compile_events)
    for table in trace.tables.values():
        _sort_table(table)
    trace.graphs = _with_paces(trace, b)
    trace.phases = phases.derive(_intervals(b), b.last_t)
    _assign_phases(trace)
    trace.meta = _meta(b)
    trace.status = _status(b, trace)
    return trace


def _with_compile_costs(events: list[CompileEvent]) -> list[CompileEvent]:
    """The events in time order, each recompile lasting as long as its compile id's
    compile spans took (recording CUDA graphs at run time is not compiling), or, where
    torch gave the callbacks no compile id (before 2.8), the compile span it fell in."""
    spans = [e for e in events if e.kind == COMPILE and e.reason != RECORDING_TRIGGER]
    cost: dict[str, int] = {}
    for e in spans:
        if e.compile_id:
            cost[e.compile_id] = cost.get(e.compile_id, 0) + max(e.dur, 0)
    events = [dataclasses.replace(e, dur=cost.get(e.compile_id) or _span_around(spans, e.t))
              if e.kind == RECOMPILE else e for e in events]
    return sorted(events, key=lambda e: e.t)


def _span_around(spans: list[CompileEvent], t: int) -> int:
    return next((s.dur for s in spans if s.t <= t <= s.t + s.dur and s.dur > 0), 0)


def _dense(items: dict[int, Any], filler: Any) -> list[Any]:
    return [items.get(i, filler) for i in range(max(items, default=-1) + 1)]


def _graph(g: dict[str, Any], last_t: int) -> Graph:
    end = g.get("end", {})
    status = end.get("status", STILL_CAPTURING)
    return Graph(
        id=g["id"], api=g.get("api", CUDA_GRAPH), status=status, capture_start=g["t"],
        capture_end=end.get("t", NONE), pool=end.get("pool") or g.get("pool", ""),
        shared_pool=bool(g.get("shared_pool")), stream=int(g.get("stream", 0)),
        capture_error_mode=g.get("capture_error_mode", "global"), stack=g.get("stack", NONE),
        function=g.get("function", NONE), callees=tuple(end.get("callees", ())),
        uncovered=tuple(str(n) for n in end.get("uncovered", ())),
        error=end.get("error", NONE), internal=bool(g.get("internal")),
        pool_bytes=int(end.get("pool_bytes", 0)), key=g.get("key", ""),
        deleted_at=g.get("deleted", NONE), device=int(g.get("device", 0)),
        own_ns=sum(max(0, int(e) - int(s)) for s, e in _own_spans(g)),
        basis=str(end.get("basis", "")), step=int(g.get("step", NONE)),
        anatomy=_anatomy(g),
    )


def _anatomy(g: dict[str, Any]) -> anatomy.Anatomy | None:
    """The graph's anatomy, with its kernels' GPU times where a replay was profiled."""
    found = anatomy.from_plain(g.get("anatomy"))
    timed = g.get("kernel_times")
    if found is None or timed is None:
        return found
    return anatomy.with_kernel_times(found, timed[0], timed[1])


def _own_spans(g: dict[str, Any]) -> list[tuple[int, int]]:
    """graphdoctor's own time inside a capture, as (start, end) spans."""
    spans = g.get("end", {}).get("own", ())
    return [(int(s[0]), int(s[1])) for s in spans if isinstance(s, (list, tuple)) and len(s) == 2]


def _with_paces(trace: Trace, b: Builder) -> list[Graph]:
    """Each graph with its loop's pace over the spans between its timed replays."""
    spans = {gid: g["spans"] for gid, g in b.graphs.items() if g.get("spans")}
    if not spans:
        return trace.graphs
    replays: dict[int, tuple[list[int], list[int], list[int]]] = {}
    data = trace.tables["replays"].data
    for t, dur, graph, thread in zip(data["t"], data["dur"], data["graph"], data["thread"]):
        if graph in spans:
            starts, ends, threads = replays.setdefault(graph, ([], [], []))
            starts.append(t)
            ends.append(t + dur)
            threads.append(thread)
    return [dataclasses.replace(g, paces=loop_pace.paces(spans[g.id], *replays[g.id]))
            if g.id in spans and g.id in replays else g for g in trace.graphs]


def _sort_table(table: Any) -> None:
    times = table.data["t"]
    if all(a <= b for a, b in zip(times, times[1:])):
        return
    order = sorted(range(len(times)), key=times.__getitem__)
    for name, column in table.data.items():
        table.data[name] = [column[i] for i in order]


# The phase a timed call's mode puts its span in (recording and skipped calls: none).
CALL_PHASES = {WARMUP_CALL: WARMUP, REPLAYING_CALL: REPLAY, EAGER_CALL: EAGER}


def _intervals(b: Builder) -> Iterable[phases.Interval]:
    trace = b.trace
    captures = [(g["t"], g.get("end", {}).get("t", b.last_t), g["id"])
                for g in b.graphs.values() if not g.get("internal")]
    for start, end, gid in captures:
        yield phases.Interval(start, end, CAPTURE, gid)
    for g in b.graphs.values():
        for start, end in _own_spans(g):
            yield phases.Interval(start, end, OWN, g["id"])
    replays = trace.tables["replays"].data
    for t, dur, graph in zip(replays["t"], replays["dur"], replays["graph"]):
        yield phases.Interval(t, t + dur, REPLAY, graph)
    calls = trace.tables["calls"].data
    for t, dur, mode in zip(calls["t"], calls["dur"], calls["mode"]):
        phase = CALL_PHASES.get(mode)
        if phase is not None:
            yield phases.Interval(t, t + dur, phase)
    for _, start, end in b.regions:
        first_capture = min((s for s, _, _ in captures if start <= s <= end), default=end)
        yield phases.Interval(start, first_capture, WARMUP)
    yield from _manual_warmups(trace, [s for s, _, _ in captures])


def _manual_warmups(trace: Trace, capture_starts: list[int]) -> Iterable[phases.Interval]:
    """A side-stream block before a capture (the documented warmup pattern)."""
    ops = trace.tables["stream_ops"].data
    open_at: dict[tuple[int, int], int] = {}
    for t, op, stream, graph, thread in zip(ops["t"], ops["op"], ops["stream"], ops["graph"],
                                            ops["thread"]):
        if graph != NONE or stream in (0, NONE):
            continue
        if op == "enter":
            open_at.setdefault((thread, stream), t)
        elif op == "exit" and (thread, stream) in open_at:
            start = open_at.pop((thread, stream))
            if any(s > t for s in capture_starts) and not any(start <= s <= t
                                                               for s in capture_starts):
                yield phases.Interval(start, t, WARMUP)


def _assign_phases(trace: Trace) -> None:
    index = phases.PhaseIndex(trace.phases)
    for kind in COLUMNAR:
        if not kind.phased:
            continue
        data = trace.tables[kind.name].data
        data["phase"] = [index.phase_at(t) for t in data["t"]]
        if kind.name == "allocs":  # what a capture allocated, read back as it ends
            data["phase"] = [CAPTURE if graph >= 0 and phase == OWN else phase
                             for graph, phase in zip(data["graph"], data["phase"])]


def _meta(b: Builder) -> Meta:
    m = b.meta
    devices = tuple(Device(d.get("index", i), d.get("name", ""), int(d.get("memory_total", 0)),
                           d.get("compute_capability", ""), d.get("driver", ""))
                    for i, d in enumerate(m.get("devices", [])))
    notes = list(b.notes)
    unread = cuda_state.unread_note(b)
    if unread is not None:
        notes.append(unread)
    if b.untimed:
        were = "was" if b.untimed == 1 else "were"
        notes.append(Note("GPU time of some replays and calls",
                          f"{b.untimed} {were} not timed (inside a capture, with the GPU too far "
                          "behind to hold more CUDA events, or, seen through CUPTI, with no "
                          "stream known to time them on)"))
    if b.bad_records:
        notes.append(Note("some records", f"{b.bad_records} spool records could not be read"))
    if b.unknown_tags:
        notes.append(Note("some records", "records this graphdoctor does not declare (a newer "
                          f"recorder's?): {', '.join(sorted(b.unknown_tags))}"))
    return Meta(
        tool_version=m.get("tool_version", ""), argv=tuple(m.get("argv", ())),
        target=m.get("target", ""), target_kind=m.get("target_kind", PATH_TARGET),
        cwd=m.get("cwd", ""), started_at=m.get("started_at", ""), mode=m.get("mode", "default"),
        python=m.get("python", ""), torch=m.get("torch", ""), cuda=m.get("cuda", ""),
        platform=m.get("platform", ""), hostname=m.get("hostname", ""),
        cuda_available=cuda_state.cuda_available(b), devices=devices,
        not_recorded=tuple(notes), env=tuple(tuple(kv) for kv in m.get("env", ())),
        rank=int(m.get("rank", NONE)), world_size=int(m.get("world_size", NONE)),
        backend=str(m.get("backend", "")), sources=tuple(b.sources.values()),
        clock_unix_ns=int(m.get("clock_unix_ns", 0)),
    )


def _status(b: Builder, trace: Trace) -> RunStatus:
    run_end = b.run_end or {}
    reason = run_end.get("reason", UNKNOWN)
    finished = b.end is not None
    # a rank's own exit code when it finished; the launcher's (or the signal's) otherwise
    exit_code = (b.end or {}).get("exit_code", run_end.get("exit_code")) \
        if reason == EXITED else run_end.get("exit_code")
    last_phase = phases.PhaseIndex(trace.phases).phase_at(b.last_t)
    stopped = str(run_end.get("spool_error") or next(
        (n.why for n in b.notes if n.what == RECORDING_STOPPED), ""))
    return RunStatus(
        complete=finished and reason == EXITED, reason=reason, exit_code=exit_code,
        signal=run_end.get("signal"), last_phase=last_phase,
        message=_status_message(reason, run_end, finished, stopped),
        wall_ns=run_end.get("wall_ns", 0),
        stacks_at_end=run_end.get("stacks", "") if not finished or reason != EXITED else "",
        recording_stopped=stopped,
    )


def _status_message(reason: str, run_end: dict[str, Any], finished: bool, stopped: str) -> str:
    if reason == TIMED_OUT:
        return f"the script ran past the {run_end.get('timeout_s')} s time-out and was killed"
    if reason == SIGNALLED:
        return f"the script was killed by {signal_name(run_end.get('signal'))}"
    if reason == INTERRUPTED:
        return (f"graphdoctor was sent {signal_name(run_end.get('signal'))} and passed it on "
                "to the script")
    if reason == UNKNOWN:
        return "the recording has no end record: graphdoctor itself was interrupted"
    if not finished and stopped:
        return (f"the recording stops early: its spool could not be written to the end "
                f"({stopped}); the script ran on without it")
    if not finished:
        return "the script ended without letting graphdoctor finish (os._exit or a fatal error)"
    return ""


__all__ = ["assemble", "assemble_file", "so_far", "take"]
