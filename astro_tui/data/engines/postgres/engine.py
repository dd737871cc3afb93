"""PostgreSQL over ADBC: results arrive as Arrow, every statement in a READ ONLY transaction.

Why ADBC (`adbc-driver-postgresql`) and not psycopg: rows arrive as Arrow from
the driver's C++ COPY-binary reader, with no Python object per value, which is
what keeps a million-row result at the raw driver's speed (BENCHMARKS.md); the
URL goes to libpq's `PQconnectdb` unchanged, so PG* variables, ~/.pgpass and
`service=` work as in psql. The driver's low-level API is used rather than its
DB-API module, which imports pandas (two seconds of start-up for nothing).

The guard is two steps: `guard.py` reads the text (pglast), `resolve.py` asks
the server's catalog what its names resolve to and what those objects run,
and `policy.py` decides. Under a scope (`--hide`), `scoped.py` judges between
the two what the statement reads, and filters the catalog. The engine half of the read-only guarantee lives
here: each statement runs as

    BEGIN TRANSACTION READ ONLY; SET LOCAL statement_timeout …; lock_timeout …;
    idle_in_transaction_session_timeout …
    <the one statement>
    ROLLBACK; <every kind of session state reset>

so even a statement the parser let through cannot write, anything it set is
undone, and what outlives a ROLLBACK is reset before the connection goes back
to the pool: session advisory locks (`pg_advisory_unlock_all`), prepared
statements, cursors, LISTEN, temporary objects, cached plans and sequences'
session state, settings and the session's role (`DISCARD ALL`'s parts, which
may run in one message where DISCARD ALL may not), and the random seed
(`setseed` survives even DISCARD ALL; it is drawn again). The session itself
is read-only by default, keeps `standard_conforming_strings` on and the client
encoding UTF-8 whatever the database sets (the guard's parser assumes both) and the
search path it had when astro connected (the one the guard resolved names with).

Limits stop the statement ON THE SERVER: `statement_timeout` ends it there at
the time limit, and Esc (the `CancelToken`) sends libpq's cancel request
through the driver (`AdbcConnection.cancel`); a watchdog also cancels half a
second after the limit in case the server never noticed, and a second after
that astro stops waiting for a statement the server cannot interrupt. The result is read
within the memory and time limits (`fetch.py`). The connection stays usable.

The row cap is pushed to the server: a query is run as
`SELECT * FROM (<query>) LIMIT cap + 1`, so at most one probe row more than the
cap is produced and sent. EXPLAIN and SHOW print a few lines and are read whole.

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
import secrets
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
from astro_tui.data.engines.base import Dialect, Engine, FirstRows
from astro_tui.data.engines.postgres import catalog, fetch, guard, resolve, scoped, scoped_catalog
from astro_tui.data.engines.postgres.arrow import normalize
from astro_tui.data.engines.postgres.errors import (
    SERVER_GONE_STATES,
    connect_message,
    query_message,
    sqlstate,
)
from astro_tui.data.errors import GuardError, QueryCancelled, QueryError, QueryTimeout, TargetError
from astro_tui.data.results import QueryResult, RowSink
from astro_tui.data.scope import Scope
from astro_tui.data.watchdog import WATCHDOG, Deadline
from astro_tui.text import redact_url, without_secrets

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

_CANCEL_GRACE_S = 0.5
_LOCK_TIMEOUT_S = 10.0
_IDLE_IN_TRANSACTION_S = 60
_POOL_SIZE = 4
_ABANDON_GRACE_S = 1.0
"""After the cancel (sent at the limit plus _CANCEL_GRACE_S, or on Esc): the wait for the server."""
_WAIT_STEP_S = 0.05
_USE_COPY = adbc_driver_postgresql.StatementOptions.USE_COPY.value
_SESSION_SETUP = (
    "SET default_transaction_read_only = on; "
    "SET standard_conforming_strings = on; "
    # the guard reads the text as UTF-8; a database may set an encoding (SJIS, BIG5, GBK) in which a
    # byte of a multibyte character is a backslash, and the server would read another statement
    "SET client_encoding = 'UTF8'; "
    "SET idle_in_transaction_session_timeout = '60s'; "
    # PostgreSQL 14+: a statement whose client has gone (astro killed) stops within a second
    "SELECT pg_catalog.set_config('client_connection_check_interval', '1000', false) "
    "WHERE pg_catalog.current_setting('server_version_num')::int4 >= 140000"
)
_RESET = (
    "ROLLBACK; CLOSE ALL; DEALLOCATE ALL; UNLISTEN *; SELECT pg_catalog.pg_advisory_unlock_all(); "
    "DISCARD TEMP; DISCARD SEQUENCES; DISCARD PLANS; RESET ALL; RESET SESSION AUTHORIZATION; "
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
        reader = self.stream(sql, copy=copy)
        try:
            return reader.read_all()
        finally:
            reader.close()

    def stream(self, sql: str, *, copy: bool) -> AdbcRecordBatchReader:
        """The rows as they arrive, a batch at a time; the caller closes the reader."""
        self.statement.set_options(**{_USE_COPY: "true" if copy else "false"})
        self.statement.set_sql_query(sql)
        handle, _ = self.statement.execute_query()
        return AdbcRecordBatchReader._import_from_c(handle.address)  # errors keep PostgreSQL's fields

    def describe(self, sql: str) -> pa.Schema:
        """A query's columns without running it: the server prepares (parses, analyses) and describes."""
        self.statement.set_sql_query(sql)
        handle = self.statement.execute_schema()  # owns the C schema until imported
        return pa.Schema._import_from_c(handle.address)

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

    def __init__(self, url: str, settings: Settings, scope: Scope | None = None) -> None:
        self.settings = settings
        self.scope = scope or Scope()
        self.label = redact_url(url)
        self._client_url = without_secrets(url)
        self._lock = threading.Lock()
        self._idle: list[_Session] = []
        self._closed = False
        self._guard_lock = threading.Lock()
        self._guard_session: _Session | None = None
        self._guard_timeout_ms: int | None = None
        # a statement outside astro's transactions (the guard's catalog query) has a time limit too
        self._setup = f"{_SESSION_SETUP}; SET statement_timeout = {_milliseconds(settings.query_timeout_s)}"
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
            self.key = self._learn(session, url)
        finally:
            self._release(session)

    def _connect(self) -> _Session:
        try:
            session = _Session(self._database)
        except adbc_driver_manager.Error as exc:
            raise TargetError(f"{self.label}: {connect_message(exc)}") from None
        try:
            session.script(self._setup)
        except adbc_driver_manager.Error as exc:
            session.close()
            raise TargetError(f"{self.label}: {query_message(exc)}") from None
        return session

    def _learn(self, session: _Session, url: str) -> str:
        """The server's version and search path (kept for every session), and the key: host, port
        and database, never the user's secrets, since the key names saved state."""
        row = session.query(
            "SELECT current_database()::text AS d, current_setting('port') AS p, "
            "current_setting('server_version_num')::int4 AS v, current_setting('search_path') AS s",
            copy=False,
        ).to_pylist()[0]
        database, port = row["d"], row["p"]
        self.server_version = int(row["v"])
        pinned = DIALECT.literal(row["s"])
        self._setup += f"; SELECT pg_catalog.set_config('search_path', {pinned}, false)"
        host = _host(url)
        readable = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{host}-{port}-{database}")[:60]
        digest = hashlib.sha1(f"{host}\0{port}\0{database}".encode()).hexdigest()[:8]
        return f"pg-{readable}-{digest}"

    def client_info(self) -> dict[str, Any]:
        return {"engine": "postgresql", "url": self._client_url}

    def _acquire(self) -> _Session:
        with self._lock:
            if self._closed:
                raise QueryError("the database connection is closed")
            if self._idle:
                return self._idle.pop()
        return self._acquire_new()

    def _acquire_new(self) -> _Session:
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
        with self._guard_lock:
            if self._guard_session is not None:
                idle.append(self._guard_session)
                self._guard_session = None
        for session in idle:
            session.close()
        with contextlib.suppress(Exception):
            self._database.close()

    def check(self, sql: str, *, timeout: float | None = None) -> str:
        """The text's verdict (`guard.py`), then, under a scope, what the statement reads
        (`scoped.py`), then the catalog's verdict on what its names resolve to, within the
        statement's time limit (a view's stored tree of 150 MB made the catalog query alone
        take seconds past a 1 s limit)."""
        checked = guard.inspect(sql)
        deadline = time.monotonic() + timeout if timeout else None
        rows = lambda query: self._guard_rows(query, deadline)  # noqa: E731
        try:
            if self.scope:  # first: its refusals never quote a view's definition
                scoped.ScopeJudge(self.scope, rows).judge(checked.statement)
            resolve.judge(checked, rows, scoped=bool(self.scope))
        except QueryTimeout:
            raise GuardError("refused: the server did not answer the guard's catalog query in time") from None
        except QueryError as exc:
            raise GuardError(f"refused: the guard could not read the server's catalog: {exc}") from None
        return checked.statement

    def run(
        self,
        statement: str,
        *,
        cap: int | None,
        timeout: float | None,
        cancel: CancelToken | None,
        first: FirstRows | None = None,  # not offered: the rows come whole
        sink: RowSink | None = None,  # likewise: printed by `Database.execute` once read
    ) -> QueryResult:
        """A statement from outside: each row measured by the server, the session reset after."""
        return self._run(statement, cap=cap, timeout=timeout, cancel=cancel, trusted=False)

    def _run(
        self,
        statement: str,
        *,
        cap: int | None,
        timeout: float | None,
        cancel: CancelToken | None,
        trusted: bool,
    ) -> QueryResult:
        """The statement in a thread of its own, waited for until the time limit (or a cancel)
        plus a grace: the server acts on a cancel only at its interrupt checks, and an expression
        with none (an XPath, one row's numeric arithmetic) ran 18 s under a 2 s limit. Past the
        grace the statement is abandoned: its thread closes the connection when the server is done."""
        deadline = time.monotonic() + timeout if timeout else None
        done = threading.Event()
        outcome: list[QueryResult | BaseException] = []
        abandoned = threading.Event()

        def work() -> None:
            try:
                outcome.append(self._execute(abandoned, statement, cancel, (cap, timeout), trusted))
            except BaseException as exc:  # handed to the waiting thread
                outcome.append(exc)
            finally:
                done.set()

        threading.Thread(target=work, name="astro-pg-statement", daemon=True).start()
        give_up = None if deadline is None else deadline + _CANCEL_GRACE_S + _ABANDON_GRACE_S
        stopped_at: float | None = None
        while not done.wait(_WAIT_STEP_S):
            now = time.monotonic()
            if stopped_at is None and cancel is not None and cancel.cancelled:
                stopped_at = now
            if stopped_at is not None and now > stopped_at + _ABANDON_GRACE_S:
                abandoned.set()
                raise QueryCancelled("query cancelled (the server has not stopped it yet)")
            if give_up is not None and now > give_up:
                abandoned.set()
                raise QueryTimeout(
                    f"query stopped after the {timeout:g} s time limit (the server has not stopped it yet)"
                )
        (result,) = outcome
        if isinstance(result, BaseException):
            raise result
        return result

    def _execute(
        self,
        abandoned: threading.Event,
        statement: str,
        cancel: CancelToken | None,
        limits: tuple[int | None, float | None],
        trusted: bool,
    ) -> QueryResult:
        """`_run`'s statement on a pooled session; `limits` is (cap, timeout)."""
        cap, timeout = limits
        session = self._begin(timeout)
        running = _Running(session)
        timed_out = threading.Event()
        broken = False
        limits = fetch.Limits.of(self.settings.memory_limit, timeout)

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
            table, truncated = _fetch(session, statement, cap, limits, measure=not trusted)
        except _Stopped as stop:
            broken = True  # the read stopped mid-stream: the connection is dropped rather than drained
            raise stop.error from None
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
            if self.scope and state in scoped.NAME_NOT_FOUND_STATES:
                raise GuardError(scoped.HIDDEN) from None  # a missing name reads as a hidden one
            message = query_message(exc, primary_only=bool(self.scope))
            if self.scope and self.scope.mentions_hidden(message, statement):
                raise GuardError(scoped.HIDDEN) from None  # an error quoting a view's text, a value
            raise (fetch.too_wide(message, limits) or QueryError(message)) from None
        finally:
            running.finish()
            if timer is not None:
                timer.cancel()
            if cancel is not None:
                cancel.detach(running)
            broken = broken or abandoned.is_set() or self._end(session, reset=not trusted)
            self._release(session, broken=broken)
        elapsed = (time.perf_counter() - started) * 1000
        return QueryResult(statement, table, truncated, elapsed, cap)

    def _end(self, session: _Session, *, reset: bool) -> bool:
        """Roll back, and reset what outlives a rollback after a statement from outside; True when
        the connection is no longer fit for another statement."""
        seed = secrets.randbelow(2**31) / 2**31
        script = f"{_RESET}{self._setup}; SELECT pg_catalog.setseed({seed!r})" if reset else "ROLLBACK"
        try:
            session.script(script)
            return False
        except adbc_driver_manager.Error:
            return True

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
        """Under a scope, without the views that read something hidden and the columns computed
        from (or inherited with) a hidden one: judged by the same reading as statements."""
        found = catalog.load_catalog(self.catalog_rows)
        if not self.scope:
            return found
        judge = scoped.ScopeJudge(self.scope, lambda query: self._guard_rows(query, None))
        views, columns = judge.hidden_in_catalog((t.schema, t.name) for t in found.tables)
        return self.scope.filter_catalog(found, views, columns)

    def _guard_rows(self, sql: str, deadline: float | None) -> list[tuple[Any, ...]]:
        """The guard's catalog queries, on a session of their own that runs nothing else (so the
        reset after a statement never drops their prepared plans): one round trip each, under the
        statement's time limit (set again only when it changes). One at a time; each takes a
        millisecond."""
        left = None if deadline is None else deadline - time.monotonic()
        if not self._guard_lock.acquire(timeout=-1 if left is None else max(left, 0)):
            raise QueryTimeout("the guard's catalog session is busy")
        try:
            for attempt in (1, 2):
                session = self._guard_session or self._new_guard_session()
                try:
                    limit_ms = _guard_milliseconds(deadline)
                    if limit_ms != self._guard_timeout_ms:
                        session.script(f"SET statement_timeout = {limit_ms}")
                        self._guard_timeout_ms = limit_ms
                    return QueryResult(sql, session.query(sql, copy=False), False, 0.0).rows()
                except adbc_driver_manager.Error as exc:
                    state = sqlstate(exc)
                    if state.startswith(SERVER_GONE_STATES) or not state:
                        session.close()
                        self._guard_session = None
                        if attempt == 1:
                            continue
                    if "statement timeout" in str(exc):
                        raise QueryTimeout(query_message(exc)) from None
                    raise QueryError(query_message(exc)) from None
        finally:
            self._guard_lock.release()
        raise AssertionError("unreachable")

    def _new_guard_session(self) -> _Session:
        session = self._acquire_new()
        try:
            # planned once for any names; JIT would compile the recursive query (its estimate is
            # large, its run a millisecond)
            prepared = resolve.prepare_sql(self.server_version)
            if self.scope:
                prepared += "; " + scoped_catalog.prepare_sql()
            session.script(f"SET jit = off; SET plan_cache_mode = force_generic_plan; {prepared}")
        except adbc_driver_manager.Error as exc:
            session.close()
            raise QueryError(query_message(exc)) from None
        self._guard_session = session
        self._guard_timeout_ms = None
        return session

    def catalog_rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Trusted metadata queries of our own (never model or user SQL), in a read-only transaction."""
        timeout = max(self.settings.query_timeout_s, 60.0)
        result = self._run(sql, cap=None, timeout=timeout, cancel=None, trusted=True)
        return result.rows()


def open_target(url: str, settings: Settings, scope: Scope | None = None) -> Engine:
    """The engine layer's entry point for `postgresql://` and `postgres://` URLs."""
    return PostgresEngine(url, settings, scope)


