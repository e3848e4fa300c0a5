"""torch failed one of its own checks while compiling or recording a graph: a bug in torch,
set off by something the call did that torch does not handle.

Some errors say so themselves: CUDA graph trees' ``check_memory_pool`` ("These storage data
ptrs are not allocated in pool ... This could be a bug in inductor aliasing tracking ...
Please file an issue"), an internal assert, dynamo's internal error. The traceback ends in
torch, and the script's line it names is the compiled function's own, at its decorator;
what set the bug off is in the call: a CPU tensor among the inputs of a reduce-overhead
function (torch 2.11 fails this way on a 0-d CPU index), or two inputs on one memory.
graphdoctor names the call's line and its inputs, what stands out among them, and the facts
a report to torch needs.

How to fix: report it to PyTorch with those facts; meanwhile, change what set it off (pass
the CPU tensor on the GPU, or as a Python number; pass a copy of one of two aliased inputs),
or run the function without CUDA graphs (``mode="max-autotune-no-cudagraphs"``).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.known_errors import is_torch_bug
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.event_kinds import CallInput, ErrorLink, ExceptionRecord

ID, NAME = "GD112", "torch-internal-error"
KIND = "call_inputs"
REPORT_AT = "https://github.com/pytorch/pytorch/issues"


def check(view: TraceView) -> Iterator[Finding]:
    for index, record in enumerate(view.trace.exceptions):
        link = next((link for link in record.chain if is_torch_bug(link)), None)
        if link is not None:
            yield _finding(view, index, record, link, _inputs_of(view, record.t))


def _inputs_of(view: TraceView, t: int) -> list[tuple[int, CallInput]]:
    """The inputs written for the last failed call before ``t``."""
    rows = [(i, r) for i, r in view.rows(KIND) if r.t <= t]
    last = max((r.t for _, r in rows), default=None)
    return [(i, r) for i, r in rows if r.t == last]


def _finding(view: TraceView, index: int, record: ExceptionRecord, link: ErrorLink,
             inputs: list[tuple[int, CallInput]]) -> Finding:
    rows = [r for _, r in inputs]
    stack = rows[0].stack if rows else link.stack
    function = view.function(rows[0].fn) if rows else None
    name = f"{function.name}()" if function is not None else "a compiled function"
    where = view.where(stack)
    cause, workaround = _trigger(rows)
    first = (link.message.strip().splitlines() or [link.type])[0][:300]
    listed = "; ".join(_input(r) for r in rows) or "not recorded"
    return RULE.finding(
        title=f"torch failed its own check calling {name} at {where}" + (
            f", set off by {cause}" if cause else "") + ": a bug in torch",
        explanation=(f"{link.type}: {first} This is torch's own check failing (its message "
                     f"asks for a report), while {name} ran under torch.compile; its "
                     f"traceback ends in torch, at the compiled function's own line. The call "
                     f"was at {where}; its inputs: {listed}."
                     + (f" What stands out: {cause}." if cause else "")),
        fix=(f"Report it to PyTorch ({REPORT_AT}) with torch {view.trace.meta.torch or '?'}, "
             f"the error's first line and the call's inputs ({listed}). Meanwhile, "
             f"{workaround}."),
        evidence=(view.evidence("exceptions", index),
                  *(view.evidence(KIND, i, r.name) for i, r in inputs)),
        location=view.location(stack), function=rows[0].fn if rows else -1,
        measurements={"torch": view.trace.meta.torch, "error": first,
                      "inputs": [_facts(r) for r in rows]})


def _trigger(rows: list[CallInput]) -> tuple[str, str]:
    """(what among the inputs set it off, in words; what to do meanwhile)."""
    on_cpu = [r for r in rows if r.device == "cpu"]
    if on_cpu:
        named = on_cpu[0].name or "the input"
        return (f"a CPU tensor among its inputs ({_input(on_cpu[0])})",
                f"pass {named} on the GPU (build it with device=\"cuda\", or {named}.cuda()), "
                "or as a Python number")
    aliased = [r for r in rows if r.alias >= 0]
    if aliased:
        other = next((r.name for r in rows if r.position == aliased[0].alias), "another input")
        named = aliased[0].name or "one input"
        return (f"two inputs on one memory ({named} shares {other}'s)",
                f"pass a copy of one of them ({named}.clone())")
    return "", ("run the function without CUDA graphs "
                "(torch.compile(..., mode=\"max-autotune-no-cudagraphs\")) until torch is fixed")


def _input(row: CallInput) -> str:
    named = row.name or "an input of the graph"
    return f"{named} ({row.device}, {row.dtype}, {row.shape})"


def _facts(row: CallInput) -> dict[str, object]:
    return {"position": row.position, "name": row.name, "device": row.device,
            "dtype": row.dtype, "shape": row.shape, "alias": row.alias}


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
