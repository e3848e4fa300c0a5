"""What the Summary and Allocations screens and the text and markdown reports say reads as
written by hand: counts agree with their nouns ("1 free", never "1 frees" or "graph(s)"), a
verdict never reads "(—)", and a speedup is said once per verdict, not "7.54×  7.54x faster"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.widgets import OptionList

from graphdoctor.demo import DEMOS, load_demo
from graphdoctor.diagnose.findings import FASTER, NEUTRAL, SLOWER, UNSAFE, Verdict
from graphdoctor.report.document import Report
from graphdoctor.report.io import load
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.text import render_text, summary_without_speedup
from graphdoctor.tui.app import GraphDoctorApp
from tests.tui.helpers import plain, screen_text, settle

RANKS_REPORT = Path(__file__).with_name("reports") / "dist_extra_allreduce_in_capture.json.gz"
NOUNS = ("free", "alloc", "allocation", "graph", "replay", "sync", "finding", "rank", "step",
         "node", "kernel", "time", "collective", "thread", "input")
CLUMSY = {
    "a plural after one": re.compile(rf"(?<![\d,.])1 ({'|'.join(NOUNS)})s\b"),
    # the nouns alone: source lines on screen may well call wait_stream(s)
    "a plural in brackets": re.compile(rf"\b({'|'.join(NOUNS)})\(s\)"),
    "a dash for a verdict's speedup": re.compile(r"\(—\)"),
}
SIZES = [(80, 24), (160, 60)]  # as small as the issue tried, and tall enough for every section
REPORTS = [*DEMOS, "ranks"]


def report(name: str) -> Report:
    return load(RANKS_REPORT) if name == "ranks" else load_demo(name)


def clumsy(text: str) -> list[str]:
    return [f"{why}: {m.group(0)!r}" for why, pattern in CLUMSY.items()
            for m in pattern.finditer(text)]


async def allocation_views(app: GraphDoctorApp) -> list[str]:
    """The Allocations screen in each grouping, with each row's details in turn."""
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        seen = []
        for grouping in ("p", "o", "c"):
            await pilot.press(grouping)
            await settle(pilot)
            for _ in range(4):  # the bundled reports have a few groups at most
                seen.append(screen_text(app))
                await pilot.press("down")
                await pilot.pause()
        return seen


@pytest.mark.parametrize(("name", "size"), [
    *((name, size) for name in DEMOS for size in SIZES), ("ranks", SIZES[0]),
    ("ranks", SIZES[1]),  # tall enough for the findings
], ids=str)
async def test_the_summary_reads_well(name: str, size: tuple[int, int]) -> None:
    app = GraphDoctorApp(report(name), name)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert clumsy(screen_text(app)) == []


@pytest.mark.parametrize("name", REPORTS)
async def test_the_allocations_read_well(name: str) -> None:
    for text in await allocation_views(GraphDoctorApp(report(name), name)):
        assert clumsy(text) == []


def said(speedup: float, text: str) -> int:
    """How often ``text`` states ``speedup``, as 7.54×, 7.54x or 7.54."""
    return len(re.findall(rf"(?<![\d.]){re.escape(f'{speedup:.2f}')}(?!\d)", text))


@pytest.mark.parametrize("name", REPORTS)
async def test_each_verdict_on_the_summary_says_its_speedup_once(name: str) -> None:
    app = GraphDoctorApp(report(name), name)
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot)
        verdicts = app.screen.query_one("#verdicts", OptionList)
        shown = [plain(verdicts.get_option_at_index(i).prompt, 150)  # type: ignore[arg-type]
                 for i in range(verdicts.option_count)]
    measured = [(v, text) for v in app.view.verdicts if v.speedup is not None
                for text in shown if v.subject in " ".join(text.split())]
    for verdict, text in measured:
        assert said(verdict.speedup or 0, text) == 1, text
    assert name != "launch_bound" or measured  # the one bundled run a graph sped up


@pytest.mark.parametrize("name", REPORTS)
def test_the_text_and_markdown_verdict_rows_say_the_speedup_once(name: str) -> None:
    loaded = report(name)
    text, markdown = render_text(loaded, width=400), render_markdown(loaded)
    for verdict in loaded.diagnosis.verdicts:
        if verdict.speedup is None:
            continue
        row = next(line for line in text.splitlines() if line.startswith(f" {verdict.subject}"))
        assert said(verdict.speedup, row) == 1, row
        cells = next(line for line in markdown.splitlines() if f"**{verdict.kind}**" in line)
        assert said(verdict.speedup, cells) == 1, cells
    assert clumsy(text + markdown) == [] or name == "ranks"  # its titles: see above


@pytest.mark.parametrize(("kind", "speedup", "summary", "left"), [
    (FASTER, 7.54, "7.54x faster: eager 5 ms vs replay 1 ms", "eager 5 ms vs replay 1 ms"),
    (NEUTRAL, 1.02, "no speedup (1.02x): eager 5 ms", "eager 5 ms"),
    (SLOWER, 0.5, "0.50x, slower than eager: eager 1 ms", "eager 1 ms"),
    (UNSAFE, 7.54, "unsafe: an input moved; 7.54x faster: eager 5 ms",
     "unsafe: an input moved; eager 5 ms"),
    (FASTER, 2.8, "faster 2.10x–3.40x (median 2.80x), replays 10–400 each",
     "faster 2.10x–3.40x, replays 10–400 each"),
    # as the diagnosis words them today (the cases above: as older reports did)
    (FASTER, 7.54, "7.54× faster: eager 5 ms vs replay 1 ms", "eager 5 ms vs replay 1 ms"),
    (NEUTRAL, 1.02, "no speedup (1.02×): eager 5 ms", "eager 5 ms"),
    (SLOWER, 0.5, "0.50×, slower than eager: eager 1 ms", "eager 1 ms"),
    (FASTER, 2.8, "faster 2.10×–3.40× (median 2.80×), replays 10–400 each",
     "faster 2.10×–3.40×, replays 10–400 each"),
])
def test_the_clause_stating_the_speedup_is_taken_out(kind: str, speedup: float, summary: str,
                                                      left: str) -> None:
    verdict = Verdict("graph 0", kind, summary, speedup=speedup)
    assert summary_without_speedup(verdict) == left
    assert said(speedup, left) == 0
