"""CUDA itself: whether this build has it, its lazy initialization, the current stream, the
timer's events, syncs and the sync warning."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

from graphdoctor.record.compat.resolve import (
    Entry,
    TorchAttribute,
    TorchName,
    TorchSource,
    TorchText,
)
from graphdoctor.record.compat.versions import (
    CHECKED_NOT_SEEN,
    CHECKED_SEEN,
    CUDA_TEXT_SEEN,
    RUN_SEEN,
    STUB_SEEN,
)

_GET_CURRENT_STREAM = TorchName("torch._C", "_cuda_getCurrentStream", cuda_only=True)
_GET_DEVICE = TorchName("torch._C", "_cuda_getDevice", cuda_only=True)

CUDA_BUILT = Entry("cuda_built", STUB_SEEN, (_GET_CURRENT_STREAM,))


def cuda_built() -> bool:
    return torch.version.cuda is not None and _GET_CURRENT_STREAM.resolve() is not None


_LAZY_CALL = TorchName("torch.cuda", "_lazy_call")
LAZY_CUDA_CALL = Entry("lazy_cuda_call", RUN_SEEN, (_LAZY_CALL,))


def lazy_cuda_call(fn: Callable[[], object]) -> bool:
    """Run ``fn`` as soon as the script initializes CUDA (at once if it already has).

    graphdoctor never initializes CUDA itself before the script does: that would poison
    fork() for DataLoader workers and take GPU memory a CPU-only script never asked for.
    """
    lazy_call = _LAZY_CALL.resolve()
    if lazy_call is None:
        return False
    lazy_call(fn)
    return True


_SET_SYNC_DEBUG_MODE = TorchName("torch.cuda", "set_sync_debug_mode")
ENABLE_SYNC_WARNINGS = Entry("enable_sync_warnings", CHECKED_SEEN, (_SET_SYNC_DEBUG_MODE,))


def enable_sync_warnings() -> bool:
    """Have torch warn at each implicit host sync (CUDA must be initialized)."""
    set_mode = _SET_SYNC_DEBUG_MODE.resolve()
    if set_mode is None:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "prototype feature" notice the user did not ask for
        try:
            set_mode("warn")
        except (RuntimeError, AttributeError):
            return False
    return True


_GET_SYNC_DEBUG_MODE = TorchName("torch.cuda", "get_sync_debug_mode")
SYNC_DEBUG_MODE = Entry("sync_debug_mode", CHECKED_NOT_SEEN,
                        (_GET_SYNC_DEBUG_MODE, _SET_SYNC_DEBUG_MODE))


def sync_debug_mode() -> int | None:
    """The sync debug mode now (0 off, 1 warn, 2 error; CUDA must be initialized), or None
    where it cannot be read."""
    get_mode = _GET_SYNC_DEBUG_MODE.resolve()
    if get_mode is None:
        return None
    try:
        return int(get_mode())
    except (RuntimeError, AttributeError):
        return None


def restore_sync_debug_mode(mode: int) -> None:
    """Set the sync debug mode back to ``mode``, as ``sync_debug_mode`` read it."""
    set_mode = _SET_SYNC_DEBUG_MODE.resolve()
    if set_mode is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            set_mode(mode)
        except (RuntimeError, AttributeError):
            pass


# The start of the warning sync debug mode "warn" gives (c10/cuda/CUDAFunctions.cpp).
SYNC_WARNING = "called a synchronizing CUDA operation"
SYNC_WARNING_TEXT = Entry("SYNC_WARNING", CUDA_TEXT_SEEN,
                          (TorchText(SYNC_WARNING, "libc10_cuda"),))


CURRENT_STREAM = Entry("CurrentStream", STUB_SEEN, (
    _GET_CURRENT_STREAM, _GET_DEVICE,
    # torch.cuda.current_stream() rebuilds its Stream from the same three numbers
    TorchSource(TorchName("torch.cuda", "current_stream"),
                ("stream_id=", "device_index=", "device_type=")),
))


class CurrentStream:
    """The current stream as a cached ``torch.cuda.Stream``: ``current_stream()`` builds a
    new Python object on every call (about 3 us on an H200), too slow for the replay path."""

    def __init__(self) -> None:
        self._get = _GET_CURRENT_STREAM.require()
        self._get_device = _GET_DEVICE.require()
        self._cache: dict[tuple[int, int, int], tuple[Any, int]] = {}

    def __call__(self) -> tuple[Any, int]:
        """(stream, its cudaStream_t handle)."""
        key = self._get(self._get_device())
        entry = self._cache.get(key)
        if entry is None:
            make_stream: Callable[..., Any] = torch.cuda.Stream  # its __new__ is unannotated
            stream = make_stream(stream_id=key[0], device_index=key[1], device_type=key[2])
            entry = self._cache[key] = (stream, int(stream.cuda_stream))
        return entry


_EVENT_RECORD = TorchName("torch._C", "_CudaEventBase.record", cuda_only=True)
_EVENT_QUERY = TorchName("torch._C", "_CudaEventBase.query", cuda_only=True)
_EVENT_ELAPSED = TorchName("torch._C", "_CudaEventBase.elapsed_time", cuda_only=True)
UNPATCHED_EVENT_METHODS = Entry("unpatched_event_methods", STUB_SEEN,
                                (_EVENT_RECORD, _EVENT_QUERY, _EVENT_ELAPSED))


def unpatched_event_methods() -> tuple[Callable[..., Any], Callable[..., Any],
                                        Callable[..., Any]]:
    """(record, query, elapsed_time) of the events' native base class: the user-facing ones
    are patched to record stream operations, and the timer's own events must not show up as
    the user's. AttributeError where this torch lacks one."""
    return (_EVENT_RECORD.require(), _EVENT_QUERY.require(), _EVENT_ELAPSED.require())


_SYNCHRONIZE = TorchName("torch._C", "_cuda_synchronize", cuda_only=True)
SYNCHRONIZE_UNPATCHED = Entry("synchronize_unpatched", STUB_SEEN, (_SYNCHRONIZE,))


def synchronize_unpatched() -> None:
    """Wait for the current device, not through the patched ``torch.cuda.synchronize``:
    graphdoctor's own wait is not a sync of the user's."""
    _SYNCHRONIZE.require()()


_STREAM_CONTEXT = TorchName("torch.cuda", "StreamContext")
_CONTEXT_STREAM = TorchAttribute(_STREAM_CONTEXT, "stream")
_CONTEXT_PREVIOUS = TorchAttribute(_STREAM_CONTEXT, "src_prev_stream")
STREAM_CONTEXT_STREAMS = Entry("stream_context_streams", RUN_SEEN,
                               (_CONTEXT_STREAM, _CONTEXT_PREVIOUS))


def stream_context_streams(context: object) -> tuple[Any, Any]:
    """(the stream a ``torch.cuda.stream`` context switches to, the one it switches from);
    each None where unknown."""
    return (_CONTEXT_STREAM.read(context), _CONTEXT_PREVIOUS.read(context))


ENTRIES = (CUDA_BUILT, LAZY_CUDA_CALL, ENABLE_SYNC_WARNINGS, SYNC_DEBUG_MODE, SYNC_WARNING_TEXT,
           CURRENT_STREAM, UNPATCHED_EVENT_METHODS, SYNCHRONIZE_UNPATCHED,
           STREAM_CONTEXT_STREAMS)
