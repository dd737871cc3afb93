"""Reading a statement's rows as Arrow, capped and streamed: the worker sends them on as they come.

A one-shot command reads a result its parse shows to be a few rows (`few_rows`) as Python
values instead (`data/row_table.py`), and so never loads Arrow.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import duckdb

from astro_tui.data.row_table import RowTable, plain

if TYPE_CHECKING:
    import pyarrow as pa

BATCH = 65_536
"""Rows in each batch DuckDB hands over (but the last): a result longer than one has first rows
to show while the rest is read."""
FEW = 1000
"""The most rows a result read as Python values can have (`few_rows`)."""
_AGGREGATES = frozenset({
    "count_star", "count", "sum", "min", "max", "avg", "mean", "any_value", "first", "last",
    "bool_and", "bool_or", "string_agg", "median", "approx_count_distinct", "stddev",
    "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "product", "arg_min",
    "arg_max", "mode", "fsum", "favg",
})  # fmt: skip
"""DuckDB's aggregates that give one row without a GROUP BY (when no file defines the name)."""
_MAY_BE_FEW = re.compile(
    r"\blimit\b|\b(?:count|" + "|".join(sorted(_AGGREGATES - {"count_star", "count"})) + r")\s*\(",
    re.IGNORECASE,
)
_MANY = re.compile(r"\bgroup\s+by\b|\bover\s*\(", re.IGNORECASE)


class Capped:
    """The rows of one statement a batch at a time, at most `cap`; one probe row past the cap
    is read (never kept), which is how `truncated` is known rather than guessed."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, statement: str, cap: int | None) -> None:
        import pyarrow as pa

        relation = cursor.sql(statement)
        self.cap = cap
        self.truncated = False
        self.batch_rows = 0
        """How many rows DuckDB puts in each batch but the last: a full first batch may have more after it."""
        if relation is None:
            self.schema = pa.schema([])
            self._reader: pa.RecordBatchReader | None = None
        else:
            self.batch_rows = BATCH if cap is None else min(BATCH, cap + 1)
            self._reader = relation.to_arrow_reader(self.batch_rows)
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


def few_rows(
    cursor: duckdb.DuckDBPyConnection, statement: str, cap: int | None, defines: Callable[[str], bool]
) -> tuple[RowTable, bool] | None:
    """The rows as Python values, and whether the cap cut them, when DuckDB's parse shows at
    most `FEW` of them and every column is of a plain type (`row_table.plain`); else None,
    and the rows are read as Arrow.

    A few rows, because DuckDB reads a result as Python values only whole (a row cap cannot
    stop it early, as it stops Arrow's stream): one SELECT whose LIMIT is a number up to
    `FEW`, or of aggregates only, of DuckDB's own (`_AGGREGATES`, no name the file defines),
    with no grouping. The statement is the checked one, run as it is: only how its rows are
    read differs."""
    if not _few(cursor, statement, defines):
        return None
    relation = cursor.sql(statement)
    if relation is None:
        return None
    types = [str(t) for t in relation.types]
    if not all(plain(t) for t in types):
        return None
    reading = relation.iter_rows(FEW + 1)
    try:
        rows = list(itertools.islice(reading, FEW + 1 if cap is None else min(FEW, cap) + 1))
    finally:
        reading.close()
    if len(rows) > FEW and (cap is None or cap >= FEW):
        return None  # more than the parse showed: never printed as the whole result
    truncated = cap is not None and len(rows) > cap
    return RowTable(relation.columns, types, rows[:cap] if truncated else rows), truncated


def may_be_few(statement: str) -> bool:
    """Whether `few_rows` could take the statement (a word test, before it is parsed): if not,
    a command starts importing Arrow while the file opens (a grouped or windowed aggregate too,
    which `few_rows` takes only under a small LIMIT)."""
    return _MAY_BE_FEW.search(statement) is not None and _MANY.search(statement) is None


def _few(cursor: duckdb.DuckDBPyConnection, statement: str, defines: Callable[[str], bool]) -> bool:
    try:
        [(text,)] = cursor.execute("SELECT system.main.json_serialize_sql(?)", [statement]).fetchall()
        [only] = json.loads(text)["statements"]
        node = only["node"]
    except (duckdb.Error, ValueError, KeyError, TypeError, RecursionError):
        return False
    if not isinstance(node, dict) or node.get("type") != "SELECT_NODE":
        return False
    for modifier in node.get("modifiers") or []:
        limit = modifier.get("limit") or {}
        text = str((limit.get("literal") or {}).get("text", ""))
        if (
            modifier.get("type") == "LIMIT_MODIFIER"
            and modifier.get("limit_type") == "ROW_COUNT"
            and limit.get("class") == "CONSTANT"
            and text.isdigit()
            and int(text) <= FEW
        ):
            return True
    if node.get("group_expressions") or node.get("group_sets"):
        return False
    items = node.get("select_list") or []
    return (
        node.get("aggregate_handling") == "STANDARD_HANDLING"
        and bool(items)
        and all(_aggregate(item, defines) for item in items)
    )


def _aggregate(item: Any, defines: Callable[[str], bool]) -> bool:
    while isinstance(item, dict) and item.get("class") == "CAST":
        item = item.get("child")
    if not isinstance(item, dict) or item.get("class") != "FUNCTION":
        return False
    name = str(item.get("function_name", "")).lower()
    unqualified = not item.get("schema") and not item.get("catalog")
    return unqualified and name in _AGGREGATES and not defines(name)


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
