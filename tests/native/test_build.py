"""Building the injection library: with the wheels' headers and a compiler it compiles (the
C source is checked on every CI run); without either, one line says what to install."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from graphdoctor.errors import GraphDoctorError
from graphdoctor.record.native import build


def have_toolchain() -> bool:
    try:
        build.toolchain()
    except GraphDoctorError:
        return False
    return True


@pytest.mark.skipif(not have_toolchain(), reason="needs cc and graphdoctor[native]'s wheels")
def test_the_library_builds_once_into_a_private_cache(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built = build.library()
    assert built.read_bytes()[:4] == b"\x7fELF"
    assert built.parent == tmp_path / "graphdoctor" / "native"
    assert stat.S_IMODE(os.stat(built.parent).st_mode) == 0o700
    modified = built.stat().st_mtime_ns
    assert build.library() == built and built.stat().st_mtime_ns == modified  # not again
    assert [p.name for p in built.parent.iterdir()] == [built.name]  # no temporary left


def test_a_missing_compiler_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler-here")
    with pytest.raises(GraphDoctorError, match="C compiler"):
        build.toolchain()


def test_missing_wheels_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(GraphDoctorError, match=r"graphdoctor\[native\]"):
        build.wheel_folders()


def test_a_cache_folder_that_is_a_link_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "cache" / "graphdoctor").mkdir(parents=True)
    (tmp_path / "cache" / "graphdoctor" / "native").symlink_to(elsewhere)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(GraphDoctorError, match="is not a folder \\(a link"):
        build.cache_folder()


def test_the_kernel_record_is_the_newest_the_headers_declare(tmp_path: Path) -> None:
    (tmp_path / "cupti_activity.h").write_text(
        "typedef struct {} CUpti_ActivityKernel9;\ntypedef struct {} CUpti_ActivityKernel10;\n")
    assert build.kernel_record(tmp_path) == "CUpti_ActivityKernel10"


# -- private to the user: the folder, the folders above it, the library ----------------------
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def test_the_cache_folder_and_the_one_above_it_are_made_private(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = build.cache_folder()
    for made in (folder, folder.parent):
        assert stat.S_IMODE(os.stat(made).st_mode) == 0o700


@pytest.mark.parametrize("loose", ["graphdoctor", "graphdoctor/native"])
def test_a_cache_folder_others_may_write_into_is_refused(tmp_path: Path, loose: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder made 0777 was accepted: anyone could plant a library there."""
    (tmp_path / "cache" / "graphdoctor" / "native").mkdir(parents=True, mode=0o700)
    (tmp_path / "cache" / loose).chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(GraphDoctorError, match="writable by other users.*chmod 700"):
        build.cache_folder()


@pytest.mark.skipif(not IS_ROOT, reason="giving a folder to another user needs root")
def test_a_cache_under_another_user_s_writable_folder_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chown(shared, 4242, 4242)
    shared.chmod(0o775)  # its owner's group may rename what it holds
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    with pytest.raises(GraphDoctorError, match="lets other users replace"):
        build.cache_folder()
    shared.chmod(0o1777)  # sticky, as /tmp is: only the owner of a name may rename it
    assert build.cache_folder() == shared / "graphdoctor" / "native"


def planted(folder: Path, name: str, how: str) -> Path:
    """A library at ``name`` in ``folder`` that is not safe to load."""
    path = folder / name
    elsewhere = folder.parent / "elsewhere.so"
    elsewhere.write_bytes(b"\x7fELF not ours")
    if how == "a link":
        path.symlink_to(elsewhere)
    elif how == "writable by others":
        path.write_bytes(b"\x7fELF")
        path.chmod(0o666)
    else:
        path.write_bytes(b"\x7fELF")
        os.chown(path, 4242, 4242)
    return path


@pytest.mark.parametrize("how", ["a link", "writable by others",
                                 pytest.param("another user's", marks=pytest.mark.skipif(
                                     not IS_ROOT, reason="needs root"))])
def test_a_planted_library_is_never_opened(tmp_path: Path, how: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    library = planted(build.cache_folder(), "libgraphdoctor_inject-0123456789abcdef.so", how)
    with pytest.raises(GraphDoctorError, match="is not loaded|never loaded through a link"):
        os.close(build.open_library(library))


@pytest.mark.skipif(not have_toolchain(), reason="needs cc and graphdoctor[native]'s wheels")
def test_a_planted_library_at_the_built_name_is_refused(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A link planted at the library's name was loaded unchecked."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    name = f"{build.LIBRARY}-{build._fingerprint(build.toolchain())}.so"
    planted(build.cache_folder(), name, "a link")
    with pytest.raises(GraphDoctorError):
        build.library()


PROGRAM = """#!/bin/sh
# swap the library's path for another file, then read what the driver would load
mv "$1" "$1.checked" && printf 'swapped' > "$1"
cat "$CUDA_INJECTION64_PATH" > loaded
"""


def test_the_program_loads_the_library_checked_whatever_its_path_holds_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphdoctor.launch.runner import Target
    from graphdoctor.record.native.run import LIBRARY_ENV, run_native
    from graphdoctor.record.recorder import new_recorder
    from graphdoctor.trace.spool.file import SpoolWriter

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    library = build.cache_folder() / "libgraphdoctor_inject-0123456789abcdef.so"
    library.write_bytes(b"checked")
    library.chmod(0o700)
    program = tmp_path / "program"
    program.write_text(PROGRAM)
    program.chmod(0o755)
    monkeypatch.setenv(LIBRARY_ENV, str(library))
    monkeypatch.chdir(tmp_path)
    recorder = new_recorder(SpoolWriter(tmp_path / "s.spool"), "default")
    assert run_native(Target(str(program), (str(library),)), recorder).exit_code == 0
    assert (tmp_path / "loaded").read_bytes() == b"checked"


def test_the_child_outlives_the_program_without_ignoring_ctrl_c(tmp_path: Path) -> None:
    """graphdoctor reads a Ctrl-C ignored by its child as one the script ignores, and lets
    the script run on: the child of a native run lives through the signals it shares with
    the program by catching them, so a Ctrl-C still ends the program and the run."""
    import signal

    from graphdoctor.launch.relay import ignores
    from graphdoctor.record.native.run import _outliving_the_program

    with _outliving_the_program():
        os.kill(os.getpid(), signal.SIGINT)  # caught and dropped: this process lives on
        assert not ignores(os.getpid(), signal.SIGINT)
