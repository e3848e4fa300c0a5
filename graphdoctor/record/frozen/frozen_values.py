"""Host values a graph took by value, and whether the script changed them afterwards.

A replay runs the kernels the capture launched, with the numbers they were launched with: a
learning rate, an Adam beta, a decode position, a scale. When the script later changes the
Python value, replays go on with the old one, and nothing raises. What is watched:

- an optimizer stepped inside a manual capture: its ``param_groups`` numbers (lr, betas,
  weight_decay, eps, momentum...; a tensor is updated in place and left alone), noted when
  its ``step`` starts inside the capture (torch's global step pre-hook);
- the numbers the capture's own code passed to torch (:mod:`graphdoctor.record.frozen.scalar_uses`):
  a module's names, the capturing function's locals, attributes of the user's objects; and,
  for an argument of a user function, the other values that function's eager calls were
  given before the capture (:mod:`graphdoctor.record.eager.eager_history` keeps them).

When they are compared with what the script holds now, nothing runs per replay: after each
LR scheduler step (its line is the change's line), at the replays that already sample memory
(the 1st, 2nd, 4th... and one every 100 ms), and when the recording ends. A change seen at
a replay is attributed to the assignment the source holds for it, where it holds one.

Out of reach: a value read inside a C++ extension or a compiled kernel's own launch code, a
number computed on the line from names (``x * (scale / 2)`` binds nothing), and locals of
functions that have returned (they cannot change any more).
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch
from torch.optim import lr_scheduler
from torch.optim.optimizer import register_optimizer_step_pre_hook

from graphdoctor.record.frozen import scalar_uses, source_assignments
from graphdoctor.record.frozen.captured_names import is_number
from graphdoctor.record.frozen.host_reads import HostReads
from graphdoctor.record.frozen.host_state import ModulesRun, backend_watches
from graphdoctor.record.frozen.scalar_uses import Binding, ScalarUses
from graphdoctor.record.frozen.watches import (
    GONE,
    Reader,
    Watch,
    local_reader,
    namespace_reader,
    never,
    object_reader,
    same,
)
from graphdoctor.record.recorder import Recorder, Uninstall, patch
from graphdoctor.trace.event_kinds import FROZEN_CHANGES_KEPT, NONE, FrozenValue
from graphdoctor.trace.names import (
    HELD_BY_ARGUMENT,
    HELD_BY_OPTIMIZER,
    MANUAL_APIS,
    SEEN_AT_CALL,
    SEEN_AT_END,
    SEEN_AT_REPLAY,
    SEEN_EAGER,
    SEEN_SCHEDULER,
    USE_MODE,
)

_SEEN_AT_ITS_CALL = (SEEN_SCHEDULER, SEEN_AT_CALL)  # the change's line is the call's


class FrozenValues:
    """Watching captures (``recorder.watch_captures``): the graphs source tells it of
    captures and sampled replays."""

    def __init__(self, recorder: Recorder):
        self._rec = recorder
        self._graphs: dict[int, list[Watch]] = {}
        self._optimizers: dict[int, list[Watch]] = {}
        self._stepped: set[tuple[int, int]] = set()  # (graph, optimizer id) noted already
        self._modes: dict[int, ScalarUses] = {}  # graph -> its capture's mode
        self._modules: dict[int, ModulesRun] = {}  # graph -> the modules its capture runs
        self._reads: dict[int, HostReads] = {}  # graph -> the values its code reads
        self._said_compiled = False
        self._tensor_lr = hasattr(lr_scheduler, "_update_param_group_val")
        self.modes_watched = False  # some graph's modules' mode is watched

    # -- captures ----------------------------------------------------------------------
    def capture_began(self, graph: int, frame: FrameType | None) -> None:
        """A manual capture began, its block in ``frame``: watch torch's switches, the
        numbers it passes, the values it reads to choose what runs, the modules it runs."""
        site = self._rec.stacks.from_frame(frame)
        place = (frame.f_code.co_filename, frame.f_lineno or 0) if frame else ("", 0)
        for watch in backend_watches(graph, site, place):
            self._add(watch)
        if scalar_uses.dynamo_has_compiled():
            if not self._said_compiled:
                self._said_compiled = True
                self._rec.note("numbers in captured code", "not watched in captures made "
                               "after torch.compile ran: watching would make it compile again")
            return
        reads = HostReads(self._rec, graph, frame, self._add)
        mode = ScalarUses(self._rec, frame, lambda found: self._bound(graph, found),
                          reads.called_from)
        mode.start()
        self._modes[graph] = mode
        self._reads[graph] = reads
        try:
            self._modules[graph] = ModulesRun(self._rec, graph)
        except (AttributeError, RuntimeError) as error:  # a torch without the global hook
            self._rec.note("modules run in captures", f"not watched: {error!r}")

    def capture_ended(self, graph: int) -> None:
        mode = self._modes.pop(graph, None)
        if mode is not None:
            mode.stop()
        reads = self._reads.pop(graph, None)
        if reads is not None:
            reads.block_ended()
        modules = self._modules.pop(graph, None)
        for watch in modules.watches() if modules is not None else ():
            self.modes_watched = self.modes_watched or watch.use == USE_MODE
            self._add(watch)

    def close(self) -> None:
        """The recording stops: no hook of a capture still open is left behind."""
        for graph in list(self._modes) + list(self._modules):
            mode, modules = self._modes.pop(graph, None), self._modules.pop(graph, None)
            if mode is not None:
                mode.stop()
            if modules is not None:
                modules.end()

    def _bound(self, graph: int, found: Binding) -> None:
        site = self._rec.stacks.from_frame(found.site)
        place = (found.code.co_filename, found.site.f_lineno or 0)
        watch = Watch(graph, found.name, found.held_by, found.owner, found.value, never,
                      site, place)
        if found.held_by == HELD_BY_ARGUMENT:
            self._eager_values(watch, found)
        reader = _reader(found)
        if reader is not None:
            watch.read = reader
            self._add(watch)

    def _eager_values(self, watch: Watch, found: Binding) -> None:
        history = self._rec.history
        seen = history.argument_values(found.code, found.name) if history else []
        for value in seen:
            if not same(value, found.value):
                self._emit(watch, value, SEEN_EAGER, NONE, 0)

    # -- optimizers --------------------------------------------------------------------
    def optimizer_stepping(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """torch's global step pre-hook: an optimizer steps; inside a capture, note it."""
        state = self._rec.capture_on_this_thread()
        if state is None or state.api not in MANUAL_APIS or not self._rec.enabled:
            return
        if (state.graph, id(optimizer)) in self._stepped:
            return
        self._stepped.add((state.graph, id(optimizer)))
        try:
            ref = weakref.ref(optimizer)
        except TypeError:
            return
        caller = sys._getframe(1)
        site, place = self._rec.stacks.from_frame(caller), self._place(caller)
        owner = type(optimizer).__name__
        for index, group in enumerate(optimizer.param_groups):
            for key in getattr(optimizer, "defaults", {}):
                value = group.get(key)
                if key != "params" and _settable_number(value):
                    self._add(Watch(state.graph, f"param_groups[{index}][{key!r}]",
                                    HELD_BY_OPTIMIZER, owner, value,
                                    _group_reader(ref, index, key), site, place,
                                    self._tensor_lr and key == "lr", id(optimizer)))

    def _place(self, frame: FrameType | None) -> tuple[str, int]:
        while frame is not None and not self._rec.stacks.is_user_code(frame.f_code):
            frame = frame.f_back
        return (frame.f_code.co_filename, frame.f_lineno or 0) if frame else ("", 0)

    def scheduler_stepped(self, scheduler: Any, caller: FrameType) -> None:
        watches = self._optimizers.get(id(getattr(scheduler, "optimizer", None)))
        if watches and self._rec.enabled:
            self._check(watches, None, SEEN_SCHEDULER, lambda: self._rec.stacks.from_frame(caller))

    def modes_changed(self, caller: FrameType) -> None:
        """Right after a ``Module.train()`` call (``eval()`` makes one) at ``caller``."""
        watches = [w for each in self._graphs.values() for w in each if w.use == USE_MODE]
        if watches and self._rec.enabled:
            self._check(watches, None, SEEN_AT_CALL, lambda: self._rec.stacks.from_frame(caller))

    # -- comparing ---------------------------------------------------------------------
    def sampled(self, graph: int, replays: int, caller: FrameType) -> None:
        """A sampled replay of ``graph`` (its ``replays``-th) ran: compare its watches."""
        watches = self._graphs.get(graph)
        if watches:
            self._check(watches, caller, SEEN_AT_REPLAY, lambda: NONE, replays)

    def finish(self, replays: dict[int, int]) -> None:
        """The recording ends: compare what can still be read."""
        for graph, watches in self._graphs.items():
            self._check(watches, None, SEEN_AT_END, lambda: NONE, replays.get(graph, 0))

    def _check(self, watches: list[Watch], frame: FrameType | None, seen: str,
               stack: Callable[[], int], replays: int = -1) -> None:
        """``replays``: the replays of the graph whose watches these are; -1 for watches
        that may be any graph's (an optimizer's, a module's mode after its train() call)."""
        for watch in watches:
            value = watch.read(frame)
            if value is GONE:
                continue
            so_far = replays if replays >= 0 else self._rec.replays.get(watch.graph, 0)
            if same(value, watch.last):
                watch.checked_at = max(watch.checked_at, so_far)
                continue
            watch.last = value
            watch.changes += 1
            if watch.changes <= FROZEN_CHANGES_KEPT:
                where = stack() if seen in _SEEN_AT_ITS_CALL else self._assignment(watch, frame)
                self._emit(watch, value, seen, where, self._replays_before(watch, seen, so_far))

    @staticmethod
    def _replays_before(watch: Watch, seen: str, replays: int) -> int:
        """Replays known to have run before the change: at a sampled replay, all but that
        one; at the end, those up to the last check that found it unchanged; after a
        scheduler step or a train() call, all so far."""
        if seen == SEEN_AT_REPLAY:
            return replays - 1
        if seen == SEEN_AT_END:
            return watch.checked_at
        return replays

    def _assignment(self, watch: Watch, frame: FrameType | None) -> int:
        found = source_assignments.find(self._rec, watch.name, watch.held_by, watch.place,
                                        frame, watch.targets)
        return self._rec.stacks.from_named([found]) if found is not None else NONE

    def _emit(self, watch: Watch, value: Any, seen: str, stack: int, replays: int) -> None:
        self._rec.emit(FrozenValue(
            self._rec.now(), watch.graph, watch.name, watch.held_by, watch.owner,
            watch.shown(watch.captured), watch.shown(value), seen, watch.site, stack, replays,
            watch.changes, int(watch.tensor_fix), watch.use))

    def _add(self, watch: Watch) -> None:
        self._graphs.setdefault(watch.graph, []).append(watch)
        if watch.optimizer:
            self._optimizers.setdefault(watch.optimizer, []).append(watch)


