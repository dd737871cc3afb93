"""The tree over a catalog: paths, globs, cards — on catalogs built in memory, no database."""

from __future__ import annotations

import pytest

from astro_tui.catalog.paths import PathError, absolute, expand, resolve
from astro_tui.catalog.vfs import File, VirtualFS, render_card, table_path
from astro_tui.data.catalog_model import Catalog, Column, ForeignKey, Schema, Table


def _table(schema: str, name: str, kind: str = "table", database: str | None = None, **kw: object) -> Table:
    columns = kw.pop("columns", (Column("id", "BIGINT", False, "Identifier."),))
    return Table(database, schema, name, kind, columns, **kw)  # type: ignore[arg-type]


def _catalog(*tables: Table, databases: tuple[str, ...] = ()) -> Catalog:
    by_schema: dict[tuple[str | None, str], list[Table]] = {}
    for table in tables:
        by_schema.setdefault((table.database, table.schema), []).append(table)
    schemas = tuple(Schema(d, s, tuple(ts)) for (d, s), ts in by_schema.items())
    return Catalog(schemas, databases)


@pytest.fixture
def vfs() -> VirtualFS:
    return VirtualFS(
        _catalog(
            _table("sales", "orders", row_count=10),
            _table("sales", "order_items"),
            _table("sales", "Revenue", "view"),
            _table("Odd Schema", "My Table"),
            _table("Odd Schema", "a/b"),
            _table("Odd Schema", "weird.name"),
            _table("dup", "Orders"),
            _table("dup", "orders"),
        )
    )


@pytest.mark.parametrize(
    ("cwd", "path", "parts"),
    [
        ("/", "/", []),
        ("/", "sales", ["sales"]),
        ("/sales", "orders.table", ["sales", "orders.table"]),
        ("/sales", "..", []),
        ("/sales", "../..", []),
        ("/sales", "./orders.table/", ["sales", "orders.table"]),
        ("/", "//sales///", ["sales"]),
        ("/sales", "~", []),
        ("/sales", "~/dup", ["dup"]),
        ("/a/b", "../c", ["a", "c"]),
    ],
)
def test_absolute_applies_cwd_dots_and_slashes(cwd: str, path: str, parts: list[str]) -> None:
    assert absolute(cwd, path) == parts


def test_resolve_exact_case_insensitive_and_without_suffix(vfs: VirtualFS) -> None:
    assert resolve(vfs, "/", "/sales/orders.table").path == "/sales/orders.table"
    assert resolve(vfs, "/", "SALES/ORDERS.TABLE").path == "/sales/orders.table"
    assert resolve(vfs, "/sales", "orders").path == "/sales/orders.table"
    assert resolve(vfs, "/sales", "revenue").path == "/sales/Revenue.view"
    assert resolve(vfs, "/", "/sales/").node.is_dir
    assert resolve(vfs, "/", "/odd schema/my table").path == "/Odd Schema/My Table.table"
    assert resolve(vfs, "/", "/Odd Schema/weird.name").path == "/Odd Schema/weird.name.table"


def test_resolve_slash_in_a_name_is_written_percent_2f(vfs: VirtualFS) -> None:
    node = resolve(vfs, "/", "/Odd Schema/a%2Fb.table").node
    assert isinstance(node, File) and node.table.name == "a/b"


def test_resolve_prefers_exact_case_and_refuses_ambiguity(vfs: VirtualFS) -> None:
    assert resolve(vfs, "/", "/dup/Orders.table").node.table.name == "Orders"  # type: ignore[union-attr]
    assert resolve(vfs, "/", "/dup/orders").node.table.name == "orders"  # type: ignore[union-attr]
    with pytest.raises(PathError, match="no such schema or table"):
        resolve(vfs, "/", "/dup/ORDERS.table")


def test_resolve_dotted_sql_name(vfs: VirtualFS) -> None:
    assert resolve(vfs, "/", "sales.orders").path == "/sales/orders.table"
    assert resolve(vfs, "/dup", "sales.order_items").path == "/sales/order_items.table"


def test_resolve_errors(vfs: VirtualFS) -> None:
    with pytest.raises(PathError, match="no such schema or table"):
        resolve(vfs, "/", "/nope")
    with pytest.raises(PathError, match="not a directory"):
        resolve(vfs, "/", "/sales/orders.table/x")


def test_expand_globs(vfs: VirtualFS) -> None:
    assert expand(vfs, "/", "/sales/order*") == ["/sales/orders.table", "/sales/order_items.table"]
    assert expand(vfs, "/", "/*/*.view") == ["/sales/Revenue.view"]
    assert expand(vfs, "/sales", "ord?rs") == ["/sales/orders.table"]
    assert expand(vfs, "/", "/sales/[or]*s.table") == ["/sales/orders.table", "/sales/order_items.table"]
    assert expand(vfs, "/", "/SALES/REV*") == ["/sales/Revenue.view"]
    assert expand(vfs, "/", "/sales/zzz*") == []
    assert len(expand(vfs, "/", "/*/*")) == 8


def test_table_path_single_and_multi_database() -> None:
    assert table_path(_table("sales", "orders")) == "/sales/orders.table"
    assert table_path(_table("sales", "v", "view", database="wh")) == "/wh/sales/v.view"
    assert table_path(_table("s", "a/b")) == "/s/a%2Fb.table"


def test_multi_database_tree() -> None:
    catalog = _catalog(
        _table("sales", "orders", database="shop"),
        _table("main", "events", database="logs"),
        databases=("logs", "shop"),
    )
    vfs = VirtualFS(catalog)
    assert list(vfs.root.children) == ["shop", "logs"]
    assert resolve(vfs, "/", "/shop/sales/orders.table").node.table.name == "orders"  # type: ignore[union-attr]
    assert [f.path for f in vfs.files] == ["/shop/sales/orders.table", "/logs/main/events.table"]
    assert vfs.root.children["logs"].first == 1


def test_card_lists_columns_keys_and_quoted_sql_names() -> None:
    table = _table(
        "Odd Schema",
        "My Table",
        comment="First line.\n  Second line.",
        row_count=1234,
        columns=(
            Column("Order Date", "DATE", True, "When.\nReally."),
            Column("customer_id", "BIGINT", False, "Who."),
            Column("select", "INTEGER", True),
        ),
        primary_key=("Order Date",),
        foreign_keys=(ForeignKey(("customer_id",), "sales", "customers", ("customer_id",)),),
    )
    card = render_card(table, referenced_by=["sales.x(my_id)"])
    lines = card.splitlines()
    assert lines[0] == "Odd Schema.My Table  (table, 1,234 rows)"
    assert lines[1:3] == ["  First line.", "  Second line."]
    assert lines[3] == "columns:"
    assert lines[4].split() == ['"Order', 'Date"', "DATE", "When.", "Really.", "[PK]"]
    assert "-> sales.customers.customer_id  Who." in lines[5] and "not null" in lines[5]
    assert lines[6].split() == ['"select"', "INTEGER"]
    assert 'primary key: "Order Date"' in lines
    assert "foreign key: customer_id -> sales.customers(customer_id)" in lines
    assert "referenced by: sales.x(my_id)" in lines
    assert lines[-1] == 'sql: "Odd Schema"."My Table"'
    assert card.endswith("\n")


def test_card_of_view_and_empty_table() -> None:
    assert render_card(_table("s", "v", "view", row_count=5)).splitlines()[0] == "s.v  (view)"
    empty = render_card(_table("s", "t", columns=()))
    assert "columns: (none)" in empty
