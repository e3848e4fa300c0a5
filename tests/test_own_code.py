"""Whether a file is graphdoctor's own: by this package's real folder, or, for a path
recorded elsewhere, by naming one of the package's modules inside a graphdoctor folder."""

from __future__ import annotations

import os

import pytest

from graphdoctor import own_code, units
from graphdoctor.own_code import is_own_file, own_part


def test_this_packages_files_are_its_own_by_their_part() -> None:
    assert own_part(os.path.realpath(own_code.__file__)) == "own_code"
    assert own_part(os.path.realpath(units.__file__)) == "units"


@pytest.mark.parametrize(("path", "part"), [
    ("/work/main/graphdoctor/record/child.py", "record"),  # a recording made elsewhere
    ("/usr/lib/python3/site-packages/graphdoctor/launch/runner.py", "launch"),
    ("/home/u/graphdoctor/graphdoctor/api.py", "api"),  # a checkout named after it
    ("C:\\src\\graphdoctor\\record\\child.py", "record"),
])
def test_a_path_recorded_on_another_machine_is_told_by_its_shape(path: str, part: str) -> None:
    assert own_part(path) == part


@pytest.mark.parametrize("path", [
    "/home/u/graphdoctor/train.py",  # the user's project, named like us
    "/home/u/graphdoctor/tests/test_model.py",
    "/home/u/notgraphdoctor/record/child.py",
    "/home/u/graphdoctor/recorder/x.py",
    "<frozen runpy>",
    "/usr/lib/python3.12/runpy.py",
])
def test_other_files_are_not(path: str) -> None:
    assert not is_own_file(path)
