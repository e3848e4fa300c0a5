"""Runs finishing together onto one existing ``-o`` each keep their report: the audit's three
runs lost one in about one round of six, when one decided to replace the file between
another's decision and its rename. Here that moment is made to happen every time."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from graphdoctor.cli.run import RunOptions, _saved
from graphdoctor.report.io import load
from tests.conftest import ROOT

DEMOS = [ROOT / "graphdoctor" / "demo" / f"{name}.json.gz"
         for name in ("item_in_capture", "launch_bound")]


def options(output: Path, seen: tuple[int, int, int, int]) -> RunOptions:
    return RunOptions("train.py", (), False, output, "default", None, 1, None, True, False,
                      False, seen)


def test_a_run_that_decides_while_another_renames_writes_beside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = tmp_path / "same.json"
    output.write_text("a report of an earlier run")
    info = output.stat()
    seen = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    reports = [load(demo) for demo in DEMOS]
    renaming, go_on = threading.Event(), threading.Event()
    replace = os.replace

    def held(source: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
        if threading.current_thread().name == "first":
            renaming.set()
            go_on.wait(30)
        replace(source, dest)

    monkeypatch.setattr(os, "replace", held)
    written: dict[str, Path | None] = {}
    runs = [threading.Thread(name=name, target=lambda n=name, r=report: written.__setitem__(
        n, _saved(r, options(output, seen), []))) for name, report in zip(
        ("first", "second"), reports)]
    runs[0].start()
    assert renaming.wait(30)
    runs[1].start()
    runs[1].join(timeout=2)
    go_on.set()
    for run in runs:
        run.join(timeout=30)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same-2.json", "same.json"]
    targets = {load(path).trace.meta.target for path in written.values() if path is not None}
    assert targets == {report.trace.meta.target for report in reports}
    assert written["first"] == output and written["second"] == tmp_path / "same-2.json"
