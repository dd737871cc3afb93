"""`astro ask` end to end: the sample warehouse, the fake server, real stdout/stderr text."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.headless.ask import run_ask
from astro_tui.session import Session
from tests.support.fake_openai import FakeOpenAI, cut, error, text_reply, tool_call_reply

REVENUE = "SELECT sum(total_amount) AS revenue FROM sales.orders WHERE status = 'completed'"
BY_STATUS = "SELECT status, count(*) AS orders FROM sales.orders GROUP BY 1 ORDER BY 1"
EXPLORE = "-- orders by status\n" + BY_STATUS
TEMPLATE = "Completed orders brought in {{ rev.value | money }} over {{ by_status.row_count }} statuses."


@pytest.fixture
def warehouse(sample_db: Database) -> Database:
    return sample_db


async def ask(
    question: str,
    db: Database,
    settings: Settings,
    state: Path,
    *,
    json_output: bool = False,
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    session = Session.over(db, settings, state_dir=state)
    code = await run_ask(question, session, json_output=json_output, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def script_answer(fake: FakeOpenAI) -> None:
    fake.script(
        tool_call_reply([("run_sql", {"sql": EXPLORE})]),
        tool_call_reply(
            [
                (
                    "submit_result",
                    {
                        "inputs": {"rev": REVENUE, "by_status": BY_STATUS},
                        "template": TEMPLATE,
                        "title": "Revenue",
                    },
                )
            ]
        ),
    )


def scalar(db: Database, sql: str) -> Any:
    return db.execute(sql).table.column(0)[0].as_py()


async def test_ask_prints_the_number_duckdb_computes(
    warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    script_answer(fake_openai)
    code, out, err = await ask("completed revenue?", warehouse, fake_openai.settings(), tmp_path)
    assert code == 0, err
    revenue: Decimal = scalar(warehouse, REVENUE)
    statuses = warehouse.execute(BY_STATUS).row_count
    assert f"Completed orders brought in ${revenue:,.2f} over {statuses} statuses." in out
    assert out.startswith("Revenue\n")
    assert "status" in out and "orders" in out
    assert "SQL:\n  " + REVENUE in out
    assert "▶ run_sql  -- orders by status" in err
    assert "▶ submit_result  Revenue" in err
    assert revenue > 0


async def test_ask_json_shape(warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    script_answer(fake_openai)
    code, out, _ = await ask(
        "completed revenue?", warehouse, fake_openai.settings(), tmp_path, json_output=True
    )
    assert code == 0
    assert out.count("\n") == 1
    record = json.loads(out)
    assert set(record) >= {"question", "answer", "verified", "kind", "sql", "data", "tool_calls", "usage"}
    assert record["question"] == "completed revenue?"
    assert record["verified"] is True and record["kind"] == "result"
    assert record["sql"] == [REVENUE, BY_STATUS]
    revenue = scalar(warehouse, REVENUE)
    assert f"${revenue:,.2f}" in record["answer"]
    data = record["data"]
    expected = warehouse.execute(BY_STATUS)
    assert data["columns"] == ["status", "orders"]
    assert data["row_count"] == expected.row_count and data["truncated"] is False
    assert data["rows"] == [list(r) for r in expected.rows()]
    assert record["tool_calls"] == 2
    assert record["usage"]["total_tokens"] > 0


async def test_unverified_text_answer(warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.script(text_reply("Probably around 500 orders."))
    code, out, err = await ask("orders?", warehouse, fake_openai.settings(), tmp_path)
    assert code == 0 and out == "Probably around 500 orders.\n"
    assert "unverified" in err
    fake_openai.script(text_reply("Probably around 500 orders."))
    code, out, _ = await ask("orders?", warehouse, fake_openai.settings(), tmp_path, json_output=True)
    record = json.loads(out)
    assert record["verified"] is False and record["kind"] == "unverified" and record["sql"] == []
    assert record["unverified_numbers"] == ["500"]


async def test_a_typed_number_makes_the_answer_unverified(
    warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    submit = {"inputs": {"rev": REVENUE}, "template": "About 42 orders brought in {{ rev.value | money }}."}
    fake_openai.script(tool_call_reply([("submit_result", submit)]))
    code, out, _ = await ask("revenue?", warehouse, fake_openai.settings(), tmp_path, json_output=True)
    record = json.loads(out)
    assert code == 0 and record["kind"] == "result" and record["sql"] == [REVENUE]
    assert record["verified"] is False and record["unverified_numbers"] == ["42"]
    fake_openai.script(tool_call_reply([("submit_result", submit)]))
    code, out, err = await ask("revenue?", warehouse, fake_openai.settings(), tmp_path)
    assert code == 0 and "(unverified: typed into the answer by the model, not from the data: 42)" in err


async def test_no_model_configured_exits_2(warehouse: Database, tmp_path: Path) -> None:
    code, out, err = await ask("q", warehouse, Settings(), tmp_path)
    assert code == 2 and out == ""
    assert "ASTRO_MODEL" in err and "ollama" in err.lower()
    code, out, _ = await ask("q", warehouse, Settings(), tmp_path, json_output=True)
    assert code == 2 and json.loads(out)["error"]


async def test_remote_server_without_key_exits_2(warehouse: Database, tmp_path: Path) -> None:
    code, _, err = await ask("q", warehouse, Settings(model="gpt-x"), tmp_path)
    assert code == 2 and "OPENAI_API_KEY" in err


async def test_server_failure_exits_1_with_one_line(
    warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(error(500, "overloaded"))
    code, out, err = await ask("q", warehouse, fake_openai.settings(), tmp_path)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("astro: ") and "overloaded" in err
    fake_openai.script(error(500, "overloaded"))
    code, out, _ = await ask("q", warehouse, fake_openai.settings(), tmp_path, json_output=True)
    record = json.loads(out)
    assert code == 1 and record["answer"] is None and "overloaded" in record["error"]


async def test_limit_exits_1(warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.script(tool_call_reply([("read_context", {})]))
    code, _, err = await ask("q", warehouse, fake_openai.settings(max_completions=1), tmp_path)
    assert code == 1 and "max_completions" in err


async def test_printed_data_is_inert(warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    hostile = (
        "SELECT chr(27) || ']52;c;aGk=' || chr(7) || 'x' || chr(155) || 'y' AS v, 2 AS w "
        "UNION ALL SELECT 'z', 3"
    )
    arguments = {"inputs": {"h": hostile}, "template": "{% for r in h.rows %}{{ r.v }};{% endfor %}"}
    fake_openai.script(tool_call_reply([("submit_result", arguments)]))
    code, out, _ = await ask("q", warehouse, fake_openai.settings(), tmp_path)
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert "\\x1b]52;c;aGk=\\x07x\\x9by" in out
    fake_openai.script(tool_call_reply([("submit_result", arguments)]))
    code, out, _ = await ask("q", warehouse, fake_openai.settings(), tmp_path, json_output=True)
    assert "\x1b" not in out and "\x9b" not in out and "\\u009b" in out
    assert json.loads(out)["data"]["rows"][0][0].startswith("\x1b]52")


async def test_chart_answer(warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    arguments = {"sql": BY_STATUS, "kind": "bar", "x": "status", "y": "orders", "title": "Orders by status"}
    fake_openai.script(tool_call_reply([("render_chart", arguments)]))
    code, out, _ = await ask("q", warehouse, fake_openai.settings(), tmp_path)
    assert code == 0 and "Orders by status" in out and "SQL:\n  " + BY_STATUS in out
    assert "\x1b" not in out
    fake_openai.script(tool_call_reply([("render_chart", arguments)]))
    _, out, _ = await ask("q", warehouse, fake_openai.settings(), tmp_path, json_output=True)
    record = json.loads(out)
    assert record["kind"] == "chart" and record["chart"]["y"] == ["orders"]


class _Terminal(io.StringIO):
    """stderr as a terminal: `astro ask` then draws the call being written in place."""

    def isatty(self) -> bool:
        return True


async def test_progress_shows_calls_as_they_are_written_on_a_terminal(
    warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    script_answer(fake_openai)
    out, err = io.StringIO(), _Terminal()
    session = Session.over(warehouse, fake_openai.settings(), state_dir=tmp_path)
    code = await run_ask("revenue?", session, json_output=False, out=out, err=err)
    assert code == 0
    shown = err.getvalue()
    assert "▶ run_sql  writing… 0 characters" in shown and "\r\x1b[K▶ run_sql  -- orders by status\n" in shown
    assert shown.count("▶ run_sql") >= 2 and shown.endswith("\n")


async def test_a_turn_that_fails_mid_call_clears_the_live_line(
    warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(cut(tool_call_reply([("run_sql", {"sql": EXPLORE})])))
    out, err = io.StringIO(), _Terminal()
    session = Session.over(warehouse, fake_openai.settings(), state_dir=tmp_path)
    code = await run_ask("revenue?", session, json_output=False, out=out, err=err)
    assert code == 1
    shown = err.getvalue()
    assert "writing…" in shown and shown.split("\r\x1b[K")[-1].startswith("astro: ")


async def test_progress_in_a_pipe_is_one_line_per_call_and_says_when_it_asked_again(
    warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(text_reply("Roughly a lot."))
    script_answer(fake_openai)
    code, out, err = await ask("revenue?", warehouse, fake_openai.settings(max_reasks=1), tmp_path)
    assert code == 0 and "Completed orders brought in $" in out
    lines = err.splitlines()
    assert lines[:2] == [
        "Roughly a lot.",
        "↻ the model answered in plain text; asked it once more to answer with a tool",
    ]
    assert "writing" not in err and "\r" not in err
    assert lines[2].startswith("▶ run_sql")


async def test_ask_json_usage_is_null_when_the_server_reports_none(
    warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(text_reply("Probably around 500 orders.", usage=None))
    code, out, _ = await ask("orders?", warehouse, fake_openai.settings(), tmp_path, json_output=True)
    assert code == 0
    assert json.loads(out)["usage"] is None, "unknown, not zero"
