"""A scripted conversation for the conversation and snapshot tests."""

from __future__ import annotations

from tests.support.fake_openai import (
    tool_call_reply,
)
from tests.support.ui import (
    REVENUE_SQL,
)

TOTAL_SQL = "SELECT sum(amount) AS total FROM sales.orders"


def answer_script() -> list[object]:
    return [
        tool_call_reply(
            [("run_sql", {"sql": f"-- revenue by region\n{REVENUE_SQL}"})], text="Checking orders."
        ),
        tool_call_reply(
            [
                (
                    "submit_result",
                    {
                        "inputs": {"rev": REVENUE_SQL, "total": TOTAL_SQL},
                        "template": (
                            "Total revenue was {{ total.value | money }} over {{ rev.row_count }} regions."
                        ),
                        "title": "Revenue by region",
                    },
                )
            ]
        ),
    ]
