"""Diagnosis: pure rules over a trace, and a verdict for each graph."""

from __future__ import annotations

from graphdoctor.diagnose.engine import diagnose, diagnose_ranks

__all__ = ["diagnose", "diagnose_ranks"]
