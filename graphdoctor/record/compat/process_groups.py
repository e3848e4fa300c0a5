"""torch.distributed: the module whose collectives are patched beside the public ones, and the
names of process groups."""

from __future__ import annotations

from types import ModuleType

from graphdoctor.record.compat.resolve import Entry, TorchAttribute, TorchName
from graphdoctor.record.compat.versions import RUN_NOT_SEEN, RUN_SEEN

_C10D = TorchName("torch.distributed.distributed_c10d")
C10D_MODULE = Entry("c10d_module", RUN_SEEN, (_C10D,))


def c10d_module() -> ModuleType:
    """``torch.distributed.distributed_c10d``, where the collectives are defined (and called
    from by the rest of torch.distributed); ImportError where it is missing."""
    module = _C10D.resolve()
    if not isinstance(module, ModuleType):
        raise ImportError(f"{_C10D.describe()} is missing")
    return module


_GROUP_NAME = TorchAttribute(TorchName("torch.distributed", "ProcessGroup"), "group_name")
# fixtures/recordings only use the default group, which needs no name
GROUP_NAME = Entry("group_name", RUN_NOT_SEEN, (_GROUP_NAME,))


def group_name(group: object) -> str:
    """A process group's own name, or ""."""
    return str(_GROUP_NAME.read(group, "") or "")


ENTRIES = (C10D_MODULE, GROUP_NAME)
