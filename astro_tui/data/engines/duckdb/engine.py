"""DuckDB: a locked, read-only connection over the user's files, and guarded execution with limits.

The engine half of the read-only guarantee lives here: every database is opened
read-only, external access is switched off and the configuration locked before
any statement from outside runs. `guard.check` is the parser half.

The database is opened only in the worker process (`pool.py`): opening a file of
10,000 tables takes DuckDB over a second and half a gigabyte, paid once there and
not again here. The guard runs there too, under the statement's limits, where the
names in a statement can be resolved against the file; this process imports
DuckDB only to read file targets. So opening the engine returns at once and
starts no process; the catalog of a file opened before comes from
`catalog_cache` (so `astro shell` never opens the file); the worker starts when
a statement is checked, a metadata query or an uncached catalog needs it, or
`ready()` asks; and an error opening the file (a lock, not a DuckDB file) is
raised by the call that waits for it.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from astro_tui.config import Settings, cache_dir
from astro_tui.data.cancel import CancelToken
from astro_tui.data.engines.base import Dialect, Engine, FirstRows
from astro_tui.data.engines.duckdb import identity, inline, scratch
from astro_tui.data.engines.duckdb.inline import InlineRunner
from astro_tui.data.engines.duckdb.pool import WorkerPool
from astro_tui.data.engines.duckdb.targets import Target, file_stem, identifier, resolve_targets, shown_path
from astro_tui.data.errors import (
    QueryError,
    TargetError,
    engine_message,
    lock_message,
    one_line,
)
from astro_tui.data.input_limits import check_length
from astro_tui.data.results import QueryResult, RowSink
from astro_tui.data.scope import Scope

if TYPE_CHECKING:
    import duckdb

    from astro_tui.data.catalog_model import Catalog

DIALECT = Dialect(
    name="DuckDB",
    hints="DuckDB SQL: ILIKE, date_trunc, strftime, list and struct types, QUALIFY, GROUP BY ALL.",
)

_BASE_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "python_enable_replacements": False,
}
_SPILL_LIMIT = "8GiB"
"""Disk a query may spill into the private temp directory before DuckDB stops it."""
_READERS = {"csv": "read_csv", "json": "read_json_auto", "parquet": "read_parquet"}
_MISSING_TABLE = re.compile(r"Catalog Error: Table with name .* does not exist")
_LISTED_TABLES = 8
_SEPARATORS = ",;\t|"
_HEADER_WORDS = 5
_PROSE_SAMPLE = 64 * 1024
_PROSE_LINES = 200
_SPLIT_SHARE = 0.1
_FIRST_PASS_CHARS = 2000
"""What a statement keeps of its time limit when its check took nearly all of it."""
_OUTLINE = "\0outline"
"""Appended to a catalog's cache key for its outline (schemas and tables, no columns)."""


