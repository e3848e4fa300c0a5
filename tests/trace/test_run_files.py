"""Every name a run's files take, from one place: the report (and a rank's), the spool, its
tail and fault file, each rank's, the baseline run's, the kept spools, and names claimed so
that no two runs share one."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from graphdoctor.errors import GraphDoctorError, UnwritableFolderError
from graphdoctor.files import run_files
from graphdoctor.files.run_files import (
    MOST_NAMES_TRIED,
    RunFiles,
    claim,
    compare_report,
    default_report,
    gzipped,
    numbered,
    recording_report,
    report_beside,
    report_in_job,
)

PID = os.getpid()
IN_JOB = {"RANK": "1", "WORLD_SIZE": "2"}  # what a launcher sets for each rank it starts


# -- a recording's files ----------------------------------------------------------------------
def test_a_runs_spool_lies_beside_its_report_named_with_graphdoctors_pid(tmp_path: Path) -> None:
    files = RunFiles.of_run(tmp_path / "r.json", streamed=False)
    assert files.spool == tmp_path / f"r.json.{PID}.spool"
    assert (files.tail, files.fault) == (tmp_path / f"r.json.{PID}.tail",
                                         tmp_path / f"r.json.{PID}.fault")
    assert files.spools() == [files.spool] and files.ranks() == [files]


def test_a_linked_reports_spool_lies_beside_the_file_it_points_at(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "latest.json").symlink_to(tmp_path / "results" / "run-7.json")
    files = RunFiles.of_run(tmp_path / "latest.json", streamed=False)
    assert files.spool == tmp_path / "results" / f"latest.json.{PID}.spool"


def test_a_streamed_reports_spool_goes_to_the_temporary_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert RunFiles.of_run(Path("/dev/null"), streamed=True).spool == \
        tmp_path / f"null.{PID}.spool"
    monkeypatch.setenv("TMPDIR", str(tmp_path / "gone"))  # skipped: /tmp is next
    assert run_files.temporary_folder() != tmp_path / "gone"


def test_an_in_process_recording_and_a_compare_run_name_their_spools_their_own_way(
        tmp_path: Path) -> None:
    assert RunFiles.of_recording(tmp_path / "t.json").spool == tmp_path / "t.json.spool"
    assert RunFiles.of_compare_run(tmp_path, 3).spool == tmp_path / "3.spool"
    assert RunFiles.of_compare_run(tmp_path, 3).tail == tmp_path / "3.tail"


def test_each_rank_records_to_a_spool_of_its_own(tmp_path: Path) -> None:
    files = RunFiles.of_run(tmp_path / "r.json", streamed=False, nproc=2)
    ranks = files.ranks()
    assert [f.spool.name for f in ranks] == [f"r.json.{PID}.rank0.spool",
                                             f"r.json.{PID}.rank1.spool"]
    assert [f.tail.name for f in ranks] == [f"r.json.{PID}.rank0.tail",
                                            f"r.json.{PID}.rank1.tail"]
    assert [f.fault.name for f in ranks] == [f"r.json.{PID}.rank0.fault",
                                             f"r.json.{PID}.rank1.fault"]
    assert files.spools() == [f.spool for f in ranks]
    assert all(f.nproc == 1 and f.ranks() == [f] for f in ranks)


def test_a_rank_names_its_files_as_the_parent_does_from_what_the_parent_passes(
        tmp_path: Path) -> None:
    files = RunFiles.of_run(tmp_path / "r.json", streamed=False, nproc=2)
    passed = RunFiles.from_plain(json.loads(json.dumps(files.plain())))
    assert [passed.own({"RANK": str(rank)}) for rank in (0, 1)] == files.ranks()


def test_a_run_of_one_process_keeps_its_names_whatever_rank_it_runs_as(tmp_path: Path) -> None:
    """The script may run inside someone else's job (RANK set), and a report's name may hold
    "{rank}": the child names its files as the parent did."""
    files = RunFiles.of_run(tmp_path / "r{rank}.json", streamed=False)
    assert files.own({"RANK": "3"}) == files.of_rank(3) == files
    assert files.own({}) == files


@pytest.mark.parametrize("plain", [{}, {"spool": None, "nproc": 1}, {"spool": "s", "nproc": "x"},
                                   "s.spool", None])
def test_what_graphdoctor_never_passes_is_refused(plain: object) -> None:
    with pytest.raises((KeyError, TypeError, ValueError)):
        RunFiles.from_plain(plain)  # type: ignore[arg-type]


def test_the_baseline_run_records_to_a_spool_of_its_own(tmp_path: Path) -> None:
    files = RunFiles.of_run(tmp_path / "r.json", streamed=False)
    baseline = files.baseline()
    assert baseline.spool == tmp_path / f"r.json.{PID}.baseline.spool"
    assert baseline.tail == tmp_path / f"r.json.{PID}.baseline.tail"
    assert baseline.keep is None


# -- --keep-spool ----------------------------------------------------------------------------
def test_kept_spools_are_named_per_rank_and_for_the_baseline(tmp_path: Path) -> None:
    keep = tmp_path / "x.spool.jsonl.gz"
    ranked = RunFiles.of_run(tmp_path / "r.json", streamed=False, nproc=2, keep=keep)
    assert [f.keep for f in ranked.ranks()] == [tmp_path / "x.rank0.spool.jsonl.gz",
                                                tmp_path / "x.rank1.spool.jsonl.gz"]
    one = RunFiles.of_run(tmp_path / "r.json", streamed=False, keep=keep)
    assert one.keep == keep and [f.keep for f in one.ranks()] == [keep]
    assert one.baseline().keep == tmp_path / "x.baseline.spool.jsonl.gz"


def test_a_kept_name_without_spool_in_it_takes_its_mark_at_the_end(tmp_path: Path) -> None:
    """The ranks' kept spools never share a name."""
    keep = tmp_path / "kept"
    ranked = RunFiles(tmp_path / "s.spool", 2, keep)
    assert [f.keep for f in ranked.ranks()] == [tmp_path / "kept.rank0", tmp_path / "kept.rank1"]
    assert RunFiles(tmp_path / "s.spool", 1, keep).baseline().keep == tmp_path / "kept.baseline"


