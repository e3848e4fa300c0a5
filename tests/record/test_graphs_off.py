"""The recorder's switch for a run with CUDA graphs off (GRAPHDOCTOR_GRAPHS=off): the same
torch.compile without CUDA graphs, its calls timed as eager calls under the name the run
with graphs gives them, make_graphed_callables' callables handed back unchanged, raw
captures kept, and a note for each."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.diagnose.findings import WITHOUT_GRAPHS  # noqa: E402
from graphdoctor.record.compile.graphs_off import Notes, compile_kwargs  # noqa: E402
from graphdoctor.record.recorder import Recorder  # noqa: E402
from graphdoctor.report.io import load  # noqa: E402
from graphdoctor.trace.names import (  # noqa: E402
    COMPILED_FUNCTION,
    EAGER_CALL,
    GRAPHS_ENV,
    GRAPHS_OFF,
    KEPT_AS_WRITTEN,
    SWITCHED_OFF,
    WARMUP_CALL,
)
from graphdoctor.trace.spool.file import SpoolWriter, read_records  # noqa: E402

OFF = {"triton.cudagraphs": False}


def rewritten(tmp_path: Path, **kwargs: Any) -> tuple[dict[str, Any], list[list[Any]]]:
    """torch.compile's keywords as a graphs-off run passes them on, and the notes it wrote."""
    spool = SpoolWriter(str(tmp_path / "s.spool"))
    notes = Notes(Recorder(spool))
    result = compile_kwargs(notes, kwargs, sys._getframe())
    spool.close()
    return result, [r[1:] for r in read_records(tmp_path / "s.spool") if r[0] == "note"]


def test_reduce_overhead_becomes_the_default_compile(tmp_path: Path) -> None:
    kwargs, notes = rewritten(tmp_path, mode="reduce-overhead", fullgraph=True)
    assert kwargs == {"fullgraph": True, "options": OFF}
    assert notes == [[SWITCHED_OFF, "torch.compile (mode='reduce-overhead') at "
                      f"{__file__}:{rewritten.__code__.co_firstlineno + 4}: compiled with the "
                      "same options and triton.cudagraphs=False"]]


def test_max_autotune_keeps_its_tuning(tmp_path: Path) -> None:
    kwargs, _ = rewritten(tmp_path, mode="max-autotune", dynamic=False)
    assert kwargs["options"] == {"max_autotune": True, "coordinate_descent_tuning": True, **OFF}
    assert "mode" not in kwargs and kwargs["dynamic"] is False


def test_options_that_ask_for_graphs_keep_the_others(tmp_path: Path) -> None:
    kwargs, notes = rewritten(tmp_path, options={"triton.cudagraphs": True,
                                                 "epilogue_fusion": False})
    assert kwargs == {"options": {"epilogue_fusion": False, **OFF}}
    assert "(options)" in notes[0][1]


def test_a_compile_that_asks_for_no_graphs_is_not_noted(tmp_path: Path) -> None:
    assert rewritten(tmp_path) == ({"options": OFF}, [])


@pytest.mark.parametrize("kwargs", [{"backend": "eager", "mode": "reduce-overhead"},
                                    {"mode": "no-such-mode"}])
def test_another_backend_or_an_unknown_mode_is_left_to_torch(tmp_path: Path,
                                                             kwargs: dict[str, Any]) -> None:
    assert rewritten(tmp_path, **kwargs) == (kwargs, [])


def test_the_cudagraphs_backend_runs_as_written_and_says_so(tmp_path: Path) -> None:
    kwargs, notes = rewritten(tmp_path, backend="cudagraphs")
    assert kwargs == {"backend": "cudagraphs"}
    assert notes[0][0] == KEPT_AS_WRITTEN and "inductor backend only" in notes[0][1]


SCRIPT = """
    import torch

    def step(x):
        return (x * 2).sin()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x).relu()

    unused = torch.compile(step, mode="max-autotune")  # never called: nothing compiles
    config = unused.get_compiler_config()
    print("CONFIG", config["triton.cudagraphs"], config["max_autotune"])
    f = torch.compile(step, backend="eager")
    net = Net()
    m = torch.compile(net, backend="eager")
    seq = torch.compile(torch.nn.Sequential(torch.nn.Linear(4, 4)), backend="eager")
    x = torch.ones(4, 4)
    for _ in range(5):
        f(x)
        m(x)
        seq(x)
    print("MODULE", type(m).__name__, isinstance(m, torch.nn.Module))
    graphed = torch.cuda.make_graphed_callables(net, (x,))
    print("GRAPHED", graphed is net)
"""


@pytest.fixture(scope="module")
def graphs_off_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    folder = tmp_path_factory.mktemp("off")
    (folder / "s.py").write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-q", "-o", "r.json",
                           "s.py"], cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, GRAPHS_ENV: GRAPHS_OFF})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, folder / "r.json"


@pytest.mark.slow
def test_a_compile_with_graphs_off_is_configured_without_them(
        graphs_off_run: tuple[str, Path]) -> None:
    stdout, _ = graphs_off_run
    assert "CONFIG False True" in stdout  # max-autotune, CUDA graphs off
    assert "MODULE OptimizedModule True" in stdout  # a compiled module stays a module
    assert "GRAPHED True" in stdout  # make_graphed_callables handed the module back


@pytest.mark.slow
def test_each_compiled_call_is_timed_under_the_name_the_run_with_graphs_gives(
        graphs_off_run: tuple[str, Path]) -> None:
    trace = load(graphs_off_run[1]).trace
    named = {f.id: (f.name, f.kind, Path(f.file).name, f.line) for f in trace.functions}
    assert sorted(named.values()) == [
        ("Net.forward", "compiled", "s.py", 12),  # the user's forward: its own place
        ("Net.forward", "graphed", "s.py", 12),
        ("Sequential.forward", "compiled", "s.py", 26),  # torch's forward: the calling line
        ("step", "compiled", "s.py", 4),
    ]
    # the compiled functions' calls (on Python 3.12 the graphed Net.forward, run eagerly
    # here, has eager calls of its own too, timed through sys.monitoring)
    modes = collections.Counter((named[c.fn][0], c.mode) for c in trace.tables["calls"]
                                if named[c.fn][1] == COMPILED_FUNCTION)
    for name in ("step", "Net.forward", "Sequential.forward"):
        assert (modes[(name, WARMUP_CALL)], modes[(name, EAGER_CALL)]) == (1, 4), name


@pytest.mark.slow
def test_a_graphs_off_run_says_what_it_switched_off(graphs_off_run: tuple[str, Path]) -> None:
    report = load(graphs_off_run[1])
    assert (GRAPHS_ENV, GRAPHS_OFF) in report.trace.meta.env
    notes = [(n.what, n.why) for n in report.trace.meta.not_recorded]
    assert (SWITCHED_OFF, "make_graphed_callables at "
            f"{graphs_off_run[1].parent / 's.py'}:28: returned its callables unchanged, run "
            "eagerly") in notes
    assert any(what == SWITCHED_OFF and "(mode='max-autotune')" in why for what, why in notes)
    compiled = [v for v in report.diagnosis.verdicts if v.subject.startswith("compiled")]
    assert len(compiled) == 3 and {v.kind for v in compiled} == {WITHOUT_GRAPHS}
    assert all("host time per call (median of 4" in v.summary for v in compiled)
