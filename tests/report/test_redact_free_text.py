"""--redact on a real run whose exception messages, warnings and log lines carry the host
name, the script's arguments, an environment value, the user's name and home folder: none
of them is left anywhere in the redacted report, and the code line the finding cites stays."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from graphdoctor.report.io import load

pytestmark = pytest.mark.slow

USER = "gdplanteduser"
HOME = f"/home/{USER}"
TOKEN = "gdSecretToken4711"
RUN_NAME = "gd-planted-run-name"
GPU_UUID = "GPU-8f2c1e7a-5b3d-planted"  # CUDA_VISIBLE_DEVICES, which graphdoctor records
ARGS = (f"--token={TOKEN}", "--run-name", RUN_NAME, "--device", "cuda", "--steps", "1")
PLAIN = "step 1 on cuda of 1"  # ordinary text that holds the short arguments "1" and "cuda"
# torch.compile's first call imports dynamo: the script reaches its hang after about 4 s
TIMEOUT_S = "15"
SLEEP_LINE = "time.sleep(600)  # the hang the finding cites"

SCRIPT = f"""\
    import getpass, logging, os, socket, sys, threading, time, warnings
    import torch

    said = (f"host {{socket.gethostname()}}, user {{getpass.getuser()}}, "
            f"home {{os.path.expanduser('~')}}, args {{sys.argv[1:]}}, "
            f"gpus {{os.environ['CUDA_VISIBLE_DEVICES']}}")
    warnings.warn(f"warned: {PLAIN}: {{said}}")
    torch.compile(lambda x: x)  # graphdoctor starts reading torch's compile logs
    # a record as torch's code makes it (graphdoctor lets only torch's code log at DEBUG)
    log = logging.getLogger("torch._dynamo.symbolic_convert.__graph_breaks")
    log.handle(log.makeRecord(log.name, logging.DEBUG, "symbolic_convert.py", 1,
        "Graph break in user code at %s/model.py:3\\nGraph Break Reason: Unsupported: %s",
        (os.path.expanduser("~"), said), None))
    def fail():
        raise RuntimeError(f"raised: {{said}}")
    threading.Thread(target=fail).start()
    print("waiting now", flush=True)
    {SLEEP_LINE}
    """


def planted() -> dict[str, str]:
    return {"host name": socket.gethostname(), "user": USER, "home": HOME, "token": TOKEN,
            "run name": RUN_NAME, "environment value": GPU_UUID}


def whole_word(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])")


def graphdoctor(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": HOME, "USER": USER, "LOGNAME": USER,
           "CUDA_VISIBLE_DEVICES": GPU_UUID}
    return subprocess.run([sys.executable, "-m", "graphdoctor", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=180)


def record(folder: Path, *options: str) -> Path:
    folder.mkdir()
    (folder / "train.py").write_text(textwrap.dedent(SCRIPT))
    done = graphdoctor(folder, "run", "--timeout", TIMEOUT_S, *options, "-o", "r.json",
                       "train.py", *ARGS)
    assert done.returncode == 124 and "waiting now" in done.stdout, done.stderr
    return folder / "r.json"


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same run recorded plainly and with ``run --redact``, side by side."""
    root = tmp_path_factory.mktemp("redact")
    with ThreadPoolExecutor(max_workers=2) as pool:
        plain = pool.submit(record, root / "plain")
        redacted = pool.submit(record, root / "redacted", "--redact")
        return {"plain": plain.result(), "run --redact": redacted.result()}


def redacted_texts(reports: dict[str, Path]) -> dict[str, str]:
    plain = reports["plain"]
    shown = graphdoctor(plain.parent, "report", "--redact", "-f", "json", plain.name)
    assert shown.returncode == 0, shown.stderr
    return {"report --redact": shown.stdout, "run --redact": reports["run --redact"].read_text()}


def test_the_run_really_put_them_in_messages_warnings_and_logs(reports: dict[str, Path]) -> None:
    trace = load(reports["plain"]).trace
    texts = {"exception": [link.message for e in trace.exceptions for link in e.chain],
             "warning": [w.message for w in trace.warnings],
             "log": [e.reason for e in trace.compile_events]}
    for where, messages in texts.items():
        for name, value in planted().items():
            assert any(whole_word(value).search(m) for m in messages), (where, name, messages)


def test_none_is_left_anywhere(reports: dict[str, Path]) -> None:
    for how, text in redacted_texts(reports).items():
        for name, value in planted().items():
            found = whole_word(value).search(text)
            assert found is None, (how, name, text[max(0, found.start() - 80):found.end() + 80])
        assert f"<redacted>/{USER}" not in text


def test_the_home_folder_becomes_tilde_and_short_arguments_blank_nothing(
        reports: dict[str, Path]) -> None:
    for how, text in redacted_texts(reports).items():
        warning = json.loads(text)["trace"]["warnings"]
        message = next(w for w in warning if "warned:" in str(w))
        assert "home ~," in str(message) and PLAIN in str(message), (how, message)


def test_the_code_line_the_finding_cites_stays(reports: dict[str, Path]) -> None:
    for how, text in redacted_texts(reports).items():
        findings = json.loads(text)["diagnosis"]["findings"]
        cited = [f["location"] for f in findings if f["location"]]
        assert cited and cited[0]["file"] == "train.py", (how, cited)
        assert cited[0]["code"] == SLEEP_LINE, how
        assert SLEEP_LINE in json.loads(text)["sources"]["train.py"].values()
