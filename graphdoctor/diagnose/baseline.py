"""Eager calls from a second run of the script with CUDA graphs off, the baseline that
``graphdoctor run --baseline`` and ``graphdoctor compare`` give a run that has none of its
own.

Function ids are numbered per run, so a function of this run is found in the baseline run
by its name, file and line; failing that, by its name, where the baseline has one function
of that name and kind. Only eager calls count: a call that compiled or warmed up is not
the step the loop repeats.
"""

from __future__ import annotations

from graphdoctor.trace.model import Call, Function, Trace
from graphdoctor.trace.names import EAGER_CALL, GRAPHS_ENV, GRAPHS_OFF


def graphs_off(trace: Trace) -> bool:
    """Whether the run had CUDA graphs switched off (see ``GRAPHS_ENV``)."""
    return (GRAPHS_ENV, GRAPHS_OFF) in trace.meta.env


def match(baseline: Trace, function: Function) -> Function | None:
    """The baseline's function that is ``function`` of the other run, or None."""
    same_place = [f for f in baseline.functions
                  if (f.name, f.file, f.line) == (function.name, function.file, function.line)]
    if same_place:
        return same_place[0]
    same_name = [f for f in baseline.functions
                 if f.name == function.name and f.kind == function.kind]
    return same_name[0] if len(same_name) == 1 else None


def eager_calls(baseline: Trace, function: Function) -> list[Call]:
    """The baseline's eager calls of ``function`` (matched by :func:`match`)."""
    found = match(baseline, function)
    if found is None:
        return []
    return [c for c in baseline.tables["calls"] if c.fn == found.id and c.mode == EAGER_CALL]