def _milliseconds(timeout: float | None) -> int:
    """PostgreSQL's spelling of a time limit: 0 is none."""
    return max(int(timeout * 1000), 0) if timeout else 0


def _guard_milliseconds(deadline: float | None) -> int:
    """What is left of the time limit, rounded up to a quarter second: the same value for most
    statements, so the guard's session is told again only when the limit changes."""
    if deadline is None:
        return 0
    left = max(deadline - time.monotonic(), 0.001)
    return int(-(-left * 4 // 1) * 250)


def _begin_sql(timeout: float | None) -> str:
    lock_ms = int(min(timeout or _LOCK_TIMEOUT_S, _LOCK_TIMEOUT_S) * 1000)
    return (
        "BEGIN TRANSACTION READ ONLY; "
        f"SET LOCAL statement_timeout = {_milliseconds(timeout)}; "
        f"SET LOCAL lock_timeout = {max(lock_ms, 1)}; "
        f"SET LOCAL idle_in_transaction_session_timeout = '{_IDLE_IN_TRANSACTION_S}s'"
    )


class _Stopped(Exception):
    """The read was stopped by a limit of astro's, mid-stream: `error` says which."""

    def __init__(self, error: QueryError) -> None:
        super().__init__(str(error))
        self.error = error


def _fetch(
    session: _Session, statement: str, cap: int | None, limits: fetch.Limits, *, measure: bool
) -> tuple[pa.Table, bool]:
    """Read at most cap + 1 rows (the extra probe row is how truncation is known), within the
    limits; a query from outside has each row measured by the server first."""
    query = guard.is_query(statement)
    schema = session.describe(statement) if query and measure else None
    checked = fetch.measured(schema)
    if query and (cap is not None or checked):
        sql = fetch.wrapped(statement, schema, cap, limits.row_bytes if checked else None)
    else:
        sql = statement
    reader = session.stream(sql, copy=query)
    try:
        try:
            batches = fetch.read(reader, limits)
        except QueryError as exc:
            raise _Stopped(exc) from None
        table = pa.Table.from_batches(batches, schema=reader.schema)
    finally:
        reader.close()
    table = normalize(fetch.restore(table, schema, checked))
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
