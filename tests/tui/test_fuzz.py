"""The viewer against generated hostile text (the property-test side of test_hostile.py):
whatever text a report holds in its free-text places, the app opens it, its screens draw,
and the terminal is sent no control character from it."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphdoctor.report import io
from tests.hostile import PAYLOADS, attack, leaks
from tests.reports import report_for
from tests.tui.helpers import app_for
from tests.tui.tour import quick_tour

pytestmark = pytest.mark.slow  # the second test command (README: Tests)

BASE = json.loads(io.dumps(report_for("item_in_capture")))

# Text built from characters anywhere in the first planes (controls, C1, bidi included) and
# from pieces of the known attacks, so examples are often both at once.
PIECES = [piece for payload in PAYLOADS.values() for piece in payload.split(" ")]
hostile_text = st.lists(st.sampled_from(PIECES) | st.characters(max_codepoint=0x2100)
                        | st.sampled_from(["[", "]", "[/", "\x1b[", "\x1b]", "\\"]),
                        min_size=1, max_size=8).map("".join)


async def _visit(payload: str) -> None:
    app = app_for(io.parse(attack(BASE, payload)), "fuzzed")
    async with app.run_test(size=(80, 24)) as pilot:
        async for where, output in quick_tour(pilot):
            assert not leaks(output), (where, payload, leaks(output)[:3])
    assert app.return_code is None, app.crash_summary()


@settings(max_examples=20, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(hostile_text)
def test_any_text_in_a_report_is_shown_and_never_sent_to_the_terminal(payload: str) -> None:
    asyncio.run(_visit(payload))
