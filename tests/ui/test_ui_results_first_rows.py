"""A long /sql result's first rows on screen while the rest is read: the result replaces them
(keeping the cursor), and a cancel, a timeout or a refusal leaves none behind."""

from __future__ import annotations

from pathlib import Path

from textual.coordinate import Coordinate

from astro_tui.config import Settings
from astro_tui.data.engines.duckdb.pool import FIRST_ROWS
from tests.support import ui
from tests.support.slow import slow_sql
from tests.support.ui import shop_db

__all__ = ["shop_db"]


def _first_rows_shown(app: object) -> bool:
    results = app.results  # type: ignore[attr-defined]
    table = results.table_widget
    return (
        results.reading is not None
        and table is not None
        and table.is_attached
        and table.row_count == FIRST_ROWS
    )


async def test_first_rows_show_then_the_result_replaces_them(shop_db: Path) -> None:
    rows = 131_072  # the first 65,536 at once, the rest slow: ~5 s of DuckDB on an idle
    # machine, so that on a loaded one the app still draws the first rows before the rest is in
    app = ui.make_app(shop_db, Settings(row_cap=200_000, query_timeout_s=600))
    async with app.run_test(size=ui.SIZE) as pilot:
        await ui.ready(pilot)
        await ui.submit(pilot, f"/sql {slow_sql(rows, effort=5000)}")
        await ui.wait_until(pilot, lambda: _first_rows_shown(app))
        assert app.session.sql_running and app.results.current is None, "the result is still being read"
        status = ui.plain(app.query_one("#result-status"))
        assert "reading the result" in status and f"{FIRST_ROWS:,} rows so far" in status
        app.action_export()
        app.action_chart_kind()
        still = "Still reading the result: try again once it is in."
        await ui.wait_until(pilot, lambda: ui.notifications(app).count(still) == 2)
        app.results.table_widget.focus()
        app.results.table_widget.move_cursor(row=7, column=1)

        await ui.wait_until(pilot, lambda: app.results.current is not None, timeout=120)
        await ui.wait_until(
            pilot, lambda: app.results.table_widget is not None and app.results.table_widget.is_attached
        )
        table = app.results.table_widget
        assert app.results.reading is None and table.row_count == rows
        assert f"{rows:,} rows" in ui.plain(app.query_one("#result-status"))
        await ui.wait_until(pilot, lambda: table.cursor_coordinate == Coordinate(7, 1) and table.has_focus)


async def test_escape_while_reading_removes_the_first_rows(shop_db: Path) -> None:
    app = ui.make_app(shop_db, Settings(row_cap=1_000_000))
    async with app.run_test(size=ui.SIZE) as pilot:
        await ui.ready(pilot)
        await ui.submit(pilot, f"/sql {slow_sql(1_000_000)}")
        await ui.wait_until(pilot, lambda: _first_rows_shown(app))
        await pilot.press("escape")
        await ui.wait_until(pilot, lambda: "cancelled" in ui.log_text(app))
        assert app.results.reading is None and app.results.table_widget is None
        assert app.results.current is None and not app.session.sql_running
        assert "reading the result" not in ui.plain(app.query_one("#result-status"))


async def test_a_timeout_while_reading_removes_the_first_rows_and_keeps_the_last_result(
    shop_db: Path,
) -> None:
    app = ui.make_app(shop_db, Settings(row_cap=1_000_000, query_timeout_s=8))
    async with app.run_test(size=ui.SIZE) as pilot:
        await ui.ready(pilot)
        await ui.submit(pilot, "/sql SELECT 42 AS answer")
        await ui.wait_until(pilot, lambda: app.results.current is not None)
        earlier = app.results.current
        await ui.submit(pilot, f"/sql {slow_sql(1_000_000)}")
        await ui.wait_until(pilot, lambda: _first_rows_shown(app))
        await ui.wait_until(pilot, lambda: "8 s time limit" in ui.log_text(app), timeout=120)
        await ui.wait_until(pilot, lambda: app.results.table_widget is not None)
        assert app.results.reading is None and app.results.current is earlier
        assert app.results.table_widget.row_count == 1
        assert "sql 1" in ui.plain(app.query_one("#result-status"))


async def test_a_refused_statement_never_shows_rows(shop_db: Path) -> None:
    app = ui.make_app(shop_db, Settings(row_cap=1_000_000))
    async with app.run_test(size=ui.SIZE) as pilot:
        await ui.ready(pilot)
        await ui.submit(pilot, "/sql SELECT * FROM range(1000000); DROP TABLE sales.orders")
        await ui.wait_until(pilot, lambda: "✗" in ui.log_text(app))
        assert app.results.reading is None and app.results.table_widget is None
        assert app.results.current is None
