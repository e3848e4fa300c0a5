"""A native program's frames, from the return addresses the injection library sends.

Each frame comes as its module (the executable or a shared library), its offset in it, its
load address and the symbol the dynamic linker knows (exported functions only, so an
executable built without ``-rdynamic`` names few). Where ``addr2line`` (binutils) is on the
machine, the module is the program's own (under the folder it runs in, not a system
library) and it has debug info (built with ``-g``), a frame gets its function, file and
line from it; otherwise the function is the linker's symbol (or ``?``) and the file is
``<module>``, line 0, which the stacks count as no code of the user's. Each address is
looked up once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

ELF_TYPE_AT = 16  # e_type in an ELF header: 2 (ET_EXEC) keeps absolute addresses
ET_EXEC = 2
UNKNOWN = "?"
RUNTIME_INTERNALS = "libcudart_static_"  # how the static CUDA runtime's own functions are named
Frame = tuple[str, int, str]  # file, line, function


class FrameNames:
    """Names frames, asking addr2line once per address."""

    def __init__(self, project: str | None = None) -> None:
        self.addr2line = shutil.which("addr2line")
        self.project = os.path.realpath(project or os.getcwd()) + os.sep
        self._names: dict[tuple[str, int], Frame] = {}
        self._absolute: dict[str, bool] = {}

    def stack(self, frames: Sequence[Mapping[str, Any]]) -> list[Frame]:
        """(file, line, function) per frame, innermost first, from the first frame with a
        line: the CUDA runtime's own frames above it (linked into the program statically,
        as nvcc does by default) are not the user's code, and the call a finding names is
        the user's line. A stack with no line at all is kept whole."""
        named = [self.frame(str(f.get("m", "")), int(f.get("o", 0)), int(f.get("b", 0)),
                            str(f.get("s") or "")) for f in frames]
        first = next((i for i, (_, line, _) in enumerate(named) if line), None)
        if first is None:  # no lines: from the CUDA call the program made, at least
            first = next((i for i, (_, _, name) in enumerate(named)
                          if not name.startswith(RUNTIME_INTERNALS)), 0)
        return named[first:]

    def frame(self, module: str, offset: int, base: int, symbol: str) -> Frame:
        key = (module, offset)
        if key not in self._names:
            found = self._lookup(module, offset, base)
            if found is None or not found[0]:  # no debug info: no line of the user's
                found = (outside(module), 0, found[2] if found else symbol or UNKNOWN)
            self._names[key] = found
        return self._names[key]

    def _lookup(self, module: str, offset: int, base: int) -> Frame | None:
        if self.addr2line is None or not self.owns(module):
            return None
        # a return address is the instruction after the call: one back is the call's line
        address = (base + offset if self._keeps_addresses(module) else offset) - 1
        try:
            done = subprocess.run([self.addr2line, "-f", "-C", "-e", module, hex(address)],
                                  capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return parsed(done.stdout)

    def owns(self, module: str) -> bool:
        """Whether ``module`` is the program's own (under the folder it runs in): a system
        library's lines (libc with its debug info installed) are never the user's."""
        return bool(module) and os.path.realpath(module).startswith(self.project)

    def _keeps_addresses(self, module: str) -> bool:
        """Whether ``module`` is an executable linked at a fixed address (not PIE)."""
        if module not in self._absolute:
            try:
                with open(module, "rb") as elf:
                    header = elf.read(ELF_TYPE_AT + 2)
                self._absolute[module] = int.from_bytes(header[ELF_TYPE_AT:], "little") == ET_EXEC
            except OSError:
                self._absolute[module] = False
        return self._absolute[module]


def outside(module: str) -> str:
    """A frame's file where no line is known: ``<libfoo.so>``, which no reader takes for a
    source file of the user's (CUDA's runtime linked into the program statically, the C
    library), so the innermost frame with a line is the one a finding names."""
    return f"<{os.path.basename(module) or UNKNOWN}>"


def parsed(output: str) -> Frame | None:
    """addr2line's two lines (function, ``file:line``); None where it knew neither."""
    lines = output.splitlines()
    if len(lines) < 2:
        return None
    function, place = lines[0].strip(), lines[1].strip()
    file, _, line = place.rpartition(":")
    number = int(line.split()[0]) if line.split() and line.split()[0].isdigit() else 0
    if file in ("", "??") or not number:
        return None if function in ("", "??") else ("", 0, function)
    return (file, number, function if function != "??" else UNKNOWN)
