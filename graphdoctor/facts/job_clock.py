"""One time axis for the ranks of a job: how far each rank's times are moved to line up.

Every trace counts its times from its own start (the recorder's ``perf_counter``), and
records the wall clock at that start (``meta.clock_unix_ns``). Ranks on one host read one
wall clock, so their starts set them side by side exactly (to the microsecond). Hosts' wall
clocks differ by whatever their time service leaves (NTP: often a millisecond or more), so
each further host is set against the host of the lowest rank at the collectives that hold
every rank's CPU until the last rank arrives (barriers; the object collectives): all ranks
leave one together, within the network's latency. The median of the differences between
the hosts' leaving times is the host's correction; without such a collective the host's own
wall clock stands, and :attr:`JobClock.how` says so. Traces recorded before wall clocks were
kept each count from their own start (the launcher starts the ranks together).

Pure and torch-free, so the reports, the exports and the TUI share it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field

from graphdoctor import units
from graphdoctor.trace.model import Trace

# Collectives that return on every rank at once: the host waits in them for the last rank.
BLOCKING_OPS = frozenset({"barrier", "monitored_barrier", "all_gather_object",
                          "broadcast_object_list"})
OWN_STARTS = "each rank's times count from its own start (recorded without its wall clock)"


@dataclass(frozen=True)
class JobClock:
    """``offsets``: ns to add to a rank's times to place them on the job's axis, whose 0 is
    the earliest rank's start; ``hosts``: each host's ranks; ``how``: in words, per host."""

    offsets: dict[int, int] = field(default_factory=dict)
    hosts: dict[str, tuple[int, ...]] = field(default_factory=dict)
    how: tuple[str, ...] = ()

    def offset(self, rank: int) -> int:
        return self.offsets.get(rank, 0)


def job_clock(traces: Mapping[int, Trace]) -> JobClock:
    """The job's time axis for ``traces`` ({rank: trace})."""
    hosts = _hosts(traces)
    if not hosts:  # a single process: nothing to line up
        return JobClock()
    if not all(t.meta.clock_unix_ns for t in traces.values()):
        return JobClock(dict.fromkeys(traces, 0), hosts, (OWN_STARTS,))
    starts = {rank: t.meta.clock_unix_ns for rank, t in traces.items()}
    reference, *others = hosts
    moves = {host: _correction(traces, starts, hosts[reference], hosts[host])
             for host in others}
    for host, move in moves.items():
        for rank in hosts[host]:
            starts[rank] += move.ns if move else 0
    first = min(starts.values())
    return JobClock({rank: start - first for rank, start in starts.items()}, hosts,
                    _how(reference, moves))


@dataclass(frozen=True)
class _Move:
    """How far a host's wall clock was moved, at how many barriers, agreeing within what."""

    ns: int
    barriers: int
    spread: int


MOST_HOSTS_NAMED = 3  # beyond, the hosts set by barriers are said in one line


def _how(reference: str, moves: Mapping[str, _Move | None]) -> tuple[str, ...]:
    said = [f"{_named(reference)}: ranks set by their wall clock at start"]
    unmoved = [host for host, move in moves.items() if move is None]
    moved = {host: move for host, move in moves.items() if move is not None}
    if len(moves) < MOST_HOSTS_NAMED:
        said += [f"{_named(host)}: {_moved(move)}" for host, move in moved.items()]
    elif moved:
        said.append(_moved_together(list(moved.values())))
    if unmoved:
        said.append(f"{', '.join(map(_named, unmoved))}: their own wall clock (no barrier "
                    "shared with the first host to set it by)")
    return tuple(said)


def _moved(move: _Move) -> str:
    return (f"moved {_signed(move.ns)} to line up {units.counted(move.barriers, 'barrier')} "
            f"with the first host (they agree within {units.format_duration(move.spread)})")


def _moved_together(moves: list[_Move]) -> str:
    low, high = min(m.ns for m in moves), max(m.ns for m in moves)
    spread = units.format_duration(max(m.spread for m in moves))
    by = _signed(low) if low == high else f"{_signed(low)} to {_signed(high)}"
    return (f"{len(moves)} other hosts: moved {by} to line up the barriers they left with the "
            f"first host (at least {min(m.barriers for m in moves)} each, agreeing within "
            f"{spread})")


def _hosts(traces: Mapping[int, Trace]) -> dict[str, tuple[int, ...]]:
    """Each host's ranks, the host of the lowest rank first."""
    hosts: dict[str, list[int]] = {}
    for rank in sorted(traces):
        hosts.setdefault(traces[rank].meta.hostname, []).append(rank)
    return {host: tuple(ranks) for host, ranks in hosts.items()}


def _named(host: str) -> str:
    return f"host {host}" if host else "an unnamed host"


def _correction(traces: Mapping[int, Trace], starts: Mapping[int, int],
                reference: tuple[int, ...], other: tuple[int, ...]) -> _Move | None:
    """How far to move ``other``'s wall clock; None where no barrier says."""
    left_reference = _left_blocking(traces, starts, reference)
    left_other = _left_blocking(traces, starts, other)
    shared = sorted(set(left_reference) & set(left_other))
    if not shared:
        return None
    gaps = [left_reference[key] - left_other[key] for key in shared]
    return _Move(int(statistics.median(gaps)), len(shared), max(gaps) - min(gaps))


def _left_blocking(traces: Mapping[int, Trace], starts: Mapping[int, int],
                   ranks: tuple[int, ...]) -> dict[tuple[str, int], int]:
    """When the last of ``ranks`` left each blocking collective ((group, seq): wall ns)."""
    left: dict[tuple[str, int], int] = {}
    for rank in ranks:
        for row in traces[rank].tables["collectives"]:
            if row.op in BLOCKING_OPS and row.dur >= 0 and row.graph < 0:
                key = (row.group, row.seq)
                left[key] = max(left.get(key, 0), starts[rank] + row.t + row.dur)
    return left


def _signed(ns: int) -> str:
    return ("+" if ns >= 0 else "-") + units.format_duration(abs(ns))
