"""A spool is text anyone can write: opening one (``report``, ``view``, ``export``) never
shows a file of the reader's that the recording does not vouch for, and never costs more
memory or time than a report of its size may."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphdoctor.cli import main
from graphdoctor.files.untrusted import MIN_MEMORY_BUDGET
from graphdoctor.report import source_lines
from graphdoctor.report.io import load
from graphdoctor.tui.report_view import ReportView
from tests.conftest import RECORDINGS
from tests.report.hostile_spools import (
    HERE,
    HUGE_RECORDS,
    RECORDING,
    deeply_nested,
    digest_of,
    empty_members,
    endless_line,
    not_a_number,
    records,
    with_lines,
    write,
    wrong_digest,
)

SECRET = "hf_b6d1c0ffee5ecret0a1b2c3d4e5f6a7b8c9"
# Every command that shows what a spool holds, as a ticket's reader would run it.
COMMANDS = (["report"], ["report", "-f", "markdown"], ["report", "-f", "json", "--redact"],
            ["report", "-f", "json"], ["export", "-o", "-"], ["view"])
# A cited line of the culprit, as the reports show it once read.
CULPRIT_CODE = "scale = y.abs().max().item()"
RECORDING_TEXT = gzip.decompress(RECORDING.read_bytes())


def outputs(spool: Path) -> list[str]:
    """What each command prints for ``spool``; each must succeed."""
    printed = []
    for command in COMMANDS:
        result = CliRunner().invoke(main, [*command, str(spool)], catch_exceptions=False)
        assert result.exit_code == 0, (command, result.output)
        printed.append(result.output)
    return printed


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A recording's folder, with the script it ran and a secret of the reader's beside it."""
    folder = tmp_path / "work" / "project"
    folder.mkdir(parents=True)
    (folder / "train.py").write_text(f"import torch\n{CULPRIT_CODE}\n")
    (tmp_path / "home" / ".aws").mkdir(parents=True)
    (tmp_path / "home" / ".aws" / "credentials").write_text(f"aws_secret = {SECRET}\n")
    return folder


def test_a_file_the_recording_vouches_for_is_shown(project: Path, tmp_path: Path) -> None:
    """The control: without it, "nothing shown" below could mean nothing is ever shown."""
    script = project / "train.py"
    spool = write(tmp_path / "r.spool", records(str(project), str(script), line=2,
                                                 digests=(digest_of(script),)))
    assert all(CULPRIT_CODE in printed for printed in outputs(spool)[:2])


@pytest.mark.parametrize("case", ["no digest", "wrong digest", "another host", "changed"])
def test_a_file_in_the_recording_s_folder_is_read_only_as_recorded(
        project: Path, tmp_path: Path, case: str) -> None:
    script = project / "train.py"
    digest = {"no digest": (), "wrong digest": (wrong_digest(str(script)),)}.get(
        case, (digest_of(script),))
    host = "elsewhere" if case == "another host" else HERE
    spool = write(tmp_path / "r.spool", records(str(project), str(script), host, 2, digest))
    if case == "changed":
        script.write_text(f"import torch\n{CULPRIT_CODE}  # edited\n")
    for printed in outputs(spool):
        assert CULPRIT_CODE not in printed
    assert "source lines: not read for 1 file" in outputs(spool)[0]


@pytest.mark.parametrize("where", ["outside the folder", "claimed folder /", "via a link"])
def test_a_file_outside_the_recording_s_folder_is_never_read(
        project: Path, tmp_path: Path, where: str) -> None:
    """Even with its true digest, which a stranger who knew the file could write."""
    secret = tmp_path / "home" / ".aws" / "credentials"
    cited, cwd = str(secret), str(project)
    if where == "claimed folder /":
        cwd = "/"
    elif where == "via a link":
        (project / "notes.py").symlink_to(secret)
        cited = str(project / "notes.py")
    spool = write(tmp_path / "r.spool", records(cwd, cited, digests=(digest_of(secret, cited),)))
    for printed in outputs(spool):
        assert SECRET not in printed


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "FIFO"])
def test_a_device_or_a_fifo_cited_is_not_read(tmp_path: Path, project: Path, device: str) -> None:
    if device == "FIFO":
        os.mkfifo(project / "pipe.py")
        device = str(project / "pipe.py")
    spool = write(tmp_path / "r.spool", records(str(project), device,
                                                 digests=(wrong_digest(device),)))
    started = time.monotonic()
    outputs(spool)
    assert time.monotonic() - started < 60  # a read of /dev/zero would never end


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_the_reader_s_environment_never_reaches_a_report(tmp_path: Path) -> None:
    """The audit's case: a spool citing /proc/self/environ, opened by a reader with a token
    in their environment, printed it (in markdown, and in JSON even with --redact)."""
    spool = write(tmp_path / "r.spool", records("/", "/proc/self/environ",
                                                 digests=(wrong_digest("/proc/self/environ"),)))
    env = {**os.environ, "HF_TOKEN": SECRET}
    for command in COMMANDS[:3]:
        done = subprocess.run([sys.executable, "-m", "graphdoctor", *command, str(spool)],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr


def test_the_reader_s_host_and_folders_are_what_decide(tmp_path: Path) -> None:
    assert not source_lines.is_project_folder("/")
    assert not source_lines.is_project_folder("/root")
    assert not source_lines.is_project_folder("/home/alice")
    assert not source_lines.is_project_folder("/proc/self")
    assert source_lines.is_project_folder("/home/alice/model")
    assert source_lines.is_project_folder(str(tmp_path))


def _peak_rss_of(command: list[str]) -> tuple[subprocess.CompletedProcess[str], int, float]:
    """Run ``command`` in a child; its result, its peak memory in bytes and its time."""
    script = ("import resource, subprocess, sys, time\n"
              "t = time.monotonic()\n"
              "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
              "t = time.monotonic() - t\n"
              "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,"
              " t)\n"
              "sys.stderr.write(done.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script, *command], capture_output=True,
                          text=True, timeout=600)
    code, peak_kib, seconds = done.stdout.split()
    return (subprocess.CompletedProcess(command, int(code), "", done.stderr),
            int(peak_kib) * 1024, float(seconds))


GRAPHDOCTOR = [sys.executable, "-m", "graphdoctor"]


@pytest.mark.slow
def test_a_gzip_spool_of_gigabytes_without_a_newline_is_refused_within_budget(
        tmp_path: Path) -> None:
    """6 MB on disk, 6 GiB once decompressed, one line: it reached 3.2 GB and a
    MemoryError traceback."""
    spool = endless_line(tmp_path / "endless.spool.jsonl.gz")
    done, peak, _ = _peak_rss_of([*GRAPHDOCTOR, "report", str(spool)])
    assert done.returncode == 2
    assert done.stderr.startswith("graphdoctor: error: ") and done.stderr.count("\n") == 1
    assert "too much for a recording" in done.stderr and "gunzip" in done.stderr
    assert peak < MIN_MEMORY_BUDGET, peak


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["spool", "report"])
def test_many_empty_gzip_members_read_in_linear_time(tmp_path: Path, kind: str) -> None:
    """400,000 empty members (8 MB) took 146 s to read; bench/hostile_reads.py times it."""
    first = (RECORDING_TEXT if kind == "spool" else b"{}")
    path = empty_members(tmp_path / f"members.{kind}.gz", first)
    done, _, seconds = _peak_rss_of([*GRAPHDOCTOR, "report", str(path)])
    assert done.returncode == (0 if kind == "spool" else 2), done.stderr
    assert seconds < 30, seconds  # linear: about a second; quadratic: minutes


