"""Every use of a private or version-dependent torch API, in one place.

Entries feature-detect what they need and report what is missing instead of raising, so the
recorder degrades to a line in the report's "not recorded" list; the few that raise where
this torch lacks something (through ``TorchName.require``) raise where the code they
replaced did. Each one reaches torch through a declared requirement (``resolve``), and
``ENTRIES`` lists them all with the torch versions each was checked on (``versions``);
tests/record/test_compat.py checks and exercises every one against the installed torch.

Every submodule is imported here, with the recorder's sources. The torch modules an entry
names are imported at its first call, never inside a capture, which must import nothing:
those of dynamo and inductor when the script first calls torch.compile, the others with torch.
"""

from __future__ import annotations

from graphdoctor.record.compat import (
    allocator,
    capture,
    cuda,
    graphs_off,
    process_groups,
    torch_compile,
)
from graphdoctor.record.compat.allocator import (
    AllocatorTotals,
    HistoryCall,
    allocator_totals,
    end_allocate_to_pool,
    inductor_left_unimported,
    memory_history,
    memory_snapshot,
    storage_weak_ref,
    storage_weak_refs_available,
)
from graphdoctor.record.compat.capture import (
    COMPILE_API,
    CONTEXT_API,
    GRAPHED_CALLABLES_API,
    RAW_API,
    capture_api,
    capture_begin_arguments,
    graph_of_context,
    graph_pool,
    unpatched_graph_class,
)
from graphdoctor.record.compat.cuda import (
    SYNC_ERROR,
    SYNC_OFF,
    SYNC_WARN,
    SYNC_WARNING,
    CurrentStream,
    ProfilerActive,
    cuda_built,
    lazy_cuda_call,
    profiler_starts,
    set_sync_debug_mode,
    stream_context_streams,
    sync_debug_mode,
    synchronize_unpatched,
    unpatched_event_methods,
)
from graphdoctor.record.compat.graphs_off import (
    CUDAGRAPHS_OPTION,
    cudagraphs_by_default,
    is_compiling_check,
    mode_options,
)
from graphdoctor.record.compat.process_groups import c10d_module, group_name
from graphdoctor.record.compat.resolve import Entry
from graphdoctor.record.compat.torch_compile import (
    MODULE_CALLS,
    callback_args,
    compiled_module,
    current_compile_id,
    dynamo_counters,
    is_compiled,
    is_inductor_code,
    is_torch_machinery,
    logger,
    logger_names,
    recompile_reasons_owner,
    register_compile_callbacks,
    repeat_key,
    tree_compile_id,
    tree_input_copies,
    tree_manager_class,
    wrap_recompile_reasons,
)

ENTRIES: tuple[Entry, ...] = (*cuda.ENTRIES, *allocator.ENTRIES, *capture.ENTRIES,
                              *torch_compile.ENTRIES, *graphs_off.ENTRIES,
                              *process_groups.ENTRIES)

__all__ = [
    "COMPILE_API", "CONTEXT_API", "CUDAGRAPHS_OPTION", "ENTRIES", "GRAPHED_CALLABLES_API",
    "MODULE_CALLS", "RAW_API", "SYNC_ERROR", "SYNC_OFF", "SYNC_WARN", "SYNC_WARNING",
    "AllocatorTotals", "CurrentStream", "ProfilerActive", "Entry", "HistoryCall",
    "allocator_totals", "c10d_module", "callback_args", "capture_api",
    "capture_begin_arguments", "compiled_module", "cuda_built", "cudagraphs_by_default",
    "current_compile_id", "dynamo_counters", "end_allocate_to_pool", "graph_of_context",
    "graph_pool", "group_name", "inductor_left_unimported", "is_compiled", "is_compiling_check",
    "is_inductor_code", "is_torch_machinery", "lazy_cuda_call", "logger", "logger_names",
    "memory_history", "memory_snapshot", "mode_options", "profiler_starts",
    "recompile_reasons_owner",
    "register_compile_callbacks", "repeat_key", "set_sync_debug_mode",
    "storage_weak_ref", "storage_weak_refs_available", "stream_context_streams",
    "sync_debug_mode", "synchronize_unpatched", "tree_compile_id", "tree_input_copies",
    "tree_manager_class", "unpatched_event_methods", "unpatched_graph_class",
    "wrap_recompile_reasons",
]
