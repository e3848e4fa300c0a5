"""80x24 is a first-class size: every screen's footer keeps q Quit, and the timeline's
lanes get the rows the details do not need."""

from __future__ import annotations

import pytest

from tests.reports import report_for
from tests.tui.helpers import app_for, screen_text, settle

SCREENS = ("1", "2", "3", "4", "5")


@pytest.mark.parametrize("scenario", ["launch_bound", "dist_extra_allreduce_in_capture"])
async def test_every_screens_footer_keeps_quit_at_80_columns(scenario: str) -> None:
    app = app_for(report_for(scenario))
    async with app.run_test(size=(80, 24)) as pilot:
        for key in SCREENS:
            await pilot.press(key)
            await settle(pilot)
            footer = screen_text(app).splitlines()[-1]
            assert "q Quit" in footer, (key, footer)


def test_a_wrapped_line_keeps_its_indent() -> None:
    from rich.text import Text

    from graphdoctor.tui.rendering import hanging
    from tests.tui.helpers import plain

    text = Text("  200× vectorized_elementwise_kernel tanh\n• info GD211 one chain of kernels")
    lines = plain(hanging(text, ("• info",)), width=24).splitlines()
    assert lines[0].startswith("  200×") and lines[1].startswith("  ") and lines[1].strip()
    badge = next(i for i, line in enumerate(lines) if line.startswith("• info"))
    assert lines[badge + 1].startswith(" " * len("• info "))
