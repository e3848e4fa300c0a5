"""Why a capture failed, decided once per graph so that exactly one rule explains it.

The error the user sees (``capture_end``'s "operation failed due to a previous error during
capture") is never the cause. The cause is read from the whole chain and from what happened
in the capture's window: the first error's text and CUDA error name, syncs the user's code
made inside the capture, and exceptions raised by other threads meanwhile.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from graphdoctor.diagnose import known_errors
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import NONE, ErrorLink, Graph
from graphdoctor.trace.names import CAPTURED

UNSUPPORTED = "cudaErrorStreamCaptureUnsupported"
TORCH_BUG_CAUSE = "torch_bug"  # one of torch's own checks failed (known_errors.TORCH_BUG)

# (cause, pattern over any error text of the capture), checked in order
_TEXT_CAUSES = (
    ("default_stream", re.compile(r"must be captured on a non-default stream")),
    ("pageable_copy", re.compile(r"Cannot copy between CPU and CUDA tensors during CUDA graph")),
    ("rng", re.compile(r"CUDA generator not in capture mode|CUDAGeneratorImpl|"
                       r"register_generator_state|set_rng_state|get_rng_state")),
    ("library_init", re.compile(r"CUBLAS_STATUS_NOT_INITIALIZED|cublasCreate|CUDNN_STATUS|"
                                r"cudnnCreate|cufftPlan|CUSOLVER_STATUS_NOT_INITIALIZED|"
                                r"FIND was unable to find an engine")),
    ("unjoined", re.compile(r"cudaErrorStreamCaptureUnjoined|capturing stream has unjoined work")),
    ("other_device", re.compile(r"Expected all tensors to be on the same device|wrong device")),
)


@dataclass(frozen=True)
class Cause:
    kind: str  # a _TEXT_CAUSES name, or sync, other_thread, torch_bug, python_exception, other
    link: ErrorLink | None = None
    exception: int = NONE  # index in trace.exceptions


@dataclass(frozen=True)
class NamedCause:
    """A cause that names the error it comes from: what a rule of one kind of cause reports."""

    kind: str
    link: ErrorLink
    exception: int  # index in trace.exceptions


def cause_of(view: TraceView, graph: Graph) -> Cause | None:
    """The cause of a failed capture; None for a graph that did not fail."""
    if graph.status == CAPTURED:
        return None
    return view.causes.get(graph, functools.partial(_find_cause, view))


def _find_cause(view: TraceView, graph: Graph) -> Cause:
    records = view.exceptions_of(graph) + view.errors_in_window(graph, "thread")
    for kind, pattern in _TEXT_CAUSES:
        for index, record in records:
            for link in record.chain:
                if pattern.search(link.message) or pattern.search(link.cuda_error):
                    return Cause(kind, link, index)
    return _from_first_error(view, graph)


def _from_first_error(view: TraceView, graph: Graph) -> Cause:
    threads = [(i, e) for i, e in view.errors_in_window(graph, "thread")
               if any(link.cuda_error == UNSUPPORTED for link in e.chain)]
    if threads:
        return Cause("other_thread", threads[0][1].chain[0], threads[0][0])
    first = view.first_error(graph)
    if first is None:
        return Cause("other")
    index, link = first
    if link.cuda_error == UNSUPPORTED or "not permitted when stream is capturing" in link.message:
        return Cause("sync", link, index)
    if known_errors.is_torch_bug(link):
        return Cause(TORCH_BUG_CAUSE, link, index)  # GD112 tells it, not the script's error
    if not link.cuda_error and "CUDA error" not in link.message:
        return Cause("python_exception", link, index)
    return Cause("other", link, index)


def failures_of_kind(view: TraceView, kind: str) -> Iterator[tuple[Graph, NamedCause]]:
    """The failed graphs whose cause is ``kind`` and names its first error, with it."""
    for graph in view.graphs:
        cause = cause_of(view, graph)
        if cause is not None and cause.kind == kind and cause.link is not None:
            yield graph, NamedCause(cause.kind, cause.link, cause.exception)


@dataclass(frozen=True)
class KnownFix:
    """A capture error of the known-errors table: what went wrong, and its fix."""

    name: str
    what: str
    fix: str


def known_fix(view: TraceView, link: ErrorLink) -> KnownFix | None:
    """The known-errors table's words for this error, filled in; None for an error no row
    matches (its rule keeps its own words)."""
    found = known_errors.known(link, view.trace.stack(link.stack))
    if found is None:
        return None
    row, words = found
    return KnownFix(row.name, known_errors.say(row.what, words), known_errors.say(row.fix, words))
