"""What each spool record does to the trace being assembled: one small handler per tag."""

from __future__ import annotations

import dataclasses
from typing import Any

from graphdoctor.trace import compile_logs
from graphdoctor.trace.builder import Builder
from graphdoctor.trace.model import (
    EAGER,
    NONE,
    Alloc,
    Call,
    Collective,
    CompileEvent,
    ErrorLink,
    ExceptionRecord,
    Frame,
    Function,
    GpuSample,
    InputEvent,
    MemorySample,
    Note,
    Replay,
    StreamOp,
    Sync,
    TeardownEvent,
    WarningRecord,
)


def _hello(b: Builder, r: list[Any]) -> None:
    b.meta.update(r[1])


def _meta_record(b: Builder, r: list[Any]) -> None:
    b.meta.update(r[1])


def _devices(b: Builder, r: list[Any]) -> None:
    b.meta["devices"] = r[1]


def _note(b: Builder, r: list[Any]) -> None:
    b.notes.append(Note(str(r[1]), str(r[2])))


def _frame(b: Builder, r: list[Any]) -> None:
    b.frames[r[1]] = Frame(r[2], int(r[3]), r[4], r[5])


def _stack(b: Builder, r: list[Any]) -> None:
    b.stacks[r[1]] = tuple(r[2])


def _fn(b: Builder, r: list[Any]) -> None:
    b.trace.functions.append(Function(r[1], r[2], r[3], r[4], int(r[5]), r[6]))


def _graph_begin(b: Builder, r: list[Any]) -> None:
    b.graphs[r[1]["id"]] = dict(r[1])
    b.see(r[1]["t"])


def _graph_end(b: Builder, r: list[Any]) -> None:
    b.graphs.setdefault(r[1]["id"], {"id": r[1]["id"], "t": r[1]["t"]})["end"] = r[1]
    b.see(r[1]["t"])


def _graph_del(b: Builder, r: list[Any]) -> None:
    if r[1] in b.graphs:
        b.graphs[r[1]]["deleted"] = r[2]


def _row(table: str, row_type: Any, width: int) -> Any:
    def handle(b: Builder, r: list[Any]) -> None:
        values = r[1:1 + width]
        b.trace.tables[table].append(row_type._make(values))
        b.see(values[0] + (values[1] if table in ("replays", "calls") else 0))

    return handle


def _alloc(b: Builder, r: list[Any]) -> None:
    t, action, addr, size, stream, pool, graph, stack = r[1:9]
    device = r[9] if len(r) > 9 else 0
    b.trace.tables["allocs"].append(Alloc(t, action, addr, size, stream, pool, graph, EAGER,
                                          stack, device))
    b.see(t)


def _tree_inputs(b: Builder, r: list[Any]) -> None:
    t, fn, _, count, size = r[1:6]
    functions = b.trace.functions
    for i, function in enumerate(functions):
        if function.id == fn and size >= function.copied_bytes:
            functions[i] = dataclasses.replace(function, copied_inputs=int(count),
                                               copied_bytes=int(size))
    b.see(t)


def _coll(b: Builder, r: list[Any]) -> None:
    token, t, op, group, seq, size, _async, graph, thread, stack = r[1:11]
    b.open_collectives[token] = len(b.trace.tables["collectives"])
    b.trace.tables["collectives"].append(Collective(t, -1, op, group, seq, size, graph, EAGER,
                                                    thread, stack))
    b.see(t)


def _coll_end(b: Builder, r: list[Any]) -> None:
    token, t = r[1:3]
    index = b.open_collectives.pop(token, None)
    if index is not None:
        durations = b.trace.tables["collectives"].data["dur"]
        durations[index] = t - b.trace.tables["collectives"].data["t"][index]
    b.see(t)


def _dist(b: Builder, r: list[Any]) -> None:
    b.meta.update({k: v for k, v in r[1].items() if k in ("backend", "rank", "world_size")})


def _teardown(b: Builder, r: list[Any]) -> None:
    t, kind, stack = r[1:4]
    b.trace.teardown.append(TeardownEvent(b.see(t), kind, stack))


def _input(b: Builder, r: list[Any]) -> None:
    t, graph, kind, addr, size, stack, replays = r[1:8]
    b.trace.input_events.append(InputEvent(b.see(t), graph, kind, addr, size, stack, replays))


def _sync(b: Builder, r: list[Any]) -> None:
    t, kind, stream, graph, thread, stack = r[1:7]
    b.trace.tables["syncs"].append(Sync(t, kind, stream, graph, EAGER, thread, stack))
    b.see(t)


def _sop(b: Builder, r: list[Any]) -> None:
    t, op, stream, other, graph, thread, stack = r[1:8]
    b.trace.tables["stream_ops"].append(StreamOp(t, op, stream, other, graph, EAGER, thread, stack))
    b.see(t)


def _mem(b: Builder, r: list[Any]) -> None:
    t, allocated, reserved, graph = r[1:5]
    b.trace.tables["memory"].append(MemorySample(t, allocated, reserved, graph, EAGER))
    b.see(t)


def _exc(b: Builder, r: list[Any]) -> None:
    e = r[1]
    chain = tuple(ErrorLink(str(c[0]), str(c[1]), str(c[2]), int(c[3])) for c in e["chain"])
    b.trace.exceptions.append(ExceptionRecord(e["id"], b.see(e["t"]), e["where"],
                                              e.get("graph", NONE), e.get("thread", 0), chain))


def _log(b: Builder, r: list[Any]) -> None:
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


def _compile_cb(b: Builder, r: list[Any]) -> None:
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


def _warn(b: Builder, r: list[Any]) -> None:
    t, category, message, graph, stack = r[1:6]
    b.trace.warnings.append(WarningRecord(b.see(t), category, message, graph, stack))


def _region(b: Builder, r: list[Any]) -> None:
    b.regions.append((r[1], r[2], r[3]))
    b.see(r[3])


def _counters(b: Builder, r: list[Any]) -> None:
    b.trace.counters = r[1]


def _progress(b: Builder, r: list[Any]) -> None:
    b.trace.replay_counts = {int(k): int(v) for k, v in r[2].get("replays", {}).items()}
    b.see(r[1])


def _untimed(b: Builder, r: list[Any]) -> None:
    b.untimed += int(r[1])


def _cuda_state(b: Builder, r: list[Any]) -> None:
    b.cuda = r[1]


def _end(b: Builder, r: list[Any]) -> None:
    b.end = r[1]


def _run_end(b: Builder, r: list[Any]) -> None:
    b.run_end = r[1]


HANDLERS = {
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

