"""One graph's eager step beside its replay: the picture behind its verdict.

Every number is the verdict's own: the medians are the measurement the verdict rests on,
read back from the report (:func:`.measure_read_back.from_dict` of ``Verdict.measurements``; a
compiled function's graph has its function's verdict), never measured again here, and the
per-step series are the samples those medians were taken of, in run order, so the picture
can never disagree with the verdict. The bars start at each call's start: the host bar is
the call's host time (its launches), the GPU bar the GPU time between CUDA events recorded
at the call's start and end, which says how long the GPU took, not when it ran.

Between replays: the host time from one replay's end to the next one's start, the syncs the
user's code made in that stretch (:func:`.queries.syncs_between_replays`, which rule GD203
counts too), and the inputs a compiled function copies into its graph before each replay.
Where something was not measured, a plain sentence says so instead. Pure; no Textual import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphdoctor.diagnose import measure, measure_read_back
from graphdoctor.diagnose.findings import Verdict
from graphdoctor.diagnose.measure import (
    BASELINE_RUN,
    GPU,
    HOST,
    WANTED_SAMPLES,
    Comparison,
    Measurement,
    Stat,
)
from graphdoctor.diagnose.verdicts import FASTER_FROM, SLOWER_BELOW
from graphdoctor.facts import queries
from graphdoctor.facts.locations import frame_text
from graphdoctor.trace.event_kinds import HOST_NOT_TIMED
from graphdoctor.trace.model import NONE, Function, Graph, Trace
from graphdoctor.trace.names import (
    CAPTURE_FAILED,
    COMPILED,
    COVERING_BASIS,
    EAGER_CALL,
    REPLAYING_CALL,
    STEP_BASIS,
    STILL_CAPTURING,
)
from graphdoctor.tui.palette import CALL_MARKS
from graphdoctor.tui.report_view import ReportView
from graphdoctor.units import NOT_MEASURED_WORDS, counted, format_duration, format_speedup

EAGER_STYLE = CALL_MARKS[EAGER_CALL].style
GAP_STYLE = "white"
EAGER_SIDE, REPLAY_SIDE = "median eager step", "median replay"
GPU_NOTE = ("each bar starts at its call's start; a GPU bar is the GPU time between CUDA "
            "events at the call's start and end: how long, not when the GPU ran it")
CUPTI_GPU_NOTE = ("each bar starts at its call's start; an eager GPU bar is the GPU time "
                  "between CUDA events at the call's start and end, a replay's is how long "
                  "CUPTI saw the graph run on the GPU: how long, not when")
NO_EAGER = "no eager step of this work was timed: the verdict is unmeasured"
TOP_SOURCES = 3  # lines named as where the syncs between replays come from
STALL_FACTOR, STALL_MIN_SAMPLES = 2, 20  # see drawn_to()

Sample = tuple[int, int]  # (host ns, GPU ns; -1 where the GPU time was not measured)


@dataclass(frozen=True)
class Series:
    """Per-step times in run order (ns), as one sparkline shows them."""

    label: str
    values: tuple[int, ...]
    style: str


@dataclass(frozen=True)
class SyncSource:
    """A line of the user's code that synced between replays, and how often."""

    where: str
    count: int


@dataclass(frozen=True)
class StepStory:
    """What one graph's eager step and replay took, and what happened between replays."""

    graph: Graph
    measurement: Measurement
    # the verdict's speedup: the medians read back are rounded as the report keeps them,
    # so a speedup worked out again from them could differ from it in its last figure
    speedup: float | None = None
    basis: str = ""  # what one eager step (and one replay) is, in words
    eager: tuple[Sample, ...] = ()
    replays: tuple[Sample, ...] = ()
    gaps: tuple[int, ...] = ()
    syncs: int = 0
    sync_sources: tuple[SyncSource, ...] = ()
    compiled: bool = False  # a compiled function's graph: its verdict is the function's
    copied_inputs: int = 0
    copied_bytes: int = 0

    @property
    def failed(self) -> bool:
        return self.graph.status in (CAPTURE_FAILED, STILL_CAPTURING)

    @property
    def eager_elsewhere(self) -> bool:
        """Whether the verdict's eager figures came from a baseline run."""
        m = self.measurement
        return m.eager_source == BASELINE_RUN and m.eager is not None


# -- from the verdict and the trace ---------------------------------------------------------


def story_for(view: ReportView, rank: int, graph_index: int) -> StepStory | None:
    """The story of the ``graph_index``-th graph of ``rank``'s trace; None if that rank
    has no such graph."""
    trace = view.trace_of(rank)
    if not 0 <= graph_index < len(trace.graphs):
        return None
    graph = trace.graphs[graph_index]
    verdict = _verdict_of(view, rank, graph)
    m = verdicts_measurement(trace, graph, verdict)
    return step_story(trace, graph, m, verdicts_speedup(verdict))


