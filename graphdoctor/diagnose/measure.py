"""The numbers a verdict rests on: eager step time, replay time, and what they imply.

Method (said in every report that uses it): each replay, and each eager call of the code a
graph captured, is bracketed by CUDA events on its stream. The GPU time between them is the
step time as the GPU lived it: kernel time when the GPU is the bottleneck, and kernel time
plus waiting for launches when the CPU is. A replay runs the same kernels back to back, so
replay time / eager time estimates the share of the eager step the GPU was busy; the rest is
launch overhead that a graph can remove. The host time of a call is the CPU time it took:
for an eager call, the time to launch its work; for a replay, the replay call's own.

In a loop of replays issued back to back, a lone replay's events also hold its launch
latency, which the loop hides: where at least :data:`WANTED_SAMPLES` spans between timed
replays were back to back (:mod:`graphdoctor.trace.loop_pace`), the replay's GPU figure is
that pace, and the lone one is kept beside it (``replay_lone``).

Host-bound: eager is host-bound when its host time per step is at least
:data:`HOST_BOUND_FROM` (80%) of its GPU time per step: the GPU then sat idle between
kernels, waiting for the next launch, for most of the step.

What the loop waits on: a step is done when both its launches (host time) and its GPU work
(GPU time) are. A loop that syncs each step waits for the GPU time, which already holds the
waits for launches; a loop that never waits for the GPU is paced by its host time once that
is the longer, as when launching a replay through torch.compile's bookkeeping takes longer
than running it. So on each side the longer median of the two is the step time the loop
waits on; the speedup is eager's over replay's, and the verdict names the figure each side
used ("GPU" or "host").

What the eager figures are calls of (``basis``): the functions the capture ran (its
callees); for a captured block of inline code (``model(x)``, ``loss.backward()``,
``opt.step()``), the user function that made every one of those calls eagerly, the one
making fewest besides (covering); or, where neither was run eagerly, the user function the
graph replays inside, timed before the graph existed and with it (its step): the speedup is
then that function's, per call, graph and all. A compiled function's verdict is per call of
the function; where its graph replays inside such a step (the decode loop around a compiled
decode step), that step's figures come with it (``around``): what the loop sees, its own
work outside the graph included.

The eager figures come from the same run, or, under ``graphdoctor run --baseline`` and
``graphdoctor compare``, from a second run of the script with CUDA graphs off
(:data:`BASELINE_RUN`); the measurement says which (``eager_source``).
"""

from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass
from typing import Any

from graphdoctor.diagnose import baseline
from graphdoctor.diagnose.view import TraceView
from graphdoctor.facts import queries
from graphdoctor.trace.event_kinds import HOST_NOT_TIMED
from graphdoctor.trace.loop_pace import host_gaps
from graphdoctor.trace.model import Call, Graph, Trace
from graphdoctor.trace.names import COVERING_BASIS, EAGER_CALL, REPLAYING_CALL, STEP_BASIS

METHOD = ("median GPU time between CUDA events around each call (eager) and each replay (or, "
          "over replays issued back to back, per replay between timed ones), and "
          "median host (CPU) time of each; each side's step time is the longer of the two; "
          "GPU-busy share = replay GPU time / eager GPU time; spread = interquartile range / "
          "median; host-bound = eager host time >= 80% of eager GPU time")
# samples a side should have; fewer (PyTorch's recipe warms up 3 times, the first cold) are
# still compared, and the verdict says the figure rests on a small sample, with its range
WANTED_SAMPLES = 3
HOST_BOUND_FROM = 0.8  # eager host time / eager GPU time from which eager is host-bound
GPU, HOST = "GPU", "host"  # the figure a side's step time is
# fields of a verdict's measurements (:meth:`Measurement.as_dict`) a reader may look up by
# name; the rest it reads back whole, typed, through :func:`.measure_read_back.from_dict`
REPLAYS, SPEEDUP = "replays", "speedup"
SAME_RUN, BASELINE_RUN = "same run", "baseline run"  # where the eager figures come from


