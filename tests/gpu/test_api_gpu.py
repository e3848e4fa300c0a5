"""graphdoctor.check and the pytest plugin on a real GPU: a capture that fails (``.item()``
inside it), a reduce-overhead function torch.compile skips (it writes a global tensor by
index), and a healthy graph (200 small matmuls, launch-bound in eager mode); the functions
are in scripts/api_functions.py. A capture of check's that fails leaves the process as it
found it (torch 2.11 by itself leaves the CUDA generator unusable): the first test says so,
the second checks CUDA's random numbers after one. The tests make their inputs with the
CPU's generator, so that a check that broke CUDA's fails its own test only.

    pytest tests/gpu/test_api_gpu.py --require-gpu
"""

from __future__ import annotations

import importlib
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.gpu
pytest_plugins = ["pytester"]
SCRIPTS = Path(__file__).with_name("scripts")
MEASURED = sys.version_info >= (3, 12)  # eager calls of captured code are timed from 3.12


@pytest.fixture(scope="module")
def functions() -> ModuleType:
    """Imported here, on a GPU only: the module makes CUDA tensors as it is imported."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        return importlib.import_module("api_functions")
    finally:
        sys.path.remove(str(SCRIPTS))


def on_gpu(*shape: int) -> Any:
    """Random numbers of the CPU's generator, on the GPU."""
    import torch

    return torch.randn(*shape).to("cuda")


def test_check_a_capture_that_fails(functions: ModuleType, tmp_path: Path) -> None:
    import torch

    import graphdoctor
    from graphdoctor.diagnose.findings import FAILED

    stream, mode = torch.cuda.current_stream(), torch.cuda.get_sync_debug_mode()
    grad, autocast = torch.is_grad_enabled(), torch.is_autocast_enabled("cuda")
    result = graphdoctor.check(functions.scaled, on_gpu(1024), report_dir=tmp_path)
    assert [v.kind for v in result.verdicts] == [FAILED]
    assert [t.condition for t in result.failures("capture-failed,skipped")] == ["capture-failed"]
    with pytest.raises(graphdoctor.GraphDoctorFailure,
                       match=r"GD101 `\.item\(\)` at api_functions\.py:13 "):
        result.assert_ok()
    assert result.report_path.is_file()
    assert torch.cuda.current_stream() == stream  # not the failed capture's stream
    assert torch.cuda.get_sync_debug_mode() == mode  # the recorder's "warn" is given back
    assert not torch.cuda.is_current_stream_capturing()
    assert (torch.is_grad_enabled(), torch.is_autocast_enabled("cuda")) == (grad, autocast)
    # torch 2.11 left the generator in capture mode: "Offset increment outside graph capture"
    torch.randn(4, device="cuda")


def test_a_failed_capture_leaves_cuda_random_numbers_as_they_were(
        functions: ModuleType, tmp_path: Path) -> None:
    import torch

    import graphdoctor
    from graphdoctor.diagnose.findings import FAILED

    x, state = on_gpu(1024), torch.cuda.get_rng_state()
    expected = torch.rand(8, device="cuda")
    torch.cuda.set_rng_state(state)
    result = graphdoctor.check(functions.noisy, x, report_dir=tmp_path)
    assert [v.kind for v in result.verdicts] == [FAILED]
    # the warm-up's random numbers are taken back: the caller's next ones are those it had
    assert torch.equal(torch.cuda.get_rng_state(), state)
    assert torch.equal(torch.rand(8, device="cuda"), expected)
    torch.nn.functional.dropout(torch.ones(64, device="cuda"), 0.5)
    graph, out = torch.cuda.CUDAGraph(), torch.zeros(8, device="cuda")
    with torch.cuda.graph(graph):  # a capture of the caller's with random numbers works
        out.copy_(torch.rand(8, device="cuda"))
    graph.replay()
    first = out.clone()
    graph.replay()
    assert not torch.equal(first, out)  # each replay draws new numbers


