"""A sync torch raises below graphdoctor's own function mode (the frozen values' one, pushed
during manual captures) belongs to the user's line above it: with the mode's frame the
innermost, the ``.item()`` of a capture was once recorded as graphdoctor's own sync, and
GD101 lost its name. The warning is stood in for (no GPU here): torch warns from native code,
so the innermost Python frame is the mode's."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

import pytest

pytest.importorskip("torch")

from graphdoctor.facts.queries import culprit_frame, is_users_sync  # noqa: E402
from graphdoctor.record.frozen.scalar_uses import ScalarUses  # noqa: E402
from graphdoctor.record.host import syncs  # noqa: E402
from graphdoctor.record.recorder import Recorder  # noqa: E402
from graphdoctor.trace.assemble import assemble_file  # noqa: E402
from graphdoctor.trace.names import INTERNAL_SYNC  # noqa: E402
from graphdoctor.trace.spool.file import SpoolWriter  # noqa: E402


class Message(NamedTuple):
    filename: str
    lineno: int


def users_line(mode: ScalarUses, probe: Any) -> Any:
    return mode.__torch_function__(probe, (), ())  # stands for the user's x.item()


def recorded_sync(tmp_path: Path, through_mode: bool) -> Any:
    recorder = Recorder(SpoolWriter(str(tmp_path / "run.spool")))
    hooks = syncs._SyncHooks(recorder)

    def probe() -> None:  # torch's native code, warning: its innermost Python frame
        frame: FrameType = sys._getframe(1)
        hooks.on_sync_warning(Message(frame.f_code.co_filename, frame.f_lineno), frame)

    if through_mode:
        users_line(ScalarUses(recorder, None, lambda binding: None), probe)
    else:
        mode = ScalarUses(recorder, None, lambda binding: None)
        recorder.transparent.clear()  # as before: the mode's frame taken for the site
        users_line(mode, probe)
    recorder.spool.close()
    trace = assemble_file(tmp_path / "run.spool")
    [sync] = trace.tables["syncs"]
    return trace, sync


def test_a_sync_below_the_mode_is_the_users_line(tmp_path: Path) -> None:
    trace, sync = recorded_sync(tmp_path, through_mode=True)
    assert sync.kind == "item" and is_users_sync(trace, sync)
    frame = culprit_frame(trace, sync.stack)
    assert frame is not None and frame.func == "users_line"


def test_without_it_the_sync_was_taken_for_graphdoctor_s_own(tmp_path: Path) -> None:
    trace, sync = recorded_sync(tmp_path, through_mode=False)
    assert sync.kind == INTERNAL_SYNC and not is_users_sync(trace, sync)
