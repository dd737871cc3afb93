"""A one-shot command's own process as the statement worker (`astro sql`): no second interpreter.

Starting a worker (`pool.py`) costs a Python start and a DuckDB load, which a
command that runs one statement and ends pays on every call. Here the command's
process opens the database with the worker's setup and runs the worker's own
code (`worker.Connection`: the guard first, against the open file, then the
statement), and the limits are held by a watcher forked before DuckDB is loaded:
a copy of this process that imports nothing and starts no interpreter, so what
holds a limit never needs this process's interpreter. That matters: DuckDB's
parser holds Python's lock while it splits a statement (seconds for a
990,000-character one), and a watchdog thread here could not run meanwhile.

The watcher, told when a statement starts and ends, does what the pool does for
a worker: at the time limit it asks this process to interrupt DuckDB (a byte on
a pipe, read by a thread that calls the cursor's interrupt); GRACE_S later, if
the statement still runs (or a cancel could not stop it), and as soon as this
process's resident memory passes the memory limit (+10%, +128 MiB at least)
above what it held when the statement started, it prints one line, kills this
process (exit status: killed) and removes its scratch directories (the spill
and the private database of data files). When this process dies however it
dies, its end of the watcher's pipe closes and the watcher removes them too.

Such a process imports Arrow without NumPy (`data/without_numpy.py`), whose
import was a third of what the command cost beyond DuckDB's own one-liner; and a result
its parse shows to be a few rows of plain types (`fetch.few_rows`: a count, a sum, a
small LIMIT) is read as Python values, with no Arrow at all. And
the database is opened, and what it defines read for the guard, on a thread
started at once (astro's own queries: no statement runs before the guard has
judged it), while this one imports what the rows need: DuckDB lets go of
Python's lock while it works, so the two overlap.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn

from astro_tui.data import without_numpy
from astro_tui.data.cancel import CancelToken
from astro_tui.data.engines.duckdb.pool import (
    GRACE_S,
    memory_allowance,
    memory_stopped,
    plain_open_error,
    rss,
    stopped,
)
from astro_tui.data.engines.duckdb.worker import Connection, DatabaseNotOpened
from astro_tui.data.errors import DataError, GuardError, QueryError
from astro_tui.data.results import RowSink, empty_table

_POLL_S = 0.01
_PRINTED_ROWS = 4096
"""Rows handed to a sink at a time: a time limit or a cancel stops the printing between them."""
_REPARENT_S = 2.0


def available() -> bool:
    """Forking is how the limits are held without a second interpreter (not on Windows)."""
    return hasattr(os, "fork")


class _Rows:
    """The rows as they come from `Connection.answer`, for a table in this process: Arrow
    batches, or a few rows as Python values (`fetch.few_rows`). Given a sink, the batches go
    to it as they are read (printed, under the statement's limits) and none is kept."""

    def __init__(self, sink: RowSink | None = None, stopped: Callable[[], bool] = lambda: False) -> None:
        self.schema: Any = None
        self.batches: list[Any] = []
        self.few: Any = None
        self.sink = sink
        self.stopped = stopped
        self.streamed = 0

    def take(self, table: Any) -> None:
        self.few = table

    def start(self, schema: Any) -> None:
        self.schema = schema
        if self.sink is not None:
            self.sink.start(schema)

    def write(self, batch: Any) -> None:
        if self.sink is None:
            self.batches.append(batch)
            return
        for start in range(0, batch.num_rows, _PRINTED_ROWS):  # a limit stops it between parts
            if self.stopped():
                raise QueryError("stopped while the rows were printed")
            part = batch.slice(start, _PRINTED_ROWS)
            self.sink.write(part)
            self.streamed += part.num_rows

    def finish(self) -> None:
        if self.sink is not None and self.few is None:  # a few rows are printed whole, after
            self.sink.end()

    def discard(self) -> None:
        self.batches = []

    def table(self) -> Any:
        if self.few is not None:
            return self.few
        import pyarrow as pa

        return pa.Table.from_batches(self.batches, schema=self.schema)


class _Connection(Connection):
    """The worker's connection, in this process: Arrow without NumPy, only when rows need it."""

    def arrow(self) -> None:
        without_numpy.import_module("pyarrow")


class _Stop:
    """What a CancelToken calls: DuckDB is interrupted here, and the watcher ends the process
    if the statement is still running GRACE_S later."""

    def __init__(self, runner: InlineRunner, number: int) -> None:
        self._runner = runner
        self._number = number

    def stop(self) -> None:
        self._runner.interrupted("cancel", self._number)
        self._runner.order(f"cancel {self._number}")


class InlineRunner:
    """The pool's interface (`run`, `meta`, `ready`), run in this process; one statement at a
    time. For a process that runs a command and ends: a limit ends the whole process."""

    def __init__(
        self,
        setup: dict[str, Any],
        memory_limit: str,
        open_error: Callable[[str, str], DataError] | None = None,
    ) -> None:
        self._setup = setup
        self._open_error = open_error or plain_open_error
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._failure: DatabaseNotOpened | None = None
        self._number = 0
        self._reason = ""
        self._closed = False
        self.peak_rss = 0
        orders, self._orders = os.pipe()
        alarms, interrupts = os.pipe()
        scratch = [str(p) for p in setup.get("scratch", ())]
        self._watcher = os.fork()
        if self._watcher == 0:  # the watcher: never returns
            try:
                os.close(self._orders)
                os.close(alarms)
                _Watcher(os.getppid(), orders, interrupts, scratch, memory_limit).loop()
            finally:
                os._exit(0)
        os.close(orders)
        os.close(interrupts)
        self._listener = threading.Thread(target=self._interrupter, args=(alarms,), daemon=True)
        self._listener.start()
        # Loaded here, not raced for: the opener then imports nothing this thread may be importing.
        from astro_tui.data.engines.duckdb import resolved  # noqa: F401

        self._opener = threading.Thread(target=self._open, name="astro-open", daemon=True)
        self._opener.start()

    def _open(self) -> None:
        """The database and its definitions; an error is kept for the first request, and one
        reading the definitions is met again (and answered) by the guard."""
        try:
            conn = _Connection(self._setup)
        except DatabaseNotOpened as exc:
            self._failure = exc
            return
        with contextlib.suppress(Exception):
            conn.definitions()
        self._conn = conn

    def order(self, line: str) -> None:
        with contextlib.suppress(OSError):
            os.write(self._orders, line.encode() + b"\n")

    def interrupted(self, reason: str, number: int) -> None:
        """Interrupt statement `number` if it is still the one running; the first reason wins."""
        conn = self._conn
        if number != self._number or conn is None:
            return
        if not self._reason:
            self._reason = reason
        conn.interrupt()

    def _interrupter(self, alarms: int) -> None:
        """The watcher's byte at a statement's time limit: the number of the statement."""
        pending = b""
        while data := os.read(alarms, 64):
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self.interrupted("timeout", int(line))
        os.close(alarms)

    def _ready(self) -> Connection:
        if self._closed:
            raise QueryError("the database is closed")
        self._opener.join()
        if self._conn is None:
            failure = self._failure or DatabaseNotOpened("the database could not be opened", "open")
            raise self._open_error(failure.message, failure.stage)
        return self._conn

    def ready(self) -> None:
        with self._lock:
            self._ready()

    def warm(self) -> None:
        return None

    def has_ready_worker(self) -> bool:
        """Always: a statement is checked here, where it runs, under its limits, once the file
        is open (a moment, not a worker's start); a first pass would parse it twice."""
        return True

    def meta(self, request: dict[str, Any]) -> bytes:
        """The engine's own catalog request: no statement from outside, so no limits (as in
        the pool)."""
        with self._lock:
            conn = self._ready()
            try:
                return conn.meta(request)
            finally:
                conn.idle()

    def run(
        self,
        statement: str,
        *,
        cap: int | None,
        timeout: float | None,
        cancel: CancelToken | None,
        guard: bool = True,
        first: Any = None,
    ) -> tuple[Any, bool, int | None, str]:
        """As `WorkerPool.run`: the guard's check and the statement, under the limits; a
        result of a few rows (`fetch.few_rows`) is read as Python values, without Arrow. No
        `first`: a one-shot command prints the whole result."""
        table, truncated, total, ran, _ = self.stream(
            statement, None, cap=cap, timeout=timeout, cancel=cancel, guard=guard
        )
        return table, truncated, total, ran

    def stream(
        self,
        statement: str,
        sink: RowSink | None,
        *,
        cap: int | None,
        timeout: float | None,
        cancel: CancelToken | None,
        guard: bool = True,
    ) -> tuple[Any, bool, int | None, str, int | None]:
        """`run`, the batches handed to `sink` as they are read: the printing is inside the
        statement's time and memory limits (the watcher holds them until it ends), and this
        process holds one batch, not the result. A few rows come whole, as from `run` (the
        count is then None); else the table returned is empty and the count is the rows sent."""
        from astro_tui.data.engines.duckdb import fetch  # DuckDB: loaded with `resolved` already

        if not fetch.may_be_few(statement):
            without_numpy.import_module("pyarrow")  # while the file opens
        with self._lock:
            conn = self._ready()
            self._number += 1
            number, self._reason = self._number, ""
            stop = _Stop(self, number)
            rows = _Rows(sink, lambda: bool(self._reason))
            self.order(f"run {number} {timeout or 0} {rss(os.getpid()) or 0}")
            if cancel is not None:
                cancel.attach(stop)
            try:
                header = conn.answer({"sql": statement, "cap": cap, "guard": guard, "few": True}, rows)
            finally:
                if cancel is not None:
                    cancel.detach(stop)
                self.order(f"done {number}")
                conn.idle()
            reason = self._reason
        if not header["ok"]:
            if reason:
                raise stopped(reason, timeout)
            if header.get("refused"):
                raise GuardError(header["message"])
            raise QueryError(header["message"])
        truncated, total, ran = bool(header["truncated"]), header["total"], str(header["statement"])
        if sink is None or rows.few is not None:
            return rows.table(), truncated, total, ran, None
        return empty_table(rows.schema), truncated, total, ran, rows.streamed

    def pids(self) -> list[int]:
        return []

    def close(self) -> None:
        """Waits for a running statement (its limits end it): DuckDB must not close under it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._opener.join()
            if self._conn is not None:
                self._conn.close()
            self.order("bye")
            with contextlib.suppress(OSError):
                os.close(self._orders)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._watcher, 0)
        # The watcher's end of the pipe is closed now: the listener ends at once. Waited for, so
        # that no thread holds DuckDB's objects when the interpreter ends (nanobind then prints
        # "leaked instances" on stderr).
        self._listener.join(_REPARENT_S)


class _Watcher:
    """The forked copy: reads the statement's start and end, and holds its limits."""

    def __init__(
        self, parent: int, orders: int, interrupts: int, scratch: list[str], memory_limit: str
    ) -> None:
        self.parent = parent
        self.orders = orders
        self.interrupts = interrupts
        self.scratch = scratch
        self.memory_label = memory_limit
        self.memory = memory_allowance(memory_limit)
        self.running: tuple[int, float, float, int] | None = None
        """The statement's number, its start, its time limit (0: none) and the memory baseline."""
        self.interrupted: tuple[float, str] | None = None
        for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):  # it ends when astro does
            signal.signal(signum, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            os.setsid()  # out of the terminal's process group
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1):  # a reader of astro's output sees its end when astro ends
            os.dup2(devnull, fd)
        os.close(devnull)

    def loop(self) -> NoReturn:
        pending = b""
        while True:
            if select.select([self.orders], [], [], _POLL_S)[0]:
                data = os.read(self.orders, 4096)
                if not data:
                    self.parent_gone()
                pending += data
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self.take(line.decode().split())
            if self.running is not None:
                self.check()

    def take(self, order: list[str]) -> None:
        if order[0] == "bye":
            os._exit(0)
        number = int(order[1])
        if order[0] == "run":
            self.running = (number, time.monotonic(), float(order[2]), int(order[3]))
            self.interrupted = None
        elif self.running is None or self.running[0] != number:
            return
        elif order[0] == "done":
            self.running = None
        elif order[0] == "cancel" and self.interrupted is None:
            self.interrupted = (time.monotonic(), "cancel")

    def check(self) -> None:
        assert self.running is not None
        number, started, timeout, baseline = self.running
        now = time.monotonic()
        if self.interrupted is None and timeout and now - started > timeout:
            with contextlib.suppress(OSError):
                os.write(self.interrupts, f"{number}\n".encode())
            self.interrupted = (now, "timeout")
        if self.interrupted is not None and now - self.interrupted[0] > GRACE_S:
            reason = self.interrupted[1]
            self.end("interrupted" if reason == "cancel" else str(stopped(reason, timeout)))
        if self.memory is not None:
            used = rss(self.parent)
            if used is not None and used - baseline > self.memory:
                self.end(str(memory_stopped(self.memory_label)))

    def end(self, message: str) -> NoReturn:
        """One line, then astro is killed and its scratch removed (once it is really gone: it
        could write a spill file until then)."""
        with contextlib.suppress(OSError):
            os.write(2, f"astro: {message}\n".encode())
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.parent, signal.SIGKILL)
        self.parent_gone()

    def parent_gone(self) -> NoReturn:
        """Astro closed the pipe without a goodbye: it is dying (its files close a moment
        before its children are handed to a new parent). Its scratch goes once it is gone."""
        deadline = time.monotonic() + _REPARENT_S
        while os.getppid() == self.parent and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        if os.getppid() != self.parent:
            for path in self.scratch:
                shutil.rmtree(path, ignore_errors=True)
        os._exit(0)