class DuckDBEngine(Engine):
    """The opened targets behind a locked connection; safe to use from many threads.

    `key` names the opened data for per-database state (context notes, conversations).
    """

    dialect = DIALECT

    def __init__(
        self,
        targets: Sequence[Target],
        settings: Settings,
        *,
        label: str,
        key: str,
        one_shot: bool = False,
        scope: Scope | None = None,
    ) -> None:
        self.settings = settings
        self.scope = Scope.parse(settings.hide) if scope is None else scope
        self.targets = tuple(targets)
        self.label = label
        self.key = key
        self._shim_dir: Path | None = None
        scratch.sweep()  # what an astro killed outright left behind
        self._spill_dir = scratch.make("spill")
        self._parquet_rows: dict[str, int] = {}
        self._file_tables: dict[str, str] = {}
        try:
            setup = self._prepare()
            runner = InlineRunner if one_shot and inline.available() else WorkerPool
            self._pool: WorkerPool | InlineRunner = runner(
                setup, settings.memory_limit, open_error=self._open_error
            )
        except OSError as exc:
            self._remove_temp_dirs()
            where = f" ({exc.filename})" if exc.filename else ""
            raise TargetError(f"cannot open the targets: {exc.strerror or exc}{where}") from None
        except BaseException:
            self._remove_temp_dirs()
            raise

    @classmethod
    def open(
        cls,
        specs: Sequence[str],
        settings: Settings,
        *,
        on_build: Callable[[str], None] | None = None,
        one_shot: bool = False,
        scope: Scope | None = None,
    ) -> DuckDBEngine:
        """Open the given targets, or the sample warehouse when none are given. `one_shot`:
        this process runs one command and ends, so it runs statements itself (`inline.py`)."""
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
        engine = cls(targets, settings, label=label, key=key, one_shot=one_shot, scope=scope)
        if not specs:
            from astro_tui.data.engines.duckdb.sample import context_notes

            engine.context_seed = context_notes()
        return engine

    def _prepare(self) -> dict[str, Any]:
        """How a worker opens the targets: the file to open (the user's, or a private shim
        holding file targets) and the statements that attach the rest and lock it down."""
        duck = [t for t in self.targets if t.kind == "duckdb"]
        files = [t for t in self.targets if t.kind != "duckdb"]
        if len(duck) == 1 and not files:
            path = duck[0].paths[0]
            attach: list[Target] = []
        else:
            path = self._build_shim(files)
            attach = duck
        steps = [f"ATTACH {_literal(str(t.paths[0]))} AS {_ident(t.name)} (READ_ONLY)" for t in attach]
        parquet = [str(p) for t in files if t.kind == "parquet" for p in t.paths]
        if parquet:
            steps.append(f"SET allowed_paths = [{', '.join(_literal(p) for p in parquet)}]")
        spill = str(self._spill_dir)
        steps += [
            "SET enable_progress_bar = false",
            f"SET memory_limit = {_literal(self.settings.memory_limit)}",
            # DuckDB spills beside the database (`<file>.tmp/`) by default: never beside the user's data.
            f"SET temp_directory = {_literal(spill)}",
            f"SET max_temp_directory_size = {_literal(_SPILL_LIMIT)}",
            # Nothing of the user's home: no stored secrets or extensions are loaded, and a
            # setting a statement might still show names only this private directory.
            f"SET home_directory = {_literal(spill)}",
            f"SET secret_directory = {_literal(os.path.join(spill, 'secrets'))}",
            f"SET extension_directory = {_literal(os.path.join(spill, 'extensions'))}",
            "SET allow_persistent_secrets = false",
            f"SET threads = {int(self.settings.threads)}",
            "SET enable_external_access = false",
            "SET lock_configuration = true",
        ]
        own_views = [["targets", "main", name] for name in self._parquet_rows]
        kept = None
        if not files:  # file targets are read into a new private file on every open
            from astro_tui.data.engines.duckdb import definitions_cache

            kept = definitions_cache.planned(self._duckdb_files(), cache_dir() / "definitions")
        return {
            "path": str(path),
            # Also while the file opens (`worker._OPENING_MEMORY`: a log replayed may spill).
            "config": {**_BASE_CONFIG, "temp_directory": spill, "max_temp_directory_size": _SPILL_LIMIT},
            "statements": steps,
            "scratch": [str(d) for d in (self._spill_dir, self._shim_dir) if d is not None],
            "trusted_views": own_views,
            "definitions_kept": kept,
            "view_rows": dict(self._parquet_rows),
            "hide": self.scope.texts,
        }

    def _open_error(self, message: str, stage: str) -> TargetError:
        """A worker's failure to open the targets, worded for the user: opening the file names
        it; a setup statement (an attached file, a setting) fails for the targets as a whole."""
        duck = [t for t in self.targets if t.kind == "duckdb"]
        if stage == "open" and len(duck) == 1 and len(self.targets) == 1:
            spec = duck[0].spec
            locked = lock_message(spec, message)
            if locked:
                return TargetError(locked)
            if "not a valid DuckDB database file" in message or "Corrupt" in message:
                message = "not a DuckDB database file"
            return TargetError(f"{spec}: {message}")
        for target in duck:
            locked = lock_message(target.spec, message)
            if locked and str(target.paths[0]) in message:
                return TargetError(locked)
        return TargetError(f"cannot open targets: {message}")

    def _catalog_key(self) -> str | None:
        """The identity of what the catalog is read from, or None when it cannot be cached
        (file targets are read into a new private file on every open)."""
        if any(t.kind != "duckdb" for t in self.targets):
            return None
        from astro_tui.data import catalog_cache
        from astro_tui.data.engines.duckdb import catalog

        files = identity.files_identity(self._duckdb_files())
        if files is None:
            return None
        return "\n".join([identity.duckdb_identity(), catalog_cache.code_digest(catalog), files])

    def _duckdb_files(self) -> list[tuple[str, str]]:
        return [(t.name, str(t.paths[0])) for t in self.targets if t.kind == "duckdb"]

    def _build_shim(self, files: list[Target]) -> Path:
        """A private DuckDB file holding CSV/JSON as tables and Parquet as views, opened read-only.

        Materialising text files means broken rows surface when opening, and the engine
        never needs access to them again; Parquet stays lazy behind `allowed_paths`, its
        row counts read from the files' own metadata.
        """
        import duckdb

        self._shim_dir = scratch.make("files")
        path = self._shim_dir / "targets.duckdb"
        con = duckdb.connect(str(path), config=dict(_BASE_CONFIG))
        taken = {t.name.lower() for t in self.targets}
        try:
            for target in files:
                try:
                    for name, paths, union in _tables_of(con, target, taken):
                        self._create(con, target, name, paths, union)
                except duckdb.Error as exc:
                    raise TargetError(f"{target.spec}: {engine_message(exc)}") from None
            con.execute("CHECKPOINT")
        except BaseException:
            con.close()
            self._remove_shim()
            raise
        con.close()
        return path

    def _create(
        self, con: duckdb.DuckDBPyConnection, target: Target, name: str, paths: tuple[Path, ...], union: bool
    ) -> None:
        spec = target.spec if len(paths) == len(target.paths) else shown_path(target, paths[0])
        if target.kind != "parquet":
            for file in paths:
                _check_not_empty(file, spec)
        listed = "[" + ", ".join(_literal(str(p)) for p in paths) + "]"
        options = ", union_by_name = true" if union else ""
        source = f"{_READERS[target.kind]}({listed}{options})"
        verb = "VIEW" if target.kind == "parquet" else "TABLE"
        con.execute(f"CREATE {verb} {_ident(name)} AS SELECT * FROM {source}")
        if verb == "VIEW":
            con.execute(f"SELECT * FROM {_ident(name)} LIMIT 0")
            rows = con.execute(f"SELECT sum(num_rows) FROM parquet_file_metadata({listed})").fetchone()
            self._parquet_rows[name] = int(rows[0] or 0) if rows else 0
        else:
            columns = con.execute(f"DESCRIBE {_ident(name)}").fetchall()
            if target.kind == "csv":
                prose, sure = _prose(paths, [str(c[0]) for c in columns])
                if not sure:
                    _check_csv_width(spec, paths, len(columns))
                if prose:
                    raise TargetError(f"{spec}: not delimited data ({prose}: plain text?)")
            count = con.execute(f"SELECT count(*) FROM {_ident(name)}").fetchone()
            if count is not None and count[0] == 0:
                what = "no rows (only a header)" if target.kind == "csv" else "no rows"
                raise TargetError(f"{spec}: {what}: nothing to open")
        self._file_tables[name] = spec
        comment = f"from {spec}"
        con.execute(f"COMMENT ON {verb} {_ident(name)} IS {_literal(comment)}")

    def _remove_shim(self) -> None:
        if self._shim_dir is not None:
            shutil.rmtree(self._shim_dir, ignore_errors=True)
            self._shim_dir = None

    def _remove_temp_dirs(self) -> None:
        self._remove_shim()
        shutil.rmtree(self._spill_dir, ignore_errors=True)

    def client_info(self) -> dict[str, Any]:
        return {
            "engine": "duckdb",
            "files": [
                {"name": t.name, "kind": t.kind, "paths": [os.path.abspath(p) for p in t.paths]}
                for t in self.targets
            ],
        }

    def close(self) -> None:
        self._pool.close()
        self._remove_temp_dirs()

    def ready(self) -> None:
        """The app calls this in the background, so the first statement does not wait for
        the file to open. The guard's first pass is not loaded here: with a worker ready it
        never runs, and it would bring DuckDB into this process (`check`)."""
        self._pool.ready()

    def check(self, sql: str, *, timeout: float | None = None) -> str:
        """A first pass, here, while no worker is ready (the app's first moments; `astro sql`
        checks only where it runs, `inline.py`):
        a short statement (bounded in length, and in the cost of its parse by leaving to the
        worker the forms DuckDB's parser multiplies, `guard.cheap_to_parse`: ~100 ms for the
        worst of a dozen shapes of 2,000 characters at load 8; a TPC-H query is under 900) is
        refused at once for anything no database file could excuse, with no worker to start
        or wait for. Anything else, or with a worker ready, is parsed only in the worker.

        The verdict is `run`'s: the statement is checked again in the worker, where the file
        is open (names resolved as DuckDB resolves them, `resolved.py`), within the same
        request as its execution — so under its time and memory limits, stopped by a cancel,
        on the very text that then runs.

        The guard is imported here only when a first pass runs: it loads DuckDB and opens a
        private connection (~30 MB), which a process whose worker is ready never needs."""
        check_length(sql)  # before it is parsed or sent anywhere
        if len(sql) > _FIRST_PASS_CHARS or self._pool.has_ready_worker():
            return sql
        from astro_tui.data.engines.duckdb import guard

        if not guard.cheap_to_parse(sql):
            return sql
        return guard.check(sql, database=guard.LATER)

    def run(
        self,
        statement: str,
        *,
        first: FirstRows | None = None,
        cap: int | None,
        timeout: float | None,
        cancel: CancelToken | None,
        guarded: bool = True,
        sink: RowSink | None = None,
    ) -> QueryResult:
        """`guarded=False` skips the guard (tests of the engine lock alone, never the app).
        `first`: from the workers only (a one-shot command prints the whole result). `sink`:
        taken by a one-shot command's own process (`inline.py`), which prints as it reads."""
        started = time.perf_counter()
        streamed = isinstance(self._pool, InlineRunner) and sink is not None
        try:
            if streamed:
                assert isinstance(self._pool, InlineRunner) and sink is not None
                table, truncated, total, ran, count = self._pool.stream(
                    statement, sink, cap=cap, timeout=timeout, cancel=cancel, guard=guarded
                )
            else:
                count = None
                table, truncated, total, ran = self._pool.run(
                    statement, cap=cap, timeout=timeout, cancel=cancel, guard=guarded, first=first
                )
        except QueryError as exc:
            raise self._with_file_tables(exc) from None
        elapsed = (time.perf_counter() - started) * 1000
        return QueryResult(ran, table, truncated, elapsed, cap, total_rows=total, streamed=count)

    def _with_file_tables(self, exc: QueryError) -> QueryError:
        """A missing table that DuckDB has no guess for, over file targets: name the tables
        astro made (a glob's table is named after its folder, not after its files)."""
        message = str(exc)
        if not self._file_tables or not _MISSING_TABLE.match(message) or "Did you mean" in message:
            return exc
        made = [f"{name} ({spec})" for name, spec in self._file_tables.items()]
        more = f", … {len(made) - _LISTED_TABLES} more" if len(made) > _LISTED_TABLES else ""
        return QueryError(f"{message}\nTables from your files: {', '.join(made[:_LISTED_TABLES])}{more}")

    def load_outline(self) -> Catalog:
        """The whole catalog from the cache; else the schemas and tables alone (from the cache,
        or read by the worker without the column query, most of a catalog's time)."""
        from astro_tui.data import catalog_cache

        key = self._catalog_key()
        cached = catalog_cache.read(key) if key else None
        if cached is None:
            cached = catalog_cache.read(key + _OUTLINE) if key else None
        if cached is None:
            data = self._pool.meta({"meta": "outline"})
            cached = catalog_cache.loads(data)
            if key and self._catalog_key() == key:
                catalog_cache.write(key + _OUTLINE, data)
        return self._shown(cached)

    def load_catalog(self) -> Catalog:
        """From the cache when the file is as it was (no process is started for it); else read
        by the worker, and kept only if the file did not change while it was read."""
        from astro_tui.data import catalog_cache

        key = self._catalog_key()
        cached = catalog_cache.read(key) if key else None
        if cached is None:
            data = self._pool.meta({"meta": "catalog"})
            cached = catalog_cache.loads(data)
            if key and self._catalog_key() == key:
                catalog_cache.write(key, data)
        return self._shown(cached)

    def _shown(self, found: Catalog) -> Catalog:
        """Views over Parquet files as tables, and without what the scope hides."""
        from astro_tui.data.engines.duckdb import catalog

        found = catalog.with_row_counts(found, self._parquet_rows)
        if not self.scope:
            return found
        hidden = json.loads(self._pool.meta({"meta": "hidden"}))  # views, generated columns reading it
        return self.scope.filter_catalog(found, hidden["views"], hidden["columns"])


