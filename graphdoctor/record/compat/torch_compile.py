"""torch.compile: the loggers its events go to, dynamo's compile callbacks, counters and compile
ids, CUDAGraph Trees' manager, compiled modules, and the layout of torch's own frames.

Nothing here imports torch._dynamo or torch._inductor until the recorder asks, which it does
once the script first calls ``torch.compile``.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

import torch

from graphdoctor.record.compat.resolve import (
    AnyOf,
    ArtifactLogger,
    Entry,
    TorchAttribute,
    TorchFile,
    TorchName,
    TorchParameters,
    TorchSource,
)
from graphdoctor.record.compat.versions import (
    CPU,
    LOGGERS_SEEN,
    RUN_NOT_SEEN,
    RUN_SEEN,
    SOURCES_READ,
)

# Artifact loggers (module.__artifact). Skips went to perf_hints up to 2.10, cudagraphs from 2.11.
SKIP_LOGGERS = (
    ArtifactLogger("torch._inductor.cudagraph_utils", "cudagraphs"),
    ArtifactLogger("torch._inductor.cudagraph_utils", "perf_hints"),
    ArtifactLogger("torch._inductor.compile_fx", "perf_hints"),
)
TREE_LOGGERS = (ArtifactLogger("torch._inductor.cudagraph_trees", "cudagraphs"),)
PARTITION_LOGGERS = (ArtifactLogger("torch._inductor.scheduler", "cudagraphs"),)
GRAPH_BREAK_LOGGERS = (
    ArtifactLogger("torch._dynamo.symbolic_convert", "graph_breaks"),
    ArtifactLogger("torch._dynamo.convert_frame", "graph_breaks"),
)
RECOMPILE_LOGGERS = (ArtifactLogger("torch._dynamo.guards", "recompiles"),)
_LOGGER_GROUPS = (SKIP_LOGGERS, TREE_LOGGERS, PARTITION_LOGGERS, GRAPH_BREAK_LOGGERS,
                  RECOMPILE_LOGGERS)
# Each group needs one logger of the installed release; a release may lack the others.
LOGGER_NAMES = Entry("logger_names", LOGGERS_SEEN,
                     tuple(AnyOf(group) for group in _LOGGER_GROUPS))


def logger_names() -> tuple[str, ...]:
    return tuple(log.name for group in _LOGGER_GROUPS for log in group)


def logger(name: str) -> logging.Logger:
    return logging.getLogger(name)


# Torch code that logs at DEBUG on every call for one and the same state, and the local that
# tells one state from another: CUDA graph trees' ``_run`` logs a "Re-recording" for each
# stale graph of a function (one recorded for inputs that have since moved) on every call,
# as it checks them in turn before the one that matches. Where graphdoctor has torch log at
# DEBUG, it keeps one record per state; each costs torch a formatted message.
_REPEATING_DEBUG: dict[tuple[str, str], str] = {("cudagraph_trees.py", "_run"): "child"}


def repeat_key(code: Any) -> str | None:
    """The local that tells the states of a torch site that logs the same on every call
    apart (see above); None for any other site."""
    file = str(code.co_filename).replace("\\", "/").rsplit("/", 1)[-1]
    return _REPEATING_DEBUG.get((file, code.co_name))


_CALLBACK_HANDLER = TorchName("torch._dynamo.callback", "callback_handler")
REGISTER_COMPILE_CALLBACKS = Entry(
    "register_compile_callbacks", f"{RUN_SEEN}; their removal: {CPU} only", (
        TorchName("torch._dynamo.callback", "callback_handler.register_start_callback"),
        TorchName("torch._dynamo.callback", "callback_handler.register_end_callback"),
        TorchName("torch._dynamo.callback", "callback_handler.remove_start_callback"),
        TorchName("torch._dynamo.callback", "callback_handler.remove_end_callback"),
    ))


def register_compile_callbacks(on_start: Callable[..., None],
                               on_end: Callable[..., None]) -> Callable[[], None] | None:
    """Have dynamo call ``on_start`` and ``on_end`` around each compilation; the undo, or
    None where this torch has no compile callbacks."""
    handler = _CALLBACK_HANDLER.resolve()
    if handler is None:
        return None
    handler.register_start_callback(on_start)
    handler.register_end_callback(on_end)

    def remove() -> None:
        for method, callback in (("remove_start_callback", on_start),
                                 ("remove_end_callback", on_end)):
            try:
                getattr(handler, method)(callback)
            except (AttributeError, ValueError):  # torch._dynamo.reset() cleared them all
                pass

    return remove


_CALLBACK_ARGS = TorchName("torch._dynamo.callback", "CallbackArgs")
_TRIGGER = TorchAttribute(_CALLBACK_ARGS, "callback_trigger")
_CALLBACK_COMPILE_ID = TorchAttribute(_CALLBACK_ARGS, "compile_id")
CALLBACK_ARGS = Entry("callback_args", f"{RUN_SEEN}; none are passed before 2.8",
                      (_TRIGGER, _CALLBACK_COMPILE_ID))


def callback_args(args: tuple[Any, ...]) -> tuple[str, str]:
    """(trigger, compile id) from a dynamo callback's arguments (2.8+; none before)."""
    if not args:
        return ("", "")
    info = args[0]
    trigger = getattr(_TRIGGER.read(info), "name", "")
    return (str(trigger), str(_CALLBACK_COMPILE_ID.read(info, "") or ""))


