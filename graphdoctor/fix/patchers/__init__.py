"""The patchers: for each rule whose fix is a mechanical edit, a pure function of the finding
and its file (``patch(finding, source, options) -> Change | None``), listed here explicitly.
None where the code is written in a way the patcher does not know: it never guesses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from graphdoctor.diagnose.findings import Finding
from graphdoctor.diagnose.rules import (
    gd101_sync_in_capture,
    gd102_pageable_copy_in_capture,
    gd103_unjoined_side_stream,
    gd108_exception_in_capture,
    gd203_sync_between_replays,
    gd302_freed_captured_input,
    gd305_frozen_host_value,
)
from graphdoctor.fix.edits import Edit
from graphdoctor.fix.source import Source


@dataclass(frozen=True)
class Options:
    every: int = 10  # a sync between replays is kept every this many steps


@dataclass(frozen=True)
class Change:
    edits: tuple[Edit, ...]
    says: str  # what the change does, in a line


Patcher = Callable[[Finding, Source, Options], Change | None]


def _patchers() -> dict[str, Patcher]:
    from graphdoctor.fix.patchers import (
        capturable,
        copy_into_input,
        frozen_lr,
        hoist_copy,
        join_stream,
        keep_on_device,
        sync_every,
    )

    return {gd101_sync_in_capture.ID: keep_on_device.patch,
            gd103_unjoined_side_stream.ID: join_stream.patch,
            gd102_pageable_copy_in_capture.ID: hoist_copy.patch,
            gd108_exception_in_capture.ID: capturable.patch,
            gd302_freed_captured_input.ID: copy_into_input.patch,
            gd305_frozen_host_value.ID: frozen_lr.patch,
            gd203_sync_between_replays.ID: sync_every.patch}


PATCHERS = _patchers()
