"""Whether the run had CUDA: what the child read at the end of the recording, or, where it
died before that (a crash, a hang, ``os._exit``), what it recorded before.

A crashing child never writes its final ``CudaState``. Its report must not say that no CUDA
device was found when the spool shows one: the CUDA state read as the script initialized
CUDA, the devices NVML listed, graphs, replays, allocator samples and syncs (recorded only
once CUDA is up) all say CUDA was there; the note :data:`CUDA_STATE_UNREAD` says which.
"""

from __future__ import annotations

from graphdoctor.trace.builder import Builder
from graphdoctor.trace.model import Note
from graphdoctor.trace.names import CUDA_AT_END, CUDA_AT_INIT, CUDA_STATE_UNREAD

# Tables whose rows are only recorded once CUDA is up, and what a row of each is.
_CUDA_TABLES = (("replays", "graph replay"), ("memory", "allocator sample"), ("syncs", "sync"),
                ("allocs", "allocator action"))


def state_read(b: Builder) -> bool:
    """Whether the child read the CUDA state at the end of the recording."""
    return bool(b.cuda) and b.cuda.get("when", CUDA_AT_END) == CUDA_AT_END


def cuda_available(b: Builder) -> bool:
    if state_read(b):
        return bool(b.cuda.get("available"))
    return bool(_cuda_used(b)) or bool(b.meta.get("cuda") and b.meta.get("devices"))


def unread_note(b: Builder) -> Note | None:
    """The note for a run that ended before the child read the CUDA state, with what it
    recorded of CUDA; None where it read it, or where torch (or its CUDA) never came."""
    if state_read(b) or not b.meta.get("torch"):
        return None
    used = _cuda_used(b)
    if not b.meta.get("cuda") and not used:
        return None  # a torch build without CUDA, as its own note says
    facts = used + _devices(b) or ["nothing recorded before then shows that CUDA was used"]
    return Note(CUDA_STATE_UNREAD, "the run ended before graphdoctor could read it; "
                + "; ".join(facts))


def _cuda_used(b: Builder) -> list[str]:
    """What the spool shows the script did with CUDA, in words."""
    facts = ["the script had initialized CUDA"] if b.cuda.get("when") == CUDA_AT_INIT else []
    tables = b.trace.tables
    counts = [(len(b.graphs), "CUDA graph"),
              *((len(tables[name]), what) for name, what in _CUDA_TABLES)]
    counted = [f"{n} {what}{'s' if n > 1 else ''}" for n, what in counts if n]
    if counted:
        listed = ", ".join(counted[:-1]) + " and " if len(counted) > 1 else ""
        facts.append(f"it recorded {listed}{counted[-1]}")
    return facts


def _devices(b: Builder) -> list[str]:
    """The devices NVML listed, by CUDA index; alike ones together."""
    alike: dict[str, list[str]] = {}
    for i, d in enumerate(b.meta.get("devices", [])):
        memory = int(d.get("memory_total") or 0)
        name = (d.get("name") or "unnamed") + (f" ({memory / 2**30:.0f} GiB)" if memory else "")
        alike.setdefault(name, []).append(str(d.get("index", i)))
    return [f"device {ids[0]} was {name}" if len(ids) == 1
            else f"devices {', '.join(ids)} were {name}" for name, ids in alike.items()]
