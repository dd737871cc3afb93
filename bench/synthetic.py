"""A large, realistic-looking catalog in a real DuckDB file, for benchmarks at scale.

Deterministic (seeded), built once and reused: DuckDB spends most of a build on
`COMMENT ON COLUMN` (one catalog alteration each, about half a millisecond), so
the 10,000 × 30 catalog takes a couple of minutes the first time and nothing
afterwards. A sidecar `<file>.json` records the parameters the file was built with.
"""

from __future__ import annotations

import json
import os
import random
import threading
from pathlib import Path
from typing import NamedTuple

import duckdb

_VERSION = 1

SCHEMAS = (
    "sales", "marketing", "finance", "hr", "inventory", "logistics", "support", "product",
    "analytics", "billing", "crm", "web", "mobile", "ops", "security", "legal",
    "procurement", "manufacturing", "research", "platform",
)  # fmt: skip

_ENTITIES = (
    "customer", "order", "invoice", "payment", "shipment", "product", "supplier", "employee",
    "campaign", "session", "ticket", "contract", "account", "subscription", "refund", "store",
    "warehouse", "device", "user", "event", "lead", "opportunity", "budget", "asset", "vendor",
    "partner", "region", "channel", "promotion", "review", "return", "delivery", "route",
    "vehicle", "incident", "alert", "job", "task", "release", "experiment", "survey",
    "course", "project", "meeting", "expense", "ledger", "tax", "price", "discount", "carrier",
)  # fmt: skip

_QUALIFIERS = (
    "events", "history", "snapshot", "daily", "monthly", "facts", "dim", "staging", "lines",
    "items", "log", "summary", "audit", "archive", "metrics", "status", "links", "notes",
    "scores", "targets",
)  # fmt: skip

_COLUMN_POOL: tuple[tuple[str, str, str], ...] = (
    ("name", "VARCHAR", "Display name of the {e}."),
    ("status", "VARCHAR", "Lifecycle status of the {e}: active, paused or closed."),
    ("created_at", "TIMESTAMP", "When the {e} was first recorded."),
    ("updated_at", "TIMESTAMP", "When the {e} was last changed."),
    ("amount", "DECIMAL(12,2)", "Monetary amount of the {e}, in the account currency."),
    ("currency", "VARCHAR", "ISO 4217 currency code of the amount."),
    ("quantity", "INTEGER", "Number of units on the {e}."),
    ("region_name", "VARCHAR", "Sales region the {e} belongs to."),
    ("country_code", "VARCHAR", "ISO country code where the {e} happened."),
    ("city", "VARCHAR", "City of the {e}."),
    ("email", "VARCHAR", "Contact e-mail address for the {e}."),
    ("phone_number", "VARCHAR", "Contact phone number."),
    ("category", "VARCHAR", "Category used in reporting for the {e}."),
    ("channel", "VARCHAR", "Acquisition or sales channel of the {e}."),
    ("description", "VARCHAR", "Free-text description of the {e}."),
    ("is_deleted", "BOOLEAN", "Soft-delete flag; true rows should usually be excluded."),
    ("score", "DOUBLE", "Model score between 0 and 1 for the {e}."),
    ("priority", "SMALLINT", "Priority from 1 (highest) to 5."),
    ("owner_id", "BIGINT", "Employee who owns the {e}."),
    ("started_on", "DATE", "First day the {e} was in effect."),
    ("ended_on", "DATE", "Last day the {e} was in effect, null while open."),
    ("discount_rate", "DOUBLE", "Discount applied to the {e}, as a fraction."),
    ("tax_amount", "DECIMAL(12,2)", "Tax charged on the {e}."),
    ("revenue", "DECIMAL(14,2)", "Recognised revenue attributed to the {e}."),
    ("cost", "DECIMAL(14,2)", "Direct cost attributed to the {e}."),
    ("duration_s", "INTEGER", "Duration of the {e} in seconds."),
    ("source_system", "VARCHAR", "Upstream system the {e} was loaded from."),
    ("external_ref", "VARCHAR", "Identifier of the {e} in the source system."),
    ("latitude", "DOUBLE", "Latitude of the {e} location."),
    ("longitude", "DOUBLE", "Longitude of the {e} location."),
    ("segment", "VARCHAR", "Customer segment: consumer, small business or enterprise."),
    ("language", "VARCHAR", "Preferred language of the {e}."),
    ("rating", "SMALLINT", "Rating from 1 to 5 given to the {e}."),
    ("url", "VARCHAR", "Web address associated with the {e}."),
    ("version", "INTEGER", "Row version, incremented on every change."),
    ("notes", "VARCHAR", "Operator notes about the {e}."),
    ("weight_kg", "DOUBLE", "Weight of the {e} in kilograms."),
    ("approved_by", "VARCHAR", "Who approved the {e}."),
    ("approved_at", "TIMESTAMP", "When the {e} was approved."),
    ("tier", "VARCHAR", "Service tier: bronze, silver or gold."),
)


def synthetic_catalog_db(path: Path, tables: int = 10_000, columns: int = 30) -> Path:
    """Build (or reuse) a DuckDB file with `tables` commented tables/views of `columns` columns."""
    path = Path(path)
    marker = path.with_name(path.name + ".json")
    wanted = {"tables": tables, "columns": columns, "version": _VERSION}
    if path.exists() and marker.exists():
        try:
            if json.loads(marker.read_text()) == wanted:
                return path
        except (OSError, ValueError):
            pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".building")
    for stale in (tmp, tmp.with_name(tmp.name + ".wal")):
        if stale.exists():
            stale.unlink()
    _build(tmp, tables, columns)
    os.replace(tmp, path)
    marker.write_text(json.dumps(wanted))
    return path


