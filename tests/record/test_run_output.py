"""Where ``graphdoctor run`` writes: a report of its own for every run, even when runs start
together, and a folder that cannot take the report is said before the script starts."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphdoctor.report.io import load

pytestmark = pytest.mark.slow
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def start_runs(tmp_path: Path, *options: str, codes: tuple[int, ...] = (3, 4)
               ) -> list[subprocess.CompletedProcess[str]]:
    """Runs of train.py started together, one per code; each exits with the code it is
    given."""
    (tmp_path / "train.py").write_text("import sys, time\ntime.sleep(1)\n"
                                       "sys.exit(int(sys.argv[1]))\n")
    time.sleep(1 - time.time() % 1)  # at the start of a second: both name it alike
    runs = [subprocess.Popen([sys.executable, "-m", "graphdoctor", "run", "-q", *options,
                              "train.py", str(code)], cwd=tmp_path, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for code in codes]
    outputs = [run.communicate(timeout=120) for run in runs]
    return [subprocess.CompletedProcess(run.args, run.returncode, *output)
            for run, output in zip(runs, outputs)]


def assert_one_run(report: Path) -> None:
    """The report's exit code is that of the run whose arguments it holds."""
    trace = load(report).trace
    assert trace.status.exit_code == int(trace.meta.argv[-1]), trace.meta.argv


def test_runs_started_together_each_get_a_report_of_their_own(tmp_path: Path) -> None:
    done = start_runs(tmp_path)
    assert [run.returncode for run in done] == [3, 4], [run.stderr for run in done]
    reports = list(tmp_path.glob("graphdoctor-train-*.json"))
    assert len(reports) == 2
    for report in reports:
        assert_one_run(report)
    assert not list(tmp_path.glob("*.spool")) and not list(tmp_path.glob("*.fault"))


def test_runs_given_the_same_report_name_each_keep_their_report(tmp_path: Path) -> None:
    """The audit's 8 runs with one -o all said "report written" while one file remained:
    each run that finds -o written by another meanwhile writes beside it, and says so."""
    codes = (3, 4, 5, 6)
    done = start_runs(tmp_path, "-o", "same.json", codes=codes)
    assert [run.returncode for run in done] == list(codes), [run.stderr for run in done]
    reports = sorted(tmp_path.glob("same*.json"))
    assert [r.name for r in reports] == ["same-2.json", "same-3.json", "same-4.json",
                                         "same.json"]
    assert sorted(load(r).trace.status.exit_code for r in reports) == list(codes)
    for report in reports:
        assert_one_run(report)
    moved = [run.stderr for run in done if "another run wrote same.json" in run.stderr]
    assert len(moved) == 3, [run.stderr for run in done]
    assert not list(tmp_path.glob("*.spool"))


def run_script(folder: Path, *options: str, source: str = "open('ran', 'w').close()\n",
               cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    (folder / "script.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "graphdoctor", "run", *options,
                           str(folder / "script.py")], cwd=cwd or folder, capture_output=True,
                          text=True, timeout=120)


def test_a_report_written_over_a_file_says_so(tmp_path: Path) -> None:
    first = run_script(tmp_path, "-o", "report.json")
    assert first.returncode == 0 and "held a file" not in first.stderr, first.stderr
    second = run_script(tmp_path, "-o", "report.json")
    assert second.returncode == 0, second.stderr
    assert ("graphdoctor: report.json held a file before this run; this run's report "
            "replaced it") in second.stderr
    assert load(tmp_path / "report.json").trace.status.complete


