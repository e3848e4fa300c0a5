"""The patches written for the committed GPU recordings, each from the finding and the script
it names: the exact diff, that it applies with patch -p1, and that what it leaves parses.
Whether each fixes what it claims is for tests/gpu/test_fix_gpu.py, which runs it again."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

from graphdoctor.diagnose.findings import Finding, Location
from graphdoctor.fix.patchers import Options
from graphdoctor.fix.plan import NO_PATCHER, NOT_KNOWN, Plan, plan
from graphdoctor.fix.source import Source
from tests.fix.fixture_files import read
from tests.reports import SCRIPTS, report_for


def planned(name: str, every: int = 10) -> Plan:
    return plan(report_for(name), read, Options(every))


def changed(found: Plan) -> list[tuple[str, str]]:
    """The lines removed and added, without the diff's context."""
    diff = "".join(p.diff for p in found.files).splitlines()
    return [(line[0], line[1:].strip()) for line in diff
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


EXPECTED = {
    "item_in_capture": [("-", "scale = y.abs().max().item()  # the culprit: copies a value to "
                              "the host"),
                        ("+", "scale = y.abs().max()  # the culprit: copies a value to the host")],
    "unjoined_side_stream": [("+", "torch.cuda.current_stream().wait_stream(side)")],
    "pageable_copy_in_capture": [
        ("+", 'weights = torch.tensor([0.5, 0.25, 0.25], device="cuda")  # the culprit'),
        ("-", 'weights = torch.tensor([0.5, 0.25, 0.25], device="cuda")  # the culprit')],
    "real_adam_default_capture": [
        ("-", "opt = torch.optim.Adam(model.parameters(), lr=1e-3)"),
        ("+", "opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)")],
    "freed_input_after_capture": [
        ("-", 'static_x = torch.randn(4096, device="cuda")  # the culprit: should be '
              "static_x.copy_(...)"),
        ("+", 'static_x.copy_(torch.randn(4096, device="cuda"))  # the culprit: should be '
              "static_x.copy_(...)")],
    "real_rebound_batches_tv_infer": [
        ("-", "for x in batches[1:]:  # the culprit: should copy each batch into the captured x"),
        ("+", "for batch in batches[1:]:  # the culprit: should copy each batch into the "
              "captured x"),
        ("+", "x.copy_(batch)")],
    "frozen_lr_scheduler": [
        ("-", "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)"),
        ("+", 'opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(1e-3, '
              'device="cuda"), capturable=True)')],
    "real_frozen_lr_manual_timm": [
        ("-", "opt = torch.optim.AdamW(model.parameters(), lr=LR, capturable=True)"),
        ("+", 'opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(LR, '
              'device="cuda"), capturable=True)'),
        ("-", 'param_group["lr"] = lr  # the culprit once the step is captured: replays '
              "never read it"),
        ("+", 'param_group["lr"].fill_(lr)  # the culprit once the step is captured: replays '
              "never read it")],
    "sync_between_replays": [
        ("-", "for _ in range(300):"), ("+", "for i in range(300):"),
        ("-", "total += static_y.sum().item()  # the culprit: a host sync every step"),
        ("+", "if i % 10 == 0:"),
        ("+", "total += static_y.sum().item()  # the culprit: a host sync every step")],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_patch_is_written_from_the_finding_and_the_script(name: str) -> None:
    assert changed(planned(name)) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_patch_applies_with_patch_and_leaves_python(tmp_path: Path, name: str) -> None:
    found = planned(name)
    for patch in found.files:
        target = tmp_path / patch.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SCRIPTS / Path(patch.file).name, target)
    done = subprocess.run(["patch", "-p1", "--forward"], input="".join(p.diff for p in
                          found.files), cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    for patch in found.files:
        ast.parse((tmp_path / patch.name).read_text())
        assert (tmp_path / patch.name).read_text() == "".join(patch.after)


def test_two_reads_in_one_loop_share_the_loops_new_name() -> None:
    found = planned("cupy_sync_between_replays", every=5)
    assert [f.finding.id for f in found.fixes] == ["GD203", "GD203"]
    assert changed(found).count(("+", "for i in range(100):")) == 1
    assert changed(found).count(("+", "if i % 5 == 0:")) == 2


def test_a_finding_without_a_known_shape_gets_no_patch_and_says_why() -> None:
    found = planned("exception_in_capture")  # an exception of the script's own
    assert [(n.finding.id, n.why) for n in found.left if n.why != NO_PATCHER] == \
        [("GD108", NOT_KNOWN)]
    assert found.files == ()


def test_a_recorded_number_that_is_not_one_is_never_written_into_code() -> None:
    """A report is anyone's text: its frozen value reaches a patch only as a number."""
    source = Source("train.py", "import torch\nopt = torch.optim.SGD(params)\nopt.step()\n")
    finding = Finding("GD305", "frozen-host-value", "error", "unsafe", "t", "e",
                      'lr=torch.tensor(0.1, device="cuda")', location=Location("train.py", 3),
                      measurements={"held_by": "optimizer", "name": "lr", "owner": "SGD",
                                    "captured": "__import__('os').system('x')"})
    from graphdoctor.fix.patchers import frozen_lr

    assert frozen_lr.patch(finding, source, Options()) is None
    safe = {**finding.measurements, "captured": "0.1"}
    change = frozen_lr.patch(Finding(**{**finding.__dict__, "measurements": safe}), source,
                             Options())
    assert change is not None and "lr=torch.tensor(0.1, device=\"cuda\")" in \
        "".join(change.edits[0].lines)


def test_only_the_rules_asked_for_are_in_the_diff_of_a_file_with_others() -> None:
    """--rule GD101 on a file that also has a GD103 patch: only the GD101 edit is in it."""
    from graphdoctor.diagnose.findings import Diagnosis
    from graphdoctor.report.document import Report
    from graphdoctor.trace.model import Trace

    code = ("g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
            "    side.wait_stream(torch.cuda.current_stream())\n"
            "    with torch.cuda.stream(side):\n        z = x.relu()\n"
            "    n = y.max().item()\n")
    findings = tuple(Finding(rule, "rule", "error", "failed", "t", "e", "fix",
                             location=Location("train.py", line)) for rule, line in
                     (("GD103", 3), ("GD101", 6)))
    report = Report(Trace(), Diagnosis(findings=findings))
    sources = {"train.py": Source("train.py", code)}
    both = plan(report, sources.__getitem__)
    only = plan(report, sources.__getitem__, rules=frozenset({"GD101"}))
    assert {f.finding.id for f in both.fixes} == {"GD101", "GD103"}
    assert [f.finding.id for f in only.fixes] == ["GD101"] and only.left == ()
    diff = only.files[0].diff
    assert "+    n = y.max()\n" in diff and "wait_stream(side)" not in diff