def _build(path: Path, tables: int, columns: int) -> None:
    rng = random.Random(20240601)
    plan = _plan(rng, tables, columns)
    con = duckdb.connect(str(path))
    try:
        schemas = sorted({e.schema for e in plan})
        con.execute(";".join(f"CREATE SCHEMA {_q(s)}" for s in schemas))
        halves = [[e for e in plan if e.schema in schemas[i::2]] for i in range(2)]
        _parallel(con, [_ddl(h) for h in halves])
        _parallel(con, [_comments(h) for h in halves])
        con.execute(_rows(plan))
        con.execute("CHECKPOINT")
    finally:
        con.close()


class _Entry(NamedTuple):
    schema: str
    name: str
    kind: str
    comment: str
    columns: list[tuple[str, str, str]]
    parent: str | None


def _plan(rng: random.Random, tables: int, columns: int) -> list[_Entry]:
    """Every table in creation order; a view or foreign key points at the schema's previous table."""
    per_schema = max(1, -(-tables // len(SCHEMAS)))
    plan: list[_Entry] = []
    previous: dict[str, str] = {}
    for n in range(tables):
        schema = SCHEMAS[n // per_schema % len(SCHEMAS)]
        entity = rng.choice(_ENTITIES)
        qualifier = rng.choice(_QUALIFIERS)
        name = f"{entity}_{qualifier}_{n:05d}"
        if n % 997 == 5:
            name = f"{entity.title()} {qualifier.title()} {n}"
        elif n % 991 == 7:
            name = f"{entity}.{qualifier}.{n}"
        comment = (
            f"One row per {entity} {qualifier.replace('_', ' ')} in the {schema} domain; "
            f"loaded nightly from the {rng.choice(('erp', 'crm', 'web shop', 'data lake'))}."
        )
        pool = rng.sample(_COLUMN_POOL, min(columns - 1, len(_COLUMN_POOL)))
        cols = [("id", "BIGINT", f"Unique identifier of the {entity} {qualifier}.")]
        for i in range(columns - 1):
            cname, ctype, ccomment = pool[i % len(pool)]
            if i >= len(pool):
                cname = f"{cname}_{i}"
            cols.append((cname, ctype, ccomment.format(e=entity)))
        parent = previous.get(schema)
        kind = "view" if parent and n % 20 == 19 else "table"
        if kind == "table":
            previous[schema] = f"{_q(schema)}.{_q(name)}"
        linked = parent if n % 3 == 0 or kind == "view" else None
        if linked and kind == "table":
            cols[-1] = ("parent_id", "BIGINT", f"The {entity} this row derives from.")
        plan.append(_Entry(schema, name, kind, comment, cols, linked))
    return plan


def _ddl(plan: list[_Entry]) -> str:
    parts = ["BEGIN"]
    for e in plan:
        qualified = f"{_q(e.schema)}.{_q(e.name)}"
        if e.kind == "view":
            parts.append(f"CREATE VIEW {qualified} AS SELECT * FROM {e.parent}")
            continue
        body = [f"{_q(c)} {t}" + (" PRIMARY KEY" if c == "id" else "") for c, t, _ in e.columns]
        if e.parent:
            body[-1] += f" REFERENCES {e.parent}(id)"
        parts.append(f"CREATE TABLE {qualified} ({', '.join(body)})")
    parts.append("COMMIT")
    return ";\n".join(parts)


def _comments(plan: list[_Entry]) -> str:
    parts = ["BEGIN"]
    for e in plan:
        qualified = f"{_q(e.schema)}.{_q(e.name)}"
        parts.append(f"COMMENT ON {e.kind.upper()} {qualified} IS {_lit(e.comment)}")
        if e.kind == "table":
            parts.extend(f"COMMENT ON COLUMN {qualified}.{_q(c)} IS {_lit(cc)}" for c, _, cc in e.columns)
    parts.append("COMMIT")
    return ";\n".join(parts)


def _rows(plan: list[_Entry]) -> str:
    """A few rows in one table of fifty, with one known value to find by keyword."""
    parts = ["BEGIN"]
    marked = False
    for n, e in enumerate(plan):
        names = [c for c, t, _ in e.columns if t == "VARCHAR"]
        if n % 50 != 1 or e.kind != "table" or not names:
            continue
        values = ", ".join(f"'{c} ' || (i % 7)" for c in names)
        qualified = f"{_q(e.schema)}.{_q(e.name)}"
        parts.append(
            f"INSERT INTO {qualified} (id, {', '.join(_q(c) for c in names)}) "
            f"SELECT i, {values} FROM range(200) t(i)"
        )
        if not marked and "region_name" in names:
            parts.append(f"UPDATE {qualified} SET region_name = 'East China' WHERE id % 5 = 0")
            marked = True
    parts.append("COMMIT")
    return ";\n".join(parts)


def _parallel(con: duckdb.DuckDBPyConnection, scripts: list[str]) -> None:
    """DuckDB runs DDL on separate cursors concurrently; on two cores this nearly halves the build."""
    errors: list[BaseException] = []

    def run(script: str) -> None:
        cursor = con.cursor()
        try:
            cursor.execute(script)
        except BaseException as exc:
            errors.append(exc)
        finally:
            cursor.close()

    threads = [threading.Thread(target=run, args=(s,)) for s in scripts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
