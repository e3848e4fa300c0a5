"""Reading a small file never takes a lot of memory. JSON can ask for far more memory than it
takes on disk (``{},`` is 3 bytes, and 72 as Python objects) and gzip multiplies that by a
thousand, so each file here is at most 10 MB, holds a valid report with one extra field, and
is read by the real command in a child process whose peak memory is measured."""

from __future__ import annotations

import base64
import gzip
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bench.synthetic import synthetic_report
from graphdoctor.report import io
from tests.report.helpers import real

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")]

MAX_FILE = 10_000_000
MAX_PEAK = 10**9
MEMBER = 16 * 2**20  # each gzip member inflates to this much; members are repeated


def _units(unit: bytes, total: int) -> bytes:
    """``unit`` repeated to ``total`` bytes, as gzip members (which a reader joins)."""
    member = gzip.compress(unit * (MEMBER // len(unit)), mtime=0)
    return member * max(1, total // MEMBER)


def crafted(opening: bytes, unit: bytes, total: int, closing: bytes) -> bytes:
    """A report with a field ``padding`` of ``opening``, ``unit`` repeated to about ``total``
    bytes, and ``closing``: valid JSON a report reader must open or refuse."""
    head = io.dumps(real("launch_bound"))[:-1] + b',"padding":' + opening
    return (gzip.compress(head, compresslevel=1, mtime=0) + _units(unit, total)
            + gzip.compress(closing + b"}"))


# Random text gzip cannot shrink: it brings the file to 10 MB, the size with the largest
# budget the limit allows.
NOISE = b'["' + base64.b64encode(random.Random(0).randbytes(9_500_000)) + b'",'


WIDE_STRING = b'"\\ud83d\\ude00' + b"a" * 2000 + b'",'  # one escape: four bytes a character
# The first two are the ones reported; the others are the costliest shapes per byte of
# JSON, each both past and just within the size decompressed text may have.
CRAFTED = {
    "1 GiB of spaces": (b"", b" ", 2**30, b"0"),
    "100 MiB of {},": (b"[", b"{},", 100 * 2**20, b"0]"),
    "64 MiB of {},": (b"[", b"{},", 64 * 2**20, b"0]"),
    "nested empty arrays": (b"[", b"[" * 100 + b"]" * 100 + b",", 64 * 2**20, b"0]"),
    "short strings": (b"[", b'"ab",', 64 * 2**20, b"0]"),
    "large integers": (b"[", b"1000000,", 64 * 2**20, b"0]"),
    "strings widened by an escape": (b"[", WIDE_STRING, 64 * 2**20, b"0]"),
    "400 MiB of widened strings": (b"[", WIDE_STRING, 400 * 2**20, b"0]"),
    "a 10 MB file of integers": (NOISE, b"1000000,", 80 * 2**20, b"0]"),
}


def peak_of(command: list[str]) -> tuple[int, str, int]:
    """Run ``command``: its exit code, its stderr and its peak resident memory in bytes."""
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        err.seek(0)
        return process.returncode, err.read().decode(), usage.ru_maxrss * 1024


@pytest.mark.parametrize("shape", CRAFTED)
def test_a_small_crafted_file_opens_or_is_refused_in_one_line_within_a_gigabyte(
        tmp_path: Path, shape: str) -> None:
    path = tmp_path / "crafted.json.gz"
    path.write_bytes(crafted(*CRAFTED[shape]))
    assert path.stat().st_size <= MAX_FILE
    code, stderr, peak = peak_of([sys.executable, "-m", "graphdoctor", "report", str(path)])
    assert peak < MAX_PEAK, f"{shape}: peaked at {peak / 1e9:.2f} GB"
    if code != 0:
        assert code == 2, stderr
        assert stderr.startswith("graphdoctor: error: ") and stderr.count("\n") == 1, stderr


@pytest.mark.parametrize("shape", ["1 GiB of spaces", "100 MiB of {},"])
def test_the_reported_files_are_refused(tmp_path: Path, shape: str) -> None:
    path = tmp_path / "crafted.json.gz"
    path.write_bytes(crafted(*CRAFTED[shape]))
    code, stderr, _ = peak_of([sys.executable, "-m", "graphdoctor", "report", str(path)])
    assert code == 2 and "too big to be a report" in stderr, stderr


@pytest.mark.parametrize("name", ["big.json", "big.json.gz"])
def test_a_large_real_shaped_report_still_opens(tmp_path: Path, name: str) -> None:
    report = synthetic_report(300_000)
    path = io.save(report, tmp_path / name)
    assert io.load(path).trace.event_count == report.trace.event_count


def test_the_measure_sees_what_the_child_holds() -> None:
    code, _, peak = peak_of([sys.executable, "-c", "b = bytearray(300_000_000)"])
    assert code == 0 and 300_000_000 < peak < MAX_PEAK
