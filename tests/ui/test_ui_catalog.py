"""The catalog pane: lazy tree, table card, insert and preview keys, the metadata shell."""

from __future__ import annotations

import time
from pathlib import Path

from textual.widgets import RichLog

from astro_tui.data.catalog_model import Catalog, Column, Schema, Table
from astro_tui.ui.panes.catalog import CHUNK, CatalogTree
from astro_tui.ui.panes.shell import ShellInput
from tests.support.ui import SIZE, make_app, plain, ready, shop_db, wait_until

__all__ = ["shop_db"]


def _labels(node) -> list[str]:  # type: ignore[no-untyped-def]
    return [child.label.plain.split()[0] for child in node.children]


async def test_tree_card_insert_and_preview(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        tree = app.query_one(CatalogTree)
        schema = tree.root.children[0]
        assert schema.is_expanded, "a lone schema opens by itself"
        assert _labels(schema) == ["customers", "orders", "revenue_by_region"]

        await pilot.press("f2")
        await pilot.press("down", "down")
        assert tree.cursor_node is not None and tree.cursor_node.label.plain.startswith("orders")
        card = app.query_one("#table-card-text")
        await wait_until(pilot, lambda: "One row per order" in plain(card))
        assert "Order total in EUR" in plain(card)

        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(tree.cursor_node and tree.cursor_node.children))
        assert "amount" in _labels(tree.cursor_node)

        await pilot.press("p")
        await wait_until(pilot, lambda: app.results.current is not None)
        entry = app.results.current
        assert entry.name == "preview orders" and entry.result.row_count == 100

        await pilot.press("f2")
        await pilot.press("i")
        assert app.conversation.question.text == "sales.orders "
        assert app.focused is app.conversation.question


async def test_shell_runs_commands_with_history(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f3")
        field = app.query_one(ShellInput)
        log = app.query_one("#shell-log", RichLog)

        def shown() -> str:
            return "\n".join(line.text for line in log.lines)

        for command in ("cd /sales", "ls", "grep -ri eur /"):
            field.value = command
            await pilot.press("enter")
            await wait_until(pilot, lambda c=command: f"$ {c}" in shown())
        await wait_until(pilot, lambda: "revenue_by_region" in shown() and "amount" in shown())
        assert "/sales $" in plain(app.query_one("#shell-prompt"))

        await pilot.press("up")
        assert field.value == "grep -ri eur /"
        await pilot.press("up")
        assert field.value == "ls"
        await pilot.press("down", "down")
        assert field.value == ""

        field.value = "nosuchcommand"
        await pilot.press("enter")
        await wait_until(pilot, lambda: "nosuchcommand" in shown().split("$ nosuchcommand", 1)[-1])
        assert app.is_running


async def test_ten_thousand_tables_load_lazily(shop_db: Path) -> None:
    columns = (Column("id", "INTEGER", False), Column("value", "VARCHAR", True))
    tables = tuple(Table(None, "big", f"t{i:05d}", "table", columns, row_count=i) for i in range(10_000))
    catalog = Catalog((Schema(None, "big", tables), Schema(None, "small", tables[:3])))
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        tree = app.query_one(CatalogTree)
        started = time.perf_counter()
        tree.load(catalog)
        big = tree.root.children[0]
        big.expand()
        await pilot.pause()
        assert time.perf_counter() - started < 2.0
        assert len(big.children) == CHUNK + 1
        more = big.children[-1]
        assert "9,500 more" in more.label.plain
        tree.select_node(more)
        await pilot.pause()
        assert len(big.children) == 2 * CHUNK + 1
