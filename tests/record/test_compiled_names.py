"""A compiled function is named after the method it is, also under a decorator: dynamo runs
transformers' ``forward`` as the ``wrapper`` of ``can_return_tuple``, whose code alone says
only "wrapper"."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from graphdoctor.record.compile.compiled import _method_name  # noqa: E402


def returns_tuple(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        return method(self, *args, **kwargs)

    return wrapper


class Decoder(torch.nn.Module):  # type: ignore[misc]
    @returns_tuple
    def forward(self, x: Any) -> Any:
        return x


class Base(torch.nn.Module):  # type: ignore[misc]
    def step(self, x: Any) -> Any:
        return x


class Derived(Base):
    pass


def test_a_decorated_method_is_named_as_the_method() -> None:
    assert _method_name(Decoder(), Decoder.forward.__code__) == "Decoder.forward"


def test_an_inherited_method_is_found_on_its_class() -> None:
    assert _method_name(Derived(), Base.step.__code__) == "Base.step"


def test_no_module_or_another_function_gives_no_name() -> None:
    assert _method_name(object(), Decoder.forward.__code__) is None
    assert _method_name(Decoder(), returns_tuple.__code__) is None
