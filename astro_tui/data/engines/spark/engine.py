"""Spark over Spark Connect: the guard before anything is sent, limits on the server, Arrow back.

The client is Spark Connect's own (`pyspark.sql.connect`, from `pyspark-client`
or a full `pyspark`), imported when an `sc://` target is opened, so other
targets never pay for it. The URL is handed to the client unchanged, so its
parameters work as in any Spark Connect tool: `sc://host:15002/;token=…;
use_ssl=true;user_id=…`. The label shown everywhere has the token redacted.

Spark has no read-only mode: `spark.sql("DROP …")` runs on the server at once.
So `check` (sqlglot's Spark parser, `guard.py`) is the only layer, and it runs
before a byte is sent; a read-only principal is still the right deployment.

Limits act on the server:
- the row cap is a LIMIT of cap + 1 on the plan (`df.limit`), so the cluster
  produces at most one probe row beyond the cap;
- each statement runs under its own operation tag; at the time limit, or when
  the `CancelToken` fires, the engine asks the server to interrupt that tag
  (repeated briefly, since an interrupt that arrives before the operation is
  registered finds nothing), and the session stays usable for the next one.
  Once the query's own operation (`toArrow`) is sent, the interrupt is held
  until that operation is `_SETTLE_S` old: with adaptive execution (Spark's
  default) a stage is launched on another thread, and an interrupt that lands
  before the first stage's job is submitted ends the operation while the job
  still starts and runs to its end, out of reach of any later interrupt (Spark
  4.x). A later stage's launch can still meet an interrupt this way; the wait
  covers the first. A query stopped meanwhile is reported stopped even if it
  finished. BENCHMARKS.md has the measurement.
Results arrive as Arrow batches (`DataFrame.toArrow`).

The client retries an unreachable server for minutes by default; the engine
keeps that short, and the first request has its own deadline, so a wrong host
is one line within the connect timeout, never a frozen screen.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import threading
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa

from astro_tui.config import Settings
from astro_tui.data.cancel import CancelToken
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.engines.base import Dialect, Engine
from astro_tui.data.engines.spark import catalog, guard
from astro_tui.data.engines.spark.errors import is_connection_error, message
from astro_tui.data.errors import QueryCancelled, QueryError, QueryTimeout, TargetError
from astro_tui.data.results import QueryResult
from astro_tui.data.watchdog import WATCHDOG, Deadline
from astro_tui.text import redact_url

DIALECT = Dialect(
    name="Spark SQL",
    quote="`",
    text_type="STRING",
    shortest_template="min_by({v}, length({v}))",
    unpivot_template="posexplode(array({values})) AS (col, v)",
    backslash_escapes=True,
    hints=(
        "Spark SQL: identifiers in backticks; ILIKE, date_trunc('MONTH', ts), date_format, "
        "count_if, FILTER (WHERE …), QUALIFY is not available; explode/posexplode with LATERAL VIEW; "
        "string literals use backslash escapes. Integer division `/` returns a double; `div` truncates."
    ),
)

if importlib.util.find_spec("pyspark") is None:  # found without importing it: the dispatch names the package
    raise ImportError("the Spark Connect client is not installed", name="pyspark-client")

_INTERRUPT_EVERY_S = 0.1
_INTERRUPT_ATTEMPTS = 50
_SETTLE_S = 1.0
_QUIET_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger", "pyspark", "py4j")


def _client() -> tuple[Any, Any]:
    """The Spark Connect session class and retry policy, imported on first use, quietly."""
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # gRPC's C core logs TLS and connect failures to stderr
    warnings.filterwarnings("ignore", module=r"pyspark(\.|$)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pyspark.sql.connect.client.retries import DefaultPolicy
        from pyspark.sql.connect.session import SparkSession
    for name in _QUIET_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(logging.CRITICAL + 1)
        logger.propagate = False
    return SparkSession, DefaultPolicy


class _Stopped(Exception):
    """Stopped before the query's operation was sent; reported as the time limit or the cancel."""


