"""The patchers: for each rule whose fix is a mechanical edit, a pure function of the finding
and its file (``patch(finding, source, options) -> Change | None``), listed here explicitly.
None where the code is written in a way the patcher does not know: it never guesses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from graphdoctor.diagnose.findings import Finding
from graphdoctor.diagnose.rules import (
    exception_in_capture,
    freed_input,
    frozen_value,
    pageable_copy,
    sync_between_replays,
    sync_in_capture,
    unjoined_stream,
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

    return {sync_in_capture.ID: keep_on_device.patch, unjoined_stream.ID: join_stream.patch,
            pageable_copy.ID: hoist_copy.patch, exception_in_capture.ID: capturable.patch,
            freed_input.ID: copy_into_input.patch, frozen_value.ID: frozen_lr.patch,
            sync_between_replays.ID: sync_every.patch}


PATCHERS = _patchers()
