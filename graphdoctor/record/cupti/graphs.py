"""CUDA graphs made outside PyTorch, seen through CUPTI (``graphdoctor run --cupti``).

PyTorch's graphs are recorded by hooks on its Python API. CuPy, cuda.core, cuda-python
and DSLs that build graphs node by node call CUDA directly, so graphdoctor asks the CUDA
driver instead: a CUPTI subscriber (NVIDIA's ``cupti-python``, the ``cupti`` extra) is
called on the few driver calls that make, run or break a graph, and CUPTI's graph-trace
activity gives each launch's GPU time. The records are the ones PyTorch's hooks write
(captures, replays, syncs, the CUDA error with the Python line that caused it), so the
same diagnosis reads them.

- A stream capture is ``cuStreamBeginCapture`` to ``cuStreamEndCapture``; a graph built
  node by node is ``cuGraphCreate`` to its instantiation.
- A launch is a graph-trace activity record of an instance of such a graph, named by the
  instance's CUPTI id (read once, at instantiation): when it ran on the GPU and for how
  long. Launches take no callback, so a launch costs what CUPTI's record costs; their host
  time is not recorded. (A callback on every ``cuGraphLaunch`` cost about 55 µs of host
  time per launch through cupti-python 13.0.1, measured in bench/results; asking CUPTI for
  driver-API activity of ``cuGraphLaunch`` alone made that version segfault at the next
  launch, on an H100.)
- An instantiation (``cuGraphInstantiate*``) is an event of its graph, with the host time
  it took, at the line that asked.
- A stream capture's eager work (the user functions its frame called while it was open)
  is timed as PyTorch's is, for the verdict (:mod:`graphdoctor.record.cupti.eager`).
- A synchronising call made outside PyTorch is a sync; one that CUDA refuses inside a
  capture is recorded as the capture's first error, at the user's line.
- A call made from inside ``torch`` is PyTorch's: its own hooks record it. CUPTI's view
  of those graphs (how many, how many launches, GPU time per launch, instantiation time)
  goes in the report's notes, so the two views can be checked against each other.

Each callback runs Python on the calling thread, so only the calls that make or break a
graph are subscribed (never a launch), and the layer is off unless asked for. It steps
aside, and says so, where CUPTI is taken: a profiler of the script's (``torch.profiler``,
Nsight; :mod:`graphdoctor.record.cupti.profilers`) or another subscriber.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from graphdoctor.record.capture.anatomy_reader import new_reader
from graphdoctor.record.cupti.calls import (
    CAPTURE_MODES,
    ENTER,
    EXIT,
    SYNC_KINDS,
    from_torch,
    params,
    pointee,
    result,
    word,
)
from graphdoctor.record.cupti.eager import CuptiEager
from graphdoctor.record.cupti.profilers import watch_profilers
from graphdoctor.record.cupti.records import (
    OutsideGraph,
    capture_error,
    graph_begin,
    graph_end,
)
from graphdoctor.record.cupti.torch_view import TorchView
from graphdoctor.record.on_torch_import import call_when_imported
from graphdoctor.record.recorder import Recorder, Uninstall
from graphdoctor.trace.event_kinds import HOST_NOT_TIMED, Instantiation, Replay, Sync
from graphdoctor.trace.names import (
    ANATOMY_PART,
    CAPTURE_FAILED,
    CAPTURED,
    CUDA_API_ERROR,
    CUPTI_EXPLICIT_API,
    CUPTI_PART,
    CUPTI_STREAM_API,
)
from graphdoctor.trace.spool import records as sr


@dataclass
class _State:
    capturing: dict[int, OutsideGraph] = field(default_factory=dict)  # by stream handle
    building: dict[int, OutsideGraph] = field(default_factory=dict)  # explicit graphs, by CUgraph
    graphs: dict[int, int] = field(default_factory=dict)  # CUgraph handle -> our graph id
    instances: dict[int, int] = field(default_factory=dict)  # CUPTI's exec id -> graph id
    streams: dict[int, int] = field(default_factory=dict)  # CUPTI's stream id -> handle
    latest_stream: int = 0  # of the latest capture outside PyTorch: where eager work may go
    runtime_calls: set[int] = field(default_factory=set)  # correlation ids the runtime made
    instantiating: dict[int, int] = field(default_factory=dict)  # correlation id -> its start
    torch: TorchView = field(default_factory=lambda: TorchView())


class CuptiGraphs:
    """The subscriber: one handler per driver call, and the activity buffers' consumer."""

    def __init__(self, recorder: Recorder, cupti: Any, eager: CuptiEager | None = None) -> None:
        self.recorder, self.cupti = recorder, cupti
        self.state = _State()
        self.eager = eager  # the eager calls of what captures ran (cupti_eager.py)
        drv = cupti.driver_api_trace_cbid
        self.handlers: dict[int, Callable[[Any, int], None]] = {}
        for names, handler in _HANDLERS:
            for name in names:
                cbid = getattr(drv, name, None)
                if cbid is not None:
                    self.handlers[int(cbid)] = handler.__get__(self)
        self.subscriber = 0
        self.subscribed = False
        self.offset = 0
        # what each graph holds, read as PyTorch's graphs are (record/anatomy.py)
        self.anatomy = new_reader(recorder) if ANATOMY_PART not in recorder.config.off \
            else None

    # -- setting up --------------------------------------------------------------------------
    def start(self) -> None:
        cupti = self.cupti
        self.offset = cupti.get_timestamp() - self.recorder.now()  # CUPTI's clock to ours
        self.subscriber = cupti.subscribe(self._callback, None)
        self.subscribed = True
        for cbid in self.handlers:
            cupti.enable_callback(1, self.subscriber, cupti.CallbackDomain.DRIVER_API, cbid)
        runtime = cupti.runtime_api_trace_cbid
        for name in ("cudaStreamBeginCapture_v10000", "cudaStreamBeginCapture_ptsz_v10000"):
            cupti.enable_callback(1, self.subscriber, cupti.CallbackDomain.RUNTIME_API,
                                  getattr(runtime, name))
        cupti.activity_register_callbacks(self._buffer_requested, self._buffer_completed)
        cupti.activity_enable(cupti.ActivityKind.GRAPH_TRACE)

    def stop(self) -> None:
        if self.subscribed:
            self._release()
        if self.eager is not None:  # after unsubscribing: its last synchronize is not a sync
            self.eager.stop()
        if self.anatomy is not None:
            self.anatomy.drain()
        if self.state.torch.captures:
            self.recorder.note(CUPTI_PART, self.state.torch.summary())

    def step_aside(self, why: str) -> None:
        """Hand CUPTI over to a profiler about to take it: what was recorded stays, nothing
        more is. Its activity buffers are process-wide, so sharing them would put our
        graph records into the script's profile."""
        if self.eager is not None and self.eager.timer is not None:
            self.eager.timer.stepped_aside = True  # no CUDA event of graphdoctor's in its trace
        if self.subscribed:
            self._release()
            self.recorder.note(CUPTI_PART, f"stepped aside for {why}: graphs made outside "
                                           "PyTorch after it were not recorded")

    def _release(self) -> None:
        cupti, self.subscribed = self.cupti, False
        cupti.activity_flush_all(1)
        cupti.activity_disable(cupti.ActivityKind.GRAPH_TRACE)
        cupti.unsubscribe(self.subscriber)

    def heartbeat(self) -> sr.SpoolRecord | None:
        if self.subscribed:
            self.cupti.activity_flush_all(0)
        if self.anatomy is not None:
            self.anatomy.drain()
        return None

    # -- the callback --------------------------------------------------------------------------
    def _callback(self, userdata: Any, domain: int, cbid: int, cbdata: Any) -> None:
        try:
            if domain == self.cupti.CallbackDomain.RUNTIME_API:
                if cbdata.callback_site == ENTER:
                    self.state.runtime_calls.add(cbdata.correlation_id)
                return
            handler = self.handlers.get(int(cbid))
            if handler is not None:
                handler(cbdata, int(cbdata.callback_site))
        except Exception as error:  # noqa: BLE001 - never raise into the driver
            self.recorder.note(CUPTI_PART, f"a callback failed: {error!r}")

    def _caller(self, deeper: int = 0) -> FrameType:
        """The callback's caller: the script's (or a library's) frame. ``deeper``: asked from
        that many calls below a handler."""
        return sys._getframe(3 + deeper)

    # -- capture ---------------------------------------------------------------------------------
    def _begin_capture(self, cbdata: Any, site: int) -> None:
        if site != EXIT or result(cbdata) != 0:
            return
        frame = self._caller()
        stream = word(params(cbdata), 0)
        self.state.streams[self.cupti.get_stream_id_ex(cbdata.context, stream, 0)] = stream
        runtime = cbdata.correlation_id in self.state.runtime_calls
        self.state.runtime_calls.discard(cbdata.correlation_id)
        if from_torch(frame):
            self.state.torch.captures += 1
            self.state.torch.streams.add(stream)
            return
        graph = OutsideGraph(self.recorder.new_id("graph"), stream, self.recorder.now(),
                       self.recorder.stacks.from_frame(frame),
                       f"{CUPTI_STREAM_API} ({'runtime' if runtime else 'driver'})")
        self.state.capturing[stream] = graph
        self.state.latest_stream = stream
        mode = word(params(cbdata), 1) & 0xFFFFFFFF  # an enum, in the low half of its word
        self._emit_begin(graph, CAPTURE_MODES.get(mode, str(mode)))
        if self.eager is not None:
            self.eager.begin(graph.id, stream, graph.stack, graph.api, frame)

    def _end_capture(self, cbdata: Any, site: int) -> None:
        address = params(cbdata)
        stream = word(address, 0)
        if site == ENTER:  # the capture is still open: copy what it holds
            if stream in self.state.capturing and self.anatomy is not None:
                self.anatomy.take(self.state.capturing[stream].id, stream)
            return
        graph = self.state.capturing.pop(stream, None)
        if graph is None:
            if stream in self.state.torch.streams:  # PyTorch's: its launches are told apart
                self.state.torch.streams.discard(stream)
                self.state.graphs[pointee(word(address, 1))] = TORCH_GRAPH
            return
        code = result(cbdata)
        error = self._error(code, "capture_end", graph.id, self._caller()) if code else -1
        handle = pointee(word(address, 1))
        if handle:
            self.state.graphs[handle] = graph.id
        callees, basis = self.eager.end(graph.id) if self.eager is not None else ([], "")
        self._emit_end(graph, CAPTURED if code == 0 else CAPTURE_FAILED, error, callees,
                       basis if code == 0 else "")

    # -- explicit graphs ---------------------------------------------------------------------
    def _create_graph(self, cbdata: Any, site: int) -> None:
        if site != EXIT or result(cbdata) != 0 or from_torch(self._caller()):
            return
        handle = pointee(word(params(cbdata), 0))
        if handle and not self._inside_capture():
            self.state.building[handle] = OutsideGraph(
                NO_ID, 0, self.recorder.now(), self.recorder.stacks.from_frame(self._caller()),
                CUPTI_EXPLICIT_API)

    def _instantiate(self, cbdata: Any, site: int) -> None:
        if site == ENTER:
            self.state.instantiating[cbdata.correlation_id] = self.recorder.now()
            return
        began = self.state.instantiating.pop(cbdata.correlation_id, self.recorder.now())
        if result(cbdata) != 0:
            return
        address = params(cbdata)
        handle = word(address, 1)
        built = self.state.building.pop(handle, None)
        if built is not None:  # a graph built node by node is "captured" when instantiated
            built.id = self.recorder.new_id("graph")
            self._emit_begin(built, mode="")
            if self.anatomy is not None:
                self.anatomy.take_graph(built.id, handle)
            self._emit_end(built, CAPTURED, -1)
            self.state.graphs[handle] = built.id
        graph = self.state.graphs.get(handle)
        if graph is None:
            return
        # its launches' records name the instance by CUPTI's id for it
        self.state.instances[self.cupti.get_graph_exec_id(pointee(word(address, 0)))] = graph
        self._instantiated(graph, began)

    def _instantiated(self, graph: int, began: int) -> None:
        took = self.recorder.now() - began
        if graph == TORCH_GRAPH:
            self.state.torch.instantiations.append(took)
            return
        stack = self.recorder.stacks.from_frame(self._caller(1))
        self.recorder.emit(Instantiation(began, took, graph, stack))

    def _inside_capture(self) -> bool:
        return bool(self.state.capturing)

    # -- syncs ---------------------------------------------------------------------------------
    def _sync(self, cbdata: Any, site: int) -> None:
        frame = self._caller()
        if site != EXIT or from_torch(frame):
            return
        kind = SYNC_KINDS.get(cbdata.function_name.split("_")[0], "synchronize")
        stream = word(params(cbdata), 0) if kind == "stream_synchronize" else 0
        graph = self._capture_of(stream)
        stack = self.recorder.stacks.from_frame(frame)
        rec = self.recorder
        rec.emit(Sync(rec.now(), kind, stream, graph, rec.thread(), stack))
        code = result(cbdata)
        if code and graph >= 0:
            self._error(code, CUDA_API_ERROR, graph, frame)

    def _capture_of(self, stream: int) -> int:
        """The capture a sync on ``stream`` breaks: that stream's, or (a device-wide sync)
        any one in progress."""
        capture = self.state.capturing.get(stream)
        if capture is None and not stream and self.state.capturing:
            capture = next(iter(self.state.capturing.values()))
        return capture.id if capture is not None else -1

    # -- records ---------------------------------------------------------------------------------
    def _emit_begin(self, graph: OutsideGraph, mode: str) -> None:
        self.recorder.emit(graph_begin(graph, mode))

    def _emit_end(self, graph: OutsideGraph, status: str, error: int,
                  callees: list[int] | None = None, basis: str = "") -> None:
        self.recorder.emit(graph_end(graph.id, self.recorder.now(), status, error,
                                     callees or [], basis))

    def _error(self, code: int, where: str, graph: int, frame: FrameType) -> int:
        """Record a CUDA error the driver returned, at the line that made the call."""
        rec = self.recorder
        exc_id = rec.new_id("exc")
        rec.emit(capture_error(exc_id, rec.now(), where, graph, rec.thread(), code,
                               rec.stacks.from_frame(frame)))
        return exc_id

    # -- GPU times ---------------------------------------------------------------------------
    def _buffer_requested(self) -> tuple[int, int]:
        return ACTIVITY_BUFFER, 0

    def _buffer_completed(self, activities: Any) -> None:
        """Graph-trace records, as CUPTI hands them over: a replay each, for the script's
        graphs; counted and timed beside, for PyTorch's."""
        for activity in activities:
            graph = self.state.instances.get(getattr(activity, "graph_id", NO_ID))
            if graph is None:
                continue
            gpu = activity.end - activity.start
            if graph == TORCH_GRAPH:
                self.state.torch.launches += 1
                self.state.torch.add(gpu)
                continue
            self.recorder.emit(Replay(
                activity.start - self.offset, HOST_NOT_TIMED, gpu, graph,
                self.state.streams.get(activity.stream_id, 0), 0))


