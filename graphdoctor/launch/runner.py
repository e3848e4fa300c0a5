"""Run the user's target as ``python script.py`` or ``python -m module`` would.

The script sees its own ``sys.argv``, ``__name__ == "__main__"`` and its folder as
``sys.path[0]``. Its exit code is Python's: 0, ``sys.exit(n)``, 1 for an uncaught exception
(printed through ``sys.excepthook`` without graphdoctor's frames), and SIGINT for Ctrl-C.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from graphdoctor.own_code import is_own_file


@dataclass(frozen=True)
class Target:
    name: str
    args: tuple[str, ...] = ()
    module: bool = False


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    interrupted: bool = False


# Told of the exception the script did not catch, before it is printed.
UncaughtHandler = Callable[[BaseException], None]


def run_target(target: Target, on_uncaught: UncaughtHandler) -> Outcome:
    """Run the script; ``on_uncaught`` records what it did not catch (the recording child
    passes its recorder's; this module never imports the recorder)."""
    _prepare_sys(target)
    try:
        if target.module:
            runpy.run_module(target.name, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(os.path.abspath(target.name), run_name="__main__")
    except SystemExit as stop:
        return Outcome(_exit_code_of(stop))
    except KeyboardInterrupt as error:
        _record_uncaught(on_uncaught, error)
        _print_uncaught(error, target)
        return Outcome(130, interrupted=True)
    except BaseException as error:  # noqa: BLE001 - the script's failure is its result
        _record_uncaught(on_uncaught, error)
        _print_uncaught(error, target)
        return Outcome(1)
    return Outcome(0)


def _prepare_sys(target: Target) -> None:
    if target.module:
        sys.argv = [target.name, *target.args]  # runpy puts the module's file in argv[0]
        sys.path[0] = os.getcwd()
        return
    sys.argv = [target.name, *target.args]
    if not (sys.flags.isolated or getattr(sys.flags, "safe_path", False)):
        sys.path[0] = os.path.dirname(os.path.abspath(target.name))


def _exit_code_of(stop: SystemExit) -> int:
    code = stop.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF if code >= 0 else code % 256
    print(code, file=sys.stderr)
    return 1


def _record_uncaught(on_uncaught: UncaughtHandler, error: BaseException) -> None:
    try:
        on_uncaught(error)
    except Exception:  # noqa: BLE001 - never hide the user's error behind ours
        pass


def _print_uncaught(error: BaseException, target: Target) -> None:
    tb = _user_traceback(error.__traceback__, target)
    error = error.with_traceback(tb)  # excepthook reads __traceback__ on newer Pythons
    _hide_own_frames(error)
    try:
        sys.excepthook(type(error), error, tb)
    except Exception:  # noqa: BLE001
        traceback.print_exception(type(error), error, tb)


def _hide_own_frames(error: BaseException) -> None:
    """Unlink graphdoctor's wrapper frames from each traceback in the chain, so the user
    reads the traceback ``python script.py`` would have printed."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kept = []
        tb = current.__traceback__
        while tb is not None:
            if not is_own_file(os.path.realpath(tb.tb_frame.f_code.co_filename)):
                kept.append(tb)
            tb = tb.tb_next
        for before, after in zip(kept, [*kept[1:], None]):
            before.tb_next = after
        current.__traceback__ = kept[0] if kept else None
        current = current.__cause__ or current.__context__


def _user_traceback(tb: TracebackType | None, target: Target) -> TracebackType | None:
    """Drop the runner's and runpy's frames from the top of the traceback."""
    script = _module_file(target.name) if target.module else os.path.abspath(target.name)
    current = tb
    while current is not None:
        if os.path.abspath(current.tb_frame.f_code.co_filename) == script:
            return current
        current = current.tb_next
    return tb


def _module_file(name: str) -> str | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    if spec.submodule_search_locations:  # a package runs its __main__
        return os.path.join(os.path.dirname(spec.origin), "__main__.py")
    return os.path.abspath(spec.origin)
