"""GD305 frozen-host-value, where the number is an optimizer's ``lr``: the learning rate as a
device tensor where the optimizer is made, with ``capturable=True``
(``AdamW(params, lr=torch.tensor(1e-3, device="cuda"), capturable=True)``). Schedulers then
update it in place, and every replay reads the current value. Offered only where the torch
that recorded it takes a tensor there (the finding's fix says so). Where the script sets
the number itself (``param_group["lr"] = lr``), that line fills the tensor in place."""

from __future__ import annotations

import ast
import re

from graphdoctor.diagnose.findings import Finding
from graphdoctor.diagnose.rules.gd305_frozen_host_value import (
    CAPTURED_VALUE,
    CHANGED_FILE,
    CHANGED_LINE,
    HELD_BY,
    OWNER,
    VALUE_NAME,
)
from graphdoctor.fix.edits import Edit, replaced
from graphdoctor.fix.patchers import Change, Options
from graphdoctor.fix.patchers.optimizer import made_at, with_keywords
from graphdoctor.fix.source import Source
from graphdoctor.trace.names import HELD_BY_OPTIMIZER

LR = re.compile(r"(?:^|\['|\[\")lr(?:'\]|\"\])?$")  # lr, param_groups[0]['lr']
TENSOR_LR = "lr=torch.tensor("  # how the rule's fix words it where a tensor is taken


def patch(finding: Finding, source: Source, options: Options) -> Change | None:
    held = finding.measurements
    if finding.location is None or held.get(HELD_BY) != HELD_BY_OPTIMIZER \
            or not LR.search(str(held.get(VALUE_NAME, ""))) or TENSOR_LR not in finding.fix:
        return None
    call = made_at(source, finding.location.line, str(held.get(OWNER, "")))
    if call is None:
        return None
    given = next((k.value for k in call.keywords if k.arg == "lr"), None)
    value = source.segment(given) if given is not None else _number(held.get(CAPTURED_VALUE))
    if not value or isinstance(given, ast.Call):  # already made some other way
        return None
    keywords = {"lr": f'torch.tensor({value}, device="cuda")', "capturable": "True"}
    made = with_keywords(source, call, keywords)
    assigned = _assignment(finding, source)
    if assigned is None:
        return Change((made,), f"make the optimizer at line {call.lineno} with its lr a "
                               "device tensor")
    return Change((made, assigned), f"make the optimizer at line {call.lineno} with its lr a "
                                    "device tensor, and fill it in place where the script "
                                    "sets it")


def _number(recorded: object) -> str:
    """The recorded number as Python writes it; "" for anything else (a report is anyone's
    text, and this one would be written into code)."""
    try:
        return repr(float(str(recorded)))
    except ValueError:
        return ""


def _assignment(finding: Finding, source: Source) -> Edit | None:
    """``group["lr"] = x`` at the line that changed it, as ``group["lr"].fill_(x)``: an
    assignment would put a number back in the tensor's place."""
    line = finding.measurements.get(CHANGED_LINE)
    same_file = finding.measurements.get(CHANGED_FILE) == source.file
    statement = source.statement_at(line) if isinstance(line, int) and same_file else None
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1 \
            or not isinstance(statement.targets[0], ast.Subscript):
        return None
    target, value = statement.targets[0], source.segment(statement.value)
    if not LR.search(source.segment(target.slice).strip("'\"")):
        return None
    return replaced(source.lines, statement, f"{source.segment(target)}.fill_({value})")
