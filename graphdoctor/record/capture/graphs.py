"""Captures and replays: patches on ``torch.cuda.CUDAGraph``, ``torch.cuda.graph`` and
``make_graphed_callables``.

Every capture path in PyTorch (the context manager, the raw API, make_graphed_callables and
CUDAGraph Trees under ``torch.compile(mode="reduce-overhead")``) goes through the methods of
the Python ``CUDAGraph`` class, so patching that class sees them all. The replay wrapper is
the hot path, kept apart in :mod:`graphdoctor.record.capture.replay_path`: two clock reads and a
queued tuple for most replays, CUDA events for a sample.

This source depends on one other: at each capture boundary and sampled replay it asks the
allocator watch (``recorder.memory``, see :mod:`graphdoctor.record.device.memory`) for the
allocator's totals and what the capture allocated; session wires it before installing.

With CUDA graphs off (:mod:`graphdoctor.record.compile.graphs_off`), ``make_graphed_callables``
returns its callables unchanged, their calls timed as eager calls; a raw capture has no
graph-free form, so it is captured as written and a note says so.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.capture import anatomy_reader as anatomy
from graphdoctor.record.capture import inputs
from graphdoctor.record.capture.replay_path import ReplayPath
from graphdoctor.record.compile import graphs_off
from graphdoctor.record.device.kernel_times import KernelTimer
from graphdoctor.record.eager.calls import (
    EAGER_TIMES_LOST,
    SCRIPT_TOOK_THE_ID,
    CallSiteWatcher,
    EagerCallTimer,
    Monitor,
    callee_code,
    innermost_user_frame,
)
from graphdoctor.record.eager.step_parts import DISTRIBUTED_FILES
from graphdoctor.record.errors import already_recorded, mark_recorded, record_exception
from graphdoctor.record.recorder import (
    CaptureMemory,
    CaptureState,
    Recorder,
    Uninstall,
    patch,
)
from graphdoctor.trace.names import (
    ANATOMY_PART,
    AT_CAPTURE_BEGIN,
    AT_CAPTURE_END,
    CALLEES_BASIS,
    CAPTURE_FAILED,
    CAPTURED,
    CAPTURED_FUNCTION,
    COVERING_BASIS,
    FULL_MODE,
    GRAPHED_CALLABLES,
    GRAPHED_FUNCTION,
    MANUAL_APIS,
)
from graphdoctor.trace.spool import records as sr

_ID = "_graphdoctor_id"
_thread_ident = threading.get_ident


@dataclass
class _OpenCapture:
    """What a capture in progress started and its end must settle. No frame is kept past the
    call that saw it (a kept frame keeps every local of the script's alive, tensors and
    graphs among them, and its memory statistics with them): what the end needs of the
    capturing frame is read at the begin, and the frame running at the end is the one that
    called ``capture_end``."""

    code: CodeType | None = None  # the user's frame holding the captured block: its code
    begin_line: int = 0  # its line when the capture began
    frames: list[tuple[str, int, str]] = field(default_factory=list)  # the stack around it
    watched_code: CodeType | None = None
    candidates: list[Any] = field(default_factory=list)  # possible external inputs


def install(recorder: Recorder) -> Uninstall:
    if recorder.memory is None:
        raise RuntimeError("the allocator watch is not wired (session wires it first)")
    state = _GraphHooks(recorder, recorder.memory)
    cls = torch.cuda.CUDAGraph
    undos = [
        patch(cls, "capture_begin", state.wrap_capture_begin),
        patch(cls, "capture_end", state.wrap_capture_end),
        patch(cls, "replay", state.replay_path.wrap),
        patch(torch.cuda.graph, "__exit__", state.wrap_region_exit),
        patch(torch.cuda, "make_graphed_callables", state.wrap_make_graphed_callables),
        inputs.watch_collections(),
    ]
    recorder.heartbeats.append(state.replay_path.heartbeat)  # first: it brings the counts up
    recorder.heartbeats.append(state.progress)
    recorder.heartbeats.append(state.settle_deferred)
    if state.anatomy is not None:
        recorder.heartbeats.append(state.anatomy.drain)
    recorder.follow = state.follow
    if not state.eager_timer.available:
        recorder.note(EAGER_TIMES_LOST,
                      "needs Python 3.12 or newer (sys.monitoring)")

    def uninstall() -> None:
        recorder.follow = None
        recorder.heartbeats.remove(state.settle_deferred)
        state.settle_deferred()
        recorder.heartbeats.remove(state.replay_path.heartbeat)
        state.replay_path.finish()
        if state.anatomy is not None:
            state.anatomy.drain()  # the copies no heartbeat has read yet
            recorder.heartbeats.remove(state.anatomy.drain)
        state.eager_timer.close()
        state.monitor.release()
        for undo in reversed(undos):
            undo()

    return uninstall


class _GraphHooks:
    def __init__(self, recorder: Recorder, memory: CaptureMemory):
        self.rec = recorder
        self.memory = memory
        monitor = Monitor(lambda: recorder.note(EAGER_TIMES_LOST, SCRIPT_TOOK_THE_ID))
        self.eager_timer = EagerCallTimer(recorder, monitor)
        self.call_sites = CallSiteWatcher(recorder, monitor)
        self.monitor = monitor
        self.notes = graphs_off.Notes(recorder)  # with CUDA graphs off: what stayed, what went
        self._open: dict[int, _OpenCapture] = {}  # graph id -> what its end must settle
        self.watched: dict[int, inputs.GraphInputs] = {}
        self.shared_pool: set[int] = set()  # manual graphs whose pool another one shares
        self._pools: dict[str, list[int]] = {}  # a manual graph's pool -> graphs in it
        # the storages each graph's capture left named in its frame (its outputs): an input
        # of a later capture that is one lives in that graph's pool, not the allocator's
        self.outputs = inputs.GraphOutputs()
        # written from a finalizer or a sampled replay, taken by the flushing thread: nothing
        # that can run inside a garbage collection takes a lock or writes the spool itself
        self.deleted: deque[tuple[int, int]] = deque()  # (graph, when it was deleted)
        self.samples_due: deque[tuple[int, int]] = deque()  # (graph, when), memory to sample
        self.last_sample_ns = 0  # perf_counter ns of the last sampled replay
        self._replay_counts = recorder.replays
        self._reported_counts: dict[int, int] = {}
        off = recorder.config.off
        self.anatomy = anatomy.new_reader(recorder) if ANATOMY_PART not in off else None
        self.kernel_timer = KernelTimer(recorder) if recorder.config.mode == FULL_MODE else None
        self.replay_path = ReplayPath(recorder, self, _ID)

    # -- capture -------------------------------------------------------------------------
    # Everything a capture costs graphdoctor is bounded and measured: no import, no per-op
    # hook, one snapshot of the graph's own pool. The spans are recorded with the graph, so
    # the capture phase shows the user's time and graphdoctor's apart.
    def wrap_capture_begin(self, original: Any) -> Any:
        @functools.wraps(original)
        def capture_begin(graph: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.rec.enabled:
                return original(graph, *args, **kwargs)
            entered = self.rec.now()
            caller = sys._getframe(1)
            state = self._begin(graph, caller, args, kwargs, entered)
            frame = self._user_frame(state.api, caller)
            self._open[state.graph] = _opened(frame)
            state.own.append((entered, self.rec.now()))
            try:
                original(graph, *args, **kwargs)
            except BaseException as error:
                self._fail(graph, state, error, AT_CAPTURE_BEGIN)
                raise
            returned = self.rec.now()
            _safely(self._watch_block, state, frame)
            state.own.append((returned, self.rec.now()))

        return capture_begin

    def _begin(self, graph: Any, caller: FrameType, args: tuple[Any, ...],
               kwargs: dict[str, Any], entered: int) -> CaptureState:
        rec = self.rec
        gid = rec.new_id("graph")
        earlier = getattr(graph, _ID, None)
        if earlier is not None:  # captured again after reset(): that graph's pool is gone
            self.outputs.forget(earlier)
        setattr(graph, _ID, gid)
        self.replay_path.forget(graph)  # captured again: a new graph, its replays counted anew
        api, internal = compat.capture_api(caller)
        if rec.config.graphs_off and api in MANUAL_APIS:
            graphs_off.note_raw_capture(self.notes, api, caller)
        pool_arg, mode = compat.capture_begin_arguments(args, kwargs)
        call = rec.compiled_call.get(_thread_ident())
        fn = call.fn if call is not None and api == compat.COMPILE_API else -1
        stream = torch.cuda.current_stream().cuda_stream
        rec.in_warmup = False
        device = torch.cuda.current_device()
        state = CaptureState(gid, stream, str(tuple(pool_arg)) if pool_arg else "", api, fn,
                             stack=rec.stacks.from_frame(caller), device=device)
        rec.emit(sr.GraphBegin({
            "id": gid, "t": entered, "api": api, "internal": internal, "stream": stream,
            "shared_pool": pool_arg is not None, "pool": state.pool,
            "capture_error_mode": str(mode), "stack": state.stack,
            "function": fn, "key": getattr(call, "compile_id", "") if call else "",
            "device": device,
        }))
        self.memory.capture_starting(gid)
        rec.captures[_thread_ident()] = state
        if call is not None:
            call.captured = True
        rec.nvtx.push(f"capture graph {gid}", "capture")
        return state

    def _user_frame(self, api: str, caller: FrameType) -> FrameType | None:
        """The user's frame that holds a manual capture's block (None for the others)."""
        if api not in MANUAL_APIS:
            return None
        return innermost_user_frame(self.rec, caller)

    def _watch_block(self, state: CaptureState, frame: FrameType | None) -> None:
        opened = self._open.get(state.graph)
        if opened is None or frame is None:
            return
        if self.rec.frozen is not None:
            self.rec.frozen.capture_began(state.graph, frame)
        opened.watched_code = self.call_sites.start(frame)
        if inputs.available():
            opened.candidates = inputs.candidates(frame, self.outputs)

    def wrap_capture_end(self, original: Any) -> Any:
        @functools.wraps(original)
        def capture_end(graph: Any) -> Any:
            state = self.rec.captures.get(_thread_ident())
            if state is None or not self.rec.enabled:
                return original(graph)
            entered = self.rec.now()
            opened = self._stop_watching(state)
            if self.anatomy is not None:
                self.anatomy.take(state.graph, state.stream)
            handed = self.rec.now()
            try:
                original(graph)
            except BaseException as error:
                state.own.append((entered, handed))
                self._fail(graph, state, error, AT_CAPTURE_END)
                raise
            state.own.append((entered, handed))
            # a block that raised is a failed capture, even when capture_end succeeds
            status = CAPTURE_FAILED if state.region_error >= 0 else CAPTURED
            settling = self.rec.now()
            ending = _safely(self._block_end, opened, sys._getframe(1)) \
                if status == CAPTURED else None
            self._end(graph, state, status, state.region_error, settling,
                      ending.outputs if ending else [])
            if opened is not None and ending is not None:
                _safely(self._watch_inputs, state.graph, opened, ending.line)

        return capture_end

    def _stop_watching(self, state: CaptureState) -> _OpenCapture | None:
        opened = self._open.pop(state.graph, None)
        if opened is not None:
            self.call_sites.stop(opened.watched_code)
        if self.rec.frozen is not None:
            self.rec.frozen.capture_ended(state.graph)
        return opened

    def _block_end(self, opened: _OpenCapture | None, caller: FrameType) -> inputs.BlockEnd:
        """Where a manual capture's block ended, and the storages it left named there (its
        outputs), read from the frame that ended it: the one that began it, still running."""
        if opened is None or opened.code is None:
            return inputs.BlockEnd(0, [])
        frame = innermost_user_frame(self.rec, caller)
        if frame is None or frame.f_code is not opened.code:
            return inputs.BlockEnd(opened.begin_line, [])
        return inputs.BlockEnd(frame.f_lineno or opened.begin_line,
                               inputs.outputs(frame, opened.candidates))

    def _watch_inputs(self, graph: int, opened: _OpenCapture, end_line: int) -> None:
        if opened.code is None or not opened.candidates:
            return
        site = inputs.CaptureSite(opened.code.co_filename, opened.begin_line, end_line,
                                  opened.frames, opened.code)
        self.watched[graph] = inputs.GraphInputs(graph, site, opened.candidates,
                                                 self.outputs)

    def _callee_ids(self, state: CaptureState) -> list[int]:
        callees = []
        parts = {code: name for name, code in state.torch_parts.items()}
        for code in state.callees:
            fn = self.rec.code_function_id(code, CAPTURED_FUNCTION) if code not in parts \
                else self.rec.function_id(code, _part_name(parts[code], code),
                                          CAPTURED_FUNCTION, code.co_filename,
                                          code.co_firstlineno)
            self.eager_timer.watch(code, fn, state.graph, users_own=code in parts)
            callees.append(fn)
        return callees

    def _cover_inline_block(self, state: CaptureState) -> str:
        """What the eager figures will be calls of: the capture's callees, or, where it
        also ran torch work of its own (an inline block), the user function that made all
        its calls eagerly."""
        history = self.rec.history
        if state.uncovered and history is not None:
            covering = history.covering(state.makes)
            if covering is not None:
                state.callees, state.uncovered = [covering], []
                return COVERING_BASIS
            parts = [state.torch_parts.get(name) for name in state.uncovered]
            if all(code is not None and history.has_calls(code) for code in parts):
                # torch's own step parts, each called eagerly by the user's code (the
                # recipe's warmup loop): the step is their sum, as for several callees
                state.callees += [code for code in parts if code is not None]
                state.uncovered = []
        return CALLEES_BASIS if state.callees else ""

    def _fail(self, graph: Any, state: CaptureState, error: BaseException, where: str) -> None:
        failed_at = self.rec.now()
        exc_id = -1
        if not already_recorded(error):
            exc_id = record_exception(self.rec, error, where, state.graph)
            mark_recorded(error)
        self._stop_watching(state)
        self._end(graph, state, CAPTURE_FAILED, exc_id, failed_at)

    def _end(self, graph: Any, state: CaptureState, status: str, exc_id: int,
             settling_from: int, outputs: list[inputs.Output] | None = None) -> None:
        rec = self.rec
        rec.captures.pop(_thread_ident(), None)
        rec.nvtx.pop()
        pool = compat.graph_pool(graph) if status == CAPTURED else None
        named = [(o.addr, o.size) for o in outputs or []]
        pool_bytes = self.memory.capture_ended(state.graph, state.device, pool, state.stack,
                                               named)
        self.outputs.add(state.graph, named)
        if pool and state.api in MANUAL_APIS:
            self._share(str(pool), state.graph)
        basis = self._cover_inline_block(state) if status == CAPTURED else ""
        callees = self._callee_ids(state)
        ended = rec.now()
        rec.emit(sr.GraphEnd({"id": state.graph, "t": ended, "status": status,
                              "pool": str(pool) if pool else state.pool,
                              "pool_bytes": pool_bytes, "error": exc_id, "callees": callees,
                              "uncovered": state.uncovered, "basis": basis,
                              "own": [*state.own, (settling_from, ended)]}))
        if status == CAPTURED:
            weakref.finalize(graph, _graph_deleted, self.deleted, rec, state.graph)
            warm = getattr(rec.timer, "warm", None)
            if warm is not None:
                warm()

    def wrap_region_exit(self, original: Any) -> Any:
        """``torch.cuda.graph.__exit__`` sees the error raised inside the captured block
        (the root cause) before ``capture_end`` replaces it with its own."""

        @functools.wraps(original)
        def __exit__(context: Any, exc_type: Any = None, exc: Any = None, tb: Any = None) -> Any:
            if exc is not None and self.rec.enabled and not already_recorded(exc):
                gid = getattr(compat.graph_of_context(context), _ID, -1)
                exc_id = record_exception(self.rec, exc, "capture_region", gid)
                mark_recorded(exc)
                state = self.rec.capture_on_this_thread()
                if state is not None:
                    state.region_error = exc_id
            return original(context, exc_type, exc, tb)

        return __exit__

    # -- replay (the hot path: graphdoctor.record.capture.replay_path) -----------------------------
    def sampled(self, graph: int, count: int, caller: FrameType) -> None:
        """A replay sampled (the 1st, 2nd, 4th... of a graph, and one every 100 ms): the
        allocator's totals, and the host values the graph froze."""
        self.last_sample_ns = time.perf_counter_ns()
        self.samples_due.append((graph, self.rec.now()))
        if self.rec.frozen is not None:
            self.rec.frozen.sampled(graph, count, caller)

    def settle_deferred(self) -> None:
        """From the flushing thread's heartbeat: what a sampled replay or a deleted graph
        left to do, off the replaying thread (a program that races two replays relies on
        the second being launched while the first still runs), and out of any finalizer
        (which runs inside a collection, anywhere, where a lock may be held already)."""
        while self.samples_due:
            graph, _ = self.samples_due.popleft()
            self.memory.sample(graph)
        while self.deleted:
            graph, when = self.deleted.popleft()
            self.rec.emit(sr.GraphDeleted(graph, when))
            self._forget(graph)

    def _share(self, pool: str, graph: int) -> None:
        """``graph`` was captured into ``pool``: where another graph is there already, both
        have their timed replays' sites and streams recorded from now on."""
        graphs = self._pools.setdefault(pool, [])
        graphs.append(graph)
        if len(graphs) > 1:
            self.shared_pool.update(graphs)

    def _forget(self, graph: int) -> None:
        """A graph deleted: nothing of it kept, so a run of a thousand graphs holds no more
        than one of ten."""
        self.watched.pop(graph, None)
        self.shared_pool.discard(graph)
        self.outputs.forget(graph)
        self.replay_path.deleted(graph)

    def progress(self) -> sr.Progress | None:
        counts = dict(self._replay_counts)
        if counts == self._reported_counts:
            return None
        self._reported_counts = counts
        return sr.Progress(self.rec.now(), {"replays": counts})

    # -- make_graphed_callables --------------------------------------------------------------
    def wrap_make_graphed_callables(self, original: Any) -> Any:
        @functools.wraps(original)
        def make_graphed_callables(callables: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.rec.enabled:
                return original(callables, *args, **kwargs)
            for item in callables if isinstance(callables, tuple) else (callables,):
                self._watch_callable(item)
            if self.rec.config.graphs_off:  # the callables themselves, their calls timed
                graphs_off.note_graphed_callables(self.notes, sys._getframe(1))
                return callables
            t0 = self.rec.now()
            self.rec.in_warmup = True
            try:
                return original(callables, *args, **kwargs)
            finally:
                self.rec.in_warmup = False
                self.rec.emit(sr.Region(GRAPHED_CALLABLES, t0, self.rec.now()))

        return make_graphed_callables

    def _watch_callable(self, item: Any) -> None:
        target = item.forward if isinstance(item, torch.nn.Module) else item
        code = getattr(target, "__code__", None)
        if code is not None:
            self._time_eager_calls(code, GRAPHED_FUNCTION)

    def _time_eager_calls(self, code: CodeType, kind: str) -> bool:
        """Time every eager call of ``code`` from now on; a run of it inside a capture makes
        it a callee of that capture. False where eager calls cannot be timed."""
        return self.eager_timer.watch(code, self.rec.code_function_id(code, kind), -1)

    # -- a capture made by graphdoctor for its caller ----------------------------------------
    def follow(self, target: Any) -> bool:
        """``target`` (a function, a bound method or a module) is about to be captured by
        graphdoctor itself (``graphdoctor.check``): its capture then runs in graphdoctor's
        own frame, whose calls the call-site watcher does not see, so the function is
        followed from here, as ``make_graphed_callables``' are. False where its eager calls
        cannot be timed (no Python code, or no sys.monitoring)."""
        code = callee_code(target)
        return code is not None and self._time_eager_calls(code, CAPTURED_FUNCTION)


def _safely(step: Any, *args: Any) -> Any:
    """``step(*args)``, one of the capture's own bookkeeping steps around the script's
    capture: where it fails (a bug of graphdoctor's, an object of the script's that raises
    when looked at), what it would have watched is lost, and the script's capture goes on."""
    try:
        return step(*args)
    except Exception:  # noqa: BLE001 - never the script's to see
        return None


def _opened(frame: FrameType | None) -> _OpenCapture:
    """What a manual capture's end needs of the frame holding its block, read at its begin."""
    if frame is None:
        return _OpenCapture()
    return _OpenCapture(frame.f_code, frame.f_lineno or 0, inputs.frames_of(frame))


def _part_name(called: str, code: CodeType) -> str:
    """A torch step part by what the script called: ``Sequential.forward``, ``SGD.step``
    (its code is torch's wrapper around every optimizer's step), ``Tensor.backward``,
    ``torch.distributed.all_reduce`` (its code torch's logging wrapper of every collective)."""
    if "." in called:
        return called
    if code.co_filename.replace("\\", "/").endswith(DISTRIBUTED_FILES):
        return f"torch.distributed.{called}"
    return f"{called}.{code.co_name}"


def _graph_deleted(deleted: deque[tuple[int, int]], rec: Recorder, graph: int) -> None:
    """A captured graph's finalizer: it runs inside whatever freed the graph (a collection
    on any thread, maybe while that thread holds the spool's lock), so it only notes it."""
    deleted.append((graph, rec.now()))

