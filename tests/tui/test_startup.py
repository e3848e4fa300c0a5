"""What start-up imports: ``graphdoctor --version`` none of the commands' modules, and the
viewer's first frame none of the screens not yet shown. Each is checked in a fresh Python,
where nothing was imported before."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

# What a command's own work needs, never the command group: the diagnosis, the reports'
# renderers, the fixes, the launcher, the viewer.
HEAVY = ("graphdoctor.diagnose", "graphdoctor.report", "graphdoctor.fix", "graphdoctor.launch",
         "graphdoctor.tui", "graphdoctor.cli.run", "textual", "rich", "torch")
# The screens a first frame on the Summary does not show, and the search.
NOT_SHOWN_FIRST = ("graphdoctor.tui.screens.timeline", "graphdoctor.tui.screens.allocations",
                   "graphdoctor.tui.screens.graphs", "graphdoctor.tui.screens.graph_story",
                   "graphdoctor.tui.search")
PRINT_MODULES = "print('modules:', *sorted(sys.modules))"
VERSION = f"""
import sys
from graphdoctor.cli import main
try:
    main(["--version"], prog_name="graphdoctor")
except SystemExit:
    {PRINT_MODULES}
"""
FIRST_FRAME_THEN_TIMELINE = f"""
import asyncio, sys
from graphdoctor.demo import load_demo
from graphdoctor.tui.app import GraphDoctorApp

async def main():
    app = GraphDoctorApp(load_demo(), "demo")
    async with app.run_test() as pilot:
        await pilot.pause()
        {PRINT_MODULES}
        await pilot.press("3")
        {PRINT_MODULES}

asyncio.run(main())
"""


def modules_after(code: str) -> list[set[str]]:
    """The modules loaded at each point ``code`` prints them (PRINT_MODULES)."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [set(line.split()[1:]) for line in done.stdout.splitlines()
            if line.startswith("modules: ")]


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in names))


def test_version_imports_no_command() -> None:
    [modules] = modules_after(VERSION)
    assert "graphdoctor.cli" in modules and "click" in modules
    assert loaded(modules, HEAVY) == []


def test_importing_the_command_group_imports_no_command() -> None:
    [modules] = modules_after(f"import sys\nfrom graphdoctor.cli import main\n{PRINT_MODULES}")
    assert loaded(modules, HEAVY) == []


def test_the_first_frame_imports_only_the_screens_it_shows() -> None:
    first_frame, after_timeline = modules_after(FIRST_FRAME_THEN_TIMELINE)
    assert "graphdoctor.tui.screens.summary" in first_frame
    assert loaded(first_frame, NOT_SHOWN_FIRST) == []
    assert "graphdoctor.tui.screens.timeline" in after_timeline  # imported when shown
