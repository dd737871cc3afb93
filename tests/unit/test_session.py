"""The session every front end drives, as its Python API: `astro_tui.open(...)` on real
databases (DuckDB, the suite's PostgreSQL server), the fake model server for `ask`."""

from __future__ import annotations

import ast
import asyncio
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import astro_tui
from astro_tui.agent.conversations import load_conversation
from astro_tui.config import Settings
from astro_tui.data.errors import GuardError, QueryCancelled, TargetError
from astro_tui.errors import AstroError
from astro_tui.session import (
    AskFailed,
    CatalogLoaded,
    Opened,
    OpenFailed,
    QueryFailed,
    ResultAdded,
    Session,
    SessionClosed,
)
from tests.support.fake_openai import FakeOpenAI, error, text_reply, tool_call_reply
from tests.support.imports import _imports
from tests.support.pg_server import PgServer
from tests.support.ui import REVENUE_SQL, shop_db
from tests.support.waiting import HANG_GUARD_S, wait_for

__all__ = ["shop_db"]

RUNAWAY_SQL = "SELECT count(*) FROM range(100000000000) a, range(10) b"


def test_sql_gives_pandas_and_arrow_from_duckdb(shop_db: Path, tmp_path: Path) -> None:
    with astro_tui.open(shop_db, settings=Settings(), state_dir=tmp_path) as session:
        result = session.sql(REVENUE_SQL)
        frame = result.to_pandas()
        assert isinstance(frame, pd.DataFrame)
        assert list(frame.columns) == ["region", "revenue"]
        assert frame["region"].tolist() == [f"region_{i}" for i in range(5)]
        revenue = session.db.execute("SELECT sum(amount) FROM sales.orders").rows()[0][0]  # type: ignore[union-attr]
        assert frame["revenue"].sum() == pytest.approx(float(revenue))
        assert result.to_arrow().num_rows == 5 and result.columns == ["region", "revenue"]
        assert result.name == "sql 1 · from sales.orders" and result.sql == REVENUE_SQL
        assert session.sql("SELECT 1 AS one").name == "sql 2 · SELECT 1 AS one"
        assert [r.name for r in session.results] == ["sql 1 · from sales.orders", "sql 2 · SELECT 1 AS one"]


def test_the_same_guard_and_limits_as_everywhere(shop_db: Path, tmp_path: Path) -> None:
    with astro_tui.open(shop_db, settings=Settings(row_cap=7), state_dir=tmp_path) as session:
        with pytest.raises(GuardError, match=r"^refused: DROP"):
            session.sql("DROP TABLE sales.orders")
        with pytest.raises(GuardError):
            session.sql("SELECT * FROM read_csv('/etc/passwd')")
        cut = session.sql("SELECT * FROM sales.orders")
        assert cut.row_count == 7 and cut.truncated
        assert len(cut.to_pandas()) == 7
        assert session.sql("SELECT count(*) AS n FROM sales.orders").rows() == [(2000,)]


def test_overrides_and_the_shell(shop_db: Path, tmp_path: Path) -> None:
    with astro_tui.open(shop_db, state_dir=tmp_path, row_cap=3) as session:
        assert session.settings.row_cap == 3 and session.sql("SELECT * FROM range(10)").truncated
        listing = session.shell("ls /sales")
        assert listing.exit_code == 0 and "orders.table" in listing.output
        assert "revenue_by_region.view" in listing.output
        session.shell("cd /sales")
        assert "orders.table" in session.shell("ls").output, "the working directory is kept"
        assert session.shell("ls /nope").exit_code != 0


def test_tools_lent_to_an_outside_agent_and_its_saved_conversation(shop_db: Path, tmp_path: Path) -> None:
    """`tools()`: the agent's own tools, a set of their own per caller (`cd`), the same guard;
    `save_conversation()`: beside the agent's, listed for this database."""
    from astro_tui.agent.conversations import load_conversation, new_conversation_id
    from astro_tui.agent.history import Entry, Turn

    with astro_tui.open(shop_db, settings=Settings(row_cap=5), state_dir=tmp_path) as session:
        one, two = session.tools(), session.tools()
        assert {"shell", "run_sql", "submit_result", "read_context"} <= set(one.names)
        one["shell"].func("cd /sales")
        assert one["shell"].func("pwd").strip() == "/sales" and two["shell"].func("pwd").strip() == "/"
        with pytest.raises(GuardError, match=r"^refused: DROP"):
            one["run_sql"].func("DROP TABLE sales.orders")
        cut = one["run_sql"].func("SELECT * FROM sales.orders").result
        assert cut.row_count == 5 and cut.truncated and cut.total_rows == 2000
        turn = Turn(question="MCP run_sql: SELECT 1", status="text")
        turn.entries.append(Entry({"role": "user", "content": "MCP run_sql: SELECT 1"}))
        conversation_id = new_conversation_id()
        session.save_conversation(conversation_id, [turn], created="2026-01-02T03:04:05", by="MCP client x")
        assert [c.id for c in session.conversations()] == [conversation_id]
    session.save_conversation(conversation_id, [turn, turn], created="2026-01-02T03:04:05", by="MCP client x")
    header, turns = load_conversation(tmp_path, conversation_id)
    assert header["model"] == "MCP client x" and header["db_label"] == session.label
    assert [t.question for t in turns] == ["MCP run_sql: SELECT 1"] * 2, "saved after the close too"


