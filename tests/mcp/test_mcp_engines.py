"""`astro mcp` on the real PostgreSQL and Spark Connect servers the suite starts: the same
promises as on DuckDB — the hostile corpus refused with the data unchanged, a runaway stopped
on the server by the time limit and by the client's cancel, and a structured result."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from astro_tui.config import Settings
from astro_tui.mcp.server import AstroServer
from astro_tui.session import Session
from tests.support.pg_server import DATABASE, OWNER_PASSWORD, PgServer
from tests.support.postgres_attacks import CORPUS as PG_CORPUS
from tests.support.postgres_attacks import (
    STOLEN,
    active_queries,
    leaked_values,
    sentinel,
    server_state,
)
from tests.support.spark_attacks import AIMED_AT, RUNAWAY
from tests.support.spark_attacks import INERT as SPARK_INERT
from tests.support.spark_attacks import REFUSED as SPARK_REFUSED
from tests.support.spark_attacks import leaked_values as spark_leaked
from tests.support.spark_server import TOKEN, SparkServer
from tests.support.waiting import wait_for, wait_for_async


def serve(url: str, state: Path, **limits: Any) -> Iterator[AstroServer]:
    with Session([url], Settings(**limits), state_dir=state) as session:
        server = AstroServer(session.open())
        try:
            yield server
        finally:
            server.close()


@pytest.fixture(scope="module")
def pg_mcp(pg_server: PgServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AstroServer]:
    yield from serve(pg_server.url(), tmp_path_factory.mktemp("mcp-pg"), query_timeout_s=2, row_cap=50)


@pytest.fixture(scope="module")
def pg_patient(pg_server: PgServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AstroServer]:
    """Limits far above any wait here: what stops a query is the client's cancel."""
    yield from serve(pg_server.url(), tmp_path_factory.mktemp("mcp-pg-patient"), query_timeout_s=600)


@pytest.fixture(scope="module")
def spark_mcp(spark_server: SparkServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AstroServer]:
    yield from serve(spark_server.url, tmp_path_factory.mktemp("mcp-spark"), query_timeout_s=300)


async def refused(client: Client, entry: dict[str, Any], passed: list[tuple[str, str]]) -> str:
    """Call run_sql with the entry; note it in `passed` unless refused in one line naming the reason."""
    result = await client.call_tool("run_sql", {"sql": entry["sql"]})
    message = result.content[0].text  # type: ignore[union-attr]
    if not result.is_error or "\n" in message or not message.startswith("run_sql: "):
        passed.append((entry["sql"], message))
    return message


# PostgreSQL -------------------------------------------------------------------------------------------------


async def test_postgres_structured_result_and_the_cap(pg_mcp: AstroServer) -> None:
    async with Client(pg_mcp) as client:
        result = await client.call_tool(
            "run_sql", {"sql": "SELECT status, count(*) AS n FROM sales.orders GROUP BY 1 ORDER BY 1"}
        )
        cut = await client.call_tool("run_sql", {"sql": "SELECT id FROM sales.orders ORDER BY id"})
        card = await client.call_tool("show_table", {"table_names": ["sales.orders"]})
    data = result.structured_content
    assert data is not None, result
    assert data["columns"] == [{"name": "status", "type": "VARCHAR"}, {"name": "n", "type": "BIGINT"}]
    assert data["rows"] == [["pending", 500], ["refunded", 500], ["shipped", 500]] and not data["truncated"]
    assert cut.structured_content is not None
    assert cut.structured_content["row_count"] == 50 and cut.structured_content["truncated"] is True
    assert "shipped, pending or refunded" in card.content[0].text  # type: ignore[union-attr]


