"""Read a Spark catalog in batched requests, never one request per table.

Databases of the current catalog become the schemas under `/`. Per database,
`SHOW TABLE EXTENDED IN db LIKE '*'` gives every table and view with its type,
comment, statistics ("… bytes, N rows" once ANALYZE TABLE has run: the row
estimate) and column count; `DESCRIBE DATABASE` its comment. Column names,
types, nullability and comments come from ONE analysis per batch of tables:
the schema of the tables' cross join (a plan built by the client, analyzed,
never run) is every table's columns in order, comments included, and is cut by
the column counts. Batches are small (the analyzer's cost grows faster than the
number of relations in one plan) and run side by side. A batch that fails to
analyze (a view over a dropped table) is split until the broken table is alone;
it is then shown without columns. Databases are read side by side. Temporary
views are not shown.

Why not one request per table (`spark.table(t).schema`): on a remote cluster
each is a round trip, 1,000 of them cost the network's latency 1,000 times.
The server's own cost remains: analysis resolves each table, which for a
file-based table without a cached file index lists its files.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from astro_tui.data.catalog_model import Catalog, Column, Schema, Table
from astro_tui.data.errors import QueryError

BATCH = 20
_WORKERS = 4
_STATS = re.compile(r"^Statistics: .*?(\d+) rows", re.M)
_FIELD = re.compile(r"^ \|-- ", re.M)


class Source(Protocol):
    def rows(self, sql: str) -> list[tuple[Any, ...]]: ...

    def columns_of(self, tables: list[str]) -> list[Any]: ...


@dataclass
class _Entry:
    database: str
    name: str
    kind: str
    comment: str | None
    rows: int | None
    width: int | None


def load_catalog(source: Source) -> Catalog:
    databases = [str(r[0]) for r in source.rows("SHOW DATABASES")]
    with ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="astro-spark-catalog") as pool:
        listed = list(pool.map(lambda db: _database(source, db), databases))
        batches = [entries[i : i + BATCH] for _, _, entries in listed for i in range(0, len(entries), BATCH)]
        columns: dict[tuple[str, str], tuple[Column, ...]] = {}
        for found in pool.map(lambda batch: _columns(source, batch), batches):
            columns.update(found)
    schemas = []
    for db, comment, entries in listed:
        tables = tuple(
            Table(
                database=None,
                schema=db,
                name=e.name,
                kind=e.kind,  # type: ignore[arg-type]
                columns=columns.get((db, e.name), ()),
                comment=e.comment,
                row_count=e.rows,
                identifier_quote="`",
            )
            for e in sorted(entries, key=lambda e: e.name.lower())
        )
        schemas.append(Schema(None, db, tables, comment))
    return Catalog(tuple(sorted(schemas, key=lambda s: s.name.lower())))


def _database(source: Source, db: str) -> tuple[str, str | None, list[_Entry]]:
    quoted = quote(db)
    comment = None
    try:
        for name, value in source.rows(f"DESCRIBE DATABASE {quoted}"):
            if str(name).lower() == "comment" and value:
                comment = str(value)
    except QueryError:
        pass
    try:
        listed = source.rows(f"SHOW TABLE EXTENDED IN {quoted} LIKE '*'")
    except QueryError:  # catalogs without the extended form: names only, columns counted one by one
        return (
            db,
            comment,
            [
                _Entry(db, str(r[1]), "table", None, None, None)
                for r in source.rows(f"SHOW TABLES IN {quoted}")
                if not r[2]
            ],
        )
    entries = []
    for _ns, name, temporary, info in listed:
        if temporary:
            continue
        fields = _info(str(info or ""))
        stats = _STATS.search(str(info or ""))
        schema_text = str(info or "").partition("\nSchema: root\n")[2]
        entries.append(
            _Entry(
                db,
                str(name),
                "view" if fields.get("Type", "").upper() == "VIEW" else "table",
                fields.get("Comment") or None,
                int(stats.group(1)) if stats else None,
                len(_FIELD.findall(schema_text)) if schema_text else None,
            )
        )
    return db, comment, entries


def _columns(source: Source, batch: Sequence[_Entry]) -> dict[tuple[str, str], tuple[Column, ...]]:
    """Every table's columns from one analyzed plan; split the batch where it fails or miscounts."""
    if not batch:
        return {}
    counted = all(e.width is not None for e in batch)
    if counted or len(batch) == 1:
        try:
            fields = source.columns_of([f"{quote(e.database)}.{quote(e.name)}" for e in batch])
        except QueryError:
            fields = None
        if fields is not None and len(batch) == 1:
            return {(batch[0].database, batch[0].name): _to_columns(fields)}
        if fields is not None and len(fields) == sum(e.width or 0 for e in batch):
            found, start = {}, 0
            for e in batch:
                found[(e.database, e.name)] = _to_columns(fields[start : start + (e.width or 0)])
                start += e.width or 0
            return found
        if fields is None and len(batch) == 1:
            return {}
    half = len(batch) // 2
    return {**_columns(source, batch[:half]), **_columns(source, batch[half:])}


def _to_columns(fields: Sequence[Any]) -> tuple[Column, ...]:
    return tuple(
        Column(
            str(f.name),
            str(f.dataType.simpleString()),
            bool(f.nullable),
            (f.metadata or {}).get("comment") or None,
        )
        for f in fields
    )


def _info(text: str) -> dict[str, str]:
    """The `Key: value` lines of SHOW TABLE EXTENDED's information, up to the schema tree."""
    fields: dict[str, str] = {}
    for line in text.partition("\nSchema: root")[0].splitlines():
        key, sep, value = line.partition(": ")
        if sep and key not in fields:
            fields[key.strip()] = value.strip()
    return fields


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
