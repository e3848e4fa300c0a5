"""A run's report with the processes its script started: each a report of its own, named by
its label wherever it is shown (the end-of-run lines, the text and markdown reports, the
gates, the viewer's summary), kept in the JSON as the schema says and redacted with the rest.

The child is the GPU recording of ``item_in_capture`` (a capture that fails at its line 15),
named as a process the script started would be."""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import pytest

from graphdoctor.errors import GraphDoctorError
from graphdoctor.report import children, gates
from graphdoctor.report.document import Report
from graphdoctor.report.io import loads
from graphdoctor.report.redact import REDACTED, redact
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.summary import outcome_lines
from graphdoctor.report.render.text import render_text
from graphdoctor.trace.endings import SIGNALLED
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.screens.summary import outcome_text
from tests.report.helpers import plain, real
from tests.report.test_schema import STRICT
from tests.reports import as_child
from tests.tui.helpers import plain as drawn

CHILD_PID = 4242
COMMAND = ("/usr/bin/python3", "-u", "item_in_capture.py", "--key=value1234")
LABEL = "child 4242 (python3 -u item_in_capture.py --key=value1234)"


def family() -> Report:
    """launch_bound's run, whose script started item_in_capture's process."""
    script = real("launch_bound")
    return dataclasses.replace(script, children=[
        as_child(real("item_in_capture"), CHILD_PID, script.trace.meta.pid, COMMAND)])


def test_a_child_is_named_by_its_pid_rank_and_command() -> None:
    child = family().children[0]
    assert children.label(child.trace.meta) == LABEL
    ranked = dataclasses.replace(child.trace.meta, backend="nccl", rank=1)
    assert children.label(ranked).startswith("child 4242, rank 1 (python3 ")
    long = children.command(["/x/python3", "-c", "import torch\n" + "x = 1\n" * 40])
    assert len(long) == children.COMMAND_WIDTH and long.startswith('python3 -c "import torch x')
    assert children.started_by(family(), child) == "the script"


def test_the_end_of_the_run_names_the_child_in_each_of_its_lines() -> None:
    lines = outcome_lines(family())
    assert f"graphdoctor: {LABEL} exited with code 1" in "\n".join(lines)
    assert any(line.startswith(f"graphdoctor: in {LABEL}: graph 0 (torch.cuda.graph, "
                               "item_in_capture.py:13): capture failed") for line in lines)
    assert lines[-1].startswith("graphdoctor: recorded too: 1 process the script started")
    assert not any("recorded too" in line for line in outcome_lines(real("launch_bound")))


def test_text_and_markdown_show_the_childs_verdict_and_finding_at_its_line() -> None:
    text = render_text(family(), width=100)
    section = text[text.index("Processes the script started (1)"):]
    assert "child 4242 (python3" in section and "started by the script: exited with code 1" \
        in " ".join(section.split())
    assert "GD101" in section and "   15 | scale = y.abs().max().item()" in section
    markdown = render_markdown(family())
    assert "#### Processes the script started (1)" in markdown
    assert "scale = y.abs().max().item()" in markdown.split("Processes the script started")[1]


def test_gates_trip_on_a_child_but_its_own_end_is_not_the_scripts() -> None:
    report = family()
    crashed = as_child(real("launch_bound"), 77, report.trace.meta.pid)
    crashed.trace.status = dataclasses.replace(crashed.trace.status, complete=False,
                                               reason=SIGNALLED, signal=11)
    report.children.append(crashed)
    (trip,) = gates.check(report, ["capture-failed"])
    assert trip.reason.startswith(f"in {LABEL}: ")
    assert [t.condition for t in gates.check(report, ["GD101", "incomplete"])] == ["GD101"]
    assert gates.check(real("launch_bound"), ["GD101"]) == []


def test_the_json_keeps_each_child_as_the_schema_says_and_reads_back() -> None:
    data = plain(family())
    jsonschema.validate(data, STRICT)
    (child,) = data["children"]
    assert child["label"] == LABEL and child["trace"]["meta"]["parent_pid"] == \
        data["trace"]["meta"]["pid"]
    again = loads(json.dumps(data).encode())
    (read,) = again.children
    assert read.trace.meta.command == COMMAND and read.trace.meta.pid == CHILD_PID
    assert [f.id for f in read.diagnosis.findings] == ["GD101"]
    assert read.sources == family().children[0].sources


def test_a_childs_references_are_checked_as_the_scripts_are() -> None:
    data = plain(family())
    data["children"][0]["trace"]["stacks"] = [[10**6]]
    with pytest.raises(GraphDoctorError, match="damaged"):
        loads(json.dumps(data).encode())


def test_redaction_reaches_every_child() -> None:
    shown = redact(family())
    meta = shown.children[0].trace.meta
    assert meta.command[1:] == ("-u", "item_in_capture.py", REDACTED)
    assert meta.hostname == REDACTED and meta.cwd == "."
    assert "value1234" not in json.dumps(plain(shown))


def test_one_child_opens_as_a_report_of_its_own() -> None:
    report = family()
    assert children.child_report(report, CHILD_PID) is report.children[0]
    with pytest.raises(GraphDoctorError, match=r"no process 5 .*pids 4242"):
        children.child_report(report, 5)


def test_the_viewers_summary_lists_each_child_and_how_to_open_it() -> None:
    shown = drawn(outcome_text(ReportView(family())), width=200)
    assert f"{LABEL}, started by the script: exited with code 1" in shown
    assert "graphdoctor view REPORT --child PID" in shown