class _Running:
    """One tagged operation; stopping asks the server to interrupt it until it has ended
    (one request may still arrive just after: harmless, the tag is never used again)."""

    __slots__ = ("_lock", "_retry", "done", "engine", "fetch_started", "stopped", "tag")

    def __init__(self, engine: SparkEngine, tag: str) -> None:
        self.engine = engine
        self.tag = tag
        self.done = False
        self.stopped = False
        self.fetch_started: float | None = None
        self._lock = threading.Lock()
        self._retry: Deadline | None = None

    def fetching(self) -> None:
        """Starts the settle clock: the operation sent next is the one that runs jobs."""
        self.fetch_started = time.monotonic()

    def stop(self) -> None:
        """Idempotent: the time limit and a cancel may both stop one query, and one chain
        of interrupts is enough."""
        with self._lock:
            if self.stopped:
                return
            self.stopped = True
        self._spawn(_INTERRUPT_ATTEMPTS)

    def _spawn(self, attempts: int) -> None:
        thread = threading.Thread(
            target=self._send, args=(attempts,), name="astro-spark-interrupt", daemon=True
        )
        thread.start()

    def _later(self, seconds: float, attempts: int) -> None:
        """Under the lock, so `finish` either sees this timer and cancels it or was first."""
        with self._lock:
            if not self.done:
                self._retry = WATCHDOG.schedule(seconds, lambda: self._spawn(attempts))

    def _send(self, attempts: int) -> None:
        """Before the query's operation is sent there is nothing to wait for: an interrupt
        then ends the cheap `spark.sql` request, or finds nothing and is repeated."""
        with self._lock:
            if self.done:
                return
        started = self.fetch_started
        settling = 0.0 if started is None else started + _SETTLE_S - time.monotonic()
        if settling > 0:
            self._later(settling, attempts)
            return
        with contextlib.suppress(Exception):
            self.engine.session.interruptTag(self.tag)
        if attempts > 1:
            self._later(_INTERRUPT_EVERY_S, attempts - 1)

    def finish(self) -> None:
        with self._lock:
            self.done = True
            if self._retry is not None:
                self._retry.cancel()