def _verdict_of(view: ReportView, rank: int, graph: Graph) -> Verdict | None:
    """The graph's verdict; a compiled function's graph has its function's."""
    found = view.verdict_for(graph.id, rank)
    if found is not None or graph.function == NONE:
        return found
    return next((v for v in view.verdicts if v.function == graph.function
                 and view.rank_key(v.rank) == view.rank_key(rank)), None)


def verdicts_measurement(trace: Trace, graph: Graph, verdict: Verdict | None) -> Measurement:
    """The measurement the verdict rests on, as the report holds it; a graph whose verdict
    measured nothing (a failed capture, torch's own graph) has its replay count only."""
    if verdict is not None and verdict.measurements:
        return measure_read_back.from_dict(verdict.measurements)
    return Measurement(None, None, None, None, queries.replay_count(trace, graph))


def verdicts_speedup(verdict: Verdict | None) -> float | None:
    """The speedup the verdict claims; where it claims none but measured one (a function
    that re-recorded its graph), the one its measurements hold."""
    if verdict is None or verdict.speedup is not None:
        return None if verdict is None else verdict.speedup
    measured = verdict.measurements.get(measure.SPEEDUP)
    if isinstance(measured, bool) or not isinstance(measured, int | float):
        return None
    return float(measured)


def step_story(trace: Trace, graph: Graph, m: Measurement,
               speedup: float | None = None) -> StepStory:
    """What the picture shows of ``graph``, whose verdict rests on ``m`` and says
    ``speedup``."""
    function = _compiled_function(trace, graph)
    eager, replays = _samples(trace, graph, m, function is not None)
    syncs = queries.syncs_between_replays(trace, graph)
    return StepStory(graph, m, speedup, _basis(trace, graph, m, function), tuple(eager),
                     tuple(replays), queries.replay_gaps(queries.replays_of(trace, graph)),
                     len(syncs), _sources(trace, syncs), compiled=function is not None,
                     copied_inputs=function.copied_inputs if function else 0,
                     copied_bytes=function.copied_bytes if function else 0)


def _compiled_function(trace: Trace, graph: Graph) -> Function | None:
    """The compiled function whose graph this is (its verdict is the function's), or None."""
    if graph.api != COMPILED:
        return None
    return queries.function_by_id(trace, graph.function)


def _samples(trace: Trace, graph: Graph, m: Measurement,
             compiled: bool) -> tuple[list[Sample], list[Sample]]:
    """(host, GPU) of each eager step and each replay, in run order: the very rows the
    measurement's medians were taken of (no eager row where they were a baseline run's)."""
    calls = sorted(trace.tables["calls"], key=lambda c: c.t)
    borrowed = m.eager_source == BASELINE_RUN  # its eager rows are in the other run's trace
    step = graph.function if compiled else graph.step if m.basis == STEP_BASIS else NONE
    if step != NONE:
        eager = [] if borrowed else _calls_of(calls, step, EAGER_CALL)
        return eager, _calls_of(calls, step, REPLAYING_CALL)
    replays = [(NONE if r.dur == HOST_NOT_TIMED else r.dur, r.gpu)
               for r in queries.replays_of(trace, graph)]
    return [] if borrowed else _eager_steps(calls, graph.callees), replays


def _calls_of(calls: list[Any], fn: int, mode: str) -> list[Sample]:
    return [(c.dur, c.gpu) for c in calls if c.fn == fn and c.mode == mode]


def _eager_steps(calls: list[Any], callees: tuple[int, ...]) -> list[Sample]:
    """One step per eager call of the callee; where the capture ran several callees, the
    n-th call of each makes the n-th step (as the measurement sums their medians)."""
    per_fn = [rows for fn in callees if (rows := _calls_of(calls, fn, EAGER_CALL))]
    if len(per_fn) == 1:
        return per_fn[0]
    return [(sum(h for h, _ in step), NONE if any(g < 0 for _, g in step)
             else sum(g for _, g in step)) for step in zip(*per_fn)]


def _sources(trace: Trace, syncs: list[queries.IndexedSync]) -> tuple[SyncSource, ...]:
    """The user's lines the syncs come from, most frequent first."""
    by_line = queries.syncs_by_line(trace, syncs)
    lines = sorted(by_line.values(), key=len, reverse=True)[:TOP_SOURCES]
    return tuple(SyncSource(_line_text(trace, trace.tables["syncs"][rows[0]].stack), len(rows))
                 for rows in lines)


def _line_text(trace: Trace, stack: int) -> str:
    frame = queries.culprit_frame(trace, stack)
    return frame_text(frame, trace.meta.cwd) if frame else ""


