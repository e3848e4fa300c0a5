"""A native program's events, as the injection library sends them, turned into graphdoctor's
records: the ones the ``--cupti`` layer writes for a Python process (captures, graphs built
node by node, instantiations, launches with their GPU time, syncs, stream waits inside a
capture, the CUDA error of a failed capture), and the copies and memsets a capture left out
(run at once, not in the graph), so the same diagnosis, report and TUI read them. Each
line is one JSON object with a kind (``k``) and a time (``t``, the recorder's clock before
the recorder's start is taken off).

The program's kernels launched outside a graph are kept (up to :data:`MAX_KERNELS`) for the
eager side of each graph's verdict (:mod:`graphdoctor.record.native.eager_steps`), and
written as eager kernels, which the timeline and the Chrome export draw on their streams.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphdoctor.record.capture.anatomy_reader import demangler
from graphdoctor.record.cupti.calls import CAPTURE_MODES
from graphdoctor.record.cupti.records import (
    OutsideGraph,
    capture_error,
    graph_begin,
    graph_end,
)
from graphdoctor.record.native.eager_steps import eager_steps, kernel_order
from graphdoctor.record.native.frames import FrameNames
from graphdoctor.record.native.shapes import anatomy_of
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace import anatomy
from graphdoctor.trace.event_kinds import (
    HOST_NOT_TIMED,
    NONE,
    Call,
    Instantiation,
    Kernel,
    Replay,
    StreamOp,
    Sync,
    UncapturedCall,
)
from graphdoctor.trace.names import (
    CALLEES_BASIS,
    CAPTURE_FAILED,
    CAPTURED,
    CAPTURED_FUNCTION,
    CUDA_API_ERROR,
    CUPTI_EXPLICIT_API,
    CUPTI_PART,
    CUPTI_STREAM_API,
    EAGER_CALL,
    NATIVE,
)
from graphdoctor.trace.spool import records as sr

MAX_KERNELS = 200_000  # eager kernels kept for the verdicts; a long eager loop needs no more


@dataclass
class NativeEvents:
    """Reads the library's lines into ``recorder``; ``clock0`` is the recorder's start on the
    library's clock (both CLOCK_MONOTONIC)."""

    recorder: Recorder
    clock0: int
    names: FrameNames = field(default_factory=FrameNames)
    capturing: dict[int, OutsideGraph] = field(default_factory=dict)  # by stream handle
    building: dict[int, OutsideGraph] = field(default_factory=dict)  # by CUgraph handle
    graphs: dict[int, int] = field(default_factory=dict)  # CUgraph handle -> graph id
    cupti_ids: dict[int, int] = field(default_factory=dict)  # CUPTI's graph id -> graph id
    execs: dict[int, int] = field(default_factory=dict)  # CUgraphExec handle -> graph id
    kernels: list[Kernel] = field(default_factory=list)  # outside any graph, as written
    anatomies: dict[int, dict[str, Any]] = field(default_factory=dict)  # graph id -> read
    ends: dict[int, dict[str, Any]] = field(default_factory=dict)  # graph id -> its end

    def __post_init__(self) -> None:
        self.demangle = demangler(self.recorder)

    def line(self, text: str) -> None:
        """One line from the library; a line that is not an event is noted, not fatal."""
        try:
            event = json.loads(text)
            handler = HANDLERS.get(str(event.get("k")))
            if handler is not None:
                handler(self, event)
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            self.recorder.note(CUPTI_PART, f"a native event could not be read: {error!r}")

    # -- shared --------------------------------------------------------------------------
    def time(self, event: dict[str, Any]) -> int:
        return int(event["t"]) - self.clock0

    def stack(self, event: dict[str, Any]) -> int:
        return self.recorder.stacks.from_named(self.names.stack(event.get("stack") or []))

    def thread(self, event: dict[str, Any]) -> int:
        return self.recorder.thread_of(int(event.get("thread", 0)))

    def capture_of(self, stream: int) -> int:
        """The capture ``stream`` is in, or (a device-wide call) any one open: -1 for none."""
        graph = self.capturing.get(stream)
        if graph is None and self.capturing and not stream:
            graph = next(iter(self.capturing.values()))
        return graph.id if graph is not None else -1

    # -- graphs --------------------------------------------------------------------------
    def begin_capture(self, event: dict[str, Any]) -> None:
        if int(event.get("result", 0)):
            return
        stream = int(event["stream"])
        graph = OutsideGraph(self.recorder.new_id("graph"), stream, self.time(event),
                       self.stack(event), f"{CUPTI_STREAM_API} ({NATIVE})")
        self.capturing[stream] = graph
        self._emit_begin(graph, CAPTURE_MODES.get(int(event.get("mode", 0)), "global"))

    def end_capture(self, event: dict[str, Any]) -> None:
        graph = self.capturing.pop(int(event["stream"]), None)
        if graph is None:
            return
        code = int(event.get("result", 0))
        error = self._error(event, code, "capture_end", graph.id) if code else -1
        self._known(graph.id, int(event.get("graph", 0)), int(event.get("graph_id", 0)))
        self._emit_end(graph, self.time(event), CAPTURED if code == 0 else CAPTURE_FAILED,
                       error)

    def create_graph(self, event: dict[str, Any]) -> None:
        if not int(event.get("result", 0)) and not self.capturing:
            self.building[int(event["graph"])] = OutsideGraph(-1, 0, self.time(event),
                                                        self.stack(event), CUPTI_EXPLICIT_API)

    def instantiate(self, event: dict[str, Any]) -> None:
        if int(event.get("result", 0)):
            return
        handle = int(event["graph"])
        built = self.building.pop(handle, None)
        if built is not None:  # a graph built node by node is "captured" when instantiated
            built.id = self.recorder.new_id("graph")
            built.api = f"{CUPTI_EXPLICIT_API} ({NATIVE})"
            self._emit_begin(built, "")
            self._emit_end(built, self.time(event), CAPTURED, -1)
            self._known(built.id, handle, int(event.get("graph_id", 0)))
        graph = self.graphs.get(handle)
        if graph is None:
            return
        self.cupti_ids.setdefault(int(event.get("graph_id", 0)), graph)
        self.execs[int(event.get("exec", 0))] = graph
        began = int(event.get("began") or event["t"]) - self.clock0
        self.recorder.emit(Instantiation(began, self.time(event) - began, graph,
                                         self.stack(event)))

    def anatomy(self, event: dict[str, Any]) -> None:
        graph = self.graphs.get(int(event["graph"]))
        if graph is None or graph in self.anatomies:
            return
        self.anatomies[graph] = read = anatomy_of(event, self.demangle)
        self.recorder.emit(sr.GraphAnatomy(graph, self.time(event), read))

    def _known(self, graph: int, handle: int, cupti_id: int) -> None:
        if handle:
            self.graphs[handle] = graph
        if cupti_id:
            self.cupti_ids[cupti_id] = graph

    # -- what ran --------------------------------------------------------------------------
    def launch(self, event: dict[str, Any]) -> None:
        """A graph launch's GPU span, named by the exec the launch call ran (the graph's id
        in CUPTI's records as well, where the exec was not seen)."""
        graph = self.execs.get(int(event.get("exec", 0)))
        if graph is None:
            graph = self.cupti_ids.get(int(event.get("graph_id", 0)))
        if graph is not None:
            self.recorder.emit(Replay(self.time(event), HOST_NOT_TIMED, int(event["dur"]), graph,
                                      int(event.get("stream", 0)), 0))

    def kernel(self, event: dict[str, Any]) -> None:
        """A kernel launched outside any graph: kept for the eager steps, and written, so
        that the timeline draws it beside the graph's launches on its stream."""
        if len(self.kernels) < MAX_KERNELS:
            kernel = Kernel(self.time(event), int(event["dur"]), int(event.get("stream", 0)),
                            anatomy.group_name(self.demangle(str(event["name"]))))
            self.kernels.append(kernel)
            self.recorder.emit(kernel)

    def sync(self, event: dict[str, Any]) -> None:
        stream = int(event.get("stream", 0))
        graph = self.capture_of(stream)
        self.recorder.emit(Sync(self.time(event), str(event.get("kind", "synchronize")), stream,
                                graph, self.thread(event), self.stack(event)))
        code = int(event.get("result", 0))
        if code and graph >= 0:
            self._error(event, code, CUDA_API_ERROR, graph)

    def uncaptured(self, event: dict[str, Any]) -> None:
        """A copy or memset CUDA ran at once while a capture was open, not in the graph
        (or refused, where its result is an error: the capture's first error then)."""
        if not self.capturing:
            return
        graph = next(iter(self.capturing.values())).id
        self.recorder.emit(UncapturedCall(self.time(event), str(event.get("call", "?")),
                                          int(event.get("stream", 0)), graph,
                                          self.thread(event), self.stack(event)))
        code = int(event.get("result", 0))
        if code:
            self._error(event, code, CUDA_API_ERROR, graph)

    def stream_op(self, event: dict[str, Any]) -> None:
        stream = int(event["stream"])
        graph = self.capture_of(stream)
        if graph < 0 and self.capturing:  # a side stream waiting on a capture: a fork
            graph = next(iter(self.capturing.values())).id
        self.recorder.emit(StreamOp(self.time(event), str(event["op"]), stream,
                                    int(event["event"]), graph, self.thread(event),
                                    self.stack(event)))

    def note(self, event: dict[str, Any]) -> None:
        self.recorder.note(CUPTI_PART, f"{event.get('what')}: {event.get('why')}")

    # -- records ---------------------------------------------------------------------------
    def _emit_begin(self, graph: OutsideGraph, mode: str) -> None:
        self.recorder.emit(graph_begin(graph, mode))

    def _emit_end(self, graph: OutsideGraph, t: int, status: str, error: int) -> None:
        end = graph_end(graph.id, t, status, error)
        self.ends[graph.id] = end.info
        self.recorder.emit(end)

    # -- at the end: the eager side of each graph ---------------------------------------
    def finish(self) -> None:
        """Each graph's kernels run eagerly, as its eager calls (see eager_steps); the
        graph's end is written again, naming them as its callees."""
        ordered = sorted(self.kernels, key=lambda k: k.t)
        names, starts = [k.name for k in ordered], [k.t for k in ordered]
        ends = [k.t + k.dur for k in ordered]
        for graph, found in self.anatomies.items():
            steps = eager_steps(kernel_order(found), names, starts, ends)
            if steps and graph in self.ends:
                self._eager_calls(graph, steps)

    def _eager_calls(self, graph: int, steps: list[tuple[int, int]]) -> None:
        fn = self.recorder.function_id((NATIVE, graph), f"graph {graph}'s kernels, eagerly",
                                       CAPTURED_FUNCTION)
        self.recorder.emit_many([Call(t, NONE, span, fn, EAGER_CALL, NONE) for t, span in steps])
        end = self.ends[graph]
        self.recorder.emit(graph_end(graph, end["t"], end["status"], end["error"], [fn],
                                     CALLEES_BASIS))

    def _error(self, event: dict[str, Any], code: int, where: str, graph: int) -> int:
        """The CUDA error a call returned inside a capture, at the line that made it."""
        exc_id = self.recorder.new_id("exc")
        self.recorder.emit(capture_error(exc_id, self.time(event), where, graph,
                                         self.thread(event), code, self.stack(event)))
        return exc_id

Handler = Callable[[NativeEvents, dict[str, Any]], None]
HANDLERS: dict[str, Handler] = {
    "begin_capture": NativeEvents.begin_capture, "end_capture": NativeEvents.end_capture,
    "create_graph": NativeEvents.create_graph, "instantiate": NativeEvents.instantiate,
    "anatomy": NativeEvents.anatomy, "launch": NativeEvents.launch,
    "kernel": NativeEvents.kernel, "sync": NativeEvents.sync,
    "stream_op": NativeEvents.stream_op, "note": NativeEvents.note,
    "uncaptured": NativeEvents.uncaptured,
}
