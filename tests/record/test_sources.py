"""The recorder's sources are independent, as session says: none imports another, and what
they share is wired on the recorder."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytest.importorskip("torch")

from graphdoctor.record import session  # noqa: E402 - only once torch is known there
from graphdoctor.record.device import memory  # noqa: E402 - only once torch is known there
from graphdoctor.record.recorder import Recorder  # noqa: E402
from graphdoctor.trace.spool.file import SpoolWriter  # noqa: E402

RECORD = Path(session.__file__).parent


def source_file(part: str) -> Path:
    """The file of the recorder's source ``part``, in whichever subpackage holds it."""
    return Path(str(getattr(session, part).__file__))

def source_parts(recorder: Recorder) -> list[str]:
    return [session.part_of(s) for s in session.sources(memory.AllocatorWatch(recorder))]


def imported_record_modules(path: Path) -> set[str]:
    """The record modules a file imports, by their own name, whichever subpackage holds them."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "graphdoctor.record"):
            names |= {alias.name for alias in node.names}
            names.add(str(node.module).rsplit(".", 1)[-1])
    return names


def test_no_source_imports_another(tmp_path: Path) -> None:
    parts = source_parts(Recorder(SpoolWriter(str(tmp_path / "s.spool"))))
    assert parts == ["eager_history", "graphs", "frozen_values", "kept_outputs", "syncs",
                     "streams", "memory", "compiled", "distributed", "devices"]
    for part in parts:
        others = imported_record_modules(source_file(part)) & (set(parts) - {part})
        assert not others, f"{part} imports {others}"


def test_the_capture_source_needs_the_allocator_watch_wired(tmp_path: Path) -> None:
    from graphdoctor.record.capture import graphs

    recorder = Recorder(SpoolWriter(str(tmp_path / "s.spool")))
    with pytest.raises(RuntimeError, match="allocator watch"):
        graphs.install(recorder)
