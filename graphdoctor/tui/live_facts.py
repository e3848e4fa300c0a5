"""What a live view says of the recording it follows (:mod:`graphdoctor.tui.live`): what it
reads, where the script's output goes, and whether the run has ended. No Textual import."""

from __future__ import annotations

from dataclasses import dataclass

from graphdoctor.units import format_duration


@dataclass(frozen=True)
class LiveFacts:
    """``following``: the spools read (their paths, joined); ``output``: the file the
    script's stdout and stderr go to ("" where graphdoctor does not run the script: a
    spool another process writes); ``ended``: the recording's end was read; ``report``: the
    file of the finished report that replaced the live one ("" until then);
    ``running_ns``: how long the run has gone on; ``every_s``: how often it is read."""

    following: str
    output: str = ""
    ended: bool = False
    report: str = ""
    running_ns: int = 0
    every_s: float = 1.0

    @property
    def badge(self) -> str:
        """What the bar says in place of the app's name: ``● live 42.0 s``, ``● ended``;
        "" once the finished report is on show."""
        if self.report:
            return ""
        if self.ended:
            return "● ended"
        return f"● live {format_duration(self.running_ns)}" if self.running_ns else "● live"
