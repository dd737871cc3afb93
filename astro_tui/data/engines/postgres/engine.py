"""PostgreSQL over ADBC: results arrive as Arrow, every statement in a READ ONLY transaction.

Why ADBC (`adbc-driver-postgresql`) and not psycopg: rows arrive as Arrow from
the driver's C++ COPY-binary reader, with no Python object per value, which is
what keeps a million-row result at the raw driver's speed (BENCHMARKS.md); the
URL goes to libpq's `PQconnectdb` unchanged, so PG* variables, ~/.pgpass and
`service=` work as in psql. The driver's low-level API is used rather than its
DB-API module, which imports pandas (two seconds of start-up for nothing).

The engine half of the read-only guarantee lives here: each statement runs as

    BEGIN TRANSACTION READ ONLY; SET LOCAL statement_timeout …; lock_timeout …;
    idle_in_transaction_session_timeout …
    <the one statement>
    ROLLBACK

so even a statement the parser let through cannot write, and anything it set
is undone. The session itself is read-only by default and keeps
`standard_conforming_strings` on (the guard's parser assumes it).

Limits stop the statement ON THE SERVER: `statement_timeout` ends it there at
the time limit, and Esc (the `CancelToken`) sends libpq's cancel request
through the driver (`AdbcConnection.cancel`); a watchdog also cancels a little
after the limit in case the server never noticed. The connection stays usable.

The row cap is pushed to the server: a query is run as
`SELECT * FROM (<query>) LIMIT cap + 1`, so at most one probe row more than the
cap is produced and sent (stopping a COPY stream early would make libpq drain
the rest before the next statement). EXPLAIN and SHOW print a few lines and are
read whole.

ADBC gives one statement at a time per connection, so the engine keeps a small
pool: a second thread (the catalog's column query, a value search beside a
query) gets its own connection, made from the same ADBC database, which has
already read the server's types. A connection that failed (server restarted,
network gone) is dropped and the next statement gets a fresh one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

import adbc_driver_manager
import adbc_driver_postgresql
import pyarrow as pa
from adbc_driver_manager._reader import AdbcRecordBatchReader

from astro_tui.config import Settings
from astro_tui.data.cancel import CancelToken
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.engines.base import Dialect, Engine
from astro_tui.data.engines.postgres import catalog, guard
from astro_tui.data.engines.postgres.arrow import normalize
from astro_tui.data.engines.postgres.errors import (
    SERVER_GONE_STATES,
    connect_message,
    query_message,
    sqlstate,
)
from astro_tui.data.errors import QueryCancelled, QueryError, QueryTimeout, TargetError
from astro_tui.data.results import QueryResult
from astro_tui.data.watchdog import WATCHDOG, Deadline
from astro_tui.text import redact_url

DIALECT = Dialect(
    name="PostgreSQL",
    text_type="TEXT",
    shortest_template="(array_agg({v} ORDER BY length({v}), {v}))[1]",
    # two set-returning functions in one select list advance together (PostgreSQL ≥ 10)
    unpivot_template="generate_series(0, {n} - 1) AS col, unnest(ARRAY[{values}]) AS v",
    hints=(
        "PostgreSQL SQL: ILIKE, date_trunc('month', ts), to_char, EXTRACT, FILTER (WHERE …), "
        "DISTINCT ON, generate_series, string_agg, jsonb operators (->, ->>). Integer division "
        "truncates: cast to numeric for ratios. No QUALIFY and no GROUP BY ALL."
    ),
)

_CANCEL_GRACE_S = 2.0
_LOCK_TIMEOUT_S = 10.0
_IDLE_IN_TRANSACTION_S = 60
_POOL_SIZE = 4
_USE_COPY = adbc_driver_postgresql.StatementOptions.USE_COPY.value
_SESSION_SETUP = (
    "SET default_transaction_read_only = on; "
    "SET standard_conforming_strings = on; "
    "SET idle_in_transaction_session_timeout = '60s'"
)


class _Session:
    """One libpq connection and its one ADBC statement: what runs one statement at a time."""

    __slots__ = ("connection", "statement")

    def __init__(self, database: adbc_driver_manager.AdbcDatabase) -> None:
        self.connection = adbc_driver_manager.AdbcConnection(database)
        try:
            self.statement = adbc_driver_manager.AdbcStatement(self.connection)
        except BaseException:
            self.connection.close()
            raise

    def script(self, sql: str) -> None:
        """Statements without results, several at once (libpq's simple protocol): one round trip."""
        self.statement.set_sql_query(sql)
        self.statement.execute_update()

    def query(self, sql: str, *, copy: bool) -> pa.Table:
        """One statement's rows as Arrow; COPY (the driver's fast path) takes only queries."""
        self.statement.set_options(**{_USE_COPY: "true" if copy else "false"})
        self.statement.set_sql_query(sql)
        handle, _ = self.statement.execute_query()
        reader = AdbcRecordBatchReader._import_from_c(handle.address)  # errors keep PostgreSQL's fields
        try:
            return reader.read_all()
        finally:
            reader.close()

    def cancel(self) -> None:
        self.connection.cancel()

    def close(self) -> None:
        for handle in (self.statement, self.connection):
            with contextlib.suppress(Exception):
                handle.close()


class _Running:
    """One statement on its connection; stopping sends PostgreSQL a cancel request.

    A cancel that lands before the server has the statement is lost, so it is
    repeated every 50 ms until the statement ends; the request is sent from a
    short-lived thread, since libpq's cancel opens a connection and may wait.
    """

    __slots__ = ("_lock", "_retry", "done", "session", "stopped")

    def __init__(self, session: _Session) -> None:
        self.session = session
        self.done = False
        self.stopped = False
        self._lock = threading.Lock()
        self._retry: Deadline | None = None

    def stop(self) -> None:
        self.stopped = True
        self._spawn(100)

    def _spawn(self, attempts: int) -> None:
        threading.Thread(target=self._send, args=(attempts,), name="astro-pg-cancel", daemon=True).start()

    def _send(self, attempts: int) -> None:
        with self._lock:
            if self.done:
                return
            with contextlib.suppress(Exception):
                self.session.cancel()
            if attempts > 1:
                self._retry = WATCHDOG.schedule(0.05, lambda: self._spawn(attempts - 1))

    def finish(self) -> None:
        with self._lock:
            self.done = True
            if self._retry is not None:
                self._retry.cancel()


class PostgresEngine(Engine):
    """One PostgreSQL database behind read-only transactions; safe to use from many threads."""

    dialect = DIALECT

    def __init__(self, url: str, settings: Settings) -> None:
        self.settings = settings
        self.label = redact_url(url)
        self._lock = threading.Lock()
        self._idle: list[_Session] = []
        self._closed = False
        try:
            # the ADBC database reads the server's types once; each session is then one cheap connection
            self._database = adbc_driver_postgresql.connect(_with_defaults(url, settings))
        except adbc_driver_manager.Error as exc:
            raise TargetError(f"{self.label}: {connect_message(exc)}") from None
        try:
            session = self._connect()
        except BaseException:
            self._database.close()
            raise
        try:
            self.key = self._make_key(session, url)
        finally:
            self._release(session)

    def _connect(self) -> _Session:
        try:
            session = _Session(self._database)
        except adbc_driver_manager.Error as exc:
            raise TargetError(f"{self.label}: {connect_message(exc)}") from None
        try:
            session.script(_SESSION_SETUP)
        except adbc_driver_manager.Error as exc:
            session.close()
            raise TargetError(f"{self.label}: {query_message(exc)}") from None
        return session

    def _make_key(self, session: _Session, url: str) -> str:
        """Host, port and database, never the user's secrets: the key names saved state."""
        row = session.query("SELECT current_database()::text AS d, current_setting('port') AS p", copy=True)
        database, port = row.column(0)[0].as_py(), row.column(1)[0].as_py()
        host = _host(url)
        readable = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{host}-{port}-{database}")[:60]
        digest = hashlib.sha1(f"{host}\0{port}\0{database}".encode()).hexdigest()[:8]
        return f"pg-{readable}-{digest}"

    def _acquire(self) -> _Session:
        with self._lock:
            if self._closed:
                raise QueryError("the database connection is closed")
            if self._idle:
                return self._idle.pop()
        try:
            return self._connect()
        except TargetError as exc:
            reason = str(exc).removeprefix(self.label + ": ")
            raise QueryError(f"the server cannot be reached: {reason}") from None

    def _release(self, session: _Session, *, broken: bool = False) -> None:
        with self._lock:
            keep = not broken and not self._closed and len(self._idle) < _POOL_SIZE
            if keep:
                self._idle.append(session)
        if not keep:
            session.close()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            idle, self._idle = self._idle, []
        for session in idle:
            session.close()
        with contextlib.suppress(Exception):
            self._database.close()

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
        session = self._begin(timeout)
        running = _Running(session)
        timed_out = threading.Event()
        broken = False

        def on_timeout() -> None:
            timed_out.set()
            running.stop()

        started = time.perf_counter()
        timer = WATCHDOG.schedule(timeout + _CANCEL_GRACE_S, on_timeout) if timeout else None
        try:
            if cancel is not None:
                cancel.attach(running)
            if running.stopped:
                raise QueryCancelled("query cancelled")
            table, truncated = _fetch(session, statement, cap)
        except adbc_driver_manager.Error as exc:
            state = sqlstate(exc)
            gone = state.startswith(SERVER_GONE_STATES)
            broken = gone or not state  # a failure without SQLSTATE is the driver's: use a fresh session
            if timed_out.is_set() or "statement timeout" in str(exc):
                raise QueryTimeout(
                    f"query stopped on the server after the {timeout:g} s time limit"
                ) from None
            if cancel is not None and cancel.cancelled:
                raise QueryCancelled("query cancelled") from None
            if gone:
                raise QueryError(f"the server connection was lost: {query_message(exc)}") from None
            raise QueryError(query_message(exc)) from None
        finally:
            running.finish()
            if timer is not None:
                timer.cancel()
            if cancel is not None:
                cancel.detach(running)
            broken = _end(session) or broken
            self._release(session, broken=broken)
        elapsed = (time.perf_counter() - started) * 1000
        return QueryResult(statement, table, truncated, elapsed, cap)

    def _begin(self, timeout: float | None) -> _Session:
        """A session inside a fresh READ ONLY transaction; a pooled connection the server has
        dropped meanwhile (restart, idle timeout, network) is replaced once, transparently."""
        for attempt in (1, 2):
            session = self._acquire()
            try:
                session.script(_begin_sql(timeout))
                return session
            except adbc_driver_manager.Error as exc:
                gone = sqlstate(exc).startswith(SERVER_GONE_STATES) or not sqlstate(exc)
                self._release(session, broken=True)
                if attempt == 2 or not gone:
                    raise QueryError(f"the server connection was lost: {query_message(exc)}") from None
        raise AssertionError("unreachable")

    def load_catalog(self) -> Catalog:
        return catalog.load_catalog(self.catalog_rows)

    def catalog_rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Trusted metadata queries of our own (never model or user SQL), in a read-only transaction."""
        result = self.run(sql, cap=None, timeout=max(self.settings.query_timeout_s, 60.0), cancel=None)
        return result.rows()


def open_target(url: str, settings: Settings) -> Engine:
    """The engine layer's entry point for `postgresql://` and `postgres://` URLs."""
    return PostgresEngine(url, settings)


def _begin_sql(timeout: float | None) -> str:
    limit_ms = int(timeout * 1000) if timeout else 0
    lock_ms = int(min(timeout or _LOCK_TIMEOUT_S, _LOCK_TIMEOUT_S) * 1000)
    return (
        "BEGIN TRANSACTION READ ONLY; "
        f"SET LOCAL statement_timeout = {max(limit_ms, 0)}; "
        f"SET LOCAL lock_timeout = {max(lock_ms, 1)}; "
        f"SET LOCAL idle_in_transaction_session_timeout = '{_IDLE_IN_TRANSACTION_S}s'"
    )


def _end(session: _Session) -> bool:
    """Roll back; True when the connection is no longer fit for another statement."""
    try:
        session.script("ROLLBACK")
        return False
    except adbc_driver_manager.Error:
        return True


def _fetch(session: _Session, statement: str, cap: int | None) -> tuple[pa.Table, bool]:
    """Read at most cap + 1 rows: the extra probe row is how truncation is known."""
    query = guard.is_query(statement)
    if cap is not None and query:
        table = session.query(
            f"SELECT * FROM (\n{statement}\n) AS astro_capped LIMIT {int(cap) + 1}", copy=True
        )
    else:
        table = session.query(statement, copy=query)
    table = normalize(table)
    if cap is not None and table.num_rows > cap:
        return table.slice(0, cap), True
    return table, False


def _with_defaults(url: str, settings: Settings) -> str:
    """libpq parameters astro needs unless the URL sets them: a connect timeout, an application name."""
    query = parse_qs(urlsplit(url).query)
    extra = []
    if "connect_timeout" not in query and "PGCONNECT_TIMEOUT" not in os.environ:
        extra.append(f"connect_timeout={max(int(settings.connect_timeout_s), 2)}")
    if "application_name" not in query and "fallback_application_name" not in query:
        extra.append("fallback_application_name=astro")
    if not extra:
        return url
    return url + ("&" if "?" in url else "?") + "&".join(extra)


def _host(url: str) -> str:
    """The host a URL names, else libpq's defaults: `host=` parameter, PGHOST, the local socket."""
    parts = urlsplit(url)
    with contextlib.suppress(ValueError):
        if parts.hostname:
            return parts.hostname
    query = parse_qs(parts.query)
    if "service" in query:
        return "service-" + query["service"][0]
    return (query.get("host") or [os.environ.get("PGHOST", "local")])[0]
