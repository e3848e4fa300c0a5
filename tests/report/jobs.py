"""Jobs for the tests of combined reports: the two-node job recorded on this kind of machine
(fixtures/jobs: four gloo ranks launched as two torchrun nodes, each writing its own report;
tensor-parallel pairs {0,1} and {2,3}, data-parallel pairs {0,2} and {1,3}), and a synthetic
job of many ranks made from it: the four-rank job repeated, each copy's groups its own."""

from __future__ import annotations

import dataclasses
import functools

from graphdoctor.diagnose import diagnose_ranks
from graphdoctor.report.document import Report, build_ranks
from graphdoctor.report.io import load
from graphdoctor.report.job import LineFromReports
from graphdoctor.trace.model import Collective, Table, Trace
from tests.conftest import ROOT

TWO_NODES = ROOT / "fixtures" / "jobs" / "two_nodes"
DEPARTING_RANK, DEPARTING_LINE = 3, 39  # two_nodes_diverge.py: the last rank's all_reduce
DEPARTING_GROUP = "2[2, 3]"  # the last rank's tensor-parallel pair
RECORDED_WORLD = 4


def rank_file(rank: int) -> str:
    return str(TWO_NODES / f"job.rank{rank}.json.gz")


@functools.cache
def two_node_rank(rank: int) -> Report:
    """Rank ``rank``'s own report, as its node wrote it; do not mutate."""
    return load(rank_file(rank))


def as_rank(trace: Trace, rank: int, world: int, host: str) -> Trace:
    """The trace as rank ``rank`` of a job of ``world`` on ``host``: its groups' ranks moved
    by as many copies of the recorded job as come before it."""
    shift = rank - rank % RECORDED_WORLD
    meta = dataclasses.replace(trace.meta, rank=rank, world_size=world, hostname=host)
    rows = [row._replace(group=_moved_group(row.group, shift))
            for row in trace.tables["collectives"]]
    collectives = Table(Collective)
    for row in rows:
        collectives.append(row)
    return dataclasses.replace(trace, meta=meta,
                               tables={**trace.tables, "collectives": collectives})


def _moved_group(label: str, shift: int) -> str:
    """``2[2, 3]`` in the copy of the job that starts at rank 36: ``2+36[38, 39]``."""
    if not shift or "[" not in label:
        return label
    name, _, ranks = label.partition("[")
    moved = [int(r) + shift for r in ranks.rstrip("]").split(", ")]
    return f"{name}+{shift}{moved}"


def many_ranks(world: int = 64, departing: int = 39, per_host: int = 8) -> Report:
    """A job of ``world`` ranks on hosts of ``per_host``: the recorded four-rank job over
    and over, every rank doing what its place in the recorded job did, but only
    ``departing`` (the last of a copy) doing what the recorded job's departing rank 3 did:
    the others in that place leave out its extra all_reduce and end as rank 2 did."""
    assert departing % RECORDED_WORLD == DEPARTING_RANK
    traces = {rank: as_rank(_recorded(rank, departing), rank, world, f"node{rank // per_host}")
              for rank in range(world)}
    sources: dict[str, dict[int, str]] = {}
    for rank in range(RECORDED_WORLD):
        sources.update(two_node_rank(rank).sources)
    read = LineFromReports(sources)
    return build_ranks(traces, diagnose_ranks(traces, read_line=read), read)


def _recorded(rank: int, departing: int) -> Trace:
    """The recorded trace ``rank`` of the synthetic job takes."""
    place = rank % RECORDED_WORLD
    if place != DEPARTING_RANK or rank == departing:
        return two_node_rank(place).trace
    return _agreeing_last_rank()


@functools.cache
def _agreeing_last_rank() -> Trace:
    """The recorded rank 3 without its departure: no extra all_reduce, no error."""
    departed = two_node_rank(DEPARTING_RANK).trace
    rows = list(departed.tables["collectives"])
    extra = max(range(len(rows)), key=lambda i: rows[i].t)
    collectives = Table(Collective)
    for index, row in enumerate(rows):
        if index != extra:
            collectives.append(row)
    return dataclasses.replace(departed, exceptions=[],
                               status=two_node_rank(DEPARTING_RANK - 1).trace.status,
                               tables={**departed.tables, "collectives": collectives})


@functools.cache
def job_of_64() -> Report:
    """The two-rank barrier-in-capture recording (H200s) grown to 64 ranks on hosts of 8:
    each rank what its place in the recorded pair did, so every rank fails its capture at
    the same barrier(); do not mutate."""
    from tests.reports import report_for

    recorded = report_for("dist_barrier_in_capture")
    traces = {}
    for rank in range(64):
        trace = recorded.trace_of(rank % 2)
        meta = dataclasses.replace(trace.meta, rank=rank, world_size=64,
                                   hostname=f"node{rank // 8}")
        traces[rank] = dataclasses.replace(trace, meta=meta)
    read = LineFromReports(recorded.sources)
    return build_ranks(traces, diagnose_ranks(traces, read_line=read), read)
