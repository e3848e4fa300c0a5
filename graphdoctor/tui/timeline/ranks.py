"""The timeline of a multi-rank report: each rank's lanes as a group, one rank after another,
the way Nsight Systems shows the processes of a multi-process run; every group on one time
axis. Each trace counts its times from its own rank's start: a rank's lanes are moved by its
offset on the job's axis (:mod:`graphdoctor.facts.job_clock`), and whatever the screens ask
of its trace is moved back by the same (:class:`graphdoctor.tui.rank_view.RankView`).

A rank's lanes are the single-process lanes, keyed, labelled and referring to events with
its rank (``r1/syncs``, "r1 Syncs", ``EventRef("syncs", 0, 1)``). Pure; no Textual import.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from graphdoctor.tui.timeline.graph_groups import GraphGroupLane
from graphdoctor.tui.timeline.lanes import Lane, MemoryLane, PhaseLane, UtilisationLane

LABEL_WIDTH = 13  # twelve characters of lane name and a gap
RANKED_LABEL_WIDTH = 16  # room for "r1 " before the longest name, "default strm"
GPU_KEY = "gpu:"
WIDE_SCREEN = 120  # from here on, lane names get the room they need
WIDER = 12  # up to this many columns more than on a narrow screen


def rank_lanes(rank: int, lanes: Sequence[Lane], devices: Collection[int]) -> list[Lane]:
    """``lanes`` of one rank, tagged with it. NVML reads every GPU of the host, so each rank
    sampled the others' GPUs too: only the GPUs the rank used (``devices``, when known)
    keep their utilisation lane."""
    kept = [lane for lane in lanes if not _other_gpu(lane, devices)]
    for lane in kept:
        lane.rank = rank
        lane.key = f"r{rank}/{lane.key}"
        lane.label = f"r{rank} {lane.label}"
        for series in lane.series:
            series.rank = rank
    return kept


def unranked_key(lane: Lane) -> str:
    """A lane's key without the rank :func:`rank_lanes` put before it (``r1/nodes:7`` →
    ``nodes:7``)."""
    return lane.key.rpartition("/")[2]


def shift_lanes(lanes: Sequence[Lane], offset: int) -> None:
    """Move every time the lanes hold by ``offset`` ns (a rank's place on the job's axis)."""
    if not offset:
        return
    for lane in lanes:
        for series in lane.series:
            series.shift(offset)
        if isinstance(lane, GraphGroupLane):
            shift_lanes(lane.members, offset)
        if isinstance(lane, MemoryLane):
            lane.curve.shift(offset)
        if isinstance(lane, UtilisationLane):
            if lane.readings is not None and lane.readings not in lane.series:
                lane.readings.shift(offset)
            lane.run_end = None if lane.run_end is None else lane.run_end + offset


def _other_gpu(lane: Lane, devices: Collection[int]) -> bool:
    if not devices or not lane.key.startswith(GPU_KEY):
        return False
    return int(lane.key[len(GPU_KEY):]) not in devices


def label_width(lanes: Sequence[Lane], screen_width: int = 0) -> int:
    """Columns for lane names (and a gap): wider when they carry a rank, and on a screen of
    WIDE_SCREEN columns or more as wide as the longest name needs, up to WIDER more."""
    narrowest = RANKED_LABEL_WIDTH if any(lane.rank >= 0 for lane in lanes) else LABEL_WIDTH
    if screen_width < WIDE_SCREEN:
        return narrowest
    longest = max((len(lane.label) for lane in lanes), default=0) + 1
    return min(max(narrowest, longest), narrowest + WIDER)


def phase_lane_of(lanes: Sequence[Lane], index: int) -> Lane | None:
    """The phases lane of the group lane ``index`` is in: the nearest at or above it (a
    single-process timeline has one, on top)."""
    for lane in reversed(lanes[:index + 1]):
        if isinstance(lane, PhaseLane):
            return lane
    return next((lane for lane in lanes if isinstance(lane, PhaseLane)), None)


def lane_in_next_rank(lanes: Sequence[Lane], index: int, step: int) -> int:
    """The lane of the next (``step`` 1) or previous (-1) rank that shows what lane ``index``
    shows (its collectives, its "s1 capture" stream), else that rank's first lane; ``index``
    if there is no such rank. Lanes match by name: stream ids differ between processes."""
    ranks = sorted({lane.rank for lane in lanes})
    here = lanes[index]
    position = ranks.index(here.rank) + step
    if not 0 <= position < len(ranks):
        return index
    target = ranks[position]
    group = [i for i, lane in enumerate(lanes) if lane.rank == target]
    same = [i for i in group if _unranked(lanes[i]) == _unranked(here)]
    return (same or group)[0]


def _unranked(lane: Lane) -> str:
    return lane.label.removeprefix(f"r{lane.rank} ")
