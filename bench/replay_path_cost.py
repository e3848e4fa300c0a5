"""What graphdoctor's replay wrapper costs the host by itself, on any machine (no GPU).

    python bench/replay_path_cost.py [--calls 200000] [--repeats 7]

The wrapper of ``CUDAGraph.replay`` (``record/capture/replay_path.py``) wraps a stand-in graph whose
``replay`` does nothing, with a stand-in recorder that keeps nothing: the difference from
calling the stand-in directly is the wrapper's own Python, per untimed replay, as a loop of
tiny graphs pays it. Timed replays (one per millisecond) and samples (every 100 ms) are
included at their real rates, since the wrapper's clock decides them. Medians over repeats.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphdoctor.record.capture import replay_path  # noqa: E402


class _Ranges:
    listened = False

    def push_replay(self, graph: int) -> None:
        pass

    def pop(self) -> None:
        pass


class _Timer:
    def start(self) -> None:
        return None  # as the event timer says while it cannot time: the row is emitted


class _Recorder:
    enabled, compiled_call, history, t0 = True, {}, None, 0

    def __init__(self) -> None:
        self.timer, self.replays, self.nvtx, self.written = _Timer(), {}, _Ranges(), 0

    def emit_many(self, records: list[Any]) -> None:
        self.written += len(records)

    def emit(self, record: Any) -> None:
        self.written += 1

    def thread_of(self, ident: int) -> int:
        return 0

    def thread(self) -> int:
        return 0

    def note(self, *_: Any) -> None:
        pass


class _Hooks:
    watched: dict[int, Any] = {}
    kernel_timer = None
    last_sample_ns = 0

    def sampled(self, graph: int, count: int, caller: Any) -> None:
        self.last_sample_ns = time.perf_counter_ns()


class _Graph:
    def replay(self) -> None:
        pass


def per_call_ns(replay: Any, graph: _Graph, calls: int) -> float:
    started = time.perf_counter_ns()
    for _ in range(calls):
        replay(graph)
    return (time.perf_counter_ns() - started) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    options = parser.parse_args()
    path = replay_path.ReplayPath(_Recorder(), _Hooks(), "_graph_id")  # type: ignore[arg-type]
    wrapped, graph = path.wrap(_Graph.replay), _Graph()
    graph._graph_id = 1  # type: ignore[attr-defined]
    plain, hooked = [], []
    for _ in range(options.repeats):
        plain.append(per_call_ns(_Graph.replay, graph, options.calls))
        hooked.append(per_call_ns(wrapped, graph, options.calls))
    extra = [h - p for p, h in zip(plain, hooked)]
    print(f"python {sys.version.split()[0]}: plain {statistics.median(plain):.0f} ns, "
          f"wrapped {statistics.median(hooked):.0f} ns, the wrapper adds "
          f"{statistics.median(extra):.0f} ns ({min(extra):.0f}-{max(extra):.0f}) per replay")
    return 0


if __name__ == "__main__":
    sys.exit(main())
