"""The markdown for GitHub issues (``report -f markdown`` and ``diff -f markdown``) of hostile
reports, read the way GitHub reads it: by a CommonMark parser with HTML on (markdown-it-py,
with GFM's tables). Nothing a report says may become a tag, a link or an image, and
graphdoctor's own folds, tables, headings and code blocks must stay as they are. Two things
GitHub does that CommonMark does not are looked for in the text the parser found outside
code: a ``@name`` (a mention: pasting the markdown would notify someone) and a bare
``http(s)://``, ``ftp://`` or ``www.`` (GitHub would make it a link).

Every payload holds MARKDOWN_MARKER, so that the report's text can be told from
graphdoctor's own markup: the tags in the parser's HTML tokens must be ones graphdoctor
writes (details, summary, code, sub, without attributes, so none can hold the marker), and
each marker the markdown holds must be seen (no comment, tag or reference hid it). The
markup must be what the same report has with a payload that attacks nothing.
"""

from __future__ import annotations

import html
import json
import re
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from graphdoctor.diagnose.findings import Evidence, Location
from graphdoctor.report import io, verdict_groups
from graphdoctor.report.diff import compare
from graphdoctor.report.document import Report
from graphdoctor.report.render import markdown
from graphdoctor.report.render.diff import render_diff_markdown
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.markdown_escape import Where, escape
from tests.hostile import (
    MARKDOWN_MARKER,
    MARKDOWN_PAYLOADS,
    SCENARIOS,
    attack,
    hostile_report,
    scenario_report,
)
from tests.report.helpers import NAMES, finding, real, with_diagnosis
from tests.report.many_graphs import many_graphs_report

PARSER = MarkdownIt("commonmark", {"html": True}).enable("table")
OWN_TAGS = re.compile(r"</?(?:details|summary|code|sub)>")
ANY_TAG = re.compile(r"<[^<>]*>?")
CODE_ELEMENT = re.compile(r"<code>.*?</code>", re.S)
MENTION = re.compile(r"@[A-Za-z0-9]")
BARE_URL = re.compile(r"(?:https?|ftp)://|www\.", re.IGNORECASE)
HTML_TOKENS = ("html_block", "html_inline")
CODE_TOKENS = ("code_inline", "fence", "code_block")
# The markup a payload must not add or remove (links and images: graphdoctor writes none).
STRUCTURE = ("heading_open", "table_open", "tr_open", "th_open", "td_open", "fence",
             "code_block", "html_block", "html_inline", "bullet_list_open", "ordered_list_open",
             "list_item_open", "blockquote_open", "hr", "em_open", "strong_open", "link_open",
             "image")
# Repeated through a long text, so that wherever a cut falls it is near a code span, a tag,
# an entity and a backslash escape.
LONG_UNIT = f"`<img src=x onerror={MARKDOWN_MARKER}>` <b>{MARKDOWN_MARKER}</b> &lt; \\` "
TRUNCATED_NOTE = "(truncated)"


def tokens(text: str) -> list[Token]:
    """Every token of the parsed markdown: blocks and their inline children."""
    return [t for block in PARSER.parse(text) for t in (block, *(block.children or ()))]


def problems(text: str) -> list[str]:
    """What GitHub would make of the report's text that it should not, or tables split."""
    parsed = tokens(text)
    return [*_foreign_tags(parsed), *_links(parsed), *_mentions_and_urls(parsed),
            *_split_rows(text)]


def _foreign_tags(parsed: list[Token]) -> list[str]:
    """Tags in the HTML tokens that graphdoctor does not write: text from the report."""
    return [f"tag {tag!r} in {t.content[:200]!r}" for t in parsed if t.type in HTML_TOKENS
            for tag in ANY_TAG.findall(OWN_TAGS.sub("", t.content))]


def _links(parsed: list[Token]) -> list[str]:
    """Links and images: graphdoctor writes none, so each one came from the report."""
    return [f"{t.type} {t.attrs}" for t in parsed if t.type in ("link_open", "image")]


def _mentions_and_urls(parsed: list[Token]) -> list[str]:
    return [f"{found[0]!r} in {prose[max(0, found.start() - 40):found.end() + 40]!r}"
            for prose in _prose(parsed)
            for found in (*MENTION.finditer(prose), *BARE_URL.finditer(prose))]


def _prose(parsed: list[Token]) -> Iterator[str]:
    """The text GitHub looks for mentions and links in: text outside code (each run of it
    apart), and an HTML block's text outside <code> with its entities decoded."""
    for t in parsed:
        if t.type == "inline":
            yield "".join(c.content if c.type == "text" else "\n" for c in t.children or ())
        elif t.type in HTML_TOKENS:
            yield html.unescape(OWN_TAGS.sub("\n", CODE_ELEMENT.sub("\n", t.content)))


def _split_rows(text: str) -> list[str]:
    """Table rows with more or fewer cells than their header, counted as GitHub splits a row:
    at each pipe, a backslash escaping the next character whatever it is (markdown-it lets
    ``\\\\|`` escape the pipe, GitHub does not)."""
    lines = text.splitlines()
    return [f"row {row!r} of {lines[start]!r}" for t in PARSER.parse(text)
            if t.type == "table_open" and t.map for start in [t.map[0]]
            for row in lines[start:t.map[1]] if _cells(row) != _cells(lines[start])]


