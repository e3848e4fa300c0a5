"""The state assembly keeps while it reads a spool's records (see :mod:`assemble`)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from graphdoctor.trace.frames import classify_path, trim_runner_frames
from graphdoctor.trace.model import Frame, Note, SourceFile, Table, Trace


class Builder:
    def __init__(self) -> None:
        self.trace = Trace()
        self.meta: dict[str, Any] = {}
        self.notes: list[Note] = []
        self.frames: dict[int, Frame] = {}
        self.sources: dict[str, SourceFile] = {}  # the latest digest of each file
        self.stacks: dict[int, tuple[int, ...]] = {}
        self.graphs: dict[int, dict[str, Any]] = {}
        self.compile_spans: dict[str, tuple[int, str, int]] = {}
        self.regions: list[tuple[str, int, int]] = []
        self.end: dict[str, Any] | None = None
        self.run_end: dict[str, Any] | None = None
        self.cuda: dict[str, Any] = {}
        self.last_t = 0
        self.bad_records = 0
        self.unknown_tags: set[str] = set()  # tags no record is declared for, or drifted
        self.untimed = 0
        self.text_stacks: list[tuple[tuple[str, int, str], ...]] = []
        self.open_collectives: dict[int, int] = {}  # token -> row

    def copy(self) -> Builder:
        """A copy that finishing may change, and records read later do not: what a live
        view is given while the spool is still being read (its own lists and tables; the
        records in them, immutable, are shared)."""
        other = copy.copy(self)
        other.trace = _copied(self.trace)
        other.meta, other.sources = dict(self.meta), dict(self.sources)
        other.frames, other.stacks = dict(self.frames), dict(self.stacks)
        other.notes, other.text_stacks = list(self.notes), list(self.text_stacks)
        other.graphs = {gid: dict(g) for gid, g in self.graphs.items()}
        other.compile_spans, other.regions = dict(self.compile_spans), list(self.regions)
        other.cuda, other.unknown_tags = dict(self.cuda), set(self.unknown_tags)
        other.open_collectives = dict(self.open_collectives)
        return other

    def see(self, t: int) -> int:
        self.last_t = max(self.last_t, t)
        return t

    # -- frames from text ----------------------------------------------------------------
    def frames_of(self, stack: int) -> list[tuple[str, int, str]]:
        """(file, line, function) of a recorded stack's frames, outermost first."""
        frames = (self.frames.get(i) for i in self.stacks.get(stack, ()))
        return [(f.file, f.line, f.func) for f in frames if f is not None]

    def text_stack(self, frames: list[tuple[str, int, str]]) -> int:
        """A placeholder id for a stack read from log text; made real in ``finish``, after
        every stack id the child handed out is known."""
        self.text_stacks.append(tuple(trim_runner_frames(frames)))
        return -2 - (len(self.text_stacks) - 1)

    def _place_text_stacks(self) -> dict[int, int]:
        real: dict[int, int] = {}
        next_frame = max(self.frames, default=-1) + 1
        next_stack = max(self.stacks, default=-1) + 1
        for index, frames in enumerate(self.text_stacks):
            ids = []
            for file, line, func in frames:
                self.frames[next_frame] = Frame(file, line, func, classify_path(file))
                ids.append(next_frame)
                next_frame += 1
            self.stacks[next_stack] = tuple(ids)
            real[-2 - index] = next_stack
            next_stack += 1
        return real


def _copied(trace: Trace) -> Trace:
    other = copy.copy(trace)
    for name in (f.name for f in dataclasses.fields(trace)):
        if isinstance(value := getattr(trace, name), list):
            setattr(other, name, list(value))
    other.tables = {name: Table(table.row_type, {c: list(v) for c, v in table.data.items()})
                    for name, table in trace.tables.items()}
    other.counters = {kind: dict(counts) for kind, counts in trace.counters.items()}
    other.replay_counts = dict(trace.replay_counts)
    return other
