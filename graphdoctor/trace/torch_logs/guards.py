"""Read why torch.compile compiled a function again: the guards that failed.

On a recompile dynamo gives one reason per compile of the function it already holds, each
``"F/N: <guard>"``: the compile id whose guard failed, then the guard as torch writes it
(``tensor 'self._modules['kv']._buffers['k_cache']' size mismatch at index 2. expected 48,
actual 80``, ``pos == 0  # k_cache[pos] = x  # model.py:17 in forward``, or
``___check_obj_id(fn, 1396...), type=<class '...'>``), sometimes followed by a ``User stack
trace:`` block of the user's frames. This module turns that text into
:class:`GuardFailure` values, each with the user's name for the guarded value, what changed
(old → new where the text gives both), the user's line where torch names one, and the cause
(:mod:`graphdoctor.trace.names`) that decides the fix. Pure text in, values out: a new
torch wording needs a new pattern here, and no new recording.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from graphdoctor.trace.frames import frames_in_text
from graphdoctor.trace.names import (
    INPUT_SHAPE,
    OTHER_GUARD,
    OTHER_OBJECT,
    REALLOCATED_TENSOR,
    SPECIALISED_VALUE,
)

Site = tuple[str, int, str]  # (file, line, function)

_ENTRY = re.compile(r"^(?:(?P<entry>\d+/\d+):\s*)?(?P<rest>.*)$", re.S)
_TENSOR = re.compile(r"^tensor '(?P<source>.+)' (?P<what>[\w ]*mismatch.*)$", re.I)
_AT_INDEX = re.compile(r"(?P<prop>size|stride) mismatch at index (?P<dim>\d+)\. "
                       r"expected (?P<old>[^,]+), actual (?P<new>\S+)")
_PROPERTY = re.compile(r"(?P<prop>[\w ]+?) mismatch\. expected (?P<old>.+?)"
                       r"(?:, actual (?P<new>.+))?$", re.I)
_OBJECT = re.compile(r"^___check_obj_id\((?P<source>.+), \d+\)(?:, type=(?P<type>.+))?$")
_VALUE = re.compile(r"^(?P<source>[^=<>!]+?) == (?P<value>.+)$")
# a dynamic size's range (``2 <= L['x'].size()[0] <= 65535``): a size outside it (0 or 1,
# which torch always specialises) compiles the function again
_SIZE_RANGE = re.compile(r"^(?:(?P<low>\d+) <=? )?(?P<source>\S+?)\.size\(\)\[(?P<dim>\d+)\]"
                         r"(?: <=? (?P<high>\d+))?$")
_HINT = re.compile(r"\s*\(HINT: .*\)\s*$")
_WHERE = re.compile(r"(?P<file>\S+):(?P<line>\d+) in (?P<fn>[\w<>.]+)")
_SCOPE = re.compile(r"\b[LG]\[\s*['\"]([^'\"]+)['\"]\s*\]")
_MODULE_PART = re.compile(r"\._(?:modules|buffers|parameters)\[\s*['\"]([^'\"]+)['\"]\s*\]")
_SHAPE_PROPERTIES = ("size", "stride", "rank")
_STEP = re.compile(r"""\.(?P<attr>[A-Za-z_]\w*)"""
                   r"""|\[\s*(?:'(?P<sq>[^']*)'|"(?P<dq>[^"]*)"|(?P<index>-?\d+))\s*\]""")
_ROOT = re.compile(r"""^(?:(?P<scope>[LG])\[\s*['"](?P<name>[^'"]+)['"]\s*\]"""
                   r"|(?P<bare>[A-Za-z_]\w*))")
# One step from a value to the next: ("attr", name) or ("item", key or index)
Step = tuple[str, "str | int"]
# A source read into its scope ("L", "G" or "" for either), the name there, and the steps
Steps = tuple[str, str, list[Step]]


@dataclass(frozen=True)
class GuardFailure:
    """One failed guard of a recompile, read from torch's text."""

    guard: str  # as torch wrote it, without its compile id, source comment and hint
    entry: str = ""  # the compile id (F/N) whose guard failed; "" where torch gives none
    source: str = ""  # the guarded value as torch names it
    name: str = ""  # the user's name for it: self.layers[0].attention.kv_cache.k_cache
    cause: str = OTHER_GUARD  # one of the causes in graphdoctor.trace.names
    what: str = ""  # what differs: size, stride, dtype, value, object...
    dim: int = -1  # the dimension of a size or stride mismatch
    old: str = ""  # what the compiled code expected
    new: str = ""  # what the call brought, where the text says
    code: str = ""  # the user's line of code torch quotes with the guard
    at: Site | None = None  # where that line is, as torch abbreviates the file
    frames: tuple[Site, ...] = ()  # torch's "User stack trace", outermost first

    @property
    def change(self) -> str:
        """``48 → 80``, ``== 0``, or ""."""
        if self.old and self.new:
            return f"{self.old} → {self.new}"
        return f"== {self.old}" if self.cause == SPECIALISED_VALUE else self.old


def reasons_in_log(message: str) -> list[str]:
    """Torch's reasons, one per failed compile, from its ``recompiles`` log message (each
    line of which it indents and marks with ``- ``)."""
    body = message.split("guard failure(s):", 1)[-1] if "guard failure(s):" in message else ""
    return split_reasons("\n".join(re.sub(r"^\s*- ?", "", raw, count=1)
                                   for raw in body.splitlines()))


def split_reasons(text: str) -> list[str]:
    """Torch's reasons joined by newlines, apart again: a reason's user stack (the lines
    from ``User stack trace:``, each indented) stays with it."""
    reasons: list[str] = []
    for line in text.splitlines():
        if not line.strip() or re.match(r"guard \d+ failures:", line):
            continue
        if reasons and (line.startswith((" ", "\t")) or line.startswith("User stack trace")):
            reasons[-1] += "\n" + line
        else:
            reasons.append(line)
    return reasons


