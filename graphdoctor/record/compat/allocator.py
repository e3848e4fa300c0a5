"""The caching allocator: its history, its snapshot and its totals, and its routing of
allocations to a capture's pool; and weak references to tensor storage (to see an input of a
graph freed)."""

from __future__ import annotations

import contextlib
import inspect
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import torch

from graphdoctor.record.compat.resolve import Entry, TorchName, TorchParameters, TorchSource
from graphdoctor.record.compat.versions import (
    CHECKED_SEEN,
    RUN_NOT_SEEN,
    RUN_SEEN,
    STUB_GPU_RUN,
    STUB_SEEN,
)

_MEMORY = "torch.cuda.memory"
_RECORD_HISTORY = TorchName(_MEMORY, "_record_memory_history")
# what _record_memory_history calls when its first argument is not a bool, and when it is
_RECORD_HISTORY_IMPL = TorchName(_MEMORY, "_record_memory_history_impl")
_RECORD_HISTORY_LEGACY = TorchName(_MEMORY, "_record_memory_history_legacy")
MEMORY_HISTORY = Entry("memory_history", CHECKED_SEEN, (
    _RECORD_HISTORY,
    TorchParameters(_RECORD_HISTORY_IMPL,
                    ("enabled", "context", "stacks", "max_entries", "clear_history")),
))


def memory_history(enabled: bool, *, stacks: bool, max_entries: int, clear: bool = False,
                   state_only: bool = False) -> bool:
    """Turn graphdoctor's allocator history on or off, not through the script's (patched)
    ``_record_memory_history``; ``state_only`` keeps each live block's stack and no history
    entries (``enabled="state"``)."""
    record = _RECORD_HISTORY_IMPL.resolve()
    if record is None:
        return False
    try:
        if not enabled:
            record(enabled=None)
        else:
            record(enabled="state" if state_only else "all",
                   context="alloc" if stacks else None, stacks="python",
                   max_entries=max_entries, clear_history=clear)
    except (RuntimeError, TypeError, AttributeError):  # AttributeError: a build without CUDA
        return False
    return True


_SCRIPT_SNAPSHOT = TorchName(_MEMORY, "_snapshot")
HISTORY_CALL = Entry("HistoryCall", RUN_NOT_SEEN, (
    _RECORD_HISTORY, _SCRIPT_SNAPSHOT,
    TorchParameters(_RECORD_HISTORY_IMPL, ("enabled", "clear_history")),
    TorchParameters(_RECORD_HISTORY_LEGACY, ("enabled", "clear_history")),
    # torch's own callers look _snapshot up in the module, where graphdoctor patches it
    TorchSource(TorchName(_MEMORY, "_dump_snapshot"), ("_snapshot(",)),
))


class HistoryCall:
    """A script's call of ``torch.cuda.memory._record_memory_history``, read as torch reads
    it: a bool first argument is the legacy form, anything else names what to record
    (None: nothing)."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]):
        self.args, self.kwargs = args, kwargs
        self._enabled = args[0] if args else kwargs.get("enabled", "all")

    @property
    def turns_on(self) -> bool:
        return self._enabled if isinstance(self._enabled, bool) else self._enabled is not None

    def clearing_first(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The same call's arguments, asking torch to clear the history first."""
        legacy = isinstance(self._enabled, bool)
        target = (_RECORD_HISTORY_LEGACY if legacy else _RECORD_HISTORY_IMPL).resolve()
        try:
            bound = inspect.signature(target).bind(*self.args, **self.kwargs)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return self.args, self.kwargs  # torch will say what is wrong with the call
        bound.arguments["clear_history"] = True
        return bound.args, bound.kwargs

    @staticmethod
    def module() -> Any | None:
        """The module whose ``_record_memory_history`` and ``_snapshot`` a script calls."""
        if _RECORD_HISTORY.resolve() is None or _SCRIPT_SNAPSHOT.resolve() is None:
            return None
        return sys.modules[_MEMORY]


_SNAPSHOT = TorchName("torch._C", "_cuda_memorySnapshot", cuda_only=True)
MEMORY_SNAPSHOT = Entry("memory_snapshot", STUB_SEEN, (_SNAPSHOT,))


def memory_snapshot(pool: tuple[int, int] | None = None,
                    traces: bool = True) -> dict[str, Any] | None:
    """The allocator's snapshot: segments (of ``pool`` only, which keeps it cheap beside a
    large model) and, with ``traces``, the history's trace entries.

    ``torch._C._cuda_memorySnapshot`` takes ``(pool0, pool1, include_traces)`` in 2.11 and 2.13
    (checked on both), ``None`` or ``(pool0, pool1)`` in older releases; (0, 0) is every
    pool. Only segments are filtered by pool, never trace entries.
    """
    take = _SNAPSHOT.resolve()
    if take is None:
        return None
    with inductor_left_unimported():
        for argument in dict.fromkeys(((*(pool or (0, 0)), traces), pool, None)):
            try:
                return dict(take(argument))
            except (TypeError, ValueError):
                continue  # another release's signature
            except RuntimeError:
                return None
    return None


