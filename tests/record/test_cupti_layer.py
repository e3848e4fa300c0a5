"""The CUPTI layer against a stand-in for cupti-python, laid out in memory as CUPTI lays out
its callback data (the parameter struct and the return value behind pointers), then read
back from the spool as a trace and diagnosed. What a real driver reports is checked on a
GPU by the cupy_*, cuda_core_* and quadrants_* fixtures' expectations."""

from __future__ import annotations

import ctypes
import sys
from types import SimpleNamespace
from typing import Any

from graphdoctor.diagnose import diagnose
from graphdoctor.record.cupti import calls as cupti_calls
from graphdoctor.record.cupti import graphs as cupti_graphs
from graphdoctor.record.cupti import profilers as cupti_profilers
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.model import Trace
from graphdoctor.trace.spool.file import SpoolWriter

DRIVER, RUNTIME = 1, 2
STREAM, GRAPH, EXEC, EVENT = 0x1000, 0x2000, 0x3000, 0x4000

# The user's side of the stand-in: CUDA calls as a library's compiled code makes them, which
# leaves no Python frame between the caller and CUPTI's callback: each line calls the
# subscriber itself, with what the stand-in prepared for that driver call.
SCRIPT = '''
def capture_and_launch(cuda):
    p, c = cuda.prepare, cuda.callback
    for a in p("cuStreamBeginCapture_v2", [STREAM, 2], runtime=True): c(None, *a)
    for a in p("cuStreamSynchronize", [STREAM], result=900): c(None, *a)  # line 5: the culprit
    for a in p("cuStreamEndCapture", [STREAM, cuda.out(GRAPH)], result=901): c(None, *a)
    for a in p("cuStreamBeginCapture_v2", [STREAM, 0]): c(None, *a)  # line 7: works
    for a in p("cuStreamEndCapture", [STREAM, cuda.out(GRAPH)]): c(None, *a)
    for a in p("cuGraphInstantiateWithFlags", [cuda.out(EXEC), GRAPH, 0]): c(None, *a)
    for _ in range(3):
        for a in p("cuGraphLaunch", [EXEC, STREAM]): c(None, *a)
    for a in p("cuCtxSynchronize", []): c(None, *a)


def build_by_nodes(cuda):
    p, c = cuda.prepare, cuda.callback
    for a in p("cuGraphCreate", [cuda.out(GRAPH + 1), 0]): c(None, *a)  # line 17
    for _ in range(4):
        for a in p("cuGraphAddKernelNode_v2", [0, GRAPH + 1, 0, 0, 0]): c(None, *a)
    for a in p("cuGraphInstantiateWithFlags", [cuda.out(EXEC + 1), GRAPH + 1, 0]): c(None, *a)
    for a in p("cuGraphLaunch", [EXEC + 1, STREAM]): c(None, *a)
'''


def script() -> dict[str, Any]:
    namespace: dict[str, Any] = {"STREAM": STREAM, "GRAPH": GRAPH, "EXEC": EXEC}
    exec(compile(SCRIPT, "/work/user/script.py", "exec"), namespace)  # noqa: S102
    return namespace


class Names:
    """cupti-python's enums of callback ids: a number per name."""

    def __init__(self, names: list[str], first: int) -> None:
        for number, name in enumerate(names, first):
            setattr(self, name, number)


DRIVER_CALLS = [name for names, _ in cupti_graphs._HANDLERS for name in names]