_COMPILE_CONTEXT_ID = TorchName("torch._guards", "CompileContext.current_compile_id")
CURRENT_COMPILE_ID = Entry("current_compile_id", RUN_SEEN, (_COMPILE_CONTEXT_ID,))


def current_compile_id() -> str:
    """The compile id (F/N) of the compilation under way on this thread, or ""."""
    current = _COMPILE_CONTEXT_ID.resolve()
    try:
        compile_id = current() if current is not None else None
    except Exception:  # noqa: BLE001
        return ""
    return str(compile_id) if compile_id is not None else ""


# On each recompile dynamo asks this function of convert_frame's for the guards that failed,
# one reason per earlier compile, whether or not its recompiles log is on (it formats and
# logs them only when TORCH_LOGS or set_logs turned that log on, whatever the logger says).
# Its name ended in "reason" before 2.4; from 2.6 a second call passes skip_logging=True.
_CONVERT_FRAME = TorchName("torch._dynamo.convert_frame")
_REASON_NAMES = ("get_and_maybe_log_recompilation_reasons",
                 "get_and_maybe_log_recompilation_reason")
RECOMPILE_REASONS = Entry("recompile_reasons_owner", SOURCES_READ, (
    AnyOf(tuple(TorchParameters(TorchName(_CONVERT_FRAME.module, name), ("frame",))
                for name in _REASON_NAMES)),
))
Reasons = Callable[[list[str], Any], None]


def recompile_reasons_owner() -> tuple[Any, str] | None:
    """(module, name) of the function dynamo asks for a recompile's reasons, for the
    recorder to wrap with :func:`wrap_recompile_reasons`; None where this torch lacks it."""
    module = _CONVERT_FRAME.resolve()
    name = next((n for n in _REASON_NAMES if callable(getattr(module, n, None))), None)
    return (module, name) if name is not None else None