def test_a_missing_report_folder_is_one_line_before_the_script_runs(tmp_path: Path) -> None:
    done = run_script(tmp_path, "-o", str(tmp_path / "no" / "such" / "report.json"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"graphdoctor: error: no such folder for the report: {tmp_path / 'no' / 'such'}"]
    assert not (tmp_path / "ran").exists()


LOCK = """
import os, subprocess
os.chmod({folder!r}, 0o555)
if os.geteuid() == 0:  # root writes through permissions, not into an immutable folder
    subprocess.run(["chattr", "+i", {folder!r}], check=False, capture_output=True)
"""


def lock_code(folder: Path) -> str:
    """Code that makes FOLDER read-only, for the test or a script to run."""
    return LOCK.format(folder=str(folder))


@pytest.fixture
def locked() -> Iterator[list[Path]]:
    """The folders a test makes read-only, made writable again after it."""
    folders: list[Path] = []
    yield folders
    for folder in folders:
        subprocess.run(["chattr", "-i", str(folder)], check=False, capture_output=True)
        folder.chmod(0o755)


def lock(folder: Path, locked: list[Path]) -> None:
    """Make FOLDER read-only, or skip the test where that cannot be done."""
    folder.mkdir(exist_ok=True)
    locked.append(folder)
    subprocess.run([sys.executable, "-c", lock_code(folder)], check=True)
    try:
        (folder / "probe").touch()
    except OSError:
        return
    pytest.skip("cannot make a folder read-only here")


@pytest.mark.parametrize("default_name", [False, True], ids=["-o", "default name"])
def test_a_read_only_report_folder_is_one_line_before_the_script_runs(
        tmp_path: Path, locked: list[Path], default_name: bool) -> None:
    shut = tmp_path / "shut"
    lock(shut, locked)
    options = () if default_name else ("-o", str(shut / "report.json"))
    done = run_script(tmp_path, *options, cwd=shut)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith(f"graphdoctor: error: cannot write in {'.' if default_name else shut}")
    assert not (tmp_path / "ran").exists()


def test_a_report_that_cannot_be_written_keeps_the_exit_code_and_the_recording(
        tmp_path: Path, locked: list[Path]) -> None:
    lock(tmp_path / "probe", locked)
    out = tmp_path / "out"
    out.mkdir()
    locked.append(out)
    done = run_script(tmp_path, "-o", str(out / "report.json"),
                      source=lock_code(out) + "raise SystemExit(3)\n")
    assert done.returncode == 3
    [spool] = out.glob("report.json.*.spool")
    assert f"the raw recording is kept at {spool}" in done.stderr
    assert "Traceback" not in done.stderr and not (out / "report.json").exists()


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
def test_a_report_sent_to_dev_null_leaves_dev_as_it_was(tmp_path: Path) -> None:
    """As root, `-o /dev/null` replaced the machine's /dev/null, and its spool was made
    beside it, in /dev."""
    before, listing = os.stat("/dev/null"), sorted(os.listdir("/dev"))
    done = run_script(tmp_path, "-q", "-o", "/dev/null")
    assert done.returncode == 0 and (tmp_path / "ran").exists(), done.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
    assert sorted(os.listdir("/dev")) == listing


def test_a_report_sent_to_a_link_writes_its_target(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "latest.json").symlink_to(tmp_path / "results" / "run-7.json")
    done = run_script(tmp_path, "-q", "-o", str(tmp_path / "latest.json"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "latest.json").is_symlink()
    assert load(tmp_path / "results" / "run-7.json").trace.status.complete


# -- --keep-spool is written as -o is --------------------------------------------------------
def test_a_kept_spool_sent_to_a_fifo_streams_into_it(tmp_path: Path) -> None:
    """`--keep-spool PATH` renamed the spool over whatever PATH was: a FIFO, a device, a
    link (as root, `--keep-spool /dev/null` destroyed /dev/null)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    done = run_script(tmp_path, "-q", "-o", "r.json", "--keep-spool", str(fifo))
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode) and received[0].startswith(b'["hello",')


def test_a_kept_spool_sent_to_a_link_writes_its_target(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "run.spool").write_text("old")
    (tmp_path / "kept.spool").symlink_to(tmp_path / "shared" / "run.spool")
    done = run_script(tmp_path, "-q", "-o", "r.json", "--keep-spool", "kept.spool")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "kept.spool").is_symlink()
    assert load(tmp_path / "shared" / "run.spool").trace.status.complete


@pytest.mark.skipif(not IS_ROOT, reason="making a device node needs root")
def test_a_kept_spool_sent_to_a_device_leaves_the_device(tmp_path: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    disk = tmp_path / "loop"
    os.mknod(disk, stat.S_IFBLK | 0o600, os.makedev(7, 200))
    done = run_script(tmp_path, "-q", "-o", "r.json", "--keep-spool", str(null))
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(null.stat().st_mode) and null.stat().st_rdev == os.makedev(1, 3)
    refused = run_script(tmp_path, "-q", "-o", "r.json", "--keep-spool", str(disk))
    assert refused.returncode == 2 and "block device" in refused.stderr
    assert refused.stderr.count("\n") == 1 and stat.S_ISBLK(disk.stat().st_mode)


@pytest.mark.skipif(not IS_ROOT, reason="giving a file to another user needs root")
def test_a_report_written_over_another_user_s_keeps_its_owner(tmp_path: Path) -> None:
    theirs = tmp_path / "report.json"
    theirs.write_text("old")
    os.chown(theirs, 4242, 4242)
    theirs.chmod(0o640)
    done = run_script(tmp_path, "-q", "-o", str(theirs))
    assert done.returncode == 0, done.stderr
    info = theirs.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4242, 4242, 0o640)
    assert load(theirs).trace.status.complete


def test_a_report_named_with_245_characters_gets_its_spool(tmp_path: Path) -> None:
    """The spool beside it took its name and 13 characters more: too long for any file."""
    name = "r" * 240 + ".json"
    done = run_script(tmp_path, "-q", "-o", name, "--keep-spool", name + ".spool.gz")
    assert done.returncode == 0, done.stderr
    assert load(tmp_path / name).trace.status.complete
    assert load(tmp_path / (name + ".spool.gz")).trace.status.complete
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("rr")) == [
        name, name + ".spool.gz"]  # nothing else left beside them
