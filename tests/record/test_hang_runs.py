"""A run that hangs is explained: real CPU runs under ``--timeout`` that wait in a lock, a
queue, a sleep, a socket, a subprocess and a thread join each get a finding naming the
user's line and what it waited on, in ``run``'s last lines, ``report``, its markdown and
``view``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.widgets import OptionList

from graphdoctor.diagnose import waits
from graphdoctor.diagnose.findings import Finding
from graphdoctor.diagnose.rules import gd406_process_hang
from graphdoctor.report.io import load
from graphdoctor.report.render.markdown import escape
from tests.tui.helpers import app_for, plain

pytestmark = pytest.mark.slow

READY = "waiting now"  # each script prints it just before it blocks
# The time-out counts from the start, torch's import included (1.5 s on an idle core): on a
# busy machine 3 s can end a run before its script has reached the line it hangs at.
TIMEOUT_S = "6"


@dataclass(frozen=True)
class Hang:
    source: str
    line: int  # the line it blocks at
    kind: str  # what it waits on
    other: tuple[int, str] | None = None  # another thread's line and wait


HANGS = {
    "lock": Hang("""\
        import threading
        lock = threading.Lock()
        lock.acquire()
        print("waiting now", flush=True)
        lock.acquire()  # nobody releases it
        """, 5, waits.LOCK),
    "queue": Hang("""\
        import queue
        jobs = queue.Queue()
        print("waiting now", flush=True)
        jobs.get()
        """, 4, waits.QUEUE),
    "sleep": Hang("""\
        import time
        print("waiting now", flush=True)
        time.sleep(600)
        """, 3, waits.SLEEP),
    "socket": Hang("""\
        import socket
        mine, theirs = socket.socketpair()
        print("waiting now", flush=True)
        mine.recv(1)
        """, 4, waits.SOCKET),
    "subprocess": Hang("""\
        import subprocess
        child = subprocess.Popen(["sleep", "600"])
        print("waiting now", flush=True)
        child.wait()
        """, 4, waits.SUBPROCESS),
    "join": Hang("""\
        import threading, time
        def work():
            time.sleep(600)
        worker = threading.Thread(target=work)
        worker.start()
        print("waiting now", flush=True)
        worker.join()
        """, 7, waits.JOIN, other=(3, waits.SLEEP)),
}


@dataclass(frozen=True)
class Outputs:
    run: subprocess.CompletedProcess[str]
    report: Path
    text: str
    markdown: str


def script(name: str) -> str:
    return f"hang_{name}.py"  # never queue.py: it would shadow the module it imports


def graphdoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphdoctor", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def run_hang(folder: Path, name: str) -> Outputs:
    folder.mkdir()
    (folder / script(name)).write_text(textwrap.dedent(HANGS[name].source))
    done = graphdoctor("run", "--timeout", TIMEOUT_S, "-o", "r.json", script(name), cwd=folder)
    text = graphdoctor("report", "r.json", "--width", "200", cwd=folder).stdout
    markdown = graphdoctor("report", "r.json", "-f", "markdown", cwd=folder).stdout
    return Outputs(done, folder / "r.json", text, markdown)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outputs]:
    """Every scenario, two at a time (each run imports torch: a few seconds)."""
    root = tmp_path_factory.mktemp("hangs")
    with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        runs = {name: pool.submit(run_hang, root / name, name) for name in HANGS}
        return {name: run.result() for name, run in runs.items()}


def hang_finding(outputs: Outputs) -> Finding:
    findings = [f for f in load(outputs.report).diagnosis.findings if f.id == gd406_process_hang.ID]
    assert len(findings) == 1, [f.id for f in load(outputs.report).diagnosis.findings]
    return findings[0]


@pytest.mark.parametrize("name", sorted(HANGS))
def test_the_finding_names_the_line_and_the_wait(outputs: dict[str, Outputs], name: str) -> None:
    hang, result = HANGS[name], outputs[name]
    assert result.run.returncode == 124 and READY in result.run.stdout, result.run.stderr
    finding = hang_finding(result)
    assert finding.location is not None and finding.location.line == hang.line
    assert finding.location.code == textwrap.dedent(hang.source).splitlines()[hang.line - 1].strip()
    main = finding.measurements["threads"][0]
    assert main["thread"] == "the main thread" and main["waits_on"] == hang.kind
    assert f"{script(name)}:{hang.line} in <module>, waiting on {hang.kind}" in finding.title


def test_every_thread_of_the_user_is_named(outputs: dict[str, Outputs]) -> None:
    hang = HANGS["join"]
    assert hang.other is not None
    line, kind = hang.other
    threads = hang_finding(outputs["join"]).measurements["threads"]
    others = [(t["at"].split(" ")[0], t["waits_on"]) for t in threads[1:]]
    assert others == [(f"{script('join')}:{line}", kind)]


@pytest.mark.parametrize("name", sorted(HANGS))
def test_run_report_and_markdown_show_it(outputs: dict[str, Outputs], name: str) -> None:
    hang, result = HANGS[name], outputs[name]
    said = f"{script(name)}:{hang.line} in <module>, waiting on {hang.kind}"
    for shown, wanted in ((result.run.stderr, said), (result.text, said),
                          (result.markdown, escape(said))):
        assert gd406_process_hang.ID in shown and wanted in shown, shown


def test_the_text_report_shows_the_stacks_with_the_users_frames_first(
        outputs: dict[str, Outputs]) -> None:
    text = outputs["queue"].text
    stacks = text.split("Stacks when the run ended\n", 1)[1]
    lines = [line.strip() for line in stacks.splitlines() if line.strip()]
    assert lines[0].startswith(f"the main thread: {script('queue')}:4 in <module>")
    assert "queue.py:" in lines[1] and "in get" in lines[1]  # what it called, below it
    assert "graphdoctor" not in lines[0] + lines[1]


async def test_view_lists_the_hang_among_its_findings(outputs: dict[str, Outputs]) -> None:
    app = app_for(load(outputs["lock"].report))
    async with app.run_test(size=(160, 40)):
        findings = app.screen.query_one("#top-findings", OptionList)
        first = plain(findings.get_option_at_index(0).prompt, width=160)  # type: ignore[arg-type]
        assert "No findings" not in first and gd406_process_hang.ID in first, first
