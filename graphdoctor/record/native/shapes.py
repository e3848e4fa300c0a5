"""What a native program's graph holds, from the injection library's node list: the driver's
node types (CUgraphNodeType numbers), each kernel node's (mangled) name, and the edges; in
the JSON form every other recorder writes
(:func:`graphdoctor.record.capture.anatomy_reader.described`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphdoctor.record.capture.anatomy_reader import described, node_type_named
from graphdoctor.trace import anatomy

# CUgraphNodeType, by number (cuda.h), as the driver names them less CU_GRAPH_NODE_TYPE_
DRIVER_NODE_TYPES = ("KERNEL", "MEMCPY", "MEMSET", "HOST", "GRAPH", "EMPTY", "WAIT_EVENT",
                     "EVENT_RECORD", "EXT_SEMAS_SIGNAL", "EXT_SEMAS_WAIT", "MEM_ALLOC",
                     "MEM_FREE", "BATCH_MEM_OP", "CONDITIONAL")


def anatomy_of(event: dict[str, Any], demangle: Callable[[str], str]) -> dict[str, Any]:
    """The anatomy of an ``anatomy`` event, read time included; kernel names demangled with
    ``demangle`` (:func:`graphdoctor.record.capture.anatomy_reader.demangler`)."""
    types = [_type(int(number)) for number in event.get("types") or []]
    names = event.get("kernels") or []
    kernels = [anatomy.group_name(demangle(str(names[i] if i < len(names) and names[i] else "?")))
               for i, kind in enumerate(types) if kind == anatomy.KERNEL]
    edges = [(int(a), int(b)) for a, b in event.get("edges") or []
             if 0 <= int(a) < len(types) and 0 <= int(b) < len(types)]
    found = described(types, kernels, [], edges)
    found["read_ns"] = int(event.get("read_ns", 0))
    return found


def _type(number: int) -> str:
    known = 0 <= number < len(DRIVER_NODE_TYPES)
    return node_type_named(DRIVER_NODE_TYPES[number]) if known else anatomy.OTHER
