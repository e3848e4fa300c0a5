"""Outputs of a manual capture kept across replays, on the CPU: a list or a dict holding
the output tensor itself at several replays, an attribute holding it and read after the
next replay; and the silences: a clone kept, an output read before the next replay. The
capture is stood in for (no GPU here): the calls the graphs source makes at its begin, end
and sampled replays (the 1st, 2nd, 4th, 8th), with CPU tensors taken for the GPU's."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from graphdoctor.record import compat  # noqa: E402
from graphdoctor.record.capture import kept_lines, kept_outputs  # noqa: E402
from graphdoctor.record.recorder import Recorder  # noqa: E402
from graphdoctor.trace.event_kinds import KeptOutput  # noqa: E402
from graphdoctor.trace.names import (  # noqa: E402
    KEPT_IN_ATTRIBUTE,
    KEPT_IN_DICT,
    KEPT_IN_LIST,
)
from graphdoctor.trace.spool.file import SpoolWriter, read_records  # noqa: E402
from tests.record.test_frozen_values import _stack_lines  # noqa: E402

pytestmark = pytest.mark.skipif(not compat.storage_weak_refs_available(),
                                reason="this torch has no storage weak references")

SCRIPT = '''
import sys
import torch
static_in = torch.zeros(4)
hooks.begin(sys._getframe())
static_out = static_in * 2
hooks.end()
generated = []
history = {}
class Runner:
    prev = None
runner = Runner()
for step in range(8):
    static_in.fill_(step)
    hooks.replay(step + 1, sys._getframe())
    if runner.prev is not None:
        delta = static_out - runner.prev
    generated.append(static_out)
    history[step] = static_out
    runner.prev = static_out
'''
LINES = {text.strip(): n for n, text in enumerate(SCRIPT.splitlines(), 1) if text}


class Hooks:
    def __init__(self, watch: Any):
        self.watch = watch

    def begin(self, frame: Any) -> None:
        self.watch.capture_began(0, frame)

    def end(self) -> None:
        self.watch.capture_ended(0)

    def replay(self, count: int, frame: Any) -> None:
        if count & (count - 1) == 0:  # the 1st, 2nd, 4th, 8th: the replays sampled
            self.watch.sampled(0, count, frame)


def recorded(tmp_path: Path, source: str, monkeypatch: pytest.MonkeyPatch) -> list[KeptOutput]:
    """The rows a run of ``source`` writes (each run's script a file of its own: a file's
    source is read once per process)."""
    monkeypatch.setattr(kept_outputs, "on_gpu", lambda tensor: True)
    spool = tmp_path / "run.spool"
    recorder = Recorder(SpoolWriter(str(spool)))
    stop = kept_outputs.install(recorder)
    script = tmp_path / "script.py"
    script.write_text(source)
    try:
        runpy.run_path(str(script), {"hooks": Hooks(recorder.frozen)})
    finally:
        stop()
        recorder.spool.close()
    return [KeptOutput(*r[1:]) for r in read_records(str(spool)) if r[0] == "kept"]


def test_a_list_a_dict_and_an_attribute_that_keep_the_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = {r.holder: r for r in recorded(tmp_path, SCRIPT, monkeypatch)}
    assert set(rows) == {"generated", "history", "runner.prev"}
    kept = {holder: (r.name, r.how, r.aliases, r.replays) for holder, r in rows.items()}
    assert kept == {"generated": ("static_out", KEPT_IN_LIST, 3, 4),
                    "history": ("static_out", KEPT_IN_DICT, 3, 4),
                    "runner.prev": ("static_out", KEPT_IN_ATTRIBUTE, 1, 4)}
    lines = _stack_lines(tmp_path)
    assert lines[rows["generated"].stack] == LINES["generated.append(static_out)"]
    assert lines[rows["history"].stack] == LINES["history[step] = static_out"]
    assert lines[rows["runner.prev"].stack] == LINES["runner.prev = static_out"]
    assert lines[rows["runner.prev"].read] == LINES["delta = static_out - runner.prev"]


def test_clones_and_outputs_read_before_the_next_replay_are_not_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cloned = SCRIPT.replace("= static_out\n", "= static_out.clone()\n").replace(
        "append(static_out)", "append(static_out.clone())")
    (tmp_path / "cloned").mkdir()
    assert recorded(tmp_path / "cloned", cloned, monkeypatch) == []
    # the attribute read before the next replay stores it again: right
    read_first = SCRIPT.split("for step")[0] + (
        "for step in range(8):\n"
        "    static_in.fill_(step)\n"
        "    hooks.replay(step + 1, sys._getframe())\n"
        "    runner.prev = static_out\n"
        "    total = runner.prev.sum()\n")
    (tmp_path / "read_first").mkdir()
    assert recorded(tmp_path / "read_first", read_first, monkeypatch) == []


def test_the_lines_that_keep_and_read_stale(tmp_path: Path) -> None:
    source = tmp_path / "loop.py"
    source.write_text("for t in range(9):\n"      # 1
                      "    g.replay()\n"          # 2
                      "    d = out - prev\n"      # 3: after the replay that followed line 4
                      "    prev = out\n"          # 4
                      "    seen.append(out)\n"    # 5
                      "    print(prev)\n")        # 6: read before the next replay
    assert kept_lines.keeping_line(str(source), 2, ("seen",)) == 5
    assert kept_lines.stale_read(str(source), 2, ("prev",)) == 3
    assert kept_lines.stale_read(str(source), 2, ("seen",)) is None
