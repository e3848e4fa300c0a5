"""GD108 exception-in-capture, where the known error is an optimizer made with
``capturable=False``: ``capturable=True`` where the optimizer is made. Its step then keeps
its state on the GPU and can be captured."""

from __future__ import annotations

from graphdoctor.diagnose.findings import Finding
from graphdoctor.diagnose.known_errors import OPTIMIZER_NOT_CAPTURABLE
from graphdoctor.diagnose.rules.gd108_exception_in_capture import KNOWN_ERROR
from graphdoctor.fix.patchers import Change, Options
from graphdoctor.fix.patchers.optimizer import made_at, with_keywords
from graphdoctor.fix.source import Source


def patch(finding: Finding, source: Source, options: Options) -> Change | None:
    known = finding.measurements.get(KNOWN_ERROR)
    if finding.location is None or known != OPTIMIZER_NOT_CAPTURABLE:
        return None
    call = made_at(source, finding.location.line)
    if call is None:
        return None
    return Change((with_keywords(source, call, {"capturable": "True"}),),
                  f"make the optimizer at line {call.lineno} with capturable=True")
