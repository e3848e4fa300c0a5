"""Hostile reports: real reports with text that attacks a terminal or a renderer added to
every free-text string of the schema, and the check that none of it reaches the terminal.

The places come from walking ``report.schema.json`` beside each report's JSON, so a field
added to the schema is attacked without this file changing: every string value the schema
leaves free (no const, enum or pattern), every key of a free-form map, every string of the
string table (function names, pools, files, sync kinds...). A text field is attacked by
appending the payload, so references between them (a frame's file and the key of its
source lines) still match.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import re
from typing import Any

from graphdoctor.report import io, schema
from graphdoctor.report.document import BaselineRun, Report
from tests.reports import as_child, report_for

PAYLOADS = {
    # Controls a terminal acts on, BEL, backspace and carriage return among them.
    "C0 controls": "\x00\x01\x07\x08\x0b\x0c\r\x0e\x1a\x7f",
    # Clear the screen, set the window title (OSC 0), write the clipboard (OSC 52), open a
    # hyperlink (OSC 8), a device control string and the alternate screen.
    "escape sequences": ("\x1b[2J\x1b[H\x1b]0;owned title\x07\x1b]52;c;b3duZWQ=\x07"
                         "\x1b]8;;https://example.invalid\x1b\\link\x1b]8;;\x1b\\"
                         "\x1bP1$r\x1b\\\x1b[?1049h\x1bc"),
    # The same as single C1 characters (CSI, OSC, ST, NEL...), which some terminals obey.
    "C1 controls": "\x84\x85\x8d\x90\x9b2J\x9d0;owned\x9c\x9f",
    # Bidirectional overrides and isolates, which reorder how the rest of a line reads.
    "bidi overrides": "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
    # Rich and Textual markup: styles, a hyperlink, an action, stray and unclosed tags.
    "markup": ("[bold]bold[/bold] [link=https://example.invalid]link[/link] "
               "[@click=app.quit]q[/] [/bold"),
}
MARKUP_SHOWN = "[bold]bold[/bold]"  # how the markup payload starts when shown as text
EVERYTHING = "".join(PAYLOADS.values())
# One of each kind, short enough that a field holding it stays short (a view may lay out
# short and long text differently).
SHORT = "\x1b]0;x\x07\x9b\u202e[/]"
SHORT_MARKUP = "[/]"
# A word such as "uncaught", "capture" or "error" is a name the code reads: attacked, it
# means nothing to the views that depend on it, so a corpus that keeps words reaches them.
_WORD = re.compile(r"[a-z_]+")

# A single-process run and a distributed one. Once attacked (which adds a record wherever a
# kind of record is missing), the distributed one has text in every free-text place of the
# schema; the single-process one is there because every view lays it out differently.
SCENARIOS = ("item_in_capture", "dist_rank_capture_fails")
# The baseline run of ``run --baseline``, given to the distributed scenario so that its
# free text is attacked too.
BASELINE = BaselineRun("exited with code 0 after 2 s", True, 0, 2 * 10**9, 3,
                       ("torch.compile at x.py:3: compiled without CUDA graphs",),
                       ("torch.cuda.graph at x.py:9 captured as written",))


def scenario_report(scenario: str) -> Report:
    """The scenario's report, clean: the distributed one with a baseline run, the other with
    a process its script started (its own recording again), so that their free text is
    attacked too."""
    report = report_for(scenario)
    if scenario == SCENARIOS[1]:
        return dataclasses.replace(report, baseline=BASELINE)
    return dataclasses.replace(report, children=[
        as_child(report_for(scenario), 4242, report.trace.meta.pid,
                 ("/usr/bin/python3", "-c", "import torch", "--flag"))])

# What a terminal acts on rather than shows, once the sequences the renderer itself writes
# (colours and styles, and moving the cursor) are taken out.
_RENDERER_SEQUENCES = re.compile(r"\x1b\[[0-9;:]*[mHABCDGJK]")
_ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def leaks(output: str) -> list[str]:
    """The control characters in ``output`` that its renderer did not write itself, each
    with a little of what follows it."""
    rest = _RENDERER_SEQUENCES.sub("", output)
    return [repr(rest[m.start():m.start() + 12]) for m in _ACTED_ON.finditer(rest)]


def visible(output: str) -> str:
    """The text of a terminal output without its escape sequences."""
    return _RENDERER_SEQUENCES.sub("", output)


@functools.cache
def hostile_report(scenario: str, payload: str = EVERYTHING, keep_words: bool = False) -> Report:
    """The scenario's report with ``payload`` in every free-text string (but words, if
    ``keep_words``)."""
    data = json.loads(io.dumps(scenario_report(scenario)))
    return io.parse(attack(data, payload, keep_words), f"hostile {scenario}")


def attack(data: Any, payload: str, keep_words: bool = False) -> Any:
    """A report's JSON data with ``payload`` appended to every free-text string (but words,
    if ``keep_words``)."""
    return _Attack(payload, keep_words).value(schema.report_schema(), data)


def attacked_places(data: Any) -> set[str]:
    """The schema places (``report.trace.graphs[].pool``) :func:`attack` changes in ``data``."""
    attack_ = _Attack("")
    attack_.value(schema.report_schema(), data)
    return attack_.places


def free_text_places() -> set[str]:
    """Every place in the schema that holds free text (found by walking the schema)."""
    found: set[str] = set()
    _Attack("").places_in(schema.report_schema(), "report", found, frozenset())
    return found


class _Attack:
    """Walks a report's JSON beside the schema, appending the payload to free text. Where the
    data has no instance of a part that holds free text (no warning was recorded, no extra
    column), it adds one: the first item already there if any, else the smallest instance the
    schema allows."""

    def __init__(self, payload: str, keep_words: bool = False):
        self.payload = payload
        self.keep_words = keep_words
        self.defs = schema.report_schema()["$defs"]
        self.places: set[str] = set()

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            node = self.defs[node["$ref"].rsplit("/", 1)[-1]]
        return node

    def choices(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        node = self.resolve(node)
        return [self.resolve(c) for c in node["anyOf"]] if "anyOf" in node else [node]

    def option(self, node: dict[str, Any], value: Any) -> dict[str, Any]:
        """The alternative of an anyOf that ``value`` is."""
        for choice in self.choices(node):
            types = choice.get("type")
            names = types if isinstance(types, list) else [types]
            if types is None or schema.json_type(value) in names \
                    or (schema.json_type(value) == "integer" and "number" in names):
                return choice
        return self.resolve(node)

    def value(self, node: dict[str, Any], value: Any, place: str = "report") -> Any:
        if value is None:  # an optional object left out (null): the smallest one, with text
            filled = [c for c in self.choices(node) if c.get("type") != "null"
                      and self.holds_text(c)]
            value = self.example(filled[0]) if filled else None
        node = self.option(node, value)
        if isinstance(value, str):
            return self.text(node, value, place)
        if isinstance(value, dict):
            return self.mapping(node, value, place)
        if isinstance(value, list):
            return self.array(node, value, place)
        return value

    def text(self, node: dict[str, Any], value: str, place: str) -> str:
        if node.get("type") != "string" or not _free(node):
            return value
        self.places.add(place)
        return value if self.keep_words and _WORD.fullmatch(value) else value + self.payload

    def array(self, node: dict[str, Any], value: list[Any], place: str) -> list[Any]:
        prefix, items = node.get("prefixItems", []), node.get("items")
        out = [self.value(prefix[i], v, f"{place}[{i}]") for i, v in enumerate(value[:len(prefix)])]
        if isinstance(items, dict):
            rest = value[len(prefix):] or [self.example(c) for c in self.choices(items)
                                           if self.holds_text(c) and not prefix]
            out += [self.value(items, v, f"{place}[]") for v in rest]
        return out

    def mapping(self, node: dict[str, Any], value: dict[str, Any], place: str) -> Any:
        named, extra = node.get("properties", {}), node.get("additionalProperties")
        out = {key: self.value(named[key], item, f"{place}.{key}") if key in named else item
               for key, item in value.items() if key in named or not isinstance(extra, dict)}
        if not isinstance(extra, dict):
            return out
        others = {k: v for k, v in value.items() if k not in named}
        keys_free = _free(self.resolve(node.get("propertyNames", {})))
        if keys_free:
            others |= self.new_entries(extra, value)
        for key, item in others.items():
            name = self.text({"type": "string"}, key, f"{place}{{key}}") if keys_free else key
            out[name] = self.value(extra, item, f"{place}{{}}")
        return out

    def new_entries(self, extra: dict[str, Any], present: dict[str, Any]) -> dict[str, Any]:
        """An entry for each kind of value the map may hold: a copy of one it holds (a column
        as long as the others), else the smallest instance."""
        entries = {}
        for number, choice in enumerate(self.choices(extra)):
            same = [v for v in present.values() if self.option(extra, v) is choice]
            entries[f"extra {number}"] = copy.deepcopy(same[0]) if same else self.example(choice)
        return entries

    def example(self, node: dict[str, Any]) -> Any:
        """The smallest instance of ``node`` that has all its text: its required fields and
        those that hold text, empty lists, zero, none."""
        node = self.choices(node)[0]
        if "const" in node:
            return node["const"]
        types = node.get("type")
        kind = str(next((k for k in types if k != "null"), "null") if isinstance(types, list)
                   else types)
        if kind == "object":
            named = node.get("properties", {})
            return {key: self.example(child) for key, child in named.items()
                    if key in node.get("required", []) or self.holds_text(child)}
        if kind == "array":
            return [self.example(item) for item in node.get("prefixItems", [])]
        if kind == "string":  # a patterned one gives its example
            return node.get("examples", [""])[0]
        return {"integer": node.get("minimum", 0), "number": 0, "boolean": False}.get(kind)

    def holds_text(self, node: dict[str, Any]) -> bool:
        found: set[str] = set()
        self.places_in(node, "", found, frozenset())
        return bool(found)

    def places_in(self, node: dict[str, Any], place: str, found: set[str],
                  seen: frozenset[tuple[int, str]]) -> None:
        """Every free-text place under ``node`` (a definition is entered once per place)."""
        if (id(node), place) in seen:
            return
        seen |= {(id(node), place)}
        node = self.resolve(node)
        for choice in node.get("anyOf", []):
            self.places_in(choice, place, found, seen)
        if node.get("type") == "string" and _free(node):
            found.add(place)
        for key, child in node.get("properties", {}).items():
            self.places_in(child, f"{place}.{key}", found, seen)
        if isinstance(node.get("additionalProperties"), dict):
            if _free(self.resolve(node.get("propertyNames", {}))):
                found.add(f"{place}{{key}}")
            self.places_in(node["additionalProperties"], f"{place}{{}}", found, seen)
        for index, child in enumerate(node.get("prefixItems", [])):
            self.places_in(child, f"{place}[{index}]", found, seen)
        if isinstance(node.get("items"), dict):
            self.places_in(node["items"], f"{place}[]", found, seen)


def _free(node: dict[str, Any]) -> bool:
    return not any(key in node for key in ("const", "enum", "pattern"))


# Markdown and HTML that text from a report could use against the markdown pasted into a
# GitHub issue (tests/report/test_markdown_safety.py): tags, a fold closed early, a comment
# that hides the rest, code spans that end early, mentions, links and bare URLs, entities.
# Each holds MARKDOWN_MARKER, so that what came from the report can be told from the folds,
# tables and code graphdoctor writes itself.
MARKDOWN_MARKER = "zqxmarker"
MARKDOWN_PAYLOADS = {
    "html tags": (f" <img src=x onerror=alert('{MARKDOWN_MARKER}')><script>{MARKDOWN_MARKER}"
                  f"</script><b title={MARKDOWN_MARKER}>"),
    "folds": f" </summary></details><details open><summary>{MARKDOWN_MARKER}</summary>",
    "comment": f" <!-- {MARKDOWN_MARKER} <?{MARKDOWN_MARKER}?> <![CDATA[{MARKDOWN_MARKER}",
    "backtick runs": (f" `<img src={MARKDOWN_MARKER}>` ``<b>{MARKDOWN_MARKER}`` ` ``` "
                      f"````<i>{MARKDOWN_MARKER}</i> `"),
    "mentions": f" @{MARKDOWN_MARKER} @{MARKDOWN_MARKER}/team mail@{MARKDOWN_MARKER}.example",
    "urls": (f" https://evil.example/{MARKDOWN_MARKER} HTTP://{MARKDOWN_MARKER}.example/x "
             f"www.{MARKDOWN_MARKER}.example ftp://{MARKDOWN_MARKER}.example"),
    "links": (f" [link](javascript:{MARKDOWN_MARKER}) ![img](http://{MARKDOWN_MARKER}/i.png) "
              f"<http://{MARKDOWN_MARKER}> <{MARKDOWN_MARKER}@evil.example> [ref]: /x"),
    "entities": f" &lt;img src={MARKDOWN_MARKER}&gt; &#60;b&#62;{MARKDOWN_MARKER}&#x3c;/b&#x3e;",
    "markdown markup": (f" **{MARKDOWN_MARKER}** _{MARKDOWN_MARKER}_ # {MARKDOWN_MARKER} "
                        f"a|{MARKDOWN_MARKER}\\|b\\\\|c `x\\|{MARKDOWN_MARKER}` \\` "
                        f"~~{MARKDOWN_MARKER}~~"),
    # Where a text keeps its lines: what starts a block there (a list, a heading's underline,
    # a fence that would hold the rest of the markdown, a quote, indented code, a reference).
    "line starts": (f"\n- {MARKDOWN_MARKER}\n+ {MARKDOWN_MARKER}\n1. {MARKDOWN_MARKER}\n"
                    f"2) {MARKDOWN_MARKER}\n---\n===\n~~~\n```\n> {MARKDOWN_MARKER}\n"
                    f"    {MARKDOWN_MARKER}\n[ref]: /{MARKDOWN_MARKER}\n<div>{MARKDOWN_MARKER}\n"),
}


# Values JSON can carry that no graphdoctor writes (tests/report/test_hostile_values.py):
# half of a UTF-16 pair, which a file holds as the escape "\ud800" and no UTF-8 output can
# hold, put in every string and key; and numbers beyond any graphdoctor's range, written in
# place of one of the report's numbers.
LONE_SURROGATE = "\ud800"
OUT_OF_RANGE_NUMBERS = ("1e400", "-1e400", "1" + "0" * 400, "-" + "9" * 30)
