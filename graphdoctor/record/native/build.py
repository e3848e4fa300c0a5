"""Building the injection library that records a native program (``inject.c``).

It is built from source the first time a native program is recorded, with the machine's C
compiler (``$CC``, else ``cc``), against the CUPTI and CUDA headers and the ``libcupti`` of
NVIDIA's wheels (``pip install 'graphdoctor[native]'``: ``nvidia-cuda-cupti``,
``nvidia-cuda-runtime`` and ``nvidia-cuda-crt``), never a system CUDA the user may not
have. The library is kept in graphdoctor's cache folder under a name made from everything
that went into it (source, headers, library, compiler), so a changed wheel or compiler
builds it again.

The library is code that runs inside the user's program, so it is private to the user. Its
cache folder (and the ``graphdoctor`` folder above it) is made 0700; on every use, build or
load, each is checked to be a folder (not a link) of this user's that no one else may write
into, and the folders above them are checked too: none may be writable by anyone without
the sticky bit (``/tmp`` has it), nor another user's and writable by more than that user.
The library is compiled into a fresh file in the folder and renamed into place (through
:mod:`graphdoctor.files.writing`), and loaded by descriptor (:func:`open_library`): opened
without following a link, checked once open (a regular file of this user's, writable by no
one else), and handed to the program as ``/proc/self/fd/N``, so what is loaded is what was
checked, whatever happens to the path after.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from graphdoctor.errors import GraphDoctorError
from graphdoctor.files.writing import move_file

SOURCE = Path(__file__).resolve().parents[2] / "native" / "inject.c"
LIBRARY = "libgraphdoctor_inject"
NEEDS_WHEELS = ("recording a native program needs CUPTI's headers and library from NVIDIA's "
                "wheels: pip install 'graphdoctor[native]'")
NEEDS_COMPILER = ("recording a native program builds a small library with a C compiler, and "
                  "none was found: install one (apt install gcc), or name it in $CC")
KERNEL_RECORD = re.compile(r"}\s*(CUpti_ActivityKernel\d+)\s*;")


@dataclass(frozen=True)
class Toolchain:
    """What the library is built with: a compiler, the wheels' include folders (CUPTI's
    first) and the folder of libcupti."""

    compiler: str
    includes: tuple[Path, ...]
    lib: Path

    @property
    def include(self) -> Path:
        return self.includes[0]


def library() -> Path:
    """The injection library, built now if this toolchain has not built it yet, and checked
    as it will be when loaded."""
    tools = toolchain()
    folder = cache_folder()
    target = folder / f"{LIBRARY}-{_fingerprint(tools)}.so"
    if not os.path.lexists(target):
        _compile(tools, folder, target)
    os.close(open_library(target))
    return target


def open_library(path: str | os.PathLike[str]) -> int:
    """A descriptor of the library at ``path``, once its folder and the file itself are
    checked (see the module doc); GraphDoctorError, naming what is wrong, otherwise."""
    path = Path(path)
    check_private(path.parent)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as error:
        raise GraphDoctorError(f"the native library {path} cannot be opened "
                               f"({error.strerror or error}); it is never loaded through a "
                               "link") from None
    info = os.fstat(fd)
    why = _unsafe(info, regular=True)
    if why:
        os.close(fd)
        raise GraphDoctorError(f"the native library {path} is {why}: it is not loaded; "
                               "remove it and run again to build it afresh")
    return fd


def toolchain() -> Toolchain:
    compiler = os.environ.get("CC") or "cc"
    found = shutil.which(compiler)
    if found is None:
        raise GraphDoctorError(NEEDS_COMPILER)
    includes, lib = wheel_folders()
    return Toolchain(found, includes, lib)


def wheel_folders() -> tuple[tuple[Path, ...], Path]:
    """The include folders of NVIDIA's wheels (``site-packages/nvidia/cu13/include``; CUPTI's
    first: cupti.h, cuda.h and crt/ may come from three wheels, even from two site-packages)
    and the folder of libcupti."""
    spec = importlib.util.find_spec("nvidia")
    roots = [Path(r) for r in (spec.submodule_search_locations or [])] if spec else []
    includes = [p for root in roots for p in sorted(root.glob("*/include")) if p.is_dir()]
    cupti = [p for p in includes if (p / "cupti.h").exists()]
    libs = [p.parent for root in roots for p in sorted(root.glob("*/lib/libcupti.so*"))]
    needed = ("cuda.h", "crt/host_defines.h")
    if not cupti or not libs or not all(any((p / n).exists() for p in includes) for n in needed):
        raise GraphDoctorError(NEEDS_WHEELS)
    return (cupti[-1], *[p for p in includes if p != cupti[-1]]), libs[-1]


def cache_folder() -> Path:
    """graphdoctor's own folder for built libraries, made private (0700), and checked
    (:func:`check_private`)."""
    base = Path(os.path.abspath(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"))
    folder = base / "graphdoctor" / "native"
    base.mkdir(parents=True, exist_ok=True)
    for private in (folder.parent, folder):
        try:
            private.mkdir(mode=0o700)
        except FileExistsError:
            pass
    check_private(folder)
    return folder


def check_private(folder: Path) -> None:
    """GraphDoctorError unless ``folder`` and its parent are folders of this user's that
    no one else may write into, and no folder above them lets anyone replace them."""
    for private in (folder, folder.parent):
        why = _unsafe(_lstat(private), regular=False)
        if why:
            raise GraphDoctorError(f"{private} is {why}: the native library is not built or "
                                   f"loaded there (chmod 700 {private}, or remove it)")
    above = Path(os.path.realpath(folder.parent.parent))
    for ancestor in (above, *above.parents):
        info = _lstat(ancestor)
        if _others_may_replace(info):
            raise GraphDoctorError(f"{ancestor} lets other users replace {folder}: the native "
                                   "library is not built or loaded under it")


def _lstat(path: Path) -> os.stat_result:
    try:
        return os.lstat(path)
    except OSError as error:
        raise GraphDoctorError(f"{path} cannot be read ({error.strerror or error})") from None


def _unsafe(info: os.stat_result, regular: bool) -> str:
    """Why a private folder (or, ``regular``, the library) is not safe to use; "" if it is."""
    kind = stat.S_ISREG(info.st_mode) if regular else stat.S_ISDIR(info.st_mode)
    if not kind:
        return "not a regular file" if regular else "not a folder (a link, or a file)"
    if info.st_uid != os.geteuid():
        return "another user's"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "writable by other users"
    return ""


def _others_may_replace(info: os.stat_result) -> bool:
    """Whether users other than this one (and root) may rename what a folder holds."""
    sticky = bool(info.st_mode & stat.S_ISVTX)
    if info.st_mode & stat.S_IWOTH and not sticky:
        return True
    return info.st_uid not in (0, os.geteuid()) and bool(
        info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)) and not sticky


def _fingerprint(tools: Toolchain) -> str:
    digest = hashlib.sha256(SOURCE.read_bytes())
    for header in ("cupti_activity.h", "cupti.h"):
        digest.update((tools.include / header).read_bytes())
    digest.update(str(sorted(tools.lib.glob("libcupti.so*"))).encode())
    digest.update(tools.compiler.encode())
    return digest.hexdigest()[:16]


def kernel_record(include: Path) -> str:
    """The newest kernel activity record the headers declare (CUpti_ActivityKernel10 in
    CUDA 13): the layout the library reads CUPTI's records with."""
    found: list[str] = KERNEL_RECORD.findall(
        (include / "cupti_activity.h").read_text(errors="replace"))
    if not found:
        raise GraphDoctorError(f"{include / 'cupti_activity.h'} declares no kernel record")
    return max(found, key=lambda name: int(name.removeprefix("CUpti_ActivityKernel")))


def compile_command(tools: Toolchain, output: Path) -> list[str]:
    return [tools.compiler, "-O2", "-shared", "-fPIC", "-std=gnu11",
            f"-DKERNEL_RECORD={kernel_record(tools.include)}",
            *(f"-I{folder}" for folder in tools.includes), str(SOURCE), f"-L{tools.lib}",
            f"-l:{_cupti_name(tools.lib)}",
            f"-Wl,-rpath,{tools.lib}", "-ldl", "-lpthread", "-o", str(output)]


def _cupti_name(lib: Path) -> str:
    """libcupti.so where the wheel has it, else its versioned name (libcupti.so.13)."""
    names = sorted(p.name for p in lib.glob("libcupti.so*"))
    return "libcupti.so" if "libcupti.so" in names else names[0]


def _compile(tools: Toolchain, folder: Path, target: Path) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{LIBRARY}-", suffix=".so", dir=folder)
    os.close(handle)
    try:
        done = subprocess.run(compile_command(tools, Path(temporary)), capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            raise GraphDoctorError(f"building the native library failed: "
                                   f"{done.stderr.strip().splitlines()[-1:]}")
        os.chmod(temporary, 0o700)  # the linker's own mode follows the umask
        move_file(temporary, target, follow=False)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