@dataclass(frozen=True)
class Stat:
    median_us: float
    p25_us: float
    p75_us: float
    n: int
    p95_us: float = 0.0
    low_us: float = 0.0  # the smallest and the largest sample: what a small sample shows
    high_us: float = 0.0

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median."""
        return (self.p75_us - self.p25_us) / self.median_us if self.median_us else 0.0

    @property
    def small(self) -> bool:
        """Fewer samples than a side should have: the figure stands, with its range said."""
        return self.n < WANTED_SAMPLES

    def as_dict(self) -> dict[str, Any]:
        return {"median_us": round(self.median_us, 2), "p25_us": round(self.p25_us, 2),
                "p75_us": round(self.p75_us, 2), "p95_us": round(self.p95_us, 2), "n": self.n,
                "low_us": round(self.low_us, 2), "high_us": round(self.high_us, 2)}


def stat(values_ns: list[int]) -> Stat | None:
    values = sorted(v / 1000 for v in values_ns if v >= 0)
    if not values:
        return None
    if len(values) == 1:
        return Stat(values[0], values[0], values[0], 1, values[0], values[0], values[0])
    # two samples put the exclusive method's quartiles outside them: kept to the samples
    low, _, high = (min(max(q, values[0]), values[-1]) for q in statistics.quantiles(values, n=4))
    return Stat(statistics.median(values), low, high, len(values),
                statistics.quantiles(values, n=20, method="inclusive")[-1], values[0],
                values[-1])


@dataclass(frozen=True)
class Side:
    """One side of a comparison: GPU and host time per step."""

    gpu: Stat
    host: Stat | None

    @property
    def waits_on(self) -> str:
        """The figure the loop waits on: the longer of the two medians."""
        return HOST if self.host is not None and self.host.median_us > self.gpu.median_us \
            else GPU

    @property
    def step(self) -> Stat:
        return self.host if self.host is not None and self.waits_on == HOST else self.gpu


@dataclass(frozen=True)
class Comparison:
    """Eager and replay GPU times with enough samples of both to compare them."""

    eager: Stat
    replay: Stat
    eager_host: Stat | None = None
    replay_host: Stat | None = None

    @property
    def eager_side(self) -> Side:
        return Side(self.eager, self.eager_host)

    @property
    def replay_side(self) -> Side:
        return Side(self.replay, self.replay_host)

    @property
    def speedup(self) -> float:
        """Eager's step time over replay's, each the figure its loop waits on."""
        return self.eager_side.step.median_us / self.replay_side.step.median_us

    @property
    def busy_share(self) -> float:
        return min(1.0, self.replay.median_us / self.eager.median_us)

    @property
    def figure(self) -> str:
        """Which figure the speedup compares: "GPU", "host", or one per side."""
        eager, replay = self.eager_side.waits_on, self.replay_side.waits_on
        return eager if eager == replay else f"eager {eager}, replay {replay}"


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
    eager_source: str = SAME_RUN
    # what the eager figures are calls of (trace.names.*_BASIS), and that function's name
    # where it is not what the capture called: a covering function, or the step function
    # whose "replay" figures are then its calls with the graph
    basis: str = ""
    eager_of: str = ""
    # the step function a compiled function's graph replays inside, measured the same way:
    # what a loop around the function sees, its own work outside the graph included
    around: Measurement | None = None
    # a lone replay's GPU time, where ``replay`` is the loop's pace (trace.loop_pace)
    replay_lone: Stat | None = None
    # the host time from one replay's start to the next: the loop around them, its own work
    # between replays included (trace.loop_pace.host_gaps)
    loop: Stat | None = None

    @property
    def compared(self) -> Comparison | None:
        """Eager against replay, however few the samples of either (:attr:`Stat.small`);
        None where either was not timed, a replay took no time, or the eager calls do not
        cover the step."""
        if self.replay is None or self.eager is None or self.replay.median_us <= 0:
            return None
        if self.not_covered:
            return None
        return Comparison(self.eager, self.replay, self.eager_host, self.replay_host)

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

    @property
    def host_bound(self) -> bool | None:
        """Whether eager was host-bound (see the module's docstring); None if unknown."""
        share = self.launch_share
        return None if share is None else share >= HOST_BOUND_FROM

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": METHOD, REPLAYS: self.replays}
        for name in ("replay", "replay_host", "eager", "eager_host", "replay_lone", "loop"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value.as_dict()
        if self.not_covered:
            out["not_covered"] = list(self.not_covered)
        for name in (SPEEDUP, "busy_share", "launch_share"):
            value = getattr(self, name)
            if value is not None:
                out[name] = round(value, 3)
        if self.eager is not None:
            out["eager_source"] = self.eager_source
        if self.basis:
            out["basis"] = self.basis
        if self.eager_of:
            out["eager_of"] = self.eager_of
        if self.host_bound is not None:
            out["host_bound"] = self.host_bound
        if self.compared is not None:
            out["figure"] = self.compared.figure
        if self.around is not None:
            out["around"] = self.around.as_dict()
        return out


def of_graph(view: TraceView, graph: Graph) -> Measurement:
    """A manual graph against the eager calls of the functions its capture ran."""
    return view.measurements.get(graph, functools.partial(_measure_graph, view))


def _measure_graph(view: TraceView, graph: Graph) -> Measurement:
    """Its replays against its callees' eager calls; where those cannot be compared, its
    step function's calls before the graph existed against those with it; and only then
    the callees' calls in a baseline run (this run's own figures come first)."""
    direct = _against_callees(view, graph, borrow=False)
    if direct.comparable:
        return direct
    if graph.step >= 0:
        step = _against_step(view, graph)
        if step.comparable:
            return step
    return _against_callees(view, graph, borrow=True)


def _against_step(view: TraceView, graph: Graph) -> Measurement:
    calls = view.trace.tables["calls"].rows_where("fn", graph.step)
    eager = [c for c in calls if c.mode == EAGER_CALL]
    with_graph = [c for c in calls if c.mode == REPLAYING_CALL]
    step = view.function(graph.step)
    return Measurement(stat([c.gpu for c in with_graph]), stat([c.dur for c in with_graph]),
                       stat([c.gpu for c in eager]), stat([c.dur for c in eager]),
                       queries.replay_count(view.trace, graph), basis=STEP_BASIS,
                       eager_of=step.name if step else "")


def _against_callees(view: TraceView, graph: Graph, borrow: bool) -> Measurement:
    replays = view.trace.tables["replays"]
    mine = replays.positions_where("graph", graph.id)  # columns read, no row made for each
    on_gpu, on_host, starts, threads = ([replays.column(name)[i] for i in mine]
                                        for name in ("gpu", "dur", "t", "thread"))
    calls = [c for c in view.trace.tables["calls"].rows_where("fn", *graph.callees)
             if c.mode == EAGER_CALL]
    eager, eager_host = _per_step(calls, graph.callees)
    source = SAME_RUN
    if borrow and _too_few(eager) and view.baseline is not None:
        borrowed, callees = _baseline_calls(view, view.baseline, graph.callees)
        gpu, host = _per_step(borrowed, callees)
        if gpu is not None and gpu.n > (eager.n if eager else 0):
            eager, eager_host, source = gpu, host, BASELINE_RUN
    covering = view.function(graph.callees[0]) \
        if graph.basis == COVERING_BASIS and graph.callees else None
    replay, lone = _replay_figure(graph, stat(on_gpu))
    ordered = sorted(range(len(starts)), key=starts.__getitem__)
    loop = stat(host_gaps([starts[i] for i in ordered], [threads[i] for i in ordered]))
    return Measurement(replay, _host_times(on_host), eager, eager_host,
                       queries.replay_count(view.trace, graph), eager_source=source,
                       not_covered=graph.uncovered if eager else (), basis=graph.basis,
                       eager_of=covering.name if covering else "", replay_lone=lone,
                       loop=loop)


def _replay_figure(graph: Graph, lone: Stat | None) -> tuple[Stat | None, Stat | None]:
    """A replay's GPU time, and a lone replay's where the first is the loop's pace: over
    enough runs of back-to-back replays (``graph.paces``), what a replay costs the loop."""
    pace = stat(list(graph.paces)) if len(graph.paces) >= WANTED_SAMPLES else None
    return (pace, lone) if pace is not None and lone is not None else (lone, None)


def _host_times(durations: list[int]) -> Stat | None:
    """The replay calls' host time; None where it was not taken (launches CUPTI saw)."""
    return stat([d for d in durations if d != HOST_NOT_TIMED])


def _too_few(eager: Stat | None) -> bool:
    return eager is None or eager.small


def _baseline_calls(view: TraceView, baseline_trace: Trace,
                    callees: tuple[int, ...]) -> tuple[list[Call], tuple[int, ...]]:
    """The baseline run's eager calls of these functions, and their ids in that run."""
    calls: list[Call] = []
    for fn in callees:
        function = view.function(fn)
        calls += baseline.eager_calls(baseline_trace, function) if function else []
    return calls, tuple(dict.fromkeys(c.fn for c in calls))


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
                sum(s.p75_us for s in present), min(s.n for s in present),
                sum(s.p95_us for s in present), sum(s.low_us for s in present),
                sum(s.high_us for s in present))


def of_function(view: TraceView, fn: int) -> Measurement:
    """A compiled function: its replaying calls against its eager-mode calls (this run's,
    or the baseline run's where this run has too few)."""
    calls = [c for c in view.trace.tables["calls"] if c.fn == fn]
    replaying = [c for c in calls if c.mode == REPLAYING_CALL]
    eager = [c for c in calls if c.mode == EAGER_CALL]
    source = SAME_RUN
    if len(eager) < WANTED_SAMPLES and view.baseline is not None:
        borrowed, _ = _baseline_calls(view, view.baseline, (fn,))
        if len(borrowed) > len(eager):
            eager, source = borrowed, BASELINE_RUN
    return Measurement(stat([c.gpu for c in replaying]), stat([c.dur for c in replaying]),
                       stat([c.gpu for c in eager]), stat([c.dur for c in eager]),
                       len(replaying), eager_source=source, around=_around(view, fn))


def _around(view: TraceView, fn: int) -> Measurement | None:
    """The first comparable step measurement of this function's graphs, if any."""
    for graph in view.graphs_of(fn):
        if graph.step >= 0 and (step := _against_step(view, graph)).comparable:
            return step
    return None