class FakeCupti:
    """Calls the subscriber as CUPTI does: at a call's entry and exit, with the address of
    a CUpti_CallbackData, and later hands over one graph-trace record per launch."""

    CallbackDomain = SimpleNamespace(DRIVER_API=DRIVER, RUNTIME_API=RUNTIME)
    ActivityKind = SimpleNamespace(GRAPH_TRACE=7)
    driver_api_trace_cbid = Names([*DRIVER_CALLS, "cuGraphLaunch", "cuGraphAddKernelNode_v2",
                                   "cuLaunchKernel", "cuMemcpyAsync"], 1)
    runtime_api_trace_cbid = Names(["cudaStreamBeginCapture_v10000",
                                    "cudaStreamBeginCapture_ptsz_v10000"], 500)

    def __init__(self) -> None:
        self.enabled: set[tuple[int, int]] = set()
        self.pending: list[Any] = []
        self.keep: list[Any] = []  # the ctypes memory behind the addresses handed out
        self.correlation = 0
        self.subscribed = False

    # -- the cupti-python calls the layer makes ----------------------------------------------
    def subscribe(self, callback: Any, userdata: Any) -> int:
        self.callback, self.subscribed = callback, True  # the script calls it (see SCRIPT)
        return 1

    def enable_callback(self, enable: int, subscriber: int, domain: int, cbid: int) -> None:
        self.enabled.add((domain, cbid))

    def activity_register_callbacks(self, requested: Any, completed: Any) -> None:
        self.completed = completed

    def activity_enable(self, kind: int) -> None:
        assert kind == self.ActivityKind.GRAPH_TRACE

    def activity_disable(self, kind: int) -> None:
        pass

    def activity_flush_all(self, flag: int) -> None:
        done, self.pending = self.pending, []
        self.completed(done)

    def unsubscribe(self, subscriber: int) -> None:
        self.subscribed = False

    def get_timestamp(self) -> int:
        return 0  # CUPTI's clock, here the recorder's from its start

    def get_graph_exec_id(self, graph_exec: int) -> int:
        return graph_exec - EXEC  # CUPTI numbers instances from 0, here

    def get_stream_id_ex(self, context: int, stream: int, per_thread: int) -> int:
        return stream - STREAM + 7

    # -- the script's side -------------------------------------------------------------------
    def out(self, value: int) -> int:
        """An out-parameter: the address where the driver writes a handle."""
        cell = ctypes.c_uint64(value)
        self.keep.append(cell)
        return ctypes.addressof(cell)

    def prepare(self, name: str, params: list[int], result: int = 0,
                runtime: bool = False) -> list[tuple[int, int, Any]]:
        """The subscriber's calls for one driver call: (domain, callback id, callback data)
        at its entry and exit, the runtime's too where the runtime made it."""
        self.correlation += 1
        struct = (ctypes.c_uint64 * max(len(params), 1))(*params)
        code = ctypes.c_int(result)
        data = (ctypes.c_uint64 * 9)(0, 0, ctypes.addressof(struct), ctypes.addressof(code))
        self.keep += [struct, code, data]
        cbid = getattr(self.driver_api_trace_cbid, name)
        calls = []
        for site in (cupti_calls.ENTER, cupti_calls.EXIT):
            info = SimpleNamespace(ptr=ctypes.addressof(data), callback_site=site, context=0,
                                   correlation_id=self.correlation, function_name=name)
            if runtime:
                calls.append((RUNTIME, 500, info))
            if (DRIVER, cbid) in self.enabled:
                calls.append((DRIVER, cbid, info))
        if name == "cuGraphLaunch":  # CUPTI's graph-trace record: no callback, an activity
            self.pending.append(SimpleNamespace(
                graph_id=self.get_graph_exec_id(params[0]), start=1_000 * self.correlation,
                end=1_000 * self.correlation + 25_000,
                stream_id=self.get_stream_id_ex(0, params[1], 0)))
        return calls


def recorded(tmp_path: Any, run: str) -> tuple[Trace, FakeCupti]:
    cupti = FakeCupti()
    spool = SpoolWriter(tmp_path / "run.spool.jsonl")
    recorder = Recorder(spool)
    layer = cupti_graphs.CuptiGraphs(recorder, cupti)
    layer.start()
    script()[run](cupti)
    layer.heartbeat()
    layer.stop()
    spool.close()
    return assemble_file(tmp_path / "run.spool.jsonl"), cupti


def test_only_the_graph_calls_are_subscribed() -> None:
    """A callback runs Python on the calling thread: kernel and graph launches and copies,
    the calls a program makes most, must never reach it."""
    cupti = FakeCupti()
    cupti_graphs.CuptiGraphs(Recorder(SpoolWriter("/dev/null")), cupti).start()
    ids = cupti.driver_api_trace_cbid
    assert (DRIVER, ids.cuLaunchKernel) not in cupti.enabled
    assert (DRIVER, ids.cuMemcpyAsync) not in cupti.enabled
    assert (DRIVER, ids.cuGraphLaunch) not in cupti.enabled  # launches come as activity
    runtime = {cbid for domain, cbid in cupti.enabled if domain == RUNTIME}
    assert runtime == {500, 501}  # its stream captures only, to tell runtime from driver


def test_a_sync_refused_in_a_capture_is_its_first_error_at_the_users_line(tmp_path: Any) -> None:
    trace, _ = recorded(tmp_path, "capture_and_launch")
    failed, works = trace.graphs
    assert (failed.status, failed.api) == ("failed", "stream capture (runtime)")
    assert failed.capture_error_mode == "relaxed" and works.capture_error_mode == "global"
    [sync] = [s for s in trace.tables["syncs"] if s.graph == failed.id]
    assert sync.kind == "stream_synchronize" and trace.stack(sync.stack)[-1].line == 5
    first = min((e for e in trace.exceptions if e.graph == failed.id), key=lambda e: e.t)
    assert first.chain[0].cuda_error == "cudaErrorStreamCaptureUnsupported"
    [finding] = [f for f in diagnose(trace).findings if f.id == "GD101"]
    assert "script.py:5" in finding.title


def test_launches_of_the_scripts_graph_carry_their_gpu_time(tmp_path: Any) -> None:
    trace, _ = recorded(tmp_path, "capture_and_launch")
    works = trace.graphs[1]
    assert works.status == "captured" and works.api == "stream capture (driver)"
    assert trace.stack(works.stack)[-1].line == 7
    replays = [r for r in trace.tables["replays"] if r.graph == works.id]
    assert len(replays) == 3 and all(r.gpu == 25_000 and r.dur == 0 for r in replays)
    assert all(r.stream == STREAM for r in replays)
    device_sync = [s for s in trace.tables["syncs"] if s.kind == "device_synchronize"]
    assert len(device_sync) == 1 and device_sync[0].graph == -1  # after the capture


