"""The numbers a verdict rests on: eager step time, replay time, and what they imply.

Method (said in every report that uses it): each replay, and each eager call of the code a
graph captured, is bracketed by CUDA events on its stream. The GPU time between them is the
step time as the GPU lived it: kernel time when the GPU is the bottleneck, and kernel time
plus waiting for launches when the CPU is. A replay runs the same kernels back to back, so
replay time / eager time estimates the share of the eager step the GPU was busy; the rest is
launch overhead that a graph can remove. The host time of an eager call is the CPU time to
launch its work.
"""

from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass
from typing import Any

from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import Graph
from graphdoctor.trace.names import EAGER_CALL, REPLAYING_CALL

METHOD = ("median GPU time between CUDA events around each call (eager) and each replay; "
          "GPU-busy share = replay time / eager time; spread = interquartile range")
MIN_SAMPLES = 3


@dataclass(frozen=True)
class Stat:
    median_us: float
    p25_us: float
    p75_us: float
    n: int

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median."""
        return (self.p75_us - self.p25_us) / self.median_us if self.median_us else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"median_us": round(self.median_us, 2), "p25_us": round(self.p25_us, 2),
                "p75_us": round(self.p75_us, 2), "n": self.n}


def stat(values_ns: list[int]) -> Stat | None:
    values = sorted(v / 1000 for v in values_ns if v >= 0)
    if not values:
        return None
    if len(values) == 1:
        return Stat(values[0], values[0], values[0], 1)
    quartiles = statistics.quantiles(values, n=4)
    return Stat(statistics.median(values), quartiles[0], quartiles[2], len(values))


@dataclass(frozen=True)
class Comparison:
    """Eager and replay GPU times with enough samples of both to compare them."""

    eager: Stat
    replay: Stat

    @property
    def speedup(self) -> float:
        return self.eager.median_us / self.replay.median_us

    @property
    def busy_share(self) -> float:
        return min(1.0, self.replay.median_us / self.eager.median_us)


@dataclass(frozen=True)
class Measurement:
    replay: Stat | None  # GPU time per replay
    replay_host: Stat | None  # CPU time of the replay call
    eager: Stat | None  # GPU time per eager step
    eager_host: Stat | None  # CPU launch time per eager step
    replays: int
    # torch work the capture ran besides the functions timed eagerly: then the eager
    # time is of part of the step only, and is not compared
    not_covered: tuple[str, ...] = ()

    @property
    def compared(self) -> Comparison | None:
        """Eager against replay; None unless both have MIN_SAMPLES and a replay took time."""
        if self.replay is None or self.eager is None or self.replay.median_us <= 0:
            return None
        if self.not_covered:
            return None
        if self.eager.n < MIN_SAMPLES or self.replay.n < MIN_SAMPLES:
            return None
        return Comparison(self.eager, self.replay)

    @property
    def speedup(self) -> float | None:
        return self.compared.speedup if self.compared else None

    @property
    def comparable(self) -> bool:
        return self.compared is not None

    @property
    def busy_share(self) -> float | None:
        return self.compared.busy_share if self.compared else None

    @property
    def launch_share(self) -> float | None:
        if self.eager is None or self.eager_host is None or not self.eager.median_us:
            return None
        return min(1.0, self.eager_host.median_us / self.eager.median_us)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": METHOD, "replays": self.replays}
        for name in ("replay", "replay_host", "eager", "eager_host"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value.as_dict()
        if self.not_covered:
            out["not_covered"] = list(self.not_covered)
        for name in ("speedup", "busy_share", "launch_share"):
            value = getattr(self, name)
            if value is not None:
                out[name] = round(value, 3)
        return out


def of_graph(view: TraceView, graph: Graph) -> Measurement:
    """A manual graph against the eager calls of the functions its capture ran."""
    return view.measurements.get(graph, functools.partial(_measure_graph, view))


def _measure_graph(view: TraceView, graph: Graph) -> Measurement:
    replays = [r for r in view.trace.tables["replays"] if r.graph == graph.id]
    calls = [c for c in view.trace.tables["calls"]
             if c.fn in graph.callees and c.mode == EAGER_CALL]
    eager, eager_host = _per_step(calls, graph.callees)
    count = max(len(replays), view.trace.replay_counts.get(graph.id, 0))
    return Measurement(stat([r.gpu for r in replays]), stat([r.dur for r in replays]),
                       eager, eager_host, count, graph.uncovered if eager else ())


def _per_step(calls: list[Any], callees: tuple[int, ...]) -> tuple[Stat | None, Stat | None]:
    """Eager step time: the sum over callees of each one's median (a capture of
    ``a(x); b(x)`` is one step of both)."""
    per_fn = [[c for c in calls if c.fn == fn] for fn in callees]
    per_fn = [rows for rows in per_fn if rows]
    if len(per_fn) == 1:
        rows = per_fn[0]
        return stat([c.gpu for c in rows]), stat([c.dur for c in rows])
    if not per_fn:
        return None, None
    gpu = [stat([c.gpu for c in rows]) for rows in per_fn]
    host = [stat([c.dur for c in rows]) for rows in per_fn]
    return _summed(gpu), _summed(host)


def _summed(stats: list[Stat | None]) -> Stat | None:
    present = [s for s in stats if s is not None]
    if not present:
        return None
    return Stat(sum(s.median_us for s in present), sum(s.p25_us for s in present),
                sum(s.p75_us for s in present), min(s.n for s in present))


def of_function(view: TraceView, fn: int) -> Measurement:
    """A compiled function: its replaying calls against its eager-mode calls."""
    calls = [c for c in view.trace.tables["calls"] if c.fn == fn]
    replaying = [c for c in calls if c.mode == REPLAYING_CALL]
    eager = [c for c in calls if c.mode == EAGER_CALL]
    return Measurement(stat([c.gpu for c in replaying]), stat([c.dur for c in replaying]),
                       stat([c.gpu for c in eager]), stat([c.dur for c in eager]),
                       len(replaying))
