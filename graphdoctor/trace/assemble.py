"""Build a :class:`Trace` from a spool: a pure function of the records.

The recording child writes raw records; this is where they become the trace: graphs from
their begin and end records, compile events from log text, phases from intervals, the run's
end from the parent's ``run_end``. Because it is pure, a spool recorded on a GPU can be
re-assembled anywhere, by any later graphdoctor.
"""

from __future__ import annotations

import dataclasses
import os
import signal as signals
from collections.abc import Iterable
from typing import Any

from graphdoctor.trace import compile_logs, phases
from graphdoctor.trace.frames import classify_path, trim_runner_frames
from graphdoctor.trace.model import (
    EAGER,
    NONE,
    REPLAY,
    WARMUP,
    Alloc,
    Call,
    Collective,
    CompileEvent,
    Device,
    ErrorLink,
    ExceptionRecord,
    Frame,
    Function,
    GpuSample,
    Graph,
    InputEvent,
    MemorySample,
    Meta,
    Note,
    Replay,
    RunStatus,
    StreamOp,
    Sync,
    TeardownEvent,
    Trace,
    WarningRecord,
)
from graphdoctor.trace.spool import read_records


def assemble_file(path: str | os.PathLike[str]) -> Trace:
    return assemble(read_records(path))


def assemble(records: Iterable[list[Any]]) -> Trace:
    builder = _Builder()
    for record in records:
        handler = _HANDLERS.get(record[0])
        if handler is not None:
            try:
                handler(builder, record)
            except (IndexError, KeyError, TypeError, ValueError):
                builder.bad_records += 1
    return builder.finish()


class _Builder:
    def __init__(self) -> None:
        self.trace = Trace()
        self.meta: dict[str, Any] = {}
        self.notes: list[Note] = []
        self.frames: dict[int, Frame] = {}
        self.stacks: dict[int, tuple[int, ...]] = {}
        self.graphs: dict[int, dict[str, Any]] = {}
        self.compile_spans: dict[str, tuple[int, str, int]] = {}
        self.regions: list[tuple[str, int, int]] = []
        self.end: dict[str, Any] | None = None
        self.run_end: dict[str, Any] | None = None
        self.cuda: dict[str, Any] = {}
        self.last_t = 0
        self.bad_records = 0
        self.untimed = 0
        self.text_stacks: list[tuple[tuple[str, int, str], ...]] = []
        self.open_collectives: dict[int, int] = {}  # token -> row

    def see(self, t: int) -> int:
        self.last_t = max(self.last_t, t)
        return t

    # -- frames from text ----------------------------------------------------------------
    def text_stack(self, frames: list[tuple[str, int, str]]) -> int:
        """A placeholder id for a stack read from log text; made real in ``finish``, after
        every stack id the child handed out is known."""
        self.text_stacks.append(tuple(trim_runner_frames(frames)))
        return -2 - (len(self.text_stacks) - 1)

    def _place_text_stacks(self) -> dict[int, int]:
        real: dict[int, int] = {}
        next_frame = max(self.frames, default=-1) + 1
        next_stack = max(self.stacks, default=-1) + 1
        for index, frames in enumerate(self.text_stacks):
            ids = []
            for file, line, func in frames:
                self.frames[next_frame] = Frame(file, line, func, classify_path(file))
                ids.append(next_frame)
                next_frame += 1
            self.stacks[next_stack] = tuple(ids)
            real[-2 - index] = next_stack
            next_stack += 1
        return real

    # -- result --------------------------------------------------------------------------
    def finish(self) -> Trace:
        trace = self.trace
        real = self._place_text_stacks()
        trace.compile_events = [dataclasses.replace(e, stack=real.get(e.stack, e.stack))
                                for e in trace.compile_events]
        trace.frames = _dense(self.frames, Frame("?", 0, "?", "python"))
        trace.stacks = _dense(self.stacks, ())
        trace.graphs = [_graph(g, self.last_t) for _, g in sorted(self.graphs.items())]
        trace.compile_events += [CompileEvent(t, "compile", cid, reason=trigger, stack=stack,
                                              dur=0) for cid, (t, trigger, stack)
                                 in self.compile_spans.items()]
        trace.compile_events.sort(key=lambda e: e.t)
        for table in trace.tables.values():
            _sort_table(table)
        trace.phases = phases.derive(_intervals(self), self.last_t)
        _assign_phases(trace)
        trace.meta = _meta(self)
        trace.status = _status(self, trace)
        return trace


