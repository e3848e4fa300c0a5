"""What each field of a spool record may hold, checked as it is read.

A spool is text anyone could have written, and a report built from it is read by every
command, each trusting the report's schema: a string where a graph id belongs, a list where
a stack id does, a float where a count does, would travel from the spool into a report that
crashes a renderer or that graphdoctor itself then refuses. So each record's values are
checked against the types its NamedTuple declares (:mod:`graphdoctor.trace.spool.records`,
and the event rows of :mod:`graphdoctor.trace.event_kinds`) before assembly sees it: an
``int`` is an int (never a bool, a float or text), a ``str`` is text, a ``list[int]`` a list
of ints, a ``dict[str, int]`` a mapping of text to ints, a ``JsonObject`` a mapping whose
contents its handler reads with :func:`number` and :func:`text`. A record that does not
match is not read (assembly counts it). The checks are made once per record class, from its
annotations, and cost a type comparison per field.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Check = Callable[[Any], bool]


def checked(cls: type[Any], values: Sequence[Any]) -> None:
    """ValueError unless each of ``values`` is what ``cls`` declares for its field."""
    plain = _plain_types(cls)
    if plain is not None:  # ints and text only (every event row): one comparison
        if tuple(map(type, values)) == plain[:len(values)]:
            return
    elif all(check(value) for check, value in zip(_checks(cls), values)):
        return
    raise ValueError(f"a {cls.__name__} record with a value of another type than declared")


def _plain_types(cls: type[Any]) -> tuple[type, ...] | None:
    """The types of ``cls``' fields where each is int or str; None otherwise."""
    if cls not in _PLAIN:
        hints = tuple(typing.get_type_hints(cls).values())
        _PLAIN[cls] = hints if all(hint in (int, str) for hint in hints) else None
    return _PLAIN[cls]


def _checks(cls: type[Any]) -> tuple[Check, ...]:
    if cls not in _CHECKS:
        _CHECKS[cls] = tuple(_check(hint) for hint in typing.get_type_hints(cls).values())
    return _CHECKS[cls]


_PLAIN: dict[type[Any], tuple[type, ...] | None] = {}  # made once per record class
_CHECKS: dict[type[Any], tuple[Check, ...]] = {}


def _check(hint: Any) -> Check:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is int:
        return _is_int
    if hint is str:
        return _is_str
    if hint is bool:
        return _is_bool
    if origin is list and args:
        item = _check(args[0])
        return lambda value: type(value) is list and all(map(item, value))
    if origin is dict and args:
        key, item = _check(args[0]), _check(args[1])
        return lambda value: type(value) is dict and all(
            key(k) and item(v) for k, v in value.items())
    return lambda value: True  # Any


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def number(data: Mapping[str, Any], key: str, default: int) -> int:
    """``data[key]`` where it is an int as a recorder writes one; else ``default``."""
    value = data.get(key, default)
    return value if type(value) is int else default


def ref(data: Mapping[str, Any], key: str) -> int:
    """``data[key]`` where it is an id a recorder writes (a stack's, a graph's: 0 or more,
    or -1 for none); else -1."""
    value = data.get(key, -1)
    return value if type(value) is int and value >= -1 else -1


def text(data: Mapping[str, Any], key: str, default: str = "") -> str:
    """``data[key]`` where it is text; else ``default``."""
    value = data.get(key, default)
    return value if type(value) is str else default


def flag(data: Mapping[str, Any], key: str) -> bool:
    """``data[key]`` where it is true (a bool, or a number other than 0)."""
    value = data.get(key)
    return value is True or (type(value) is int and value != 0)


def texts(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """``data[key]`` where it is a list, its text items."""
    value = data.get(key)
    return tuple(v for v in value if type(v) is str) if type(value) is list else ()
