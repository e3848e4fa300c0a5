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

from graphdoctor.trace import anatomy, loop_pace, phases, run_facts
from graphdoctor.trace.builder import Builder
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
    Frame,
    Graph,
    Trace,
)
from graphdoctor.trace.names import (
    COMPILE,
    CUDA_GRAPH,
    EAGER_CALL,
    RECOMPILE,
    RECORDING_TRIGGER,
    REPLAYING_CALL,
    STILL_CAPTURING,
    WARMUP_CALL,
)
from graphdoctor.trace.spool import typed
from graphdoctor.trace.spool.file import read_records, records_in
from graphdoctor.trace.spool.records import SpoolDrift, decode
from graphdoctor.trace.spool.typed import flag, number, ref, text


def assemble_file(path: str | os.PathLike[str], *, limited: bool = False,
                  unwritten: bytes = b"") -> Trace:
    """The trace of a spool file; ``limited`` keeps a stranger's to a report's budget, and
    its records to the types they declare; ``unwritten``: its last lines, which could not
    be appended to it."""
    return assemble(itertools.chain(read_records(path, limited=limited), records_in(unwritten)),
                    checked=limited)


def assemble(records: Iterable[list[Any]], *, checked: bool = False) -> Trace:
    """The trace of a spool's raw records (JSON arrays, tag first); ``checked``: each
    record's values of the types it declares, or it is not read (a stranger's spool:
    :mod:`graphdoctor.trace.spool.typed`)."""
    builder = Builder()
    for raw in records:
        take(builder, raw, checked)
    return _finish(builder)


def take(builder: Builder, raw: list[Any], checked: bool = False) -> None:
    """One raw record into the trace being assembled (``checked``: as :func:`assemble`)."""
    try:
        record = decode(raw)
        if checked:
            typed.checked(type(record), record)
        HANDLERS[type(record)](builder, record)
    except SpoolDrift:
        builder.unknown_tags.add(str(raw[0]))
    except (IndexError, KeyError, TypeError, ValueError, AttributeError):
        builder.bad_records += 1


def so_far(builder: Builder) -> Trace:
    """The trace of the records taken so far, the builder left as it was, to take more:
    what a live view shows of a spool still being written."""
    return _finish(builder.copy())


def _finish(b: Builder) -> Trace:
    trace = b.trace
    b.frames, b.stacks = _bounded(b, b.frames), _bounded(b, b.stacks)
    real = b._place_text_stacks()
    trace.compile_events = [dataclasses.replace(e, stack=real.get(e.stack, e.stack))
                            for e in trace.compile_events]
    trace.frames = _dense(b.frames, Frame("?", 0, "?", "python"))
    trace.stacks = [tuple(f for f in stack if 0 <= f < len(trace.frames))  # named, but never
                    for stack in _dense(b.stacks, ())]  # recorded: a stranger's, or drift
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
    trace.meta = run_facts.meta(b)
    trace.status = run_facts.status(b, trace)
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


# How far the ids of frames and stacks may reach: the recorder numbers them from 0, one per
# record, so a list as long as the largest id is as long as the records that fill it (a few
# more where a spool lost some). An id beyond is not the recorder's, and its record is not
# read: it would make the reader build a list as long as the id (a 4.7 KB spool naming frame
# 1,000,000,000 once took 7.8 GB).
IDS_PER_RECORD = 4
IDS_SLACK = 1 << 16


def _bounded(b: Builder, items: dict[int, Any]) -> dict[int, Any]:
    """``items`` without the ids past what their records could number (counted among the
    records that could not be read)."""
    limit = IDS_SLACK + IDS_PER_RECORD * len(items)
    kept = {i: item for i, item in items.items() if 0 <= i < limit}
    b.bad_records += len(items) - len(kept)
    return kept


def _dense(items: dict[int, Any], filler: Any) -> list[Any]:
    return [items.get(i, filler) for i in range(max(items, default=-1) + 1)]


def _graph(g: dict[str, Any], last_t: int) -> Graph:
    end = g.get("end", {})
    return Graph(
        id=g["id"], api=text(g, "api", CUDA_GRAPH), status=text(end, "status", STILL_CAPTURING),
        capture_start=g["t"], capture_end=number(end, "t", NONE),
        pool=text(end, "pool") or text(g, "pool"), shared_pool=flag(g, "shared_pool"),
        stream=number(g, "stream", 0), capture_error_mode=text(g, "capture_error_mode", "global"),
        stack=ref(g, "stack"), function=ref(g, "function"),
        callees=tuple(c for c in end.get("callees") or () if type(c) is int)
        if isinstance(end.get("callees"), list) else (),
        uncovered=tuple(str(n) for n in end.get("uncovered") or ()
                        if type(n) in (str, int)) if isinstance(end.get("uncovered"), list)
        else (),
        error=ref(end, "error"), internal=flag(g, "internal"),
        pool_bytes=number(end, "pool_bytes", 0), key=text(g, "key"),
        deleted_at=number(g, "deleted", NONE), device=number(g, "device", 0),
        own_ns=sum(max(0, e - s) for s, e in _own_spans(g)),
        basis=text(end, "basis"), step=ref(g, "step"), anatomy=_anatomy(g),
    )


def _anatomy(g: dict[str, Any]) -> anatomy.Anatomy | None:
    """The graph's anatomy, with its kernels' GPU times where a replay was profiled; None
    for one that is not as the recorder writes it (a stranger's spool)."""
    try:
        found = anatomy.from_plain(g.get("anatomy"))
        timed = g.get("kernel_times")
        if found is None or timed is None:
            return found
        return anatomy.with_kernel_times(found, timed[0], timed[1])
    except (TypeError, ValueError, KeyError, IndexError, AttributeError):
        return None


def _own_spans(g: dict[str, Any]) -> list[tuple[int, int]]:
    """graphdoctor's own time inside a capture, as (start, end) spans."""
    spans = g.get("end", {}).get("own", ())
    return [(s[0], s[1]) for s in spans if isinstance(s, (list, tuple)) and len(s) == 2
            and type(s[0]) is int and type(s[1]) is int] if isinstance(spans, list) else []


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


__all__ = ["assemble", "assemble_file", "so_far", "take"]