class SparkEngine(Engine):
    """One Spark Connect session; statements from several threads run side by side on it."""

    dialect = DIALECT

    def __init__(self, url: str, settings: Settings) -> None:
        self.settings = settings
        self.label = redact_url(url)
        self._closed = False
        session_class, policy = _client()
        try:
            self.session = session_class(connection=url)
        except Exception as exc:
            raise TargetError(f"{self.label}: {message(exc)}") from None
        with contextlib.suppress(Exception):
            # the default retries an unreachable server for ten minutes
            self.session.client.set_retry_policies(
                [policy(max_retries=3, initial_backoff=100, max_backoff=1000, backoff_multiplier=2.0)]
            )
        self.version, self.user_functions = self._probe(settings.connect_timeout_s)
        self.key = _make_key(url)

    def _probe(self, timeout: float) -> tuple[str, frozenset[str]]:
        """The first requests, with a deadline: the server answers, accepts us, and names its UDFs."""

        def ask() -> tuple[str, frozenset[str]]:
            version = str(self.session.version)
            rows = self.session.sql("SHOW USER FUNCTIONS").toArrow().column(0).to_pylist()
            return version, frozenset(str(r).rsplit(".", 1)[-1].lower() for r in rows if r)

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="astro-spark-connect")
        try:
            return pool.submit(ask).result(timeout=max(timeout, 2.0) * 3)
        except FutureTimeout:
            self._stop_session()
            raise TargetError(f"{self.label}: the server did not answer within {timeout:g} s") from None
        except Exception as exc:
            self._stop_session()
            raise TargetError(f"{self.label}: {message(exc)}") from None
        finally:
            pool.shutdown(wait=False)

    def _stop_session(self) -> None:
        with contextlib.suppress(Exception):
            self.session.client.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.session.stop()

    def check(self, sql: str) -> str:
        return guard.check(sql, self.user_functions)

    def run(
        self,
        statement: str,
        *,
        cap: int | None,
        timeout: float | None,
        cancel: CancelToken | None,
    ) -> QueryResult:
        if self._closed:
            raise QueryError("the database connection is closed")
        tag = f"astro-{uuid.uuid4().hex}"
        running = _Running(self, tag)
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            running.stop()

        started = time.perf_counter()
        timer = WATCHDOG.schedule(timeout, on_timeout) if timeout else None
        self.session.addTag(tag)
        try:
            if cancel is not None:
                cancel.attach(running)
            if running.stopped:
                raise _Stopped
            table, truncated = self._fetch(statement, cap, running)
        except Exception as exc:
            if timed_out.is_set():
                raise QueryTimeout(
                    f"query stopped on the server after the {timeout:g} s time limit"
                ) from None
            if running.stopped:
                raise QueryCancelled("query cancelled") from None
            if is_connection_error(exc):
                raise QueryError(f"the server connection was lost: {message(exc)}") from None
            raise QueryError(message(exc)) from None
        finally:
            running.finish()
            if timer is not None:
                timer.cancel()
            if cancel is not None:
                cancel.detach(running)
            with contextlib.suppress(Exception):
                self.session.removeTag(tag)
        if timed_out.is_set():
            raise QueryTimeout(f"query stopped on the server after the {timeout:g} s time limit")
        if running.stopped:
            raise QueryCancelled("query cancelled")
        elapsed = (time.perf_counter() - started) * 1000
        return QueryResult(statement, table, truncated, elapsed, cap)

    def _fetch(self, statement: str, cap: int | None, running: _Running) -> tuple[pa.Table, bool]:
        """At most cap + 1 rows, limited on the plan: the probe row is how truncation is known.

        The LIMIT costs something when the result is large: Spark runs a root LIMIT
        through one partition (a shuffle and a single-threaded Arrow conversion). Reading
        the stream and interrupting it at cap + 1 rows was tried and dropped: the server
        computes and buffers ahead of the reader, and a runaway query filled the driver's
        memory (BENCHMARKS.md has the figures).
        """
        frame = self.session.sql(statement)
        if cap is not None:
            frame = frame.limit(int(cap) + 1)
        running.fetching()  # before the check: a stop after it waits for the settle clock
        if running.stopped:
            raise _Stopped
        table = _plain(frame.toArrow())
        if cap is not None and table.num_rows > cap:
            return table.slice(0, cap), True
        return table, False

    def load_catalog(self) -> Catalog:
        return catalog.load_catalog(self)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """Trusted metadata statements of our own (never model or user SQL), with a generous limit."""
        result = self.run(sql, cap=None, timeout=max(self.settings.query_timeout_s, 120.0), cancel=None)
        return result.rows()

    def columns_of(self, tables: list[str]) -> list[Any]:
        """The fields of these tables, in order, from ONE analysis of a plan built here (never run):
        their cross join, whose output is each table's columns, comments included."""
        try:
            frame = self.session.read.table(tables[0])
            for name in tables[1:]:
                frame = frame.crossJoin(self.session.read.table(name))
            return list(frame.schema.fields)
        except Exception as exc:
            raise QueryError(message(exc)) from None


def open_target(url: str, settings: Settings) -> Engine:
    """The engine layer's entry point for `sc://` URLs."""
    return SparkEngine(url, settings)


def _plain(table: pa.Table) -> pa.Table:
    """Without Spark's per-field metadata (comments as JSON), which no view of a result shows."""
    if not any(f.metadata for f in table.schema):
        return table
    schema = pa.schema([f.remove_metadata() for f in table.schema])
    return pa.Table.from_arrays(table.columns, schema=schema)


def _make_key(url: str) -> str:
    """Host and port, never the token: the key names saved state."""
    parts = urlsplit(url.split(";", 1)[0])
    try:
        host, port = parts.hostname or "localhost", parts.port or 15002
    except ValueError:
        host, port = "spark", 15002
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{host}-{port}")[:60]
    digest = hashlib.sha1(f"{host}\0{port}".encode()).hexdigest()[:8]
    return f"sc-{readable}-{digest}"
