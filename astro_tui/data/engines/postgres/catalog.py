"""Read a PostgreSQL catalog from pg_catalog in five set-based queries, whatever the number of tables.

What is shown: every schema but the system ones (`pg_*`, information_schema);
tables, views, materialized views and foreign tables; a partitioned table once,
its partitions hidden, with the partitions' row estimates summed. Comments come
from pg_description (what `obj_description`/`col_description` read), types from
`format_type`, keys from pg_constraint, row counts from `reltuples` (an estimate
kept by ANALYZE/autovacuum; -1 or 0 means not known yet, shown as unknown).

The column query is most of the time at scale, so it runs on a second pooled
connection while the others run; key columns are named from its rows rather
than by a correlated lookup per constraint (which cost a second at 10,000 tables).
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from astro_tui.data.catalog_model import Catalog, Column, ForeignKey, Schema, Table

Rows = Callable[[str], list[tuple[Any, ...]]]

_VISIBLE_SCHEMA = "n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'"
_SHOWN_RELATION = f"c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition AND {_VISIBLE_SCHEMA}"

_SCHEMAS_SQL = f"""
SELECT n.nspname::text, d.description
FROM pg_catalog.pg_namespace n
LEFT JOIN pg_catalog.pg_description d
  ON d.objoid = n.oid AND d.classoid = 'pg_catalog.pg_namespace'::regclass AND d.objsubid = 0
WHERE {_VISIBLE_SCHEMA}
"""
_RELATIONS_SQL = f"""
SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, d.description, c.reltuples::float8
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_description d
  ON d.objoid = c.oid AND d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = 0
WHERE {_SHOWN_RELATION}
"""
_COLUMNS_SQL = f"""
SELECT a.attrelid::int8, a.attnum::int4, a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod),
       NOT a.attnotnull, d.description
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_description d
  ON d.objoid = a.attrelid AND d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = a.attnum
WHERE a.attnum > 0 AND NOT a.attisdropped AND {_SHOWN_RELATION}
ORDER BY a.attrelid, a.attnum
"""
_KEYS_SQL = """
SELECT con.conrelid::int8, con.contype::text, con.conkey::int4[], con.confrelid::int8, con.confkey::int4[]
FROM pg_catalog.pg_constraint con
WHERE con.contype IN ('p', 'f') AND con.conparentid = 0 AND con.conrelid <> 0
"""
_PARTITIONS_SQL = """
SELECT i.inhparent::int8, i.inhrelid::int8, c.reltuples::float8
FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
WHERE c.relispartition
"""
_KINDS = {"r": "table", "p": "table", "f": "table", "v": "view", "m": "view"}


def load_catalog(rows: Rows) -> Catalog:
    with ThreadPoolExecutor(max_workers=1) as pool:
        column_rows = pool.submit(rows, _COLUMNS_SQL)
        schema_comments = {str(name): comment for name, comment in rows(_SCHEMAS_SQL)}
        relations = rows(_RELATIONS_SQL)
        keys = rows(_KEYS_SQL)
        partitions = rows(_PARTITIONS_SQL)
        columns = column_rows.result()
    paused = gc.isenabled()
    gc.disable()
    try:
        return _build(relations, columns, keys, partitions, schema_comments)
    finally:
        if paused:
            gc.enable()


def _build(
    relations: list[tuple[Any, ...]],
    columns: list[tuple[Any, ...]],
    keys: list[tuple[Any, ...]],
    partitions: list[tuple[Any, ...]],
    schema_comments: dict[str, str | None],
) -> Catalog:
    cols = _group_columns(columns)
    keyed = {k[0] for k in keys} | {k[3] for k in keys}
    names = {(oid, num): name for oid, num, name, *_ in columns if oid in keyed}
    where = {oid: (schema, name) for oid, schema, name, *_ in relations}
    pks: dict[int, tuple[str, ...]] = {}
    fks: dict[int, list[ForeignKey]] = defaultdict(list)
    for oid, kind, key, ref_oid, ref_key in keys:
        if oid not in where:
            continue
        own = tuple(names.get((oid, n), "?") for n in key or ())
        if kind == "p":
            pks[oid] = own
        elif ref_oid in where:  # a referenced table in a hidden schema is not shown either
            ref_schema, ref_table = where[ref_oid]
            ref_cols = tuple(names.get((ref_oid, n), "?") for n in ref_key or ())
            fks[oid].append(ForeignKey(own, ref_schema, ref_table, ref_cols))
    leaf_rows = _partition_rows(partitions)
    by_schema: dict[str, list[Table]] = defaultdict(list)
    for oid, schema, name, kind, comment, reltuples in relations:
        estimate = leaf_rows.get(oid) if kind == "p" else _estimate(reltuples)
        by_schema[schema].append(
            Table(
                database=None,
                schema=schema,
                name=name,
                kind=_KINDS.get(kind, "table"),  # type: ignore[arg-type]
                columns=cols.get(oid, ()),
                comment=comment or None,
                primary_key=pks.get(oid, ()),
                foreign_keys=tuple(fks.get(oid, ())),
                row_count=estimate,
            )
        )
    schemas = tuple(
        Schema(None, s, tuple(sorted(ts, key=lambda t: t.name.lower())), schema_comments.get(s) or None)
        for s, ts in sorted(by_schema.items(), key=lambda kv: kv[0].lower())
    )
    return Catalog(schemas)


def _estimate(reltuples: float | None) -> int | None:
    """-1 (never analyzed) and 0 (unknown before PostgreSQL 14, or empty) say nothing reliable."""
    if reltuples is None or reltuples <= 0:
        return None
    return round(reltuples)


def _partition_rows(partitions: list[tuple[Any, ...]]) -> dict[int, int | None]:
    """Each partitioned table's estimate: the sum over its leaf partitions, at any depth."""
    children: dict[int, list[int]] = defaultdict(list)
    own: dict[int, float] = {}
    for parent, child, reltuples in partitions:
        children[parent].append(child)
        own[child] = reltuples
    totals: dict[int, int | None] = {}

    def total(oid: int) -> int | None:
        if oid in totals:
            return totals[oid]
        kids = children.get(oid)
        if not kids:
            value = _estimate(own.get(oid))
        else:
            parts = [total(k) for k in kids]
            known = [p for p in parts if p is not None]
            value = sum(known) if known else None
        totals[oid] = value
        return value

    for parent in list(children):
        total(parent)
    return totals


def _group_columns(rows: list[tuple[Any, ...]]) -> dict[int, tuple[Column, ...]]:
    """Rows arrive ordered by table; the same (name, type, nullable, comment) is one shared Column."""
    shared: dict[tuple[Any, ...], Column] = {}
    grouped: dict[int, tuple[Column, ...]] = {}
    current: list[Column] = []
    key: int | None = None
    for oid, _num, name, dtype, nullable, comment in rows:
        if oid != key:
            if key is not None:
                grouped[key] = tuple(current)
            key, current = oid, []
        spec = (name, dtype, nullable, comment)
        column = shared.get(spec)
        if column is None:
            column = shared[spec] = Column(str(name), str(dtype), bool(nullable), comment or None)
        current.append(column)
    if key is not None:
        grouped[key] = tuple(current)
    return grouped
