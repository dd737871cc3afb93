"""Spark end to end against the real Spark Connect server the test session starts
(tests/support/spark_server.py).

The catalog as the shell shows it, results as Arrow, the row cap's probe row and
server-side LIMIT, the time limit and Esc stopping the operation on the server,
the value search's dialect, the CLI on an `sc://` URL and the whole agent path
with the scripted model server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from astro_tui.catalog.introspect import load_catalog
from astro_tui.catalog.shell import Shell, ShellResult
from astro_tui.config import Settings
from astro_tui.data.cancel import CancelToken
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.database import Database
from astro_tui.data.engines.spark import engine as spark_engine
from astro_tui.data.errors import QueryCancelled, QueryTimeout
from tests.support.spark_attacks import RUNAWAY
from tests.support.spark_server import TOKEN, SparkServer
from tests.support.waiting import wait_for


@pytest.fixture(scope="module")
def spark(spark_server: SparkServer) -> Iterator[Database]:
    db = Database.open([spark_server.url], Settings())
    yield db
    db.close()


@pytest.fixture(scope="module")
def spark_catalog(spark: Database) -> Catalog:
    return load_catalog(spark)


def shell(catalog: Catalog, db: Database, command: str) -> list[str]:
    result = Shell(catalog, db).run(command)
    assert isinstance(result, ShellResult)
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def astro(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "astro_tui.cli", *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, **(env or {})},
        check=False,
    )


# the catalog ------------------------------------------------------------------------------------


def test_catalog_reads_databases_kinds_comments_types_and_estimates(spark_catalog: Catalog) -> None:
    assert [s.name for s in spark_catalog.schemas] == ["default", "sales"]
    sales = next(s for s in spark_catalog.schemas if s.name == "sales")
    assert sales.comment == "Orders and the customers who place them"
    tables = {t.name: t for t in sales.tables}
    assert sorted(tables) == ["big_orders", "customers", "orders"]
    orders = tables["orders"]
    assert orders.kind == "table" and tables["big_orders"].kind == "view"
    assert orders.comment == "One row per order; amount in euros"
    assert orders.row_count == 1500  # ANALYZE TABLE ran on it
    assert tables["customers"].row_count is None  # never analyzed: unknown, not a guess
    assert [(c.name, c.type) for c in orders.columns] == [
        ("id", "int"),
        ("customer_id", "int"),
        ("placed_on", "date"),
        ("status", "string"),
        ("amount", "decimal(10,2)"),
    ]
    assert orders.column("status").comment == "shipped, pending or refunded"
    assert tables["big_orders"].column("amount").comment == "In euros"
    assert orders.sql_name == "sales.orders" and orders.identifier_quote == "`"


def test_catalog_batches_survive_a_broken_view(spark_server: SparkServer) -> None:
    """A view over a dropped table fails analysis: it is shown without columns, the rest in full."""
    spark_server.sql("CREATE DATABASE IF NOT EXISTS scratch")
    spark_server.sql("CREATE TABLE scratch.base (a INT COMMENT 'kept') USING parquet")
    spark_server.sql("CREATE TABLE scratch.other (b STRING) USING parquet")
    spark_server.sql("CREATE VIEW scratch.broken AS SELECT a FROM scratch.base")
    spark_server.sql("DROP TABLE scratch.base")
    try:
        with Database.open([spark_server.url], Settings()) as db:
            scratch = next(s for s in db.load_catalog().schemas if s.name == "scratch")
        tables = {t.name: t for t in scratch.tables}
        assert tables["broken"].kind == "view" and tables["broken"].columns == ()
        assert [c.name for c in tables["other"].columns] == ["b"]
    finally:
        spark_server.sql("DROP DATABASE scratch CASCADE")


def test_shell_ls_cat_and_grep_show_the_comments(spark_catalog: Catalog, spark: Database) -> None:
    assert shell(spark_catalog, spark, "ls") == ["default/", "sales/"]
    listing = shell(spark_catalog, spark, "ls sales")
    assert "orders.table" in listing and "big_orders.view" in listing
    card = "\n".join(shell(spark_catalog, spark, "cat sales/orders.table"))
    assert "One row per order; amount in euros" in card
    assert "shipped, pending or refunded" in card
    found = shell(spark_catalog, spark, "grep -ril platinum .")
    assert len(found) == 1 and found[0].endswith("sales/customers.table")


# results ----------------------------------------------------------------------------------------


def test_results_are_arrow_with_decimals(spark: Database, spark_server: SparkServer) -> None:
    sql = "SELECT status, count(*) AS n, sum(amount) AS total FROM sales.orders GROUP BY 1 ORDER BY 1"
    result = spark.execute(sql)
    assert result.columns == ["status", "n", "total"]
    assert result.rows() == spark_server.sql(sql)
    assert isinstance(result.rows()[0][2], Decimal) and result.rows()[0][:2] == ("pending", 500)
    assert not any(f.metadata for f in result.table.schema)


def test_row_cap_is_applied_on_the_server(spark: Database) -> None:
    """A capped query over a trillion-row range returns: the plan's LIMIT stops the cluster at cap + 1."""
    result = spark.execute("SELECT id FROM range(1000000000000)", row_cap=5, timeout=120)
    assert result.truncated and result.row_count == 5


