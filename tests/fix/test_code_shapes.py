"""Each patcher on code written another way than its fixture: the scripts under
tests/gpu/scripts/fixes (which tests/gpu/test_fix_gpu.py records and proves on a GPU), with
the finding their recording gives, and a few shapes no patch is made for."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphdoctor.diagnose.findings import Finding, Location
from graphdoctor.fix import edits
from graphdoctor.fix.patchers import PATCHERS, Options
from graphdoctor.fix.source import Source
from tests.conftest import ROOT

SHAPES = ROOT / "tests" / "gpu" / "scripts" / "fixes"


def finding(rule: str, line: int, file: str = "script.py", **measurements: object) -> Finding:
    return Finding(rule, "rule", "error", "failed", "title", "why", "fix",
                   location=Location(file, line), measurements=dict(measurements))


def patched(source: Source, found: Finding) -> list[str] | None:
    change = PATCHERS[found.id](found, source, Options())
    if change is None:
        return None
    after = edits.apply(source.lines, change.edits)
    return [line.rstrip("\n") for line in after]


def shape(name: str) -> Source:
    path = SHAPES / f"{name}.py"
    return Source(str(path), path.read_text())


def line_of(source: Source, text: str) -> int:
    return next(n for n, line in enumerate(source.lines, 1) if text in line)


def test_a_print_in_the_capture_moves_after_the_replay_loop_start() -> None:
    source = shape("print_in_capture")
    after = patched(source, finding("GD101", line_of(source, "print(")))
    assert after is not None
    assert after[after.index("for _ in range(3):") + 1:][:2] == ["    g.replay()",
                                                                "print(\"max\", y.max())"]
    assert "    print(\"max\", y.max())" not in after


def test_a_synchronize_in_the_capture_goes() -> None:
    source = shape("synchronize_in_capture")
    after = patched(source, finding("GD101", line_of(source, "    torch.cuda.synchronize()")))
    assert after is not None and "    torch.cuda.synchronize()" not in after
    assert after[-1] == "torch.cuda.synchronize()"  # the one after the replays stays


def test_float_of_a_tensor_stays_a_tensor() -> None:
    source = shape("float_in_capture")
    after = patched(source, finding("GD101", line_of(source, "norm = float(")))
    assert after is not None and "    norm = x.norm()" in after


def test_a_tensor_made_inside_an_expression_is_made_before_the_capture() -> None:
    source = shape("tensor_in_expression")
    after = patched(source, finding("GD102", line_of(source, "torch.tensor(")))
    assert after is not None
    block = after.index("with torch.cuda.graph(g):")
    assert after[block - 1] == 'staged = torch.tensor([0.5, 0.25, 0.25], device="cuda")'
    assert after[block + 1] == "    y = x * staged.sum()"


def test_a_keyword_joins_an_optimizer_made_over_several_lines_in_its_layout() -> None:
    source = shape("adam_made_over_lines")
    after = patched(source, finding("GD108", line_of(source, "    opt.step()\n"),
                                    known_error="optimizer-not-capturable"))
    assert after is not None
    made = after.index("opt = torch.optim.AdamW(")
    assert after[made:made + 6] == ["opt = torch.optim.AdamW(", "    model.parameters(),",
                                    "    lr=1e-3,", "    weight_decay=0.01,",
                                    "    capturable=True,", ")"]


@pytest.mark.parametrize(("rule", "code", "line", "measurements"), [
    # the value read is used by the block: moving it out would break the block
    ("GD101", "with torch.cuda.graph(g):\n    v = y.cpu()\n    z = v + 1\n", 2, {}),
    # not in a capture block at all
    ("GD101", "v = y.item()\n", 1, {}),
    # a tensor from a value the block computes
    ("GD102", "with torch.cuda.graph(g):\n    vals = [k * 2.0 for k in range(3)]\n"
              "    w = x * torch.tensor(vals, device='cuda')\n", 3, {}),
    # an optimizer the file does not make
    ("GD108", "opt.step()\n", 1, {"known_error": "optimizer-not-capturable"}),
    # a loop over what is not a name
    ("GD203", "for a, b in pairs:\n    s += b.item()\n", 2, {}),
])
def test_code_no_patch_is_made_for(rule: str, code: str, line: int,
                                   measurements: dict[str, object]) -> None:
    assert patched(Source("script.py", code), finding(rule, line, **measurements)) is None


def test_a_file_that_does_not_parse_gets_no_patch() -> None:
    source = Source("script.py", "with torch.cuda.graph(g):\n    v = y.item(\n")
    assert patched(source, finding("GD101", 2)) is None
    assert Path(source.file).suffix == ".py"
