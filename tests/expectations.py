"""What each recorded scenario must show in its trace.

The same checks run on the CPU over the committed recordings (tests/test_recordings.py) and
on a GPU over fresh ones (tests/gpu/test_record_gpu.py), so a recorder change that breaks a
scenario fails on the GPU before its recording is ever committed.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphdoctor.diagnose import diagnose, measure
from graphdoctor.diagnose.findings import Verdict
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace import anatomy
from graphdoctor.trace.anatomy import Anatomy
from graphdoctor.trace.event_kinds import FREED
from graphdoctor.trace.model import Frame, Trace
from graphdoctor.trace.names import CALLEES_BASIS, COVERING_BASIS, STEP_BASIS, STEP_FUNCTION
from graphdoctor.trace.torch_logs import rerecords

Check = Callable[[Trace, dict[str, Any]], None]
EXPECTATIONS: dict[str, Check] = {}


def expect(name: str) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        EXPECTATIONS[name] = check
        return check

    return register


# -- helpers ----------------------------------------------------------------------------------
def user_frame(trace: Trace, stack: int) -> Frame | None:
    frames = [f for f in trace.stack(stack) if f.kind == "user"]
    return frames[-1] if frames else None


def user_line(trace: Trace, stack: int) -> tuple[str, int] | None:
    frame = user_frame(trace, stack)
    return (frame.file.rsplit("/", 1)[-1], frame.line) if frame else None


def graphs(trace: Trace) -> list[Any]:
    return [g for g in trace.graphs if not g.internal]


def root_errors(trace: Trace) -> list[Any]:
    return [e.chain[0] for e in trace.exceptions if e.chain]


def anatomy_of(graph: Any) -> Anatomy:
    """A captured graph's anatomy, which every capture on a GPU with cuda-bindings has."""
    assert graph.anatomy is not None, f"graph {graph.id} has no anatomy"
    return graph.anatomy  # type: ignore[no-any-return]


def kernel_names(graph: Any) -> list[str]:
    return [group.name for group in anatomy_of(graph).kernels]


def failed_with(trace: Trace, script: str, line: int, text: str = "", cuda_error: str = "") -> None:
    """A graph failed, and some recorded exception's first error names this line."""
    assert any(g.status == "failed" for g in graphs(trace)), "no failed graph"
    matches = [link for link in root_errors(trace)
               if user_line(trace, link.stack) == (script, line)
               and text in link.message and cuda_error in link.cuda_error]
    assert matches, f"no first error at {script}:{line} with {text or cuda_error!r}: " + repr(
        [(link.message[:80], user_line(trace, link.stack)) for link in root_errors(trace)])


def gpu_median(values: list[int]) -> float:
    timed = [v for v in values if v >= 0]
    assert timed, "no GPU times"
    return statistics.median(timed)


