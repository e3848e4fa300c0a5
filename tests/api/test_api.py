"""graphdoctor.check and graphdoctor.recording on a CPU: the report they write, the recorder
removed after them whatever the block did, a recording inside another, and results (from
the GPU recordings in fixtures/) asserted on with the --fail-on conditions."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
# recordings on a CPU warn that they hold no graphs: what these tests record
pytestmark = pytest.mark.filterwarnings("ignore::graphdoctor.NoCudaWarning")

import graphdoctor  # noqa: E402
from graphdoctor import api  # noqa: E402
from graphdoctor.diagnose.findings import FASTER  # noqa: E402
from graphdoctor.errors import GraphDoctorError, NoCudaDevice  # noqa: E402
from graphdoctor.record import session  # noqa: E402
from graphdoctor.report.gates import CONDITIONS, TEST_CONDITIONS  # noqa: E402
from graphdoctor.report.io import load  # noqa: E402
from graphdoctor.trace.names import IN_PROCESS_TARGET, UNCAUGHT  # noqa: E402
from tests.api.conftest import changed_since  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tests.reports import report_for  # noqa: E402


def fixture_result(name: str, folder: Path) -> api.Result:
    """The result graphdoctor.check would give for one of the committed GPU recordings."""
    return api.result_of_report(report_for(name), folder / f"{name}.json", site="test:1")


# -- the recording and its report -------------------------------------------------------------
def test_a_recording_writes_the_report_graphdoctor_run_writes(tmp_path: Path) -> None:
    with graphdoctor.recording(tmp_path, name="a block") as rec:
        torch.ones(4).mul(2)
    result = rec.result
    assert result.report_path.parent == tmp_path and result.report_path.suffix == ".json"
    report = load(result.report_path)
    assert report.trace.meta.target == "a block"
    assert report.trace.meta.target_kind == IN_PROCESS_TARGET
    assert report.trace.status.complete and report.trace.status.exit_code == 0
    assert result.verdicts == () and result.speedup is None
    assert result.site == f"{Path(__file__).relative_to(Path.cwd())}:{rec.site.rsplit(':')[-1]}"
    assert [p.name for p in tmp_path.iterdir()] == [result.report_path.name]  # no spool left


def test_a_recording_in_a_folder_nobody_chose_says_where_its_report_is(
        capsys: pytest.CaptureFixture[str]) -> None:
    with graphdoctor.recording(name="a block") as rec:
        torch.ones(4).mul(2)
    said = capsys.readouterr().err
    assert f"graphdoctor: report written to {rec.result.report_path}\n" in said
    assert said == f"{rec.result}\n"  # what `graphdoctor run` says at its end
    rec.result.report_path.unlink()


def test_a_recording_in_a_chosen_folder_says_nothing(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with graphdoctor.recording(tmp_path):
        torch.ones(4).mul(2)
    assert capsys.readouterr().err == ""


def test_the_result_is_known_once_the_block_has_ended(tmp_path: Path) -> None:
    with graphdoctor.recording(tmp_path) as rec, pytest.raises(RuntimeError, match="ended"):
        rec.result  # noqa: B018 - the property raises


def test_an_exception_that_ends_the_block_is_raised_and_recorded(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bad input"), graphdoctor.recording(tmp_path) as rec:
        raise ValueError("bad input")
    trace = rec.result.report.trace
    assert [e.where for e in trace.exceptions] == [UNCAUGHT]
    assert trace.exceptions[0].chain[-1].message == "bad input"
    assert trace.status.exit_code == 1


def test_a_report_that_cannot_be_built_leaves_the_raw_recording(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> Any:
        raise ValueError("a rule broke")

    monkeypatch.setattr(api, "result_of_spool", broken)
    with pytest.raises(GraphDoctorError, match="raw recording is kept at .*spool"):
        with graphdoctor.recording(tmp_path, name="kept"):
            pass
    assert [p.name for p in tmp_path.iterdir()] == ["kept.json.spool"]


def test_a_spool_name_planted_as_a_link_is_never_written_through(tmp_path: Path) -> None:
    """An in-process recording appended its spool through a link planted at its name."""
    victim = tmp_path / "victim.txt"
    victim.write_text("theirs")
    (tmp_path / "planted.json.spool").symlink_to(victim)
    (tmp_path / "left.json.spool").write_text('["hello",{}]\n')  # an earlier one's, kept
    for name in ("planted", "left"):
        with graphdoctor.recording(tmp_path, name=name) as rec:
            pass
        assert rec.result.report_path.name == f"{name}-2.json"
    assert victim.read_text() == "theirs"
    assert (tmp_path / "left.json.spool").read_text() == '["hello",{}]\n'


def test_reports_of_one_name_do_not_overwrite_each_other(tmp_path: Path) -> None:
    paths = {api.reserve_report_path(tmp_path, "tests/x.py::test[a/b]") for _ in range(3)}
    assert sorted(p.name for p in paths) == ["tests-x.py-test-a-b-2.json",
                                            "tests-x.py-test-a-b-3.json",
                                            "tests-x.py-test-a-b.json"]


# -- the recorder leaves nothing behind ---------------------------------------------------------
@pytest.mark.parametrize("raises", [False, True], ids=["returns", "raises"])
def test_every_patch_is_undone_when_the_block_ends(
        raises: bool, tmp_path: Path, untouched_torch: dict[Any, Any]) -> None:
    original_compile = torch.compile
    with pytest.raises(KeyError) if raises else _nothing(), graphdoctor.recording(tmp_path):
        assert torch.compile is not original_compile  # recording: torch is patched
        assert changed_since(untouched_torch)
        if raises:
            raise KeyError("the block's own error")
    assert torch.compile is original_compile


def test_a_recording_that_cannot_start_leaves_nothing_behind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, untouched_torch: dict[Any, Any]) -> None:
    def fail(recorder: Any) -> None:
        raise OSError("no room")

    monkeypatch.setattr(session, "_watch_thread_exceptions", fail)
    with pytest.raises(OSError, match="no room"), graphdoctor.recording(tmp_path):
        pass


def test_a_recording_inside_another_joins_it(tmp_path: Path,
                                             untouched_torch: dict[Any, Any]) -> None:
    with graphdoctor.recording(tmp_path, name="outer") as outer:
        running = session.running()
        with graphdoctor.recording(tmp_path, name="inner") as inner:
            assert session.running() is running
            torch.zeros(2).add(1)
        assert session.running() is running and changed_since(untouched_torch)
    assert inner.result.report.trace.meta.target == "outer"  # the joined recording's
    assert inner.result.report.trace.status.complete
    assert outer.result.report_path != inner.result.report_path


def _nothing() -> Any:
    from contextlib import nullcontext

    return nullcontext()


# -- check -------------------------------------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize("compiled", [False, True])
def test_check_without_cuda_says_so_and_records_nothing(tmp_path: Path, compiled: bool) -> None:
    """A compiled function too: it would compile for the CPU, capture nothing and return an
    empty result; it is not even called."""
    calls: list[int] = []

    def double(x: Any) -> Any:
        calls.append(1)
        return x * 2

    fn = torch.compile(double, backend="eager") if compiled else double
    with pytest.raises(NoCudaDevice, match="no CUDA device"):
        graphdoctor.check(fn, torch.ones(2), report_dir=tmp_path)
    assert list(tmp_path.iterdir()) == [] and calls == []


COMPILED_RECORDING = """
import sys, warnings
import torch, graphdoctor
from torch._dynamo.callback import callback_handler

