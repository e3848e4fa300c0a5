"""``graphdoctor run ./program``: a native program runs under the injection library (here,
with no GPU, one that never starts CUDA) and gets a report; what a native run cannot do is
one line and exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphdoctor.cli.native import is_native
from graphdoctor.errors import GraphDoctorError
from graphdoctor.record.native import build

pytestmark = pytest.mark.slow  # each runs graphdoctor in processes of its own

TRUE = shutil.which("true") or "/bin/true"


def graphdoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphdoctor", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_only_an_elf_executable_is_native(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    script.chmod(0o755)
    assert is_native(TRUE, module=False) and not is_native(TRUE, module=True)
    assert not is_native(str(script), module=False) and not is_native(str(tmp_path), False)


def test_what_a_native_run_cannot_do_is_one_line(tmp_path: Path) -> None:
    done = graphdoctor("run", "--nproc-per-node", "2", TRUE, cwd=tmp_path)
    assert done.returncode == 2 and "native program" in done.stderr
    assert "Traceback" not in done.stderr
    copy = tmp_path / "program"
    copy.write_bytes(Path(TRUE).read_bytes())  # not executable
    done = graphdoctor("run", str(copy), cwd=tmp_path)
    assert done.returncode == 2 and "chmod +x" in done.stderr


def toolchain_missing() -> bool:
    try:
        build.toolchain()
    except GraphDoctorError:
        return True
    return False


@pytest.mark.skipif(toolchain_missing(), reason="needs cc and graphdoctor[native]'s wheels")
def test_a_native_program_gets_a_report_and_keeps_its_exit_code(tmp_path: Path) -> None:
    done = graphdoctor("run", "-o", "out.json", shutil.which("false") or "/bin/false",
                       cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "out.json").read_text())
    notes = json.dumps(report)
    assert "a native program" in notes and "Traceback" not in done.stderr
