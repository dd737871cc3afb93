"""Row counts and samples of one table, through the guarded path like any other query.

The SQL here is portable across engines (`count(*)`, `LIMIT`, `GROUP BY`); the
engine quotes the names (`Table.sql_name`, `Table.quote`).
"""

from __future__ import annotations

from typing import Any

from astro_tui.data.catalog_model import Catalog, Table
from astro_tui.data.database import CancelToken, Database
from astro_tui.data.results import QueryResult


def sample_values(
    db: Database, table: Table, *, limit: int = 5, cancel: CancelToken | None = None
) -> QueryResult:
    """The first rows of a table: the preview the catalog pane and `show_table` show. Under a
    scope `*` is refused where a column is hidden, so the visible columns are named."""
    columns = ", ".join(table.quote(c.name) for c in table.columns) if db.scope and table.columns else "*"
    return db.execute(
        f"SELECT {columns} FROM {table.sql_name} LIMIT {int(limit)}", row_cap=limit, cancel=cancel
    )


def frequent_values(
    db: Database, table: Table, column: str, *, limit: int = 5, cancel: CancelToken | None = None
) -> list[tuple[Any, int]]:
    """The most frequent non-null values of one column with how often each occurs, most frequent
    first (ties in value order, so the answer is the same every time)."""
    col = table.quote(column)
    result = db.execute(
        f"SELECT {col}, count(*) FROM {table.sql_name} WHERE {col} IS NOT NULL "
        f"GROUP BY {col} ORDER BY count(*) DESC, {col} LIMIT {int(limit)}",
        row_cap=limit,
        cancel=cancel,
    )
    values, counts = (result.table.column(i).to_pylist() for i in (0, 1))
    return list(zip(values, (int(n) for n in counts), strict=True))


def load_catalog(db: Database) -> Catalog:
    """The whole catalog of the opened database, read by its engine."""
    return db.load_catalog()


def load_outline(db: Database) -> Catalog:
    """Every schema and table, their columns perhaps still unread (`Catalog.complete`)."""
    return db.load_outline()