def test_check_a_function_torch_compile_skips(functions: ModuleType, tmp_path: Path) -> None:
    import graphdoctor
    from graphdoctor.diagnose.findings import SKIPPED

    result = graphdoctor.check(functions.counted, on_gpu(64, 64), report_dir=tmp_path)
    assert SKIPPED in [v.kind for v in result.verdicts]
    tripped = [t.condition for t in result.failures()]
    assert "skipped" in tripped and "capture-failed" not in tripped
    assert any(f.id == "GD207" for f in result.findings)


def test_check_a_healthy_graph(functions: ModuleType, tmp_path: Path) -> None:
    import graphdoctor
    from graphdoctor.diagnose.findings import FASTER, UNMEASURED

    result = graphdoctor.check(functions.layers, on_gpu(64, 64), replays=50,
                               report_dir=tmp_path)
    assert [v.kind for v in result.verdicts] == [FASTER if MEASURED else UNMEASURED]
    if MEASURED:
        assert result.speedup is not None and result.speedup > 1.5
    result.assert_ok(fail_on="capture-failed,skipped,rerecorded,unsafe,neutral,slower,error")


# -- the plugin, running a test file of its own in a process of its own ------------------------
PLUGIN_TESTS = f"""
import sys

import pytest
import torch

import graphdoctor

sys.path.insert(0, {str(SCRIPTS)!r})
from api_functions import counted, layers, scaled


def capture(fn, x):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(x)
    return graph


@pytest.mark.graphdoctor(fail_on="skipped")
def test_marked_skipped():
    x = torch.randn(64, 64, device="cuda")
    for _ in range(10):
        counted(x)


@pytest.mark.graphdoctor(fail_on="capture-failed,skipped,rerecorded,unsafe,slower")
def test_marked_healthy():
    x = torch.randn(64, 64, device="cuda")
    graph = capture(layers, x)
    for _ in range(50):
        graph.replay()
    for _ in range(50):
        layers(x)


def test_check_fails():
    graphdoctor.check(scaled, torch.randn(1024).cuda()).assert_ok()


def test_check_healthy():
    graphdoctor.check(layers, torch.randn(64, 64).cuda()).assert_ok()


# Last: a capture of the test's own that fails leaves torch (2.11) unable to make random
# numbers on the GPU for the rest of the process; graphdoctor records it, and mends only its
# own captures.
@pytest.mark.graphdoctor(fail_on="capture-failed")
def test_marked_capture_fails():
    stream = torch.cuda.current_stream()
    with pytest.raises(RuntimeError):  # the test itself passes; the plugin fails it
        capture(scaled, torch.randn(1024, device="cuda"))
    torch.cuda.set_stream(stream)
"""


def test_the_plugin_fails_what_fails_and_passes_what_is_healthy(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(test_graphs=PLUGIN_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "graphdoctor.pytest_plugin", "--graphdoctor", "--graphdoctor-require-gpu",
        "-p", "no:cacheprovider", "--junitxml=out.xml", "-rf", timeout=900)
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines_random([
        "FAILED test_graphs.py::test_marked_capture_fails*",
        "FAILED test_graphs.py::test_marked_skipped*",
        "FAILED test_graphs.py::test_check_fails*",
        "graphdoctor: --fail-on capture-failed tripped for the recording at test_graphs.py:*",
        "graphdoctor: --fail-on skipped tripped for the recording at test_graphs.py:*",
        "*GD101 `.item()` at api_functions.py:13 *",
        "*GD207 *",
    ])
    properties = {case.get("name"): [p.get("value") for p in case.iter("property")]
                  for case in ElementTree.parse(pytester.path / "out.xml").iter("testcase")}
    assert sorted(properties) == ["test_check_fails", "test_check_healthy",
                                  "test_marked_capture_fails", "test_marked_healthy",
                                  "test_marked_skipped"]
    assert all(len(values) == 1 and Path(str(values[0])).is_file()
               for values in properties.values()), properties
