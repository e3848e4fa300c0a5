"""What the scenarios whose misuse happens in a child process must show: the script's own
trace and the trace of each process it started that graphdoctor followed (kept beside the
script's recording as ``<name>.procPID.spool.jsonl.gz``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphdoctor.diagnose import diagnose
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import CAPTURE_FAILED, CHILD_TARGET
from tests.expectations import EXPECTATIONS, graphs, user_line

ChildCheck = Callable[[Trace, list[Trace], dict[str, Any]], None]
CHILD_EXPECTATIONS: dict[str, ChildCheck] = {}


def expect_children(name: str) -> Callable[[ChildCheck], ChildCheck]:
    def register(check: ChildCheck) -> ChildCheck:
        CHILD_EXPECTATIONS[name] = check
        return check

    return register


def only_child(script: Trace, kids: list[Trace]) -> Trace:
    """The one process the script started, followed and named as such."""
    assert len(kids) == 1, [kid.meta.command for kid in kids]
    (kid,) = kids
    assert kid.meta.target_kind == CHILD_TARGET and kid.meta.parent_pid == script.meta.pid
    return kid


@expect_children("child_item_in_capture")
def _child_item(script: Trace, kids: list[Trace], note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0, "the script saw its child fail, as it meant to"
    assert not graphs(script) and not script.exceptions
    kid = only_child(script, kids)
    assert kid.meta.command[-1].endswith("item_in_capture.py")
    assert kid.status.complete and kid.status.exit_code == 1
    EXPECTATIONS["item_in_capture"](kid, {"exit_code": 1})  # as when run on its own
    diagnosis = diagnose(kid)
    assert [v.kind for v in diagnosis.verdicts] == ["failed"]
    (sync,) = [f for f in diagnosis.findings if f.name == "sync-in-capture"]
    assert sync.location is not None and (sync.location.file.rsplit("/", 1)[-1],
                                          sync.location.line) == ("item_in_capture.py", 15)


@expect_children("child_capture_on_legacy_stream")
def _child_legacy(script: Trace, kids: list[Trace], note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0
    kid = only_child(script, kids)
    assert kid.meta.command[1] == "-c" and kid.status.complete
    (graph,) = graphs(kid)
    assert graph.status == CAPTURE_FAILED
    assert any("must be captured on a non-default stream" in link.message
               for exception in kid.exceptions for link in exception.chain)
    diagnosis = diagnose(kid)
    assert [v.kind for v in diagnosis.verdicts] == ["failed"]
    assert "default-stream-capture" in {f.name for f in diagnosis.findings}
    # code run by python -c has no file: no line of the child's is the user's
    assert user_line(kid, graph.stack) is None
