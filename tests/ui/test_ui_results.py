"""The results pane: /sql, copy (pyperclip and OSC 52), export, truncation, charts, inert data."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyperclip
import pytest
from textual.coordinate import Coordinate
from textual.widgets import TabbedContent

from astro_tui.config import Settings
from astro_tui.ui.app import AstroApp
from tests.support.ui import (
    REVENUE_SQL,
    SIZE,
    log_text,
    make_app,
    notifications,
    plain,
    ready,
    shop_db,
    submit,
    wait_until,
)

__all__ = ["shop_db"]


async def test_sql_shows_the_result_with_its_status(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, f"/sql {REVENUE_SQL}")
        await wait_until(pilot, lambda: app.results.table_widget is not None)
        entry = app.results.current
        name = "sql 1 · from sales.orders"
        assert entry is not None and entry.name == name and entry.result.row_count == 5
        assert f"{name} · 5 rows" in plain(app.query_one("#result-status"))
        assert f"→ {name}: 5 rows" in log_text(app)
        assert REVENUE_SQL in plain(app.query_one("#sql-text"))
        assert app.conversation.question.text == "", "a slash command clears the box"


async def test_refused_and_failing_sql_is_one_sentence(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/sql DROP TABLE sales.orders")
        await submit(pilot, "/sql SELECT nope FROM sales.orders")
        await wait_until(pilot, lambda: log_text(app).count("✗") == 2)
        errors = [line for line in log_text(app).splitlines() if line.startswith("✗")]
        assert all("\n" not in e and len(e) < 400 for e in errors)
        assert app.results.current is None and app.is_running


async def test_truncation_is_stated(shop_db: Path) -> None:
    app = make_app(shop_db, Settings(row_cap=1_000))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/sql SELECT * FROM sales.orders")
        await wait_until(pilot, lambda: app.results.current is not None)
        status = plain(app.query_one("#result-status"))
        assert "1,000 of 2,000 rows" in status and "cut at" in status  # a plain scan: the total is cheap


async def test_a_million_rows_scroll(shop_db: Path) -> None:
    app = make_app(shop_db, Settings(row_cap=2_000_000))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/sql SELECT i, i * 2 AS doubled, 'row ' || i AS label FROM range(1000000) t(i)")
        # the first rows come before the whole result (`test_ui_results_first_rows.py`)
        await wait_until(pilot, lambda: app.results.current is not None, timeout=60)
        await wait_until(pilot, lambda: app.results.table_widget is not None)
        table = app.results.table_widget
        assert table.row_count == 1_000_000
        table.focus()
        await pilot.press("ctrl+end")
        await pilot.pause()
        assert table.cursor_row == 999_999


async def test_copy_uses_pyperclip(shop_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copied: list[str] = []
    monkeypatch.setattr(pyperclip, "copy", copied.append)
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+y")
        assert any("No SQL to copy" in n for n in notifications(app))
        await submit(pilot, f"/sql {REVENUE_SQL}")
        await wait_until(pilot, lambda: app.results.current is not None)
        await pilot.press("ctrl+y")
        assert copied == [REVENUE_SQL]
        assert any("system clipboard" in n for n in notifications(app))


async def test_copy_falls_back_to_osc52(shop_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_clipboard(text: str) -> None:
        raise pyperclip.PyperclipException("could not find a copy/paste mechanism")

    osc52: list[str] = []
    monkeypatch.setattr(pyperclip, "copy", no_clipboard)
    monkeypatch.setattr(AstroApp, "copy_to_clipboard", lambda self, text: osc52.append(text))
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, f"/sql {REVENUE_SQL}")
        await wait_until(pilot, lambda: app.results.current is not None)
        await submit(pilot, "/copy")
        assert osc52 == [REVENUE_SQL]
        assert any("OSC 52" in n for n in notifications(app))


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
async def test_export_writes_the_current_result(shop_db: Path, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"out.{fmt}"
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, f"/sql {REVENUE_SQL}")
        await wait_until(pilot, lambda: app.results.current is not None)
        await submit(pilot, f"/export {fmt} {target}")
        await wait_until(pilot, lambda: any("Exported 5 rows" in n for n in notifications(app)))
    if fmt == "csv":
        rows = list(csv.reader(target.open()))
        assert rows[0] == ["region", "revenue"] and len(rows) == 6
    elif fmt == "json":
        data = json.loads(target.read_text())
        assert len(data) == 5 and set(data[0]) == {"region", "revenue"}
    else:
        import pyarrow.parquet as pq

        assert pq.read_table(target).num_rows == 5


async def test_export_key_asks_for_a_path(shop_db: Path, tmp_path: Path) -> None:
    target = tmp_path / "picked.csv"
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, f"/sql {REVENUE_SQL}")
        await wait_until(pilot, lambda: app.results.current is not None)
        await pilot.press("ctrl+s")
        field = app.screen.query_one("#export-input")
        error = app.screen.query_one("#export-error")
        # a refused answer stays in the box, its reason under it (issue 37: the dialog closed)
        for typed, reason in (
            (f"csv {tmp_path / 'no' / 'dir' / 'picked.csv'}", "no such directory"),
            (f"parquet {target}", "picked.csv is named as csv but the format is parquet"),
            (f"csv {tmp_path}", "is a directory"),
            ("tsv x.tsv", "unknown format"),
        ):
            field.value = typed
            await pilot.press("enter")
            await wait_until(pilot, lambda reason=reason: reason in plain(error) and error.display)
            assert field.value == typed and "\n" not in plain(error).strip()
        field.value = f"csv {target}"
        await wait_until(pilot, lambda: not error.display)
        await pilot.press("enter")
        await wait_until(pilot, target.exists)
        assert not (tmp_path / "no").exists() and target.read_text().startswith('"region"')

        # declining to replace a file comes back to the dialog with what was typed
        from astro_tui.ui.screens.confirm import ConfirmScreen
        from astro_tui.ui.screens.export import ExportScreen

        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen))
        app.screen.query_one("#export-input").value = f"csv {target}"
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen))
        assert app.screen.query_one("#export-input").value == f"csv {target}"


async def test_results_list_and_chart_keys(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, f"/sql {REVENUE_SQL}")
        await submit(pilot, "/sql SELECT order_date, amount FROM sales.orders ORDER BY order_date")
        await wait_until(pilot, lambda: len(app.results.entries) == 2)
        await pilot.press("f5")
        await pilot.press("left_square_bracket")
        assert app.results.current is app.results.entries[0]
        await pilot.press("g")
        tabs = app.results.query_one(TabbedContent)
        assert tabs.active == "tab-chart"
        await wait_until(pilot, lambda: "bar · x region · y revenue" in plain(app.query_one("#chart-note")))
        await pilot.press("k")
        await wait_until(pilot, lambda: "line · x region" in plain(app.query_one("#chart-note")))
        await pilot.press("right_square_bracket")
        await wait_until(pilot, lambda: "x order_date · y amount" in plain(app.query_one("#chart-note")))
        await pilot.press("s")
        assert tabs.active == "tab-sql"


async def test_data_renders_inert(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        evil = "chr(27) || ']52;c;aGk=' || chr(7) || '[bold red]x[/]'"
        await submit(pilot, f'/sql SELECT {evil} AS "col{{0}}", 1 AS n')
        await wait_until(pilot, lambda: app.results.table_widget is not None)
        table = app.results.table_widget
        value = table.get_cell_at(Coordinate(0, 0))
        assert "\x1b" not in value and "\\x1b" in value and "[bold red]" in value
        screen_text = app.export_screenshot()
        assert "\x1b]52" not in screen_text


async def test_result_keys_work_from_every_tab(shop_db: Path) -> None:
    """t/g/s, k/x/y and [/] stay live whichever tab shows, and F5 keeps the tab that shows."""
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/sql SELECT 1 AS one")
        await submit(pilot, f"/sql {REVENUE_SQL}")
        await wait_until(
            pilot, lambda: app.results.table_widget is not None and len(app.results.entries) == 2
        )
        tabs = app.results.query_one(TabbedContent)

        def in_results() -> bool:
            return app.results.has_focus_within

        await pilot.press("f5")
        await wait_until(pilot, in_results)
        for key, tab in (("g", "tab-chart"), ("s", "tab-sql"), ("g", "tab-chart"), ("t", "tab-table")):
            await pilot.press(key)
            await wait_until(pilot, lambda tab=tab: tabs.active == tab and in_results())

        await pilot.press("s")
        await wait_until(pilot, lambda: tabs.active == "tab-sql" and in_results())
        await pilot.press("k")
        await wait_until(pilot, lambda: tabs.active == "tab-chart" and in_results())
        first = app.results.current.chart.kind
        await pilot.press("k")
        await wait_until(pilot, lambda: app.results.current.chart.kind != first)
        await pilot.press("left_square_bracket")
        await wait_until(pilot, lambda: app.results.current is app.results.entries[0] and in_results())
        await pilot.press("right_square_bracket")
        await wait_until(pilot, lambda: app.results.current is app.results.entries[1])

        await pilot.press("f4")
        await pilot.press("f5")
        await wait_until(pilot, in_results)
        assert tabs.active == "tab-chart", "F5 keeps the tab that shows"
        keys = {b.binding.key for b in app.active_bindings.values() if b.binding.show}
        assert {"g", "left_square_bracket"} <= keys, keys


async def test_export_asks_before_overwriting_and_never_creates_directories(
    shop_db: Path, tmp_path: Path
) -> None:
    from astro_tui.ui.screens.confirm import ConfirmScreen
    from astro_tui.ui.screens.export import ExportScreen

    target = tmp_path / "out.csv"
    target.write_text("keep me\n")
    missing = tmp_path / "no" / "such" / "dir" / "out.csv"
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, f"/sql {REVENUE_SQL}")
        await wait_until(pilot, lambda: app.results.current is not None)

        await submit(pilot, f"/export csv {target}")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await wait_until(pilot, lambda: any("left as it was" in n for n in notifications(app)))
        assert target.read_text() == "keep me\n"

        await submit(pilot, f"/export parquet {target}")  # a CSV's name, Parquet inside: refused
        await wait_until(
            pilot, lambda: any("named as csv but the format is parquet" in n for n in notifications(app))
        )
        assert target.read_text() == "keep me\n"

        await submit(pilot, f"/export csv {target}")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_until(pilot, lambda: any("Exported 5 rows" in n for n in notifications(app)))
        assert target.read_text().startswith('"region","revenue"')

        await submit(pilot, f"/export csv {missing}")
        await wait_until(pilot, lambda: any("no such directory" in n for n in notifications(app)))
        message = next(n for n in notifications(app) if "no such directory" in n)
        assert "\n" not in message and "Traceback" not in message and "Error" not in message
        assert not (tmp_path / "no").exists(), "a mistyped path never creates a directory"

        await submit(pilot, f"/export json {tmp_path}")
        await wait_until(pilot, lambda: any("is a directory" in n for n in notifications(app)))

        # Without a path nothing is written unseen: the dialog proposes one named from the result.
        await submit(pilot, "/export parquet")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen))
        proposed = app.screen.query_one("#export-input").value
        assert proposed.startswith("parquet ") and proposed.endswith("sql_1_from_sales_orders.parquet"), (
            proposed
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ExportScreen))


def test_numbers_are_drawn_as_astro_writes_them_everywhere() -> None:
    """A double at its significant digits with its sign (never `0` for -0.0000001), a DECIMAL
    digit for digit (never `4.00e-7`), grouped unless an id; NaN and NULL as they are."""
    from decimal import Decimal

    import pyarrow as pa

    from astro_tui.ui.table_backend import display_backend

    table = pa.table(
        {
            "revenue": [5271503.80, 19980.00000000015, None],
            "rate": [0.000123, 2.0, -0.0000001],
            "odd": [float("nan"), 1e300, -0.0],
            "dec": pa.array([Decimal("0.000000400"), Decimal("-1234.5"), None], pa.decimal128(14, 9)),
            "order_id": [1056, 2, 3],
        }
    )
    backend = display_backend(table)
    rows = [[None if c is None else str(c) for c in backend.get_row_at(i)] for i in range(3)]
    assert rows == [
        ["5,271,503.8", "0.000123", "NaN", "0.000000400", "1056"],
        ["19,980.0000000001", "2.0", "1e+300", "-1,234.500000000", "2"],
        [None, "-0.0000001", "-0.0", None, "3"],
    ]
    assert list(backend.column_content_widths) == [17, 10, 6, 16, 4]


async def test_the_table_reads_as_astro_sql_prints(shop_db: Path) -> None:
    """The issue's query: the app's cells are `astro sql`'s, character for character."""
    from io import StringIO

    from astro_tui.data.text_table import write_table

    sql = (
        "SELECT -0.0000001::DOUBLE AS d, 0.0000004::DOUBLE AS a, 0.000000400::DECIMAL(10, 9) AS m, "
        "TIMESTAMP '2024-05-01 13:45:00.25' AS t, 1234567 AS n"
    )
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/sql " + sql)
        await wait_until(pilot, lambda: app.results.table_widget is not None)
        cells = [str(c) for c in app.results.table_widget.backend.get_row_at(0)]
        result = app.results.current.result
    assert cells == ["-0.0000001", "0.0000004", "0.000000400", "2024-05-01 13:45:00.250", "1,234,567"]
    printed = StringIO()
    write_table(result, printed, max_rows=None)
    assert printed.getvalue().splitlines()[2].split() == cells[:3] + cells[3].split() + cells[4:]


async def test_a_sql_result_arrives_with_its_table_measured(shop_db: Path) -> None:
    """The worker that ran the query also measures the table, so the pane mounts it at once:
    it never shows "preparing the table…" for a /sql result (it would for a slow one)."""
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/sql SELECT range AS n, 'row ' || range AS label FROM range(50000)")
        await wait_until(pilot, lambda: app.results.table_widget is not None)
        assert "preparing" not in plain(app.query_one("#table-empty"))
        assert app.results.table_widget.row_count == 50000
