"""``graphdoctor fix --verify`` on a real GPU: each broken fixture script recorded afresh, its
finding patched in a copy and the copy run again; the finding must be gone, and no verdict
worse, or the patch counts for nothing.

    pytest tests/gpu/test_fix_gpu.py --require-gpu [-k item_in_capture] [-s]

The scripts run from a copy of fixtures/scripts and tests/gpu/scripts/fixes, and ``fix`` from
the folder that holds the copy (``--apply`` writes only under the folder it runs in, never
into the checkout); ``--verify`` runs the script named after ``--``, as a person would. Each
script prints its own verdict lines, the before and after, which the notes quote.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphdoctor.report.io import load
from tests.conftest import ROOT

pytestmark = pytest.mark.gpu

# the broken script, and the rule of the finding its patch must make go away
CASES = {
    "item_in_capture": "GD101",
    "unjoined_side_stream": "GD103",
    "pageable_copy_in_capture": "GD102",
    "real_adam_default_capture": "GD108",
    "freed_input_after_capture": "GD302",
    "real_rebound_input_tv_infer": "GD302",
    "real_rebound_batches_tv_infer": "GD302",
    "frozen_lr_scheduler": "GD305",
    "real_frozen_lr_manual_timm": "GD305",
    "real_frozen_lr_transformers": "GD305",
    "sync_between_replays": "GD203",
    # code written another way (tests/gpu/scripts/fixes)
    "print_in_capture": "GD101",
    "synchronize_in_capture": "GD101",
    "float_in_capture": "GD101",
    "tensor_in_expression": "GD102",
    "adam_made_over_lines": "GD108",
}
SHAPES = ROOT / "tests" / "gpu" / "scripts" / "fixes"
# what the script itself prints of the harm, before the patch and after it
TRUTH = {"frozen_lr_scheduler": ("truth: frozen", "truth: follows"),
         "real_frozen_lr_manual_timm": ("truth: frozen", "truth: follows"),
         "real_frozen_lr_transformers": ("truth: frozen", "truth: follows"),
         "real_rebound_input_tv_infer": ("truth: stale", "truth: fresh"),
         "real_rebound_batches_tv_infer": ("truth: stale", "truth: fresh")}
# (freed_input_after_capture's own check says "stale result: False" before the patch too: the
# allocator hands the freed block to the new tensor, so the replays read the new values)
NEEDS = {"real_adam_default_capture": "torchvision", "real_rebound_input_tv_infer": "torchvision",
         "real_rebound_batches_tv_infer": "torchvision", "real_frozen_lr_manual_timm": "timm",
         "real_frozen_lr_transformers": "transformers"}


def graphdoctor(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "graphdoctor", *args], cwd=folder,
                          capture_output=True, text=True, timeout=900)
    truth = [line for line in done.stdout.splitlines() if "truth:" in line or "stale" in line]
    print(f"$ graphdoctor {' '.join(args)}  (exit {done.returncode})\n{done.stderr[-4000:]}"
          + "".join(f"\n  script: {line}" for line in truth))
    return done


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_patch_makes_the_finding_go_and_no_verdict_worse(tmp_path: Path, name: str) -> None:
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    rule = CASES[name]
    shutil.copytree(ROOT / "fixtures" / "scripts", tmp_path / "scripts")
    shutil.copytree(SHAPES, tmp_path / "scripts", dirs_exist_ok=True)
    ran = graphdoctor(tmp_path, "run", "-q", "--timeout", "300", "-o", "before.json",
                      f"scripts/{name}.py")
    before = load(tmp_path / "before.json")
    assert rule in {f.id for f in before.diagnosis.findings}, "the script no longer shows it"
    proved = graphdoctor(tmp_path, "fix", "before.json", "--rule", rule, "--verify",
                         "--timeout", "300", "--", f"scripts/{name}.py")
    assert proved.returncode == 0, proved.stderr
    assert "gone" in proved.stderr and "still there" not in proved.stderr
    after = load(Path(proved.stderr.rsplit("the run again's report: ", 1)[1].strip()))
    if name in TRUTH:  # the script's own check: the harm was there, and is gone
        assert TRUTH[name][0] in ran.stdout and TRUTH[name][1] in proved.stdout, proved.stdout
    assert rule not in {f.id for f in after.diagnosis.findings}
    applied = graphdoctor(tmp_path, "fix", "before.json", "--rule", rule, "--apply")
    assert applied.returncode == 0 and "patched" in applied.stderr
