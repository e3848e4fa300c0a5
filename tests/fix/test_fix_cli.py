"""``graphdoctor fix`` from the command line, on committed GPU recordings moved into a folder
of this machine as if recorded there (and run from that folder): the patch on stdout, what it
does on stderr, --apply writing only an unchanged file the report names under the current
folder, and --verify's run again of the command given to it (on a CPU, where the patched
script cannot capture: so never proven)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphdoctor.cli import fix_cmd, main
from graphdoctor.cli.fix_cmd import NEEDS_COMMAND
from graphdoctor.fix import verify
from graphdoctor.fix.files import INSTALLED, NOT_HERE
from graphdoctor.report import io
from graphdoctor.report.source_lines import CHANGED_SINCE, OTHER_MACHINE
from tests.reports import SCRIPTS, report_for

RECORDED_IN = "/work/main"  # where the GPU machine ran the fixture scripts


def recorded_here(name: str, folder: Path, host: str | None = None) -> Path:
    """The report of ``name`` with its script at ``folder``/fixtures/scripts, recorded on this
    machine (or ``host``) in ``folder``: its paths and host rewritten, its digests kept."""
    (folder / "fixtures").mkdir(parents=True, exist_ok=True)
    shutil.copytree(SCRIPTS, folder / "fixtures" / "scripts", dirs_exist_ok=True)
    data = json.loads(io.dumps(report_for(name)))
    text = json.dumps(data).replace(str(SCRIPTS), str(folder / "fixtures" / "scripts"))
    data = json.loads(text.replace(RECORDED_IN, str(folder)))
    data["trace"]["meta"].update(hostname=host or socket.gethostname(), cwd=str(folder))
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def fix(*args: object, given: str | None = None) -> Result:
    # lines as wide as they come: what is said is checked here, its wrapping in test_columns
    return CliRunner(env={"COLUMNS": "1000"}).invoke(main, ["fix", *map(str, args)],
                                                     input=given, catch_exceptions=False)


@pytest.fixture(autouse=True)
def in_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fix runs where the person is: here, the folder the run was recorded in."""
    monkeypatch.chdir(tmp_path)


def script(folder: Path, name: str) -> Path:
    return folder / "fixtures" / "scripts" / f"{name}.py"


def test_the_patch_goes_to_stdout_and_what_it_does_to_stderr(tmp_path: Path) -> None:
    result = fix(recorded_here("real_adam_default_capture", tmp_path))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("--- a/fixtures/scripts/real_adam_default_capture.py\n")
    assert "+opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)" in \
        result.stdout
    assert "GD108 exception-in-capture: make the optimizer at line 10 with capturable=True" \
        in result.stderr


def test_apply_writes_the_file_and_keeps_its_permissions(tmp_path: Path) -> None:
    report = recorded_here("pageable_copy_in_capture", tmp_path)
    target = script(tmp_path, "pageable_copy_in_capture")
    target.chmod(0o640)
    printed = fix(report).stdout
    result = fix(report, "--apply")
    assert result.exit_code == 0 and f"patched {target}" in result.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.read_text() != (SCRIPTS / target.name).read_text()
    again = fix(report, "--apply")  # the file is no longer what the run read
    assert again.exit_code == 1 and CHANGED_SINCE in again.stderr, again.output
    assert printed and target.read_text().count("weights = torch.tensor") == 1


def test_a_file_changed_since_the_run_is_never_patched(tmp_path: Path) -> None:
    report = recorded_here("freed_input_after_capture", tmp_path)
    target = script(tmp_path, "freed_input_after_capture")
    target.write_text(target.read_text() + "# edited since\n")
    result = fix(report, "--apply")
    assert result.exit_code == 1 and CHANGED_SINCE in result.stderr
    assert target.read_text().endswith("# edited since\n")


def test_a_report_from_another_machine_patches_nothing(tmp_path: Path) -> None:
    report = recorded_here("frozen_lr_scheduler", tmp_path, host="someone-elses-machine")
    before = script(tmp_path, "frozen_lr_scheduler").read_text()
    result = fix(report, "--apply")
    assert result.exit_code == 1 and OTHER_MACHINE in result.stderr
    assert script(tmp_path, "frozen_lr_scheduler").read_text() == before


