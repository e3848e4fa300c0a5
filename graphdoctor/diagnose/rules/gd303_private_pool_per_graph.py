"""Each graph keeps its own private memory pool where one shared pool would do.

Every capture without ``pool=`` gets a private pool that keeps its high-water mark reserved
for as long as the graph lives. Graphs that are replayed one after another can share one
pool (``torch.cuda.graph(g, pool=first.pool())`` or a ``torch.cuda.graph_pool_handle()``),
and then the memory is about that of the largest, not the sum.

How to fix: create one pool handle and pass it to every capture, capturing in the order the
graphs will replay.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import WARNING, WASTEFUL, Finding, Rule
from graphdoctor.diagnose.view import TraceView, mib
from graphdoctor.trace.names import CAPTURED

ID, NAME = "GD303", "private-pool-per-graph"
LIMIT = 3


def check(view: TraceView) -> Iterator[Finding]:
    own = [g for g in view.manual_graphs()
           if g.status == CAPTURED and not g.shared_pool and g.pool]
    if len({g.pool for g in own}) < LIMIT:
        return
    total, largest = sum(g.pool_bytes for g in own), max(g.pool_bytes for g in own)
    yield RULE.finding(
        title=f"{len(own)} graphs each keep a private pool: {mib(total)} reserved where one "
              f"shared pool would need about {mib(largest)}",
        explanation=(f"{len(own)} graphs were captured without pool=, so each reserves its own "
                     f"memory ({', '.join(mib(g.pool_bytes) for g in own[:8])}). Graphs replayed "
                     "in sequence can share one pool."),
        fix="pool = torch.cuda.graph_pool_handle(); capture each graph with "
            "torch.cuda.graph(g, pool=pool).",
        evidence=tuple(view.evidence("graphs", view.trace.graphs.index(g)) for g in own),
        location=view.location(own[0].stack),
        measurements={"graphs": len(own), "reserved_bytes": total,
                      "shared_estimate_bytes": largest})


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=WASTEFUL)
