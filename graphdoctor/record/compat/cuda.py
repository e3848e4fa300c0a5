"""CUDA itself: whether this build has it, its lazy initialization, the current stream, the
timer's events, syncs, the sync debug mode and its warning, and whether a profiler records."""

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
    CUDA_TEXT_SEEN,
    RUN_NOT_SEEN,
    RUN_SEEN,
    STUB_NOT_SEEN,
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


_SET_SYNC_DEBUG_MODE = TorchName("torch._C", "_cuda_set_sync_debug_mode", cuda_only=True)
_GET_SYNC_DEBUG_MODE = TorchName("torch._C", "_cuda_get_sync_debug_mode", cuda_only=True)
SYNC_DEBUG_MODE = Entry("set_sync_debug_mode", STUB_NOT_SEEN, (
    _SET_SYNC_DEBUG_MODE, _GET_SYNC_DEBUG_MODE,
    # the public functions (which graphdoctor patches, to keep the script's own mode) call these
    TorchSource(TorchName("torch.cuda", "set_sync_debug_mode"), ("_cuda_set_sync_debug_mode",)),
    TorchSource(TorchName("torch.cuda", "get_sync_debug_mode"), ("_cuda_get_sync_debug_mode",)),
))
SYNC_OFF, SYNC_WARN, SYNC_ERROR = 0, 1, 2  # torch's sync debug modes


def set_sync_debug_mode(mode: int) -> bool:
    """Set torch's sync debug mode (``SYNC_WARN``: warn at each implicit host sync) natively,
    not through ``torch.cuda.set_sync_debug_mode``, which graphdoctor patches to keep the
    script's own mode. CUDA must be initialized."""
    set_mode = _SET_SYNC_DEBUG_MODE.resolve()
    if set_mode is None:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "prototype feature" notice the user did not ask for
        try:
            set_mode(mode)
        except (RuntimeError, AttributeError):
            return False
    return True


def sync_debug_mode() -> int:
    """torch's sync debug mode now, read natively; ``SYNC_OFF`` where unknown."""
    get_mode = _GET_SYNC_DEBUG_MODE.resolve()
    try:
        return int(get_mode()) if get_mode is not None else SYNC_OFF
    except (RuntimeError, AttributeError):
        return SYNC_OFF


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


_PYTHON_PROFILER = TorchName("torch.autograd.profiler")
_PYTHON_PROFILER_FLAG = "_is_profiler_enabled"
_NATIVE_PROFILER_ENABLED = TorchName("torch._C._autograd", "_profiler_enabled")
PROFILER_ACTIVE = Entry("ProfilerActive", RUN_NOT_SEEN, (
    TorchName(_PYTHON_PROFILER.module, _PYTHON_PROFILER_FLAG),
    # every profiler torch starts from Python (torch.profiler, the autograd profiler) sets it
    TorchSource(TorchName(_PYTHON_PROFILER.module, "_run_on_profiler_start"),
                ("_set_is_profiler_enabled(True)",)),
    _NATIVE_PROFILER_ENABLED,
))


class ProfilerActive:
    """Whether a profiler of the script's is recording now: one started from Python
    (``torch.profiler``, the autograd profiler), which sets a flag for the whole process, or
    one enabled through torch's native API on this thread. Tens of nanoseconds a call."""

    def __init__(self) -> None:
        self._module = _PYTHON_PROFILER.resolve()
        self._native: Callable[[], bool] | None = _NATIVE_PROFILER_ENABLED.resolve()

    def __call__(self) -> bool:
        if getattr(self._module, _PYTHON_PROFILER_FLAG, False):
            return True
        return self._native is not None and bool(self._native())


_PROFILE = TorchName("torch.autograd.profiler", "profile")
PROFILE_STARTS = ("_prepare_trace", "_start_trace")
PROFILER_STARTS = Entry("profiler_starts", RUN_SEEN, tuple(
    TorchName(_PROFILE.module, f"{_PROFILE.path}.{name}") for name in PROFILE_STARTS))


def profiler_starts() -> tuple[type, tuple[str, ...]] | None:
    """The class every profiler torch runs from Python starts through
    (``torch.profiler.profile`` drives it too), with the methods it starts in: kineto takes
    CUPTI in the first. None where this torch lacks them."""
    owner = _PROFILE.resolve()
    if not isinstance(owner, type) or any(name not in owner.__dict__ for name in PROFILE_STARTS):
        return None
    return owner, PROFILE_STARTS


_STREAM_CONTEXT = TorchName("torch.cuda", "StreamContext")
_CONTEXT_STREAM = TorchAttribute(_STREAM_CONTEXT, "stream")
_CONTEXT_PREVIOUS = TorchAttribute(_STREAM_CONTEXT, "src_prev_stream")
STREAM_CONTEXT_STREAMS = Entry("stream_context_streams", RUN_SEEN,
                               (_CONTEXT_STREAM, _CONTEXT_PREVIOUS))


def stream_context_streams(context: object) -> tuple[Any, Any]:
    """(the stream a ``torch.cuda.stream`` context switches to, the one it switches from);
    each None where unknown."""
    return (_CONTEXT_STREAM.read(context), _CONTEXT_PREVIOUS.read(context))


ENTRIES = (CUDA_BUILT, LAZY_CUDA_CALL, SYNC_DEBUG_MODE, SYNC_WARNING_TEXT, CURRENT_STREAM,
           UNPATCHED_EVENT_METHODS, SYNCHRONIZE_UNPATCHED, PROFILER_ACTIVE, STREAM_CONTEXT_STREAMS,
           PROFILER_STARTS)
