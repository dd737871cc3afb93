"""The sample warehouse: deterministic, built once, and true to its notes.

The shape tests check the story that context.md tells (growth, the flaky DAG,
statuses, NULLs), because the agent will repeat that story to users.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from astro_tui.data.engines.duckdb import sample
from tests.support.sample import cached_sample

SCHEMAS = ("sales", "marketing", "platform")


@pytest.fixture(scope="module")
def ensured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    """The build the shape tests share, through the app's `ensure_sample`. The build
    itself is the one cached across sessions (made by the same `build_sample`, keyed on
    its source), copied in: a second 15 s build per session would test nothing new, and
    `test_same_content_whatever_the_thread_count` still builds from scratch every session."""
    cache = tmp_path_factory.mktemp("cache")
    messages: list[str] = []

    def copy_of_the_cached_build(target: Path, **_: object) -> float:
        shutil.copyfile(cached_sample(), target)
        return 0.0

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASTRO_CACHE_DIR", str(cache))
        mp.setattr(sample, "build_sample", copy_of_the_cached_build)
        path = sample.ensure_sample(on_build=messages.append)
    yield path, messages


@pytest.fixture(scope="module")
def warehouse(ensured: tuple[Path, list[str]]) -> Path:
    return ensured[0]


@pytest.fixture(scope="module")
def con(warehouse: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect(str(warehouse), read_only=True)
    yield connection
    connection.close()


def scalar(con: duckdb.DuckDBPyConnection, sql: str) -> object:
    row = con.execute(sql).fetchone()
    assert row is not None
    return row[0]


# --- building ---------------------------------------------------------------------------------


def test_ensure_sample_builds_once_then_reuses(
    ensured: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, messages = ensured
    assert path.is_file()
    assert path.parent.name.startswith("cache")
    assert path.name == f"warehouse-{sample.build_digest()}.duckdb"
    assert len(messages) == 1 and messages[0].startswith("Building the sample warehouse")

    monkeypatch.setenv("ASTRO_CACHE_DIR", str(path.parent))
    assert sample.sample_exists()
    before = path.stat().st_mtime_ns
    again: list[str] = []
    assert sample.ensure_sample(on_build=again.append) == path
    assert again == []
    assert path.stat().st_mtime_ns == before


def test_build_leaves_only_the_target(warehouse: Path) -> None:
    assert sorted(p.name for p in warehouse.parent.iterdir()) == [warehouse.name]


def test_same_content_whatever_the_thread_count(
    warehouse: Path, con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    if scalar(con, "SELECT current_setting('threads')") == 1:
        reference = tmp_path / "two-threads.duckdb"
        sample.build_sample(reference, threads=2)
    else:
        reference = warehouse
    single = tmp_path / "one-thread.duckdb"
    seconds = sample.build_sample(single, threads=1)
    assert seconds > 0
    assert sample.content_digest(single) == sample.content_digest(reference)


def test_content_digest_sees_one_changed_value(warehouse: Path, tmp_path: Path) -> None:
    copy = tmp_path / "edited.duckdb"
    shutil.copyfile(warehouse, copy)
    original = sample.content_digest(copy)
    with duckdb.connect(str(copy)) as edit:
        edit.execute("UPDATE sales.order_items SET quantity = quantity + 1 WHERE order_id = 1000")
    assert sample.content_digest(copy) != original


def test_build_files_and_digest() -> None:
    files = sample.build_sql_files()
    assert [f.name for f in files] == sorted(f.name for f in files)
    assert len(files) >= 2 and all(f.suffix == ".sql" for f in files)
    digest = sample.build_digest()
    assert len(digest) == 16 and int(digest, 16) >= 0
    assert digest == sample.build_digest()


def test_build_sql_uses_no_nondeterministic_functions() -> None:
    sql = "\n".join(f.read_text(encoding="utf-8").lower() for f in sample.build_sql_files())
    text = re.sub(r"--[^\n]*", "", sql)
    for banned in ("random()", "uuid()", "gen_random_uuid", "now()", "current_timestamp", "today()"):
        assert banned not in text


# --- shape ------------------------------------------------------------------------------------


def test_schemas_tables_views(con: duckdb.DuckDBPyConnection) -> None:
    schemas = {r[0] for r in con.execute("SELECT DISTINCT schema_name FROM duckdb_tables()").fetchall()}
    assert set(SCHEMAS) <= schemas
    assert scalar(con, "SELECT count(*) FROM duckdb_tables()") >= 12
    assert scalar(con, "SELECT count(*) FROM duckdb_views() WHERE NOT internal") >= 1
    views = "SELECT count(*) FROM information_schema.views WHERE table_name = 'daily_revenue'"
    assert scalar(con, views) == 1


def test_largest_fact_table_has_half_a_million_rows(con: duckdb.DuckDBPyConnection) -> None:
    counts = [
        scalar(con, f"SELECT count(*) FROM {s}.{t}")
        for s, t in con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()
    ]
    assert max(counts) >= 500_000


def test_dates_span_two_years(con: duckdb.DuckDBPyConnection) -> None:
    span = scalar(con, "SELECT max(order_date) - min(order_date) FROM sales.orders")
    assert span >= 729
    first, last = con.execute("SELECT min(order_date), max(order_date) FROM sales.orders").fetchone()
    assert (first.isoformat(), last.isoformat()) == ("2024-01-01", "2025-12-31")


def test_every_table_view_and_column_has_a_comment(con: duckdb.DuckDBPyConnection) -> None:
    bare_tables = con.execute(
        "SELECT schema_name || '.' || table_name FROM duckdb_tables() WHERE coalesce(trim(comment), '') = '' "
        "UNION ALL SELECT schema_name || '.' || view_name FROM duckdb_views() "
        "WHERE NOT internal AND coalesce(trim(comment), '') = ''"
    ).fetchall()
    bare_columns = con.execute(
        "SELECT schema_name || '.' || table_name || '.' || column_name FROM duckdb_columns() "
        f"WHERE schema_name IN {SCHEMAS} AND coalesce(trim(comment), '') = ''"
    ).fetchall()
    assert bare_tables == []
    assert bare_columns == []


def test_revenue_column_comment_mentions_revenue(con: duckdb.DuckDBPyConnection) -> None:
    comment = scalar(
        con,
        "SELECT comment FROM duckdb_columns() WHERE schema_name = 'sales' "
        "AND table_name = 'daily_revenue' AND column_name = 'net_revenue'",
    )
    assert "revenue" in str(comment).lower()


def test_keys_are_declared(con: duckdb.DuckDBPyConnection) -> None:
    kinds = dict(
        con.execute(
            "SELECT constraint_type, count(*) FROM duckdb_constraints() "
            "WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') GROUP BY ALL"
        ).fetchall()
    )
    assert kinds["PRIMARY KEY"] >= 16
    assert kinds["FOREIGN KEY"] >= 10
    fk_tables = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'"
        ).fetchall()
    }
    assert {"orders", "order_items", "refunds", "ad_spend", "dag_runs"} <= fk_tables


def test_money_is_decimal(con: duckdb.DuckDBPyConnection) -> None:
    types = dict(
        con.execute(
            "SELECT table_name || '.' || column_name, data_type FROM duckdb_columns() "
            "WHERE schema_name = 'sales' "
            "AND column_name IN ('subtotal', 'line_amount', 'amount', 'list_price')"
        ).fetchall()
    )
    assert set(types.values()) == {"DECIMAL(12,2)"}


def test_east_china_grows_fastest(con: duckdb.DuckDBPyConnection) -> None:
    growth = con.execute(
        "SELECT region_name, sum(net_revenue) FILTER (WHERE year(order_date) = 2025) "
        "/ sum(net_revenue) FILTER (WHERE year(order_date) = 2024) AS g "
        "FROM sales.daily_revenue GROUP BY region_name ORDER BY g DESC"
    ).fetchall()
    (leader, lead), (_, runner_up) = growth[0], growth[1]
    assert leader == "East China"
    assert lead > 2 and lead > 1.5 * runner_up
    assert len(growth) >= 5


def test_november_and_december_peak(con: duckdb.DuckDBPyConnection) -> None:
    peak, rest = con.execute(
        "SELECT avg(r) FILTER (WHERE month(d) IN (11, 12)), avg(r) FILTER (WHERE month(d) NOT IN (11, 12)) "
        "FROM (SELECT order_date AS d, sum(net_revenue) AS r FROM sales.daily_revenue "
        "      WHERE year(order_date) = 2024 GROUP BY ALL)"
    ).fetchone()
    assert peak > 1.25 * rest
    weekend, weekday = con.execute(
        "SELECT avg(n) FILTER (WHERE isodow(d) >= 6), avg(n) FILTER (WHERE isodow(d) < 6) "
        "FROM (SELECT order_date AS d, count(*) AS n FROM sales.orders GROUP BY ALL)"
    ).fetchone()
    assert weekend > weekday


def test_flaky_dag_fails_most(con: duckdb.DuckDBPyConnection) -> None:
    rates = con.execute(
        "SELECT dag_id, avg(CASE WHEN state = 'failed' THEN 1 ELSE 0 END) AS rate "
        "FROM platform.dag_runs WHERE state IN ('success', 'failed') GROUP BY dag_id ORDER BY rate DESC"
    ).fetchall()
    (flaky, rate), (_, next_rate) = rates[0], rates[1]
    assert flaky == "marketing_ad_spend_sync"
    assert rate > 0.15 and rate > 2 * next_rate
    assert scalar(con, "SELECT dag_id FROM platform.dag_health ORDER BY failure_rate DESC LIMIT 1") == flaky


def test_ad_spend_gaps_follow_failed_syncs(con: duckdb.DuckDBPyConnection) -> None:
    mismatched = scalar(
        con,
        "WITH ok AS (SELECT DISTINCT CAST(logical_date AS DATE) AS d FROM platform.dag_runs "
        "            WHERE dag_id = 'marketing_ad_spend_sync' AND state = 'success'), "
        "spent AS (SELECT DISTINCT spend_date AS d FROM marketing.ad_spend) "
        "SELECT count(*) FROM ok FULL JOIN spent USING (d) WHERE ok.d IS NULL OR spent.d IS NULL",
    )
    assert mismatched == 0
    assert scalar(con, "SELECT 731 - count(DISTINCT spend_date) FROM marketing.ad_spend") > 20


def test_statuses_cancelled_and_refunded(con: duckdb.DuckDBPyConnection) -> None:
    counts = dict(con.execute("SELECT status, count(*) FROM sales.orders GROUP BY ALL").fetchall())
    assert set(counts) == {"pending", "shipped", "completed", "cancelled", "refunded"}
    assert counts["cancelled"] > 1000 and counts["refunded"] > 1000
    shipped_cancelled = (
        "SELECT count(*) FROM sales.orders WHERE status = 'cancelled' AND shipped_at IS NOT NULL"
    )
    assert scalar(con, shipped_cancelled) == 0
    unrefunded = scalar(
        con,
        "SELECT count(*) FROM sales.orders o WHERE status = 'refunded' AND NOT EXISTS "
        "(SELECT 1 FROM sales.refunds r WHERE r.order_id = o.order_id AND NOT r.is_partial "
        " AND r.amount = o.subtotal)",
    )
    assert unrefunded == 0
    assert scalar(con, "SELECT count(*) FROM sales.refunds WHERE is_partial") > 1000


def test_revenue_view_matches_the_written_definition(con: duckdb.DuckDBPyConnection) -> None:
    by_hand = scalar(
        con,
        "SELECT sum(o.subtotal) - coalesce((SELECT sum(r.amount) FROM sales.refunds r JOIN sales.orders o2 "
        "  USING (order_id) JOIN sales.customers c2 USING (customer_id) "
        "  WHERE o2.status IN ('completed', 'shipped') AND NOT c2.is_test), 0) "
        "FROM sales.orders o JOIN sales.customers c USING (customer_id) "
        "WHERE o.status IN ('completed', 'shipped') AND NOT c.is_test",
    )
    assert scalar(con, "SELECT sum(net_revenue) FROM sales.daily_revenue") == by_hand
    assert scalar(con, "SELECT count(*) FROM sales.customers WHERE is_test") > 0
    lines = scalar(
        con,
        "SELECT count(*) FROM sales.orders o "
        "JOIN (SELECT order_id, sum(line_amount) s FROM sales.order_items GROUP BY ALL) i USING (order_id) "
        "WHERE i.s <> o.subtotal OR o.total_amount <> o.subtotal + o.shipping_fee",
    )
    assert lines == 0


def test_fiscal_year_starts_in_february(con: duckdb.DuckDBPyConnection) -> None:
    rows = dict(
        con.execute(
            "SELECT CAST(date_day AS VARCHAR), fiscal_year FROM sales.calendar "
            "WHERE date_day IN ('2025-01-31', '2025-02-01')"
        ).fetchall()
    )
    assert rows == {"2025-01-31": 2024, "2025-02-01": 2025}


NULLABLE = [
    ("sales.customers", "email"),
    ("sales.customers", "phone"),
    ("sales.customers", "birth_year"),
    ("sales.orders", "coupon_code"),
    ("sales.orders", "shipped_at"),
    ("sales.orders", "delivered_at"),
    ("sales.stores", "closed_on"),
    ("sales.products", "discontinued_on"),
    ("sales.products", "weight_kg"),
    ("marketing.campaigns", "end_date"),
    ("marketing.sessions", "referrer"),
    ("marketing.sessions", "customer_id"),
    ("marketing.sessions", "campaign_id"),
    ("platform.dag_runs", "end_date"),
]


@pytest.mark.parametrize(("table", "column"), NULLABLE)
def test_documented_nulls_exist(con: duckdb.DuckDBPyConnection, table: str, column: str) -> None:
    assert scalar(con, f"SELECT count(*) FROM {table} WHERE {column} IS NULL") > 0
    assert f"`{table}.{column}`" in sample.context_notes()


def test_completed_orders_mostly_delivered(con: duckdb.DuckDBPyConnection) -> None:
    share = scalar(
        con,
        "SELECT avg(CASE WHEN delivered_at IS NULL THEN 1 ELSE 0 END) FROM sales.orders "
        "WHERE status = 'completed'",
    )
    assert 0 < share < 0.05


def test_undeclared_keys_still_hold(con: duckdb.DuckDBPyConnection) -> None:
    orphans = {
        "sessions.order_id": "SELECT count(*) FROM marketing.sessions s WHERE order_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM sales.orders o WHERE o.order_id = s.order_id)",
        "sessions.customer_id": "SELECT count(*) FROM marketing.sessions s WHERE customer_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM sales.customers c WHERE c.customer_id = s.customer_id)",
        "sessions.campaign_id": "SELECT count(*) FROM marketing.sessions s WHERE campaign_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM marketing.campaigns c WHERE c.campaign_id = s.campaign_id)",
        "task_instances.run_id": "SELECT count(*) FROM platform.task_instances t "
        "WHERE NOT EXISTS (SELECT 1 FROM platform.dag_runs r WHERE r.run_id = t.run_id)",
        "orders before signup": "SELECT count(*) FROM sales.orders o JOIN sales.customers c "
        "USING (customer_id) WHERE o.order_ts < c.signup_at",
    }
    assert {name: scalar(con, sql) for name, sql in orphans.items()} == dict.fromkeys(orphans, 0)


def test_context_notes_name_the_facts(con: duckdb.DuckDBPyConnection) -> None:
    notes = sample.context_notes()
    for fact in (
        "East China",
        "marketing_ad_spend_sync",
        "1 February",
        "FY2025 = 2025-02-01 to 2026-01-31",
        "sales.daily_revenue",
        "is_test",
        "sample_weight",
    ):
        assert fact in notes
    for status in ("pending", "shipped", "completed", "cancelled", "refunded"):
        assert f"`{status}`" in notes


def test_ensure_sample_removes_builds_of_earlier_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASTRO_CACHE_DIR", str(tmp_path))
    stale = tmp_path / "warehouse-0123456789abcdef.duckdb"
    stale.write_bytes(b"an older build")
    monkeypatch.setattr(sample, "build_sample", lambda target, **_: target.write_bytes(b"new") and 0.0)
    path = sample.ensure_sample()
    assert path.is_file() and path != stale
    assert not stale.exists()
