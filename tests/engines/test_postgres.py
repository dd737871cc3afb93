"""PostgreSQL end to end against the real server the test session starts (tests/support/pg_server.py).

The catalog as the shell shows it, results as Arrow, the row cap's probe row,
libpq's conventions (env, .pgpass, service file, named connections), the CLI on a
`postgresql://` URL and the whole agent path with the scripted model server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from astro_tui.catalog.introspect import load_catalog
from astro_tui.catalog.shell import Shell, ShellResult
from astro_tui.config import Settings
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.database import Database
from tests.support.pg_server import DATABASE, OWNER, OWNER_PASSWORD, PgServer


@pytest.fixture(scope="module")
def pg(pg_server: PgServer) -> Iterator[Database]:
    db = Database.open([pg_server.url()], Settings())
    yield db
    db.close()


@pytest.fixture(scope="module")
def pg_catalog(pg: Database) -> Catalog:
    return load_catalog(pg)


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
        timeout=180,
        env={**os.environ, **(env or {})},
        check=False,
    )


# the catalog ------------------------------------------------------------------------------------


def test_catalog_reads_schemas_kinds_keys_comments_and_estimates(pg_catalog: Catalog) -> None:
    assert [s.name for s in pg_catalog.schemas] == ["public", "sales"]
    sales = next(s for s in pg_catalog.schemas if s.name == "sales")
    assert sales.comment == "Orders and the customers who place them"
    orders = pg_catalog.find_table("sales.orders")
    assert orders is not None and orders.kind == "table"
    assert orders.comment == "One row per order; amount in euros"
    assert orders.primary_key == ("id",)
    (fk,) = orders.foreign_keys
    assert (fk.columns, fk.ref_schema, fk.ref_table, fk.ref_columns) == (
        ("customer_id",),
        "sales",
        "customers",
        ("id",),
    )
    assert orders.row_count == 1500
    status = orders.column("status")
    assert status is not None and status.type == "text" and not status.nullable
    assert status.comment == "shipped, pending or refunded"
    amount = orders.column("amount")
    assert amount is not None and amount.type == "numeric(10,2)"
    assert pg_catalog.find_table("sales.big_orders").kind == "view"  # type: ignore[union-attr]
    matview = pg_catalog.find_table("sales.revenue_by_country")
    assert matview is not None and matview.kind == "view"
    assert matview.comment == "Revenue per country, refreshed nightly"


def test_partitioned_table_shown_once_with_the_partitions_rows(pg_catalog: Catalog) -> None:
    names = [t.name for t in pg_catalog.tables]
    assert "events" in names
    assert not [n for n in names if n.startswith("events_")]
    events = pg_catalog.find_table("public.events")
    assert events is not None and events.row_count == 300
    assert events.comment == "Site events, partitioned by month"


def test_system_schemas_and_sequences_are_hidden(pg_catalog: Catalog) -> None:
    schemas = {s.name for s in pg_catalog.schemas}
    assert not schemas & {"pg_catalog", "information_schema", "pg_toast"}
    assert pg_catalog.find_table("sales.invoice_no") is None


def test_shell_ls_cat_and_grep_show_the_comments(pg_catalog: Catalog, pg: Database) -> None:
    assert shell(pg_catalog, pg, "ls") == ["public/", "sales/"]
    listing = shell(pg_catalog, pg, "ls sales")
    assert "orders.table" in listing and "big_orders.view" in listing
    card = "\n".join(shell(pg_catalog, pg, "cat sales/orders.table"))
    assert "One row per order; amount in euros" in card
    assert "shipped, pending or refunded" in card
    assert "customer_id -> sales.customers" in card
    found = shell(pg_catalog, pg, "grep -ril platinum .")
    assert len(found) == 1 and found[0].endswith("sales/customers.table")


# results ----------------------------------------------------------------------------------------


def test_results_are_arrow_with_decimals(pg: Database) -> None:
    result = pg.execute(
        "SELECT status, count(*) AS n, sum(amount) AS total FROM sales.orders GROUP BY 1 ORDER BY 1"
    )
    assert result.columns == ["status", "n", "total"]
    assert result.rows()[0] == ("pending", 500, Decimal("23860.00"))


def test_row_cap_is_applied_on_the_server(pg: Database, pg_server: PgServer) -> None:
    """A capped query over a huge series returns at once: the server stops after cap + 1 rows."""
    result = pg.execute("SELECT generate_series(1, 1000000000000) AS g", row_cap=5, timeout=60)
    assert result.truncated and result.row_count == 5


def test_explain_and_show_are_allowed(pg: Database) -> None:
    plan = pg.execute("EXPLAIN SELECT * FROM sales.orders WHERE status = 'pending'")
    assert "Seq Scan on orders" in " ".join(str(r[0]) for r in plan.rows())
    assert pg.execute("SHOW default_transaction_read_only").rows() == [("on",)]


def test_value_search_dialect_runs_on_postgres(pg: Database) -> None:
    d = pg.dialect
    values = [d.cast_text("name"), d.cast_text("tier")]
    sql = (
        f"SELECT col, {d.shortest('v')} AS example FROM (SELECT {d.unpivot(values)} "
        "FROM (SELECT name, tier FROM sales.customers LIMIT 50) AS s) AS u "
        "WHERE v ILIKE '%plat%' GROUP BY col"
    )
    assert pg.execute(sql).rows() == [(1, "platinum")]
    assert d.name == "PostgreSQL"


# targets: libpq conventions and named connections ----------------------------------------------------


def test_label_and_key_never_hold_the_password(pg: Database, pg_server: PgServer) -> None:
    assert OWNER_PASSWORD not in pg.label and OWNER_PASSWORD not in pg.key
    assert pg.label == f"postgresql://{OWNER}:***@{pg_server.host}:{pg_server.port}/{DATABASE}"
    assert str(pg_server.port) in pg.key and DATABASE in pg.key


def test_pgpassword_pgpass_and_service_file(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_password = pg_server.url(password=None)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "missing"))
    monkeypatch.setenv("PGPASSWORD", OWNER_PASSWORD)
    with Database.open([no_password], Settings()) as db:
        assert db.execute("SELECT current_user::text").rows() == [(OWNER,)]
    monkeypatch.delenv("PGPASSWORD")
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"{pg_server.host}:{pg_server.port}:{DATABASE}:{OWNER}:{OWNER_PASSWORD}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    with Database.open([no_password], Settings()) as db:
        assert db.execute("SELECT count(*) FROM sales.customers").rows() == [(200,)]
    services = tmp_path / "pg_service.conf"
    services.write_text(
        f"[shop]\nhost={pg_server.host}\nport={pg_server.port}\ndbname={DATABASE}\nuser={OWNER}\n"
    )
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    with Database.open(["postgresql://?service=shop"], Settings()) as db:
        assert db.execute("SELECT current_database()::text").rows() == [(DATABASE,)]
        assert "service-shop" in db.key


def test_environment_fills_in_host_port_and_user(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGHOST", pg_server.host)
    monkeypatch.setenv("PGPORT", str(pg_server.port))
    monkeypatch.setenv("PGUSER", OWNER)
    monkeypatch.setenv("PGPASSWORD", OWNER_PASSWORD)
    with Database.open([f"postgresql:///{DATABASE}"], Settings()) as db:
        assert db.execute("SELECT current_user::text").rows() == [(OWNER,)]


# the CLI ------------------------------------------------------------------------------------------


def test_cli_sql_and_shell_on_a_url(pg_server: PgServer) -> None:
    out = astro("sql", "SELECT count(*) AS n FROM sales.orders", pg_server.url(), "--format", "csv")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["n", "1500"]
    out = astro("shell", "cat sales/customers.table", pg_server.url())
    assert out.returncode == 0, out.stderr
    assert "Loyalty tier: bronze, silver or platinum" in out.stdout
    assert OWNER_PASSWORD not in out.stdout + out.stderr


def test_cli_named_connection_and_config_listing(pg_server: PgServer, tmp_path: Path) -> None:
    config = tmp_path / "cli-config"
    config.mkdir()
    (config / "config.toml").write_text(f'[connections.shop]\nurl = "{pg_server.url()}"\n')
    env = {"ASTRO_CONFIG_DIR": str(config)}
    out = astro("sql", "SELECT count(*) AS n FROM sales.customers", "@shop", "--format", "csv", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["n", "200"]
    listing = astro("config", env=env)
    assert listing.returncode == 0, listing.stderr
    assert re.search(rf"connection @shop +\= postgresql://{OWNER}:\*\*\*@", listing.stdout), listing.stdout
    assert OWNER_PASSWORD not in listing.stdout + listing.stderr


def test_cli_refuses_a_write_with_one_line(pg_server: PgServer) -> None:
    out = astro("sql", "DELETE FROM sales.orders", pg_server.url())
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0 and "refused" in out.stderr
    assert "Traceback" not in out.stderr


# the app ------------------------------------------------------------------------------------------


async def test_app_opens_on_the_server_with_tree_sql_and_escape(pg_server: PgServer) -> None:
    from astro_tui.ui.panes.catalog import CatalogTree
    from tests.support.ui import SIZE, log_text, make_app, ready, submit, wait_until

    app = make_app(pg_server.url(), Settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        tree = app.query_one(CatalogTree)
        assert [str(n.label.plain).split()[0] for n in tree.root.children] == ["public", "sales"]
        await submit(pilot, "/sql SELECT count(*) AS n FROM sales.customers")
        await wait_until(pilot, lambda: app.results.current is not None)
        assert app.results.current.result.rows() == [(200,)]
        await submit(pilot, "/sql SELECT pg_sleep(60) /* astro-app-esc */")
        await wait_until(pilot, lambda: app.session.sql_running)
        running = (
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%astro-app-esc%' AND state = 'active'"
        )
        await wait_until(pilot, lambda: pg_server.psql(running) == "2")  # the query, and psql's own
        await pilot.press("escape")
        await wait_until(pilot, lambda: "cancelled" in log_text(app))
        await wait_until(pilot, lambda: pg_server.psql(running) == "1")


def test_value_search_finds_values_on_the_server(pg: Database, pg_catalog: Catalog) -> None:
    from astro_tui.catalog.values import ValueScanner

    lines = ValueScanner(pg_catalog).find(pg, ["platinum", "refunded", "Germany"], time_budget_s=30)
    text = "\n".join(lines)
    assert "customers.tier" in text and "orders.status" in text and "customers.country" in text, text
