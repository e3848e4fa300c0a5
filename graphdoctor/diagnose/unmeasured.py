"""What an unmeasured verdict tells the user to add, so that the next run measures a speedup.

A speedup needs eager calls of the code a graph runs: one will do (a verdict on fewer than
``WANTED_SAMPLES`` says it rests on a small sample), so this is said only where none was
timed, and it never asks for calls that were made:

- a raw ``torch.cuda.graph`` or ``CUDAGraph`` capture has no graph-free form graphdoctor
  could run instead, so the script itself has to call the captured function eagerly; the
  advice names the function and, where the captured block's source is at hand, the call
  (``step(static_x)``) to repeat outside the capture;
- ``make_graphed_callables`` and ``torch.compile`` can run without graphs:
  ``graphdoctor run --baseline`` runs the script a second time so (the original callables;
  the same compile without CUDA graphs) and compares per call;
- where such a baseline was given and still timed nothing that matches, the verdict says so;
- a graph made outside PyTorch (CuPy, cuda.core, seen through CUPTI) has no eager timing
  yet: the verdict says to compare with the script's own.
"""

from __future__ import annotations

import re

from graphdoctor.diagnose.measure import WANTED_SAMPLES, Measurement
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import Function, Graph
from graphdoctor.trace.names import CUPTI_EXPLICIT_API, CUPTI_STREAM_API, MANUAL_APIS

BLOCK_LINES = 12  # lines after a capture's first line searched for the captured call
EAGER_TIMING_PYTHON = (3, 12)  # sys.monitoring: graphdoctor times eager calls from here
TIMED = "graphdoctor times each eager call"
TO_MEASURE = "to measure one, "
BUILT_NODE_BY_NODE = ("a graph built node by node (seen through CUPTI) ran no Python code of "
                      "the script's that graphdoctor could time eagerly: compare with the "
                      "script's own timing of the same work without the graph")
BASELINE_ADVICE = (TO_MEASURE + "use `graphdoctor run --baseline`: it runs the script again "
                   "with CUDA graphs off ({how}) and compares per call")


def for_graph(view: TraceView, graph: Graph, m: Measurement) -> str:
    """What to add for a replayed graph (a raw capture, or one of make_graphed_callables)
    that no eager call measured, or why the --baseline run did not measure it."""
    names = _callee_names(view, graph)
    if graph.api.startswith(CUPTI_EXPLICIT_API):
        return BUILT_NODE_BY_NODE
    if graph.api in MANUAL_APIS or graph.api.startswith(CUPTI_STREAM_API):  # a raw capture
        return TO_MEASURE + _for_raw_capture(view, graph, names, m) + _python_note(view)
    if view.baseline is not None:
        return ("the --baseline run timed no eager call of the code this graph ran"
                + ("" if names else " (a backward pass's graph has no call of its own)"))
    return BASELINE_ADVICE.format(how="the original callables") + _python_note(view)


def for_function(view: TraceView, fn: Function) -> str:
    """What to add for a compiled function that no eager call measured."""
    if view.baseline is not None:
        return f"the --baseline run timed no eager call of {fn.name}"
    return BASELINE_ADVICE.format(how="the same compile without CUDA graphs")


def _for_raw_capture(view: TraceView, graph: Graph, names: list[str], m: Measurement) -> str:
    if not names:
        return (f"put the captured code in a function, capture a call of it, and call it "
                f"eagerly {WANTED_SAMPLES} times outside the capture; {TIMED} (--baseline "
                "cannot switch a raw capture off)")
    call = _captured_call(view, graph, names)
    what = f"`{call}`" if call else " and ".join(f"{n}()" for n in names)
    example = f", e.g. `for _ in range({WANTED_SAMPLES}): {call}` before the replay loop" \
        if call else ", with the inputs the capture used, e.g. before the replay loop"
    return (f"run {what} eagerly {WANTED_SAMPLES} times outside the capture{example}; {TIMED} "
            "(--baseline cannot switch a raw capture off)")


def _callee_names(view: TraceView, graph: Graph) -> list[str]:
    functions = [view.function(fn) for fn in graph.callees]
    return [f.name for f in functions if f is not None]


def _captured_call(view: TraceView, graph: Graph, names: list[str]) -> str:
    """The call of the captured function as the captured block writes it (``step(x)``), or
    "" where the source is not at hand or the block calls it some other way."""
    frame = view.culprit_frame(graph.stack)
    if frame is None or len(names) != 1:
        return ""
    short = names[0].rsplit(".", 1)[-1]
    for number in range(frame.line, frame.line + BLOCK_LINES):
        found = _call_in(view.read_line(frame.file, number), short)
        if found:
            return found
    return ""


def _call_in(line: str, name: str) -> str:
    """``name(...)`` in a line, with its arguments up to the matching parenthesis."""
    start = re.search(rf"(?<![\w.])(?:[\w.]+\.)?{re.escape(name)}\(", line)
    if start is None:
        return ""
    depth = 0
    for index in range(start.end() - 1, len(line)):
        depth += {"(": 1, ")": -1}.get(line[index], 0)
        if depth == 0:
            return line[start.start():index + 1]
    return ""


def _python_note(view: TraceView) -> str:
    version = tuple(int(p) for p in re.findall(r"\d+", view.trace.meta.python)[:2])
    if not version or version >= EAGER_TIMING_PYTHON:
        return ""
    return (f" (graphdoctor times eager calls on Python "
            f"{'.'.join(map(str, EAGER_TIMING_PYTHON))} or newer; this run used "
            f"{view.trace.meta.python})")
