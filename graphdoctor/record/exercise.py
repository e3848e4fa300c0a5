"""How ``graphdoctor.check`` runs the function it checks, under a running recorder.

A compiled function (what ``torch.compile`` returned) is called as a program would: its
warm-up, recording and replays are torch.compile's to make. Any other function is captured
by PyTorch's own recipe for ``torch.cuda.graph``: warm-up calls on a side stream, one
capture, then the replays; then as many eager calls, which the recorder times as the
baseline a replay is compared with (Python 3.12+; without one no speedup is claimed, and
the eager calls are left out).

A capture that fails is not raised: the recorder has recorded why, and the verdict says it.
An exception in a warm-up or eager call is the function's own, and is raised.

A capture that fails leaves more behind than torch cleans up, and ``check`` is a library call
that must leave the process as it found it; ``_give_back`` says what it puts back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from graphdoctor.errors import NoCudaDevice
from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder

NO_CUDA = ("graphdoctor.check runs its function as CUDA graphs, and no CUDA device is "
           "available")


def cuda_available() -> bool:
    return bool(torch.cuda.is_available())


def require_device() -> None:
    """NoCudaDevice where no CUDA device is there to run graphs on: a compiled function too
    would compile for the CPU and capture nothing."""
    if not cuda_available():
        raise NoCudaDevice(NO_CUDA)


def run(recorder: Recorder, fn: Callable[..., Any], args: tuple[Any, ...],
        kwargs: dict[str, Any], warmup: int, replays: int) -> None:
    require_device()
    call = functools.partial(fn, *args, **kwargs)
    if compat.is_compiled(fn):
        for _ in range(warmup + replays):
            call()
        _wait_for_gpu()
    else:
        _capture_and_replay(recorder, fn, call, warmup, replays)


def _capture_and_replay(recorder: Recorder, fn: Callable[..., Any], call: Callable[[], Any],
                        warmup: int, replays: int) -> None:
    followed = recorder.follow is not None and recorder.follow(fn)
    rng = torch.cuda.get_rng_state_all()  # the caller's, given back if the capture fails
    side = _warm_up(recorder, call, warmup)
    graph = _captured(call, side, rng)
    if graph is None:
        return
    for _ in range(replays):
        graph.replay()
    for _ in range(replays if followed else 0):
        call()
    _wait_for_gpu()


def _warm_up(recorder: Recorder, call: Callable[[], Any], times: int) -> Any:
    """On a side stream, as torch.cuda.graph's documentation does: lazy initialization
    (cuBLAS handles, autotuning) happens here, not in the capture. The side stream, which the
    capture uses too."""
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
    return side


@dataclass(frozen=True)
class _Before:
    """What a capture may leave changed, as the caller had it before the capture."""

    stream: Any  # the caller's current stream
    device: int
    capture_stream: Any
    pool: Any  # the capture's memory pool, graphdoctor's own: its routing is ended by id
    rng: list[Any]  # torch.cuda.get_rng_state_all() before the warm-up


def _captured(call: Callable[[], Any], side: Any, rng: list[Any]) -> Any | None:
    """The graph of one call, or None if its capture failed (the recorder knows why)."""
    graph = torch.cuda.CUDAGraph()
    before = _Before(torch.cuda.current_stream(), torch.cuda.current_device(), side,
                     torch.cuda.graph_pool_handle(), rng)
    try:
        with torch.cuda.graph(graph, pool=before.pool, stream=before.capture_stream):
            call()
    except Exception:  # noqa: BLE001 - a failed capture is the finding, not an error here
        _give_back(graph, before)
        return None
    return graph


def _give_back(graph: Any, before: _Before) -> None:
    """Put back what a failed capture leaves behind and torch does not: its capture_end
    raises (cudaStreamEndCapture's error) before its own bookkeeping, and reset() does not
    make up for it (torch 2.11, seen on an H100):

    - the current stream: ``torch.cuda.graph`` leaves its capture stream current;
    - a capture still open, where the captured code left another stream current: then
      capture_end raises before it ends the capture;
    - the device's CUDA generator: up to torch 2.11, capture_begin puts its state in capture
      mode and only a capture_end that succeeds takes it out, so every later random op
      (torch.randn, dropout) raises "Offset increment outside graph capture encountered
      unexpectedly" (newer torch keeps RNG state per capture instead);
    - the caching allocator's routing of allocations to the capture's pool, which torch 2.11
      leaves on for the rest of the process (a later fix, PyTorch #180395, ends it in
      capture_end); hence the pool is one of graphdoctor's, whose id is known;
    - the generators' seed and offset, as they were before the warm-up.
    """
    torch.cuda.set_stream(before.capture_stream)
    try:
        _end_open_capture(graph)
        _end_generator_capture_mode()
    finally:
        torch.cuda.set_stream(before.stream)
    compat.end_allocate_to_pool(before.device, before.pool)
    try:
        graph.reset()  # what else of the capture the graph holds (newer torch: its RNG state)
    except RuntimeError:
        pass
    torch.cuda.set_rng_state_all(before.rng)


def _end_open_capture(graph: Any) -> None:
    """End the capture if the capture stream (current) still captures, through the native
    method: the recorder has recorded this capture's end already."""
    native = compat.unpatched_graph_class()
    capturing: Callable[[], bool] = torch.cuda.is_current_stream_capturing
    if native is not None and capturing():
        try:
            native.capture_end(graph)
        except RuntimeError:
            pass  # an invalidated capture is ended all the same


def _end_generator_capture_mode() -> None:
    """One more capture on the current (side) stream, of one fill, which ends like a capture
    that worked: its end takes the device's generator out of capture mode, where the failed
    capture left it up to torch 2.11 (newer torch keeps no such mode, and this changes
    nothing there). Through the native class, so the recorder does not take it for a graph
    of the user's; "relaxed", so that other threads' CUDA calls meanwhile are no errors; not
    empty, since torch warns of an empty graph, and a warning would reach the user and the
    report (filtering it out would change the warnings filters, which the recorder follows)."""
    native = compat.unpatched_graph_class()
    if native is None:
        return
    target = torch.empty(1, device="cuda")  # outside the capture: no allocation inside it
    graph = native()
    graph.capture_begin(pool=None, capture_error_mode="relaxed")
    try:
        target.zero_()
    finally:
        graph.capture_end()
    graph.reset()


def _wait_for_gpu() -> None:
    """Let every timed replay and call finish inside the recording; not through the patched
    ``torch.cuda.synchronize``: graphdoctor's own wait is not a sync of the user's."""
    initialized: Callable[[], bool] = torch.cuda.is_initialized  # unannotated in torch
    if compat.cuda_built() and initialized():
        compat.synchronize_unpatched()