def _dense(items: dict[int, Any], filler: Any) -> list[Any]:
    return [items.get(i, filler) for i in range(max(items, default=-1) + 1)]


def _graph(g: dict[str, Any], last_t: int) -> Graph:
    end = g.get("end", {})
    status = end.get("status", "capturing")
    return Graph(
        id=g["id"], api=g.get("api", "CUDAGraph"), status=status, capture_start=g["t"],
        capture_end=end.get("t", NONE), pool=end.get("pool") or g.get("pool", ""),
        shared_pool=bool(g.get("shared_pool")), stream=int(g.get("stream", 0)),
        capture_error_mode=g.get("capture_error_mode", "global"), stack=g.get("stack", NONE),
        function=g.get("function", NONE), callees=tuple(end.get("callees", ())),
        error=end.get("error", NONE), internal=bool(g.get("internal")),
        pool_bytes=int(end.get("pool_bytes", 0)), key=g.get("key", ""),
        deleted_at=g.get("deleted", NONE), device=int(g.get("device", 0)),
    )


def _sort_table(table: Any) -> None:
    times = table.data["t"]
    if all(a <= b for a, b in zip(times, times[1:])):
        return
    order = sorted(range(len(times)), key=times.__getitem__)
    for name, column in table.data.items():
        table.data[name] = [column[i] for i in order]


def _intervals(b: _Builder) -> Iterable[phases.Interval]:
    trace = b.trace
    captures = [(g["t"], g.get("end", {}).get("t", b.last_t), g["id"])
                for g in b.graphs.values() if not g.get("internal")]
    for start, end, gid in captures:
        yield phases.Interval(start, end, "capture", gid)
    replays = trace.tables["replays"].data
    for t, dur, graph in zip(replays["t"], replays["dur"], replays["graph"]):
        yield phases.Interval(t, t + dur, REPLAY, graph)
    calls = trace.tables["calls"].data
    for t, dur, mode in zip(calls["t"], calls["dur"], calls["mode"]):
        phase = {"warmup": WARMUP, "replay": REPLAY}.get(mode, EAGER if mode == "eager" else None)
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
    for name in ("allocs", "syncs", "stream_ops", "memory", "collectives"):
        data = trace.tables[name].data
        data["phase"] = [index.phase_at(t) for t in data["t"]]


def _meta(b: _Builder) -> Meta:
    m = b.meta
    devices = tuple(Device(d.get("index", i), d.get("name", ""), int(d.get("memory_total", 0)),
                           d.get("compute_capability", ""), d.get("driver", ""))
                    for i, d in enumerate(m.get("devices", [])))
    notes = list(b.notes)
    if b.untimed:
        notes.append(Note("GPU time of some replays and calls",
                          f"{b.untimed} were not timed (inside a capture, or the GPU was too far "
                          "behind to hold more CUDA events)"))
    if b.bad_records:
        notes.append(Note("some records", f"{b.bad_records} spool records could not be read"))
    return Meta(
        tool_version=m.get("tool_version", ""), argv=tuple(m.get("argv", ())),
        target=m.get("target", ""), target_kind=m.get("target_kind", "path"),
        cwd=m.get("cwd", ""), started_at=m.get("started_at", ""), mode=m.get("mode", "default"),
        python=m.get("python", ""), torch=m.get("torch", ""), cuda=m.get("cuda", ""),
        platform=m.get("platform", ""), hostname=m.get("hostname", ""),
        cuda_available=bool(b.cuda.get("available", False)), devices=devices,
        not_recorded=tuple(notes), env=tuple(tuple(kv) for kv in m.get("env", ())),
        rank=int(m.get("rank", NONE)), world_size=int(m.get("world_size", NONE)),
        backend=str(m.get("backend", "")),
    )


def _status(b: _Builder, trace: Trace) -> RunStatus:
    run_end = b.run_end or {}
    reason = run_end.get("reason", "unknown")
    finished = b.end is not None
    # a rank's own exit code when it finished; the launcher's (or the signal's) otherwise
    exit_code = (b.end or {}).get("exit_code", run_end.get("exit_code")) \
        if reason == "exited" else run_end.get("exit_code")
    last_phase = phases.PhaseIndex(trace.phases).phase_at(b.last_t)
    return RunStatus(
        complete=finished and reason == "exited", reason=reason, exit_code=exit_code,
        signal=run_end.get("signal"), last_phase=last_phase,
        message=_status_message(reason, run_end, finished), wall_ns=run_end.get("wall_ns", 0),
        stacks_at_end=run_end.get("stacks", "") if not finished or reason != "exited" else "",
    )


