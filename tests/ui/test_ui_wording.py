"""Counts on screen read as a person writes them: one schema, two schemas."""

from __future__ import annotations

from pathlib import Path

import duckdb

from astro_tui.ui.wording import counted
from tests.support.ui import SIZE, make_app, notifications, plain, ready, submit, wait_until


def test_counted() -> None:
    assert counted(1, "schema") == "1 schema"
    assert counted(0, "row") == "0 rows"
    assert counted(12_345, "row") == "12,345 rows"
    assert counted(2, "query", "queries") == "2 queries"


async def test_singular_counts_on_screen(tmp_path: Path) -> None:
    path = tmp_path / "one.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE only_table AS SELECT 1 AS x")
    con.close()
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.catalog_pane.border_subtitle == "1 schema · 1 table"
        assert "1 table" in plain(app.query_one("#topbar")) and "1 tables" not in plain(
            app.query_one("#topbar")
        )
        await submit(pilot, "/sql SELECT 1 AS one")
        await wait_until(pilot, lambda: app.results.current is not None)
        assert app.results.border_subtitle == "1 result"
        assert "1 row ·" in plain(app.query_one("#result-status"))
        await submit(pilot, f"/export csv {tmp_path / 'one.csv'}")
        await wait_until(pilot, lambda: any("Exported 1 row to" in n for n in notifications(app)))


def test_sql_title_names_a_result_from_its_comment_or_table() -> None:
    from astro_tui.session import sql_title

    assert sql_title("-- revenue by region\nSELECT 1") == "revenue by region"
    assert sql_title("/* top customers */ SELECT * FROM t") == "top customers"
    assert sql_title("SELECT region FROM sales . orders GROUP BY 1") == "from sales.orders"
    assert sql_title('select * from "my schema"."odd.table"') == 'from "my schema"."odd.table"'
    assert sql_title("SELECT 42 AS answer") == "SELECT 42 AS answer"
    assert len(sql_title("SELECT " + "x, " * 100 + "1")) == 40
