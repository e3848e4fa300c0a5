"""Hand-built runs with CUDA graphs off, to stand beside the committed GPU recordings as the
baseline run of ``graphdoctor run --baseline`` (their functions, timed eagerly)."""

from __future__ import annotations

import dataclasses

from graphdoctor.diagnose import diagnose
from graphdoctor.report.document import Report, build
from graphdoctor.trace.model import Call, Function, Meta, Note, RunStatus, Trace
from graphdoctor.trace.names import (
    EAGER_CALL,
    GRAPHS_ENV,
    GRAPHS_OFF,
    KEPT_AS_WRITTEN,
    SWITCHED_OFF,
    WARMUP_CALL,
)
from tests.reports import local_line, trace_for


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


SWITCHED = ("torch.compile (mode='reduce-overhead') at /home/alice/proj/compile_healthy.py:6: "
            "compiled with the same options and triton.cudagraphs=False")


def report_with_baseline(name: str, eager_us: float = 300, host_us: float = 280) -> Report:
    """A recording's report as ``run --baseline`` writes it, its baseline run hand-built."""
    trace = trace_for(name)
    baseline = graphs_off_run(trace.functions, eager_us, host_us)
    baseline.meta = dataclasses.replace(baseline.meta, not_recorded=(
        Note(SWITCHED_OFF, SWITCHED),
        Note(KEPT_AS_WRITTEN, "torch.cuda.graph at /home/alice/proj/x.py:9 captured as written"),
        Note("CUDA", "unrelated")))
    baseline.status = RunStatus(complete=True, reason="exited", exit_code=0, wall_ns=2 * 10**9)
    diagnosis = diagnose(trace, read_line=local_line, baseline=baseline)
    return build(trace, diagnosis, read_line=local_line, baseline=baseline)