def test_explain_show_describe_and_table_are_allowed(spark: Database) -> None:
    plan = " ".join(str(r[0]) for r in spark.execute("EXPLAIN SELECT count(*) FROM sales.orders").rows())
    assert "Physical Plan" in plan
    assert ("sales", "orders", False) in spark.execute("SHOW TABLES IN sales").rows()
    described = spark.execute("DESCRIBE TABLE sales.orders").rows()
    assert ("status", "string", "shipped, pending or refunded") in described
    assert spark.execute("TABLE sales.customers", row_cap=3).row_count == 3
    assert spark.execute("VALUES (1, 'a'), (2, 'b')").row_count == 2


def test_string_literals_with_backslashes_mean_what_spark_reads(spark: Database) -> None:
    """The guard reads backslash escapes as Spark does: this is one harmless SELECT, run as such."""
    assert spark.execute("SELECT 'a\\'; DROP TABLE sales.orders; --' AS s").rows() == [
        ("a'; DROP TABLE sales.orders; --",)
    ]
    text = "it's a \\ back"
    assert spark.execute(f"SELECT {spark.dialect.literal(text)} AS s").rows() == [(text,)]


def test_value_search_dialect_runs_on_spark(spark: Database, spark_catalog: Catalog) -> None:
    from astro_tui.catalog.values import ValueScanner

    d = spark.dialect
    assert d.name == "Spark SQL" and d.quote == "`" and d.text_type == "STRING"
    values = [d.cast_text("name"), d.cast_text("tier")]
    sql = (
        f"SELECT col, {d.shortest('v')} AS example FROM (SELECT {d.unpivot(values)} "
        "FROM (SELECT name, tier FROM sales.customers LIMIT 50) AS s) AS u "
        "WHERE v ILIKE '%plat%' GROUP BY col"
    )
    assert spark.execute(sql).rows() == [(1, "platinum")]
    lines = ValueScanner(spark_catalog).find(spark, ["platinum", "refunded", "Germany"], time_budget_s=60)
    text = "\n".join(lines)
    assert "customers.tier" in text and "orders.status" in text and "customers.country" in text, text


# limits: time and cancel stop the operation on the server -----------------------------------------


def test_time_limit_stops_a_runaway_query_and_the_next_one_runs(spark: Database) -> None:
    started = time.monotonic()
    with pytest.raises(QueryTimeout) as caught:
        spark.execute(RUNAWAY, timeout=3)
    assert time.monotonic() - started < 30  # a guard against hangs, not a speed target
    assert "time limit" in str(caught.value) and "\n" not in str(caught.value)
    # local[2] has two task slots: were the runaway still running, this would wait behind it
    assert spark.execute("SELECT count(*) FROM sales.orders", timeout=60).rows() == [(1500,)]


