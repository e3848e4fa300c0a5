"""A verdict for each graph and each compiled function: the one-line answer.

Manual graphs: failed, unsafe, faster, neutral, slower, not replayed, or unmeasured (replayed
but with no eager run of the same code to compare with: graphdoctor then says so instead of
inventing a baseline, and says what to add to measure one). Compiled functions under
reduce-overhead: skipped, re-recorded, or the same measured kinds. Speedups below 1.10x count
as neutral, below 0.95x as slower. In a run with CUDA graphs off (the second run of
``run --baseline``, a ``compare`` variant) each compiled or graphed function that ran
without graphs gets a "graphs-off" verdict with its eager time per call.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphdoctor.diagnose import measure, unmeasured
from graphdoctor.diagnose.baseline import graphs_off
from graphdoctor.diagnose.findings import (
    FAILED,
    FASTER,
    NEUTRAL,
    NOT_REPLAYED,
    RERECORDED,
    SKIPPED,
    SLOWER,
    UNMEASURED,
    UNSAFE,
    WITHOUT_GRAPHS,
    Finding,
    Verdict,
)
from graphdoctor.diagnose.measure_text import compared_detail, us
from graphdoctor.diagnose.rules import (
    gd109_empty_graph,
    gd205_rerecord_per_shape,
    gd208_recompiles,
    gd209_static_input_moved,
)
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import Function, Graph
from graphdoctor.trace.names import CAPTURED, GRAPHS_ENV, GRAPHS_OFF
from graphdoctor.units import format_speedup

FASTER_FROM = 1.10  # speedups from here count as faster
SLOWER_BELOW = 0.95  # and below this as slower
RERECORDED_FROM = 3  # graphs of one compiled function


def verdicts(view: TraceView, findings: Sequence[Finding]) -> list[Verdict]:
    out = [_graph_verdict(view, g, findings) for g in view.manual_graphs()]
    out += [_function_verdict(view, fn, findings) for fn in view.compiled_functions]
    if graphs_off(view.trace):
        out += [_graphs_off_verdict(view, fn) for fn in view.graphed_functions]
    out += _unattributed_skips(view, findings)
    return out


def _graph_verdict(view: TraceView, graph: Graph, findings: Sequence[Finding]) -> Verdict:
    mine = [f for f in findings if f.graph == graph.id]
    subject = f"graph {graph.id} ({graph.api}, {view.where(graph.stack)})"
    ids = tuple(f"{f.id} {f.name}" for f in mine)
    failed = [f for f in mine if f.category == FAILED]
    if graph.status != CAPTURED:
        summary = failed[0].title if failed else "capture failed"
        return Verdict(subject, FAILED, f"capture failed: {summary}", graph=graph.id,
                       findings=ids)
    m = measure.of_graph(view, graph)
    if m.replays == 0 and view.trace.status.recording_stopped:
        return Verdict(subject, UNMEASURED, "no replay was recorded: the recording stopped "
                       f"early ({view.trace.status.recording_stopped})", graph=graph.id,
                       findings=ids)
    advice = unmeasured.for_graph(view, graph, m) if _lacks_eager(m) else ""
    return _measured(subject, m, mine, ids, advice, graph=graph.id)


def _lacks_eager(m: measure.Measurement) -> bool:
    """No eager call was timed at all: the verdict says what to add (never calls that were
    made, only whose figures were not known)."""
    return m.replays > 0 and m.eager is None and m.eager_host is None


def _why_unmeasured(m: measure.Measurement) -> str:
    timed = m.eager or m.eager_host
    if timed is None:
        return "no eager run of the same code to compare with, so no speedup is claimed"
    calls = f"its {timed.n} eager call{'s' if timed.n != 1 else ''} of the same code"
    if m.eager is None:
        return (f"{calls} were timed on the host only: their GPU time was not known when the "
                "run ended, so no speedup is claimed")
    return f"{calls} were timed, but not the replays, so no speedup is claimed"


def _measured(subject: str, m: measure.Measurement, mine: list[Finding], ids: tuple[str, ...],
              advice: str, graph: int = -1, function: int = -1) -> Verdict:
    unsafe = [f for f in mine if f.category == UNSAFE]
    empty = [f for f in mine if f.name == gd109_empty_graph.NAME]
    kind, summary = _kind_and_summary(m, advice)
    if unsafe:
        kind, summary = UNSAFE, f"unsafe: {unsafe[0].title}; {summary}"
    elif empty:  # waste, not harm: said first, whatever the timings say
        summary = f"{empty[0].title}; {summary}"
    return Verdict(subject, kind, summary, graph=graph, function=function, speedup=m.speedup,
                   measurements=m.as_dict(), findings=ids)


def _kind_and_summary(m: measure.Measurement, advice: str) -> tuple[str, str]:
    if m.replays == 0:
        return NOT_REPLAYED, "captured but never replayed"
    compared = m.compared
    if compared is None and m.not_covered:
        return UNMEASURED, (f"replayed {m.replays} times; the capture also ran "
                            f"{', '.join(m.not_covered)}, which no eager timing covers, so the "
                            "eager time of the rest is not the same step and no speedup is "
                            "claimed: put the captured step in one function, run it eagerly "
                            "and capture it")
    if compared is None:
        replay = (f"{m.replay.median_us:,.1f} µs per replay" if m.replay else
                  "not timed: the run ended before their GPU time was known")
        return UNMEASURED, (f"replayed {m.replays} times ({replay}); " + _why_unmeasured(m)
                            + (f"; {advice}" if advice else ""))
    speedup = compared.speedup
    detail = compared_detail(m, compared)
    if speedup >= FASTER_FROM:
        return FASTER, f"{format_speedup(speedup)} faster: {detail}"
    if speedup >= SLOWER_BELOW:
        return NEUTRAL, f"no speedup ({format_speedup(speedup)}): {detail}"
    return SLOWER, f"{format_speedup(speedup)}, slower than eager: {detail}"


def _function_verdict(view: TraceView, fn: Function, findings: Sequence[Finding]) -> Verdict:
    mine = [f for f in findings if f.function == fn.id
            or f.graph in {g.id for g in view.graphs_of(fn.id)}]
    ids = tuple(f"{f.id} {f.name}" for f in mine)
    subject = f"compiled {fn.name} ({_where(fn)})"
    graphs = view.graphs_of(fn.id)
    m = measure.of_function(view, fn.id)
    skipped = [f for f in mine if f.category == SKIPPED]
    if not graphs and not m.replays and graphs_off(view.trace):
        return _graphs_off_verdict(view, fn)
    if skipped and not m.replays:
        return Verdict(subject, SKIPPED, f"CUDA graphs skipped: {skipped[0].title}",
                       function=fn.id, findings=ids)
    if len(graphs) >= RERECORDED_FROM:
        steady = _replays_measured(m)
        return Verdict(subject, RERECORDED, _rerecorded(len(graphs), m.replays, mine) + steady,
                       function=fn.id, speedup=m.speedup if steady else None,
                       measurements=m.as_dict(), findings=ids)
    failed = [g for g in graphs if g.status != CAPTURED]
    if failed:
        return Verdict(subject, FAILED, "recording a graph failed", function=fn.id,
                       findings=ids)
    advice = unmeasured.for_function(view, fn) if _lacks_eager(m) else ""
    return _measured(subject, m, mine, ids, advice, function=fn.id)


STEADY_SPREAD = 0.5  # IQR of either side under which a re-recorded function's figures stand


def _replays_measured(m: measure.Measurement) -> str:
    """How much faster the replays of a re-recorded function still were, where both sides
    were timed steadily: a graph recorded again each time is slow to record, and its
    replays may still pay. Where the eager calls mix shapes or compiles (a wide spread, a
    few samples), no figure is claimed."""
    compared = m.compared
    if compared is None or any(side.step.small or side.step.spread >= STEADY_SPREAD
                               for side in (compared.eager_side, compared.replay_side)):
        return ""
    return f"; its replays: {_kind_and_summary(m, '')[1]}"


def _rerecorded(graphs: int, replays: int, mine: list[Finding]) -> str:
    """Why a compiled function recorded a graph per shape, per recompile, or per move of
    its static inputs."""
    recompiled = [f for f in mine if f.name == gd208_recompiles.NAME]
    moved = [f for f in mine if f.name == gd209_static_input_moved.NAME]
    per_shape = [f for f in mine if f.name == gd205_rerecord_per_shape.NAME]
    if moved:
        return (f"recorded {graphs} graphs for {replays} replays, a new one at each move of "
                f"its static inputs: {moved[0].title}")
    if per_shape:
        return per_shape[0].title
    if recompiled:
        count = sum(int(f.measurements.get(gd208_recompiles.RECOMPILE_COUNT,
                                           0)) for f in recompiled)
        each = ", a new one at each recompile" if graphs == count + 1 else ""
        return f"recorded {graphs} graphs for {replays} replays{each}: {recompiled[0].title}"
    return f"recorded {graphs} graphs, one per input shape, for {replays} replays"


def _graphs_off_verdict(view: TraceView, fn: Function) -> Verdict:
    """A function that ran without CUDA graphs, in a run that switched them off."""
    m = measure.of_function(view, fn.id)
    return Verdict(f"{fn.kind} {fn.name} ({_where(fn)})", WITHOUT_GRAPHS,
                   f"ran without CUDA graphs ({GRAPHS_ENV}={GRAPHS_OFF}): {_eager_times(m)}",
                   function=fn.id, measurements=m.as_dict())


def _eager_times(m: measure.Measurement) -> str:
    if m.eager is not None and m.eager_host is not None:
        return (f"{us(m.eager)} GPU time and {us(m.eager_host)} host time per call (medians "
                f"of {m.eager.n}, IQR {m.eager.spread:.0%})")
    if m.eager_host is not None:
        return (f"{us(m.eager_host)} host time per call (median of {m.eager_host.n}, IQR "
                f"{m.eager_host.spread:.0%}); GPU time not timed")
    return "no eager call timed"


def _unattributed_skips(view: TraceView, findings: Sequence[Finding]) -> list[Verdict]:
    """Skips decided at compile time leave no calls to attach to: one verdict per site."""
    out = []
    for finding in findings:
        if finding.category == SKIPPED and finding.function < 0:
            where = (f"{finding.location.file.rsplit('/', 1)[-1]}:{finding.location.line}"
                     if finding.location else "unknown line")
            out.append(Verdict(f"compiled function ({where})", SKIPPED,
                               f"CUDA graphs skipped: {finding.title}",
                               findings=(f"{finding.id} {finding.name}",)))
    return out


def _where(fn: Function) -> str:
    return f"{fn.file.rsplit('/', 1)[-1]}:{fn.line}" if fn.file else fn.compile_id or "?"
