"""A run keeps the digests of the files its report cites, in the report and in a kept spool;
the spool, opened later on this machine, shows a line only while its file is unchanged."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphdoctor.report.io import load

pytestmark = pytest.mark.slow

SCRIPT = """\
    import torch


    def step(x):
        return x.sum().item() / 0  # the line the report cites


    step(torch.ones(3))
"""
CITED = "    return x.sum().item() / 0  # the line the report cites"


def graphdoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphdoctor", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("digests")
    (folder / "train.py").write_text(textwrap.dedent(SCRIPT))
    done = graphdoctor("run", "-q", "--keep-spool", "kept.spool.jsonl", "-o", "r.json",
                       "train.py", cwd=folder)
    assert done.returncode == 1, done.stderr  # the script's own exit code
    return folder


def cited_lines(folder: Path, report: str) -> dict[str, dict[str, str]]:
    done = graphdoctor("report", "-f", "json", report, cwd=folder)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout)["sources"])


def test_the_report_holds_the_digest_of_each_file_it_read(recorded: Path) -> None:
    report = load(recorded / "r.json")
    script = str(recorded / "train.py")
    data = (recorded / "train.py").read_bytes()
    assert [(s.file, s.size, s.sha256) for s in report.trace.meta.sources] == [
        (script, len(data), hashlib.sha256(data).hexdigest())]
    assert report.source_line(script, 5) == CITED


def test_a_kept_spool_opened_here_shows_what_the_run_showed(recorded: Path) -> None:
    assert cited_lines(recorded, "kept.spool.jsonl") == cited_lines(recorded, "r.json")
    assert CITED in cited_lines(recorded, "kept.spool.jsonl")[str(recorded / "train.py")].values()


def test_a_file_changed_since_is_not_shown_and_the_notes_say_why(recorded: Path) -> None:
    script = recorded / "train.py"
    original = script.read_text()
    script.write_text(original.replace("/ 0", "/ 1"))
    try:
        assert cited_lines(recorded, "kept.spool.jsonl") == {}
        text = graphdoctor("report", "kept.spool.jsonl", cwd=recorded).stdout
        assert "source lines: not read for 1 file (changed since the recording)" in text
    finally:
        script.write_text(original)