def runaway_in_background(
    spark: Database, token: CancelToken
) -> tuple[threading.Thread, list[BaseException]]:
    """RUNAWAY under `token` in a started thread, and the list its exception lands in."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            spark.execute(RUNAWAY, timeout=300, cancel=token)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    return worker, failure


def test_cancel_token_stops_the_query_and_the_session_stays_usable(spark: Database) -> None:
    token = CancelToken()
    worker, failure = runaway_in_background(spark, token)
    wait_for(lambda: token.running, what="the query to start under the token")
    token.cancel()
    worker.join(timeout=120)
    assert not worker.is_alive()
    assert failure and isinstance(failure[0], QueryCancelled)
    assert spark.execute("SELECT count(*) FROM sales.customers", timeout=60).rows() == [(200,)]


def test_a_stop_as_the_query_is_sent_is_held_until_its_operation_settles(
    spark: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt in the first moments of the operation can leave an adaptive stage's
    job running on the server (BENCHMARKS.md): none is sent before `_SETTLE_S`."""
    engine = spark.engine
    assert isinstance(engine, spark_engine.SparkEngine)
    sent_at: list[float] = []
    fetching_at: list[float] = []
    fetch_started = threading.Event()
    interrupt = engine.session.interruptTag
    fetching = spark_engine._Running.fetching

    def recording_interrupt(tag: str) -> list[str]:
        sent_at.append(time.monotonic())
        return interrupt(tag)

    def recording_fetching(self: Any) -> None:
        fetching_at.append(time.monotonic())  # read before the engine's own clock, never after
        fetching(self)
        fetch_started.set()

    monkeypatch.setattr(engine.session, "interruptTag", recording_interrupt)
    monkeypatch.setattr(spark_engine._Running, "fetching", recording_fetching)
    token = CancelToken()
    worker, failure = runaway_in_background(spark, token)
    assert fetch_started.wait(120), "the query never reached its operation"
    token.cancel()
    token.cancel()  # a second stop (the time limit and a cancel can both come) is a no-op
    worker.join(timeout=120)
    assert not worker.is_alive()
    assert failure and isinstance(failure[0], QueryCancelled), failure
    assert sent_at, "no interrupt was sent"
    assert min(sent_at) >= fetching_at[0] + spark_engine._SETTLE_S
    assert spark.execute("SELECT count(*) FROM sales.customers", timeout=60).rows() == [(200,)]


def test_a_token_cancelled_before_the_query_stops_it_at_once(spark: Database) -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(QueryCancelled):
        spark.execute(RUNAWAY, timeout=300, cancel=token)


# targets ----------------------------------------------------------------------------------------------


def test_label_and_key_never_hold_the_token(spark: Database, spark_server: SparkServer) -> None:
    assert TOKEN not in spark.label and TOKEN not in spark.key
    assert spark.label == f"sc://localhost:{spark_server.port}/;token=***"


# the CLI ------------------------------------------------------------------------------------------


def test_cli_sql_and_shell_on_a_url(spark_server: SparkServer) -> None:
    out = astro("sql", "SELECT count(*) AS n FROM sales.orders", spark_server.url, "--format", "csv")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["n", "1500"]
    assert out.stderr == ""
    out = astro("shell", "cat sales/customers.table", spark_server.url)
    assert out.returncode == 0, out.stderr
    assert "Loyalty tier: bronze, silver or platinum" in out.stdout
    assert TOKEN not in out.stdout + out.stderr


def test_cli_named_connection(spark_server: SparkServer, tmp_path: Path) -> None:
    config = tmp_path / "cli-config"
    config.mkdir()
    (config / "config.toml").write_text(f'[connections.lake]\nurl = "{spark_server.url}"\n')
    env = {"ASTRO_CONFIG_DIR": str(config)}
    out = astro("sql", "SELECT count(*) AS n FROM sales.customers", "@lake", "--format", "csv", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["n", "200"]
    listing = astro("config", env=env)
    assert re.search(r"connection @lake +\= sc://localhost:\d+/;token=\*\*\*", listing.stdout), listing.stdout
    assert TOKEN not in listing.stdout + listing.stderr


def test_cli_refuses_a_write_and_reports_errors_with_one_line(spark_server: SparkServer) -> None:
    out = astro("sql", "DROP TABLE sales.orders", spark_server.url)
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0 and "refused" in out.stderr, out.stderr
    out = astro("sql", "SELECT nme FROM sales.customers", spark_server.url)
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0 and "Did you mean" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


# the app ------------------------------------------------------------------------------------------


async def test_app_opens_on_spark_with_tree_sql_and_escape(spark_server: SparkServer) -> None:
    from astro_tui.ui.panes.catalog import CatalogTree
    from tests.support.ui import SIZE, log_text, make_app, ready, submit, wait_until

    app = make_app(spark_server.url, Settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        tree = app.query_one(CatalogTree)
        assert [str(n.label.plain).split()[0] for n in tree.root.children] == ["default", "sales"]
        await submit(pilot, "/sql SELECT count(*) AS n FROM sales.customers")
        await wait_until(pilot, lambda: app.results.current is not None, timeout=60)
        assert app.results.current.result.rows() == [(200,)]
        await submit(pilot, "/sql " + RUNAWAY)
        await wait_until(pilot, lambda: app.session.sql_running)
        await pilot.press("escape")
        await wait_until(pilot, lambda: "cancelled" in log_text(app), timeout=60)
