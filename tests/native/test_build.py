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
    with pytest.raises(GraphDoctorError, match="not a folder of this user's"):
        build.cache_folder()


def test_the_kernel_record_is_the_newest_the_headers_declare(tmp_path: Path) -> None:
    (tmp_path / "cupti_activity.h").write_text(
        "typedef struct {} CUpti_ActivityKernel9;\ntypedef struct {} CUpti_ActivityKernel10;\n")
    assert build.kernel_record(tmp_path) == "CUpti_ActivityKernel10"
