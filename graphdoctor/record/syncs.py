"""Host syncs and warnings.

Implicit syncs (``.item()``, ``.cpu()``, ``nonzero``, printing a CUDA tensor) come from
PyTorch's sync debug mode set to "warn": its warning fires at the user's line before CUDA
fails, inside a capture too. The warning is recorded and not shown. Explicit syncs (device,
stream and event synchronize, event and stream queries) are patched at their Python entry
points. Other warnings are recorded and then shown as usual.
"""

from __future__ import annotations

import functools
import linecache
import re
import warnings
from typing import Any, cast

import torch

from graphdoctor.record import compat
from graphdoctor.record.compat import SYNC_WARNING
from graphdoctor.record.recorder import Recorder, Uninstall, patch
from graphdoctor.trace import spool_records as sr
from graphdoctor.trace.model import LIBRARY, USER
from graphdoctor.trace.names import INTERNAL_SYNC

# What a user line that synced most likely called, checked in this order.
_SITE_PATTERNS = (
    ("item", re.compile(r"\.item\(\)")),
    ("tolist", re.compile(r"\.tolist\(\)")),
    ("numpy", re.compile(r"\.numpy\(\)")),
    ("cpu", re.compile(r"\.cpu\(\)|\.to\(\s*['\"]cpu|device\s*=\s*['\"]cpu")),
    ("print", re.compile(r"\bprint\(|\bstr\(|\bformat\(|f['\"]")),
    ("nonzero", re.compile(r"nonzero|masked_select|\bunique\b|argwhere")),
    ("bool-mask index", re.compile(r"\[[^\]]*(?:[<>]=?|==|!=)[^\]]*\]")),
    ("python scalar", re.compile(r"\b(?:float|int|bool)\(|\bif\b|\bwhile\b|\bassert\b")),
)


def sync_kind_of_line(line: str) -> str:
    for kind, pattern in _SITE_PATTERNS:
        if pattern.search(line):
            return kind
    return "implicit sync"


def install(recorder: Recorder) -> Uninstall:
    hooks = _SyncHooks(recorder)
    undos = [hooks.install_warnings()]
    if compat.cuda_built():
        mode = _SyncDebugMode()
        if not compat.lazy_cuda_call(mode.warn):
            recorder.note("implicit syncs", "torch.cuda._lazy_call is missing")
        undos += [
            mode.give_back,
            patch(torch.cuda, "synchronize", hooks.explicit("device_synchronize", None)),
            patch(torch.cuda.Stream, "synchronize", hooks.explicit("stream_synchronize", 0)),
            patch(torch.cuda.Stream, "query", hooks.explicit("stream_query", 0)),
            patch(torch.cuda.Event, "synchronize", hooks.explicit("event_synchronize", -1)),
            patch(torch.cuda.Event, "query", hooks.explicit("event_query", -1)),
        ]

    def uninstall() -> None:
        for undo in reversed(undos):
            undo()

    return uninstall


class _SyncDebugMode:
    """Torch's sync debug mode: "warn" once CUDA is up, and the user's own mode again when
    the source is removed. A recording inside the user's process (``graphdoctor.check``)
    must leave torch as it found it, and a lazy call that comes only after the removal (CUDA
    first initialized after the recording) must not turn the warnings on."""

    def __init__(self) -> None:
        self._previous: int | None = None
        self._removed = False

    def warn(self) -> None:
        if self._removed:
            return
        previous = compat.sync_debug_mode()
        if compat.enable_sync_warnings():
            self._previous = previous

    def give_back(self) -> None:
        self._removed = True
        if self._previous is not None:
            compat.restore_sync_debug_mode(self._previous)


class _SyncHooks:
    def __init__(self, recorder: Recorder):
        self.rec = recorder
        self._site_kinds: dict[tuple[str, int], str] = {}

    def emit_sync(self, kind: str, stream: int, skip: int) -> None:
        rec = self.rec
        rec.emit(sr.SyncRecord(rec.now(), kind, stream, rec.capturing_graph(), rec.thread(),
                               rec.stacks.capture(skip + 1)))

    def explicit(self, kind: str, stream_arg: int | None) -> Any:
        """A wrapper for an explicit sync; ``stream_arg`` 0 reads the stream from ``self``."""

        settles = kind in ("device_synchronize", "stream_synchronize")

        def make(original: Any) -> Any:
            @functools.wraps(original)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if not self.rec.enabled:
                    return original(*args, **kwargs)
                stream = args[0].cuda_stream if stream_arg == 0 and args else -1
                self.emit_sync(kind, stream, 1)
                result = original(*args, **kwargs)
                timer = self.rec.timer
                if settles and timer is not None:
                    timer.resolve()  # the GPU caught up: pending times are readable
                    self.rec.spool.flush()  # a sync is slow anyway; a crash may follow it
                return result

            return wrapper

        return make

    def install_warnings(self) -> Uninstall:
        original = warnings.showwarning
        warnings.filterwarnings("always", message=SYNC_WARNING)

        def showwarning(message: Any, category: Any, filename: str, lineno: int,
                        file: Any = None, line: Any = None) -> None:
            text = str(message)
            if text.startswith(SYNC_WARNING):
                if self.rec.enabled:
                    self.emit_sync(self._site_kind(filename, lineno), -1, 2)
                return None
            if self.rec.enabled:
                rec = self.rec
                rec.emit(sr.WarnRecord(rec.now(), getattr(category, "__name__", str(category)),
                                       text[:2000], rec.capturing_graph(),
                                       rec.stacks.capture(1)))
            return original(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning

        def uninstall() -> None:
            warnings.showwarning = original
            _remove_filter()

        return uninstall

    def _site_kind(self, filename: str, lineno: int) -> str:
        """What the line that synced called; "torch internal" when it is torch's code."""
        key = (filename, lineno)
        kind = self._site_kinds.get(key)
        if kind is None:
            if self.rec.stacks.kind(filename) in (USER, LIBRARY):
                kind = sync_kind_of_line(linecache.getline(filename, lineno))
            else:
                kind = INTERNAL_SYNC
            self._site_kinds[key] = kind
        return kind


def _remove_filter() -> None:
    # typeshed declares a Sequence; it is the module's own list, which is edited in place
    filters = cast("list[Any]", warnings.filters)
    filters[:] = [f for f in filters if not _is_ours(f)]


def _is_ours(warning_filter: Any) -> bool:
    return warning_filter[0] == "always" and \
        getattr(warning_filter[1], "pattern", "") == SYNC_WARNING
