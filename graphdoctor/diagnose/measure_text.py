"""How a verdict says what it measured: both figures per step on each side, the samples,
their spread, whether eager was host-bound, which figure decided and why, and where the
eager figures came from (see :mod:`graphdoctor.diagnose.measure` for the definitions)."""

from __future__ import annotations

from graphdoctor.diagnose.measure import (
    BASELINE_RUN,
    GPU,
    HOST,
    WANTED_SAMPLES,
    Comparison,
    Measurement,
    Side,
    Stat,
)
from graphdoctor.trace.names import COVERING_BASIS, STEP_BASIS
from graphdoctor.units import format_speedup

WHY_THIS_FIGURE = "each side's longer figure is what the loop waits on"
FROM_BASELINE = "eager from the --baseline run (the script run again with CUDA graphs off)"


def us(value: Stat) -> str:
    return f"{value.median_us:,.1f} µs"


def compared_detail(m: Measurement, compared: Comparison) -> str:
    """``eager A vs replay B per step (figure, samples, spread); other figures; host-bound;
    why`` and, for eager figures from another run, which run."""
    eager, replay = compared.eager_side, compared.replay_side
    spread = (f"{_spread(eager.step)} and {_spread(replay.step)}"
              if eager.step.small or replay.step.small else
              f"IQR {eager.step.spread:.0%} and {replay.step.spread:.0%}")
    samples = (f"({_figure_name(compared)}, medians of {eager.step.n} and {replay.step.n}, "
               f"{spread})")
    if m.basis == STEP_BASIS:
        first = (f"{m.eager_of}() per call: {us(eager.step)} before the graph existed vs "
                 f"{us(replay.step)} with it {samples}")
    else:
        first = f"eager {us(eager.step)} vs replay {us(replay.step)} per step {samples}"
    parts = [first, _small_sample(eager.step, replay.step), _paced(m), _covering(m),
             _other_figures(eager, replay), _host_bound(m), WHY_THIS_FIGURE,
             _loop(m, compared)]
    if m.eager_source == BASELINE_RUN:
        parts.append(FROM_BASELINE)
    parts.append(_around(m))
    return "; ".join(p for p in parts if p)


def _spread(value: Stat) -> str:
    """IQR relative to the median; for a small sample, its range instead."""
    if value.small:
        return f"range {value.low_us:,.1f}-{value.high_us:,.1f} µs" if value.n > 1 \
            else "one sample"
    return f"IQR {value.spread:.0%}"


def _small_sample(eager: Stat, replay: Stat) -> str:
    """Said where either side rests on fewer samples than it should (WANTED_SAMPLES)."""
    small = [f"{name} on {value.n}" for name, value in (("eager", eager), ("replay", replay))
             if value.small]
    if not small:
        return ""
    more = " and ".join(name for name, value in (("eager calls", eager), ("replays", replay))
                        if value.small)
    return (f"a small sample ({' and '.join(small)}, fewer than {WANTED_SAMPLES}): the figure "
            f"stands, more {more} would firm it up")


def _paced(m: Measurement) -> str:
    """Said where the replay's GPU figure is the loop's pace (trace.loop_pace)."""
    if m.replay_lone is None or m.replay is None:
        return ""
    return (f"replay GPU time is the loop's pace over {m.replay.n} runs of replays issued back "
            f"to back; a lone replay took {us(m.replay_lone)}, its launch latency included")


LOOP_BEYOND = 1.25  # a loop's step this much longer than a replay is paced by its own work


def _loop(m: Measurement, compared: Comparison) -> str:
    """Said where the loop around the replays took longer a step than the replay itself:
    the script's own work between replays paces it, and a loop's timing of itself (a
    script's "graphed" figure) counts that work, which the replay's figure does not."""
    replay = max(compared.replay_side.step.median_us,
                 m.replay_host.median_us if m.replay_host else 0.0)
    if m.loop is None or m.loop.median_us <= LOOP_BEYOND * replay:
        return ""
    return (f"the loop around the replays started one every {us(m.loop)} on the host "
            f"(median of {m.loop.n}): its own work between replays, not the graph, sets that "
            "pace, which a timing of the loop counts and the replay's figure does not")


def _around(m: Measurement) -> str:
    around = m.around.compared if m.around is not None else None
    if m.around is None or around is None:
        return ""
    return (f"around it, {m.around.eager_of}() per call: {us(around.eager_side.step)} before "
            f"the graph existed vs {us(around.replay_side.step)} with it, "
            f"{format_speedup(around.speedup)} (medians of {around.eager_side.step.n} and "
            f"{around.replay_side.step.n}): what a loop of it sees, its work outside the "
            f"graph included")


def _covering(m: Measurement) -> str:
    if m.basis != COVERING_BASIS or not m.eager_of:
        return ""
    return f"eager is calls of {m.eager_of}(), which made every call the captured block made"


def _figure_name(compared: Comparison) -> str:
    eager, replay = compared.eager_side.waits_on, compared.replay_side.waits_on
    if eager == replay:
        return f"{eager} time"
    return f"eager {eager} time vs replay {replay} time"


def _other(side: Side) -> Stat | None:
    return side.gpu if side.waits_on == HOST else side.host


def _other_figures(eager: Side, replay: Side) -> str:
    """The figures that did not decide, so that every speedup shows both."""
    eager_other, replay_other = _other(eager), _other(replay)
    if eager_other is None or replay_other is None:
        return ""
    if eager.waits_on == replay.waits_on:
        other = HOST if eager.waits_on == GPU else GPU
        return f"{other} time {us(eager_other)} vs {us(replay_other)}"
    eager_name = HOST if eager.waits_on == GPU else GPU
    replay_name = HOST if replay.waits_on == GPU else GPU
    return f"eager {eager_name} time {us(eager_other)}, replay {replay_name} time " \
           f"{us(replay_other)}"


def _host_bound(m: Measurement) -> str:
    share = m.launch_share
    if share is None or m.host_bound is None:
        return ""
    if m.host_bound:
        return f"eager was host-bound (launching took {share:.0%} of its GPU time)"
    return f"eager was not host-bound (launching took {share:.0%} of its GPU time)"
