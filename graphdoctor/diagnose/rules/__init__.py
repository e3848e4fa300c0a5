"""Every diagnosis rule, listed explicitly, one per module."""

from __future__ import annotations

from graphdoctor.diagnose.model import Rule

ALL_RULES: tuple[Rule, ...] = ()