NO_ID = -1
TORCH_GRAPH = -2  # in the maps of handles: a graph PyTorch made (its hooks record it)
ACTIVITY_BUFFER = 4 * 1024 * 1024  # bytes CUPTI fills with graph-trace records at a time
_HANDLERS: tuple[tuple[tuple[str, ...], Callable[..., None]], ...] = (
    (("cuStreamBeginCapture", "cuStreamBeginCapture_ptsz", "cuStreamBeginCapture_v2",
      "cuStreamBeginCapture_v2_ptsz"), CuptiGraphs._begin_capture),
    (("cuStreamEndCapture", "cuStreamEndCapture_ptsz"), CuptiGraphs._end_capture),
    (("cuGraphCreate",), CuptiGraphs._create_graph),
    (("cuGraphInstantiate", "cuGraphInstantiate_v2", "cuGraphInstantiateWithFlags",
      "cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams_ptsz"),
     CuptiGraphs._instantiate),
    (("cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuCtxSynchronize",
      "cuCtxSynchronize_v2", "cuEventSynchronize"), CuptiGraphs._sync),
)


def install(recorder: Recorder) -> Uninstall | None:
    """Subscribe, where cupti-python is installed and CUPTI is free; else say why not."""
    try:
        cupti = importlib.import_module("cupti.cupti")
    except ImportError:
        recorder.note(CUPTI_PART, "needs cupti-python: pip install 'graphdoctor[cupti]'")
        return None
    layer = CuptiGraphs(recorder, cupti, CuptiEager(recorder, lambda: layer.state.latest_stream))
    try:
        layer.start()
    except Exception as error:  # noqa: BLE001 - CUPTI taken (a profiler) or unavailable
        recorder.note(CUPTI_PART, f"CUPTI could not be subscribed ({error}); a profiler of "
                                  "the script's may hold it")
        return None
    recorder.heartbeats.append(layer.heartbeat)
    if layer.eager is not None:
        layer.eager.install_history()
    call_when_imported(lambda: watch_profilers(recorder, layer))
    return layer.stop
