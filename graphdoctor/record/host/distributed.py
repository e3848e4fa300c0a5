"""Collectives and process groups: what each rank asked of torch.distributed, and when.

Every collective is recorded when it is issued (so a rank stuck inside one shows it) and
again when the call returns, with its process group, its per-group sequence number, the
bytes it moves, and the graph this thread was capturing, if any. Ranks are compared later,
by sequence number, to find where they diverged.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder, Uninstall, patch
from graphdoctor.trace.process_groups import DEFAULT_GROUP, group_label
from graphdoctor.trace.spool import records as sr

COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
               "reduce_scatter_tensor", "broadcast", "reduce", "gather", "scatter", "all_to_all",
               "all_to_all_single", "barrier", "send", "recv", "isend", "irecv",
               "batch_isend_irecv", "all_gather_object", "broadcast_object_list",
               "monitored_barrier")


def install(recorder: Recorder) -> Uninstall | None:
    if not torch.distributed.is_available():
        return None
    c10d = compat.c10d_module()
    hooks = _CollectiveHooks(recorder)
    undos: list[Uninstall] = []
    for module in (torch.distributed, c10d):
        undos.extend(patch(module, name, hooks.wrap(name)) for name in COLLECTIVES
                     if hasattr(module, name))
        undos.append(patch(module, "init_process_group", hooks.wrap_init))
        undos.append(patch(module, "destroy_process_group", hooks.wrap_destroy))

    def uninstall() -> None:
        for undo in reversed(undos):
            undo()

    return uninstall


class _CollectiveHooks:
    def __init__(self, recorder: Recorder):
        self.rec = recorder
        self._local = threading.local()  # a collective calling another is one collective
        self._sequence: dict[str, int] = {}
        self._group_names: dict[int, str] = {}

    def wrap(self, name: str) -> Any:
        def make(original: Any) -> Any:
            @functools.wraps(original)
            def collective(*args: Any, **kwargs: Any) -> Any:
                if getattr(self._local, "busy", False) or not self.rec.enabled:
                    return original(*args, **kwargs)
                self._local.busy = True
                token = self._begin(name, args, kwargs)
                try:
                    return original(*args, **kwargs)
                finally:  # returned or raised: either way it is no longer waiting
                    self.rec.emit(sr.CollectiveEnd(token, self.rec.now()))
                    self._local.busy = False

            return collective

        return make

    def _begin(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        group = self._group_name(kwargs.get("group"))
        sequence = self._sequence.get(group, 0)
        self._sequence[group] = sequence + 1
        token = self.rec.new_id("coll")
        self.rec.emit(sr.CollectiveRecord(
            token, self.rec.now(), name, group, sequence, _bytes(args, kwargs),
            bool(kwargs.get("async_op", False)), self.rec.capturing_graph(), self.rec.thread(),
            self.rec.stacks.capture(2)))
        return token

    def _group_name(self, group: Any) -> str:
        if group is None:
            return DEFAULT_GROUP
        key = id(group)
        if key not in self._group_names:
            name = compat.group_name(group)
            try:
                ranks = torch.distributed.get_process_group_ranks(group)
            except Exception:  # noqa: BLE001 - a group this rank is not in, or gone
                ranks = []
            self._group_names[key] = group_label(name, ranks) or str(key)
        return self._group_names[key]

    def wrap_init(self, original: Any) -> Any:
        @functools.wraps(original)
        def init_process_group(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if self.rec.enabled:
                self.rec.emit(sr.DistInfo({"backend": str(torch.distributed.get_backend()),
                                        "rank": torch.distributed.get_rank(),
                                        "world_size": torch.distributed.get_world_size(),
                                        "t": self.rec.now()}))
            return result

        return init_process_group

    def wrap_destroy(self, original: Any) -> Any:
        @functools.wraps(original)
        def destroy_process_group(*args: Any, **kwargs: Any) -> Any:
            if not self.rec.enabled:
                return original(*args, **kwargs)
            self.rec.emit(sr.TeardownRecord(self.rec.now(), "begin", self.rec.stacks.capture(1)))
            self.rec.spool.flush()  # a hang here is what this record is for
            result = original(*args, **kwargs)
            self.rec.emit(sr.TeardownRecord(self.rec.now(), "end", -1))
            return result

        return destroy_process_group


def _bytes(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """Bytes of the tensors a collective takes (its first tensor or list of tensors)."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return int(value.nbytes)
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], torch.Tensor):
            return int(sum(t.nbytes for t in value))
    return 0
