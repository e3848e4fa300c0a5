"""What every committed GPU recording's report says, kept as it was: the guard that lets the
code move (one owner per fact) without a user seeing a change they did not ask for.

    python -m tests.golden            write tests/golden_reports.json.gz from this checkout
    pytest tests/test_same_reports.py check this checkout against it

For each recording: its report's text (at 120 columns) and markdown as a person reads them,
and the digest of its JSON (created_at left out: it is the time the report was built). A
change that means to change what reports say is written again with the first command, and
the diff of that file's texts is what a reviewer reads.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

from graphdoctor.report.document import Report, to_json
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.text import render_text
from tests.reports import report_for, scenario_names

GOLDEN = Path(__file__).resolve().parent / "golden_reports.json.gz"
WIDTH = 120


def what_it_says(report: Report) -> dict[str, str]:
    data = to_json(report)
    data.pop("created_at", None)
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False).encode()
    return {"text": render_text(report, width=WIDTH), "markdown": render_markdown(report),
            "json_sha256": hashlib.sha256(canonical).hexdigest()}


def current() -> dict[str, dict[str, str]]:
    return {name: what_it_says(report_for(name)) for name in scenario_names()}


def kept() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    return data


def write() -> None:
    text = json.dumps(current(), indent=1, sort_keys=True, ensure_ascii=False)
    GOLDEN.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))


if __name__ == "__main__":
    write()
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size >> 10} KiB)", file=sys.stderr)