def test_only_the_last_spool_in_a_name_is_marked(tmp_path: Path) -> None:
    files = RunFiles.of_run(tmp_path / "a.spool.json", streamed=False)
    assert files.baseline().spool.name == f"a.spool.json.{PID}.baseline.spool"


@pytest.mark.parametrize(("name", "compressed"), [("r.json.gz", True), ("s.spool.gz", True),
                                                  ("r.json", False), ("r.gz.json", False),
                                                  ("gz", False)])
def test_a_name_ending_in_gz_means_gzip(name: str, compressed: bool) -> None:
    assert gzipped(name) is compressed and gzipped(Path("/x") / name) is compressed


# -- reports -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "environ", "nproc", "expected"), [
    ("r.json", IN_JOB, 1, "r.rank1.json"),
    ("r.json.gz", IN_JOB, 1, "r.rank1.json.gz"),
    ("report", IN_JOB, 1, "report.rank1"),
    ("r.json", {}, 1, "r.json"),  # no launcher
    ("r.json", {"RANK": "0", "WORLD_SIZE": "1"}, 1, "r.json"),  # a job of one
    ("r.json", {"RANK": "0", "WORLD_SIZE": ""}, 1, "r.json"),
    ("r.json", IN_JOB, 2, "r.json"),  # graphdoctor starts the ranks: one report for all
    ("r-rank{RANK}.json", IN_JOB, 1, "r-rank{RANK}.json"),  # the user named the rank
])
def test_a_rank_in_a_launchers_job_writes_a_report_of_its_own(
        name: str, environ: dict[str, str], nproc: int, expected: str) -> None:
    assert report_in_job(Path("out") / name, nproc, environ) == Path("out") / expected


@pytest.fixture
def one_second(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs started in one second, in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run_files.time, "strftime", lambda fmt: "20250102-030405")
    return tmp_path


def test_runs_started_in_one_second_each_get_a_default_name_of_their_own(
        one_second: Path) -> None:
    names = [default_report("scripts/train.py", 1) for _ in range(3)]
    assert names == [Path("graphdoctor-train-20250102-030405.json"),
                     Path("graphdoctor-train-20250102-030405-2.json"),
                     Path("graphdoctor-train-20250102-030405-3.json")]
    assert all((one_second / name).is_file() and not (one_second / name).stat().st_size
               for name in names)


@pytest.mark.parametrize(("target", "stem"), [("mod", "mod"), ("project/", "project"),
                                              ("/", "run")])
