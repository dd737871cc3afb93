"""Read a DuckDB catalog from DuckDB's own metadata functions in a handful of queries.

A few set-based queries, whatever the number of tables, so loading 10,000 tables
costs the same round trips as loading ten. The column query is most of the
engine's time, so it runs on a second cursor while the others run; building the
Python objects is most of the rest, so identical columns are shared and the
cyclic garbage collector is paused while hundreds of thousands of them are made.
"""

from __future__ import annotations

import dataclasses
import gc
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from astro_tui.data.catalog_model import NOT_READ, Catalog, Column, ForeignKey, Schema, Table

_HIDDEN_SCHEMAS = ("information_schema", "pg_catalog")
_USER_DBS = "SELECT database_name FROM duckdb_databases() WHERE NOT internal"
_REFERENCES = re.compile(r"REFERENCES\s+(?:(\"?[^\s\"(]+\"?)\.)?\"?([^\s\"(]+)\"?\s*\(", re.I)

_COLUMNS_SQL = f"""
    SELECT database_oid, table_oid, column_index, column_name, data_type, is_nullable, comment
    FROM duckdb_columns() WHERE database_name IN ({_USER_DBS})
"""
"""Not sorted: DuckDB would hold all 300,000 rows of a large file to sort them (~50 MB more
in the worker, most of a second); `_group_columns` orders each table's own."""
_TABLES_SQL = f"""
    SELECT database_name, database_oid, schema_name, table_name, table_oid, 'table', comment, estimated_size
    FROM duckdb_tables() WHERE database_name IN ({_USER_DBS}) AND NOT temporary
    UNION ALL
    SELECT database_name, database_oid, schema_name, view_name, view_oid, 'view', comment, NULL
    FROM duckdb_views() WHERE database_name IN ({_USER_DBS}) AND NOT internal AND NOT temporary
"""
_CONSTRAINTS_SQL = f"""
    SELECT database_name, schema_name, table_name, constraint_type,
           constraint_column_names, referenced_table, referenced_column_names, constraint_text
    FROM duckdb_constraints()
    WHERE database_name IN ({_USER_DBS}) AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')
"""
_SCHEMAS_SQL = (
    f"SELECT database_name, schema_name, comment FROM duckdb_schemas() WHERE database_name IN ({_USER_DBS})"
)

_Key = tuple[Any, Any, Any]


def load_catalog(
    rows: Callable[[str], list[tuple[Any, ...]]],
    streamed: Callable[[str], Iterable[tuple[Any, ...]]] | None = None,
) -> Catalog:
    """`streamed`, when given, reads the column rows lazily (the query itself runs at once)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        column_rows = pool.submit(streamed or rows, _COLUMNS_SQL)
        databases = [str(r[0]) for r in rows(_USER_DBS + " ORDER BY database_name")]
        tables = rows(_TABLES_SQL)
        constraints = rows(_CONSTRAINTS_SQL)
        schema_comments = {(r[0], r[1]): r[2] for r in rows(_SCHEMAS_SQL)}
        columns = column_rows.result()
    paused = gc.isenabled()
    gc.disable()
    try:
        return _build(databases, tables, columns, constraints, schema_comments)
    finally:
        if paused:
            gc.enable()


def load_outline(rows: Callable[[str], list[tuple[Any, ...]]]) -> Catalog:
    """Every schema and table without the columns and keys (`Catalog.complete` false): their
    queries are most of a catalog's time, and a tree, `ls` or a table count needs neither."""
    databases = [str(r[0]) for r in rows(_USER_DBS + " ORDER BY database_name")]
    tables = rows(_TABLES_SQL)
    schema_comments = {(r[0], r[1]): r[2] for r in rows(_SCHEMAS_SQL)}
    return _build(databases, tables, None, [], schema_comments)


