"""Exceptions as records: the whole chain, first error first.

A failed capture raises ``cudaErrorStreamCaptureInvalidated`` from ``capture_end``; the
error that caused it (``.item()`` at the user's line) is only its ``__context__``. So every
exception graphdoctor records is walked back through ``__cause__``/``__context__`` and kept
as a chain, each link with its own stack.
"""

from __future__ import annotations

import re
from typing import Any

from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.spool import records as sr

_CUDA_ERROR_NAME = re.compile(r"`?(cudaError\w+|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+)`?")
_BOILERPLATE = (
    "Search for `cuda",
    "CUDA kernel errors might be asynchronously reported",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA`",
)
MAX_MESSAGE = 4000


def chain_of(error: BaseException) -> list[BaseException]:
    """The exception and its causes, first cause first, without cycles."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return list(reversed(chain))


def clean_message(error: BaseException) -> tuple[str, str]:
    """(message without CUDA's generic advice lines, cudaError name or "")."""
    text = str(error)
    match = _CUDA_ERROR_NAME.search(text)
    lines = [line for line in text.splitlines() if not line.strip().startswith(_BOILERPLATE)]
    return ("\n".join(lines).strip()[:MAX_MESSAGE], match.group(1) if match else "")


def record_exception(recorder: Recorder, error: BaseException, where: str,
                     graph: int = -1) -> int:
    """Emit an ``exc`` record for ``error`` and its chain; return its id."""
    exc_id = recorder.new_id("exc")
    links = []
    for link in chain_of(error):
        message, cuda_error = clean_message(link)
        stack = recorder.stacks.from_traceback(link.__traceback__)
        links.append([type(link).__qualname__, message, cuda_error, stack])
    recorder.emit(sr.ExceptionInfo({"id": exc_id, "t": recorder.now(), "where": where,
                                    "graph": graph, "thread": recorder.thread(),
                                    "chain": links}))
    return exc_id


def already_recorded(error: Any) -> bool:
    return bool(getattr(error, "_graphdoctor_recorded", False))


def mark_recorded(error: Any) -> None:
    try:
        error._graphdoctor_recorded = True
    except (AttributeError, TypeError):
        pass
