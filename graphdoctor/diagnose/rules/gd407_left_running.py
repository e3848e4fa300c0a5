"""The script left processes running when it ended.

A helper started in a session of its own (``subprocess.Popen(..., start_new_session=True)``),
a server the script launched, a DataLoader worker whose parent died: run plainly, such a
process goes on after the script has ended, holding the GPU's memory, a port or a file, and
a later run finds them taken (``graphdoctor run x.py | grep`` never ended, as the leftover
held its output). graphdoctor ends what a run left (SIGTERM, then SIGKILL) and names each.

How to fix: end what the script starts before it returns: ``proc.terminate()`` then
``proc.wait()`` for a subprocess (or use it as a context manager), ``del`` a DataLoader's
iterator or let its workers stop with the loader, ``pool.close(); pool.join()`` for a
multiprocessing pool.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import WARNING, WASTEFUL, Finding, Rule
from graphdoctor.diagnose.view import TraceView

ID, NAME = "GD407", "left-running"
KIND = "left_running"
NAMED = 5  # processes named in the title; the evidence has them all


def check(view: TraceView) -> Iterator[Finding]:
    left = list(view.trace.tables[KIND])
    if not left:
        return
    survived = [p for p in left if p.survived]
    named = ", ".join(f"pid {p.pid}: {p.name}" for p in left[:NAMED])
    more = f" and {len(left) - NAMED} more" if len(left) > NAMED else ""
    yield RULE.finding(
        title=f"the script left {_processes(len(left))} running when it ended ({named}{more})",
        explanation=("graphdoctor ended them once the run was over; run plainly, they would "
                     "have gone on after the script, holding what they held (GPU memory, a "
                     "port, a file)" + (f"; {_processes(len(survived))} outlived SIGKILL"
                                        if survived else "") + "."),
        fix="End what the script starts before it returns: terminate() and wait() a "
            "subprocess, stop a DataLoader's workers with it, close() and join() a pool.",
        evidence=tuple(view.evidence(KIND, i, f"pid {p.pid}: {p.name}")
                       for i, p in enumerate(left)))


def _processes(count: int) -> str:
    return f"{count} process" + ("" if count == 1 else "es")


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=WASTEFUL)
