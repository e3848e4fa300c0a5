"""The names around a captured block: what its source reads, and what its frame binds."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import pytest

from graphdoctor.record.frozen.captured_names import bound_values, names_read

SCRIPT = textwrap.dedent('''\
    import torch
    static_x = torch.zeros(4)
    other = torch.zeros(4)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_y = static_x * 2
        scale = static_y.sum()
    g.capture_begin()
    z = other + 1
    g.capture_end()
    untouched = other
    ''')


def _write(tmp_path: Path) -> str:
    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    return str(path)


def test_a_with_block_reads_the_names_in_its_body_only(tmp_path: Path) -> None:
    reads = names_read(_write(tmp_path), 5, 5)
    assert reads == {"static_x": 6}  # static_y is the block's own, bound before it is read


def test_a_name_the_block_binds_before_reading_it_is_not_an_input(tmp_path: Path) -> None:
    path = tmp_path / "ranks.py"
    path.write_text(textwrap.dedent('''\
        with torch.cuda.graph(g):
            out = layer(x)
            if rank == 1:
                out = reduce(out)
            y = y + out
        '''))
    # `out` was rebound by the block before it read it; `y` is read on the line it is bound
    assert names_read(str(path), 1, 1) == {"layer": 2, "x": 2, "rank": 3, "reduce": 4, "y": 5}


def test_a_raw_capture_reads_the_lines_between_begin_and_end(tmp_path: Path) -> None:
    reads = names_read(_write(tmp_path), 8, 10)
    assert reads["other"] == 9 and "untouched" not in reads and "static_x" not in reads


def test_a_block_whose_source_is_gone_reads_nothing() -> None:
    assert names_read("/no/such/file.py", 3, 3) == {}


def test_a_module_frame_binds_its_globals() -> None:
    frame = sys._getframe()  # a function frame: its globals are this module's
    names = dict(bound_values(frame))
    assert names["names_read"] is names_read


def _holder() -> tuple[weakref.ref[object], list[str]]:
    class Payload:
        pass

    kept = Payload()
    ref = weakref.ref(kept)
    seen = [name for name, _ in bound_values(sys._getframe())]
    kept = None  # noqa: F841 - rebinding must free the payload: nothing else may hold it
    gc.collect()
    return ref, seen


def test_reading_a_function_frame_keeps_none_of_its_locals_alive() -> None:
    ref, seen = _holder()
    assert ref() is None
    if sys.version_info >= (3, 12):
        assert "kept" in seen  # read through PyFrame_GetVar, not frame.f_locals


PYTHON_312 = Path("/root/.pyenv/versions/3.12.1/bin/python")


@pytest.mark.skipif(not PYTHON_312.exists() or sys.version_info >= (3, 12),
                    reason="checks Python 3.12's frame reading from an older Python")
def test_on_python_312_function_locals_are_read_and_not_kept() -> None:
    root = Path(__file__).resolve().parents[2]
    code = ("import sys, gc, weakref\n"
            "from graphdoctor.record.frozen.captured_names import bound_values\n"
            "class P: pass\n"
            "def f():\n"
            "    kept = P(); ref = weakref.ref(kept)\n"
            "    seen = [n for n, _ in bound_values(sys._getframe())]\n"
            "    kept = None; gc.collect()\n"
            "    return ref() is None and 'kept' in seen\n"
            "print(f())\n")
    done = subprocess.run([str(PYTHON_312), "-c", code], capture_output=True, text=True,
                          cwd=root, env={"PYTHONPATH": str(root)}, timeout=60)
    assert done.stdout.strip() == "True", done.stderr
