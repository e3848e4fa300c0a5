"""``graphdoctor run`` end to end on the CPU: the script runs as python would run it, its
exit code passes through, and a report is written however the script ends."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphdoctor.report.io import load

pytestmark = pytest.mark.slow


def run(tmp_path: Path, source: str, *options: str, args: tuple[str, ...] = (),
        name: str = "script.py") -> tuple[subprocess.CompletedProcess[str], Path]:
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-o", str(report),
                           *options, str(script), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return done, report


def test_script_sees_its_own_argv_name_and_path(tmp_path: Path) -> None:
    done, report = run(tmp_path, """
        import sys
        print(sys.argv[1:], __name__, sys.path[0])
    """, args=("--lr", "3", "--", "-x"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"['--lr', '3', '--', '-x'] __main__ {tmp_path}"
    assert load(report).trace.status.complete


def test_double_dash_before_the_script(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("import sys; print(sys.argv[1:])\n")
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-q", "-o",
                           str(tmp_path / "r.json"), "--", str(script), "a", "--b"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "['a', '--b']" in done.stdout


def test_module_target(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tool.py").write_text("import sys\nprint('module', __name__, sys.argv[1:])\n")
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-q", "-o",
                           str(tmp_path / "r.json"), "-m", "pkg.tool", "x"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "module __main__ ['x']" in done.stdout


@pytest.mark.parametrize(("code", "expected"), [("sys.exit(3)", 3), ("sys.exit()", 0),
                                                ("raise ValueError('boom')", 1),
                                                ("sys.exit('bye')", 1)])
def test_exit_code_passes_through(tmp_path: Path, code: str, expected: int) -> None:
    done, report = run(tmp_path, f"import sys\n{code}\n")
    assert done.returncode == expected
    trace = load(report).trace
    assert trace.status.exit_code == expected and trace.status.complete


def test_uncaught_exception_is_printed_without_graphdoctor_frames(tmp_path: Path) -> None:
    done, report = run(tmp_path, """
        def inner():
            raise KeyError("missing")
        inner()
    """)
    assert done.returncode == 1
    assert 'File "' + str(tmp_path / "script.py") in done.stderr
    assert "graphdoctor" not in done.stderr.split("KeyError")[0].replace("graphdoctor: ", "")
    exception = load(report).trace.exceptions[-1]
    assert exception.where == "uncaught" and exception.root.type == "KeyError"


def test_segfault_still_writes_an_incomplete_report(tmp_path: Path) -> None:
    done, report = run(tmp_path, """
        import os, signal
        print("before", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    """)
    assert done.returncode == 128 + 11
    status = load(report).trace.status
    assert not status.complete and status.reason == "signal" and status.signal == 11
    assert "SIGSEGV" in status.message and "Segmentation fault" in status.stacks_at_end


def test_sigkill_gives_137_and_a_report(tmp_path: Path) -> None:
    done, report = run(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert done.returncode == 137
    status = load(report).trace.status
    assert status.reason == "signal" and status.signal == 9 and "SIGKILL" in status.message


def test_timeout_dumps_every_thread_and_stops_the_script(tmp_path: Path) -> None:
    done, report = run(tmp_path, """
        import threading, time
        def spin():
            while True:
                time.sleep(0.1)
        threading.Thread(target=spin, name="worker", daemon=True).start()
        def wait_forever():
            while True:
                time.sleep(0.1)
        wait_forever()
    """, "--timeout", "3")
    assert done.returncode == 124
    status = load(report).trace.status
    assert status.reason == "timeout" and not status.complete
    assert "wait_forever" in status.stacks_at_end and "spin" in status.stacks_at_end
    assert "time-out" in status.message


def test_os_exit_is_marked_unfinished(tmp_path: Path) -> None:
    done, report = run(tmp_path, "import os\nos._exit(5)\n")
    assert done.returncode == 5
    status = load(report).trace.status
    assert not status.complete and "os._exit" in status.message


def test_no_cuda_is_said_plainly(tmp_path: Path) -> None:
    done, report = run(tmp_path, "import torch\nprint('hello')\n")
    assert "no CUDA device was found" in done.stderr
    assert not load(report).trace.meta.cuda_available


def test_missing_script_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "nope.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["graphdoctor: error: no such script: nope.py"]


def test_bad_option_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "--timeout", "x", "a.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_default_output_name_and_next_command(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("pass\n")
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "train.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    written = list(tmp_path.glob("graphdoctor-train-*.json"))
    assert done.returncode == 0 and len(written) == 1
    assert f"graphdoctor view {written[0].name}" in done.stderr
    assert not list(tmp_path.glob("*.spool")), "the raw spool is removed"


def test_forked_children_do_not_write_into_the_recording(tmp_path: Path) -> None:
    done, report = run(tmp_path, """
        import os
        pid = os.fork()
        if pid == 0:
            import warnings
            warnings.warn("from the child")
            os._exit(0)
        os.waitpid(pid, 0)
    """)
    assert done.returncode == 0
    assert not load(report).trace.warnings


def test_a_script_that_is_killed_by_ctrl_c_exits_130(tmp_path: Path) -> None:
    done, report = run(tmp_path, "raise KeyboardInterrupt\n")
    assert done.returncode == 130
    assert load(report).trace.exceptions[-1].root.type == "KeyboardInterrupt"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_keep_spool(tmp_path: Path) -> None:
    done, report = run(tmp_path, "pass\n", "--keep-spool", str(tmp_path / "raw.spool.jsonl.gz"))
    assert done.returncode == 0 and (tmp_path / "raw.spool.jsonl.gz").exists()



def test_a_missing_module_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-o",
                           str(tmp_path / "r.json"), "-m", "nosuchmodule.tool"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["graphdoctor: error: no module named nosuchmodule"]
    assert not list(tmp_path.iterdir())


def test_a_module_is_found_in_the_current_folder_without_running_its_package(
        tmp_path: Path) -> None:
    """Started as the ``graphdoctor`` command, whose own folder is first on sys.path, not
    the current one; the package's __init__ runs once, in the script's process."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("open('inits', 'a').write('.')\n")
    (package / "tool.py").write_text("print('tool ran')\n")
    command = tmp_path / "bin" / "graphdoctor"
    command.parent.mkdir()
    command.write_text("import sys\nfrom graphdoctor.cli import main\nsys.exit(main())\n")
    done = subprocess.run([sys.executable, str(command), "run", "-q", "-o", "r.json", "-m",
                           "pkg.tool"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "tool ran" in done.stdout and (tmp_path / "inits").read_text() == "."


def test_the_next_commands_can_be_pasted_for_a_path_with_spaces(tmp_path: Path) -> None:
    (tmp_path / "my runs").mkdir()
    done, _ = run(tmp_path, "pass\n", "-o", "my runs/first run.json")
    assert done.returncode == 0, done.stderr
    assert "explore it:  graphdoctor view 'my runs/first run.json'\n" in done.stderr
    assert "summary:     graphdoctor report 'my runs/first run.json' --format" in done.stderr


def test_a_script_that_never_imports_torch_runs_as_plain_python_would(tmp_path: Path) -> None:
    """graphdoctor imports torch only once the script does: nothing torch prints on import
    (its NumPy warning, where NumPy is missing) appears in a run that never asked for it."""
    done, report = run(tmp_path, "import sys\nprint('torch' in sys.modules)\n")
    assert done.returncode == 0 and done.stdout.startswith("False")
    assert "NumPy" not in done.stderr and "CUDA" not in done.stderr
    notes = load(report).trace.meta.not_recorded
    assert any("never imported torch" in note.why for note in notes)


def test_a_script_is_recorded_from_its_import_of_torch(tmp_path: Path) -> None:
    source = "import sys\nprint('torch' in sys.modules)\nimport torch\nimport warnings\n" \
             "warnings.warn('after the import')\n"
    done, report = run(tmp_path, source)
    assert done.returncode == 0 and done.stdout.startswith("False")
    trace = load(report).trace
    assert trace.meta.torch  # the recorder started: the environment was recorded
    assert [w.message for w in trace.warnings] == ["after the import"]