callbacks = (list(callback_handler.start_callbacks), list(callback_handler.end_callbacks))
double = torch.compile(lambda x: x * 2, backend="eager")
with warnings.catch_warnings(record=True) as warned:
    warnings.simplefilter("always", graphdoctor.NoCudaWarning)
    with graphdoctor.recording(sys.argv[1]) as rec:
        for _ in range(5):
            double(torch.ones(2))
assert (list(callback_handler.start_callbacks), list(callback_handler.end_callbacks)) \\
    == callbacks, "dynamo's callbacks were left registered"
compiles = [e for e in rec.result.report.trace.compile_events if e.kind == "compile"]
said = [str(w.message) for w in warned if w.category is graphdoctor.NoCudaWarning]
print(len(compiles), rec.result.verdicts, said)
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_recording_without_cuda_keeps_compile_events_and_warns(tmp_path: Path) -> None:
    """In a process of its own: compiling imports dynamo, which changes torch's logging."""
    script = tmp_path / "compiled.py"
    script.write_text(textwrap.dedent(COMPILED_RECORDING))
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    compiles, verdicts, said = done.stdout.split(maxsplit=2)
    assert int(compiles) >= 1 and verdicts == "()"  # compiled in the recording
    assert "no CUDA device; the recording at" in said and "compiled.py:10" in said
    assert "torch.compile's events only" in said


