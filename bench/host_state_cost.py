"""What watching a capture's host state and its kept outputs costs the script. Runs on a CPU.

    python bench/host_state_cost.py [--repeats 25]

Two figures, each a median over ``--repeats`` alternating runs (this process, no GPU: the
work is the recorder's own Python, the same on any machine):

- capture: a block of 604 torch calls and 600 module calls (a 50-block MLP, four times) run
  plainly, under the function mode that binds numbers alone (as before host state was
  watched), and under every watch of a manual capture (numbers, the values read to choose
  a tensor or a branch, the modules run, torch's switches); per torch call, what each adds;
- a look for kept outputs at a sampled replay, over a module holding 129 names: 60
  tensors, 20 lists of 500 tensors and 20 objects of 10 attributes (half tensors, half
  lists), the graph's output among none of them (the usual case: nothing kept).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphdoctor.record.capture import kept_outputs  # noqa: E402
from graphdoctor.record.frozen import frozen_values, scalar_uses  # noqa: E402
from graphdoctor.record.recorder import CaptureState, Recorder  # noqa: E402
from graphdoctor.trace.names import GRAPH_CONTEXT  # noqa: E402
from graphdoctor.trace.spool.file import SpoolWriter  # noqa: E402

TORCH_CALLS = 604
model = torch.nn.Sequential(*[m for _ in range(50) for m in (
    torch.nn.Linear(8, 8), torch.nn.Dropout(0.1), torch.nn.GELU())]).eval()
x = torch.ones(2, 8)
scale = 0.5


def block() -> Any:
    y = None
    for _ in range(4):
        y = model(x) * scale
    return y


def recorder() -> Recorder:
    rec = Recorder(SpoolWriter(tempfile.mktemp(suffix=".spool")))
    rec.captures[threading.get_ident()] = CaptureState(0, 0, "", GRAPH_CONTEXT, -1)
    return rec


def plain() -> float:
    began = time.perf_counter_ns()
    block()
    return (time.perf_counter_ns() - began) / 1e3


def numbers_only() -> float:
    mode = scalar_uses.ScalarUses(recorder(), sys._getframe(), lambda found: None)
    began = time.perf_counter_ns()
    mode.start()
    block()
    mode.stop()
    return (time.perf_counter_ns() - began) / 1e3


def every_watch() -> float:
    frozen = frozen_values.FrozenValues(recorder())
    began = time.perf_counter_ns()
    frozen.capture_began(0, sys._getframe())
    block()
    frozen.capture_ended(0)
    return (time.perf_counter_ns() - began) / 1e3


def a_look(repeats: int) -> list[float]:
    kept_outputs.on_gpu = lambda tensor: True  # type: ignore[assignment]  # CPU stand-ins
    names: dict[str, Any] = {}
    code = "static_out = static_in * 2\n"
    exec("import torch\nstatic_in = torch.zeros(4)\n", names)  # noqa: S102
    watch = kept_outputs.KeptOutputs(recorder())
    frame = _module_frame(names)
    watch.capture_began(0, frame)
    exec(code, names)  # noqa: S102
    watch.outputs[0] = [kept_outputs.Output("static_out", _ref(names["static_out"]),
                                            names["static_out"].untyped_storage().data_ptr(),
                                            16)]
    for i in range(60):
        names[f"t{i}"] = torch.zeros(2)
    for i in range(20):
        names[f"l{i}"] = [torch.zeros(2) for _ in range(500)]
    for i in range(20):
        holder = type("Holder", (), {})()
        for j in range(10):
            setattr(holder, f"a{j}", torch.zeros(2) if j % 2 else [torch.zeros(2)] * 30)
        names[f"o{i}"] = holder
    times = []
    for count in range(4, 4 + repeats):
        began = time.perf_counter_ns()
        watch.sampled(0, count, frame)
        times.append((time.perf_counter_ns() - began) / 1e3)
    return times


def _module_frame(names: dict[str, Any]) -> Any:
    exec("import sys\nframe = sys._getframe()\n", names)  # noqa: S102
    return names.pop("frame")


def _ref(tensor: torch.Tensor) -> Any:
    from graphdoctor.record import compat
    return compat.storage_weak_ref(tensor.untyped_storage())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=25)
    options = parser.parse_args()
    torch.set_num_threads(1)
    runs: dict[str, list[float]] = {"plain": [], "numbers": [], "every watch": []}
    for _ in range(options.repeats):
        runs["plain"].append(plain())
        runs["numbers"].append(numbers_only())
        runs["every watch"].append(every_watch())
    base, numbers, every = (statistics.median(runs[k]) for k in runs)
    print(f"capture of {TORCH_CALLS} torch calls, medians of {options.repeats}:")
    print(f"  plain {base:,.0f} µs; numbers bound {numbers:,.0f} µs "
          f"(+{(numbers - base) / TORCH_CALLS:.1f} µs a call); every watch {every:,.0f} µs "
          f"(+{(every - numbers) / TORCH_CALLS:.1f} µs a call more)")
    looks = a_look(options.repeats * 4)
    print(f"a look for kept outputs at a sampled replay: median {statistics.median(looks):.0f} "
          f"µs (min {min(looks):.0f}, max {max(looks):.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