def _status_message(reason: str, run_end: dict[str, Any], finished: bool) -> str:
    if reason == "timeout":
        return f"the script ran past the {run_end.get('timeout_s')} s time-out and was killed"
    if reason == "signal":
        number = run_end.get("signal") or 0
        try:
            name = signals.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"the script was killed by {name}"
    if reason == "unknown":
        return "the recording has no end record: graphdoctor itself was interrupted"
    if not finished:
        return "the script ended without letting graphdoctor finish (os._exit or a fatal error)"
    return ""


# -- record handlers ------------------------------------------------------------------------
def _hello(b: _Builder, r: list[Any]) -> None:
    b.meta.update(r[1])


def _meta_record(b: _Builder, r: list[Any]) -> None:
    b.meta.update(r[1])


def _devices(b: _Builder, r: list[Any]) -> None:
    b.meta["devices"] = r[1]


def _note(b: _Builder, r: list[Any]) -> None:
    b.notes.append(Note(str(r[1]), str(r[2])))


def _frame(b: _Builder, r: list[Any]) -> None:
    b.frames[r[1]] = Frame(r[2], int(r[3]), r[4], r[5])


def _stack(b: _Builder, r: list[Any]) -> None:
    b.stacks[r[1]] = tuple(r[2])


def _fn(b: _Builder, r: list[Any]) -> None:
    b.trace.functions.append(Function(r[1], r[2], r[3], r[4], int(r[5]), r[6]))


def _graph_begin(b: _Builder, r: list[Any]) -> None:
    b.graphs[r[1]["id"]] = dict(r[1])
    b.see(r[1]["t"])


def _graph_end(b: _Builder, r: list[Any]) -> None:
    b.graphs.setdefault(r[1]["id"], {"id": r[1]["id"], "t": r[1]["t"]})["end"] = r[1]
    b.see(r[1]["t"])


def _graph_del(b: _Builder, r: list[Any]) -> None:
    if r[1] in b.graphs:
        b.graphs[r[1]]["deleted"] = r[2]


def _row(table: str, row_type: Any, width: int) -> Any:
    def handle(b: _Builder, r: list[Any]) -> None:
        values = r[1:1 + width]
        b.trace.tables[table].append(row_type._make(values))
        b.see(values[0] + (values[1] if table in ("replays", "calls") else 0))

    return handle


def _alloc(b: _Builder, r: list[Any]) -> None:
    t, action, addr, size, stream, pool, graph, stack = r[1:9]
    device = r[9] if len(r) > 9 else 0
    b.trace.tables["allocs"].append(Alloc(t, action, addr, size, stream, pool, graph, EAGER,
                                          stack, device))
    b.see(t)


def _tree_inputs(b: _Builder, r: list[Any]) -> None:
    t, fn, _, count, size = r[1:6]
    functions = b.trace.functions
    for i, function in enumerate(functions):
        if function.id == fn and size >= function.copied_bytes:
            functions[i] = dataclasses.replace(function, copied_inputs=int(count),
                                               copied_bytes=int(size))
    b.see(t)


def _coll(b: _Builder, r: list[Any]) -> None:
    token, t, op, group, seq, size, _async, graph, thread, stack = r[1:11]
    b.open_collectives[token] = len(b.trace.tables["collectives"])
    b.trace.tables["collectives"].append(Collective(t, -1, op, group, seq, size, graph, EAGER,
                                                    thread, stack))
    b.see(t)


def _coll_end(b: _Builder, r: list[Any]) -> None:
    token, t = r[1:3]
    index = b.open_collectives.pop(token, None)
    if index is not None:
        durations = b.trace.tables["collectives"].data["dur"]
        durations[index] = t - b.trace.tables["collectives"].data["t"][index]
    b.see(t)


def _dist(b: _Builder, r: list[Any]) -> None:
    b.meta.update({k: v for k, v in r[1].items() if k in ("backend", "rank", "world_size")})


def _teardown(b: _Builder, r: list[Any]) -> None:
    t, kind, stack = r[1:4]
    b.trace.teardown.append(TeardownEvent(b.see(t), kind, stack))