async def test_postgres_hostile_corpus_over_mcp_changes_nothing(
    pg_mcp: AstroServer, pg_server: PgServer, pg_hostile: str, tmp_path: Path
) -> None:
    """As `test_security_postgres.py` does it: each statement on its database (the shop, or the
    hostile one whose functions and operators are traps), a sentinel session to aim at."""
    hostile = serve(pg_server.url(db=pg_hostile), tmp_path / "state")
    servers = {DATABASE: pg_mcp, pg_hostile: next(hostile)}
    passed: list[tuple[str, str]] = []
    messages: list[str] = []
    try:
        with sentinel(pg_server) as pid:
            before = server_state(pg_server, pg_hostile)
            async with Client(servers[DATABASE]) as shop, Client(servers[pg_hostile]) as trap:
                for entry in PG_CORPUS:
                    client = trap if entry.get("db", DATABASE) == pg_hostile else shop
                    messages.append(await refused(client, entry, passed))
            assert server_state(pg_server, pg_hostile) == before
            assert pg_server.psql(f"SELECT count(*) FROM pg_stat_activity WHERE pid = {pid}") == "1"
    finally:
        hostile.close()
    assert passed == []
    assert not [p for p in STOLEN if os.path.exists(p)]
    printed = "\n".join(messages)
    assert not [value for value in leaked_values(pg_server) if value and value in printed]


async def test_postgres_runaway_stopped_by_the_time_limit_and_by_a_cancel(
    pg_mcp: AstroServer, pg_patient: AstroServer, pg_server: PgServer
) -> None:
    async with Client(pg_mcp) as client:
        timed = await client.call_tool("run_sql", {"sql": "SELECT pg_sleep(60) /* astro-mcp-runaway-1 */"})
    assert timed.is_error and "time limit" in timed.content[0].text  # type: ignore[union-attr]
    wait_for(lambda: active_queries(pg_server, "astro-mcp-runaway-1") == 0)
    async with Client(pg_patient) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(
                client.call_tool, "run_sql", {"sql": "SELECT pg_sleep(600) /* astro-mcp-runaway-2 */"}
            )
            await wait_for_async(lambda: active_queries(pg_server, "astro-mcp-runaway-2") == 1)
            group.cancel_scope.cancel()
        await wait_for_async(lambda: active_queries(pg_server, "astro-mcp-runaway-2") == 0)
        after = await client.call_tool("run_sql", {"sql": "SELECT 1 AS ok"})
    assert after.structured_content is not None and after.structured_content["rows"] == [[1]]


def test_postgres_password_is_in_no_result_instructions_or_saved_conversation(pg_mcp: AstroServer) -> None:
    pg_mcp.conversations.close()
    saved = "".join(p.read_text() for p in (pg_mcp.session.state_dir / "conversations").glob("*.jsonl"))
    assert saved and "pg_sleep" in saved
    for text in (saved, pg_mcp.instructions or "", pg_mcp.session.label):
        assert OWNER_PASSWORD not in text


# Spark Connect ----------------------------------------------------------------------------------------------


async def test_spark_result_corpus_and_cancel(spark_mcp: AstroServer, spark_server: SparkServer) -> None:
    before = spark_server.fingerprint()
    async with Client(spark_mcp) as client:
        counted = await client.call_tool("run_sql", {"sql": "SELECT count(*) AS n FROM sales.orders"})
        assert counted.structured_content is not None and counted.structured_content["rows"] == [[1500]]
        passed: list[tuple[str, str]] = []
        for entry in SPARK_REFUSED:
            await refused(client, entry, passed)
        assert passed == []
        for entry in SPARK_INERT:  # `${…}` stays text on a session that proved substitution off
            result = await client.call_tool("run_sql", {"sql": entry["sql"]})
            shown = result.model_dump_json()
            assert not any(v in shown for v in spark_leaked(spark_server)), (entry, shown)
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "run_sql", {"sql": RUNAWAY})
            await wait_for_async(lambda: spark_mcp.calls.running == 1, what="the runaway to run")
            group.cancel_scope.cancel()
        # the limit is 300 s: only the cancel ends it within the wait's guard
        await wait_for_async(lambda: spark_mcp.calls.running == 0, what="the runaway to stop")
        after = await client.call_tool("run_sql", {"sql": "SELECT count(*) AS n FROM sales.customers"})
        assert after.structured_content is not None and after.structured_content["rows"] == [[200]]
    assert spark_server.fingerprint() == before
    assert not any(p.exists() for p in AIMED_AT)
    assert TOKEN not in str(spark_mcp.session.label)
