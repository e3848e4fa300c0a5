"""Under reduce-overhead, inputs that are not static are copied into the graph every call.

CUDAGraph Trees replay from fixed addresses. Parameters, buffers, outputs of an earlier
graph and tensors marked with ``torch._dynamo.mark_static_address`` are read in place; any
other input is first copied into the graph's own buffer, on every call. For a large
activation or a KV cache that copy can cost as much as the work it feeds.

How to fix: pass persistent buffers marked with ``torch._dynamo.mark_static_address(t)``,
feed the outputs of the previous graph, or update inputs in place.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose import measure
from graphdoctor.diagnose.findings import NEUTRAL, WARNING, Finding, Location, Rule
from graphdoctor.diagnose.view import TraceView, mib
from graphdoctor.units import counted

ID, NAME = "GD204", "input-copies-per-replay"
MIN_BYTES = 8 * 2**20


def check(view: TraceView) -> Iterator[Finding]:
    for fn in view.compiled_functions:
        if fn.copied_bytes < MIN_BYTES:
            continue
        m = measure.of_function(view, fn.id)
        graph_ids = {g.id for g in view.graphs_of(fn.id)}
        replay = measure.stat([r.gpu for r in view.trace.tables["replays"] if r.graph in graph_ids])
        timing = (f" A replaying call takes {m.replay.median_us:,.0f} µs of GPU time, the graph "
                  f"replay inside it {replay.median_us:,.0f} µs." if m.replay and replay else "")
        yield RULE.finding(
            title=f"{fn.name} copies {mib(fn.copied_bytes)} of inputs into its graph on every "
                  "call",
            explanation=(f"{counted(fn.copied_inputs, 'input')} of {fn.name} "
                         f"{'is' if fn.copied_inputs == 1 else 'are'} not static, so each "
                         f"replay first copies {mib(fn.copied_bytes)} into the graph's buffers."
                         + timing),
            fix="Mark persistent input buffers with torch._dynamo.mark_static_address, or pass "
                "the previous graph's outputs.",
            location=Location(fn.file, fn.line, fn.name) if fn.file else None, function=fn.id,
            measurements={"copied_bytes": fn.copied_bytes, "copied_inputs": fn.copied_inputs,
                          **({"call": m.replay.as_dict()} if m.replay else {}),
                          **({"replay": replay.as_dict()} if replay else {})})


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=NEUTRAL)
