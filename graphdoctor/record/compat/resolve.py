"""How compat finds what it needs in torch, declared so that a test can look it up the same way.

Each private or version-dependent thing the recorder reads of torch is declared once, as a
requirement: a name (``TorchName``), an attribute torch's objects carry (``TorchAttribute``),
the keywords a function takes (``TorchParameters``), words in torch's own source
(``TorchSource``), an artifact logger (``ArtifactLogger``), a file of torch's package
(``TorchFile``) or a message its native code prints (``TorchText``). The compat entry that
reads it goes through that declaration, and ``Entry`` ties the entry to its requirements and
to the torch versions it was checked on. tests/record/test_compat.py checks every requirement
of every entry against the installed torch, so a rename in torch fails a test instead of
silently dropping what the recorder would have read.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import logging
import re
import sys
from collections.abc import Callable, Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

TORCH_DIR = Path(torch.__file__).parent
# torch's own type stub for torch._C: it declares the CUDA functions on CPU builds too.
C_STUB = TORCH_DIR / "_C" / "__init__.pyi"
C_MODULE = "torch._C"


def cpu_build() -> bool:
    return torch.version.cuda is None


class Unverifiable(Exception):
    """This build of torch cannot tell whether the requirement holds (a CUDA library's text
    on a CPU build)."""


class Requirement(Protocol):
    def describe(self) -> str: ...

    def missing(self) -> str | None:
        """Why the installed torch lacks it; None when it has it. May raise Unverifiable."""
        ...


@dataclass(frozen=True)
class TorchName:
    """The object at ``module`` (imported on first use), then attributes ``path`` below it."""

    module: str
    path: str = ""
    cuda_only: bool = False  # absent from CPU builds, whose stub of torch._C declares it

    def describe(self) -> str:
        return f"{self.module}.{self.path}" if self.path else self.module

    def resolve(self) -> Any | None:
        """The object, or None where this torch lacks it (or its module fails to import)."""
        found: Any = sys.modules.get(self.module)
        if found is None:
            try:
                found = importlib.import_module(self.module)
            except Exception:  # noqa: BLE001 - a torch module may fail to import for many reasons
                return None
        for part in self.path.split(".") if self.path else ():
            found = getattr(found, part, None)
            if found is None:
                return None
        return found

    def require(self) -> Any:
        """The object; AttributeError where this torch lacks it."""
        found = self.resolve()
        if found is None:
            raise AttributeError(f"{self.describe()} is missing")
        return found

    def missing(self) -> str | None:
        if self.resolve() is not None:
            return None
        if self.cuda_only and cpu_build() and self.module == C_MODULE and declared_in_c_stub(
                self.path):
            return None
        return f"{self.describe()} is missing"


@functools.lru_cache(maxsize=1)
def _c_stub() -> dict[str, ast.stmt]:
    """The top-level functions and classes of torch's stub for torch._C, by name."""
    try:
        tree = ast.parse(C_STUB.read_text())
    except (OSError, SyntaxError):
        return {}
    return {node.name: node for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def declared_in_c_stub(path: str) -> bool:
    """Whether torch's stub of torch._C declares ``path`` (a function, a class, or a class's
    method or attribute, dotted)."""
    first, *rest = path.split(".")
    node: ast.stmt | None = _c_stub().get(first)
    for part in rest:
        if not isinstance(node, ast.ClassDef):
            return False
        node = next((n for n in node.body if _declared_name(n) == part), None)
    return node is not None


def _declared_name(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def _source(owner: Any) -> str:
    try:
        return inspect.getsource(owner)
    except (OSError, TypeError):  # a native object, or a wheel without sources
        return ""


@dataclass(frozen=True)
class TorchAttribute:
    """An attribute that instances of torch's ``owner`` class carry, read off an instance."""

    owner: TorchName
    name: str

    def describe(self) -> str:
        return f"{self.owner.describe()}().{self.name}"

    def read(self, instance: object, default: Any = None) -> Any:
        return getattr(instance, self.name, default)

    def missing(self) -> str | None:
        owner = self.owner.resolve()
        if owner is None:
            return f"{self.owner.describe()} is missing"
        fields = getattr(owner, "__dataclass_fields__", {})
        mention = re.compile(rf"\.{self.name}\b|['\"]{self.name}['\"]")
        if hasattr(owner, self.name) or self.name in fields or mention.search(_source(owner)):
            return None
        return f"{self.owner.describe()} never sets {self.name}"


@dataclass(frozen=True)
class TorchParameters:
    """Keywords a torch function takes."""

    function: TorchName
    names: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.function.describe()}({', '.join(self.names)})"

    def missing(self) -> str | None:
        try:
            return _lacking(self.function, self.names, "takes no",
                            lambda function: inspect.signature(function).parameters)
        except (TypeError, ValueError):  # a native function without a signature
            return f"the signature of {self.function.describe()} cannot be read"


@dataclass(frozen=True)
class TorchSource:
    """Words torch's own source of ``owner`` holds: how torch itself calls what compat calls,
    or the marks compat recognizes torch's frames by."""

    owner: TorchName
    words: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.owner.describe()} mentions {', '.join(self.words)}"

    def missing(self) -> str | None:
        return _lacking(self.owner, self.words, "never mentions", _source)