def wrap_recompile_reasons(original: Callable[..., Any], seen: Reasons) -> Callable[..., Any]:
    """``original``, calling ``seen(reasons, frame)`` with the reasons it returns and the
    frame being compiled again (None where it cannot be read), once per recompile."""
    @functools.wraps(original)
    def reasons(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        if not kwargs.get("skip_logging"):  # a second look at the same recompile
            frame = args[1] if len(args) > 1 else kwargs.get("frame")
            seen([str(r) for r in found or ()], frame)
        return found

    return reasons


_COUNTERS = TorchName("torch._dynamo.utils", "counters")
DYNAMO_COUNTERS = Entry("dynamo_counters", RUN_SEEN, (_COUNTERS,))


def dynamo_counters() -> dict[str, dict[str, int]]:
    counters = _COUNTERS.resolve()
    if counters is None:
        return {}
    return {group: {str(k): int(v) for k, v in c.items()} for group, c in counters.items()}


_TREE_MANAGER = TorchName("torch._inductor.cudagraph_trees", "CUDAGraphTreeManager")
TREE_MANAGER_CLASS = Entry("tree_manager_class", RUN_SEEN, (
    TorchName("torch._inductor.cudagraph_trees", "CUDAGraphTreeManager.run"),
))


def tree_manager_class() -> Any | None:
    """CUDAGraph Trees' manager, whose ``run(new_inputs, function_id)`` runs each call of a
    compiled function; None where it is missing."""
    cls = _TREE_MANAGER.resolve()
    return cls if cls is not None and hasattr(cls, "run") else None


_ID_TO_COMPILE_ID = TorchAttribute(_TREE_MANAGER, "id_to_compile_id")
TREE_COMPILE_ID = Entry("tree_compile_id", RUN_SEEN, (_ID_TO_COMPILE_ID,))


def tree_compile_id(manager: Any, function_id: Any) -> str:
    """The compile id (F/N) of a cudagraph-tree function."""
    compile_id = _ID_TO_COMPILE_ID.read(manager, {}).get(function_id)
    return str(compile_id) if compile_id is not None else ""


_IDS_TO_FUNCS = TorchAttribute(_TREE_MANAGER, "ids_to_funcs")
_STATIC_INPUTS = TorchAttribute(TorchName("torch._inductor.cudagraph_utils", "WrappedFunction"),
                                "static_input_idxs")
TREE_INPUT_COPIES = Entry("tree_input_copies", RUN_SEEN, (_IDS_TO_FUNCS, _STATIC_INPUTS))


def tree_input_copies(manager: Any, function_id: Any, inputs: Any) -> tuple[int, int]:
    """(number, bytes) of a tree function's inputs that each replay copies into the graph:
    the tensors that are not among its static inputs."""
    wrapped = _IDS_TO_FUNCS.read(manager, {}).get(function_id)
    static = set(_STATIC_INPUTS.read(wrapped, ()) or ())
    copied = [t for i, t in enumerate(inputs or ())
              if i not in static and isinstance(t, torch.Tensor) and t.is_cuda]
    return (len(copied), sum(t.untyped_storage().nbytes() if t.numel() else 0 for t in copied))


_ORIGINAL_CALLABLE = "_torchdynamo_orig_callable"
IS_COMPILED = Entry("is_compiled", RUN_NOT_SEEN, (
    TorchSource(TorchName("torch._dynamo.eval_frame", "_TorchDynamoContext.__call__"),
                (_ORIGINAL_CALLABLE,)),
))


def is_compiled(fn: Any) -> bool:
    """Whether ``fn`` is what ``torch.compile`` returned (for a function or a module).
    Nothing was compiled before dynamo is imported, and this does not import it."""
    return "torch._dynamo" in sys.modules and hasattr(fn, _ORIGINAL_CALLABLE)


_ORIGINAL_MODULE = TorchAttribute(TorchName("torch._dynamo.eval_frame", "OptimizedModule"),
                                  "_orig_mod")
COMPILED_MODULE = Entry("compiled_module", RUN_SEEN, (_ORIGINAL_MODULE,))


def compiled_module(module: Any) -> Any:
    """The module ``torch.compile(module)`` wrapped, or ``module`` itself."""
    return _ORIGINAL_MODULE.read(module, module)


# The methods through which ``module(x)`` runs ``forward``: a compiled module's frame is one.
MODULE_CALLS = frozenset({"_call_impl", "_wrapped_call_impl", "__call__"})
MODULE_CALL_NAMES = Entry("MODULE_CALLS", RUN_SEEN, (
    TorchName("torch.nn.modules.module", "Module._call_impl"),
    TorchName("torch.nn.modules.module", "Module._wrapped_call_impl"),
))

# torch's folders and files whose frames sit between a compiled function and the tree,
# never the function itself; and the name of the folder Inductor writes its code to.
MACHINERY = ("_dynamo", "_inductor", "_functorch", "fx", "utils", "cuda", "autograd",
             "_ops.py", "_compile.py", "_library")
INDUCTOR_CODE_DIR = "torchinductor_"
TORCH_MACHINERY = Entry("is_torch_machinery", RUN_SEEN, (
    *(TorchFile(path) for path in MACHINERY),
    TorchSource(TorchName("torch._inductor.runtime.cache_dir_utils", "default_cache_dir"),
                (INDUCTOR_CODE_DIR,)),
))


def is_inductor_code(path: str) -> bool:
    """A module Inductor generated."""
    return INDUCTOR_CODE_DIR in path


def is_torch_machinery(path: str) -> bool:
    """A frame of torch's compile machinery, given the path of a file inside torch."""
    inside = path.replace("\\", "/").rsplit("/torch/", 1)[-1]
    return inside.startswith(MACHINERY)


ENTRIES = (LOGGER_NAMES, REGISTER_COMPILE_CALLBACKS, CALLBACK_ARGS, CURRENT_COMPILE_ID,
           RECOMPILE_REASONS, DYNAMO_COUNTERS, TREE_MANAGER_CLASS, TREE_COMPILE_ID,
           TREE_INPUT_COPIES, IS_COMPILED, COMPILED_MODULE, MODULE_CALL_NAMES, TORCH_MACHINERY)
