"""Where a captured input was let go: the weak reference on the tensor object a name held
notes the stack when that object dies, which is the line that rebound or deleted the name."""

from __future__ import annotations

import contextlib
import sys
import weakref
from pathlib import Path

import pytest
import torch

from graphdoctor.record import compat
from graphdoctor.record.capture.inputs import (
    CaptureSite,
    GraphInputs,
    _check_names,
    _dropped_here,
    _Input,
)
from graphdoctor.trace.event_kinds import REBOUND


def _watched(tensor: torch.Tensor) -> _Input:
    item = _Input("static_x", None, 1, tensor.nbytes)
    item.watch = weakref.ref(tensor, _dropped_here(item))
    return item


def serve(requests: int) -> _Input:
    x = torch.zeros(4)
    item = _watched(x)
    for _ in range(requests):
        x = torch.ones(4)  # rebinding: the line the finding names
    return item


def test_the_rebinding_line_is_noted() -> None:
    item = serve(3)
    assert item.dropped is not None
    file, line, function = item.dropped[0]
    assert file == __file__ and function == "serve"
    source = open(__file__).read().splitlines()[line - 1]
    assert "x = torch.ones(4)  # rebinding" in source


def test_an_input_still_held_is_not_noted() -> None:
    x = torch.zeros(4)
    item = _watched(x)
    assert item.dropped is None and x.sum() == 0


def test_del_is_noted_too() -> None:
    x = torch.zeros(4)
    item = _watched(x)
    del x
    assert item.dropped is not None and item.dropped[0][2].endswith("test_del_is_noted_too")


class _Stacks:
    def from_named(self, frames: list[tuple[str, int, str]]) -> int:
        self.named = frames
        return 7


class _Recorder:
    def __init__(self) -> None:
        self.stacks, self.records = _Stacks(), []

    def now(self) -> int:
        return 1

    def emit(self, record: object) -> None:
        self.records.append(record)


SERVING = """\
import torch
batches = [torch.zeros(4) for _ in range(3)]
x = batches[0]
with capture():
    y = x * 2
for x in batches[1:]:
    replayed(x)
"""


def _serve(tmp_path: Path, source: str) -> _Recorder:
    """Run a serving loop whose replay hook checks the captured names, as the replay path
    does at each of a graph's first replays."""
    path = tmp_path / "serve.py"
    path.write_text(source)
    code = compile(source, str(path), "exec")
    recorder = _Recorder()
    namespace: dict[str, object] = {"capture": contextlib.nullcontext}

    def replayed(_: object) -> None:
        frame = sys._getframe(1)
        if not watched:  # the capture began: its candidates, as the graphs source takes them
            begin = next(n for n, line in enumerate(source.splitlines(), 1)
                         if line.startswith("with capture"))
            site = CaptureSite(str(path), begin, begin + 1, [(str(path), begin, "<module>")],
                               frame.f_code)
            watched.append(GraphInputs(0, site, [_Input("x", torch.zeros(4), 0, 16)]))
            item = watched[0].inputs[0]
            item.ref = compat.storage_weak_ref(namespace["batches"][0].untyped_storage())
            item.addr = namespace["batches"][0].untyped_storage().data_ptr()
        _check_names(recorder, watched[0], frame)  # type: ignore[arg-type]

    watched: list[GraphInputs] = []
    namespace["replayed"] = replayed
    exec(code, namespace)  # noqa: S102  # the loop under test
    return recorder


def test_a_name_bound_again_while_the_tensor_lives_is_rebound(tmp_path: Path) -> None:
    recorder = _serve(tmp_path, SERVING)
    [record] = recorder.records
    assert record.kind == REBOUND and record.replays == 0
    assert recorder.stacks.named[0][1] == 6  # the for loop binds x again


def test_a_name_still_held_elsewhere_is_left_alone(tmp_path: Path) -> None:
    aliased = SERVING.replace("x = batches[0]", "x = batches[0]\nstatic = torch.zeros(4)")
    assert len(_serve(tmp_path, aliased).records) == 1  # another name, another tensor
    aliased = SERVING.replace("x = batches[0]", "x = batches[0]\nstatic = x")
    assert not _serve(tmp_path, aliased).records  # `static` still holds the captured one


def test_a_tensor_freed_by_a_garbage_collection_notes_no_stack() -> None:
    """The frames around a collection are wherever it began, not the line that let the
    tensor go; and a callback inside one must do the least it can (no frames walked)."""
    import gc

    from graphdoctor.record.capture.inputs import watch_collections

    undo = watch_collections()
    try:
        x = torch.zeros(4)
        item = _watched(x)
        cycle: list[object] = [x]
        cycle.append(cycle)
        del x, cycle
        gc.collect()
    finally:
        undo()
    assert item.watch() is None and item.dropped is None


def test_the_callback_never_raises_into_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever fails while noting the stack stays inside the callback."""
    import graphdoctor.record.capture.inputs as inputs

    def broken(frame: object) -> list[tuple[str, int, str]]:
        raise RuntimeError("noting failed")

    unraised: list[object] = []  # where an exception a callback let out would be reported
    monkeypatch.setattr(sys, "unraisablehook", unraised.append)
    monkeypatch.setattr(inputs, "_stack_here", broken)
    x = torch.zeros(4)
    item = _watched(x)
    del x
    assert item.dropped is None and unraised == []