def read_failure(reason: str) -> GuardFailure:
    """One reason of torch's (``"0/3: <guard>  # <code>  # <file>:<line> in <fn>"`` and its
    user stack) as a :class:`GuardFailure`; of several guards joined by ``; ``, the first."""
    first, _, stack = reason.partition("\nUser stack trace:")
    match = _ENTRY.match(first.strip())
    entry, rest = (match.group("entry") or "", match.group("rest")) if match else ("", first)
    guard, _, comment = rest.partition("  # ")
    guard = _HINT.sub("", guard.split("; ")[0]).strip()
    code, _, where = comment.partition("  # ")
    found = _WHERE.search(where)
    at = (found.group("file"), int(found.group("line")), found.group("fn")) if found else None
    return replace(_meaning(guard), entry=entry, code=code.strip(), at=at,
                   frames=tuple(frames_in_text(stack)))


def _meaning(guard: str) -> GuardFailure:
    """The guarded value, its cause and what changed, from the guard's own text."""
    tensor = _TENSOR.match(guard)
    if tensor:
        return _tensor_meaning(guard, tensor.group("source"), tensor.group("what"))
    obj = _OBJECT.match(guard)
    if obj:
        return GuardFailure(guard, source=obj.group("source"), cause=OTHER_OBJECT,
                            name=user_name(obj.group("source")), what="object",
                            old=obj.group("type") or "")
    size_range = _SIZE_RANGE.match(guard)
    if size_range and (size_range.group("low") or size_range.group("high")):
        source = size_range.group("source")
        bounds = f"{size_range.group('low') or '0'} to {size_range.group('high') or 'any'}"
        return GuardFailure(guard, source=source, name=user_name(source),
                            cause=REALLOCATED_TENSOR if owned(source) else INPUT_SHAPE,
                            what="size range", dim=int(size_range.group("dim")), old=bounds)
    value = _VALUE.match(guard)
    if value:
        return GuardFailure(guard, source=value.group("source"), cause=SPECIALISED_VALUE,
                            name=user_name(value.group("source")), what="value",
                            old=value.group("value"))
    return GuardFailure(guard)


def _tensor_meaning(guard: str, source: str, what: str) -> GuardFailure:
    at_index, other = _AT_INDEX.search(what), _PROPERTY.search(what)
    found = at_index or other
    prop = found.group("prop").strip().lower() if found else what
    shape = prop in _SHAPE_PROPERTIES
    cause = (REALLOCATED_TENSOR if owned(source) else INPUT_SHAPE) if shape else OTHER_GUARD
    return GuardFailure(guard, source=source, name=user_name(source), cause=cause, what=prop,
                        dim=int(at_index.group("dim")) if at_index else -1,
                        old=found.group("old").strip() if found else "",
                        new=(found.group("new") or "").strip() if found else "")


def owned(source: str) -> bool:
    """Whether a guarded value is reached through an attribute, a module's buffer or
    parameter, or a global (kept by the program between calls) rather than passed in."""
    return source.startswith("G[") or "." in user_name(source)


def user_name(source: str) -> str:
    """The name a user writes for what torch names ``self._modules['layers']._modules['0']
    ._buffers['k_cache']`` (``self.layers[0].k_cache``), ``L['x']`` or ``G['cache']``."""
    name = _SCOPE.sub(r"\1", source)
    return _MODULE_PART.sub(lambda m: f"[{m[1]}]" if m[1].isdigit() else f".{m[1]}", name)


def source_steps(source: str) -> Steps | None:
    """The way to the value a guard's source names, for the recorder to follow from the
    compiled frame: its scope (``L`` the frame's locals, ``G`` its globals, "" either, for
    torch's newer bare ``self._buffers['k_cache']``), the name there, then each attribute or
    item in turn. None for a source beyond plain attributes and items (a call such as
    ``type(...)`` or ``___as_tensor(...)``)."""
    root = _ROOT.match(source)
    if root is None or (root.group("bare") and source[root.end():root.end() + 1] == "("):
        return None
    steps: list[Step] = []
    at = root.end()
    while at < len(source):
        step = _STEP.match(source, at)
        if step is None:
            return None
        if step.group("attr") is not None:
            steps.append(("attr", step.group("attr")))
        else:
            index, key = step.group("index"), step.group("sq") or step.group("dq") or ""
            steps.append(("item", int(index) if index is not None else key))
        at = step.end()
    if root.group("bare"):
        return "", root.group("bare"), steps
    return root.group("scope"), root.group("name"), steps


def primary(failures: list[GuardFailure]) -> GuardFailure | None:
    """The failure of the latest compile: the one that would have served the call had its
    guard held (torch lists the latest first, but its order is not relied on)."""
    def recency(failure: GuardFailure) -> tuple[int, int]:
        _, _, number = failure.entry.partition("/")
        return (int(number), -failures.index(failure)) if number.isdigit() else (-1, 0)

    return max(failures, key=recency) if failures else None


def sites(failure: GuardFailure, file: str, line: int, function: str) -> list[Site]:
    """Where the recompile points in the user's code, outermost first: the compiled
    function, then the frames of torch's user stack or, without one, the line its comment
    names (whose file torch abbreviates: it is the compiled function's when that ends
    with it)."""
    found: list[Site] = [(file, line, function)] if file else []
    if failure.frames:
        return found + list(failure.frames)
    if failure.at and file and file.endswith(failure.at[0].lstrip(".")):
        return found + [(file, failure.at[1], failure.at[2])]
    return found
