"""The terminal summary and the markdown for issues, on every recorded scenario."""

from __future__ import annotations

import dataclasses
import re

import pytest

from graphdoctor.report.render import markdown
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.text import render_text
from graphdoctor.trace import endings
from tests.report.helpers import (
    CULPRIT_LINE,
    NAMES,
    culprit_code,
    culprit_file,
    finding,
    hand_made,
    real,
    verdict,
    with_diagnosis,
)

ANSI = re.compile(r"\x1b\[")


@pytest.mark.parametrize("name", NAMES)
def test_text_names_the_run_and_everything_diagnosed(name: str) -> None:
    report = real(name)
    text = render_text(report, width=120)
    flat = " ".join(text.split())
    assert flat.startswith(f"graphdoctor report: {report.trace.meta.target}")
    assert " ".join(endings.outcome(report.trace).split()) in flat
    for v in report.diagnosis.verdicts:
        assert v.kind in flat
    for f in report.diagnosis.findings:
        assert f"{f.id} {f.name}" in flat
    assert not ANSI.search(text)


@pytest.mark.parametrize("width", [60, 100, 200])
def test_text_respects_the_width(width: int) -> None:
    text = render_text(hand_made(), width=width)
    assert max(len(line) for line in text.splitlines()) <= width


def test_text_shows_a_finding_with_its_line_and_fix() -> None:
    text = render_text(hand_made(), width=200)
    assert "ERROR" in text and "GD999 test-finding:" in text
    assert f"fixtures/scripts/item_in_capture.py:{CULPRIT_LINE} in <module>" in text
    assert f"{CULPRIT_LINE} | {culprit_code()}" in text
    assert "fix: Keep the value on the GPU." in text


def test_text_is_coloured_only_when_asked() -> None:
    assert ANSI.search(render_text(hand_made(), color=True))
    assert not ANSI.search(render_text(hand_made(), color=False))


HOSTILE = "\x1b[2J\x1b]0;owned\x07 [bold]x[/bold] </details> <script>alert(1)</script> a|b ```"


def test_text_from_a_report_cannot_drive_the_terminal_or_rich() -> None:
    report = with_diagnosis(real("item_in_capture"), (verdict(subject=HOSTILE),),
                            (finding(title=HOSTILE, fix=HOSTILE),))
    text = render_text(report, width=400)
    assert "\x1b" not in text and "\x07" not in text
    assert "[bold]x[/bold]" in text  # shown as typed, not taken as markup


@pytest.mark.parametrize("name", NAMES)
def test_markdown_is_well_formed(name: str) -> None:
    text = render_markdown(real(name))
    assert text.startswith("### graphdoctor: ")
    assert text.count("<details>") == text.count("</details>") > 0
    fences = [line for line in text.splitlines() if line.startswith("```")]
    assert len(fences) % 2 == 0
    assert len(text) <= markdown.MAX_CHARS
    for f in real(name).diagnosis.findings:
        assert f"`{f.id}`" in text
        if f.location and f.location.code:
            assert f.location.code in text


def _table_rows(text: str, header: str) -> list[list[str]]:
    lines = text.splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def test_markdown_has_the_verdict_table_finding_code_and_folds() -> None:
    text = render_markdown(hand_made())
    rows = _table_rows(text, "| Subject | Verdict | Speedup | Summary |")
    assert rows == [["graph 0 (torch.cuda.graph, script.py:13)", "**failed**", "-",
                     "capture failed"]]
    snippet = re.search(r"```python\n(.*?)\n```", text, re.S)
    assert snippet is not None
    marked = [line for line in snippet.group(1).splitlines() if line.startswith(">")]
    source_line = real("item_in_capture").sources[culprit_file()][CULPRIT_LINE]
    assert marked == [f"> {CULPRIT_LINE} | {source_line}"]
    assert "**Fix:** Keep the value on the GPU." in text
    for fold in ("Evidence (2)", "Exceptions (3)", "Environment", "Command", "Phases and events"):
        assert f"<details><summary>{fold}</summary>" in text
    assert "- `syncs[1]`: the sync" in text


def test_markdown_escapes_what_the_report_says() -> None:
    report = with_diagnosis(real("item_in_capture"), (verdict(subject=HOSTILE),),
                            (finding(title=HOSTILE, explanation=HOSTILE, fix=HOSTILE),))
    text = render_markdown(report)
    assert "<script>" not in text and "\x1b" not in text
    assert text.count("<details>") == text.count("</details>")
    assert "&lt;/details&gt;" in text
    for row in _table_rows(text, "| Subject | Verdict | Speedup | Summary |"):
        assert len(row) == 4  # the pipe in the subject did not split the cell


def test_markdown_keeps_code_spans_that_rules_write() -> None:
    text = render_markdown(hand_made())
    assert "`.item()` waits for the GPU" in text


def test_markdown_fits_in_a_github_issue_however_big_the_report() -> None:
    many = tuple(finding(id=f"GD{i:03}", title="x" * 300, explanation="y" * 2000)
                 for i in range(200))
    report = with_diagnosis(real("tiny_graph"), (verdict(),) * 100, many)
    text = render_markdown(report)
    assert len(text) <= markdown.MAX_CHARS
    assert text.count("<details>") == text.count("</details>")
    assert "more findings" in text or "left out" in text


def test_markdown_says_when_the_report_was_redacted() -> None:
    redacted = dataclasses.replace(hand_made(), redacted=True)
    assert "_Redacted:" in render_markdown(redacted)
    assert "_Redacted:" not in render_markdown(hand_made())


@pytest.mark.parametrize(("raw", "shown"), [
    ("plain", "plain"), ("a*b_c", r"a\*b\_c"), ("<b>", "&lt;b&gt;"), ("x | y", r"x \| y"),
    ("use `torch.where`", "use `torch.where`"), ("`a|b`", r"\`a\|b\`"),
])
def test_escape(raw: str, shown: str) -> None:
    assert markdown.escape(raw) == shown


def test_code_uses_a_longer_fence_than_its_content() -> None:
    assert markdown.code("a`b") == "``a`b``"
    assert markdown.block("x\n```\ny").startswith("````")