def test_a_target_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TargetError) as raised:
        astro_tui.open(tmp_path / "missing.duckdb", settings=Settings(), state_dir=tmp_path)
    assert "\n" not in str(raised.value) and "missing.duckdb" in str(raised.value)


def test_events_say_what_happened_in_order(shop_db: Path, tmp_path: Path) -> None:
    """With the catalog cached (as by any earlier test on this file, whichever worker runs it)
    the cached outline is whole, so no `CatalogOutlined` comes before `CatalogLoaded`."""
    with Session([str(shop_db)], Settings(), state_dir=tmp_path) as warm:
        warm.open()
    seen: list[Any] = []
    session = Session([str(shop_db)], Settings(), state_dir=tmp_path)
    session.listen(seen.append)
    with session:
        session.open()
        session.sql("SELECT 42 AS answer")
        with pytest.raises(AstroError):
            session.sql("SELECT nope FROM sales.orders")
    kinds = [type(e) for e in seen]
    assert kinds == [Opened, CatalogLoaded, ResultAdded, QueryFailed], kinds
    assert seen[2].result.rows() == [(42,)] and "nope" in seen[3].message
    with pytest.raises(SessionClosed):
        session.sql("SELECT 1")


def test_open_failure_is_an_event_and_an_error(tmp_path: Path) -> None:
    seen: list[Any] = []
    session = Session([str(tmp_path / "gone.duckdb")], Settings(), state_dir=tmp_path)
    session.listen(seen.append)
    with pytest.raises(AstroError) as raised:
        session.open()
    assert [type(e) for e in seen] == [OpenFailed] and seen[0].message == str(raised.value)
    session.close()


def test_cancel_sql_stops_the_query_in_the_engine(shop_db: Path, tmp_path: Path) -> None:
    with astro_tui.open(shop_db, settings=Settings(query_timeout_s=60), state_dir=tmp_path) as session:
        outcome: list[BaseException] = []

        def run() -> None:
            try:
                session.sql(RUNAWAY_SQL)
            except BaseException as exc:
                outcome.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        wait_for(lambda: session.sql_running, HANG_GUARD_S)
        assert session.cancel_sql()
        worker.join(HANG_GUARD_S)
        assert not worker.is_alive() and isinstance(outcome[0], QueryCancelled)
        assert not session.sql_running and not session.cancel_sql()
        assert session.sql("SELECT 2 AS two").rows() == [(2,)], "the session is usable after a cancel"


def _answer(fake: FakeOpenAI) -> None:
    fake.script(
        tool_call_reply([("run_sql", {"sql": "-- orders by region\n" + REVENUE_SQL})]),
        tool_call_reply(
            [
                (
                    "submit_result",
                    {
                        "inputs": {"rev": REVENUE_SQL, "n": "SELECT count(*) AS n FROM sales.orders"},
                        "template": "{{ n.value }} orders over {{ rev.row_count }} regions.",
                        "title": "Revenue by region",
                    },
                )
            ]
        ),
    )


