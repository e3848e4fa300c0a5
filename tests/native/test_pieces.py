"""The native layer's pure parts: naming frames, finding eager steps, reading the graph's
node list."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from graphdoctor.record.native import frames
from graphdoctor.record.native.eager_steps import eager_steps, kernel_order
from graphdoctor.record.native.frames import FrameNames, parsed
from graphdoctor.record.native.shapes import anatomy_of


def test_addr2line_output_parsed() -> None:
    assert parsed("main\n/src/prog.cu:42\n") == ("/src/prog.cu", 42, "main")
    assert parsed("main\n/src/prog.cu:42 (discriminator 3)\n") == ("/src/prog.cu", 42, "main")
    assert parsed("??\n??:0\n") is None
    assert parsed("step\n??:0\n") == ("", 0, "step")


def test_frames_without_lines_are_nobodys_code(tmp_path: Path) -> None:
    names = FrameNames(str(tmp_path))
    names.addr2line = None
    stack = names.stack([{"m": "/lib/libc.so.6", "o": 10, "b": 0, "s": "__libc_start_main"},
                         {"m": str(tmp_path / "prog"), "o": 20, "b": 0, "s": ""}])
    assert stack == [("<libc.so.6>", 0, "__libc_start_main"), ("<prog>", 0, "?")]


def test_the_static_runtimes_own_frames_are_dropped_when_no_line_is_known() -> None:
    names = FrameNames("/nowhere")
    names.addr2line = None
    stack = names.stack([{"m": "/p/prog", "o": 1, "b": 0, "s": "libcudart_static_4f1e"},
                         {"m": "/p/prog", "o": 2, "b": 0, "s": "cudaStreamSynchronize"},
                         {"m": "/p/prog", "o": 3, "b": 0, "s": "main"}])
    assert [name for _, _, name in stack] == ["cudaStreamSynchronize", "main"]


@pytest.mark.skipif(shutil.which("addr2line") is None or shutil.which("cc") is None,
                    reason="needs binutils and a C compiler")
def test_a_programs_own_frame_gets_its_line_and_a_system_librarys_does_not(
        tmp_path: Path) -> None:
    source = tmp_path / "prog.c"
    source.write_text("int marker(void) { return 7; }\nint main(void) { return marker(); }\n")
    subprocess.run(["cc", "-g", "-O0", "-o", str(tmp_path / "prog"), str(source)], check=True)
    symbols = subprocess.run(["nm", str(tmp_path / "prog")], capture_output=True, text=True)
    offset = int(next(line.split()[0] for line in symbols.stdout.splitlines()
                      if line.endswith(" marker")), 16)
    names = FrameNames(str(tmp_path))
    file, line, function = names.frame(str(tmp_path / "prog"), offset + 1, 0, "")
    assert (Path(file).name, line, function) == ("prog.c", 1, "marker")
    assert names.frame("/lib/x86_64-linux-gnu/libc.so.6", 100, 0, "x")[0] == "<libc.so.6>"
    assert frames.outside("") == "<?>"


def test_eager_steps_are_the_graphs_kernels_in_its_order() -> None:
    order = ["a", "b", "a"]
    names = ["x", "a", "b", "a", "a", "b", "a", "b"]
    starts = [0, 10, 20, 30, 40, 50, 60, 70]
    ends = [5, 15, 25, 38, 45, 55, 69, 75]
    assert eager_steps(order, names, starts, ends) == [(10, 28), (40, 29)]
    assert eager_steps([], names, starts, ends) == []


def test_a_graphs_kernel_order_from_its_node_list() -> None:
    found = anatomy_of({"types": [1, 0, 0, 7, 0], "kernels": [None, "_Z6matvecPKf", "_Z3addv",
                                                              None, "_Z6matvecPKf"],
                        "edges": [[0, 1], [1, 2], [2, 3], [3, 4], [9, 9]], "read_ns": 5},
                       demangle=lambda name: {"_Z6matvecPKf": "matvec(float const*)",
                                              "_Z3addv": "add()"}.get(name, name))
    assert found["nodes"] == 5 and found["edges"] == 4 and found["read_ns"] == 5
    assert found["node_types"] == {"memcpy": 1, "kernel": 3, "event record": 1}
    assert kernel_order(found) == ["matvec", "add", "matvec"]
