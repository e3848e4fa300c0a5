"""A recording that stopped early (its spool could not be written) says so, and claims
nothing it did not see: a graph whose replays fell after the stop is not "never replayed"."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from graphdoctor.diagnose import diagnose
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.names import RECORDING_STOPPED
from graphdoctor.trace.spool import records as sr
from tests.conftest import RECORDINGS

WHY = "File too large"


def cut_before_the_replays(tmp_path: Path, ending: list[sr.SpoolRecord]) -> Path:
    """The tiny_graph recording as far as its first replay, then ``ending``."""
    lines = gzip.decompress((RECORDINGS / "tiny_graph.spool.jsonl.gz").read_bytes()).splitlines()
    first_replay = next(i for i, line in enumerate(lines)  # a replay, a run of them, a count
                        if line.startswith((b'["replay', b'["progress"')))
    kept = [line.decode() for line in lines[:first_replay]]
    path = tmp_path / "stopped.spool"
    path.write_text("\n".join([*kept, *(json.dumps(sr.encode(r)) for r in ending)]) + "\n")
    return path


def graph_verdict(path: Path) -> str:
    trace = assemble_file(path)
    return diagnose(trace).verdicts[0].summary


def test_a_spool_the_parent_could_not_finish_stops_early(tmp_path: Path) -> None:
    run_end = sr.RunEnd({"exit_code": 0, "reason": "exited", "spool_error": WHY})
    path = cut_before_the_replays(tmp_path, [run_end])
    status = assemble_file(path).status
    assert status.recording_stopped == WHY and not status.complete
    assert status.message.startswith("the recording stops early") and WHY in status.message
    assert graph_verdict(path) == f"no replay was recorded: the recording stopped early ({WHY})"


def test_the_child_s_own_note_says_it_too(tmp_path: Path) -> None:
    why = f"stopped 5.4 s into the run: s.spool could not be written ({WHY})"
    path = cut_before_the_replays(tmp_path, [sr.NoteRecord(RECORDING_STOPPED, why),
                                             sr.RunEnd({"exit_code": 0, "reason": "exited"})])
    assert assemble_file(path).status.recording_stopped == why
    assert graph_verdict(path).startswith("no replay was recorded: the recording stopped early")


def test_without_a_stop_a_graph_with_no_replay_is_never_replayed(tmp_path: Path) -> None:
    path = cut_before_the_replays(tmp_path, [sr.End({"exit_code": 0}),
                                             sr.RunEnd({"exit_code": 0, "reason": "exited"})])
    assert graph_verdict(path) == "captured but never replayed"
