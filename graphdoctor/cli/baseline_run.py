"""``graphdoctor run --baseline``: once the script has run as written, it runs again with
CUDA graphs off (``GRAPHDOCTOR_GRAPHS=off``: torch.compile without CUDA graphs,
make_graphed_callables' callables as they are, raw captures as written), recorded to a
spool of its own (:meth:`graphdoctor.files.run_files.RunFiles.baseline`). Its eager calls
measure the graphs of the first run that ran nothing eagerly; its trace goes no further than
that and the report's account of it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from graphdoctor.cli.common import say
from graphdoctor.trace.endings import INTERRUPTED
from graphdoctor.trace.names import GRAPHS_ENV, GRAPHS_OFF

if TYPE_CHECKING:
    from graphdoctor.launch.supervisor import RunEnd, RunRequest
    from graphdoctor.trace.model import Trace


@dataclass(frozen=True)
class BaselineRecording:
    spool: Path
    trace: Trace | None  # None when the spool could not be assembled


def graphs_off(request: RunRequest) -> RunRequest:
    """The same run with CUDA graphs off, recording to a spool of its own (the processes
    the script starts are not followed: the first run recorded them)."""
    return dataclasses.replace(request, files=request.files.baseline(),
                               env=(*request.env, (GRAPHS_ENV, GRAPHS_OFF)), follow=False)


def record_baseline(request: RunRequest, first: RunEnd, quiet: bool) -> BaselineRecording | None:
    """The run with graphs off, unless the first run was interrupted (the user asked to stop)."""
    from graphdoctor.launch.supervisor import record

    if first.reason == INTERRUPTED:
        return None
    if not quiet:
        say(f"graphdoctor: --baseline: running {request.target} again with CUDA graphs off")
    end = record(graphs_off(request))
    spool = end.spools[0]
    return BaselineRecording(spool, assembled(spool, "the --baseline run"))


def assembled(spool: Path, run: str) -> Trace | None:
    """The trace of ``run``'s spool, or None (said on stderr) where it cannot be read."""
    from graphdoctor.trace.assemble import assemble_file

    try:
        return assemble_file(spool)
    except Exception as error:  # noqa: BLE001 - the other runs' reports still stand
        say(f"graphdoctor: the recording of {run} could not be read ({error!r}); it is left "
            "out")
        return None
