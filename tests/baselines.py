"""Hand-built runs with CUDA graphs off, to stand beside the committed GPU recordings as the
baseline run of ``graphdoctor run --baseline`` (their functions, timed eagerly)."""

from __future__ import annotations

import dataclasses

from graphdoctor.trace.model import Call, Function, Meta, Trace
from graphdoctor.trace.names import EAGER_CALL, GRAPHS_ENV, GRAPHS_OFF, WARMUP_CALL


def graphs_off_run(functions: list[Function], eager_us: float, host_us: float,
                   calls: int = 50) -> Trace:
    """A graphs-off run that called each function eagerly ``calls`` times (after one warm-up
    call), each taking ``eager_us`` of GPU and ``host_us`` of host time."""
    trace = Trace(meta=Meta(env=((GRAPHS_ENV, GRAPHS_OFF),), python="3.12.3"))
    trace.functions = [dataclasses.replace(f, id=i + 10) for i, f in enumerate(functions)]
    for fn in trace.functions:
        trace.tables["calls"].append(Call(0, 10**9, 10**9, fn.id, WARMUP_CALL, -1))
        for i in range(calls):
            jitter = 1 + (i % 5) / 100
            trace.tables["calls"].append(Call(1000 + i * 10_000, int(host_us * 1000 * jitter),
                                              int(eager_us * 1000 * jitter), fn.id,
                                              EAGER_CALL, -1))
    return trace