# -- results and their conditions ----------------------------------------------------------------
def test_the_default_conditions_are_fail_on_conditions_that_do_not_time() -> None:
    assert api.conditions(None) == TEST_CONDITIONS
    assert set(TEST_CONDITIONS) <= set(CONDITIONS)
    assert not {"neutral", "slower"} & set(TEST_CONDITIONS)
    assert api.conditions(["skipped", "GD101"]) == api.conditions("skipped, GD101")
    with pytest.raises(GraphDoctorError, match="unknown --fail-on condition 'fast'"):
        api.conditions("fast")


def test_a_failed_capture_fails_with_the_finding_the_users_line_and_the_report(
        tmp_path: Path) -> None:
    result = fixture_result("item_in_capture", tmp_path)
    assert [v.kind for v in result.verdicts] == ["failed"]
    with pytest.raises(api.GraphDoctorFailure) as failure:
        result.assert_ok(fail_on="capture-failed,skipped,rerecorded")
    message = str(failure.value)
    assert isinstance(failure.value, AssertionError)
    assert message.splitlines()[0] == ("graphdoctor: --fail-on capture-failed tripped for the "
                                       "recording at test:1")
    assert "GD101 `.item()` at item_in_capture.py:15 waits for the GPU" in message
    assert "item_in_capture.py:15: scale = y.abs().max().item()" in message
    assert f"report: {result.report_path}" in message
    assert [trip.condition for trip in failure.value.trips] == ["capture-failed"]


def test_a_skipped_compiled_function_trips_skipped_only(tmp_path: Path) -> None:
    result = fixture_result("compile_mutated_input", tmp_path)
    assert [trip.condition for trip in result.failures()] == ["skipped"]
    result.assert_ok(fail_on="capture-failed,rerecorded")
    with pytest.raises(api.GraphDoctorFailure, match="GD207 CUDA graphs skipped for step"):
        result.assert_ok()


def test_a_healthy_graph_passes_and_says_how_much_faster(tmp_path: Path) -> None:
    result = fixture_result("launch_bound", tmp_path)
    assert [v.kind for v in result.verdicts] == [FASTER]
    assert result.speedup == pytest.approx(7.54, abs=0.01)
    result.assert_ok(fail_on=[*TEST_CONDITIONS, "neutral", "slower", "error"])


def test_every_result_reaches_its_observers_until_they_stop(tmp_path: Path) -> None:
    seen: list[Path] = []
    stop = api.observe_results(lambda result: seen.append(result.report_path))
    with graphdoctor.recording(tmp_path) as first:
        pass
    stop()
    with graphdoctor.recording(tmp_path):
        pass
    assert seen == [first.result.report_path]


def test_importing_graphdoctor_imports_no_torch_and_finds_the_api_on_use() -> None:
    probe = ("import sys, graphdoctor\nassert 'torch' not in sys.modules\n"
             "assert 'graphdoctor.api' not in sys.modules\n"
             "assert graphdoctor.Result is __import__('graphdoctor.api').api.Result\n"
             "assert 'torch' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
