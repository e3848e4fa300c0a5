"""Where a source file lives, from its path alone (works on any machine, for any trace)."""

from __future__ import annotations

import re

from graphdoctor.own_code import RUNNER_PARTS, own_part
from graphdoctor.trace.model import LIBRARY, PYTHON, TORCH, USER

TORCH_PACKAGES = frozenset({"torch", "triton", "functorch", "torchgen", "nvtx", "pynvml"})
_PACKAGES_DIR = re.compile(r"[/\\](?:site|dist)-packages[/\\]([^/\\]+)")
_STDLIB = re.compile(r"[/\\]lib(?:64)?[/\\]python3\.\d+[/\\](?!site-packages|dist-packages)")
_FRAME_TEXT = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)')


def classify_path(path: str) -> str:
    """USER, LIBRARY, TORCH or PYTHON."""
    if path.startswith("<"):
        return PYTHON
    if "torchinductor_" in path or "/torch_compile_debug/" in path:
        return TORCH  # code that Inductor generated
    match = _PACKAGES_DIR.search(path)
    if match:
        top = match.group(1).split(".")[0]
        return TORCH if top in TORCH_PACKAGES else LIBRARY
    if _STDLIB.search(path):
        return PYTHON
    return USER


def frames_in_text(text: str) -> list[tuple[str, int, str]]:
    """(file, line, function) of each ``File "...", line N, in f`` in a traceback text,
    outermost first."""
    return [(m.group("file"), int(m.group("line")), m.group("func").strip())
            for m in _FRAME_TEXT.finditer(text)]


def trim_runner_frames(frames: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    """Drop the frames of graphdoctor's runner (runpy, graphdoctor.launch and .record) above the
    user's program in a stack read from text."""
    last_runner = max((i for i, (file, _, _) in enumerate(frames) if _is_runner(file)),
                      default=-1)
    return frames[last_runner + 1:]


def _is_runner(file: str) -> bool:
    return (file == "<frozen runpy>" or file.replace("\\", "/").endswith("/runpy.py")
            or own_part(file) in RUNNER_PARTS)
