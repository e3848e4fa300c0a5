"""Read why CUDAGraph Trees recorded a function's graph again without a recompile.

A tree replays a graph only while the call's static inputs (parameters, buffers, tensors
marked with ``mark_static_address``) sit at the addresses they had when it was recorded.
When one moved, torch's ``cudagraphs`` log says ``Re-recording function=..., reason=static
input data pointer changed.`` and, per input that moved, ``input name: arg3_1. data pointer
changed from 139... to 139.... input stack trace: File ...``: the graph's name for the
input, its old and new address, and the user's line that uses it. This module turns that
text into :class:`MovedInput` values. Pure text in, values out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphdoctor.trace.frames import frames_in_text
from graphdoctor.trace.torch_logs.guards import Site

_MOVED = re.compile(r"input name: (?P<name>[^\s.]+)\. data pointer changed from (?P<old>\d+) "
                    r"to (?P<new>\d+)\.(?: input stack trace: (?P<stack>.*?))?"
                    r"(?=\s*input name: |\s*\Z)", re.S)


@dataclass(frozen=True)
class MovedInput:
    """A static input of a recorded graph that came at another address."""

    name: str  # the graph's name for it (arg3_1, primals_2, L_self_..._weight_)
    old: int  # the address the graph was recorded with
    new: int  # the address the call brought
    frames: tuple[Site, ...] = ()  # torch's stack of its first use, outermost first


def moved_inputs(reason: str) -> list[MovedInput]:
    """The inputs a re-recording's reason says moved; none for any other reason."""
    return [MovedInput(m.group("name"), int(m.group("old")), int(m.group("new")),
                       tuple(frames_in_text(m.group("stack") or "")))
            for m in _MOVED.finditer(reason)]
