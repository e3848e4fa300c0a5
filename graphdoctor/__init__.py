"""graphdoctor: why CUDA graph capture failed, gave no speedup, or is unsafe.

``graphdoctor.check``, ``graphdoctor.recording`` and ``graphdoctor.Result`` (from
:mod:`graphdoctor.api`) are imported on first use: ``import graphdoctor`` imports neither
torch nor the rest of graphdoctor, as the CLI and the pytest plugin need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphdoctor.errors import NoCudaDevice, NoCudaWarning
from graphdoctor.version import __version__

if TYPE_CHECKING:
    from graphdoctor.api import GraphDoctorFailure, Recording, Result, check, recording

__all__ = ["GraphDoctorFailure", "NoCudaDevice", "NoCudaWarning", "Recording", "Result",
           "__version__", "check", "recording"]
_FROM_API = frozenset(__all__) - {"__version__", "NoCudaDevice", "NoCudaWarning"}


def __getattr__(name: str) -> Any:
    if name in _FROM_API:
        from graphdoctor import api

        return getattr(api, name)
    raise AttributeError(f"module 'graphdoctor' has no attribute {name!r}")