def _cells(row: str) -> int:
    return re.sub(r"\\.", "", row).count("|") - 1


def structure(text: str) -> Counter[str]:
    return Counter(t.type for t in tokens(text) if t.type in STRUCTURE)


def shown_markers(text: str) -> int:
    """How often a reader sees the marker: in text, in code, in an HTML block's text (as
    often as the markdown holds it, unless something hides it: a comment, a tag, a link's
    reference definition)."""
    seen = [c.content for c in tokens(text) if c.type == "text" or c.type in CODE_TOKENS]
    seen += [html.unescape(OWN_TAGS.sub("", t.content)) for t in tokens(text)
             if t.type in HTML_TOKENS]
    return sum(s.count(MARKDOWN_MARKER) for s in seen)


def attacked(report: Report, payload: str) -> Report:
    """Any report with ``payload`` in each free-text string (tests/hostile.py's attack)."""
    return io.parse(attack(json.loads(io.dumps(report)), payload), "attacked")


def diff_markdown(scenario: str, payload: str) -> str:
    return render_diff_markdown(compare(scenario_report(scenario),
                                        hostile_report(scenario, payload),
                                        f"before{payload}.json", f"after{payload}.json"))


def control(payload: str) -> str:
    """``payload`` with each punctuation character but / made an x: as long, with its lines
    and slashes (so that each bound cuts both alike, and a path's file name is the same), it
    attacks nothing: the markup the output of ``payload`` must have too."""
    return re.sub(r"[^A-Za-z0-9\s/]", "x", payload)


def check_against_control(text: str, control_text: str) -> None:
    assert problems(text) == []
    assert structure(text) == structure(control_text)
    assert shown_markers(text) == text.count(MARKDOWN_MARKER) > 0