def _build(
    databases: list[str],
    tables: list[tuple[Any, ...]],
    columns: Iterable[tuple[Any, ...]] | None,
    constraints: list[tuple[Any, ...]],
    schema_comments: dict[tuple[Any, Any], Any],
) -> Catalog:
    """`columns` None: an outline."""
    multi = len(databases) > 1
    cols = _group_columns(columns) if columns is not None else None
    pks: dict[_Key, tuple[str, ...]] = {}
    fks: dict[_Key, list[ForeignKey]] = defaultdict(list)
    for d, s, t, kind, names, ref_table, ref_cols, text in constraints:
        if kind == "PRIMARY KEY":
            pks[(d, s, t)] = tuple(names)
            continue
        match = _REFERENCES.search(str(text or ""))
        ref_schema = match.group(1).strip('"') if match and match.group(1) else s
        fks[(d, s, t)].append(
            ForeignKey(tuple(names), str(ref_schema), str(ref_table), tuple(ref_cols or ()))
        )
    by_schema: dict[tuple[Any, Any], list[Table]] = defaultdict(list)
    for d, d_oid, s, t, oid, kind, comment, size in tables:
        if s in _HIDDEN_SCHEMAS:
            continue
        key = (d, s, t)
        by_schema[(d, s)].append(
            Table(
                database=str(d) if multi else None,
                schema=str(s),
                name=str(t),
                kind=kind,
                columns=cols.get((d_oid, oid), ()) if cols is not None else NOT_READ,
                comment=comment or None,
                primary_key=pks.get(key, ()) if cols is not None else NOT_READ,
                foreign_keys=tuple(fks.get(key, ())) if cols is not None else NOT_READ,
                row_count=int(size) if size is not None else None,
            )
        )
    schemas = tuple(
        Schema(
            str(d) if multi else None,
            str(s),
            tuple(sorted(ts, key=lambda t: t.name.lower())),
            schema_comments.get((d, s)),
        )
        for (d, s), ts in sorted(by_schema.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]).lower()))
    )
    return Catalog(schemas, tuple(databases) if multi else (), complete=cols is not None)


def _group_columns(rows: Iterable[tuple[Any, ...]]) -> dict[tuple[Any, Any], tuple[Column, ...]]:
    """Each table's columns in their order; the same (name, type, nullable, comment) is one
    shared Column. DuckDB gives a table's rows together and in order, but nothing here
    depends on it. Columns and positions are kept in two flat lists per table, not a pair per
    column: 300,000 pairs held the worker ~20 MB higher while a large catalog was read."""
    shared: dict[tuple[Any, ...], Column] = {}
    grouped: dict[tuple[Any, Any], list[Column]] = defaultdict(list)
    positions: dict[tuple[Any, Any], list[int]] = defaultdict(list)
    for d_oid, t_oid, index, name, dtype, nullable, comment in rows:
        spec = (name, dtype, nullable, comment)
        column = shared.get(spec)
        if column is None:
            column = shared[spec] = Column(str(name), str(dtype), bool(nullable), comment or None)
        grouped[(d_oid, t_oid)].append(column)
        positions[(d_oid, t_oid)].append(index)
    return {key: _in_order(positions[key], columns) for key, columns in grouped.items()}


def _in_order(positions: list[int], columns: list[Column]) -> tuple[Column, ...]:
    if any(positions[i] > positions[i + 1] for i in range(len(positions) - 1)):
        return tuple(column for _, column in sorted(zip(positions, columns, strict=True), key=lambda p: p[0]))
    return tuple(columns)


def with_row_counts(cat: Catalog, counts: dict[str, int], shim: str = "targets") -> Catalog:
    """Views over Parquet files show as the tables they are, with the files' own row counts."""
    if not counts:
        return cat

    def table(t: Table) -> Table:
        n = counts.get(t.name) if t.database in (None, shim) and t.kind == "view" else None
        return t if n is None else dataclasses.replace(t, kind="table", row_count=n)

    schemas = tuple(dataclasses.replace(s, tables=tuple(table(t) for t in s.tables)) for s in cat.schemas)
    return Catalog(
        schemas, cat.databases, cat.complete
    )  # not replace(): that would copy the filled lookup indexes
