"""``graphdoctor fix`` from the command line, on committed GPU recordings moved into a folder
of this machine as if recorded there: the patch on stdout, what it does on stderr, --apply
writing only an unchanged file the report names, and --verify's run again (on a CPU, where
the patched script cannot capture: so never proven)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphdoctor.cli import main
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


def fix(*args: object) -> Result:
    # lines as wide as they come: what is said is checked here, its wrapping in test_columns
    return CliRunner(env={"COLUMNS": "1000"}).invoke(main, ["fix", *map(str, args)],
                                                     catch_exceptions=False)


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

    def edited_first(patch: files.FilePatch, cwd: str) -> Path:
        target.write_text("print('mine')\n")
        return writing(patch, cwd)

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


@pytest.mark.slow
def test_verify_runs_the_patched_copy_and_claims_nothing_it_did_not_see(tmp_path: Path) -> None:
    """On this CPU the patched script cannot capture: its graph is gone from the run again,
    a worse verdict, so the patch is not proven (exit 1), whatever became of the finding."""
    report = recorded_here("sync_between_replays", tmp_path)
    original = script(tmp_path, "sync_between_replays").read_text()
    result = fix(report, "--verify", "--timeout", "120")
    assert result.exit_code == 1, result.output
    assert "running the patched copy: graphdoctor run --timeout 240.0 " in result.stderr
    assert "→ no such graph (worse)" in result.stderr and "not proven" in result.stderr
    after = Path(result.stderr.rsplit("the run again's report: ", 1)[1].strip())
    assert io.load(after).trace.meta.target.endswith("sync_between_replays.py")
    assert os.path.dirname(io.load(after).trace.meta.target) != str(tmp_path)
    assert script(tmp_path, "sync_between_replays").read_text() == original  # the copy's


def test_verify_runs_only_the_script_the_report_recorded(tmp_path: Path) -> None:
    """A report is anyone's text: its command may name another script of this folder (here
    one it holds no digest of); --verify runs nothing then."""
    report = recorded_here("sync_between_replays", tmp_path)
    data = json.loads(report.read_text())
    data["trace"]["meta"]["argv"] = ["run", "fixtures/scripts/launch_bound.py", "--delete"]
    report.write_text(json.dumps(data))
    result = fix(report, "--verify")
    assert result.exit_code == 2 and "running the patched copy" not in result.stderr
    assert "--verify runs only a script this report recorded" in result.stderr
