"""The sample warehouse: built from SQL on first use, cached under a content name.

The wheel ships the SQL, not a database file: it stays small, the data can be
read and reviewed, and the build is deterministic, so a digest of the SQL (and
the engine that runs it) names the file and a changed build never reuses a stale one.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import duckdb

from astro_tui.config import cache_dir
from astro_tui.data.errors import DataError, one_line
from astro_tui.resources import resource_dir


class SampleBuildError(DataError):
    """A build file failed; the message says so and names the file and DuckDB's error."""


def build_sql_files() -> list[Path]:
    """Run in name order, so the numeric prefixes are the dependency order."""
    return sorted(resource_dir("warehouse").glob("*.sql"))


def build_digest() -> str:
    """The engine version is part of the digest: `hash()` values and the storage
    format may change between DuckDB releases, and either would change the file."""
    digest = hashlib.sha256()
    digest.update(f"duckdb {duckdb.__version__}\n".encode())
    for path in build_sql_files():
        digest.update(f"{path.name}\n".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def sample_path() -> Path:
    return cache_dir() / f"warehouse-{build_digest()}.duckdb"


def sample_exists() -> bool:
    return sample_path().is_file()


def build_sample(target: Path, *, threads: int | None = None) -> float:
    """Build beside the target and rename, so a reader never sees a half-built file
    and two racing builders just replace each other's identical result."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    config = {} if threads is None else {"threads": threads}
    started = time.perf_counter()
    try:
        con = duckdb.connect(str(tmp), config=config)
        try:
            # DuckDB draws a progress bar on the terminal for slow statements, which
            # would scribble over the full-screen app.
            con.execute("SET enable_progress_bar = false")
            for path in build_sql_files():
                try:
                    con.execute(path.read_text(encoding="utf-8"))
                except duckdb.Error as exc:
                    raise SampleBuildError(
                        f"the sample warehouse could not be built: {path.name}: {one_line(exc)}"
                    ) from exc
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, target)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)
    return time.perf_counter() - started


def ensure_sample(on_build: Callable[[str], None] | None = None) -> Path:
    """The caller gets a message before the only slow step, so it can show it on
    screen first; racing processes are safe because `build_sample` renames atomically.
    Builds of earlier versions (~60 MB each) are removed once the new one exists."""
    path = sample_path()
    if path.is_file():
        return path
    if on_build is not None:
        on_build("Building the sample warehouse (first run only; a few seconds)…")
    build_sample(path)
    for stale in path.parent.glob("warehouse-*.duckdb"):
        if stale != path:
            stale.unlink(missing_ok=True)
    return path


def content_digest(path: Path) -> str:
    """Independent of row order, file layout, thread count and the file's name, so
    two builds compare equal exactly when every value and every comment matches.

    Rows are fingerprinted as a multiset (count plus exact sums of two 64-bit row
    hashes) instead of by sorting them: equal in effect, and ~100x faster than an
    ordered string_agg, which DuckDB runs on one thread. Row hashes come from the
    engine, so only compare digests made with the same DuckDB version."""
    digest = hashlib.sha256()
    con = duckdb.connect(str(path), read_only=True)
    try:
        db = con.execute("SELECT current_database()").fetchone()[0]
        tables = con.execute(
            "SELECT schema_name, table_name, coalesce(comment, '') FROM duckdb_tables() "
            "WHERE database_name = ? AND NOT temporary ORDER BY schema_name, table_name",
            [db],
        ).fetchall()
        for schema, table, comment in tables:
            rows, sum_a, sum_b = con.execute(
                "SELECT count(*), coalesce(sum(CAST(hash(t) AS HUGEINT)), 0), "
                "coalesce(sum(CAST(hash(t, 'astro-digest') AS HUGEINT)), 0) "
                f'FROM "{schema}"."{table}" AS t'
            ).fetchone()
            digest.update(f"table {schema}.{table} {rows} {sum_a} {sum_b}\n{comment}\n".encode())
        catalog_queries = [
            "SELECT schema_name, view_name, sql, coalesce(comment, '') FROM duckdb_views() "
            "WHERE database_name = ? AND NOT internal ORDER BY schema_name, view_name",
            "SELECT schema_name, table_name, column_index, column_name, data_type, is_nullable, "
            "coalesce(comment, '') FROM duckdb_columns() WHERE database_name = ? AND NOT internal "
            "ORDER BY schema_name, table_name, column_index",
            "SELECT schema_name, table_name, constraint_type, constraint_text FROM "
            "duckdb_constraints() WHERE database_name = ? ORDER BY ALL",
        ]
        for query in catalog_queries:
            for row in con.execute(query, [db]).fetchall():
                digest.update(("\t".join(str(v) for v in row) + "\n").encode())
    finally:
        con.close()
    return digest.hexdigest()


def context_notes() -> str:
    return (resource_dir("warehouse") / "context.md").read_text(encoding="utf-8")
