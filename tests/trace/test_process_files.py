"""The files of the processes a run follows: named from the spool of the recording process
they descend from (``.procPID`` before ``.spool``), found again beside it, never another
run's and never anything but a regular file."""

from __future__ import annotations

import os
from pathlib import Path

from graphdoctor.files.run_files import RunFiles, is_process_spool


def test_a_followed_process_names_its_files_from_its_recording_process(tmp_path: Path) -> None:
    run = RunFiles(tmp_path / "r.json.77.spool", keep=tmp_path / "kept.spool.jsonl.gz")
    child = run.of_process(1234)
    assert child.spool == tmp_path / "r.json.77.proc1234.spool"
    assert (child.tail, child.fault) == (tmp_path / "r.json.77.proc1234.tail",
                                         tmp_path / "r.json.77.proc1234.fault")
    assert child.keep == tmp_path / "kept.proc1234.spool.jsonl.gz"
    ranked = RunFiles(tmp_path / "r.json.77.spool", nproc=2).of_rank(1).of_process(9)
    assert ranked.spool == tmp_path / "r.json.77.rank1.proc9.spool"


def test_the_children_of_a_run_are_found_by_pid_and_nothing_else(tmp_path: Path) -> None:
    run = RunFiles(tmp_path / "r.json.77.spool", nproc=2)
    for name in ("r.json.77.rank0.proc12.spool", "r.json.77.rank1.proc5.spool",
                 "r.json.77.rank1.proc5.tail",  # a scratch file, not a spool
                 "r.json.78.rank0.proc3.spool",  # another run's
                 "r.json.77.rank0.procX.spool", "r.json.77.rank0.proc12.spool.bak"):
        (tmp_path / name).write_text("")
    os.symlink("/dev/null", tmp_path / "r.json.77.rank0.proc13.spool")
    os.mkfifo(tmp_path / "r.json.77.rank1.proc14.spool")
    found = run.children()
    assert [(pid, files.spool.name) for pid, files in found] == [
        (5, "r.json.77.rank1.proc5.spool"), (12, "r.json.77.rank0.proc12.spool")]


def test_a_kept_spools_children_are_found_beside_it(tmp_path: Path) -> None:
    kept = tmp_path / "scenario.spool.jsonl.gz"
    (tmp_path / "scenario.proc42.spool.jsonl.gz").write_text("")
    assert [pid for pid, _ in RunFiles(kept).children()] == [42]
    assert is_process_spool(tmp_path / "scenario.proc42.spool.jsonl.gz")
    assert not is_process_spool(kept) and not is_process_spool(tmp_path / "a.rank1.spool")


def test_a_pid_the_system_gave_out_twice_gets_a_second_name(tmp_path: Path) -> None:
    run = RunFiles(tmp_path / "r.json.77.spool")
    again = run.of_process(12, 2)
    assert again.spool.name == "r.json.77.proc12-2.spool" and is_process_spool(again.spool)
    for files in (again, run.of_process(12), run.of_process(3)):
        files.spool.write_text("")
    assert [(pid, files.spool.name) for pid, files in run.children()] == [
        (3, "r.json.77.proc3.spool"), (12, "r.json.77.proc12.spool"),
        (12, "r.json.77.proc12-2.spool")]
