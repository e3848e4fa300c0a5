"""The help screen (?): every key of every screen, what the mouse does, and a legend of the
timeline's glyphs. Built from the bindings themselves, so it cannot fall out of date."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from graphdoctor.tui import palette
from graphdoctor.tui.palette import Mark

KEY_NAMES = {"left": "←", "right": "→", "up": "↑", "down": "↓", "plus": "+", "minus": "-",
             "equals_sign": "=", "underscore": "_", "question_mark": "?", "slash": "/",
             "less_than_sign": "<", "greater_than_sign": ">", "escape": "esc", "f1": "F1",
             "left_square_bracket": "[", "right_square_bracket": "]", "colon": ":"}
MOUSE = ("click a lane: move the cursor there and show the event under it",
         "wheel: zoom around the pointer · shift+wheel: pan",
         "click a screen's name in the top bar, a table heading to sort, a row to select it")
RANKS = ("a distributed run shows each rank's lanes as a group (r0 …, r1 …), on one time axis;",
         "each rank's times count from its own start, which the launcher makes nearly the same",
         "moment (milliseconds apart): read the order of events across ranks, not exact gaps",
         "[ and ] move to the same lane of the previous or next rank")


def key_text(keys: str) -> str:
    """``"shift+left,H"`` as ``"shift+← H"``."""
    shown = []
    for key in keys.split(","):
        parts = [KEY_NAMES.get(part, part) for part in key.split("+")]
        shown.append("+".join(parts))
    return " ".join(shown)


def binding_lines(bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    return [(key_text(binding.key), binding.description) for binding in bindings
            if isinstance(binding, Binding) and binding.description]


def legend_lines() -> list[tuple[str, str, str]]:
    """(glyph, style, meaning) for the timeline's marks."""
    groups: Sequence[tuple[str, dict[str, Mark]]] = (
        ("phase", palette.PHASE_MARKS), ("call", palette.CALL_MARKS),
        ("stream", palette.STREAM_OP_MARKS), ("sync in", palette.SYNC_MARKS),
        ("compile", palette.COMPILE_MARKS), ("finding:", palette.FINDING_MARKS))
    lines = [(mark.glyph if mark.glyph != " " else "█", mark.style.replace("black on ", ""),
              f"{prefix} {name}") for prefix, marks in groups for name, mark in marks.items()]
    lines += [(palette.REPLAY_HOST.glyph, palette.REPLAY_HOST.style, "replay (host / GPU)"),
              (palette.CAPTURE_SPAN.glyph, palette.CAPTURE_SPAN.style, "capture on its stream"),
              (palette.FAILED_CAPTURE_SPAN.glyph, palette.FAILED_CAPTURE_SPAN.style,
               "failed capture"),
              (palette.EXCEPTION.glyph, palette.EXCEPTION.style, "exception"),
              (palette.WARNING_MARK.glyph, palette.WARNING_MARK.style, "warning"),
              (palette.INPUT_EVENT.glyph, palette.INPUT_EVENT.style,
               "captured input freed or rebound"),
              (palette.COLLECTIVE.glyph, palette.COLLECTIVE.style,
               "collective (torch.distributed)"),
              (palette.CAPTURED_COLLECTIVE.glyph, palette.CAPTURED_COLLECTIVE.style,
               "collective captured into a graph"),
              (palette.NEVER_RETURNED.glyph, palette.NEVER_RETURNED.style,
               "a call that never returned, drawn to the end of the run"),
              (palette.TEARDOWN.glyph, palette.TEARDOWN.style, "destroy_process_group()"),
              (palette.STREAM_LINK.glyph, palette.STREAM_LINK.style,
               f"a fork or join between streams in a capture, from {'/'.join(palette.LINK_ENDS)}"),
              (palette.UNJOINED_LINK.glyph, palette.UNJOINED_LINK.style,
               "a fork never joined back"),
              ("abc", palette.SAME_LINE_STYLE, "an event from the selected event's line"),
              ("░▒▓█", "", "how much of a column a span covers"),
              ("◆", palette.SELECTED_STYLE, "the selected event")]
    return lines


def help_text(sections: Sequence[tuple[str, list[tuple[str, str]]]]) -> Text:
    text = Text()
    for title, lines in sections:
        text.append(f"{title}\n", style="bold underline")
        for keys, description in lines:
            text.append(f"  {keys:<16}", style="bold")
            text.append(f"{description}\n")
        text.append("\n")
    text.append("Mouse\n", style="bold underline")
    for line in MOUSE:
        text.append(f"  {line}\n")
    text.append("\nTimeline legend\n", style="bold underline")
    for glyph, style, meaning in legend_lines():
        text.append("  ")
        text.append(f"{glyph:<5}", style=style)
        text.append(f" {meaning}\n")
    text.append("\nDistributed runs\n", style="bold underline")
    for line in RANKS:
        text.append(f"  {line}\n")
    return text


class HelpScreen(ModalScreen[None]):
    """Keys, mouse and legend; escape, ? or q closes it."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close help")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, sections: Sequence[tuple[str, list[tuple[str, str]]]]) -> None:
        super().__init__()
        self.sections = sections

    def dismiss(self, result: None = None) -> AwaitComplete:
        """Close only while shown: of two keys that close it in one burst, or with a screen
        switched under it, the second would pop the screen below (Textual raises)."""
        if self.app.screen is not self:
            return AwaitComplete()
        return super().dismiss(result)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "graphdoctor help · esc closes"
            yield Static(help_text(self.sections), id="help-text")