@pytest.mark.parametrize("kind", MARKDOWN_PAYLOADS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_nothing_a_report_says_becomes_markup_in_its_markdown(scenario: str, kind: str) -> None:
    payload = MARKDOWN_PAYLOADS[kind]
    text = render_markdown(hostile_report(scenario, payload))
    check_against_control(text, render_markdown(hostile_report(scenario, control(payload))))
    assert len(text) <= markdown.MAX_CHARS


@pytest.mark.parametrize("kind", MARKDOWN_PAYLOADS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_nor_in_the_markdown_of_a_diff(scenario: str, kind: str) -> None:
    payload = MARKDOWN_PAYLOADS[kind]
    check_against_control(diff_markdown(scenario, payload),
                          diff_markdown(scenario, control(payload)))


@pytest.mark.parametrize("kind", MARKDOWN_PAYLOADS)
def test_a_graph_api_in_a_fold_summary_becomes_no_markup(kind: str) -> None:
    """A group of graphs is folded under a summary that names their API, in an HTML block."""
    payload = MARKDOWN_PAYLOADS[kind]
    check_against_control(render_markdown(attacked(many_graphs_report(), payload)),
                          render_markdown(attacked(many_graphs_report(), control(payload))))


@pytest.mark.parametrize("kind", MARKDOWN_PAYLOADS)
def test_a_fold_summary_reads_as_the_same_text_in_a_paragraph(kind: str) -> None:
    """Markdown is not read in a summary (a backslash or backtick would show as typed), so
    the text there is HTML-escaped instead, and reads the same as in a paragraph."""
    report = attacked(many_graphs_report(), MARKDOWN_PAYLOADS[kind])
    summary = next(row.verdict.subject for row in verdict_groups.ranked(report) if row.members)
    in_summary = escape(f"{summary}: each graph", Where.HTML)
    in_paragraph = tokens(escape(f"{summary}: each graph"))
    assert f"<details><summary>{in_summary}</summary>" in render_markdown(report)
    assert html.unescape(OWN_TAGS.sub("", in_summary)) == "".join(
        t.content for t in in_paragraph if t.type in ("text", "code_inline"))


def test_a_fold_summary_shows_the_tags_it_holds_as_typed() -> None:
    payload = MARKDOWN_PAYLOADS["folds"]
    text = render_markdown(attacked(many_graphs_report(), payload))
    summary = next(line for line in text.splitlines()
                   if line.startswith("<details><summary>") and MARKDOWN_MARKER in line)
    assert payload in html.unescape(summary)


@pytest.mark.parametrize("offset", range(0, len(LONG_UNIT), 3))
def test_a_very_long_title_is_cut_outside_its_code_spans_and_escapes(offset: int) -> None:
    title = "x" * offset + LONG_UNIT * (60_000 // len(LONG_UNIT))
    text = render_markdown(with_diagnosis(real("item_in_capture"), (), (finding(title=title),)))
    assert problems(text) == [] and len(text) <= markdown.MAX_CHARS
    line = next(t.content for t in tokens(text) if t.type == "inline" and "GD999" in t.content)
    assert line.endswith("...") and len(line) < 2 * markdown.MAX_TITLE


@pytest.mark.parametrize("offset", range(0, len(LONG_UNIT), 3))
def test_cutting_the_whole_markdown_closes_the_fold_it_cuts(offset: int) -> None:
    """The first finding is shown in full however long: its evidence's notes make the
    required part longer than GitHub takes, and the markdown is cut inside their fold."""
    note = "x" * offset + LONG_UNIT * (5_000 // len(LONG_UNIT))
    evidence = tuple(Evidence("syncs", index, note) for index in range(markdown.MAX_EVIDENCE))
    text = render_markdown(with_diagnosis(real("item_in_capture"), (),
                                          (finding(evidence=evidence),)))
    assert problems(text) == [] and len(text) <= markdown.MAX_CHARS
    assert_cut_and_closed(text)


@pytest.mark.parametrize("offset", range(0, len(LONG_UNIT), 3))
def test_cutting_the_whole_markdown_closes_the_code_block_it_cuts(offset: int) -> None:
    """A line of code the report holds no source for is shown from the finding, however
    long: the markdown is cut inside its code block."""
    code = "x" * offset + LONG_UNIT * (70_000 // len(LONG_UNIT))
    location = Location("/nowhere/gone.py", 3, "f", code)
    text = render_markdown(with_diagnosis(real("item_in_capture"), (),
                                          (finding(location=location),)))
    assert problems(text) == [] and len(text) <= markdown.MAX_CHARS
    assert_cut_and_closed(text)


def assert_cut_and_closed(text: str) -> None:
    """The note of the cut is the last paragraph, outside any fold or code block."""
    blocks = PARSER.parse(text)
    folds = [t.content.strip() for t in blocks if t.type == "html_block"]
    assert folds.count("</details>") == sum(f.startswith("<details>") for f in folds)
    last = blocks[-2]  # the inline token of the last paragraph
    assert last.type == "inline" and last.level == 1 and last.content == f"_{TRUNCATED_NOTE}_"


@pytest.mark.parametrize(("raw", "where", "written"), [
    ("a*b <i>`c`</i> & @d", Where.HTML, "a*b &lt;i&gt;<code>c</code>&lt;/i&gt; &amp; @\u200bd"),
    ("`@d` x@y.example", Where.TEXT, "`@d` x@\u200by.example"),
    ("see https://x.example/a|b", Where.TEXT, r"see `https://x.example/a`\|b"),
    ("go to www.x.example.", Where.HTML, "go to <code>www.x.example.</code>"),
    ("`a`https://x", Where.TEXT, "`ahttps://x`"),  # side by side, two spans would be one run
    ("[x](javascript:y)", Where.TEXT, r"\[x\](javascript:y)"),
    ("a ~b~", Where.TEXT, r"a \~b\~"),
    ("  - a", Where.LINE, r"\- a"),
    ("10. a", Where.LINE, r"10\. a"),
    ("=", Where.LINE, r"\="),
    ("- a", Where.TEXT, "- a"),  # in a cell or after words, a dash is only a dash
    ("a|b", Where.TABLE_CODE, r"`a\|b`"),
    ("a\\|b", Where.TABLE_CODE, r"a\\\|b"),  # GitHub would read a pipe after \\| as a split
    ("x`y", Where.CODE, "``x`y``"),
    ("a\n```\nb", Where.BLOCK, "````\na\n```\nb\n````"),
])
def test_escape(raw: str, where: Where, written: str) -> None:
    assert escape(raw, where) == written


def test_escaping_a_long_run_of_letters_takes_time_in_proportion() -> None:
    """A URL's scheme is looked for from the start of a run of letters only: from each
    letter, 50,000 of them would take seconds; in proportion, a few milliseconds."""
    started = time.perf_counter()
    written = escape("a" * 50_000 + "https://x.example b")
    assert time.perf_counter() - started < 1
    assert written == f"`{'a' * 50_000}https://x.example` b"


SPANS = "ab `<i>` cd x|y <b>&amp;</b> @e \\ `f`"


@pytest.mark.parametrize("most", range(4, len(SPANS) + 2))
def test_escape_cuts_the_text_it_was_given_not_what_it_wrote(most: int) -> None:
    """A cut keeps whole escapes and closes the code span it cuts: what a reader sees is the
    start of the text (less the backticks of its code spans), then an ellipsis."""
    written = escape(SPANS, most=most)
    seen = "".join(t.content for t in tokens(written) if t.type in ("text", "code_inline"))
    typed = SPANS.replace("`", "")
    shown = typed if most >= len(typed) else typed[:most - 3] + "..."
    assert problems(written) == []
    assert seen == shown.replace("@", "@\u200b")


@pytest.mark.parametrize("name", NAMES)
def test_the_checks_pass_graphdoctor_s_own_markup(name: str) -> None:
    """Every recorded scenario's markdown passes: the only tags graphdoctor writes are those
    the checks allow, and it writes no link, mention or bare URL of its own."""
    text = render_markdown(real(name))
    assert problems(text) == []
    assert structure(text)["html_block"] > 0
