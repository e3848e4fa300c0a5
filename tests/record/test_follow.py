"""How the processes the script starts come to be recorded: the environment a recording
process leaves them, and the ``sitecustomize`` that Python then runs first in each, which
must leave the process as it would be without graphdoctor (its ``sys.path``, its own
``sitecustomize``, what it prints) whether or not it can follow it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphdoctor.files.run_files import RunFiles
from graphdoctor.launch.child_process import CHILD_ENV, FOLLOW_ENV
from graphdoctor.record.processes import follow

SITE = follow.SITE_FOLDER
PYTHON_312 = Path("/root/.pyenv/versions/3.12.1/bin/python3.12")
SEES = ("import json, os, sys\n"
        "mod = sys.modules.get('sitecustomize')\n"
        "print(json.dumps({'path': sys.path, 'sitecustomize': getattr(mod, '__file__', None),\n"
        "  'marker': os.environ.get('USER_SITE_RAN'), 'finder': type(sys.meta_path[0]).__name__,\n"
        "  'graphdoctor': sorted(m for m in sys.modules if m.startswith('graphdoctor'))}))\n")


def test_offer_puts_the_folder_first_once_and_withdraw_takes_it_away(tmp_path: Path) -> None:
    environ = {"PYTHONPATH": "/theirs:/also"}
    follow.offer(RunFiles(tmp_path / "r.spool"), "full", environ)
    follow.offer(RunFiles(tmp_path / "r.spool"), "full", environ)
    assert environ["PYTHONPATH"] == os.pathsep.join([SITE, "/theirs", "/also"])
    assert json.loads(environ[FOLLOW_ENV]) == {"spool": str(tmp_path / "r.spool"),
                                               "mode": "full"}
    follow.withdraw(environ)
    assert environ == {"PYTHONPATH": "/theirs:/also"}
    alone: dict[str, str] = {}
    follow.offer(RunFiles(tmp_path / "r.spool"), "default", alone)
    assert alone["PYTHONPATH"] == SITE
    follow.withdraw(alone)
    assert alone == {}


def test_settings_are_none_for_graphdoctors_own_recording_process_and_for_junk() -> None:
    offered = json.dumps({"spool": "/x.spool", "mode": "default"})
    assert follow.settings({FOLLOW_ENV: offered}) == {"spool": "/x.spool", "mode": "default"}
    assert follow.settings({FOLLOW_ENV: offered, CHILD_ENV: "{}"}) is None
    assert follow.settings({FOLLOW_ENV: "[1"}) is None and follow.settings({}) is None
    assert follow.settings({FOLLOW_ENV: '{"spool": "/x"}'}) is None


def test_torchs_own_helper_scripts_are_not_followed(tmp_path: Path) -> None:
    torch_folder = tmp_path / "torch"
    (torch_folder / "_inductor").mkdir(parents=True)
    worker = torch_folder / "_inductor" / "worker.py"
    worker.write_text("")
    assert follow.own_helper(str(worker), str(torch_folder))
    assert not follow.own_helper(str(tmp_path / "train.py"), str(torch_folder))
    assert not follow.own_helper("-c", str(torch_folder)) and not follow.own_helper("", "/")


def _python(environ: dict[str, str], code: str = SEES,
            python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", FOLLOW_ENV)}
    return subprocess.run([python, "-c", code], env={**env, **environ}, capture_output=True,
                          text=True, timeout=60)


def _their_site(tmp_path: Path, body: str = "import os\nos.environ['USER_SITE_RAN'] = '1'\n"
                ) -> Path:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text(body)
    return theirs


def _followed(tmp_path: Path) -> dict[str, str]:
    environ: dict[str, str] = {}
    follow.offer(RunFiles(tmp_path / "r.spool"), "default", environ)
    return environ


def test_the_process_runs_its_own_sitecustomize_with_its_own_path(tmp_path: Path) -> None:
    theirs = _their_site(tmp_path)
    environ = _followed(tmp_path)
    environ["PYTHONPATH"] += os.pathsep + str(theirs)
    done = _python(environ)
    seen = json.loads(done.stdout)
    assert done.returncode == 0 and done.stderr == ""
    assert seen["sitecustomize"] == str(theirs / "sitecustomize.py") and seen["marker"] == "1"
    assert str(theirs) in seen["path"] and SITE not in seen["path"]
    assert seen["finder"] == "_TorchFinder", "waiting for torch, to record it then"
    assert not list(tmp_path.glob("*.spool")), "nothing is written before torch is imported"


def test_without_a_sitecustomize_of_its_own_none_stays_imported(tmp_path: Path) -> None:
    plain = json.loads(_python({}).stdout)
    done = _python(_followed(tmp_path))
    seen = json.loads(done.stdout)
    assert done.stderr == ""
    assert seen["sitecustomize"] == plain["sitecustomize"]
    assert seen["path"] == plain["path"]


def test_an_error_in_its_own_sitecustomize_reads_as_it_would(tmp_path: Path) -> None:
    theirs = _their_site(tmp_path, "raise ValueError('their own mistake')\n")
    plain = _python({"PYTHONPATH": str(theirs)}, "print('ran on')")
    environ = _followed(tmp_path)
    environ["PYTHONPATH"] += os.pathsep + str(theirs)
    done = _python(environ, "print('ran on')")
    assert (done.returncode, done.stdout, done.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr)
    assert "their own mistake" in done.stderr


def test_nothing_is_followed_without_the_settings(tmp_path: Path) -> None:
    done = _python({"PYTHONPATH": SITE})
    seen = json.loads(done.stdout)
    assert seen["graphdoctor"] == [] and SITE not in seen["path"] and done.stderr == ""


@pytest.mark.skipif(not PYTHON_312.exists(), reason="needs a second Python without graphdoctor")
def test_a_python_that_cannot_import_graphdoctor_runs_untouched(tmp_path: Path) -> None:
    """The folder is copied where no graphdoctor lies next to it, and run by a Python that
    has none installed: the process runs as it would, with no trace of graphdoctor."""
    site = tmp_path / "a" / "b" / "c" / "follow_site"
    site.mkdir(parents=True)
    shutil.copy(Path(SITE) / "sitecustomize.py", site)
    environ = _followed(tmp_path)
    environ["PYTHONPATH"] = str(site)
    done = _python(environ, python=str(PYTHON_312))
    seen = json.loads(done.stdout)
    assert done.returncode == 0 and done.stderr == ""
    assert seen["graphdoctor"] == [] and seen["sitecustomize"] is None
    assert str(site) not in seen["path"]
