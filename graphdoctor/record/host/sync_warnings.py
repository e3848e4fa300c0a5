"""Implicit syncs, from PyTorch's sync debug mode, without changing what the script sees of
warnings.

Sync debug mode "warn" makes torch warn at each implicit host sync (``.item()``, ``.cpu()``,
``nonzero``...), at the user's line, inside a capture too. graphdoctor adds no warnings
filter: the warning passes the script's own ``warnings.filters`` and reaches
``warnings._showwarnmsg``, the one function every shown warning goes through before
``warnings.showwarning`` or ``catch_warnings(record=True)`` sees it. graphdoctor wraps that
function: a sync warning is recorded and goes no further (unless the script turned sync debug
mode on itself, as it would have seen it without graphdoctor); every other warning is
recorded and passed on. ``warnings.filters`` and ``warnings.showwarning`` stay the script's.

As the filters are the script's, they decide for graphdoctor's warning too:
- where they make it an error (``-W error``, ``simplefilter("error")``) the script's
  ``.item()`` would raise, so graphdoctor turns the mode off while they do, and the report
  says implicit syncs were not recorded; where they ignore it, the report says so too;
- where they show it once per line or module ("default", "module", "once"), graphdoctor
  takes its entry back out of the registry, so the next sync there is seen as well and the
  script's registries hold nothing of graphdoctor's.
The script's own ``torch.cuda.set_sync_debug_mode`` is kept: the mode in force is the
script's where it asks for more ("warn" or "error"), graphdoctor's otherwise, and
``torch.cuda.get_sync_debug_mode()`` answers what the script set.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder, Uninstall, patch

# (a shown warning's message object, the user's frame it was raised at) -> None
WarningSink = Callable[[Any, FrameType | None], None]
# what warnings.py calls after each change of the filters (renamed in 3.14)
_MUTATED_NAMES = ("_filters_mutated_lock_held", "_filters_mutated")
NOT_RECORDED = "implicit syncs"


def route_warnings(on_sync: WarningSink, on_other: WarningSink,
                   script_sees_syncs: Callable[[], bool]) -> Uninstall:
    """Send each shown warning to ``on_sync`` or ``on_other`` before the script's own
    handling; sync warnings reach the script only where ``script_sees_syncs()``."""

    def make(original: Any) -> Any:
        @functools.wraps(original)
        def _showwarnmsg(msg: Any) -> Any:
            frame = sys._getframe(1)  # the user's line: torch warns from native code
            if not str(msg.message).startswith(compat.SYNC_WARNING):
                on_other(msg, frame)
                return original(msg)
            on_sync(msg, frame)
            if script_sees_syncs():
                return original(msg)
            forget_shown(msg, frame)
            return None

        return _showwarnmsg

    return patch(warnings, "_showwarnmsg", make)


def forget_shown(msg: Any, frame: FrameType | None) -> None:
    """Take a warning of graphdoctor's back out of the registries that keep a warning from
    showing twice, and drop a registry that only it made."""
    text, category = str(msg.message), msg.category
    registry = frame.f_globals.get("__warningregistry__") if frame is not None else None
    if isinstance(registry, dict):
        registry.pop((text, category, msg.lineno), None)
        registry.pop((text, category, 0), None)
        if set(registry) <= {"version"} and frame is not None:
            frame.f_globals.pop("__warningregistry__", None)
    once: Any = getattr(warnings, "onceregistry", None)
    if isinstance(once, dict):
        once.pop((text, category), None)


def action_for_sync_warnings() -> str:
    """What the script's warnings filters do with a sync warning: "error", "ignore", or a
    way of showing it. A filter limited to some modules or lines counts everywhere when it
    errors or ignores: graphdoctor cannot tell which line will sync next."""
    for action, message, category, module, lineno in list(warnings.filters):
        if message is not None and not message.match(compat.SYNC_WARNING):
            continue
        if not (isinstance(category, type) and issubclass(UserWarning, category)):
            continue
        if (module is None and not lineno) or action in ("error", "ignore"):
            return str(action)
    return str(getattr(warnings, "defaultaction", "default"))


class SyncDebugMode:
    """torch's sync debug mode, shared between graphdoctor ("warn", where the script's
    filters let it) and the script (whatever it sets through ``torch.cuda``)."""

    def __init__(self, recorder: Recorder):
        self._rec = recorder
        self.script_mode = compat.SYNC_OFF
        self._started = False
        self._in_force: int | None = None  # the mode graphdoctor last set
        self._applying = False  # setting the mode changes the filters for a moment itself
        self._noted: set[str] = set()
        # a recording inside the script's process (graphdoctor.check) ends before CUDA may
        # first start: the late lazy call must then leave the mode alone
        self._removed = False

    @property
    def script_sees_warnings(self) -> bool:
        return self.script_mode == compat.SYNC_WARN

    def install(self) -> Uninstall:
        """Follow the script's sync debug mode and its warnings filters; start once CUDA is."""
        undos = [patch(torch.cuda, "set_sync_debug_mode", self._wrap_set),
                 patch(torch.cuda, "get_sync_debug_mode", self._wrap_get),
                 *(patch(warnings, name, self._wrap_mutated) for name in _MUTATED_NAMES
                   if hasattr(warnings, name))]
        if not compat.lazy_cuda_call(self.start):
            self._rec.note(NOT_RECORDED, "torch.cuda._lazy_call is missing")

        def uninstall() -> None:
            self._removed = True
            for undo in reversed(undos):
                undo()
            if self._started:
                self._applying = True
                compat.set_sync_debug_mode(self.script_mode)

        return uninstall

    def start(self) -> None:
        if self._removed:
            return
        self._started = True
        self.apply()

    def apply(self) -> None:
        """Put the mode in force that the script and its filters allow."""
        if not self._started or self._applying:
            return
        action = action_for_sync_warnings()
        ours = compat.SYNC_OFF if action == "error" else compat.SYNC_WARN
        if action in ("error", "ignore") and self.script_mode == compat.SYNC_OFF:
            self._note_once(action)
        mode = max(self.script_mode, ours)
        if mode == self._in_force:
            return
        self._applying = True
        try:
            if not compat.set_sync_debug_mode(mode):
                self._note_once("unavailable")
            self._in_force = mode
        finally:
            self._applying = False

    def _note_once(self, why: str) -> None:
        if why not in self._noted:
            self._noted.add(why)
            self._rec.note(NOT_RECORDED, _WHY[why])

    def _wrap_set(self, original: Any) -> Any:
        @functools.wraps(original)
        def set_sync_debug_mode(debug_mode: Any) -> None:
            original(debug_mode)  # validates it, initializes CUDA, and turns names into numbers
            self.script_mode = compat.sync_debug_mode()
            self._in_force = None  # the script's call replaced graphdoctor's mode
            self.apply()

        return set_sync_debug_mode

    def _wrap_get(self, original: Any) -> Any:
        @functools.wraps(original)
        def get_sync_debug_mode() -> int:
            original()  # initializes CUDA, as it would have
            return self.script_mode

        return get_sync_debug_mode

    def _wrap_mutated(self, original: Any) -> Any:
        @functools.wraps(original)
        def filters_mutated(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            self.apply()
            return result

        return filters_mutated


_WHY = {
    "error": "the script's warnings filters turn warnings into errors (-W error or "
             "simplefilter('error')), so torch's sync warnings were left off while they did",
    "ignore": "the script's warnings filters ignore torch's sync warnings",
    "unavailable": "torch.cuda's sync debug mode could not be set",
}