def _input(b: _Builder, r: list[Any]) -> None:
    t, graph, kind, addr, size, stack, replays = r[1:8]
    b.trace.input_events.append(InputEvent(b.see(t), graph, kind, addr, size, stack, replays))


def _sync(b: _Builder, r: list[Any]) -> None:
    t, kind, stream, graph, thread, stack = r[1:7]
    b.trace.tables["syncs"].append(Sync(t, kind, stream, graph, EAGER, thread, stack))
    b.see(t)


def _sop(b: _Builder, r: list[Any]) -> None:
    t, op, stream, other, graph, thread, stack = r[1:8]
    b.trace.tables["stream_ops"].append(StreamOp(t, op, stream, other, graph, EAGER, thread, stack))
    b.see(t)


def _mem(b: _Builder, r: list[Any]) -> None:
    t, allocated, reserved, graph = r[1:5]
    b.trace.tables["memory"].append(MemorySample(t, allocated, reserved, graph, EAGER))
    b.see(t)


def _exc(b: _Builder, r: list[Any]) -> None:
    e = r[1]
    chain = tuple(ErrorLink(str(c[0]), str(c[1]), str(c[2]), int(c[3])) for c in e["chain"])
    b.trace.exceptions.append(ExceptionRecord(e["id"], b.see(e["t"]), e["where"],
                                              e.get("graph", NONE), e.get("thread", 0), chain))


def _log(b: _Builder, r: list[Any]) -> None:
    t, logger, level, message, compile_id, stack = r[1:7]
    parsed = compile_logs.parse(logger, message)
    if parsed is None:
        return
    frames = parsed.pop("frames", None)
    event = CompileEvent(t, parsed["kind"], parsed.get("compile_id") or compile_id,
                         parsed.get("function", ""), parsed.get("reason", ""),
                         parsed.get("detail", ""), parsed.get("key", ""),
                         b.text_stack(frames) if frames else stack)
    b.trace.compile_events.append(event)
    b.see(t)


def _compile_cb(b: _Builder, r: list[Any]) -> None:
    t, kind, trigger, compile_id, stack = r[1:6]
    key = f"{compile_id}:{trigger}"
    if kind == "compile_start":
        b.compile_spans[key] = (t, trigger, stack)
        return
    start = b.compile_spans.pop(key, None)
    if start is not None:
        b.trace.compile_events.append(CompileEvent(start[0], "compile", compile_id, reason=trigger,
                                                   stack=start[2], dur=t - start[0]))
    b.see(t)


def _warn(b: _Builder, r: list[Any]) -> None:
    t, category, message, graph, stack = r[1:6]
    b.trace.warnings.append(WarningRecord(b.see(t), category, message, graph, stack))


def _region(b: _Builder, r: list[Any]) -> None:
    b.regions.append((r[1], r[2], r[3]))
    b.see(r[3])


def _counters(b: _Builder, r: list[Any]) -> None:
    b.trace.counters = r[1]


def _progress(b: _Builder, r: list[Any]) -> None:
    b.trace.replay_counts = {int(k): int(v) for k, v in r[2].get("replays", {}).items()}
    b.see(r[1])


def _untimed(b: _Builder, r: list[Any]) -> None:
    b.untimed += int(r[1])


def _cuda_state(b: _Builder, r: list[Any]) -> None:
    b.cuda = r[1]


def _end(b: _Builder, r: list[Any]) -> None:
    b.end = r[1]


def _run_end(b: _Builder, r: list[Any]) -> None:
    b.run_end = r[1]


_HANDLERS = {
    "hello": _hello, "meta": _meta_record, "devices": _devices, "note": _note,
    "frame": _frame, "stack": _stack, "fn": _fn, "graph": _graph_begin, "graph_end": _graph_end,
    "graph_del": _graph_del, "replay": _row("replays", Replay, 6), "call": _row("calls", Call, 6),
    "alloc": _alloc, "sync": _sync, "sop": _sop, "mem": _mem,
    "nvml": _row("gpu_samples", GpuSample, 6), "exc": _exc, "log": _log,
    "compile_cb": _compile_cb, "warn": _warn, "region": _region, "counters": _counters,
    "untimed": _untimed, "progress": _progress, "input": _input, "coll": _coll,
    "coll_end": _coll_end, "dist": _dist,
    "teardown": _teardown, "tree_inputs": _tree_inputs, "cuda_state": _cuda_state, "end": _end,
    "run_end": _run_end,
}

__all__ = ["assemble", "assemble_file"]