def test_a_file_changed_between_reading_and_writing_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphdoctor.fix import files

    report = recorded_here("sync_between_replays", tmp_path)
    target = script(tmp_path, "sync_between_replays")
    writing = files.write

    def edited_first(patch: files.FilePatch, here: str | None = None) -> Path:
        target.write_text("print('mine')\n")
        return writing(patch, here)

    monkeypatch.setattr(files, "write", edited_first)
    result = fix(report, "--apply")
    assert result.exit_code == 2 and CHANGED_SINCE in result.stderr
    assert target.read_text() == "print('mine')\n"


def test_only_the_rules_asked_for(tmp_path: Path) -> None:
    report = recorded_here("real_frozen_lr_manual_timm", tmp_path)
    assert fix(report, "--rule", "GD101").exit_code == 1
    assert fix(report, "--rule", "gd305").stdout.count("fill_(lr)") == 1


def test_apply_and_verify_together_is_a_usage_error(tmp_path: Path) -> None:
    result = fix(recorded_here("item_in_capture", tmp_path), "--apply", "--verify")
    assert result.exit_code == 2 and "not both" in result.stderr


# -- a report is anyone's text: fix runs and writes only what the person names --------------
def test_apply_writes_nothing_outside_the_current_folder(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The report says where it ran; the person says where to patch, by being there."""
    report = recorded_here("pageable_copy_in_capture", tmp_path / "project")
    before = script(tmp_path / "project", "pageable_copy_in_capture").read_text()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    result = fix(report, "--apply")
    assert result.exit_code == 1 and NOT_HERE in result.stderr, result.output
    assert script(tmp_path / "project", "pageable_copy_in_capture").read_text() == before


def in_a_virtual_environment(tmp_path: Path) -> Path:
    """A virtual environment's site-packages, holding the fixtures' scripts as if they were
    a package's files, and a report recorded there (its folder, its digests)."""
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return tmp_path / "venv" / "lib" / "python3.12" / "site-packages"


def test_apply_writes_nothing_in_a_virtual_environment(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's report named a file of pip's, and fix --apply patched the venv's
    misc.py: even run from that folder, an installation's files are never patched."""
    packages = in_a_virtual_environment(tmp_path)
    report = recorded_here("pageable_copy_in_capture", packages)
    before = script(packages, "pageable_copy_in_capture").read_text()
    monkeypatch.chdir(packages)
    result = fix(report, "--apply")
    assert result.exit_code == 1 and INSTALLED in result.stderr, result.output
    assert script(packages, "pageable_copy_in_capture").read_text() == before


@pytest.mark.skipif(not (hasattr(os, "geteuid") and os.geteuid() == 0),
                    reason="giving a file to another user needs root")
def test_apply_keeps_each_file_s_owner(tmp_path: Path) -> None:
    """Patched as root, the venv's misc.py became root's."""
    report = recorded_here("pageable_copy_in_capture", tmp_path)
    target = script(tmp_path, "pageable_copy_in_capture")
    os.chown(target, 4242, 4242)
    target.chmod(0o664)
    assert fix(report, "--apply").exit_code == 0
    info = target.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4242, 4242, 0o664)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], str]]:
    """Every command --verify starts (none is: each answers as a run that left no report),
    with the folder it would run in."""
    started: list[tuple[list[str], str]] = []

    def record(command: list[str], cwd: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        started.append((command, cwd))
        return subprocess.CompletedProcess(command, 1)

    monkeypatch.setattr(verify.subprocess, "run", record)
    return started


def test_verify_never_runs_what_the_report_names(tmp_path: Path, runs: list[object],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's report: its folder a venv's site-packages, its script a package's, its
    arguments and ranks its own; fix --verify ran it. Without a command of the person's, and
    no one to ask, it runs nothing."""
    packages = in_a_virtual_environment(tmp_path)
    report = recorded_here("sync_between_replays", packages)
    data = json.loads(report.read_text())
    data["trace"]["meta"]["argv"] = ["run", "--nproc-per-node", "4",
                                     "fixtures/scripts/sync_between_replays.py", "download"]
    report.write_text(json.dumps(data))
    for here in (tmp_path, packages):
        monkeypatch.chdir(here)
        result = fix(report, "--verify")
        assert result.exit_code in (1, 2) and runs == [], result.output
        assert "running the patched copy" not in result.stderr


def test_verify_without_a_command_on_no_terminal_is_one_line(tmp_path: Path,
                                                             runs: list[object]) -> None:
    result = fix(recorded_here("sync_between_replays", tmp_path), "--verify")
    assert result.exit_code == 2 and runs == []
    assert result.stderr.splitlines()[-1] == f"graphdoctor: error: {NEEDS_COMMAND}"


def test_verify_runs_the_command_given_here_and_nothing_of_the_report_s(
        tmp_path: Path, runs: list[tuple[list[str], str]]) -> None:
    report = recorded_here("sync_between_replays", tmp_path)
    data = json.loads(report.read_text())
    data["trace"]["meta"].update(argv=["run", "--nproc-per-node", "4", "elsewhere.py"])
    report.write_text(json.dumps(data))
    given = ["fixtures/scripts/sync_between_replays.py", "--steps", "3"]
    result = fix(report, "--verify", "--timeout", "30", "--", *given)
    assert result.exit_code == 1, result.output
    [(command, cwd)] = runs
    assert cwd == str(tmp_path) and "--nproc-per-node" not in command
    assert command[-3:] == [command[-3], "--steps", "3"]
    assert command[-3].endswith("/scripts/sync_between_replays.py")
    assert not command[-3].startswith(str(tmp_path))  # the patched copy, not the file
    assert "running the patched copy: graphdoctor run -q -o " in result.stderr
    assert f"--timeout 30 {command[-3]} --steps 3\n" in result.stderr  # the exact command


def test_a_command_for_verify_is_a_python_script(tmp_path: Path, runs: list[object]) -> None:
    report = recorded_here("sync_between_replays", tmp_path)
    for given in (["no_such_script.py"], [shutil.which("true") or "/bin/true"]):
        result = fix(report, "--verify", "--", *given)
        assert result.exit_code == 2 and runs == [], result.output
    assert fix(report, "--", "x.py").exit_code == 2  # only --verify runs a command


@pytest.mark.parametrize("answer, runs_it", [("\n", False), ("n\n", False), ("y\n", True)])
def test_on_a_terminal_verify_asks_before_running_the_report_s_script(
        tmp_path: Path, runs: list[tuple[list[str], str]], monkeypatch: pytest.MonkeyPatch,
        answer: str, runs_it: bool) -> None:
    monkeypatch.setattr(fix_cmd, "_interactive", lambda: True)
    result = fix(recorded_here("sync_between_replays", tmp_path), "--verify", given=answer)
    shown = result.stderr.split("script:\n  ", 1)[1].split("\n", 1)[0]
    assert shown.startswith("graphdoctor run -q -o /") and "Run it? [y/N]" in result.stderr
    assert shown.endswith("--timeout 600 " + (runs[0][0][-1] if runs else shown.split()[-1]))
    assert shown.endswith("/scripts/sync_between_replays.py")  # the patched copy
    assert bool(runs) == runs_it and result.exit_code == (1 if runs_it else 2), result.output


def test_on_a_terminal_a_script_outside_the_folder_is_not_offered(
        tmp_path: Path, runs: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fix_cmd, "_interactive", lambda: True)
    report = recorded_here("sync_between_replays", tmp_path / "project")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    result = fix(report, "--rule", "GD203", "--verify", given="y\n")
    assert result.exit_code in (1, 2) and runs == [] and "Run it?" not in result.stderr


@pytest.mark.slow
def test_verify_runs_the_patched_copy_and_claims_nothing_it_did_not_see(tmp_path: Path) -> None:
    """On this CPU the patched script cannot capture: its graph is gone from the run again,
    a worse verdict, so the patch is not proven (exit 1), whatever became of the finding."""
    report = recorded_here("sync_between_replays", tmp_path)
    original = script(tmp_path, "sync_between_replays").read_text()
    result = fix(report, "--verify", "--timeout", "120", "--",
                 "fixtures/scripts/sync_between_replays.py")
    assert result.exit_code == 1, result.output
    assert "running the patched copy: graphdoctor run -q -o " in result.stderr
    assert " --timeout 120 " in result.stderr
    assert "→ no such graph (worse)" in result.stderr and "not proven" in result.stderr
    after = Path(result.stderr.rsplit("the run again's report: ", 1)[1].strip())
    assert io.load(after).trace.meta.target.endswith("sync_between_replays.py")
    assert os.path.dirname(io.load(after).trace.meta.target) != str(tmp_path)
    assert script(tmp_path, "sync_between_replays").read_text() == original  # the copy's
