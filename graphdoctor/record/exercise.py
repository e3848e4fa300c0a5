"""How ``graphdoctor.check`` runs the function it checks, under a running recorder.

A compiled function (what ``torch.compile`` returned) is called as a program would: its
warm-up, recording and replays are torch.compile's to make. Any other function is captured
by PyTorch's own recipe for ``torch.cuda.graph``: warm-up calls on a side stream, one
capture, then the replays; then as many eager calls, which the recorder times as the
baseline a replay is compared with (Python 3.12+; without one no speedup is claimed, and
the eager calls are left out).

A capture that fails is not raised: the recorder has recorded why, and the verdict says it.
An exception in a warm-up or eager call is the function's own, and is raised.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from graphdoctor.errors import NoCudaDevice
from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder

NO_CUDA = "graphdoctor.check captures a CUDA graph, and no CUDA device is available"


def cuda_available() -> bool:
    return bool(torch.cuda.is_available())


def require_device(fn: Callable[..., Any]) -> None:
    """NoCudaDevice if ``fn`` needs a capture and no CUDA device is there to capture on."""
    if not compat.is_compiled(fn) and not cuda_available():
        raise NoCudaDevice(NO_CUDA)


def run(recorder: Recorder, fn: Callable[..., Any], args: tuple[Any, ...],
        kwargs: dict[str, Any], warmup: int, replays: int) -> None:
    call = functools.partial(fn, *args, **kwargs)
    if compat.is_compiled(fn):
        for _ in range(warmup + replays):
            call()
        _wait_for_gpu()
    else:
        _capture_and_replay(recorder, fn, call, warmup, replays)


def _capture_and_replay(recorder: Recorder, fn: Callable[..., Any], call: Callable[[], Any],
                        warmup: int, replays: int) -> None:
    require_device(fn)
    followed = recorder.follow is not None and recorder.follow(fn)
    _warm_up(recorder, call, warmup)
    graph = _captured(call)
    if graph is None:
        return
    for _ in range(replays):
        graph.replay()
    for _ in range(replays if followed else 0):
        call()
    _wait_for_gpu()


def _warm_up(recorder: Recorder, call: Callable[[], Any], times: int) -> None:
    """On a side stream, as torch.cuda.graph's documentation does: lazy initialization
    (cuBLAS handles, autotuning) happens here, not in the capture."""
    make_stream: Callable[[], Any] = torch.cuda.Stream  # its __new__ is unannotated
    side = make_stream()
    side.wait_stream(torch.cuda.current_stream())
    recorder.in_warmup = True  # these calls are not the eager baseline
    try:
        with torch.cuda.stream(side):
            for _ in range(times):
                call()
    finally:
        recorder.in_warmup = False
    torch.cuda.current_stream().wait_stream(side)


def _captured(call: Callable[[], Any]) -> Any | None:
    """The graph of one call, or None if its capture failed (the recorder knows why)."""
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.current_stream()
    try:
        with torch.cuda.graph(graph):
            call()
    except Exception:  # noqa: BLE001 - a failed capture is the finding, not an error here
        # torch.cuda.graph leaves its capture stream current when capture_end raises: the
        # caller's code after the check must run where it ran before
        torch.cuda.set_stream(stream)
        return None
    return graph


def _wait_for_gpu() -> None:
    """Let every timed replay and call finish inside the recording; not through the patched
    ``torch.cuda.synchronize``: graphdoctor's own wait is not a sync of the user's."""
    initialized: Callable[[], bool] = torch.cuda.is_initialized  # unannotated in torch
    if compat.cuda_built() and initialized():
        compat.synchronize_unpatched()
