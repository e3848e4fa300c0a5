"""Stream and event operations: creation, ``wait_stream``, ``wait_event``, event records and
waits, and switches of the current stream. Inside a capture these say which side streams
were forked from the capture stream and whether each was joined back before ``capture_end``.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder, Uninstall, patch
from graphdoctor.trace.event_kinds import StreamOp


def install(recorder: Recorder) -> Uninstall | None:
    if not compat.cuda_built():
        return None
    ops = _StreamOps(recorder)
    stream, event = torch.cuda.Stream, torch.cuda.Event
    undos = [
        patch(stream, "__new__", ops.wrap_new_stream),
        patch(stream, "wait_stream", ops.op("wait_stream", _self_stream, _arg_stream)),
        patch(stream, "wait_event", ops.op("wait_event", _self_stream, _arg_event)),
        patch(stream, "record_event", ops.op("record_event", _self_stream, _arg_event)),
        patch(event, "record", ops.op("record", _arg_stream_or_current, _self_event)),
        patch(event, "wait", ops.op("event_wait", _arg_stream_or_current, _self_event)),
        patch(torch.cuda.StreamContext, "__enter__", ops.wrap_context("enter")),
        patch(torch.cuda.StreamContext, "__exit__", ops.wrap_context("exit")),
        patch(torch.cuda, "set_stream", ops.op("set_stream", _arg_stream_first, _none)),
    ]

    def uninstall() -> None:
        for undo in reversed(undos):
            undo()

    return uninstall


def _handle(stream: Any) -> int:
    try:
        return int(stream.cuda_stream)
    except (AttributeError, RuntimeError, TypeError):
        return -1


def _event_handle(event: Any) -> int:
    try:
        return int(event.cuda_event)
    except (AttributeError, RuntimeError, TypeError):
        return -1


def _self_stream(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return _handle(args[0])


def _self_event(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return _event_handle(args[0])


def _arg_stream(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    value = args[1] if len(args) > 1 else kwargs.get("stream")
    return _handle(value) if value is not None else -1


def _arg_event(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    value = args[1] if len(args) > 1 else kwargs.get("event")
    return _event_handle(value) if value is not None else -1


def _arg_stream_or_current(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    value = args[1] if len(args) > 1 else kwargs.get("stream")
    return _handle(value if value is not None else torch.cuda.current_stream())


def _arg_stream_first(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return _handle(args[0]) if args else -1


def _none(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return -1


class _StreamOps:
    def __init__(self, recorder: Recorder):
        self.rec = recorder
        self._busy = False  # wait_stream() calls record_event() and wait_event(): one op

    def emit(self, op: str, stream: int, other: int, skip: int) -> None:
        rec = self.rec
        rec.emit(StreamOp(rec.now(), op, stream, other, rec.capturing_graph(),
                                   rec.thread(), rec.stacks.capture(skip + 1)))

    def op(self, name: str, stream_of: Any, other_of: Any) -> Any:
        def make(original: Any) -> Any:
            @functools.wraps(original)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if self._busy or not self.rec.enabled:
                    return original(*args, **kwargs)
                self._busy = True
                try:
                    result = original(*args, **kwargs)
                finally:
                    self._busy = False
                # recorded after the call: record_event() creates the event it names
                other = other_of(args, kwargs)
                if name == "record_event" and other == -1:
                    other = _event_handle(result)
                self.emit(name, stream_of(args, kwargs), other, 1)
                return result

            return wrapper

        return make

    def wrap_new_stream(self, original: Any) -> Any:
        @functools.wraps(original)
        def __new__(cls: Any, *args: Any, **kwargs: Any) -> Any:
            stream = original(cls, *args, **kwargs)
            # current_stream() rebuilds Stream objects from ids: those are not creations
            if self.rec.enabled and "stream_id" not in kwargs and "stream_ptr" not in kwargs:
                self.emit("create", _handle(stream), int(kwargs.get("priority", 0)), 1)
            return stream

        return __new__

    def wrap_context(self, which: str) -> Any:
        def make(original: Any) -> Any:
            @functools.wraps(original)
            def wrapper(context: Any, *args: Any) -> Any:
                if self._busy or not self.rec.enabled:
                    return original(context, *args)
                self._busy = True  # __enter__ calls set_stream(): one operation, not two
                try:
                    result = original(context, *args)
                finally:
                    self._busy = False
                target, previous = compat.stream_context_streams(context)
                if self.rec.enabled and target is not None:
                    self.emit(which, _handle(target), _handle(previous), 1)
                return result

            return wrapper

        return make
