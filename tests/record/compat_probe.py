"""Check and exercise every compat entry against the installed torch, in a process of its own.

    python -m tests.record.compat_probe

prints one JSON object: for each entry of ``compat.ENTRIES``, what of torch it needs that is
missing, why that cannot be told on this build (if so), and how its exercise went. It runs
apart from pytest because the exercises import dynamo and inductor and compile functions,
which would change torch's logging for the tests that run after them.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import json
import logging
import sys
import traceback
import types
import warnings
from collections.abc import Callable
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.compat import capture as compat_capture
from graphdoctor.record.compat.resolve import Entry, Unverifiable

OK = "ok"


class NeedsCuda(Exception):
    """The exercise calls CUDA, which this machine lacks."""


def needs_cuda() -> None:
    if not torch.cuda.is_available():
        raise NeedsCuda("calls CUDA, and no device is available")


# -- cuda ---------------------------------------------------------------------------------
def cuda_built() -> None:
    assert compat.cuda_built() == (torch.version.cuda is not None)


def lazy_cuda_call() -> None:
    called: list[bool] = []
    assert compat.lazy_cuda_call(lambda: called.append(True))
    if torch.cuda.is_available():
        torch.cuda.init()
        assert called, "not called once CUDA was initialized"
    else:
        assert not called, "called before the script initialized CUDA"


def set_sync_debug_mode() -> None:
    needs_cuda()
    torch.cuda.init()
    try:
        assert compat.set_sync_debug_mode(compat.SYNC_WARN)
        assert torch.cuda.get_sync_debug_mode() == compat.SYNC_WARN == compat.sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")
        assert compat.sync_debug_mode() == compat.SYNC_ERROR
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert compat.sync_debug_mode() == compat.SYNC_OFF


def sync_warning() -> None:
    needs_cuda()
    value = torch.ones(1, device="cuda")
    assert compat.set_sync_debug_mode(compat.SYNC_WARN)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value.item()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert any(str(w.message).startswith(compat.SYNC_WARNING) for w in caught), \
        [str(w.message) for w in caught]


def current_stream() -> None:
    needs_cuda()
    current = compat.CurrentStream()
    assert current()[1] == torch.cuda.current_stream().cuda_stream
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        stream, handle = current()
    assert handle == side.cuda_stream and stream == side


def unpatched_event_methods() -> None:
    needs_cuda()
    record, query, elapsed = compat.unpatched_event_methods()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    record(start, torch.cuda.current_stream())
    torch.ones(1024, device="cuda").sum()
    record(end, torch.cuda.current_stream())
    compat.synchronize_unpatched()
    assert query(end) and elapsed(start, end) >= 0


def synchronize_unpatched() -> None:
    needs_cuda()
    compat.synchronize_unpatched()


def profiler_active() -> None:
    active = compat.ProfilerActive()
    assert not active()
    with torch.profiler.profile():
        assert active()
    with torch.autograd.profiler.profile():
        assert active()
    assert not active()


def profiler_starts() -> None:
    found = compat.profiler_starts()
    assert found is not None
    owner, names = found
    called: list[str] = []
    originals = {name: owner.__dict__[name] for name in names}

    def spy(name: str) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            called.append(name)
            return originals[name](self, *args, **kwargs)
        return wrapper

    try:
        for name in names:
            setattr(owner, name, spy(name))
        with torch.profiler.profile():
            pass
        assert called[:2] == list(names)  # torch.profiler starts through both, in order
    finally:
        for name, original in originals.items():
            setattr(owner, name, original)


def stream_context_streams() -> None:
    assert compat.stream_context_streams(torch.cuda.StreamContext(None)) == (None, None)
    if torch.cuda.is_available():
        side = torch.cuda.Stream()
        context = torch.cuda.stream(side)  # its __enter__ returns None
        with context:
            target, previous = compat.stream_context_streams(context)
        assert target == side and previous == torch.cuda.current_stream()


# -- allocator ----------------------------------------------------------------------------
def memory_history() -> None:
    needs_cuda()
    assert compat.memory_history(True, stacks=True, max_entries=1000)
    try:
        kept = torch.empty(1 << 20, device="cuda")
        snapshot = compat.memory_snapshot()
        assert snapshot is not None and any(snapshot["device_traces"]), "no history entries"
        assert compat.memory_history(True, stacks=True, max_entries=1000, clear=True)
    finally:
        assert compat.memory_history(False, stacks=False, max_entries=0)
    del kept


def history_call() -> None:
    assert compat.HistoryCall.module() is torch.cuda.memory
    turns_on = {((), ()): True, (("state",), ()): True, ((None,), ()): False,
                ((True,), ()): True, ((False,), ()): False, ((), (("enabled", None),)): False}
    for (args, kwargs), on in turns_on.items():
        assert compat.HistoryCall(args, dict(kwargs)).turns_on is on, (args, kwargs)
    memory = torch.cuda.memory
    for function, args in ((memory._record_memory_history_impl, ("all", "all", "all", 9, None, 0)),
                           (memory._record_memory_history_legacy, (True, 1, 1, 0, None, 0, 0))):
        again, keywords = compat.HistoryCall(args, {}).clearing_first()
        assert inspect.signature(function).bind(*again, **keywords).arguments["clear_history"]
    _, keywords = compat.HistoryCall((), {"max_entries": 5}).clearing_first()
    assert keywords == {"max_entries": 5, "clear_history": True}


def memory_snapshot() -> None:
    if not torch.cuda.is_available():
        assert compat.memory_snapshot() is None
        return
    kept = torch.empty(1 << 20, device="cuda")
    snapshot = compat.memory_snapshot((0, 0), traces=False)
    assert snapshot is not None and snapshot["segments"], "no segments"
    del kept


# What torch's frame symbolizer does (torch/csrc/profiler/python/combined_traceback.cpp):
# hasattr(torch, "_inductor"), then hasattr(inductor, "codecache"). Runs first: nothing
# may have imported inductor yet.
def inductor_left_unimported() -> None:
    assert "torch._inductor" not in sys.modules, "imported before the check"
    with compat.inductor_left_unimported():
        asked = hasattr(torch, "_inductor") and not hasattr(torch._inductor, "codecache")
    assert asked, "the stand-in was not seen"
    assert "torch._inductor" not in sys.modules and "_inductor" not in vars(torch)
    importlib.import_module("torch._inductor.codecache")  # torch as it was: the real one imports
    assert hasattr(torch._inductor, "codecache")


def allocator_totals() -> None:
    if not torch.cuda.is_available():
        assert compat.allocator_totals() == compat.AllocatorTotals(0, 0)
        return
    kept = torch.empty(1 << 20, device="cuda")
    totals = compat.allocator_totals()
    assert totals.allocated >= kept.nbytes and totals.reserved >= totals.allocated
    assert len(totals.made) == torch.cuda.device_count() and totals.made[0][0] > 0


def storage_weak_ref() -> None:
    assert compat.storage_weak_refs_available()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tensor = torch.ones(4, device=device)
    ref = compat.storage_weak_ref(tensor.untyped_storage())
    assert not ref.expired()
    del tensor
    gc.collect()
    assert ref.expired()


# -- capture ------------------------------------------------------------------------------
def capture_api() -> None:
    from torch._inductor import cudagraph_trees

    api_of = compat_capture.api_of_frame
    manager = cudagraph_trees.CUDAGraphTreeManager
    assert api_of(torch.cuda.graph.__enter__.__code__) == (compat.CONTEXT_API, False)
    assert api_of(torch.cuda.graphs.make_graphed_callables.__code__) == (
        compat.GRAPHED_CALLABLES_API, False)
    assert api_of(manager.__init__.__code__) == (compat.COMPILE_API, True)
    assert api_of(manager.run.__code__) == (compat.COMPILE_API, False)
    assert compat.capture_api(sys._getframe()) == (compat.RAW_API, False)


def capture_begin_arguments() -> None:
    pool = (1, 2)
    assert compat.capture_begin_arguments((), {}) == (None, "global")
    assert compat.capture_begin_arguments((pool, "relaxed"), {}) == (pool, "relaxed")
    assert compat.capture_begin_arguments(
        (), {"pool": pool, "capture_error_mode": "thread_local"}) == (pool, "thread_local")


def graph_of_context() -> None:
    graph = object()
    assert compat.graph_of_context(types.SimpleNamespace(cuda_graph=graph)) is graph
    assert compat.graph_of_context(object()) is None
    if torch.cuda.is_available():
        real = torch.cuda.CUDAGraph()
        assert compat.graph_of_context(torch.cuda.graph(real)) is real


def graph_pool() -> None:
    assert compat.graph_pool(types.SimpleNamespace(pool=lambda: (3, 4))) == (3, 4)
    assert compat.graph_pool(object()) is None
    if torch.cuda.is_available():
        graph, value = torch.cuda.CUDAGraph(), torch.ones(4, device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            value.add_(1)
        pool = compat.graph_pool(graph)
        assert pool is not None and all(isinstance(part, int) for part in pool)


def _fail_a_capture(pool: Any) -> Any:
    """A torch.cuda.graph capture that an ``.item()`` fails, as graphdoctor.check makes one:
    its stream and pool graphdoctor's; the caller's stream current again afterwards."""
    graph, value = torch.cuda.CUDAGraph(), torch.ones(4, device="cuda")
    caller = torch.cuda.current_stream()
    try:
        with torch.cuda.graph(graph, pool=pool, stream=torch.cuda.Stream()):
            value.sum().item()
    except RuntimeError:
        pass
    else:
        raise AssertionError("the capture did not fail")
    finally:
        torch.cuda.set_stream(caller)
    return graph


def _end_generator_capture_mode() -> None:
    """What graphdoctor.check does after a failed capture: one capture that ends."""
    native, target = compat.unpatched_graph_class(), torch.empty(1, device="cuda")
    with torch.cuda.stream(torch.cuda.Stream()):
        graph = native()
        graph.capture_begin(pool=None, capture_error_mode="relaxed")
        target.zero_()
        graph.capture_end()
        graph.reset()


def unpatched_graph_class() -> None:
    native = compat.unpatched_graph_class()
    assert issubclass(torch.cuda.CUDAGraph, native) and torch.cuda.CUDAGraph is not native
    needs_cuda()  # a CPU build's is a stand-in, without methods
    # the recorder patches torch.cuda.CUDAGraph's own methods, which leaves these alone
    assert all(name in vars(native) and name in vars(torch.cuda.CUDAGraph)
               for name in ("capture_begin", "capture_end"))
    pool = torch.cuda.graph_pool_handle()
    graph = _fail_a_capture(pool)
    compat.end_allocate_to_pool(torch.cuda.current_device(), pool)
    graph.reset()
    _end_generator_capture_mode()
    # up to torch 2.11 the failed capture left the generator in capture mode, and this raised
    # "Offset increment outside graph capture encountered unexpectedly"
    torch.randn(4, device="cuda")
    again = torch.cuda.CUDAGraph()  # and a capture of a random op, replayed
    with torch.cuda.graph(again):
        torch.rand(4, device="cuda")
    again.replay()
    torch.cuda.synchronize()


def end_allocate_to_pool() -> None:
    assert not compat.end_allocate_to_pool(0, (0, 123456))  # no capture routes to it
    needs_cuda()
    pool, device = torch.cuda.graph_pool_handle(), torch.cuda.current_device()
    graph = _fail_a_capture(pool)
    # up to torch 2.11 the failed capture's end left the routing on: this ends it; newer
    # torch ended it itself
    compat.end_allocate_to_pool(device, pool)
    assert not compat.end_allocate_to_pool(device, pool)  # no more routing to end
    graph.reset()
    _end_generator_capture_mode()
    torch.cuda.empty_cache()


# -- torch.compile ------------------------------------------------------------------------
def _with_graph_break(x: torch.Tensor) -> torch.Tensor:
    x = x + 1
    torch._dynamo.graph_break()
    return x * 2


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[tuple[str, str]] = []  # (logger, compile id while it logged)

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.name, compat.current_compile_id()))


def _compile_with_a_graph_break() -> _Collect:
    """Compile (backend "eager": no inductor) a function that breaks its graph, with every
    logger of ``compat.logger_names()`` collecting."""
    collect = _Collect()
    for name in compat.logger_names():
        log = compat.logger(name)
        log.setLevel(logging.DEBUG)
        log.addHandler(collect)
        log.propagate = False
    torch._dynamo.reset()
    torch.compile(_with_graph_break, backend="eager")(torch.ones(3))
    return collect


def logger_names() -> None:
    breaks = {log.name for log in compat.torch_compile.GRAPH_BREAK_LOGGERS}
    seen = _compile_with_a_graph_break().seen
    assert any(name in breaks for name, _ in seen), seen


def current_compile_id() -> None:
    assert compat.current_compile_id() == ""  # no compilation under way
    seen = _compile_with_a_graph_break().seen
    assert seen and all(compile_id for _, compile_id in seen), seen


def register_compile_callbacks() -> None:
    calls: list[tuple[str, tuple[str, str]]] = []
    torch._dynamo.reset()  # which also unregisters every callback
    remove = compat.register_compile_callbacks(
        lambda *args: calls.append(("start", compat.callback_args(args))),
        lambda *args: calls.append(("end", compat.callback_args(args))))
    assert remove is not None
    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
    assert [kind for kind, _ in calls[:2]] == ["start", "end"], calls
    remove()
    torch.compile(lambda x: x + 2, backend="eager")(torch.ones(2))
    assert len(calls) == 2, calls
    remove()  # a second time, or after torch._dynamo.reset(): nothing left to remove


def callback_args() -> None:
    calls: list[tuple[str, str]] = []
    torch._dynamo.reset()  # which also unregisters every callback
    compat.register_compile_callbacks(lambda *args: calls.append(compat.callback_args(args)),
                                      lambda *args: None)
    torch.compile(lambda x: x * 3, backend="eager")(torch.ones(2))
    trigger, compile_id = calls[-1]
    assert trigger == "DYNAMO" and compile_id.count("/") == 1, calls
    assert compat.callback_args(()) == ("", "")


def recompile_reasons_owner() -> None:
    """Dynamo's reasons for a recompile reach the wrapper with the recompiles log off, with
    the frame being compiled again, whose locals hold the call's values (what the recorder
    follows a guard's source from) and whose globals are the function's."""
    owner = compat.recompile_reasons_owner()
    assert owner is not None
    module, name = owner
    original, seen = getattr(module, name), []
    setattr(module, name, compat.wrap_recompile_reasons(
        original, lambda reasons, frame: seen.append(
            (reasons, frame.f_code.co_name, frame.f_locals["n"], frame.f_globals is globals()))))
    try:
        torch._dynamo.reset()
        scaled = torch.compile(_scaled, backend="eager")
        scaled(torch.ones(2), 2)
        scaled(torch.ones(2), 3)  # n == 2 fails
    finally:
        setattr(module, name, original)
    assert [(len(reasons), *rest) for reasons, *rest in seen] == [(1, "_scaled", 3, True)], seen
    assert seen[0][0][0].startswith("0/0: n == 2"), seen


def _scaled(x: torch.Tensor, n: int) -> torch.Tensor:
    return x * n


def dynamo_counters() -> None:
    torch.compile(lambda x: x - 1, backend="eager")(torch.ones(2))
    counters = compat.dynamo_counters()
    assert counters.get("stats"), counters


def is_compiled() -> None:
    def plain(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    module = torch.nn.Linear(2, 2)
    assert compat.is_compiled(torch.compile(plain, backend="eager"))
    assert compat.is_compiled(torch.compile(module, backend="eager"))
    assert not compat.is_compiled(plain) and not compat.is_compiled(module)


def tree_manager_class() -> None:
    from torch._inductor.cudagraph_trees import CUDAGraphTreeManager

    assert compat.tree_manager_class() is CUDAGraphTreeManager


def tree_compile_id() -> None:
    manager = types.SimpleNamespace(id_to_compile_id={7: "3/1"})
    assert compat.tree_compile_id(manager, 7) == "3/1"
    assert compat.tree_compile_id(manager, 8) == "" == compat.tree_compile_id(object(), 7)


def tree_input_copies() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    static, copied = torch.ones(4, device=device), torch.ones(8, device=device)
    wrapped = types.SimpleNamespace(static_input_idxs=[0])
    manager = types.SimpleNamespace(ids_to_funcs={7: wrapped})
    if device == "cpu":  # only CUDA inputs are copied
        assert compat.tree_input_copies(manager, 7, [static, copied]) == (0, 0)
        return
    assert compat.tree_input_copies(manager, 7, [static, copied]) == (1, copied.nbytes)
    everything = (2, static.nbytes + copied.nbytes)  # a manager without the attributes
    assert compat.tree_input_copies(object(), 7, [static, copied]) == everything


def compiled_module() -> None:
    module = torch.nn.Linear(2, 2)
    assert compat.compiled_module(torch.compile(module)) is module
    assert compat.compiled_module(module) is module


def module_calls() -> None:
    callers: list[str] = []

    class Probe(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            callers.append(sys._getframe(1).f_code.co_name)
            return x

    Probe()(torch.ones(1))
    assert callers and callers[0] in compat.MODULE_CALLS, callers


def is_torch_machinery() -> None:
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    assert compat.is_torch_machinery(torch._dynamo.eval_frame.__file__)
    assert not compat.is_torch_machinery(torch.nn.modules.linear.__file__)
    assert compat.is_inductor_code(default_cache_dir())


# -- CUDA graphs off ----------------------------------------------------------------------
def mode_options() -> None:
    import torch._inductor

    off = compat.CUDAGRAPHS_OPTION
    for mode in ("reduce-overhead", "max-autotune"):
        assert compat.mode_options(mode, None)[off] is True, mode  # type: ignore[index]
        # spelled out, with graphs off, a mode is what torch calls its no-cudagraphs twin
        torch.compile(lambda x: x, options={**compat.mode_options(mode, None), off: False})
    without = {**compat.mode_options("max-autotune", None), off: False}  # type: ignore[dict-item]
    twin = torch._inductor.list_mode_options("max-autotune-no-cudagraphs")
    assert {k: v for k, v in without.items() if v} == {k: v for k, v in twin.items() if v}
    assert compat.mode_options("default", None) == {}
    assert compat.mode_options("no-such-mode", None) is None


def cudagraphs_by_default() -> None:
    import torch._inductor.config

    assert compat.cudagraphs_by_default() is False
    torch._inductor.config.triton.cudagraphs = True
    try:
        assert compat.cudagraphs_by_default() is True
    finally:
        torch._inductor.config.triton.cudagraphs = False


def is_compiling() -> None:
    check = compat.is_compiling_check()
    seen: list[bool] = []

    def probe(x: torch.Tensor) -> torch.Tensor:
        if check():
            return x + 1
        seen.append(True)  # dynamo never traces this branch
        return x

    assert not check()
    assert torch.compile(probe, backend="eager", fullgraph=True)(torch.ones(1)).item() == 2
    assert seen == []


# -- torch.distributed --------------------------------------------------------------------
def c10d_module() -> None:
    from torch.distributed import distributed_c10d

    assert compat.c10d_module() is distributed_c10d


def group_name() -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        assert compat.group_name(dist.group.WORLD) != ""
    finally:
        dist.destroy_process_group()
    assert compat.group_name(object()) == ""


EXERCISES: dict[str, Callable[[], None]] = {
    "inductor_left_unimported": inductor_left_unimported,  # first: see its comment
    "cuda_built": cuda_built, "lazy_cuda_call": lazy_cuda_call,
    "set_sync_debug_mode": set_sync_debug_mode, "SYNC_WARNING": sync_warning,
    "CurrentStream": current_stream, "unpatched_event_methods": unpatched_event_methods,
    "synchronize_unpatched": synchronize_unpatched, "ProfilerActive": profiler_active,
    "profiler_starts": profiler_starts,
    "stream_context_streams": stream_context_streams,
    "memory_history": memory_history, "HistoryCall": history_call,
    "memory_snapshot": memory_snapshot,
    "allocator_totals": allocator_totals, "storage_weak_ref": storage_weak_ref,
    "capture_api": capture_api, "capture_begin_arguments": capture_begin_arguments,
    "graph_of_context": graph_of_context, "graph_pool": graph_pool,
    "unpatched_graph_class": unpatched_graph_class, "end_allocate_to_pool": end_allocate_to_pool,
    "logger_names": logger_names, "current_compile_id": current_compile_id,
    "register_compile_callbacks": register_compile_callbacks, "callback_args": callback_args,
    "recompile_reasons_owner": recompile_reasons_owner,
    "dynamo_counters": dynamo_counters, "tree_manager_class": tree_manager_class,
    "tree_compile_id": tree_compile_id, "tree_input_copies": tree_input_copies,
    "is_compiled": is_compiled, "compiled_module": compiled_module,
    "MODULE_CALLS": module_calls,
    "is_torch_machinery": is_torch_machinery,
    "mode_options": mode_options, "cudagraphs_by_default": cudagraphs_by_default,
    "is_compiling": is_compiling,
    "c10d_module": c10d_module, "group_name": group_name,
}


def exercise(name: str) -> str:
    try:
        EXERCISES[name]()
    except NeedsCuda as why:
        return f"skipped: {why}"
    except Exception:  # noqa: BLE001 - reported, with its traceback
        return "failed: " + traceback.format_exc()[-3000:]
    return OK


def requirements(entry: Entry) -> dict[str, Any]:
    try:
        return {"missing": entry.missing(), "unverifiable": None}
    except Unverifiable as why:
        return {"missing": [], "unverifiable": str(why)}


def main() -> None:
    warnings.simplefilter("ignore")  # torch's NumPy notice and the like, not ours to show
    exercised = {name: exercise(name) for name in EXERCISES}  # before anything else: see above
    entries = {entry.name: {**requirements(entry), "exercise": exercised.get(entry.name, "")}
               for entry in compat.ENTRIES}
    print(json.dumps(entries))


if __name__ == "__main__":
    main()
