"""A verdict for each graph."""

from __future__ import annotations

from collections.abc import Sequence

from graphdoctor.diagnose.model import Finding, Verdict
from graphdoctor.diagnose.view import TraceView


def verdicts(view: TraceView, findings: Sequence[Finding]) -> list[Verdict]:
    return []