def _basis(trace: Trace, graph: Graph, m: Measurement, function: Function | None) -> str:
    """What one eager step and one replay are, in words."""
    if function is not None:
        graphs = sum(1 for g in queries.user_graphs(trace) if g.function == function.id)
        every = f", over all {graphs} of its graphs (its verdict is the function's)" \
            if graphs > 1 else ""
        return (f"per call of {function.name}(): its eager calls beside "
                f"its calls that replay a graph{every}")
    if m.basis == STEP_BASIS:
        return f"per call of {m.eager_of}(): before the graph existed beside with it"
    if m.basis == COVERING_BASIS and m.eager_of:
        return (f"an eager step is a call of {m.eager_of}(), which made every call the "
                "capture made")
    names = [f.name for fn in graph.callees if (f := queries.function_by_id(trace, fn))]
    return f"an eager step is a call of {' and '.join(n + '()' for n in names)}" if names else ""


# -- in words --------------------------------------------------------------------------


def median_ns(value: Stat | None) -> float | None:
    return None if value is None else value.median_us * 1000


def _d(value: Stat | None) -> str:
    return "not measured" if value is None else format_duration(value.median_us * 1000)


def outcome(speedup: float) -> str:
    """The verdict's word for a speedup, with its figure (thresholds as the verdict's)."""
    if speedup >= FASTER_FROM:
        return f"{format_speedup(speedup)} faster"
    if speedup >= SLOWER_BELOW:
        return f"no speedup ({format_speedup(speedup)})"
    return f"{format_speedup(speedup)}, slower than eager"


def reading(story: StepStory) -> str:
    """One line saying why the verdict is what it is, from the measured medians; empty
    where eager and replay cannot be compared (:func:`notes` says why)."""
    m, speedup = story.measurement, story.speedup
    compared = m.compared
    if compared is None or speedup is None:
        return ""
    if m.host_bound and speedup >= FASTER_FROM:
        launch = f"in {_d(m.replay_host)}" if m.replay_host else \
            f"at once (its host time {NOT_MEASURED_WORDS})"
        return (f"eager was host-bound: launching took {_d(m.eager_host)} for {_d(m.eager)} "
                f"of GPU work; a replay launches it all {launch} and the GPU then takes "
                f"{_d(m.replay)}: {outcome(speedup)}")
    if compared.replay_side.waits_on == HOST:
        return (f"replays are host-bound: {_d(m.replay_host)} on the host for "
                f"{_d(m.replay)} of GPU work; {outcome(speedup)}")
    return _gpu_reading(m, compared, speedup)


def _gpu_reading(m: Measurement, compared: Comparison, speedup: float) -> str:
    """Eager was not host-bound: what the GPU time did."""
    if compared.eager_side.waits_on == GPU and SLOWER_BELOW <= speedup < FASTER_FROM:
        return (f"the GPU does the same {_d(m.eager)} either way ({_d(m.replay)} replayed): "
                f"GPU-bound, graphs cannot help; {outcome(speedup)}")
    if speedup >= FASTER_FROM:
        return (f"replayed, the same work takes the GPU {_d(m.replay)} instead of "
                f"{_d(m.eager)}: {outcome(speedup)}")
    return (f"eager {_d(compared.eager_side.step)} vs replay {_d(compared.replay_side.step)} "
            f"per step ({compared.figure} time): {outcome(speedup)}")


def notes(story: StepStory) -> list[str]:
    """Plain sentences for what is missing: no replays, no eager step, a GPU time not
    measured, one replay only."""
    graph, m = story.graph, story.measurement
    if graph.status == CAPTURE_FAILED:
        return ["the capture failed, so there are no replays to set beside an eager step"]
    if graph.status == STILL_CAPTURING:
        return ["the run ended inside the capture, so there are no replays"]
    out = ["torch's own pool-keeping capture: no verdict rests on it"] if graph.internal else []
    if m.replays == 0:
        return [*out, "captured but never replayed: there is no replay to compare"]
    out += _replay_notes(m)
    out += _eager_notes(m)
    if story.eager_elsewhere:
        out.append("the verdict's eager figures came from the --baseline run: its medians "
                   "are drawn, its per-step times are not in this report")
    return out


def _replay_notes(m: Measurement) -> list[str]:
    if m.replay is None:
        return ["the replays' GPU time was not measured: the run ended before it was known"]
    out = ["one replay only: there are no gaps between replays"] if m.replays == 1 else []
    if m.replay.small:
        out.append(f"only {counted(m.replay.n, 'replay')} timed, fewer than {WANTED_SAMPLES}: "
                   "a small sample")
    return out


def _eager_notes(m: Measurement) -> list[str]:
    if m.not_covered:
        return [f"the capture also ran {', '.join(m.not_covered)}, which no eager timing "
                "covers: the eager step is not the same work, so the verdict is unmeasured"]
    if m.eager is None and m.eager_host is None:
        return [NO_EAGER]
    if m.eager is None:
        return ["the eager steps' GPU time was not measured: the verdict is unmeasured"]
    if m.eager.small:
        return [f"only {counted(m.eager.n, 'eager step')} timed, fewer than {WANTED_SAMPLES}: "
                "a small sample"]
    return []
