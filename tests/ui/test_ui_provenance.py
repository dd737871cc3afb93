"""Tracing an answer's values in the app: the key, the click, the cell, the copied query, a resumed answer.

The model is the fake server; the database is a real DuckDB file. Every check
compares what the screen shows with what the database has at the traced row and
column, and runs the copied query through the same Database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyperclip
import pytest

from astro_tui.agent.cell_query import cell_query
from astro_tui.agent.provenance import Source
from astro_tui.ui.app import AstroApp
from astro_tui.ui.screens.resume import ResumeScreen
from astro_tui.ui.widgets.traced_answer import TracedAnswer, TracedText
from tests.support.fake_openai import FakeOpenAI
from tests.support.ui import (
    REVENUE_SQL,
    make_app,
    notifications,
    plain,
    shop_db,
    submit,
    wait_until,
)
from tests.support.ui_provenance import TOTAL_SQL, answer_script, answered

__all__ = ["shop_db"]

UNORDERED_SQL = "SELECT region, count(*) AS orders FROM sales.orders GROUP BY region"
SIZES = [(80, 24), (100, 30), (160, 48)]


def highlighted(text: TracedText) -> str:
    """The characters the screen shows in the highlight style, in order."""
    style = text.get_component_rich_style("traced--selected")
    shown = []
    for y in range(text.size.height):
        for segment in text.render_line(y):
            if segment.style is not None and style.reverse and segment.style.reverse:
                shown.append(segment.text)
    return "".join(shown)


def cell_selected(app: AstroApp) -> bool:
    """The results table is on screen and no traced cell waits to be selected in it."""
    return app.results.table_widget is not None and app.results._cell is None


def cell_value(app: AstroApp) -> Any:
    """The value the database returned at the results table's cursor."""
    table = app.results.table_widget
    entry = app.results.current
    assert table is not None and entry is not None
    row, column = table.cursor_coordinate
    return entry.result.table.column(column)[row].as_py(), entry.result.columns[column]


@pytest.mark.parametrize("size", SIZES)
async def test_the_key_traces_each_value_to_its_cell(
    shop_db: Path, fake_openai: FakeOpenAI, size: tuple[int, int]
) -> None:
    fake_openai.script(*answer_script())
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=size) as pilot:
        answer = await answered(pilot)
        text = answer.query_one(TracedText)
        spans = answer.spans
        assert len(spans) == 1 + 5 * 3
        for index, span in enumerate(spans):
            await pilot.press("f8")
            await wait_until(pilot, lambda index=index: answer.index == index)
            await pilot.pause()
            assert highlighted(text) == span.text
            note = plain(answer.query_one(".trace-note"))
            assert span.text in note
            for source in span.sources:
                assert source.sql.split()[0] in note and f"row {source.row}" in note
            first = span.sources[0]
            await wait_until(pilot, lambda: cell_selected(app))
            assert cell_value(app) == (first.value, first.column)
            current = app.results.current
            assert current is not None and current.result is answer.results[first.input]
            if span.derived:
                assert len(span.sources) == 2 and "computed by the template from 2 values" in note
        await pilot.press("f8")
        assert answer.index == 0, "wraps round"
        await pilot.press("shift+f8")
        assert answer.index == len(spans) - 1


async def test_a_click_traces_the_value_under_it(shop_db: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*answer_script())
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=(80, 24)) as pilot:
        answer = await answered(pilot)
        text = answer.query_one(TracedText)
        for _ in range(5):  # to the second region's name: its line is on screen
            await pilot.press("f8")
        await wait_until(pilot, lambda: answer.index == 4)
        target = 5  # the second region's revenue, on the same line
        y = text.lines_of(target)[0]
        assert text.lines_of(4) == [y]
        x0 = next(x0 for x0, _, k in text._by_y[y] if k == target)
        offset = (x0 + 1, y)
        assert await pilot.click(text, offset=offset)
        await wait_until(pilot, lambda: answer.index == target)
        assert highlighted(text) == answer.spans[target].text
        await wait_until(pilot, lambda: cell_selected(app))
        assert cell_value(app) == (answer.spans[target].sources[0].value, "revenue")


async def test_the_copied_query_returns_the_cell(
    shop_db: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    copied: list[str] = []
    monkeypatch.setattr(pyperclip, "copy", copied.append)
    fake_openai.script(*answer_script())
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=(80, 24)) as pilot:
        answer = await answered(pilot)
        db = app.session.db
        assert db is not None
        for index, span in enumerate(answer.spans):
            await pilot.press("f8")
            await wait_until(pilot, lambda index=index: answer.index == index)
            if span.derived:
                continue
            before = len(copied)
            await pilot.press("f9")
            await wait_until(pilot, lambda before=before: len(copied) == before + 1)
            result = db.execute(copied[-1])
            assert result.rows() == [(span.sources[0].value,)], copied[-1]
            how = "ORDER BY" if span.sources[0].input == "rev" else "returns that value"
            assert how in notifications(app)[-1]
        assert "LIMIT 1 OFFSET" in copied[-1] and "astro_cell" in copied[-1]


def test_cell_queries_pick_the_row_by_order_or_by_position(shop_db: Path) -> None:
    """Straight against the Database: ordered, single-row, unordered and row-count sources."""
    from astro_tui.config import Settings
    from astro_tui.data.database import Database

    with Database.open([str(shop_db)], Settings()) as db:
        ordered = db.execute(REVENUE_SQL)
        for row in range(ordered.row_count):
            source = Source("rev", ordered.sql, row, "revenue", ordered.rows()[row][1])
            query = cell_query(source, db.dialect, rows=ordered.row_count)
            assert query.how == "ordered" and db.execute(query.sql).rows() == [(source.value,)]
        total = db.execute(TOTAL_SQL + ";")
        query = cell_query(Source("t", total.sql, 0, "total", None), db.dialect, rows=1)
        assert query.how == "whole" and db.execute(query.sql).rows() == total.rows()
        unordered = db.execute(UNORDERED_SQL)
        query = cell_query(Source("u", unordered.sql, 2, "orders", None), db.dialect, rows=5)
        assert query.how == "position" and db.execute(query.sql).row_count == 1
        query = cell_query(Source("u", unordered.sql, None, None, 5), db.dialect)
        assert db.execute(query.sql).rows() == [(5,)]
        query = cell_query(Source("u", REVENUE_SQL, 3, None, None), db.dialect)
        assert db.execute(query.sql).rows() == [ordered.rows()[3]]


async def test_a_resumed_answer_traces_its_values(shop_db: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*answer_script())
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=(80, 24)) as pilot:
        first = await answered(pilot)
        spans = first.spans
        await submit(pilot, "/new")
        await submit(pilot, "/resume")
        await wait_until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        await pilot.press("enter")
        await wait_until(pilot, lambda: [a for a in app.query(TracedAnswer) if a is not first])
        resumed = app.query(TracedAnswer).last()
        assert [(s.start, s.end, s.text) for s in resumed.spans] == [(s.start, s.end, s.text) for s in spans]
        await pilot.press("f8", "f8")
        await wait_until(pilot, lambda: resumed.index == 1)
        assert highlighted(resumed.query_one(TracedText)) == spans[1].text
        note = plain(resumed.query_one(".trace-note"))
        assert "rev · row 0 · region = region_0" in note and "ORDER BY region" in note
