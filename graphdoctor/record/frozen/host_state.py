"""The state of the torch modules a manual capture ran, and torch's own switches, watched as
a whole: what a replay keeps, whatever the script changes later.

A graph replays the kernels its capture launched. A module's forward decided which while it
ran: dropout and batch norm by ``self.training``, autograd by its parameters'
``requires_grad``, hooks by being registered then; and the kernels read its weights at the
addresses they had. So, after the capture:

- ``model.eval()`` changes nothing a replay does (dropout stays on, batch norm goes on
  updating its statistics), nor does ``model.train()`` after an eval-mode capture;
- a parameter frozen or unfrozen (``requires_grad_``) changes no captured backward;
- a hook registered later never runs in a replay, and one removed still does;
- weights moved to new memory (``load_state_dict(..., assign=True)``, ``p.data = ...``,
  ``model.half()``) are not the ones replays read;
- TF32 or determinism switched (``torch.backends.cuda.matmul.allow_tf32``) does not reach
  the kernels the capture chose.

While a manual capture runs (only then), torch's global forward pre-hook notes each module it
calls on the capturing thread; each module the script calls directly (not inside another
noted one) is a root, named as the script's line calls it (``model``). At the capture's end
each root gets one watch per kind of state, over the modules that ran under it: the mode of
those whose forward reads ``.training`` (found in their source, once per class), the
``requires_grad`` of their parameters where grad was on, their hooks, and where their
parameters and buffers live. They are compared where the frozen numbers are: at the replays
already sampled, at the end, and right after each ``Module.train()`` call (``eval()`` calls
it), whose line is the change's. Weak references only; nothing runs per replay.
"""

from __future__ import annotations

import ast
import functools
import sys
import weakref
from collections import Counter
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

import torch
from torch.nn.modules import module as torch_module

from graphdoctor.record.frozen import scalar_uses
from graphdoctor.record.frozen.captured_names import parse_source
from graphdoctor.record.frozen.watches import GONE, Reader, Target, Watch
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.model import PYTHON, TORCH, USER
from graphdoctor.trace.names import (
    HELD_BY_MODULE,
    HELD_BY_VARIABLE,
    USE_BACKEND,
    USE_GRAD,
    USE_HOOKS,
    USE_MODE,
    USE_WEIGHTS,
)

MAX_MODULES = 4096  # modules noted per capture
MAX_TENSORS = 4096  # parameters and buffers whose memory is watched per root
HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks")
MODE_CHANGES: tuple[Target, ...] = (("call", "eval"), ("call", "train"), ("attribute", "training"))
GRAD_CHANGES: tuple[Target, ...] = (("call", "requires_grad_"), ("attribute", "requires_grad"))
HOOK_CHANGES: tuple[Target, ...] = (("call", "register_forward_hook"),
                                    ("call", "register_forward_pre_hook"),
                                    ("call", "register_full_backward_hook"))
WEIGHT_CHANGES: tuple[Target, ...] = (("call", "load_state_dict"), ("attribute", "data"),
                                      ("call", "half"), ("call", "bfloat16"))


class _Root:
    """A module the script called in the capture, and the modules that ran under it."""

    def __init__(self, module: torch.nn.Module, name: str, site: int,
                 place: tuple[str, int]):
        self.ref = weakref.ref(module)
        self.name, self.site, self.place = name, site, place
        self.kind = type(module).__name__
        self.ran: list[weakref.ReferenceType[torch.nn.Module]] = []
        self.modes: list[bool] = []  # the mode each module in ``ran`` ran in
        self.grad = False  # grad was on for some module of it


