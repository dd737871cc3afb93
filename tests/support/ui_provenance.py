"""A scripted answer with traced values, and the app after it, for the provenance and replay tests."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from astro_tui.ui.app import AstroApp
from astro_tui.ui.widgets.traced_answer import TracedAnswer
from tests.support.fake_openai import tool_call_reply
from tests.support.ui import (
    REVENUE_SQL,
    ready,
    submit,
    wait_until,
)

TOTAL_SQL = "SELECT sum(amount) AS total FROM sales.orders"


TEMPLATE = (
    "## Revenue by region\n\n"
    "Total revenue was **{{ total.value | money }}**.\n\n"
    "{% for r in rev.rows %}- {{ r.region }}: {{ r.revenue | money }} "
    "({{ (r.revenue / total.value) | percent }})\n{% endfor %}"
)


def answer_script() -> list[object]:
    return [
        tool_call_reply(
            [
                (
                    "submit_result",
                    {
                        "inputs": {"rev": REVENUE_SQL, "total": TOTAL_SQL},
                        "template": TEMPLATE,
                        "title": "Revenue by region",
                    },
                )
            ]
        ),
    ]


async def answered(pilot: Pilot[Any]) -> TracedAnswer:
    app = pilot.app
    assert isinstance(app, AstroApp)
    await ready(pilot)
    await submit(pilot, "revenue by region?")
    await wait_until(pilot, lambda: not app.conversation.running and app.query(TracedAnswer))
    answer = app.query(TracedAnswer).last()
    await wait_until(pilot, lambda: len(app.results.entries) >= 2)
    return answer
