"""Eager calls of what a capture outside PyTorch ran, timed for its verdict: the CUPTI layer
against the stand-in of test_cupti_layer.py, and the driver's events against a stand-in
whose GPU clock the script's eager step moves. The script runs under a Python with
sys.monitoring (3.12+), which the call-site watcher and the eager history need; the spool
it writes is read and diagnosed here. What a real driver measures is checked on a GPU by the
cupy_* fixtures' expectations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphdoctor.diagnose import diagnose, measure
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.assemble import assemble_file
from tests.record.test_calls import _python_with_monitoring, run_with_monitoring

SCRIPT = '''
import json, sys
from types import SimpleNamespace
from graphdoctor.record.cupti import graphs as cupti_graphs
from graphdoctor.record.cupti.eager import CuptiEager
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.spool.file import SpoolWriter
from tests.record.test_cupti_layer import EXEC, GRAPH, STREAM, FakeCupti

EAGER_NS, WITH_CUPY, TIMED_CALLS = int(sys.argv[2]), sys.argv[3] == "cupy", int(sys.argv[4])


class GpuClock:
    """The driver's event calls: an event reads a clock that eager work moves."""

    def __init__(self):
        self.now, self.at, self.streams, self.made = 0, {}, set(), 0

    def new_event(self):
        self.made += 1
        return self.made

    def record(self, event, stream):
        self.at[event] = self.now
        self.streams.add(stream)
        return 0  # CUDA_SUCCESS

    def done(self, event):
        return True

    def elapsed_ms(self, start, end):
        return (self.at[end] - self.at[start]) / 1e6

    def synchronize(self):
        pass


def step(gpu):
    gpu.now += EAGER_NS  # its kernels' time on the GPU


def end_capture():  # as CuPy's Stream.end_capture: called inside the capture, ending it
    for call in end + instantiate: cupti.callback(None, *call)


if WITH_CUPY:  # CuPy's current stream, as the timer asks it
    current = SimpleNamespace(ptr=STREAM)
    sys.modules["cupy"] = SimpleNamespace(cuda=SimpleNamespace(get_current_stream=lambda: current))
cupti, gpu = FakeCupti(), GpuClock()
spool = SpoolWriter(sys.argv[1])
recorder = Recorder(spool)
eager = CuptiEager(recorder, lambda: layer.state.latest_stream, gpu, TIMED_CALLS)
layer = cupti_graphs.CuptiGraphs(recorder, cupti, eager)
layer.start()
eager.install_history()
begin = cupti.prepare("cuStreamBeginCapture_v2", [STREAM, 0])
end = cupti.prepare("cuStreamEndCapture", [STREAM, cupti.out(GRAPH)])
instantiate = cupti.prepare("cuGraphInstantiateWithFlags", [cupti.out(EXEC), GRAPH, 0])
launches = [cupti.prepare("cuGraphLaunch", [EXEC, STREAM]) for _ in range(6)]
for _ in range(5):
    step(gpu)  # an eager loop before the capture: the history keeps it
for call in begin: cupti.callback(None, *call)
step(gpu)  # captured
end_capture()
for _ in range(5):
    step(gpu)  # and after it: the eager-call timer times it
for launch in launches:
    for call in launch: cupti.callback(None, *call)
layer.stop()
spool.close()
print(json.dumps(sorted(gpu.streams)))
'''

needs_monitoring = pytest.mark.skipif(_python_with_monitoring() is None,
                                      reason="needs Python 3.12+")


def recorded(tmp_path: Path, eager_ns: int, framework: str,
             timed_calls: int = 256) -> tuple[Any, list[int]]:
    spool = tmp_path / "run.spool.jsonl"
    done = run_with_monitoring(tmp_path, SCRIPT.replace("sys.argv[1]", repr(str(spool)))
                               .replace("sys.argv[2]", repr(str(eager_ns)))
                               .replace("sys.argv[3]", repr(framework))
                               .replace("sys.argv[4]", repr(str(timed_calls))))
    assert done.returncode == 0, done.stderr
    return assemble_file(spool), json.loads(done.stdout)


@needs_monitoring
def test_the_captured_function_is_the_graphs_callee_and_its_eager_calls_are_timed(
        tmp_path: Path) -> None:
    trace, streams = recorded(tmp_path, 100_000, "cupy")
    [graph] = trace.graphs
    # called inside the capture too, but still running when it ended: what ended it
    assert [trace.functions[fn].name for fn in graph.callees] == ["step"]
    assert streams == [0x1000]  # CuPy's current stream, every event
    m = measure.of_graph(TraceView(trace), graph)
    assert m.eager is not None and m.replay is not None
    # the warmup loop's calls, the cold first left out, and the calls after the capture
    assert m.eager.n == 4 + 5 and m.eager.median_us == pytest.approx(100.0)
    assert m.replay.n == 6 and m.replay.median_us == pytest.approx(25.0)
    assert m.replay_host is None  # a launch CUPTI saw has no host time
    assert m.speedup == pytest.approx(4.0)
    [verdict] = diagnose(trace).verdicts
    assert verdict.kind == "faster"


@needs_monitoring
def test_a_long_eager_loop_pays_for_its_first_calls_only(tmp_path: Path) -> None:
    """Timing a call costs tens of µs: past the limit, a callee's calls are not watched."""
    trace, _ = recorded(tmp_path, 100_000, "cupy", timed_calls=3)
    [graph] = trace.graphs
    calls = [c for c in trace.tables["calls"] if c.fn in graph.callees]
    after = [c for c in calls if c.t > graph.capture_end]
    assert len(after) == 3 and len(calls) == 4 + 3  # the history's calls, then three


@needs_monitoring
def test_a_graph_no_faster_than_its_eager_step_is_neutral_with_both_numbers(
        tmp_path: Path) -> None:
    trace, _ = recorded(tmp_path, 25_500, "cupy")
    [verdict] = diagnose(trace).verdicts
    assert verdict.kind == "neutral"
    assert "25.5" in verdict.summary and "25.0" in verdict.summary, verdict.summary


@needs_monitoring
def test_before_any_capture_without_a_framework_to_ask_calls_go_untimed(
        tmp_path: Path) -> None:
    """cuda.core takes a stream per call: until a capture names one, the timer has no
    stream the work is known to be on, and times nothing rather than the wrong one."""
    trace, streams = recorded(tmp_path, 100_000, "none")
    [graph] = trace.graphs
    m = measure.of_graph(TraceView(trace), graph)
    assert streams == [0x1000]  # the capture's stream, once it was seen
    assert m.eager is not None and m.eager.n == 5  # the calls after it
    assert m.eager_host is not None and m.eager_host.n == 4 + 5  # host time for all


def test_a_framework_half_imported_leaves_the_call_untimed(monkeypatch: Any) -> None:
    """The eager history times calls made while CuPy imports itself, when ``cupy`` is in
    sys.modules without its ``cuda`` yet: asking it must not raise into the import."""
    from types import ModuleType

    from graphdoctor.record.device.driver_timer import current_stream

    monkeypatch.setitem(__import__("sys").modules, "cupy", ModuleType("cupy"))
    assert current_stream(lambda: 0x1000) is None
