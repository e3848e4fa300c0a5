"""Running torch.compile without CUDA graphs (``GRAPHDOCTOR_GRAPHS=off``): the inductor
options a mode stands for, whether CUDA graphs are on by default, and whether dynamo is
tracing the caller.

A mode is a name for a set of inductor options (``list_mode_options``); torch applies a
mode by applying those options, and refuses a mode and options together. So a compile with
CUDA graphs off is the same call with the mode's options spelled out, the caller's options
over them, and ``triton.cudagraphs`` set to False: "reduce-overhead" becomes the default
compile, "max-autotune" becomes "max-autotune-no-cudagraphs".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphdoctor.record.compat.resolve import AnyOf, Entry, TorchName, TorchParameters, TorchSource
from graphdoctor.record.compat.versions import RUN_SOURCE_READ

CUDAGRAPHS_OPTION = "triton.cudagraphs"
_MODE_OPTIONS = TorchName("torch._inductor", "list_mode_options")
MODE_OPTIONS = Entry("mode_options", RUN_SOURCE_READ, (
    TorchParameters(_MODE_OPTIONS, ("mode", "dynamic")),
    TorchSource(_MODE_OPTIONS, (f'"{CUDAGRAPHS_OPTION}"',)),  # the modes that turn graphs on
    # torch applies a mode through those options
    TorchSource(TorchName("torch", "_TorchCompileInductorWrapper.apply_mode"),
                ("list_mode_options",)),
))


def mode_options(mode: str, dynamic: bool | None) -> dict[str, Any] | None:
    """The inductor options ``mode`` stands for; None where torch does not know the mode
    (torch.compile then says so itself) or cannot tell."""
    lookup = _MODE_OPTIONS.resolve()
    if lookup is None:
        return None
    try:
        return dict(lookup(mode, dynamic))
    except RuntimeError:  # an unknown mode
        return None


_CUDAGRAPHS_CONFIG = TorchName("torch._inductor.config", "triton.cudagraphs")
CUDAGRAPHS_BY_DEFAULT = Entry("cudagraphs_by_default", RUN_SOURCE_READ, (_CUDAGRAPHS_CONFIG,))


def cudagraphs_by_default() -> bool:
    """Whether inductor's config turns CUDA graphs on for every compile."""
    return bool(_CUDAGRAPHS_CONFIG.resolve())


_IS_COMPILING = AnyOf((TorchName("torch.compiler", "is_compiling"),
                       TorchName("torch._dynamo", "is_compiling")))
IS_COMPILING = Entry("is_compiling", RUN_SOURCE_READ, (_IS_COMPILING,))


def is_compiling_check() -> Callable[[], bool]:
    """torch's own test for "dynamo is tracing this call", which dynamo folds to True while
    it traces: code behind it is never traced."""
    for option in _IS_COMPILING.options:
        found = option.resolve() if isinstance(option, TorchName) else None
        if found is not None:
            checked: Callable[[], bool] = found
            return checked
    return lambda: False


ENTRIES = (MODE_OPTIONS, CUDAGRAPHS_BY_DEFAULT, IS_COMPILING)
