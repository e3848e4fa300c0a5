"""Jobs for the tests of combined reports: the two-node job recorded on this kind of machine
(fixtures/jobs: four gloo ranks launched as two torchrun nodes, each writing its own report),
and a synthetic job of many ranks made from it."""

from __future__ import annotations

import dataclasses
import functools

from graphdoctor.diagnose import diagnose_ranks
from graphdoctor.report.document import Report, build_ranks
from graphdoctor.report.io import load
from graphdoctor.report.job import LineFromReports
from graphdoctor.trace.model import Trace
from tests.conftest import ROOT

TWO_NODES = ROOT / "fixtures" / "jobs" / "two_nodes"
DEPARTING_RANK, DEPARTING_LINE = 3, 30  # two_nodes_diverge.py: the last rank's all_reduce


def rank_file(rank: int) -> str:
    return str(TWO_NODES / f"job.rank{rank}.json.gz")


@functools.cache
def two_node_rank(rank: int) -> Report:
    """Rank ``rank``'s own report, as its node wrote it; do not mutate."""
    return load(rank_file(rank))


def as_rank(trace: Trace, rank: int, world: int, host: str) -> Trace:
    meta = dataclasses.replace(trace.meta, rank=rank, world_size=world, hostname=host)
    return dataclasses.replace(trace, meta=meta)


def many_ranks(world: int = 64, departing: int = 37, per_host: int = 8) -> Report:
    """A job of ``world`` ranks on hosts of ``per_host``: every rank does what the two-node
    job's rank 0 did, but ``departing``, which does what its rank 3 did (one extra
    all_reduce, then fails)."""
    agreeing, departed = two_node_rank(0), two_node_rank(DEPARTING_RANK)
    traces = {rank: as_rank((departed if rank == departing else agreeing).trace, rank, world,
                            f"node{rank // per_host}")
              for rank in range(world)}
    read = LineFromReports({**agreeing.sources, **departed.sources})
    return build_ranks(traces, diagnose_ranks(traces, read_line=read), read)