def test_a_line_nested_too_deeply_is_counted_not_raised(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(deeply_nested(tmp_path / "deep.spool"))],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "1 spool records could not be read" in result.output


def test_a_line_too_long_is_skipped_as_it_streams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                  ) -> None:
    from graphdoctor.trace.spool import file as spool

    monkeypatch.setattr(spool, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "long.spool"
    lines = RECORDING_TEXT.decode().splitlines()
    path.write_text("\n".join([lines[0], '["note","x","' + "y" * 5000 + '"]', *lines[1:]]))
    result = CliRunner().invoke(main, ["report", str(path)], catch_exceptions=False)
    assert result.exit_code == 0 and "1 spool records could not be read" in result.output
    assert "y" * 1000 not in result.output




def _within_budget(command: list[str]) -> subprocess.CompletedProcess[str]:
    """``graphdoctor COMMAND`` with a GiB of address space and a minute: a reader that sized
    a list by a stranger's number runs out of either."""
    gib = 2**30
    return subprocess.run([*GRAPHDOCTOR, *command], capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (gib, gib)))


@pytest.mark.slow
@pytest.mark.parametrize("what", HUGE_RECORDS)
def test_an_id_or_a_count_costs_no_more_than_the_file(tmp_path: Path, what: str) -> None:
    spool = with_lines(tmp_path / "huge.spool", [json.dumps(HUGE_RECORDS[what])])
    for command in (["report"], ["export", "-o", "-"], ["report", "-f", "json"]):
        started = time.monotonic()
        done = _within_budget([*command, str(spool)])
        assert done.returncode == 0, (command, done.stderr[-2000:])
        assert time.monotonic() - started < 30


def test_an_id_past_the_recording_s_is_left_out_and_counted(tmp_path: Path) -> None:
    spool = with_lines(tmp_path / "huge.spool", [json.dumps(HUGE_RECORDS[what])
                                                 for what in ("a frame's id", "a stack's id")])
    result = CliRunner().invoke(main, ["report", str(spool)], catch_exceptions=False)
    assert result.exit_code == 0 and "2 spool records could not be read" in result.output


def test_nan_and_infinity_in_a_spool_are_refused_as_in_a_report(tmp_path: Path) -> None:
    """They crashed the viewer's memory lane, and made merge write a report graphdoctor
    then refused."""
    spool = not_a_number(tmp_path / "nan.spool")
    for command in (["report"], ["export", "-o", "-"], ["report", "-f", "json"]):
        result = CliRunner().invoke(main, [*command, str(spool)], catch_exceptions=False)
        assert result.exit_code == 0, (command, result.output)
    assert "spool records could not be read" in CliRunner().invoke(
        main, ["report", str(spool)]).output
    view = ReportView(load(spool))
    view.prepare_timeline()
    assert view.lanes


def test_a_merge_of_spools_with_nan_writes_a_report_that_opens(tmp_path: Path) -> None:
    ranks = sorted(RECORDINGS.glob("dist4_one_rank_capture_fails.rank*.spool.jsonl.gz"))
    given = [not_a_number(tmp_path / f"r{n}.spool", source) for n, source in enumerate(ranks)]
    merged = CliRunner().invoke(main, ["merge", *map(str, given), "-o",
                                       str(tmp_path / "job.json")], catch_exceptions=False)
    assert merged.exit_code == 0, merged.output
    opened = CliRunner().invoke(main, ["report", str(tmp_path / "job.json")],
                                catch_exceptions=False)
    assert opened.exit_code == 0, opened.output
