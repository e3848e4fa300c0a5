"""Reports for the report tests: the real ones built from the GPU recordings, and small
hand-made diagnoses on top of them where a test must know a finding is there (the rules
are written separately and may change; these tests are about rendering, not rules)."""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any

from graphdoctor.diagnose.findings import Diagnosis, Evidence, Finding, Location, Verdict
from graphdoctor.report.document import Report, to_json
from graphdoctor.report.io import dumps
from tests.reports import report_for, scenario_names

NAMES = scenario_names()
CULPRIT_LINE = 15  # fixtures/scripts/item_in_capture.py: scale = y.abs().max().item()


@functools.cache
def real(name: str) -> Report:
    """The report of a recording; do not mutate (use dataclasses.replace)."""
    return report_for(name)


def plain(report: Report) -> dict[str, Any]:
    """The report's JSON data, as a reader gets it from the file."""
    return json.loads(dumps(report))  # type: ignore[no-any-return]


def culprit_file() -> str:
    """The recorded path of item_in_capture.py (the GPU machine's)."""
    return next(f for f in real("item_in_capture").sources if f.endswith("item_in_capture.py"))


def culprit_code() -> str:
    return real("item_in_capture").sources[culprit_file()][CULPRIT_LINE].strip()


def finding(**changes: Any) -> Finding:
    base = Finding(
        id="GD999", name="test-finding", severity="error", category="failed",
        title="`.item()` waits for the GPU inside the capture",
        explanation="A line of explanation.\nAnd a second line.",
        fix="Keep the value on the GPU.",
        evidence=(Evidence("syncs", 1, "the sync"), Evidence("exceptions", 0)),
        location=Location(culprit_file(), CULPRIT_LINE, "<module>", culprit_code()), graph=0,
        measurements={"syncs": 1, "replay": {"median_us": 1.5}})
    return dataclasses.replace(base, **changes)


def verdict(**changes: Any) -> Verdict:
    base = Verdict(subject="graph 0 (torch.cuda.graph, script.py:13)", kind="faster",
                   summary="4.00x faster", graph=0, speedup=4.0)
    return dataclasses.replace(base, **changes)


def with_diagnosis(report: Report, verdicts: tuple[Verdict, ...] = (),
                   findings: tuple[Finding, ...] = ()) -> Report:
    return dataclasses.replace(report, diagnosis=Diagnosis(verdicts, findings))


def hand_made() -> Report:
    """item_in_capture with one known verdict and one known finding at the culprit line."""
    return with_diagnosis(real("item_in_capture"), (verdict(kind="failed", speedup=None,
                                                            summary="capture failed"),),
                          (finding(),))


def json_text(report: Report) -> str:
    return json.dumps(to_json(report))
