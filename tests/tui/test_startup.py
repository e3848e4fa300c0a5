"""What start-up imports: ``graphdoctor --version`` none of the commands' modules. Checked
in a fresh Python, where nothing was imported before."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

# What a command's own work needs, never the command group: the diagnosis, the reports'
# renderers, the fixes, the launcher, the viewer.
HEAVY = ("graphdoctor.diagnose", "graphdoctor.report", "graphdoctor.fix", "graphdoctor.launch",
         "graphdoctor.tui", "graphdoctor.cli.run", "textual", "rich", "torch")
PRINT_MODULES = "print('modules:', *sorted(sys.modules))"
VERSION = f"""
import sys
from graphdoctor.cli import main
try:
    main(["--version"], prog_name="graphdoctor")
except SystemExit:
    {PRINT_MODULES}
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