def _settable_number(value: Any) -> bool:
    if isinstance(value, tuple):
        return bool(value) and all(is_number(v) for v in value)
    return is_number(value)


def _group_reader(ref: Any, index: int, key: str) -> Reader:
    def read(frame: FrameType | None) -> Any:
        optimizer = ref()
        groups = getattr(optimizer, "param_groups", None) if optimizer is not None else None
        if not groups or index >= len(groups):
            return GONE
        return groups[index].get(key, GONE)

    return read


def _reader(found: Binding) -> Reader | None:
    """How to read the bound name again later, or None where it cannot change any more
    (a local of a function other than the one holding the capture)."""
    chain = tuple(found.name.split("."))
    if found.namespace is not None and len(chain) > 1:
        return object_reader(found.namespace, chain[-1:])
    if found.module_level:
        return namespace_reader(found.namespace, chain)
    if not found.in_capture_frame:
        return None
    return local_reader(found.code, chain)


def install(recorder: Recorder) -> Uninstall | None:
    """The source: torch's optimizer step pre-hook, the LR schedulers' ``step``,
    ``Module.train`` (which ``eval()`` calls), and ``recorder.frozen`` for the graphs
    source."""
    frozen = FrozenValues(recorder)
    stop = recorder.watch_captures(frozen)
    handle = register_optimizer_step_pre_hook(frozen.optimizer_stepping)
    undo = [stop, frozen.close, handle.remove, *_patch_schedulers(frozen),
            patch(torch.nn.Module, "train", functools.partial(_after_train, frozen=frozen))]

    def uninstall() -> None:
        for step in undo:
            step()

    return uninstall


