"""A finding's patch in the viewer: said under the finding where it has one, shown with d
(and d again back to the finding), copied with y through the terminal's clipboard."""

from __future__ import annotations

from graphdoctor.tui.app import GraphDoctorApp
from graphdoctor.tui.screens.findings import NO_PATCH, PATCH_HINT
from tests.reports import report_for
from tests.tui.helpers import app_for, settle, shown


def detail(app: GraphDoctorApp) -> str:
    return " ".join(shown(app, "#finding-text").split())  # the words, however wrapped


async def test_d_shows_the_patch_and_y_copies_it() -> None:
    app = app_for(report_for("real_adam_default_capture"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert PATCH_HINT in detail(app)
        await pilot.press("d")
        await pilot.pause()
        shown = detail(app)
        assert "+opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)" in shown
        assert "--- a/fixtures/scripts/real_adam_default_capture.py" in shown
        await pilot.press("y")
        await pilot.pause()
        assert app.clipboard.startswith("--- a/fixtures/scripts/real_adam_default_capture.py")
        await pilot.press("d")
        await pilot.pause()
        assert PATCH_HINT in detail(app) and "--- a/" not in detail(app)


async def test_a_finding_without_a_patch_says_so() -> None:
    app = app_for(report_for("gpu_bound"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert PATCH_HINT not in detail(app)
        await pilot.press("d")
        await pilot.pause()
        assert any(NO_PATCH in str(n.message) for n in app._notifications)
