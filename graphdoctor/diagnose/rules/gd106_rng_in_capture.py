"""Random numbers in a capture must come from a generator the graph knows.

A graph replays its RNG kernels with a fresh offset each time, but only for generators
registered with it: the default CUDA generator is, a ``torch.Generator(device="cuda")`` you
made is not ("Attempt to increase offset for a CUDA generator not in capture mode"). Reading
or setting RNG state inside a capture (``get_rng_state``, ``manual_seed``, checkpointing with
``preserve_rng_state``, flash-attention dropout) fails the same way.

How to fix: ``g.register_generator_state(gen)`` before capture, use the default generator,
or move seeding and state reads out of the captured step.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.failures import failures_of_kind, known_fix
from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import ErrorLink

ID, NAME = "GD106", "rng-in-capture"
FIX = ("Register the generator with the graph (graph.register_generator_state(gen)) "
       "before capture, or use the default generator; seed outside the capture.")


def check(view: TraceView) -> Iterator[Finding]:
    for graph, cause in failures_of_kind(view, "rng"):
        yield RULE.finding(
            title=f"random numbers at {view.where(cause.link.stack)} use a generator graph "
                  f"{graph.id} cannot replay",
            explanation="PyTorch refused an RNG operation during capture: "
                        + cause.link.message.splitlines()[0],
            fix=_fix(view, cause.link),
            evidence=(view.evidence("exceptions", cause.exception),),
            location=view.location(cause.link.stack), graph=graph.id)


def _fix(view: TraceView, link: ErrorLink) -> str:
    known = known_fix(view, link)
    return known.fix if known else FIX


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
