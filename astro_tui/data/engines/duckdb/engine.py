"""DuckDB: a locked, read-only connection over the user's files, and guarded execution with limits.

The engine half of the read-only guarantee lives here: every database is opened
read-only, external access is switched off and the configuration locked before
any statement from outside runs. `guard.check` is the parser half.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from astro_tui.config import Settings
from astro_tui.data.cancel import CancelToken
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.engines.base import Dialect, Engine
from astro_tui.data.engines.duckdb import catalog, guard
from astro_tui.data.engines.duckdb.targets import Target, resolve_targets
from astro_tui.data.errors import QueryCancelled, QueryError, QueryTimeout, TargetError, one_line
from astro_tui.data.results import QueryResult
from astro_tui.data.watchdog import WATCHDOG, Deadline

DIALECT = Dialect(
    name="DuckDB",
    hints="DuckDB SQL: ILIKE, date_trunc, strftime, list and struct types, QUALIFY, GROUP BY ALL.",
)

_BATCH = 65_536
_BASE_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "python_enable_replacements": False,
}
_READERS = {"csv": "read_csv", "json": "read_json_auto", "parquet": "read_parquet"}


class _Running:
    """One statement on its own cursor, and whether it has ended."""

    __slots__ = ("_retry", "cursor", "done")

    def __init__(self, cursor: duckdb.DuckDBPyConnection) -> None:
        self.cursor = cursor
        self.done = threading.Event()
        self._retry: Deadline | None = None

    def stop(self, attempts: int = 200) -> None:
        """Interrupt until the statement ends: an interrupt that lands before DuckDB has
        started the statement is lost, so it is repeated every 50 ms (for at most 10 s)."""
        if self.done.is_set():
            return
        _interrupt(self.cursor)
        if attempts > 1:
            self._retry = WATCHDOG.schedule(0.05, lambda: self.stop(attempts - 1))

    def finish(self) -> None:
        """No pending retry may keep the cursor alive once the statement has ended."""
        self.done.set()
        if self._retry is not None:
            self._retry.cancel()


class DuckDBEngine(Engine):
    """The opened targets behind a locked connection; safe to use from many threads.

    `key` names the opened data for per-database state (context notes, conversations).
    """

    dialect = DIALECT

    def __init__(self, targets: Sequence[Target], settings: Settings, *, label: str, key: str) -> None:
        self.settings = settings
        self.targets = tuple(targets)
        self.label = label
        self.key = key
        self._shim_dir: Path | None = None
        try:
            self._con = self._connect()
        except BaseException:
            self._remove_shim()
            raise

    @classmethod
    def open(
        cls,
        specs: Sequence[str],
        settings: Settings,
        *,
        on_build: Callable[[str], None] | None = None,
    ) -> DuckDBEngine:
        """Open the given targets, or the sample warehouse when none are given."""
        if specs:
            targets = resolve_targets(list(specs))
            label = " ".join(specs)
            where = hashlib.sha1("\0".join(str(p) for t in targets for p in t.paths).encode()).hexdigest()
            key = "-".join(t.name for t in targets)[:60] + "-" + where[:8]
        else:
            from astro_tui.data.engines.duckdb.sample import ensure_sample

            path = ensure_sample(on_build)
            targets = [Target(str(path), "duckdb", (path,), "warehouse")]
            label = "sample warehouse"
            key = "sample"
        engine = cls(targets, settings, label=label, key=key)
        if not specs:
            from astro_tui.data.engines.duckdb.sample import context_notes

            engine.context_seed = context_notes()
        return engine

    def _connect(self) -> duckdb.DuckDBPyConnection:
        duck = [t for t in self.targets if t.kind == "duckdb"]
        files = [t for t in self.targets if t.kind != "duckdb"]
        if len(duck) == 1 and not files:
            con = self._connect_file(duck[0].paths[0], duck[0].spec)
            attach: list[Target] = []
        else:
            con = self._connect_file(self._build_shim(files), "file targets")
            attach = duck
        try:
            for target in attach:
                con.execute(f"ATTACH {_literal(str(target.paths[0]))} AS {_ident(target.name)} (READ_ONLY)")
            parquet = [str(p) for t in files if t.kind == "parquet" for p in t.paths]
            if parquet:
                con.execute(f"SET allowed_paths = [{', '.join(_literal(p) for p in parquet)}]")
            con.execute("SET enable_progress_bar = false")
            con.execute(f"SET memory_limit = {_literal(self.settings.memory_limit)}")
            con.execute(f"SET threads = {int(self.settings.threads)}")
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
        except duckdb.Error as exc:
            con.close()
            raise TargetError(f"cannot open targets: {one_line(exc)}") from None
        return con

    def _connect_file(self, path: Path, spec: str) -> duckdb.DuckDBPyConnection:
        try:
            return duckdb.connect(str(path), read_only=True, config=dict(_BASE_CONFIG))
        except duckdb.Error as exc:
            message = one_line(exc)
            if "not a valid DuckDB database file" in message or "Corrupt" in message:
                message = "not a DuckDB database file"
            raise TargetError(f"{spec}: {message}") from None

    def _build_shim(self, files: list[Target]) -> Path:
        """A private DuckDB file holding CSV/JSON as tables and Parquet as views, opened read-only.

        Materialising text files means broken rows surface when opening, and the engine
        never needs access to them again; Parquet stays lazy behind `allowed_paths`.
        """
        self._shim_dir = Path(tempfile.mkdtemp(prefix="astro-"))
        path = self._shim_dir / "targets.duckdb"
        con = duckdb.connect(str(path), config=dict(_BASE_CONFIG))
        try:
            for target in files:
                paths = "[" + ", ".join(_literal(str(p)) for p in target.paths) + "]"
                source = f"{_READERS[target.kind]}({paths})"
                verb = "VIEW" if target.kind == "parquet" else "TABLE"
                try:
                    con.execute(f"CREATE {verb} {_ident(target.name)} AS SELECT * FROM {source}")
                    if verb == "VIEW":
                        con.execute(f"SELECT * FROM {_ident(target.name)} LIMIT 0")
                    if target.kind == "csv":
                        width = len(con.execute(f"DESCRIBE {_ident(target.name)}").fetchall())
                        _check_csv_width(target, width)
                    comment = f"from {target.spec}"
                    con.execute(f"COMMENT ON {verb} {_ident(target.name)} IS {_literal(comment)}")
                except duckdb.Error as exc:
                    raise TargetError(f"{target.spec}: {one_line(exc)}") from None
            con.execute("CHECKPOINT")
        except BaseException:
            con.close()
            self._remove_shim()
            raise
        con.close()
        return path

    def _remove_shim(self) -> None:
        if self._shim_dir is not None:
            shutil.rmtree(self._shim_dir, ignore_errors=True)
            self._shim_dir = None

    def close(self) -> None:
        self._con.close()
        self._remove_shim()

    def check(self, sql: str) -> str:
        return guard.check(sql)

    def run(
        self,
        statement: str,
        *,
        cap: int | None,
        timeout: float | None,
        cancel: CancelToken | None,
    ) -> QueryResult:
        cursor = self._con.cursor()
        running = _Running(cursor)
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            running.stop()

        if cancel is not None:
            cancel.attach(running)
        started = time.perf_counter()
        timer = WATCHDOG.schedule(timeout, on_timeout) if timeout else None
        try:
            table, truncated = _fetch(cursor, statement, cap)
        except duckdb.Error as exc:
            if timed_out.is_set():
                raise QueryTimeout(f"query interrupted after the {timeout:g} s time limit") from None
            if cancel is not None and cancel.cancelled:
                raise QueryCancelled("query cancelled") from None
            raise QueryError(one_line(exc)) from None
        finally:
            running.finish()
            if timer is not None:
                timer.cancel()
            if cancel is not None:
                cancel.detach(running)
            cursor.close()
        elapsed = (time.perf_counter() - started) * 1000
        return QueryResult(statement, table, truncated, elapsed, cap)

    def load_catalog(self) -> Catalog:
        return catalog.load_catalog(self.catalog_rows)

    def catalog_rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Trusted metadata queries of our own (never model or user SQL), unguarded."""
        cursor = self._con.cursor()
        try:
            return cursor.execute(sql, list(params)).fetchall()
        except duckdb.Error as exc:
            raise QueryError(one_line(exc)) from None
        finally:
            cursor.close()


