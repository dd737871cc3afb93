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


def distinct_values(
    db: Database, table: Table, column: str, *, limit: int = 5, cancel: CancelToken | None = None
) -> list[Any]:
    """A few distinct non-null values of one column, most frequent first."""
    col = table.quote(column)
    result = db.execute(
        f"SELECT {col} FROM {table.sql_name} WHERE {col} IS NOT NULL "
        f"GROUP BY {col} ORDER BY count(*) DESC, {col} LIMIT {int(limit)}",
        row_cap=limit,
        cancel=cancel,
    )
    return result.table.column(0).to_pylist()


def load_catalog(db: Database) -> Catalog:
    """The whole catalog of the opened database, read by its engine."""
    return db.load_catalog()


def load_outline(db: Database) -> Catalog:
    """Every schema and table, their columns perhaps still unread (`Catalog.complete`)."""
    return db.load_outline()