def _lacking(name: TorchName, wanted: tuple[str, ...], lacks: str,
             held: Callable[[Any], Container[str]]) -> str | None:
    """What the object ``name`` resolves to lacks of ``wanted`` (the keywords, words, ...
    ``held`` finds in it), in words; None where it has them all."""
    found = name.resolve()
    if found is None:
        return f"{name.describe()} is missing"
    has = held(found)
    absent = [item for item in wanted if item not in has]
    return f"{name.describe()} {lacks} {', '.join(absent)}" if absent else None


@dataclass(frozen=True)
class ArtifactLogger:
    """One of the loggers ``torch._logging.getArtifactLogger(module, artifact)`` makes."""

    module: str
    artifact: str

    @property
    def name(self) -> str:
        return f"{self.module}.__{self.artifact}"

    def describe(self) -> str:
        return self.name

    def missing(self) -> str | None:
        module = TorchName(self.module).resolve()
        if module is None:
            return f"{self.module} is missing"
        if any(isinstance(value, logging.Logger) and value.name == self.name
               for value in vars(module).values()):
            return None
        return f"{self.module} logs no {self.artifact} artifact"


@dataclass(frozen=True)
class AnyOf:
    """One of several requirements: what a torch release has in place of another's."""

    options: tuple[Requirement, ...]

    def describe(self) -> str:
        return " or ".join(option.describe() for option in self.options)

    def missing(self) -> str | None:
        reasons = [option.missing() for option in self.options]
        return None if None in reasons else "; ".join(str(reason) for reason in reasons)


@dataclass(frozen=True)
class TorchFile:
    """A file or folder of torch's package, by its path inside it."""

    path: str

    def describe(self) -> str:
        return f"torch/{self.path}"

    def missing(self) -> str | None:
        return None if (TORCH_DIR / self.path).exists() else f"{self.describe()} is missing"


@dataclass(frozen=True)
class TorchText:
    """A message that torch's native ``library`` (CUDA builds only) holds."""

    text: str
    library: str

    def describe(self) -> str:
        return f"{self.text!r} in {self.library}"

    def missing(self) -> str | None:
        files = sorted((TORCH_DIR / "lib").glob(f"{self.library}.*"))
        if not files:
            raise Unverifiable(f"this build of torch has no {self.library}")
        wanted = self.text.encode()
        return None if any(wanted in path.read_bytes() for path in files) else \
            f"{self.library} no longer says {self.text!r}"


@dataclass(frozen=True)
class Entry:
    """One compat entry: what it reads of torch, and the torch versions it was checked on."""

    name: str  # the compat function, class or constant
    checked: str
    needs: tuple[Requirement, ...]

    def missing(self) -> list[str]:
        return [reason for reason in (need.missing() for need in self.needs) if reason]
