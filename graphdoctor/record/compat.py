"""Every use of a private or version-dependent torch API, in one place.

Each helper feature-detects what it needs and reports what is missing instead of raising,
so the recorder degrades to a line in the report's "not recorded" list. Checked against the
2.11 (GPU image) and 2.13 (CPU build) wheels; names older than 2.8 are noted where they differ.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import torch

# Artifact loggers (module.__artifact). Skips went to perf_hints up to 2.10, cudagraphs from 2.11.
SKIP_LOGGERS = (
    "torch._inductor.cudagraph_utils.__cudagraphs",
    "torch._inductor.cudagraph_utils.__perf_hints",
    "torch._inductor.compile_fx.__perf_hints",
)
TREE_LOGGERS = ("torch._inductor.cudagraph_trees.__cudagraphs",)
PARTITION_LOGGERS = ("torch._inductor.scheduler.__cudagraphs",)
GRAPH_BREAK_LOGGERS = (
    "torch._dynamo.symbolic_convert.__graph_breaks",
    "torch._dynamo.convert_frame.__graph_breaks",
)
RECOMPILE_LOGGERS = ("torch._dynamo.guards.__recompiles",)


def cuda_built() -> bool:
    return torch.version.cuda is not None and hasattr(torch._C, "_cuda_getCurrentStream")


def lazy_cuda_call(fn: Callable[[], None]) -> bool:
    """Run ``fn`` as soon as the script initializes CUDA (at once if it already has).

    graphdoctor never initializes CUDA itself before the script does: that would poison
    fork() for DataLoader workers and take GPU memory a CPU-only script never asked for.
    """
    lazy_call = getattr(torch.cuda, "_lazy_call", None)
    if lazy_call is None:
        return False
    lazy_call(fn)
    return True


def enable_sync_warnings() -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "prototype feature" notice the user did not ask for
        try:
            torch.cuda.set_sync_debug_mode("warn")
        except (RuntimeError, AttributeError):
            return False
    return True


class CurrentStream:
    """The current stream as a cached ``torch.cuda.Stream``: ``current_stream()`` builds a
    new Python object on every call (about 3 us on an H200), too slow for the replay path."""

    def __init__(self) -> None:
        self._get = torch._C._cuda_getCurrentStream
        self._get_device = torch._C._cuda_getDevice
        self._cache: dict[tuple[int, int, int], tuple[Any, int]] = {}

    def __call__(self) -> tuple[Any, int]:
        """(stream, its cudaStream_t handle)."""
        key = self._get(self._get_device())
        entry = self._cache.get(key)
        if entry is None:
            stream = torch.cuda.Stream(stream_id=key[0], device_index=key[1], device_type=key[2])
            entry = self._cache[key] = (stream, int(stream.cuda_stream))
        return entry


def memory_history(enabled: bool, *, stacks: bool, max_entries: int, clear: bool = False) -> bool:
    record = getattr(getattr(torch.cuda, "memory", None), "_record_memory_history", None)
    if record is None:
        return False
    try:
        if not enabled:
            record(enabled=None)
        else:
            record(enabled="all", context="alloc" if stacks else None,
                   stacks="python", max_entries=max_entries, clear_history=clear)
    except (RuntimeError, TypeError):
        return False
    return True


def memory_snapshot(pool: tuple[int, int] | None = None,
                    traces: bool = True) -> dict[str, Any] | None:
    """The allocator's snapshot: segments (of ``pool`` only, which keeps it cheap beside a
    large model) and, with ``traces``, the history's trace entries.

    ``torch._C._cuda_memorySnapshot`` takes ``(pool0, pool1, include_traces)`` in 2.11 and 2.13
    (checked on both), ``None`` or ``(pool0, pool1)`` in older releases; (0, 0) is every
    pool. Only segments are filtered by pool, never trace entries.
    """
    take = getattr(torch._C, "_cuda_memorySnapshot", None)
    if take is None:
        return None
    with _inductor_left_unimported():
        for argument in dict.fromkeys(((*(pool or (0, 0)), traces), pool, None)):
            try:
                return dict(take(argument))
            except (TypeError, ValueError):
                continue  # another release's signature
            except RuntimeError:
                return None
    return None


_NO_INDUCTOR = types.SimpleNamespace()  # has no ``codecache``: symbolizing then skips it


@contextlib.contextmanager
def _inductor_left_unimported() -> Iterator[None]:
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


def allocator_totals() -> AllocatorTotals:
    """The caching allocator's totals, from its nested statistics (``memory_stats`` flattens
    them in Python: 0.1 ms a call). What was allocated is counted on every device, so a
    capture that allocates on another device is noticed."""
    try:
        current = torch._C._cuda_getDevice()
        stats = [torch._C._cuda_memoryStats(d) for d in range(torch.cuda.device_count())]
        made = tuple((int(s["allocation"]["all"]["allocated"]),
                      int(s["allocated_bytes"]["all"]["allocated"])) for s in stats)
        return AllocatorTotals(int(stats[current]["allocated_bytes"]["all"]["current"]),
                               int(stats[current]["reserved_bytes"]["all"]["current"]), made)
    except (RuntimeError, AssertionError, AttributeError, KeyError, TypeError, IndexError):
        return AllocatorTotals(0, 0)


def graph_pool(graph: Any) -> tuple[int, int] | None:
    try:
        first, second = graph.pool()
    except (RuntimeError, TypeError, ValueError):
        return None
    return (int(first), int(second))


def tree_manager_class() -> Any | None:
    try:
        from torch._inductor import cudagraph_trees
    except Exception:  # noqa: BLE001 - inductor may fail to import for many reasons
        return None
    cls = getattr(cudagraph_trees, "CUDAGraphTreeManager", None)
    return cls if cls is not None and hasattr(cls, "run") else None


def tree_compile_id(manager: Any, function_id: Any) -> str:
    """The compile id (F/N) of a cudagraph-tree function."""
    compile_id = getattr(manager, "id_to_compile_id", {}).get(function_id)
    return str(compile_id) if compile_id is not None else ""


def tree_input_copies(manager: Any, function_id: Any, inputs: Any) -> tuple[int, int]:
    """(number, bytes) of a tree function's inputs that each replay copies into the graph:
    the tensors that are not among its static inputs."""
    wrapped = getattr(manager, "ids_to_funcs", {}).get(function_id)
    static = set(getattr(wrapped, "static_input_idxs", ()) or ())
    copied = [t for i, t in enumerate(inputs or ())
              if i not in static and isinstance(t, torch.Tensor) and t.is_cuda]
    return (len(copied), sum(t.untyped_storage().nbytes() if t.numel() else 0 for t in copied))


def current_compile_id() -> str:
    try:
        from torch._guards import CompileContext

        compile_id = CompileContext.current_compile_id()
    except Exception:  # noqa: BLE001
        return ""
    return str(compile_id) if compile_id is not None else ""


def dynamo_counters() -> dict[str, dict[str, int]]:
    try:
        from torch._dynamo.utils import counters
    except Exception:  # noqa: BLE001
        return {}
    return {group: {str(k): int(v) for k, v in c.items()} for group, c in counters.items()}


def register_compile_callbacks(on_start: Callable[[Any], None],
                               on_end: Callable[[Any], None]) -> bool:
    try:
        from torch._dynamo.callback import callback_handler
    except Exception:  # noqa: BLE001
        return False
    callback_handler.register_start_callback(on_start)
    callback_handler.register_end_callback(on_end)
    return True


def callback_args(args: tuple[Any, ...]) -> tuple[str, str]:
    """(trigger, compile id) from a dynamo callback's arguments (2.8+; none before)."""
    if not args:
        return ("", "")
    info = args[0]
    trigger = getattr(getattr(info, "callback_trigger", None), "name", "")
    return (str(trigger), str(getattr(info, "compile_id", "") or ""))


def logger_names() -> tuple[str, ...]:
    return SKIP_LOGGERS + TREE_LOGGERS + PARTITION_LOGGERS + GRAPH_BREAK_LOGGERS + RECOMPILE_LOGGERS


def logger(name: str) -> logging.Logger:
    return logging.getLogger(name)
