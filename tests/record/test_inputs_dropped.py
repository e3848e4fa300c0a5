"""Where a captured input was let go: the weak reference on the tensor object a name held
notes the stack when that object dies, which is the line that rebound or deleted the name."""

from __future__ import annotations

import weakref

import torch

from graphdoctor.record.inputs import _dropped_here, _Input


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
