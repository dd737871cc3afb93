"""Reading a statement's rows as Arrow, capped and streamed: the worker sends them on as they come."""

from __future__ import annotations

import json
from collections.abc import Iterator

import duckdb
import pyarrow as pa

_BATCH = 65_536


class Capped:
    """The rows of one statement a batch at a time, at most `cap`; one probe row past the cap
    is read (never kept), which is how `truncated` is known rather than guessed."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, statement: str, cap: int | None) -> None:
        relation = cursor.sql(statement)
        self.cap = cap
        self.truncated = False
        if relation is None:
            self.schema = pa.schema([])
            self._reader: pa.RecordBatchReader | None = None
        else:
            self._reader = relation.to_arrow_reader(_BATCH if cap is None else min(_BATCH, cap + 1))
            self.schema = self._reader.schema

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if self._reader is None:
            return
        seen = 0
        for batch in self._reader:
            if self.cap is not None and seen + batch.num_rows > self.cap:
                self.truncated = True
                if self.cap > seen:
                    yield batch.slice(0, self.cap - seen)
                return
            seen += batch.num_rows
            yield batch


def total_rows(cursor: duckdb.DuckDBPyConnection, statement: str, view_rows: dict[str, int]) -> int | None:
    """The full row count of a truncated plain scan (`SELECT cols FROM table [ORDER BY]`).

    Counting a base table comes from DuckDB's row-group metadata and a Parquet target's
    view from the files' footers (`view_rows`, read when the targets were opened), so it
    never runs the query twice; anything else (filters, joins, aggregates, views over
    queries) keeps "more than N" rather than pay for a count. `cursor` resolves names as the
    statement's own did (a file's table `pg_class` is not the built-in view of that name: with
    the built-ins first, 5,000 rows were reported as 49); DuckDB's own functions are named in
    full, so the file's macros cannot answer for them.
    """
    source = _plain_scan(cursor, statement)
    if source is None:
        return None
    path = [p for p in source if p]
    if len(path) == 1 and path[0] in view_rows:
        return view_rows[path[0]]
    try:
        views = cursor.execute(
            "SELECT system.main.count_star() FROM system.main.duckdb_views() "
            "WHERE NOT internal AND system.main.lower(view_name) = system.main.lower(?)",
            [path[-1]],
        ).fetchone()
        if not views or views[0]:
            return None
        quoted = ".".join('"' + p.replace('"', '""') + '"' for p in path)
        row = cursor.execute(f"SELECT system.main.count_star() FROM {quoted}").fetchone()
    except duckdb.Error:
        return None
    return int(row[0]) if row else None


def _plain_scan(cursor: duckdb.DuckDBPyConnection, statement: str) -> tuple[str, str, str] | None:
    """(catalog, schema, table) when DuckDB's parser sees a plain scan of one table, else None."""
    try:
        row = cursor.execute("SELECT system.main.json_serialize_sql(?)", [statement]).fetchone()
        tree = json.loads(row[0]) if row else {}
        [only] = tree["statements"]
        node = only["node"]
        source = node["from_table"]
    except (duckdb.Error, ValueError, KeyError, TypeError, RecursionError):
        return None
    plain = (
        node.get("type") == "SELECT_NODE"
        and not node.get("cte_map", {}).get("map")
        and all(m.get("type") == "ORDER_MODIFIER" for m in node.get("modifiers", []))
        and all(e.get("class") in ("STAR", "COLUMN_REF") for e in node.get("select_list", []))
        and all(node.get(k) is None for k in ("where_clause", "having", "qualify", "sample"))
        and not node.get("group_expressions")
        and node.get("aggregate_handling") == "STANDARD_HANDLING"
        and source.get("type") == "BASE_TABLE"
        and source.get("sample") is None
        and source.get("at_clause") is None
    )
    if not plain:
        return None
    return (
        str(source.get("catalog_name") or ""),
        str(source.get("schema_name") or ""),
        str(source["table_name"]),
    )
