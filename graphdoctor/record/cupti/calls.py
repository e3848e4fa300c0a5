"""Reading what CUPTI hands a callback: the call's parameters and its result, from the
CUpti_CallbackData it points at, and the names the driver's numbers stand for. Pure ctypes;
no CUDA call, no torch (see :mod:`graphdoctor.record.cupti.graphs`)."""

from __future__ import annotations

import ctypes
from types import FrameType
from typing import Any

# CUpti_CallbackData: callbackSite (an enum, padded to 8), functionName, then the pointers
# to the call's parameter struct and to its return value.
PARAMS_AT, RESULT_AT = 16, 24
ENTER, EXIT = 0, 1

# The capture errors, by the number the driver and the runtime share, with the runtime's
# name and text (what PyTorch's errors show, and the diagnosis reads).
CAPTURE_ERRORS = {
    900: ("cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"),
    901: ("cudaErrorStreamCaptureInvalidated",
          "operation failed due to a previous error during capture"),
    902: ("cudaErrorStreamCaptureMerge", "operation would result in a merge of separate capture "
                                         "sequences"),
    903: ("cudaErrorStreamCaptureUnmatched", "capture was not ended in the same stream as it "
                                             "began"),
    904: ("cudaErrorStreamCaptureUnjoined", "capturing stream has unjoined work"),
    905: ("cudaErrorStreamCaptureIsolation", "dependency created on uncaptured work in another "
                                             "stream"),
    906: ("cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a "
                                            "capturing blocking stream"),
    907: ("cudaErrorCapturedEvent", "operation not permitted on an event last recorded in a "
                                    "capturing stream"),
    908: ("cudaErrorStreamCaptureWrongThread", "attempt to terminate a thread-local capture "
                                               "sequence from another thread"),
}
CAPTURE_MODES = {0: "global", 1: "thread_local", 2: "relaxed"}  # CUstreamCaptureMode
SYNC_KINDS = {"cuStreamSynchronize": "stream_synchronize", "cuCtxSynchronize": "device_synchronize",
              "cuEventSynchronize": "event_synchronize"}


def params(cbdata: Any) -> int:
    """The address of the call's parameter struct."""
    return ctypes.c_void_p.from_address(int(cbdata.ptr) + PARAMS_AT).value or 0


def word(address: int, index: int) -> int:
    """The ``index``-th pointer-sized field of a parameter struct (every field used here is a
    handle, a pointer or an enum padded to 8 bytes)."""
    return ctypes.c_uint64.from_address(address + 8 * index).value


def pointee(address: int) -> int:
    """The handle an out-parameter points at, once the call has written it."""
    return ctypes.c_uint64.from_address(address).value if address else 0


def result(cbdata: Any) -> int:
    address = ctypes.c_void_p.from_address(int(cbdata.ptr) + RESULT_AT).value
    return ctypes.c_int.from_address(address).value if address else 0


def from_torch(frame: FrameType | None) -> bool:
    """Whether the call comes from PyTorch's own Python code (its hooks record it)."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name == "torch" or name.startswith("torch."):
            return True
        frame = frame.f_back
    return False
