"""graphdoctor's sys.monitoring tool id gives way to the script's: to the script it looks free
(``get_tool``), a script that asks for it gets it, and graphdoctor moves to another free one
(or, with none free, stops watching); once graphdoctor lets go, every id is as the script left
it. (3.12+)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.record.test_calls import _python_with_monitoring

ROOT = Path(__file__).resolve().parents[2]
GIVE_WAY = '''
import sys
from graphdoctor.record.eager.calls import Monitor

mon = sys.monitoring
calls = []
lost = []

def f():
    return 1

monitor = Monitor(lambda: lost.append(True))
monitor.claim({mon.events.PY_START: lambda code, offset: calls.append(code.co_name)})
monitor.add_local(f.__code__, mon.events.PY_START)
held = monitor.tool
f()
mon.use_tool_id(held, "script")  # the script asks for graphdoctor's id: it gets it
moved = monitor.tool
f()
print("moved", held != moved and moved is not None, mon.get_tool(held), len(calls))
print("looks free", mon.get_tool(moved))
for tool in range(6):  # the script takes every id it sees free, graphdoctor's among them:
    if mon.get_tool(tool) is None:  # with no other free, graphdoctor steps aside
        mon.use_tool_id(tool, "script")
f()
print("lost", lost == [True], monitor.tool is None, len(calls))
monitor.release()
print("tools", [mon.get_tool(t) for t in range(6)], mon.use_tool_id.__module__)
'''


@pytest.mark.skipif(_python_with_monitoring() is None, reason="needs Python 3.12+")
def test_the_script_gets_the_tool_id_graphdoctor_holds(tmp_path: Path) -> None:
    script = tmp_path / "give_way.py"
    script.write_text(GIVE_WAY)
    done = subprocess.run([str(_python_with_monitoring()), str(script)], capture_output=True,
                          text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "moved True script 2",
        "looks free None",
        "lost True True 2",
        "tools ['script', 'script', 'script', 'script', 'script', 'script'] sys.monitoring",
    ]