def _tables_of(
    con: duckdb.DuckDBPyConnection, target: Target, taken: set[str]
) -> list[tuple[str, tuple[Path, ...], bool]]:
    """The tables one target becomes: a glob over files with the same columns is one table
    (read by column name), over files with different columns one table per file."""
    import duckdb

    if len(target.paths) == 1:
        return [(target.name, target.paths, False)]
    reader = _READERS[target.kind]
    shapes: list[frozenset[str]] = []
    for path in target.paths:
        if target.kind != "parquet":
            _check_not_empty(path, shown_path(target, path))
        try:
            described = con.execute(f"DESCRIBE SELECT * FROM {reader}([{_literal(str(path))}])").fetchall()
        except duckdb.Error as exc:
            raise TargetError(f"{shown_path(target, path)}: {one_line(exc)}") from None
        shapes.append(frozenset(str(c[0]).lower() for c in described))
    if len(set(shapes)) == 1:
        return [(target.name, target.paths, True)]
    tables = []
    for path in target.paths:
        base = name = identifier(file_stem(path))
        n = 2
        while name.lower() in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name.lower())
        tables.append((name, (path,), False))
    return tables


def _check_not_empty(path: Path, spec: str) -> None:
    """An empty file opened as a 0-row table would look like data that is not there."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise TargetError(f"{spec}: cannot read ({exc.strerror or exc})") from None
    if not head.strip():
        raise TargetError(f"{spec}: the file is empty: nothing to open")


def _prose(paths: tuple[Path, ...], columns: list[str]) -> tuple[str, bool]:
    """Why a text file DuckDB's sniffer read as one column (no separator lines up) is prose,
    and whether that is sure; ("", False) for a list (names, ids), which reads so too.

    Prose has a sentence for a header, or separators in its lines that do not line up
    (commas in sentences) with paragraphs between them (sure) or in many lines (a broken
    CSV looks like that too, so its own check speaks first)."""
    if len(columns) != 1:
        return "", False
    header = columns[0].rstrip()
    if len(header.split()) > _HEADER_WORDS or header.endswith((".", "!", "?")):
        return "the first line is a sentence, not column names", True
    for path in paths:
        if path.suffix.lower() in (".gz", ".zst"):
            continue
        with path.open("rb") as fh:
            head = fh.read(_PROSE_SAMPLE)
        lines = head.decode("utf-8", errors="replace").splitlines()[:_PROSE_LINES]
        text = [i for i, line in enumerate(lines) if line.strip()]
        if not text:
            continue
        paragraphs = any(not line.strip() for line in lines[text[0] : text[-1]])
        sample = [lines[i].replace("\0", "") for i in text]  # the csv module refuses NUL
        split, separator = max(
            (sum(len(row) > 1 for row in csv.reader(sample, delimiter=d)), d) for d in _SEPARATORS
        )
        if split and (paragraphs or (split > 1 and split >= len(sample) * _SPLIT_SHARE)):
            name = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "bars"}[separator]
            also = ", and paragraphs" if paragraphs else ""
            return f"{name} in {split} of {len(sample)} lines do not line up into columns{also}", paragraphs
    return "", False


def _check_csv_width(spec: str, paths: tuple[Path, ...], width: int) -> None:
    """DuckDB's sniffer falls back to one column (or loses the header) on broken rows; say so,
    naming the first row whose fields do not match the header's."""
    for path in paths:
        if path.suffix.lower() in (".gz", ".zst"):
            continue
        with path.open(encoding="utf-8", errors="replace", newline="") as fh:
            first = fh.readline()
            fields, delimiter = max((len(next(csv.reader([first], delimiter=d), [])), d) for d in ",\t;|")
            if fields <= 1 or fields == width:
                continue
            ragged = _first_ragged_row(fh, delimiter, fields)
        where = "" if len(paths) == 1 else f" of {path.name}"
        found = f"line {ragged[0]}{where} has {ragged[1]}" if ragged else f"{width} read"
        raise TargetError(
            f"{spec}: rows do not match the header ({fields} fields in the header, {found}): "
            "the file has broken rows"
        )


_RAGGED_SCAN_ROWS = 200_000
"""Rows read to find the broken one: DuckDB's sniffer, which stumbled on it, reads fewer."""


def _first_ragged_row(lines: Iterable[str], delimiter: str, fields: int) -> tuple[int, int] | None:
    """(line number, fields) of the first row after the header with another number of fields;
    blank lines are skipped, as DuckDB skips them."""
    reader = csv.reader(lines, delimiter=delimiter)
    for _ in range(_RAGGED_SCAN_ROWS):
        try:
            row = next(reader)
        except (StopIteration, csv.Error):
            return None
        if row and len(row) != fields:
            return reader.line_num + 1, len(row)
    return None


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