def _interrupt(cursor: duckdb.DuckDBPyConnection) -> None:
    """A statement may finish and close its cursor just as the limit or Esc fires."""
    with contextlib.suppress(duckdb.Error):
        cursor.interrupt()


def _fetch(cursor: duckdb.DuckDBPyConnection, statement: str, cap: int | None) -> tuple[pa.Table, bool]:
    """Read at most cap + 1 rows: the extra probe row is how truncation is known."""
    relation = cursor.sql(statement)
    if relation is None:
        return pa.table({}), False
    if cap is None:
        return relation.to_arrow_table(), False
    reader = relation.to_arrow_reader(min(_BATCH, cap + 1))
    batches: list[pa.RecordBatch] = []
    seen = 0
    for batch in reader:
        batches.append(batch)
        seen += batch.num_rows
        if seen > cap:
            break
    table = pa.Table.from_batches(batches, schema=reader.schema)
    if seen > cap:
        return table.slice(0, cap), True
    return table, False


def _check_csv_width(target: Target, width: int) -> None:
    """DuckDB's sniffer falls back to one column (or loses the header) on broken rows; say so."""
    for path in target.paths:
        if path.suffix.lower() in (".gz", ".zst"):
            continue
        with path.open(encoding="utf-8", errors="replace", newline="") as fh:
            first = fh.readline()
        fields = max(len(next(csv.reader([first], delimiter=d), [])) for d in ",\t;|")
        if fields > 1 and fields != width:
            raise TargetError(
                f"{target.spec}: rows do not match the header ({fields} fields in the header, "
                f"{width} read): the file has broken rows"
            )


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
