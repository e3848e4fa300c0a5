"""The viewer shows a line its report did not keep by reading it from disk, only by the rule
for a stranger's recording (same host, a Python file under the recording's folder, regular,
small, its SHA-256 the report's digest), saying so; each file once, on first need; a file
the rule refuses is never opened, and why it was refused is shown instead.

The report here is a real recording's, its user frames moved to a script in a temporary
project folder, passed through its JSON and left with no kept lines: every frame is one
the report did not keep, as an allocation's or a sync's frame usually is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphdoctor.report import io, source_lines
from graphdoctor.report.disk_lines import FROM_DISK, UNCHANGED
from graphdoctor.report.document import Report
from graphdoctor.report.source_lines import CHANGED_SINCE, OTHER_MACHINE, OUTSIDE_FOLDER
from graphdoctor.trace.assemble import assemble
from graphdoctor.tui.capture_story import story
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.rendering import details_view
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.screens.graph_story import story_option
from tests.hostile import leaks
from tests.report.hostile_spools import HERE, digest_of, records
from tests.tui.helpers import plain

CODE = "scale = y.abs().max().item()"
LINE = 3  # CODE's line in the script
SCRIPT = f"import torch\ny = torch.ones(4)\n{CODE}\nprint(scale)\n"
SECRET = "hf_0ffee5ecret0a1b2c3d4e5f6a7b8c9d0e1"
CAPTURE = EventRef("graphs", 0)  # its stack's user frame is the cited line


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A recording's folder holding its script, and a secret of the reader's outside it."""
    folder = tmp_path / "work" / "project"
    folder.mkdir(parents=True)
    (folder / "train.py").write_text(SCRIPT)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keys.py").write_text(f"token = '{SECRET}'\n")
    return folder


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the rule's reader opens, in order."""
    paths: list[str] = []
    reading = source_lines.read_regular

    def read_regular(path: str, follow: bool = True) -> bytes | None:
        paths.append(path)
        return reading(path, follow)

    monkeypatch.setattr(source_lines, "read_regular", read_regular)
    return paths


def report_citing(cwd: Path, cited: Path, host: str = HERE) -> Report:
    """A report read from its JSON whose user frames are ``cited``:LINE, with the true
    digest of ``cited`` in its meta and no line kept."""
    digests = (digest_of(cited),)
    report = Report(assemble(records(str(cwd), str(cited), host, LINE, digests)))
    return io.loads(io.dumps(report), "a report")


def shown(view: ReportView, ref: EventRef = CAPTURE) -> str:
    return plain(details_view(view, view.describe(ref)), width=200)


def test_a_line_of_an_unchanged_file_is_read_from_disk_and_said_so(
        project: Path, opened: list[str]) -> None:
    script = project / "train.py"
    view = ReportView(report_citing(project, script))
    assert view.report.sources == {} and opened == []  # nothing read on opening
    text = shown(view)
    assert CODE in text and f"{FROM_DISK}: {UNCHANGED}" in text
    assert "print(scale)" in text  # the lines around it too
    assert opened == [os.path.realpath(script)]


def test_each_file_is_read_once_however_often_it_is_shown(
        project: Path, opened: list[str]) -> None:
    view = ReportView(report_citing(project, project / "train.py"))
    texts = [shown(view), shown(view, EventRef("syncs", 0))]
    lines = story(view, -1, view.trace.graphs[0])
    assert all(CODE in text for text in texts)
    assert lines[0].code == CODE and lines[0].code_from_disk
    assert FROM_DISK in plain(story_option(lines[0]).prompt)
    assert len(opened) == 1


def test_a_file_changed_since_the_recording_is_not_shown_and_the_reason_is(
        project: Path, opened: list[str]) -> None:
    script = project / "train.py"
    view = ReportView(report_citing(project, script))
    script.write_text(SCRIPT.replace(CODE, f"{CODE}  # edited"))
    text = shown(view)
    assert CODE not in text and CHANGED_SINCE in text
    assert story(view, -1, view.trace.graphs[0])[0].code == ""


@pytest.mark.parametrize("where", ["/etc/passwd", "outside the folder", "via a link"])
def test_a_file_outside_the_recording_s_folder_is_never_opened(
        project: Path, tmp_path: Path, opened: list[str], where: str) -> None:
    """Even with its true digest, which a stranger who knew the file could write."""
    secret = tmp_path / "elsewhere" / "keys.py"
    cited = {"/etc/passwd": Path("/etc/passwd"), "outside the folder": secret,
             "via a link": project / "keys.py"}[where]
    if where == "via a link":
        cited.symlink_to(secret)
    text = shown(ReportView(report_citing(project, cited)))
    assert OUTSIDE_FOLDER in text
    assert opened == [] and SECRET not in text and "root:" not in text


def test_a_report_from_another_machine_reads_nothing(project: Path, opened: list[str]) -> None:
    view = ReportView(report_citing(project, project / "train.py", host="someone-elses"))
    text = shown(view)
    assert OTHER_MACHINE in text and CODE not in text and opened == []


def test_a_hostile_line_read_from_disk_is_shown_plain(project: Path) -> None:
    """A file the report vouches for is a stranger's text too: its controls never reach the
    terminal and its markup is shown as typed."""
    script = project / "train.py"
    markup = "[bold]b[/bold] [@click=app.quit]q[/]"
    script.write_text(SCRIPT.replace(CODE, f"{CODE}  # \x1b]0;owned\x07\x9b2J\u202e {markup}"))
    view = ReportView(report_citing(project, script))
    texts = [shown(view), plain(story_option(story(view, -1, view.trace.graphs[0])[0]).prompt)]
    for text in texts:
        assert markup in text and not leaks(text), leaks(text)
