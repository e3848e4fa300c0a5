"""Host syncs, warnings and garbage collections: where the script's host thread stops.

Implicit syncs (``.item()``, ``.cpu()``, ``nonzero``, printing a CUDA tensor) come from
PyTorch's sync debug mode set to "warn": its warning fires at the user's line before CUDA
fails, inside a capture too. The warning is recorded and not shown, without a warnings filter
of graphdoctor's (:mod:`graphdoctor.record.host.sync_warnings`). Explicit syncs (device, stream and
event synchronize, event and stream queries) are patched at their Python entry points. Other
warnings are recorded and then shown as usual. Python's garbage collections are timed
through ``gc.callbacks``; those that held the host long enough to matter in a launch-bound
loop, and every full one, are recorded.
"""

from __future__ import annotations

import functools
import gc
import linecache
import re
import threading
from collections import deque
from types import FrameType
from typing import Any

import torch

from graphdoctor.facts.queries import CULPRIT_KINDS
from graphdoctor.record import compat
from graphdoctor.record.host.sync_warnings import SyncDebugMode, route_warnings
from graphdoctor.record.recorder import Recorder, Uninstall, patch
from graphdoctor.trace.event_kinds import GcPause, Sync
from graphdoctor.trace.names import INTERNAL_SYNC
from graphdoctor.trace.spool import records as sr

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
    mode = SyncDebugMode(recorder)
    undos = [route_warnings(hooks.on_sync_warning, hooks.on_warning,
                            lambda: mode.script_sees_warnings)]
    if compat.cuda_built():
        undos += [
            mode.install(),
            patch(torch.cuda, "synchronize", hooks.explicit("device_synchronize", None)),
            patch(torch.cuda.Stream, "synchronize", hooks.explicit("stream_synchronize", 0)),
            patch(torch.cuda.Stream, "query", hooks.explicit("stream_query", 0)),
            patch(torch.cuda.Event, "synchronize", hooks.explicit("event_synchronize", -1)),
            patch(torch.cuda.Event, "query", hooks.explicit("event_query", -1)),
        ]
    undos.append(_watch_collections(recorder))

    def uninstall() -> None:
        for undo in reversed(undos):
            undo()

    return uninstall


LONG_COLLECTION_NS = 100_000  # shorter ones are the routine cost of allocating objects
FULL_COLLECTION = 2


def _watch_collections(recorder: Recorder) -> Uninstall:
    """Time the collections; the flushing thread's heartbeat writes them. A collection can
    start at any allocation, also while this very thread holds the spool writer's or the
    recorder's lock, so the callback itself takes no lock: it only appends to a deque."""
    started: dict[int, int] = {}  # thread -> when its collection began
    done: deque[tuple[int, int, int, int, int]] = deque()  # t0, dur, generation, freed, thread

    def on_collection(phase: str, info: dict[str, int]) -> None:
        thread = threading.get_ident()
        if phase == "start":
            started[thread] = recorder.now()
            return
        t0 = started.pop(thread, None)
        if t0 is None or not recorder.enabled:
            return
        dur, generation = recorder.now() - t0, info.get("generation", 0)
        if dur >= LONG_COLLECTION_NS or generation == FULL_COLLECTION:
            done.append((t0, dur, generation, info.get("collected", 0), thread))

    def write_done() -> None:
        records = []
        while done:
            t0, dur, generation, collected, thread = done.popleft()
            records.append(GcPause(t0, dur, generation, collected,
                                       recorder.thread_of(thread)))
        recorder.emit_many(records)

    def uninstall() -> None:
        gc.callbacks.remove(on_collection)
        recorder.heartbeats.remove(write_done)
        write_done()

    gc.callbacks.append(on_collection)
    recorder.heartbeats.append(write_done)
    return uninstall


class _SyncHooks:
    def __init__(self, recorder: Recorder):
        self.rec = recorder
        self._site_kinds: dict[tuple[str, int], str] = {}

    def emit_sync(self, kind: str, stream: int, stack: int) -> None:
        rec = self.rec
        rec.emit(Sync(rec.now(), kind, stream, rec.capturing_graph(), rec.thread(),
                               stack))

    def on_sync_warning(self, msg: Any, frame: FrameType | None) -> None:
        if self.rec.enabled:
            line = self._outside_transparent(frame)
            site = (line.f_code.co_filename, line.f_lineno) if line is not frame and \
                line is not None else (msg.filename, msg.lineno)
            self.emit_sync(self._site_kind(*site), -1, self.rec.stacks.from_frame(line))

    def _outside_transparent(self, frame: FrameType | None) -> FrameType | None:
        """The frame the user's call came from, past graphdoctor's frames that only pass
        it through to torch (``recorder.transparent``)."""
        transparent = self.rec.transparent
        while frame is not None and frame.f_code in transparent:
            frame = frame.f_back
        return frame

    def on_warning(self, msg: Any, frame: FrameType | None) -> None:
        rec = self.rec
        frame = self._outside_transparent(frame)
        if rec.enabled:
            category = msg.category
            rec.emit(sr.WarnRecord(rec.now(), getattr(category, "__name__", str(category)),
                                   str(msg.message)[:2000], rec.capturing_graph(),
                                   rec.stacks.from_frame(frame)))

    def explicit(self, kind: str, stream_arg: int | None) -> Any:
        """A wrapper for an explicit sync; ``stream_arg`` 0 reads the stream from ``self``."""

        settles = kind in ("device_synchronize", "stream_synchronize")

        def make(original: Any) -> Any:
            @functools.wraps(original)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                if not self.rec.enabled:
                    return original(*args, **kwargs)
                stream = args[0].cuda_stream if stream_arg == 0 and args else -1
                self.emit_sync(kind, stream, self.rec.stacks.capture(1))
                result = original(*args, **kwargs)
                timer = self.rec.timer
                if settles and timer is not None:
                    timer.resolve()  # the GPU caught up: pending times are readable
                    self.rec.spool.flush()  # a sync is slow anyway; a crash may follow it
                return result

            return wrapper

        return make

    def _site_kind(self, filename: str, lineno: int) -> str:
        """What the line that synced called; "torch internal" when it is torch's code."""
        key = (filename, lineno)
        kind = self._site_kinds.get(key)
        if kind is None:
            if self.rec.stacks.kind(filename) in CULPRIT_KINDS:
                kind = sync_kind_of_line(linecache.getline(filename, lineno))
            else:
                kind = INTERNAL_SYNC
            self._site_kinds[key] = kind
        return kind