def test_ask_returns_the_answer_with_its_sql_and_data(
    shop_db: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    _answer(fake_openai)
    with astro_tui.open(shop_db, settings=fake_openai.settings(), state_dir=tmp_path) as session:
        reply = session.ask("revenue by region?")
        assert reply.verified and reply.kind == "result"
        assert reply.text == "2000 orders over 5 regions."
        assert reply.sql == [REVENUE_SQL, "SELECT count(*) AS n FROM sales.orders"]
        assert reply.data is not None and reply.data.name == "A1 rev", "the main result: the larger input"
        frame = reply.data.to_pandas()
        assert frame["region"].tolist() == [f"region_{i}" for i in range(5)]
        assert [r.name for r in session.results] == [
            "df_1 · revenue by region?",
            "A1 n",
            "A1 rev",
        ]
        assert reply.conversation_id == session.conversation_id and reply.tool_calls == 2
    fake_openai.assert_script_consumed()


def test_verified_is_the_same_promise_in_the_api_the_results_and_the_saved_answer(
    shop_db: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """One typed number, and every front end says unverified: the reply, the named results (the
    app's results pane) and the saved conversation that `astro replay` reads."""
    submit = {
        "inputs": {"n": "SELECT count(*) AS n FROM sales.orders"},
        "template": "Exactly 42 orders, {{ n.value }}.",
    }
    fake_openai.script(tool_call_reply([("submit_result", submit)]))
    with astro_tui.open(shop_db, settings=fake_openai.settings(), state_dir=tmp_path) as session:
        reply = session.ask("how many orders?")
        assert reply.text == "Exactly 42 orders, 2000." and reply.kind == "result"
        assert reply.verified is False and reply.answer is not None
        assert reply.answer.unverified_numbers == ("42",)
        assert [r.verified for r in session.results] == [False]
        [turn] = load_conversation(tmp_path, session.conversation_id)[1]
        assert turn.answer is not None and turn.answer.verified is False
        assert turn.answer.unverified_numbers == ("42",)


def test_ask_from_code_that_runs_an_event_loop(
    shop_db: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A notebook cell runs inside an event loop; `ask` blocks it and still works, twice
    (the model client stays on the session's own loop)."""
    fake_openai.script(tool_call_reply([("send_message", {"message": "Which year?"})]))
    fake_openai.script(text_reply("I think about 12."))
    with astro_tui.open(shop_db, settings=fake_openai.settings(), state_dir=tmp_path) as session:

        async def cell() -> tuple[Any, Any]:
            return session.ask("revenue?"), session.ask("2025")

        first, second = asyncio.run(cell())
    assert first.kind == "message" and first.text == "Which year?" and not first.verified
    assert second.kind == "unverified" and second.text == "I think about 12." and second.data is None
    fake_openai.assert_script_consumed()


def test_ask_without_an_answer_raises_one_line(
    shop_db: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(error(404, "model not found"))
    session = astro_tui.open(shop_db, settings=fake_openai.settings(), state_dir=tmp_path)
    with session, pytest.raises(AskFailed) as raised:
        session.ask("revenue?")
    assert raised.value.kind == "not_found" and "\n" not in str(raised.value)
    session = astro_tui.open(shop_db, settings=Settings(), state_dir=tmp_path)
    with session, pytest.raises(AskFailed, match="no model configured") as failed:
        session.ask("revenue?")
    assert failed.value.kind == "config"


def test_postgresql_to_pandas(pg_server: PgServer, tmp_path: Path) -> None:
    with astro_tui.open(pg_server.url(), settings=Settings(), state_dir=tmp_path) as session:
        assert session.label.startswith("postgresql://") and "***" in session.label
        result = session.sql(
            "SELECT status, count(*) AS n, sum(amount) AS total FROM sales.orders GROUP BY 1 ORDER BY 1"
        )
        frame = result.to_pandas()
        assert frame["status"].tolist() == ["pending", "refunded", "shipped"]
        assert frame["n"].tolist() == [500, 500, 500]
        truth = pg_server.psql("SELECT sum(amount) FROM sales.orders")
        assert sum(Decimal(str(v)) for v in frame["total"]) == Decimal(truth)
        with pytest.raises(GuardError):
            session.sql("UPDATE sales.orders SET amount = 0")
        assert "orders.table" in session.shell("ls /sales").output


PACKAGE = Path(astro_tui.__file__).parent
FRONT_ENDS = ("ui", "headless", "cli.py", "mcp")
SESSION_ONLY = {
    "Agent",
    "load_catalog",
    "Database.open",
    "open_engine",
    "build_registry",
    "ToolContext",
    "ExploreTools",
    "SqlTools",
    "NoteTools",
    "OutputTools",
    "Workspace",
    "ContextNotes",
    "save_conversation",
}
"""What only the session does: open, read the catalog, build the agent or its tools, save."""
BELOW_THE_SESSION = (
    "agent",
    "catalog",
    "data",
    "llm",
    "replay",
    "config.py",
    "display.py",
    "errors.py",
    "files.py",
    "text.py",
)


def _modules(*parts: str) -> list[Path]:
    return [
        p
        for part in parts
        for p in ([PACKAGE / part] if part.endswith(".py") else (PACKAGE / part).rglob("*.py"))
    ]


def _called(path: Path) -> set[str]:
    """`Agent`, `load_catalog`, `Database.open`: the names a module calls."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.add(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                found.add(f"{func.value.id}.{func.attr}")
    return found


def test_front_ends_drive_the_session_and_imports_point_one_way() -> None:
    """No front end builds the agent or its tools, reads a catalog, opens a database or saves a
    conversation itself; nothing the session stands on imports it or a front end, the session
    imports no Textual, and no front end imports another (the command line starts them all)."""
    front = _modules(*FRONT_ENDS)
    assert len(front) > 10 and any(p.parent.name == "mcp" for p in front), "the front ends were found"
    doing = {
        f"{path.relative_to(PACKAGE)}: {name}" for path in front for name in _called(path) & SESSION_ONLY
    }
    assert not doing, sorted(doing)
    ends = ("astro_tui.ui", "astro_tui.headless", "astro_tui.cli", "astro_tui.mcp")
    upward = {
        f"{path.relative_to(PACKAGE)}: {module}"
        for path in _modules(*BELOW_THE_SESSION)
        for module in _imports(path)
        if module.startswith(("astro_tui.session", *ends))
    }
    assert not upward, sorted(upward)
    session = {m for path in _modules("session") for m in _imports(path)}
    assert not {m for m in session if m.startswith(("textual", *ends))}
    across = {
        f"{path.relative_to(PACKAGE)}: {module}"
        for path in front
        for module in _imports(path)
        if module.startswith(ends)
        and module.split(".")[1] != path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        and path != PACKAGE / "cli.py"  # the command line starts each of them
    }
    assert not across, sorted(across)