# -- capture failures ---------------------------------------------------------------------
@expect("item_in_capture")
def _item(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 1
    failed_with(trace, "item_in_capture.py", 15, cuda_error="cudaErrorStreamCaptureUnsupported")
    syncs = [s for s in trace.tables["syncs"] if s.graph == graphs(trace)[0].id]
    assert [s.kind for s in syncs] == ["item"]
    assert user_line(trace, syncs[0].stack) == ("item_in_capture.py", 15)
    assert any(e.raised.cuda_error == "cudaErrorStreamCaptureInvalidated" for e in trace.exceptions)
    assert "warmup" in {p.phase for p in trace.phases}


@expect("pageable_copy_in_capture")
def _pageable(trace: Trace, note: dict[str, Any]) -> None:
    failed_with(trace, "pageable_copy_in_capture.py", 8, text="Cannot copy between CPU and CUDA")


@expect("unjoined_side_stream")
def _unjoined(trace: Trace, note: dict[str, Any]) -> None:
    failed_with(trace, "unjoined_side_stream.py", 13, cuda_error="cudaErrorStreamCaptureUnjoined")
    graph = graphs(trace)[0]
    forks = [o for o in trace.tables["stream_ops"] if o.graph == graph.id and o.op == "wait_stream"]
    assert [user_line(trace, o.stack) for o in forks] == [("unjoined_side_stream.py", 14)]
    assert forks[0].other == graph.stream  # the side stream waited on the capture stream


@expect("default_stream_capture")
def _default_stream(trace: Trace, note: dict[str, Any]) -> None:
    failed_with(trace, "default_stream_capture.py", 6, text="non-default stream")
    assert graphs(trace)[0].stream == 0


@expect("other_thread_alloc_in_capture")
def _other_thread(trace: Trace, note: dict[str, Any]) -> None:
    thread_errors = [e for e in trace.exceptions if e.where == "thread"]
    assert thread_errors and thread_errors[0].thread != 0
    root = thread_errors[0].chain[0]
    assert root.cuda_error == "cudaErrorStreamCaptureUnsupported"
    assert user_line(trace, root.stack) == ("other_thread_alloc_in_capture.py", 15)
    graph = graphs(trace)[0]
    assert graph.status == "failed"
    assert graph.capture_start <= thread_errors[0].t <= graph.capture_end


@expect("rng_generator_in_capture")
def _rng(trace: Trace, note: dict[str, Any]) -> None:
    failed_with(trace, "rng_generator_in_capture.py", 10, text="CUDA generator not in capture")


@expect("exception_in_capture")
def _exception(trace: Trace, note: dict[str, Any]) -> None:
    failed_with(trace, "exception_in_capture.py", 9, text="scale")
    assert any(link.type == "KeyError" for link in root_errors(trace))


@expect("cublas_init_in_capture")
def _cublas(trace: Trace, note: dict[str, Any]) -> None:
    failed_with(trace, "cublas_init_in_capture.py", 8, cuda_error="CUBLAS_STATUS_NOT_INITIALIZED")


@expect("empty_graph")
def _empty(trace: Trace, note: dict[str, Any]) -> None:
    assert any("CUDA Graph is empty" in w.message for w in trace.warnings)
    assert graphs(trace)[0].status == "captured"
    empty = anatomy_of(graphs(trace)[0])
    assert empty.nodes == 0 and empty.edges == 0 and not empty.kernels


# -- graphs made outside PyTorch, seen through CUPTI (--cupti) -------------------------------
def cupti_graph(trace: Trace, api: str) -> Any:
    """The one graph of a scenario without PyTorch, made through ``api``."""
    [graph] = graphs(trace)
    assert graph.api == api, graph.api
    return graph


def launches(trace: Trace, graph: Any) -> list[Any]:
    return [r for r in trace.tables["replays"] if r.graph == graph.id]


def instantiated_at(trace: Trace, graph: Any, script: str, line: int) -> None:
    """The graph was made executable once, after its capture and before its first launch,
    at the script's ``line``."""
    [made] = [i for i in trace.tables["instantiations"] if i.graph == graph.id]
    assert made.dur > 0 and graph.capture_start <= made.t
    assert made.t < min((r.t for r in launches(trace, graph)), default=made.t + 1)
    assert (script, line) in [(f.file.rsplit("/", 1)[-1], f.line)
                              for f in trace.stack(made.stack)]


@expect("cupy_capture")
def _cupy_capture(trace: Trace, note: dict[str, Any]) -> None:
    graph = cupti_graph(trace, "stream capture (runtime)")
    assert graph.status == "captured" and user_line(trace, graph.stack) == ("cupy_capture.py", 39)
    replays = launches(trace, graph)
    assert len(replays) == 5 * 50  # five timed loops of 50 launches
    # CUPTI's GPU time per launch agrees with the script's own CUDA-event timing
    own = note["self_timing"]["replay"]["median_us"] * 1000
    assert 0.8 < gpu_median([r.gpu for r in replays]) / own < 1.2
    assert all(r.stream == graph.stream for r in replays)
    # read from the driver as PyTorch's graphs are: 100 layers of a multiply and an add
    content = anatomy_of(graph)
    assert content.nodes == 200 and content.longest_chain == 200
    assert sorted(kernel_names(graph)) == ["cupy_add__float32_float_float32",
                                           "cupy_multiply__float32_float_float32"]
    # the eager calls of step after the capture, timed on CuPy's current stream by driver
    # events, agree with the script's own timing of them; the verdict rests on them
    eager = own_against_measured(trace, graph, note)
    assert eager.n == 5 * 50
    assert diagnosed_kind(trace) == "faster"
    instantiated_at(trace, graph, "cupy_capture.py", 41)  # CuPy's end_capture instantiates


def own_against_measured(trace: Trace, graph: Any, note: dict[str, Any]) -> Any:
    """The graph's eager figure, checked against the script's own (CUDA events around each
    loop of calls), as is its replay figure."""
    assert [trace.functions[fn].name for fn in graph.callees] == ["step"]
    m = measure.of_graph(TraceView(trace), graph)
    own = note["self_timing"]
    assert m.eager is not None and m.replay is not None
    assert 0.8 < m.eager.median_us / own["eager"]["median_us"] < 1.25, (m.eager, own)
    assert 0.8 < m.replay.median_us / own["replay"]["median_us"] < 1.25, (m.replay, own)
    return m.eager


def diagnosed_kind(trace: Trace) -> str:
    [verdict] = diagnose(trace).verdicts
    return str(verdict.kind)


@expect("cupy_neutral_capture")
def _cupy_neutral(trace: Trace, note: dict[str, Any]) -> None:
    graph = cupti_graph(trace, "stream capture (runtime)")
    assert graph.status == "captured" and len(launches(trace, graph)) == 5 * 20
    # all its eager calls ran before the capture: the eager history kept the latest of them
    eager = own_against_measured(trace, graph, note)
    calls = [c for c in trace.tables["calls"] if c.fn in graph.callees]
    assert eager.n == len(calls) > 3 and all(c.t < graph.capture_start for c in calls)
    assert diagnosed_kind(trace) == "neutral"
    instantiated_at(trace, graph, "cupy_neutral_capture.py", 43)


@expect("cupy_sync_in_capture")
def _cupy_sync(trace: Trace, note: dict[str, Any]) -> None:
    graph = cupti_graph(trace, "stream capture (runtime)")
    assert graph.status == "failed" and not launches(trace, graph)
    failed_with(trace, "cupy_sync_in_capture.py", 13,
                cuda_error="cudaErrorStreamCaptureUnsupported")
    [sync] = [s for s in trace.tables["syncs"] if s.graph == graph.id]
    assert sync.kind == "stream_synchronize"
    assert user_line(trace, sync.stack) == ("cupy_sync_in_capture.py", 13)
    [finding] = [f for f in diagnose(trace).findings if f.id == "GD101"]
    assert "cupy_sync_in_capture.py:13" in finding.title


@expect("cuda_core_capture")
def _cuda_core(trace: Trace, note: dict[str, Any]) -> None:
    graph = cupti_graph(trace, "stream capture (driver)")  # cuda.core calls the driver
    assert graph.status == "captured"
    assert user_line(trace, graph.stack) == ("cuda_core_capture.py", 27)
    replays = launches(trace, graph)
    assert len(replays) == 100 and gpu_median([r.gpu for r in replays]) > 0
    assert anatomy_of(graph).nodes == 100  # 50 layers of CuPy's multiply and add
    instantiated_at(trace, graph, "cuda_core_capture.py", 30)  # complete() instantiates


@expect("quadrants_graph_kernel")
def _quadrants(trace: Trace, note: dict[str, Any]) -> None:
    graph = cupti_graph(trace, "graph built node by node")
    assert graph.status == "captured"
    # built inside Quadrants' launch of the kernel's first call, at the script's line 26
    assert ("quadrants_graph_kernel.py", 26) in [
        (f.file.rsplit("/", 1)[-1], f.line) for f in trace.stack(graph.stack)]
    # built on the first of 61 calls, replayed on every one of them, over three array pairs
    assert len(launches(trace, graph)) == 61
    # one kernel node per offloaded task, added one by one: the two loops and their setup
    content = anatomy_of(graph)
    assert content.nodes == 4 and sum(1 for n in kernel_names(graph) if "range_for" in n) == 2
    assert note["self_timing"]["arrays_updated"] is True  # each pair got its own updates
    instantiated_at(trace, graph, "quadrants_graph_kernel.py", 26)  # on the first call too


@expect("cupy_sync_between_replays")
def _cupy_sync_between(trace: Trace, note: dict[str, Any]) -> None:
    graph = cupti_graph(trace, "stream capture (runtime)")
    assert len(launches(trace, graph)) == 100
    # two sites wait for the GPU after every launch: the explicit sync, and the read-back
    # (CuPy's float() copies to the host and syncs the stream itself)
    titles = sorted(f.title for f in diagnose(trace).findings if f.id == "GD203")
    assert [t.split(" syncs")[0] for t in titles] == [
        "stream_synchronize at cupy_sync_between_replays.py:26",
        "stream_synchronize at cupy_sync_between_replays.py:27"], titles


@expect("cupti_cross_check_torch")
def _cross_check(trace: Trace, note: dict[str, Any]) -> None:
    [graph] = graphs(trace)
    assert graph.api == "torch.cuda.graph"  # recorded by PyTorch's hooks, as without --cupti
    replays = [r for r in trace.tables["replays"] if r.graph == graph.id]
    assert len(replays) == 5 * 40
    [seen] = [n.why for n in trace.meta.not_recorded if n.why.startswith("CUPTI saw PyTorch")]
    # CUPTI, from below, saw the same capture and launches, and timed them alike
    assert f"capture 1 graph and launch it {len(replays)} times" in seen, seen
    assert "; instantiating it took " in seen, seen
    cupti_us = float(seen.split(" times, ")[1].split(" µs")[0].replace(",", ""))
    assert 0.9 < cupti_us * 1000 / gpu_median([r.gpu for r in replays]) < 1.1, seen


@expect("cupy_empty_capture")
def _cupy_empty(trace: Trace, note: dict[str, Any]) -> None:
    graph = cupti_graph(trace, "stream capture (runtime)")
    assert graph.status == "captured" and len(launches(trace, graph)) == 10
    empty = anatomy_of(graph)  # read from the driver at the end of the capture
    assert empty.nodes == 0 and not empty.kernels
    assert any(f.id == "GD109" for f in diagnose(trace).findings)


@expect("cupti_beside_torch_profiler")
def _beside_profiler(trace: Trace, note: dict[str, Any]) -> None:
    [graph] = graphs(trace)
    assert graph.api == "torch.cuda.graph"  # PyTorch's own hooks recorded it, not CUPTI's
    assert len([r for r in trace.tables["replays"] if r.graph == graph.id]) == 10
    # the script's profiler saw every launch and the kernels of each replay
    seen = note["self_timing"]
    assert seen["graph_launches"] == 10 and seen["gpu_events"] >= 10 * 30
    notes = [n.why for n in trace.meta.not_recorded]
    assert any("stepped aside for a profiler the script started at "
               "cupti_beside_torch_profiler.py:" in why for why in notes), notes


# -- captured graphs -----------------------------------------------------------------------
WARMUP_CALLS = 3  # what the timing scenarios run before their capture
def _timed_scenario(trace: Trace, note: dict[str, Any], steps: int) -> tuple[float, float]:
    graph = graphs(trace)[0]
    assert graph.status == "captured" and graph.callees
    replays = [r for r in trace.tables["replays"] if r.graph == graph.id]
    calls = [c for c in trace.tables["calls"] if c.fn in graph.callees and c.mode == "eager"]
    # every replay and every eager call after the capture; from Python 3.12 also the script's
    # warm-up calls before it, kept by the eager history (its cold first one left out)
    assert len(replays) == 5 * steps and 5 * steps <= len(calls) <= 5 * steps + WARMUP_CALLS
    return gpu_median([c.gpu for c in calls]), gpu_median([r.gpu for r in replays])


@expect("launch_bound")
def _launch_bound(trace: Trace, note: dict[str, Any]) -> None:
    eager, replay = _timed_scenario(trace, note, 200)
    assert eager / replay > 3, (eager, replay)
    # 200 x (matmul, tanh): one serial chain of 400 kernels, two kernel groups of 200
    chain = anatomy_of(graphs(trace)[0])
    assert (chain.nodes, chain.kernel_count, chain.longest_chain, chain.widest_level) == (
        400, 400, 400, 1)
    assert [g.count for g in chain.kernels] == [200, 200] and chain.nodes_kept
    assert len(chain.edge_list) == 399 and chain.read_ns > 0
    assert any("tanh" in name for name in kernel_names(graphs(trace)[0]))


@expect("gpu_bound")
def _gpu_bound(trace: Trace, note: dict[str, Any]) -> None:
    eager, replay = _timed_scenario(trace, note, 50)
    assert 0.9 < eager / replay < 1.1, (eager, replay)
    # recorded with --full: one replay profiled, its 4 matmuls take nearly all its GPU time
    held = anatomy_of(graphs(trace)[0])
    assert held.kernel_count == 8 and held.longest_chain == held.nodes  # one serial chain
    assert held.profiled_replay_ns > 0.5 * replay, (held.profiled_replay_ns, replay)  # ns
    matmuls = max(held.kernels, key=lambda g: g.gpu_ns)
    assert matmuls.count == 4 and "tanh" not in matmuls.name
    assert matmuls.gpu_ns > 0.8 * held.profiled_replay_ns


@expect("tiny_graph")
def _tiny(trace: Trace, note: dict[str, Any]) -> None:
    _, lone = _timed_scenario(trace, note, 2000)
    one = anatomy_of(graphs(trace)[0])
    assert (one.nodes, one.kernel_count, one.longest_chain) == (1, 1, 1)
    # the loop's pace over its back-to-back replays is what the script's own loop timed
    # (a lone replay's events hold its launch latency, which the loop hides)
    pace, own = gpu_median(list(graphs(trace)[0].paces)) / 1000, note["self_timing"]["replay"]
    assert len(graphs(trace)[0].paces) >= 3 and abs(pace / own["median_us"] - 1) < 0.15, (
        pace, own)
    assert lone / 1000 > own["max_us"], (lone, own)  # µs


@expect("sync_between_replays")
def _sync_between(trace: Trace, note: dict[str, Any]) -> None:
    items = [s for s in trace.tables["syncs"] if s.kind == "item" and s.phase == "replay"]
    assert len(items) >= 290
    assert user_line(trace, items[0].stack) == ("sync_between_replays.py", 25)


@expect("many_private_pools")
def _pools(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0
    captured = [g for g in graphs(trace) if g.status == "captured"]
    assert len(captured) == 8
    assert len({g.pool for g in captured}) == 8 and all(g.pool_bytes > 0 for g in captured)


@expect("memory_growth_replays")
def _growth(trace: Trace, note: dict[str, Any]) -> None:
    samples = [m for m in trace.tables["memory"] if m.phase == "replay"]
    assert len(samples) >= 2 and samples[-1].allocated > samples[0].allocated + 100 * 2**20


@expect("freed_input_after_capture")
def _freed(trace: Trace, note: dict[str, Any]) -> None:
    freed = [e for e in trace.input_events if e.kind == FREED]
    assert len(freed) == 1 and freed[0].size == 4096 * 4
    # read by the captured line 8, let go by the loop's rebinding at line 11
    assert user_line(trace, freed[0].stack) == ("freed_input_after_capture.py", 8)
    assert user_line(trace, freed[0].dropped) == ("freed_input_after_capture.py", 11)


@expect("legacy_stream_in_capture")
def _legacy(trace: Trace, note: dict[str, Any]) -> None:
    graph = graphs(trace)[0]
    entered = [o for o in trace.tables["stream_ops"]
               if o.graph == graph.id and o.op == "enter" and o.stream == 0]
    assert [user_line(trace, o.stack) for o in entered] == [("legacy_stream_in_capture.py", 11)]


@expect("healthy_make_graphed_callables")
def _mgc(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and not trace.exceptions and not trace.input_events
    assert [g.api for g in graphs(trace)] == ["make_graphed_callables"] * 2
    assert len(trace.tables["replays"]) >= 100
    assert [c.mode for c in trace.tables["calls"]] == ["warmup"] * 3
    assert all(anatomy_of(g).kernel_count > 0 for g in graphs(trace))  # forward, backward


@expect("segfault_after_capture")
def _segfault(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 139
    status = trace.status
    assert not status.complete and status.reason == "signal" and status.signal == 11
    assert "Segmentation fault" in status.stacks_at_end
    assert [g.status for g in graphs(trace)] == ["captured"]


@expect("hang_in_gpu_sync")
def _hang_in_gpu_sync(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 124
    status = trace.status
    assert status.reason == "timeout" and "in synchronize" in status.stacks_at_end
    syncs = list(trace.tables["syncs"])
    assert syncs and syncs[-1].kind == "device_synchronize"
    assert user_line(trace, syncs[-1].stack) == ("hang_in_gpu_sync.py", 13)


# -- torch.compile -------------------------------------------------------------------------
def compile_events(trace: Trace, kind: str) -> list[Any]:
    """The trace's compile events of one kind."""
    return [e for e in trace.compile_events if e.kind == kind]


@expect("compile_mutated_input")
def _mutated(trace: Trace, note: dict[str, Any]) -> None:
    skips = compile_events(trace, "cudagraph_skip")
    assert skips and skips[0].reason.startswith("mutated inputs")
    assert user_line(trace, skips[0].stack) == ("compile_mutated_input.py", 10)
    assert not len(trace.tables["replays"])


@expect("compile_dynamic_shapes")
def _dynamic(trace: Trace, note: dict[str, Any]) -> None:
    keys = {e.key for e in compile_events(trace, "cudagraph_record")}
    assert len(keys) == 6, keys
    assert len([g for g in graphs(trace) if g.api == "torch.compile"]) == 6
    # the one recompile (then dynamic shapes) names the argument, its position and shape
    assert [(t.name, t.position, t.shape) for t in trace.guarded_tensors] == [("x", 0, "32x32")]


@expect("compile_recompile_realloc_cache")
def _recompile_realloc(trace: Trace, note: dict[str, Any]) -> None:
    _recompiles_per_request(trace, note)
    # the recorder found each re-allocated buffer, and from the second re-allocation on the
    # line that allocated it
    seen = [(t.name, t.shape) for t in trace.guarded_tensors]
    assert [shape.split("x")[2] for _, shape in seen] == ["80", "112", "144"], seen
    placed = [user_line(trace, t.stack) for t in trace.guarded_tensors]
    assert placed == [None] + [("compile_recompile_realloc_cache.py", 26)] * 2, placed


def _recompiles_per_request(trace: Trace, note: dict[str, Any]) -> None:
    # each longer request re-allocates the model's caches: the buffer's size guard fails,
    # and each recompile carries its guard, the script's lines and its compile time
    assert note["exit_code"] == 0
    timing = note["self_timing"]
    recompiles = compile_events(trace, "recompile")
    assert len(recompiles) == len(timing["requests"]) - 1, [e.reason for e in recompiles]
    cache = "model._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']"
    for event in recompiles:
        assert event.reason.startswith(f"tensor '{cache}._buffers['")
        assert "' size mismatch at index 2. expected " in event.reason, event.reason
        assert event.key in ("model.layers[0].attention.kv_cache.k_cache",
                             "model.layers[0].attention.kv_cache.v_cache"), event.key
        assert user_line(trace, event.stack) == ("compile_recompile_realloc_cache.py", 60)
        assert event.dur > 0
    # their compile time is most of what the script measured of each request's first call
    recompile_s = sum(e.dur for e in recompiles) / 1e9
    assert 0.5 * timing["recompile_s"] <= recompile_s <= 1.05 * timing["recompile_s"]
    assert len([g for g in graphs(trace) if g.api == "torch.compile"]) == len(timing["requests"])


@expect("compile_static_input_moved")
def _static_input_moved(trace: Trace, note: dict[str, Any]) -> None:
    # each load with assign=True moves all 16 parameters; the tree records the graph again,
    # and says so once per move, not once per stale graph on every later call
    timing = note["self_timing"]
    moves = [rerecords.moved_inputs(e.detail) for e in compile_events(trace, "rerecord")]
    assert len(moves) == timing["rounds"] - 1, [len(m) for m in moves]
    assert all(len(moved) == 16 for moved in moves)
    assert not compile_events(trace, "recompile")
    assert len([g for g in graphs(trace) if g.api == "torch.compile"]) == timing["rounds"]
    # allocation stacks are kept from the first move on: the later moves' new tensors are
    # placed at the line that made them
    moved = [t for t in trace.guarded_tensors if not t.shape]
    assert len(moved) == 16 * (timing["rounds"] - 1)
    assert {t.name for t in moved} == {f"{layer}.{kind}" for layer in range(8)
                                       for kind in ("weight", "bias")}
    placed = {user_line(trace, t.stack) for t in moved if t.stack >= 0}
    assert placed == {("compile_static_input_moved.py", 20)}, placed


@expect("real_hf_weights_swap_compiled")
def _weights_swap(trace: Trace, note: dict[str, Any]) -> None:
    # transformers' forward, named as the method under its decorator; each load of new
    # weights moved its parameters (no recompile) and the tree recorded the graph again
    assert note["exit_code"] == 0
    timing = note["self_timing"]
    [compiled] = [f.name for f in trace.functions if f.kind == "compiled"]
    assert compiled == "LlamaForCausalLM.forward", compiled
    assert not compile_events(trace, "recompile")
    assert len(compile_events(trace, "rerecord")) == timing["rounds"] - 1
    moved = [t for t in trace.guarded_tensors if not t.shape]
    assert len(moved) >= 10 * (timing["rounds"] - 1), len(moved)
    placed = {user_line(trace, t.stack) for t in moved if t.stack >= 0}
    assert placed == {("real_hf_weights_swap_compiled.py", 27)}, placed
    # named as the compiled model calls its parameters, not as the graph does (arg1_1)
    assert all(t.name.startswith("model.") or t.name == "lm_head.weight" for t in moved), \
        {t.name for t in moved}


@expect("compile_graph_break")
def _graph_break(trace: Trace, note: dict[str, Any]) -> None:
    breaks = compile_events(trace, "graph_break")
    assert breaks and "item()" in breaks[0].reason
    assert user_line(trace, breaks[0].stack) == ("compile_graph_break.py", 8)
    names = {f.name for f in trace.functions if f.kind == "compiled"}
    assert "step" in names, names


@expect("compile_output_overwritten")
def _overwritten(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 1
    assert any("overwritten by a subsequent run" in link.message
               for e in trace.exceptions for link in e.chain)


@expect("compile_healthy")
def _compile_healthy(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and not trace.exceptions
    modes = [c.mode for c in trace.tables["calls"]]
    assert modes.count("replay") >= 290
    # 30 Linear layers and nothing else for inductor to fuse: one chain of 30 cuBLAS GEMMs
    [graph] = [g for g in graphs(trace) if g.status == "captured"]
    layers = anatomy_of(graph)
    assert (layers.nodes, layers.kernel_count, layers.longest_chain) == (30, 30, 30)
    assert all("gemm" in name.lower() for name in kernel_names(graph))


@expect("compile_input_copies")
def _input_copies(trace: Trace, note: dict[str, Any]) -> None:
    copied = [f for f in trace.functions if f.kind == "compiled" and f.copied_bytes]
    assert copied and copied[0].copied_bytes == 256 * 2**20 and copied[0].name == "step"


# -- real libraries (transformers, torchvision, timm) ---------------------------------------
# Each times its eager code before the graph exists (or before torch.compile wraps it), as a
# user comparing the two would. These checks hold the scenario's facts; the verdicts that
# follow from them today ("unmeasured" for all but the transformers one, which skips CUDA
# graphs) are in tests/diagnose/test_fixture_matrix.py.
def function_names(trace: Trace, kind: str) -> list[str]:
    return [f.name for f in trace.functions if f.kind == kind]


def calls_in_mode(trace: Trace, mode: str) -> list[Any]:
    return [c for c in trace.tables["calls"] if c.mode == mode]


SPEEDUP_TOLERANCE = 0.15  # graphdoctor's speedup against the script's own CUDA-event timing


def measured_as_the_script_timed_it(trace: Trace, note: dict[str, Any],
                                    subject: str) -> list[Verdict]:
    """Every verdict whose subject holds ``subject`` is a measured speedup within
    SPEEDUP_TOLERANCE of the speedup the script timed itself (its recording note). A script
    that times the loop around a compiled function is compared with the figures graphdoctor
    gives for that loop (``around``: the step function the graph replays in)."""
    own = note["self_timing"]["speedup"]
    mine = [v for v in diagnose(trace).verdicts if subject in v.subject]
    assert mine, f"no verdict of {subject}"
    for verdict in mine:
        assert verdict.speedup is not None, verdict.summary
        measured = verdict.measurements.get("around", {}).get("speedup", verdict.speedup)
        assert abs(measured / own - 1) <= SPEEDUP_TOLERANCE, (measured, own)
    return mine


@expect("real_mlp48_sidestream_warmup")
def _real_mlp48(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and note["self_timing"]["speedup"] > 1
    graph = graphs(trace)[0]
    assert [g.api for g in graphs(trace)] == ["torch.cuda.graph"] and graph.status == "captured"
    assert user_line(trace, graph.stack) == ("real_mlp48_sidestream_warmup.py", 47)
    assert [trace.functions[i].name for i in graph.callees] == ["MLP48.forward"]
    assert len([r for r in trace.tables["replays"] if r.graph == graph.id]) == 200
    # its only eager calls ran before the capture (the script's own timing loop)
    [verdict] = measured_as_the_script_timed_it(trace, note, "graph 0")
    assert verdict.measurements["basis"] == CALLEES_BASIS


@expect("real_tv_resnet_train_capture")
def _real_resnet(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and note["self_timing"]["speedup"] > 1
    graph = graphs(trace)[0]
    assert [g.api for g in graphs(trace)] == ["torch.cuda.graph"] and graph.status == "captured"
    assert user_line(trace, graph.stack) == ("real_tv_resnet_train_capture.py", 56)
    assert len([r for r in trace.tables["replays"] if r.graph == graph.id]) == 100
    # the captured lines (model, loss_fn, backward, opt.step) are inline code: their eager
    # time is that of train_step, which made every one of those calls before the capture
    assert [trace.functions[i].name for i in graph.callees] == ["train_step"]
    assert graph.basis == COVERING_BASIS and not graph.uncovered
    [verdict] = measured_as_the_script_timed_it(trace, note, "graph 0")
    assert verdict.measurements["eager_of"] == "train_step"
    # a ResNet training step: forward, backward and the optimizer, hundreds of kernels
    step = anatomy_of(graph)
    assert step.kernel_count > 100 and step.longest_chain > 50, step
    # PyTorch's recipe with a constant lr: the captured Adam's numbers never change
    frozen_expectations.no_frozen_finding(trace)


@expect("real_graphed_callables_autocast")
def _real_mgc_autocast(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and note["self_timing"]["speedup"] > 1
    assert [g.api for g in graphs(trace)] == ["make_graphed_callables"] * 2
    assert all(g.status == "captured" for g in graphs(trace))
    assert function_names(trace, "graphed") == ["Sequential.forward"]
    for graph in graphs(trace):  # 3 untimed graphed steps, then 5 x 20 timed ones
        assert len([r for r in trace.tables["replays"] if r.graph == graph.id]) == 103
    assert calls_in_mode(trace, "warmup")
    # forward and backward graphs replay inside train_step, which ran before they existed
    # (the backward's on autograd's thread): the step with them against the step without
    assert function_names(trace, STEP_FUNCTION) == ["train_step"]
    assert {g.step for g in graphs(trace)} == {
        f.id for f in trace.functions if f.kind == STEP_FUNCTION}
    for verdict in measured_as_the_script_timed_it(trace, note, "make_graphed_callables"):
        assert verdict.measurements["basis"] == STEP_BASIS


@expect("real_decode_eager_then_compiled")
def _real_decode(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and note["self_timing"]["speedup"] > 1
    assert function_names(trace, "compiled") == ["decode_step"]
    assert not compile_events(trace, "cudagraph_skip")
    assert len(compile_events(trace, "cudagraph_record")) == 1
    assert len(calls_in_mode(trace, "replay")) >= 5 * 64
    # the plain decode_step's calls, before torch.compile wrapped it, are its eager calls;
    # the script times whole decode() loops, which graphdoctor measures as the step around it
    [verdict] = measured_as_the_script_timed_it(trace, note, "decode_step")
    assert verdict.measurements["around"]["eager_of"] == "decode"


@expect("real_timm_infer_compiled")
def _real_timm(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and note["self_timing"]["speedup"] > 1
    assert len(function_names(trace, "compiled")) == 1
    assert not compile_events(trace, "cudagraph_skip")
    assert len(calls_in_mode(trace, "replay")) >= 100
    captured = [g for g in graphs(trace) if g.status == "captured"]
    assert any(any(n.startswith("triton_") for n in kernel_names(g)) for g in captured)
    # the model's own forward, called by the script before torch.compile wrapped it
    measured_as_the_script_timed_it(trace, note, "compiled")


@expect("real_hf_static_cache_generate")
def _real_hf_generate(trace: Trace, note: dict[str, Any]) -> None:
    # transformers' static cache under a user-compiled forward: the prefill graph is skipped
    # for mutated inputs (the cache's cumulative_length.add_), then the next compile fails on
    # a cache tensor overwritten by a CUDA graph run; the script reports its eager half only
    assert note["exit_code"] == 1
    assert note["self_timing"]["eager"] and note["self_timing"]["graphed"] is None
    skips = compile_events(trace, "cudagraph_skip")
    assert skips and skips[0].reason.startswith("mutated inputs")
    frames = trace.stack(skips[0].stack)
    assert (frames[-1].file.rsplit("/", 1)[-1], frames[-1].line) == ("cache_utils.py", 478)
    # the user's call into transformers, from the stack its compile began with
    [first] = [e for e in compile_events(trace, "compile") if e.compile_id == "0/0"]
    assert user_line(trace, first.stack) == ("real_hf_static_cache_generate.py", 28)
    assert not len(trace.tables["replays"])


# -- several ranks or GPUs -----------------------------------------------------------------
RankCheck = Callable[[dict[int, Trace], dict[str, Any]], None]
RANK_EXPECTATIONS: dict[str, RankCheck] = {}


def expect_ranks(name: str) -> Callable[[RankCheck], RankCheck]:
    def register(check: RankCheck) -> RankCheck:
        RANK_EXPECTATIONS[name] = check
        return check

    return register


def captured_collectives(trace: Trace) -> list[Any]:
    return [c for c in trace.tables["collectives"] if c.graph >= 0]


@expect_ranks("dist_healthy_capture")
def _dist_healthy(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and sorted(traces) == [0, 1]
    for rank, trace in traces.items():
        assert trace.meta.rank == rank and trace.meta.backend == "nccl"
        assert [c.op for c in captured_collectives(trace)] == ["all_reduce"]
        assert len(trace.tables["replays"]) == 20 and trace.status.complete
        assert [e.kind for e in trace.teardown] == ["begin", "end"]


@expect_ranks("dist_extra_allreduce_in_capture")
def _dist_extra(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    assert note["exit_code"] == 124
    assert [len(captured_collectives(traces[r])) for r in (0, 1)] == [1, 2]
    assert all(t.status.reason == "timeout" and t.status.stacks_at_end for t in traces.values())


@expect_ranks("dist_rank_capture_fails")
def _dist_fails(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    assert note["exit_code"] != 0
    assert [g.status for g in graphs(traces[1])] == ["failed"]
    assert [g.status for g in graphs(traces[0])] == ["captured"]
    failed_with(traces[1], "dist_rank_capture_fails.py", 24,
                cuda_error="cudaErrorStreamCaptureUnsupported")


@expect_ranks("other_device_in_capture")
def _other_device(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    trace = traces[0]
    graph = graphs(trace)[0]
    assert graph.device == 0
    assert any(a.device == 1 for a in trace.tables["allocs"] if a.graph == graph.id)


@expect("host_node_in_capture")
def _host_node(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and note["self_timing"]["callbacks"] > 0
    with_host, without = graphs(trace)
    # the same 24 kernels (8 layers of two GEMM kernels and a relu) in one serial chain; the
    # callback joins that chain as a host node, which the ctypes thunk leaves unnamed
    held, plain = anatomy_of(with_host), anatomy_of(without)
    assert held.count_of(anatomy.HOST) == 1 and held.kernel_count == plain.kernel_count == 24
    assert (held.longest_chain, plain.longest_chain) == (25, 24)
    assert [f.startswith("a function at 0x") for f in held.host_functions] == [True]
    assert plain.count_of(anatomy.HOST) == 0 and not plain.host_functions


@expect("compile_cpu_index_input")
def _cpu_index_input(trace: Trace, note: dict[str, Any]) -> None:
    """torch's own check fails while recording; GD112 names the call (not the decorator),
    the CPU tensor that set it off, and the report to write."""
    script = "compile_cpu_index_input.py"
    assert note["exit_code"] == 1 and not note["truth"]
    [finding] = [f for f in diagnose(trace).findings if f.id == "GD112"]
    assert finding.location is not None
    call = _line(script, "out = pick(table, weight, position)")
    assert (finding.location.file.rsplit("/", 1)[-1], finding.location.line) == (script, call)
    assert "a CPU tensor among its inputs (position (cpu, int64, scalar))" in finding.title
    assert "github.com/pytorch/pytorch/issues" in finding.fix and "position.cuda()" in finding.fix
    decorator = _line(script, '@torch.compile(mode="reduce-overhead")')
    assert not [f for f in diagnose(trace).findings if f.id in ("GD108", "GD111")
                and f.location is not None and f.location.line == decorator]


@expect("compile_device_index_input")
def _device_index_input(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and note["self_timing"]["truth"] == "fresh"
    assert not [f for f in diagnose(trace).findings if f.id == "GD112"]
    assert not list(trace.tables["call_inputs"])
    assert [g for g in graphs(trace) if g.api == "torch.compile" and g.status == "captured"]


def _line(script: str, text: str) -> int:
    lines = (Path(__file__).resolve().parent.parent / "fixtures" / "scripts" / script
             ).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


# the frozen-host-value and the diagnosis-depth scenarios register themselves here; imported
# last, as they use the helpers above
from tests import (  # noqa: E402, F401
    depth_expectations,
    frozen_expectations,
    native_expectations,
    scale_expectations,
)
