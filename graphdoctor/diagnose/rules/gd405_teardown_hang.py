"""``destroy_process_group()`` never returned.

NCCL keeps a reference for every CUDA graph that captured one of its collectives, and
destroying the communicator waits for those graphs to go. A program that captured
collectives and calls ``destroy_process_group()`` while the graphs (or the compiled modules
holding them) are alive hangs at exit (pytorch/pytorch#115388).

How to fix: before ``destroy_process_group()``, ``torch.cuda.synchronize()``, then delete
or ``reset()`` every graph that captured a collective (and ``torch._dynamo.reset()`` for
compiled ones).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import ERROR, UNSAFE, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import TeardownEvent
from graphdoctor.trace.names import CAPTURED

ID, NAME = "GD405", "teardown-hang"


def unfinished_teardown(view: TraceView) -> tuple[int, TeardownEvent] | None:
    """(index, begin) of the ``destroy_process_group()`` the run ended inside, if any."""
    begins = [(i, e) for i, e in enumerate(view.trace.teardown) if e.kind == "begin"]
    ended = any(e.kind == "end" for e in view.trace.teardown)
    if not begins or ended or view.trace.status.complete:
        return None
    return begins[-1]


def check(view: TraceView) -> Iterator[Finding]:
    unfinished = unfinished_teardown(view)
    if unfinished is None:
        return
    index, begin = unfinished
    alive = [g for g in view.graphs if g.status == CAPTURED and g.deleted_at < 0
             and any(c.graph == g.id for c in view.trace.tables["collectives"])]
    yield RULE.finding(
        title=f"destroy_process_group() at {view.where(begin.stack)} never returned"
              + (f" while {_graphs(len(alive))} with captured collectives "
                 f"{'was' if len(alive) == 1 else 'were'} alive" if alive else ""),
        explanation=("The process group was being destroyed when the run ended"
                     + (f"; {'graph' if len(alive) == 1 else 'graphs'} "
                        f"{', '.join(str(g.id) for g in alive)} had captured collectives and "
                        f"{'was' if len(alive) == 1 else 'were'} never destroyed, which makes "
                        "NCCL wait." if alive else ".")),
        fix="Synchronize and delete (or reset()) the graphs before destroy_process_group().",
        evidence=(view.evidence("teardown", index),),
        location=view.location(begin.stack))


def _graphs(count: int) -> str:
    return f"{count} graph" + ("" if count == 1 else "s")


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=UNSAFE)
