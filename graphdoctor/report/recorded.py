"""The report of a recording: its spools assembled, diagnosed and built into one report, here,
where the recorded code's files can still be read. What ``graphdoctor run`` and
``graphdoctor.check`` write."""

from __future__ import annotations

import linecache
import os
from collections.abc import Sequence

from graphdoctor.diagnose import diagnose, diagnose_ranks
from graphdoctor.report.document import Report, build, build_ranks
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.model import Trace


def report_from_spools(spools: Sequence[str | os.PathLike[str]],
                       baseline: Trace | None = None) -> Report:
    """The report of one spool, or of one spool per rank (rank order); eager calls a
    single-process run lacks come from ``baseline``, the run with CUDA graphs off."""
    if len(spools) == 1:
        trace = assemble_file(spools[0])
        return build(trace, diagnose(trace, read_line=linecache.getline, baseline=baseline),
                     baseline=baseline)
    traces = {rank: assemble_file(spool) for rank, spool in enumerate(spools)}
    return build_ranks(traces, diagnose_ranks(traces, read_line=linecache.getline))