def test_each_instantiation_is_an_event_at_the_line_that_asked(tmp_path: Any) -> None:
    """Making a graph executable is host time of its own (milliseconds for a big graph),
    paid before the first launch: an event of the graph, where the script asked for it."""
    trace, _ = recorded(tmp_path, "capture_and_launch")
    works = trace.graphs[1]
    [made] = list(trace.tables["instantiations"])  # the failed capture has none
    assert made.graph == works.id and made.dur >= 0
    assert trace.stack(made.stack)[-1].line == 9
    assert works.capture_end <= made.t  # after its capture


def test_a_graph_built_node_by_node_is_one_when_instantiated(tmp_path: Any) -> None:
    trace, _ = recorded(tmp_path, "build_by_nodes")
    [graph] = trace.graphs
    assert graph.api == "graph built node by node" and graph.status == "captured"
    assert trace.stack(graph.stack)[-1].line == 17
    [made] = list(trace.tables["instantiations"])
    assert made.graph == graph.id and trace.stack(made.stack)[-1].line == 20
    assert len([r for r in trace.tables["replays"] if r.graph == graph.id]) == 1


TORCH_SIDE = '''
def capture_and_replay(cuda):
    p, c = cuda.prepare, cuda.callback
    for a in p("cuStreamBeginCapture_v2", [1, 0]): c(None, *a)
    for a in p("cuStreamEndCapture", [1, cuda.out(0x9000)]): c(None, *a)
    for a in p("cuGraphInstantiateWithFlags", [cuda.out(0x9100), 0x9000, 0]): c(None, *a)
    for _ in range(2):
        for a in p("cuGraphLaunch", [0x9100, 1]): c(None, *a)
'''


def test_pytorchs_own_graphs_are_left_to_its_hooks_and_counted_beside(tmp_path: Any) -> None:
    namespace: dict[str, Any] = {"__name__": "torch.cuda.graphs"}
    exec(compile(TORCH_SIDE, "/x/torch/cuda/graphs.py", "exec"), namespace)  # noqa: S102
    cupti = FakeCupti()
    spool = SpoolWriter(tmp_path / "torch.spool.jsonl")
    recorder = Recorder(spool)
    layer = cupti_graphs.CuptiGraphs(recorder, cupti)
    layer.start()
    namespace["capture_and_replay"](cupti)
    layer.stop()
    spool.close()
    trace = assemble_file(tmp_path / "torch.spool.jsonl")
    assert trace.graphs == [] and not len(trace.tables["replays"])  # PyTorch's hooks' job
    notes = [note.why for note in trace.meta.not_recorded]
    [seen] = [why for why in notes if why.startswith("CUPTI saw")]
    assert seen.startswith("CUPTI saw PyTorch capture 1 graph and launch it 2 times, 25.0 µs "
                           "of GPU time per launch (median of 2); instantiating it took ")
    assert seen.endswith(" µs; PyTorch's own hooks recorded them"), seen


def test_without_cupti_python_the_report_says_how_to_get_it(tmp_path: Any,
                                                            monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "cupti", None)  # import cupti fails
    spool = SpoolWriter(tmp_path / "none.spool.jsonl")
    recorder = Recorder(spool)
    assert cupti_graphs.install(recorder) is None
    spool.close()
    notes = assemble_file(tmp_path / "none.spool.jsonl").meta.not_recorded
    assert any("pip install 'graphdoctor[cupti]'" in note.why for note in notes)


def test_a_profiler_of_the_scripts_gets_cupti_to_itself(tmp_path: Any) -> None:
    """kineto takes CUPTI when torch's profiler starts: the layer hands it over first,
    keeping what it recorded, and says where the profiler started."""
    torch = __import__("pytest").importorskip("torch")
    cupti = FakeCupti()
    spool = SpoolWriter(tmp_path / "profiled.spool.jsonl")
    recorder = Recorder(spool)
    layer = cupti_graphs.CuptiGraphs(recorder, cupti)
    layer.start()
    script()["build_by_nodes"](cupti)
    cupti_profilers.watch_profilers(recorder, layer)
    try:
        with torch.profiler.profile():  # the script's profiler
            pass
        line = sys._getframe().f_lineno - 2
    finally:
        recorder.uninstall()
    assert not cupti.subscribed and not layer.subscribed
    layer.stop()
    spool.close()
    trace = assemble_file(tmp_path / "profiled.spool.jsonl")
    assert len(trace.tables["replays"]) == 1  # recorded before it stepped aside
    notes = [note.why for note in trace.meta.not_recorded]
    assert any(f"a profiler the script started at test_cupti_layer.py:{line}" in why
               for why in notes), notes