class ModulesRun:
    """Pushed at a manual capture's begin (torch's global forward pre-hook), ended at its
    end; ``watches`` then gives what to compare."""

    def __init__(self, recorder: Recorder, graph: int):
        self._rec, self._graph = recorder, graph
        self._roots: list[_Root] = []
        self._under: dict[int, _Root] = {}  # id(module) -> the root it runs under
        self._noted: set[int] = set()
        self._thread = recorder.capture_on_this_thread()
        self._handle: Any = torch_module.register_module_forward_pre_hook(self._called)

    def _called(self, module: torch.nn.Module, args: Any) -> None:
        try:
            if id(module) not in self._noted and self._thread is not None \
                    and self._rec.capture_on_this_thread() is self._thread \
                    and len(self._noted) < MAX_MODULES:
                self._note(module)
        except Exception:  # noqa: BLE001 - never the script's problem
            self.end()

    def _note(self, module: torch.nn.Module) -> None:
        self._noted.add(id(module))
        root = self._under.get(id(module))
        if root is None:
            root = self._new_root(module, sys._getframe(2))
        root.ran.append(weakref.ref(module))
        root.modes.append(bool(module.training))
        root.grad = root.grad or torch.is_grad_enabled()

    def _new_root(self, module: torch.nn.Module, frame: FrameType | None) -> _Root:
        kind = self._rec.stacks.kind
        while frame is not None and kind(frame.f_code.co_filename) in (TORCH, PYTHON, None):
            frame = frame.f_back
        place = (frame.f_code.co_filename, frame.f_lineno or 0) if frame else ("", 0)
        named = frame is not None and kind(frame.f_code.co_filename) == USER
        root = _Root(module, _called_as(frame, module) if named else type(module).__name__,
                     self._rec.stacks.from_frame(frame), place)
        self._roots.append(root)
        for _, sub in module.named_modules():
            self._under.setdefault(id(sub), root)
        return root

    def end(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def watches(self) -> list[Watch]:
        """At the capture's end: each root's mode, grads, hooks and weights."""
        self.end()
        found: list[Watch] = []
        for root in self._roots:
            found.extend(watch for watch in (_mode(self._graph, root), _grads(self._graph, root),
                                             _hooks(self._graph, root),
                                             _weights(self._graph, root)) if watch is not None)
        return found


def _called_as(frame: FrameType | None, module: torch.nn.Module) -> str:
    """The name the script's line calls ``module`` by (``model``, ``self.head``)."""
    if frame is not None:
        for chain in scalar_uses.names_on_line(frame.f_code.co_filename, frame.f_lineno or 0):
            found = scalar_uses.read(frame, chain)
            if found is not None and found[0] is module:
                return ".".join(chain)
    return type(module).__name__


def _watch(graph: int, root: _Root, use: str, owner: str, captured: Any, read: Reader,
           show: Callable[[Any], str], targets: tuple[Target, ...]) -> Watch:
    return Watch(graph, root.name, HELD_BY_MODULE, owner, captured, read, root.site,
                 root.place, use=use, show=show, targets=targets)


# -- mode ----------------------------------------------------------------------------------
def _mode(graph: int, root: _Root) -> Watch | None:
    """The mode of the modules under ``root`` whose forward reads ``.training``."""
    refs = [(ref, mode) for ref, mode in zip(root.ran, root.modes)
            if (module := ref()) is not None and reads_training(type(module))]
    if not refs:
        return None
    kinds = Counter(type(m).__name__ for ref, _ in refs if (m := ref()) is not None)
    owner = ", ".join(f"{kind} ×{count}" if count > 1 else kind
                      for kind, count in kinds.most_common())
    modules = [ref for ref, _ in refs]

    def read(frame: FrameType | None) -> Any:
        return _each(modules, lambda m: bool(m.__dict__.get("training", False)))

    return _watch(graph, root, USE_MODE, owner, tuple(mode for _, mode in refs), read,
                  _mode_shown, MODE_CHANGES)


def _mode_shown(modes: Any) -> str:
    training = sum(modes)
    if training == len(modes):
        return "train"
    if not training:
        return "eval"
    return f"train in {training} of {len(modes)}"


def reads_training(kind: type) -> bool:
    """Whether the forward of a module class (or of the class it inherits it from) reads
    ``.training``: dropout, batch norm, a script's own module that branches on it."""
    code = getattr(getattr(kind, "forward", None), "__code__", None)
    return isinstance(code, CodeType) and _reads_training(code)


@functools.lru_cache(maxsize=1024)
def _reads_training(code: CodeType) -> bool:
    tree = parse_source(code.co_filename)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and code.co_firstlineno in (node.lineno, *(d.lineno for d in node.decorator_list)):
            return any(isinstance(sub, ast.Attribute) and sub.attr == "training"
                       and isinstance(sub.ctx, ast.Load) for sub in ast.walk(node))
    return False


# -- requires_grad, hooks, weights ---------------------------------------------------------
def _grads(graph: int, root: _Root) -> Watch | None:
    if not root.grad:
        return None
    params = [weakref.ref(p) for ref in root.ran if (m := ref()) is not None
              for p in m.__dict__.get("_parameters", {}).values() if p is not None]
    if not params:
        return None

    def read(frame: FrameType | None) -> Any:
        return _each(params, lambda p: bool(p.requires_grad))

    return _watch(graph, root, USE_GRAD, root.kind, read(None), read, _grads_shown, GRAD_CHANGES)


def _grads_shown(flags: Any) -> str:
    need = sum(flags)
    if need == len(flags):
        return f"all {len(flags)} parameters require grad"
    return f"{need} of {len(flags)} parameters require grad"


def _hooks(graph: int, root: _Root) -> Watch | None:
    modules = list(root.ran)

    def read(frame: FrameType | None) -> Any:
        each = _each(modules, lambda m: tuple(k for name in HOOK_DICTS
                                              for k in m.__dict__.get(name, {})))
        return each if each is GONE else (*each, _global_hooks())

    captured = read(None)
    if captured is GONE:
        return None
    show = functools.partial(_hooks_shown, _hook_ids(captured))
    return _watch(graph, root, USE_HOOKS, root.kind, captured, read, show, HOOK_CHANGES)


def _global_hooks() -> tuple[int, ...]:
    return tuple(k for name in _GLOBAL_HOOKS for k in getattr(torch_module, name, {}))


def _hook_ids(hooks: Any) -> set[int]:
    return {k for keys in hooks for k in keys}


def _hooks_shown(captured: set[int], hooks: Any) -> str:
    now = _hook_ids(hooks)
    count = f"{len(now)} hook{'s' if len(now) != 1 else ''}"
    added, removed = len(now - captured), len(captured - now)
    changes = [f"{n} {what}" for n, what in ((added, "added"), (removed, "removed")) if n]
    return f"{count} ({', '.join(changes)} since the capture)" if changes else count


def _weights(graph: int, root: _Root) -> Watch | None:
    modules = list(root.ran)

    def read(frame: FrameType | None) -> Any:
        return _each(modules, _addresses)

    captured = read(None)
    if captured is GONE or not any(captured):
        return None
    show = functools.partial(_weights_shown, captured)
    return _watch(graph, root, USE_WEIGHTS, root.kind, captured, read, show, WEIGHT_CHANGES)


def _addresses(module: torch.nn.Module) -> tuple[tuple[str, int], ...]:
    """Where each parameter and buffer of ``module`` (not its children's) lives now."""
    found: list[tuple[str, int]] = []
    for table in ("_parameters", "_buffers"):
        for name, tensor in module.__dict__.get(table, {}).items():
            if isinstance(tensor, torch.Tensor) and len(found) < MAX_TENSORS:
                found.append((name, _data_ptr(tensor)))
    return tuple(found)


def _data_ptr(tensor: torch.Tensor) -> int:
    try:
        return int(tensor.data_ptr())
    except (RuntimeError, NotImplementedError, TypeError):  # no storage (a fake tensor)
        return 0


def _weights_shown(captured: Any, now: Any) -> str:
    before = [a for module in captured for a in module]
    after = [a for module in now for a in module]
    total = len(before)
    if before == after:
        return f"the memory of its {total} parameters and buffers"
    moved = sum(1 for a, b in zip(before, after) if a != b) + abs(len(after) - total)
    return f"{moved} of its {total} parameters and buffers in new memory"


def _each(refs: list[Any], value: Callable[[Any], Any]) -> Any:
    """``value`` of each object still alive; GONE once one is gone (the capture's roots
    and their modules die together with the script's model)."""
    found = []
    for ref in refs:
        obj = ref()
        if obj is None:
            return GONE
        found.append(value(obj))
    return tuple(found)


# -- torch's switches ----------------------------------------------------------------------
BACKEND_FLAGS: tuple[tuple[str, Callable[[], Any], Target], ...] = (
    ("torch.backends.cuda.matmul.allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32,
     ("attribute", "allow_tf32")),
    ("torch.backends.cudnn.allow_tf32", lambda: torch.backends.cudnn.allow_tf32,
     ("attribute", "allow_tf32")),
    ("torch.backends.cudnn.deterministic", lambda: torch.backends.cudnn.deterministic,
     ("attribute", "deterministic")),
    ("torch.get_float32_matmul_precision()", torch.get_float32_matmul_precision,
     ("call", "set_float32_matmul_precision")),
    ("torch.are_deterministic_algorithms_enabled()",
     torch.are_deterministic_algorithms_enabled, ("call", "use_deterministic_algorithms")),
)


def backend_watches(graph: int, site: int, place: tuple[str, int]) -> list[Watch]:
    """torch's switches that choose kernels, as they were when ``graph`` was captured."""
    found: list[Watch] = []
    for name, get, target in BACKEND_FLAGS:
        try:
            value = get()
        except (AttributeError, RuntimeError):
            continue
        found.append(Watch(graph, name, HELD_BY_VARIABLE, "torch", value,
                           functools.partial(_flag, get), site, place, use=USE_BACKEND,
                           targets=(target,)))
    return found


def _flag(get: Callable[[], Any], frame: FrameType | None) -> Any:
    try:
        return get()
    except (AttributeError, RuntimeError):
        return GONE
