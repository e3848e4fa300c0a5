"""graphdoctor report and export, through the command line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphdoctor.cli import main
from graphdoctor.demo import demo_path
from graphdoctor.report import io
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.text import render_text
from tests.conftest import RECORDINGS
from tests.report.helpers import hand_made, plain
from tests.reports import report_for


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    return io.save(hand_made(), tmp_path / "run.json.gz")


def invoke(*args: object) -> Result:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_report_prints_the_summary_without_colour_when_piped(saved: Path) -> None:
    result = invoke("report", saved, "--width", "90")
    assert result.stdout == render_text(io.load(saved), width=90)
    assert "\x1b[" not in result.stdout


def test_report_markdown(saved: Path, tmp_path: Path) -> None:
    out = tmp_path / "issue.md"
    invoke("report", saved, "--format", "markdown", "-o", out)
    assert out.read_text() == render_markdown(io.load(saved))


def test_report_json_writes_a_loadable_report(saved: Path, tmp_path: Path) -> None:
    out = tmp_path / "copy.json"
    invoke("report", saved, "-f", "json", "-o", out)
    assert json.loads(out.read_text()) == plain(hand_made())


def test_report_redact_shares_a_redacted_copy(saved: Path, tmp_path: Path) -> None:
    out = tmp_path / "share.json.gz"
    invoke("report", saved, "-f", "json", "--redact", "-o", out)
    shared = io.load(out)
    assert shared.redacted and shared.trace.meta.cwd == "."
    assert "/work/main" not in gzip.decompress(out.read_bytes()).decode()


def test_export_writes_a_chrome_trace_in_the_current_folder(
        saved: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    result = invoke("export", saved)
    trace = json.loads((tmp_path / "here" / "run.trace.json").read_text())
    assert trace["traceEvents"] and trace["otherData"]["generator"].startswith("graphdoctor")
    assert "to run.trace.json;" in result.stderr
    assert not saved.with_name("run.trace.json").exists()


def test_export_of_a_bundled_demo_writes_nothing_into_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    demo = demo_path("launch_bound")
    before = sorted(demo.parent.iterdir())
    invoke("export", demo)
    assert (tmp_path / "launch_bound.trace.json").exists()
    assert sorted(demo.parent.iterdir()) == before


def test_export_options(saved: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.json.gz"
    invoke("export", saved, "--format", "chrome-trace", "--phase", "capture", "--redact", "-o", out)
    trace = json.loads(gzip.decompress(out.read_bytes()))
    assert trace["otherData"]["phases"] == "capture"
    assert "/work/main" not in json.dumps(trace)
    to_stdout = invoke("export", saved, "-o", "-")
    assert json.loads(to_stdout.stdout)["traceEvents"]


def test_a_file_that_cannot_be_written_is_one_line_and_exit_2(saved: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(saved), "-o",
                                       str(tmp_path / "no" / "such" / "dir.md")])
    assert result.exit_code == 2
    assert result.stderr.startswith("graphdoctor: error: ") and "cannot write" in result.stderr


def test_the_group_help_lists_the_commands() -> None:
    help_text = CliRunner().invoke(main, ["--help"]).output
    for command in ("report", "export", "diff"):
        assert f"graphdoctor {command} " in help_text


@pytest.mark.parametrize("command", ["run", "report", "export"])
def test_redact_help_says_which_words_leave_free_text(command: str) -> None:
    from graphdoctor.report.redact import MIN_VALUE_LENGTH

    help_text = " ".join(CliRunner().invoke(main, [command, "--help"]).output.split())
    assert "host and user names" in help_text and "home folder" in help_text
    assert f"{MIN_VALUE_LENGTH} characters or more" in help_text and "cuda" in help_text


@pytest.mark.parametrize("compressed", [True, False], ids=["gzip", "plain"])
def test_report_reads_a_kept_spool_as_run_would(tmp_path: Path, compressed: bool) -> None:
    """All but the source lines, which the recording (from before digests were kept)
    cannot vouch for: none is read from this disk, and the notes say so."""
    recording = RECORDINGS / "launch_bound.spool.jsonl.gz"
    spool = recording if compressed else tmp_path / "run.spool.jsonl"
    if not compressed:
        spool.write_bytes(gzip.decompress(recording.read_bytes()))
    shown = invoke("report", spool, "--width", "200").stdout.splitlines()
    as_run = render_text(report_for("launch_bound"), width=200).splitlines()
    note = shown.index("Not recorded") + 1
    assert shown[note].strip() == "source lines: not read for 1 file (no digest in the recording)"
    assert [line for line in shown if line not in as_run] == shown[note - 1:note + 1]
    assert [line for line in as_run if line not in shown] == [
        line for line in as_run if "with torch.cuda.graph(g):" in line]


def test_report_reads_a_spool_cut_short(tmp_path: Path) -> None:
    whole = gzip.decompress((RECORDINGS / "tiny_graph.spool.jsonl.gz").read_bytes())
    cut = tmp_path / "cut.spool.jsonl"
    cut.write_bytes(whole[: len(whole) // 2])
    result = invoke("report", cut)
    assert "tiny_graph.py" in result.stdout and "graph 0" in result.stdout