def _patch_schedulers(frozen: FrozenValues) -> list[Uninstall]:
    classes = {getattr(lr_scheduler, name, None) for name in ("LRScheduler", "ReduceLROnPlateau")}
    return [patch(cls, "step", functools.partial(_after_step, frozen=frozen))
            for cls in classes if cls is not None and "step" in vars(cls)]


def _after_step(original: Any, frozen: FrozenValues) -> Any:
    @functools.wraps(original)
    def step(scheduler: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(scheduler, *args, **kwargs)
        frozen.scheduler_stepped(scheduler, sys._getframe(1))
        return result

    return step


def _after_train(original: Any, frozen: FrozenValues) -> Any:
    """``Module.train`` that, once a capture's modules' mode is watched, compares it after
    the outermost call (train() calls itself on each child), at the caller's line."""
    inside = threading.local()

    @functools.wraps(original)
    def train(module: Any, *args: Any, **kwargs: Any) -> Any:
        if not frozen.modes_watched or getattr(inside, "busy", False):
            return original(module, *args, **kwargs)
        inside.busy = True
        try:
            result = original(module, *args, **kwargs)
        finally:
            inside.busy = False
        try:
            frozen.modes_changed(sys._getframe(1))
        except Exception:  # noqa: BLE001 - never the script's problem
            frozen.modes_watched = False
        return result

    return train