_NO_INDUCTOR = types.SimpleNamespace()  # has no ``codecache``: symbolizing then skips it
# Checked by its exercise (tests/record/compat_probe.py), not by a requirement: what it
# keeps from happening is in torch's native code (combined_traceback.cpp).
INDUCTOR_LEFT_UNIMPORTED = Entry("inductor_left_unimported", RUN_NOT_SEEN, ())


@contextlib.contextmanager
def inductor_left_unimported() -> Iterator[None]:
    """Keep a snapshot from importing torch._inductor.

    To symbolize the Python frames of history entries, torch (2.9-2.13 at least) asks
    ``hasattr(torch, "_inductor")``, which imports inductor the first time: 880 modules and
    3-6 s on an H100, inside whatever the user was doing (a capture, in our case). While inductor
    is not imported, a stand-in without ``codecache`` answers instead, and inductor's extra
    frames (which only exist once it is imported) are correctly none.
    """
    if "torch._inductor" in sys.modules or "_inductor" in vars(torch):
        yield
        return
    setattr(torch, "_inductor", _NO_INDUCTOR)  # noqa: B010 - not an attribute mypy knows
    try:
        yield
    finally:
        if vars(torch).get("_inductor") is _NO_INDUCTOR:  # an import meanwhile replaced it
            delattr(torch, "_inductor")


class AllocatorTotals(NamedTuple):
    allocated: int  # bytes in use on the current device
    reserved: int  # bytes the allocator holds on the current device
    # per device: (allocations, bytes allocated) since the process started
    made: tuple[tuple[int, int], ...] = ()


_GET_DEVICE = TorchName("torch._C", "_cuda_getDevice", cuda_only=True)
_MEMORY_STATS = TorchName("torch._C", "_cuda_memoryStats", cuda_only=True)
ALLOCATOR_TOTALS = Entry("allocator_totals", STUB_SEEN, (_GET_DEVICE, _MEMORY_STATS))


def allocator_totals() -> AllocatorTotals:
    """The caching allocator's totals, from its nested statistics (``memory_stats`` flattens
    them in Python: 0.1 ms a call). What was allocated is counted on every device, so a
    capture that allocates on another device is noticed."""
    get_device, stats_of = _GET_DEVICE.resolve(), _MEMORY_STATS.resolve()
    if get_device is None or stats_of is None:
        return AllocatorTotals(0, 0)
    try:
        current = get_device()
        stats = [stats_of(d) for d in range(torch.cuda.device_count())]
        made = tuple((int(s["allocation"]["all"]["allocated"]),
                      int(s["allocated_bytes"]["all"]["allocated"])) for s in stats)
        return AllocatorTotals(int(stats[current]["allocated_bytes"]["all"]["current"]),
                               int(stats[current]["reserved_bytes"]["all"]["current"]), made)
    except (RuntimeError, AssertionError, AttributeError, KeyError, TypeError, IndexError):
        return AllocatorTotals(0, 0)


_STORAGE_WEAK_REF = TorchName("torch.multiprocessing.reductions", "StorageWeakRef")
STORAGE_WEAK_REF = Entry("storage_weak_ref", RUN_SEEN, (
    _STORAGE_WEAK_REF, TorchName("torch.multiprocessing.reductions", "StorageWeakRef.expired"),
))
# Resolved once, with the recorder's sources: never inside a capture, which must import nothing.
_make_storage_weak_ref: Callable[[Any], Any] | None = _STORAGE_WEAK_REF.resolve()


def storage_weak_refs_available() -> bool:
    return _make_storage_weak_ref is not None


def storage_weak_ref(storage: Any) -> Any:
    """A weak reference to a tensor's untyped storage; its ``expired()`` says whether the
    memory was freed. Only where ``storage_weak_refs_available()``."""
    assert _make_storage_weak_ref is not None
    return _make_storage_weak_ref(storage)


_END_ALLOCATE_TO_POOL = TorchName("torch._C", "_cuda_endAllocateToPool", cuda_only=True)
END_ALLOCATE_TO_POOL = Entry("end_allocate_to_pool", STUB_GPU_RUN, (
    _END_ALLOCATE_TO_POOL,
    # how torch itself ends a pool's routing: (device, pool id)
    TorchSource(TorchName(_MEMORY, "use_mem_pool"), ("_cuda_endAllocateToPool(",)),
))


def end_allocate_to_pool(device: int, pool: tuple[int, int]) -> bool:
    """Stop the caching allocator of ``device`` from routing allocations to ``pool``, as a
    capture's end does. False where it was not routing them (the capture's end did it, or the
    capture never began) or this torch lacks the call."""
    end = _END_ALLOCATE_TO_POOL.resolve()
    if end is None:
        return False
    try:
        end(device, pool)
    except (RuntimeError, TypeError):  # "endAllocatePool: not currently recording to ..."
        return False
    return True


ENTRIES = (MEMORY_HISTORY, HISTORY_CALL, MEMORY_SNAPSHOT, INDUCTOR_LEFT_UNIMPORTED,
           ALLOCATOR_TOTALS, STORAGE_WEAK_REF, END_ALLOCATE_TO_POOL)
