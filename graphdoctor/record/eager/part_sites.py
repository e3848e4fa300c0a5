"""torch's step parts, timed where the user's code calls them rather than inside torch.

A step part (``model(x)`` of an ``nn.Sequential``, ``loss.backward()``, ``opt.step()``:
:mod:`graphdoctor.record.eager.step_parts`) runs code that torch runs for its own calls as well:
every ``nn.Sequential`` inside a model runs ``Sequential.forward``. Timed from that code's
start and return, a step paid a callback for each of torch's inner calls too, each walking
the stack to learn that it was not the user's (34 of the 44 callbacks of a training step
of 16 small blocks). So the user's call is timed at its own site instead: the ``CALL``
event of the user's code starts it (that event is switched off at once, where it fires,
for every call that is not a step part), and an ``INSTRUCTION`` event on the instruction
after that call ends it (switched off, where it fires, for every other instruction of that
code). A step pays two callbacks for each step part the user's code calls, and nothing for
torch's own calls.

A call that raises never reaches the instruction after it. Its start is dropped at the
next call from the same frame (a frame makes one call at a time), or, where more than
``STALE_AFTER`` calls are open on a thread, once its frame is no longer on the stack.
"""

from __future__ import annotations

import dis
import threading
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from graphdoctor.record.eager.calls import SYS_MONITORING as _monitoring
from graphdoctor.record.eager.calls import Monitor
from graphdoctor.record.eager.open_calls import running_ids

# calls open on one thread before those whose frames are gone are looked for and dropped (a
# look walks the stack; parts nest rarely deeper than a user's module inside torch's). Calls
# are kept by their frame's id(), never the frame: a frame kept for a call that raised would
# keep its locals, tensors among them, alive
STALE_AFTER = 4


@dataclass(frozen=True)
class Site:
    """Where the user's code calls a step part: the caller's record of the part, and the
    offset of the instruction that runs once the call has returned."""

    part: Any
    after: int


class PartSites:
    """The step parts' call sites found so far, and the calls open at them, by thread and
    by the frame that made them, each with what the caller keeps for it."""

    def __init__(self, monitor: Monitor) -> None:
        self._monitor = monitor
        # by id(code): a dict's lookup by a code object hashes its bytes and constants
        self._calls: dict[int, dict[int, Site | None]] = {}  # code -> call offset -> site
        self._ends: dict[int, dict[int, Site]] = {}  # code -> offset after a call -> site
        self._codes: dict[int, CodeType] = {}  # each code kept, so that its id stays its own
        # thread -> id of the frame -> the call open there: its site, and what the caller
        # keeps for it
        self._open: dict[int, dict[int, tuple[Site, Any]]] = {}

    def site_at(self, code: CodeType, offset: int) -> Site | None | bool:
        """The step part's site at ``offset`` of ``code``; None where that call is no
        part's; False where it was not seen before."""
        calls = self._calls.get(id(code))
        return calls.get(offset, False) if calls is not None else False

    def learn(self, code: CodeType, offset: int, part: Any) -> Site | None:
        """The call at ``offset`` of ``code`` calls ``part`` (None: no step part); a part's
        site has the instruction after it watched from now on."""
        self._codes[id(code)] = code
        calls = self._calls.setdefault(id(code), {})
        after = _next_offset(code, offset) if part is not None else -1
        site = Site(part, after) if after >= 0 else None
        calls[offset] = site
        if site is not None:
            self._ends.setdefault(id(code), {})[after] = site
            self._arm(code)
        return site

    def _arm(self, code: CodeType) -> None:
        """Watch every instruction of ``code`` again (each switched off as it fires, unless
        it ends a site's call), the new site's among them."""
        events = _monitoring.events.INSTRUCTION
        self._monitor.remove_local(code, events)
        self._monitor.add_local(code, events)

    def ending(self, code: CodeType, offset: int) -> Site | None:
        """The site whose call ends where ``code`` reaches ``offset``, if any."""
        ends = self._ends.get(id(code))
        return ends.get(offset) if ends else None

    def open(self, site: Site, frame: FrameType, value: Any) -> list[Any]:
        """A call at ``site`` from ``frame`` starts; the values of calls found raised (never
        ended) are returned, for the caller to let go of."""
        opened = self._open.setdefault(threading.get_ident(), {})
        stale = opened.pop(id(frame), None)
        dropped = [stale[1]] if stale is not None else []
        if len(opened) >= STALE_AFTER:
            dropped += _drop_gone(opened, frame)
        opened[id(frame)] = (site, value)
        return dropped

    def close(self, site: Site, frame: FrameType) -> tuple[bool, Any]:
        """The call at ``site`` from ``frame`` has returned: (True, its value), or (False,
        None) where none was open there (the instruction reached another way, or a call
        left untimed). An open call of another site in this frame raised: it is returned
        as (False, its value), to be let go of."""
        opened = self._open.get(threading.get_ident())
        found = opened.pop(id(frame), None) if opened else None
        if found is None:
            return False, None
        return found[0] is site, found[1]


def _next_offset(code: CodeType, offset: int) -> int:
    """The offset of the instruction after the one at ``offset``; -1 where there is none."""
    instructions = iter(dis.get_instructions(code))
    for instruction in instructions:
        if instruction.offset == offset:
            following = next(instructions, None)
            return following.offset if following is not None else -1
    return -1


def _drop_gone(opened: dict[int, tuple[Site, Any]], frame: FrameType) -> list[Any]:
    running = running_ids(frame)
    gone = [f for f in opened if f not in running]
    return [opened.pop(f)[1] for f in gone]