def test_a_default_name_says_the_script_or_module(one_second: Path, target: str,
                                                  stem: str) -> None:
    assert default_report(target, 1) == Path(f"graphdoctor-{stem}-20250102-030405.json")


def test_a_ranks_default_name_is_numbered_before_its_rank(
        one_second: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in IN_JOB.items():
        monkeypatch.setenv(key, value)
    assert [default_report("t.py", 1) for _ in range(2)] == [
        Path("graphdoctor-t-20250102-030405.rank1.json"),
        Path("graphdoctor-t-20250102-030405-2.rank1.json")]


@pytest.mark.parametrize(("name", "beside"), [("same.json", ["same-2.json", "same-3.json"]),
                                              ("r.json.gz", ["r-2.json.gz", "r-3.json.gz"]),
                                              ("r.rank1.json", ["r.rank1-2.json",
                                                                "r.rank1-3.json"]),
                                              ("report", ["report-2", "report-3"])])
def test_a_report_written_meanwhile_by_another_run_gets_a_name_beside_it(
        tmp_path: Path, name: str, beside: list[str]) -> None:
    (tmp_path / name).write_text("another run's")
    assert [report_beside(tmp_path / name).name for _ in beside] == beside
    assert (tmp_path / name).read_text() == "another run's"


def test_an_in_process_recording_is_named_after_its_label(tmp_path: Path) -> None:
    assert [recording_report(tmp_path, "tests/x.py::test[a/b]").name for _ in range(2)] == [
        "tests-x.py-test-a-b.json", "tests-x.py-test-a-b-2.json"]
    assert recording_report(tmp_path, "../..").name == "recording.json"
    assert recording_report(tmp_path, "a" * 200).name == "a" * 120 + ".json"


def test_compare_keeps_a_report_per_variant_and_repeat(tmp_path: Path) -> None:
    assert compare_report(tmp_path, "graphs-off", 0) == tmp_path / "graphs-off-1.json"


# -- claiming a name ---------------------------------------------------------------------------
def test_a_name_taken_by_anything_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text("")
    (tmp_path / "r-2.json").mkdir()
    (tmp_path / "r-3.json").symlink_to(tmp_path / "nowhere")  # even a dangling link
    assert claim(tmp_path / "r.json") == tmp_path / "r-4.json"


def test_names_claimed_at_once_are_all_different(tmp_path: Path) -> None:
    claimed: list[Path] = []
    start = threading.Barrier(8)

    def claim_one() -> None:
        start.wait()
        claimed.append(claim(tmp_path / "r.json"))

    threads = [threading.Thread(target=claim_one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(p.name for p in claimed) == sorted(["r.json"] + [f"r-{n}.json"
                                                                  for n in range(2, 9)])


def test_once_every_name_is_taken_the_error_says_which_and_what_to_do(tmp_path: Path) -> None:
    for number in range(1, 4):
        numbered(tmp_path / "r.json.gz", number).write_text("")
    with pytest.raises(GraphDoctorError) as raised:
        claim(tmp_path / "r.json.gz", last=3)
    assert str(raised.value) == "3 reports named r*.json.gz exist already; name this one with -o"
    with pytest.raises(GraphDoctorError, match="record into another report_dir"):
        claim(tmp_path / "r.json.gz", last=3, hint="record into another report_dir")


def test_a_run_tries_a_thousand_names_before_it_asks_for_one(tmp_path: Path) -> None:
    assert MOST_NAMES_TRIED == 1000
    for number in range(2, MOST_NAMES_TRIED + 1):
        numbered(tmp_path / "r.json", number).write_text("")
    with pytest.raises(GraphDoctorError, match="^1000 reports named .*r\\*.json exist"):
        report_beside(tmp_path / "r.json")


@pytest.mark.parametrize("where", ["missing/r.json", "file/r.json"])
def test_a_folder_that_takes_no_file_is_one_clear_error(tmp_path: Path, where: str) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(UnwritableFolderError, match=f"^cannot write in {tmp_path}/"):
        claim(tmp_path / where)


def test_a_read_only_folder_is_one_clear_error(tmp_path: Path) -> None:
    shut = tmp_path / "shut"
    shut.mkdir(mode=0o555)
    try:
        if os.access(shut, os.W_OK):
            pytest.skip("writes through permissions here (root)")
        with pytest.raises(UnwritableFolderError, match="Permission denied"):
            claim(shut / "r.json")
    finally:
        shut.chmod(0o755)
