"""The process a statement is checked and run in, so that the operating system holds its limits.

DuckDB checks for interrupts between chunks and its memory limit covers its
buffer pool, so one scalar call (`lpad('', 2147483647, 'x')`) or one huge list
(`list_sum(range(300000000))`) ran for a minute past its time limit and took
gigabytes past its memory limit; parsing a 990,000-character statement took
seconds and gigabytes before anything ran. Here both happen in a child process:
the parent (`pool.py`) interrupts it at its time limit, kills it a moment later
if it is still busy, and kills it at once when it outgrows its memory limit.
The guard runs here too, where the database is open, so that the names in a
statement are resolved against the file as DuckDB will resolve them
(`resolved.py`).

Protocol over stdin/stdout, frames of an 8-byte length and a JSON body: the
parent sends the setup, the child answers `ready` (or the error); then:
- `{"sql", "cap", "guard"}` → the guard's verdict on the statement and, if it
  passes, a header (`ok`, `truncated`, `total`, the `statement` that ran; or
  `message`, and `refused` for the guard's) and the rows as an Arrow IPC stream
  on the pipe, or for a larger result the path of an Arrow file in /dev/shm
  (mode 0600) that the parent maps; the rows are streamed from DuckDB to either,
  never held whole here; with `first` (N), a result longer than DuckDB's first
  batch is preceded by an interim frame (`first`: the length of an Arrow IPC
  stream of its first N rows, which follows), sent once, after the guard, as
  soon as DuckDB yields that batch;
- the engine's own catalog requests (`{"meta": "catalog"}`, or `"outline"` for the
  schemas and tables without columns) → `pickled`, the length of the pickle (the
  catalog model) that follows.
A byte on a second pipe (its descriptor is the first argument) interrupts the
running statement; a signal would do, but threads started while DuckDB and
Arrow load would take it and die.

Nothing here outlives astro: the parent's end of that pipe closes when astro
dies, however it dies, and the parent-death signal (Linux) is a second way to
notice; either way the worker removes astro's scratch directories (the spill
files, the result files, the private database of data files) and exits.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import shutil
import signal
import struct
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any, Protocol, cast

from astro_tui.data.errors import TargetError

_LENGTH = struct.Struct(">Q")
_IDLE_S = 0.05
"""No request this long after the last answer: the worker is idle and imports Arrow."""
_CATALOG_BATCH = 8192
_PIPE_BYTES = 1 << 20
"""Larger results go through a file in memory (/dev/shm) that the parent maps, not the pipe."""
_OPENING_MEMORY = "1MB"
"""DuckDB's memory limit while the file opens, until the setup sets the real one. DuckDB reads
each table's storage blocks into its buffer pool as it loads the catalog and keeps them
(62 MB of a file of 10,000 tables, that no statement may ever read again); under this limit
it lets each go once read, to be read again by a statement that needs it. A file that
needs more to open (a write-ahead log replayed) is opened again without it."""
_PR_SET_PDEATHSIG = 1
_REPARENT_S = 2.0
_RESULTS = itertools.count(1)


def write_frame(stream: IO[bytes], body: dict[str, Any], tail: bytes = b"") -> None:
    """One write: what follows the frame (`tail`) goes with it, so the reader is woken once."""
    data = json.dumps(body).encode()
    stream.write(_LENGTH.pack(len(data)) + data + tail)
    stream.flush()


def read_frame(stream: IO[bytes]) -> dict[str, Any] | None:
    head = read_exactly(stream, _LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    return json.loads(read_exactly(stream, length))


def read_exactly(stream: IO[bytes], size: int) -> bytes:
    """`size` bytes, or fewer at the end: an unbuffered stream (the worker's stdin) returns
    what the pipe holds, and reads no further than asked."""
    data = stream.read(size) or b""
    while len(data) < size:
        more = stream.read(size - len(data))
        if not more:
            break
        data += more
    return data


class _Parent:
    """Dies with astro: a closed interrupt pipe or the parent-death signal ends this process,
    and when astro is really gone (not just this worker dismissed) its scratch is removed."""

    def __init__(self, parent: int) -> None:
        self.parent = parent
        self.scratch: list[str] = []
        self._ending = threading.Lock()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # every later thread too
        threading.Thread(target=self._await_signal, daemon=True).start()
        _ask_for_death_signal()
        if os.getppid() != parent:  # gone before we asked
            self.gone()

    def _await_signal(self) -> None:
        signal.sigwait({signal.SIGTERM})
        self.gone()

    def gone(self) -> None:
        """Exit; first remove astro's scratch if astro is dead. A dying process closes its files
        before its children are handed to a new parent, so the pipe's end can come a moment
        before `getppid()` changes: give it that moment. A parent still there after it has
        dismissed this worker (and cleans up itself)."""
        with self._ending:
            deadline = time.monotonic() + _REPARENT_S
            while os.getppid() == self.parent and time.monotonic() < deadline:
                time.sleep(0.01)
            if os.getppid() != self.parent:
                for path in self.scratch:
                    shutil.rmtree(path, ignore_errors=True)
            os._exit(0)


def _ask_for_death_signal() -> None:
    """PR_SET_PDEATHSIG (Linux): SIGTERM when the thread that started us ends. `pool.py`
    starts workers from one thread that lives as long as astro, so that is astro's death."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class DatabaseNotOpened(TargetError):
    """The database could not be opened (`stage`: the file itself, or a setup statement); the
    engine turns it into its own message (not the session's `OpenFailed` event, a report of it)."""

    def __init__(self, message: str, stage: str) -> None:
        super().__init__(message)
        self.message = message
        self.stage = stage


class _OpenError(Exception):
    def __init__(self, error: Exception, stage: str) -> None:
        super().__init__(str(error))
        self.error = error
        self.stage = stage


def _opened(setup: dict[str, Any]) -> Any:
    """The database opened under `_OPENING_MEMORY`, or again without it if that was too little,
    then the setup statements run (they attach the rest, set the real memory limit and lock
    the configuration)."""
    import duckdb

    try:
        return _opened_with(setup, {**setup["config"], "memory_limit": _OPENING_MEMORY})
    except _OpenError as exc:
        if not isinstance(exc.error, duckdb.OutOfMemoryException):
            raise
    return _opened_with(setup, setup["config"])


def _opened_with(setup: dict[str, Any], config: dict[str, Any]) -> Any:
    import duckdb

    stage = "open"  # the file itself, then the statements that attach and lock it down
    con = None
    try:
        con = duckdb.connect(setup["path"], read_only=True, config=config)
        stage = "setup"
        for statement in setup["statements"]:
            con.execute(statement)
    except duckdb.Error as exc:
        if con is not None:
            con.close()  # or the next connect to the file meets this one's configuration
        raise _OpenError(exc, stage) from None
    return con


class Connection:
    """The database as a statement worker holds it: opened with the engine's setup (read-only,
    locked down), the cursor running now (what an interrupt stops), and the file's
    definitions the guard resolves names against. A worker process holds one; so does a
    one-shot command's own process (`inline.py`), which runs the same `answer`."""

    def __init__(self, setup: dict[str, Any]) -> None:
        from astro_tui.data.engines.duckdb import definitions_cache
        from astro_tui.data.engines.duckdb.resolved import builtins_first
        from astro_tui.data.errors import one_line

        try:
            self._con = _opened(setup)
        except _OpenError as exc:
            raise DatabaseNotOpened(one_line(exc.error), exc.stage) from None
        self.setup = setup
        self.warmed = False
        self.columns_next = False
        """An outline was just read: the engine asks for the columns next, so no idle warm-up."""
        self._running: Any = None
        self._path = builtins_first(self._con)
        self._definitions: Any = None
        self._kept = definitions_cache.Store.verified(setup.get("definitions_kept"))
        """Taken now the files are open: kept listings only if these are the files keyed."""
        self._scope: Any = None

    def cursor(self) -> Any:
        made = self._con.cursor()
        self._running = made
        return made

    def trusted(self) -> Any:
        """For astro's own queries: the built-ins first, whatever the file defines."""
        from astro_tui.data.engines.duckdb.resolved import with_builtins_first

        return with_builtins_first(self.cursor(), self._path)

    def interrupt(self) -> None:
        import duckdb

        running = self._running
        if running is not None:
            with contextlib.suppress(duckdb.Error):
                running.interrupt()

    def idle(self) -> None:
        self._running = None

    def definitions(self) -> Any:
        """What the file defines, read once (`resolved.FileDefinitions`)."""
        if self._definitions is None:
            from astro_tui.data.engines.duckdb.resolved import FileDefinitions

            views = self.setup.get("trusted_views", ())
            made = FileDefinitions(self.cursor, self.trusted, trusted_views=views, kept=self._kept)
            made.mentioned("")
            self._definitions = made
        return self._definitions

    def warm(self) -> None:
        """Arrow, the guard and what the file defines, loaded after `ready`: the engine's first
        request is often the catalog, which needs none of it, and a catalog shown sooner is
        worth more than a warm import. None of this is a statement's work, so the pool asks
        for it (untimed) before a worker's first statement, if idleness has not paid for it
        already. Arrow without NumPy (`without_numpy`), as a one-shot command has it: nothing
        here needs NumPy, and its import was ~15 MB of the worker's peak."""
        if self.warmed:
            return
        from astro_tui.data import without_numpy

        pa = without_numpy.import_module("pyarrow")
        from astro_tui.data.engines.duckdb import fetch, guard

        made = self.cursor()
        try:  # the first trip through DuckDB's Arrow export and Arrow's IPC writer costs ~0.5 s
            rows = fetch.Capped(made, "SELECT 1 AS warm", 1)
            with pa.ipc.new_stream(pa.BufferOutputStream(), rows.schema) as stream:
                for batch in rows:
                    stream.write_batch(batch)
        finally:
            made.close()
        guard.check("SELECT 1", database=self.definitions())  # as statements are: no second DuckDB
        self.warmed = True

    def answer(self, request: dict[str, Any], sink: Sink) -> dict[str, Any]:
        """Check the statement (unless told not to: tests of the engine lock alone), then put
        its rows into `sink` a batch at a time, so only one batch at a time is held here; the
        answer's header. An error at any point (an interrupt lands as DuckDB's error, or as
        Arrow's OSError while batches are read) is a header, never a crash."""
        import duckdb

        from astro_tui.data.engines.duckdb import fetch, guard
        from astro_tui.data.errors import GuardError, QueryError, engine_message, one_line, syntax_message

        statement = request["sql"]
        if request.get("guard", True):
            try:
                try:
                    statement = guard.check(statement, database=self.definitions())
                except GuardError as exc:  # under a scope, it may name a view or macro of a hidden schema
                    if not self.setup.get("hide"):
                        raise
                    raise GuardError(self.scope().guard_refusal(exc, statement, request["sql"])) from None
                if self.setup.get("hide"):
                    self.scope().judge(statement, request["sql"])
            except GuardError as exc:
                return {"ok": False, "refused": True, "message": str(exc)}
            except QueryError as exc:  # under a scope, a binding error may list hidden names
                if not self.setup.get("hide"):
                    return {"ok": False, "message": str(exc)}
                line = self.scope().refusal(statement, request["sql"])
                return {"ok": False, "refused": True, "message": line}
            except Exception as exc:  # an interrupt while binding, or what no one planned for
                return {"ok": False, "message": f"the statement could not be checked: {one_line(exc)}"}
        made = self.cursor()
        try:
            few = None
            if request.get("few"):
                few = fetch.few_rows(made, statement, request["cap"], self.definitions().defines)
            if few is not None:
                table, truncated = few
                cast(RowSink, sink).take(table)
            else:
                self.arrow()
                rows = fetch.Capped(made, statement, request["cap"])
                sink.start(rows.schema)
                first = request.get("first")
                for batch in rows:
                    if first and batch.num_rows >= rows.batch_rows:  # more may follow: show these
                        cast(FirstSink, sink).first(batch.slice(0, first))
                    first = None
                    sink.write(batch)
                truncated = rows.truncated
            total = self._total(statement) if truncated else None
            sink.finish()
        except Exception as exc:  # DuckDB's errors, Arrow's OSError on an interrupt, a full /dev/shm
            sink.discard()
            parser = isinstance(exc, duckdb.ParserException)
            message = syntax_message(one_line(exc)) if parser else engine_message(exc)
            if self.setup.get("hide"):
                message = self.scope().scrub(message, request["sql"])
            return {"ok": False, "message": message}
        finally:
            made.close()
        return {"ok": True, "truncated": truncated, "total": total, "statement": statement}

    def arrow(self) -> None:
        """Arrow, imported before a statement's rows are read as Arrow (`inline.py`: without NumPy)."""
        import pyarrow  # noqa: F401

    def _total(self, statement: str) -> int | None:
        """On a cursor of its own (the statement's is still open on its reader) that resolves the
        table as the statement did; `fetch.total_rows` names DuckDB's own functions in full."""
        from astro_tui.data.engines.duckdb import fetch

        counting = self.cursor()
        try:
            return fetch.total_rows(counting, statement, self.setup.get("view_rows", {}))
        finally:
            counting.close()

    def meta(self, request: dict[str, Any]) -> bytes:
        """The engine's own requests: the catalog (a pickle), or the views the scope hides
        because they read something hidden (JSON)."""
        if request.get("meta") == "hidden":
            return json.dumps(self.scope().hidden_derived()).encode()
        return self.catalog(outline=request.get("meta") == "outline")

    def scope(self) -> Any:
        """The scope's guard over this connection (`scoped.ScopeGuard`), built once."""
        if self._scope is None:
            from astro_tui.data.engines.duckdb.scoped import ScopeGuard
            from astro_tui.data.scope import Scope

            self._scope = ScopeGuard(Scope.parse(self.setup.get("hide", ())), self.cursor, self.trusted)
        return self._scope

    def catalog(self, *, outline: bool = False) -> bytes:
        """The engine's own catalog request (never user or model SQL), as a pickle, the
        built-ins first: the file's `main.duckdb_tables()` must not write the catalog the
        model reads. `outline`: without the columns (`catalog.load_outline`)."""
        from astro_tui.data.catalog_cache import dumps
        from astro_tui.data.engines.duckdb import catalog

        def rows(sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
            cursor = self.trusted()
            try:
                return cursor.execute(sql, params or []).fetchall()
            finally:
                cursor.close()

        def streamed(sql: str) -> Iterator[tuple[Any, ...]]:
            """The query runs now; its rows become Python objects a batch at a time, so 300,000
            columns are never all held as tuples at once."""
            cursor = self.trusted()
            cursor.execute(sql)

            def batches() -> Iterator[tuple[Any, ...]]:
                try:
                    while batch := cursor.fetchmany(_CATALOG_BATCH):
                        yield from batch
                finally:
                    cursor.close()

            return batches()

        self.columns_next = outline
        if outline:
            return dumps(catalog.load_outline(rows))
        return dumps(catalog.load_catalog(rows, streamed))

    def close(self) -> None:
        self._con.close()


class Sink(Protocol):
    """Where `Connection.answer` puts a statement's rows, a batch at a time."""

    def start(self, schema: Any) -> None: ...

    def write(self, batch: Any) -> None: ...

    def finish(self) -> None: ...

    def discard(self) -> None: ...


class FirstSink(Sink, Protocol):
    """A sink that can send a long result's first rows ahead of the rest (`first` in the request)."""

    def first(self, batch: Any) -> None: ...


class RowSink(Sink, Protocol):
    """A sink in the command's own process, which may take a few rows as Python values
    (`fetch.few_rows`: asked for with `few` in the request) instead of Arrow batches."""

    def take(self, table: Any) -> None: ...


class _PipeOrFile:
    """The rows held for the pipe while they are small, else written to a result file in
    /dev/shm (mode 0600) as they come."""

    def __init__(self, path: str, stdout: IO[bytes]) -> None:
        self.path = path
        self._stdout = stdout
        self.schema: Any = None
        self.held: list[Any] = []
        self._size = 0
        self._file: Any = None
        self._writer: Any = None

    @property
    def in_file(self) -> bool:
        return self._writer is not None

    def start(self, schema: Any) -> None:
        self.schema = schema

    def write(self, batch: Any) -> None:
        if self._writer is not None:
            self._writer.write_batch(batch)
            return
        self.held.append(batch)
        self._size += batch.nbytes
        if self._size > _PIPE_BYTES:
            import pyarrow as pa

            self._file = pa.OSFile(self.path, "wb")
            self._writer = pa.ipc.new_file(self._file, self.schema)
            for kept in self.held:
                self._writer.write_batch(kept)
            self.held = []

    def first(self, batch: Any) -> None:
        """The interim frame: the first rows as an Arrow stream, in the frame's write."""
        write_frame(self._stdout, {"first": len(data := _stream_bytes(self.schema, [batch]))}, data)

    def finish(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._file.close()

    def discard(self) -> None:
        for closing in (self._writer, self._file):
            with contextlib.suppress(Exception):
                if closing is not None:
                    closing.close()
        self._writer = None
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def main() -> None:
    interrupts, parent = int(sys.argv[1]), int(sys.argv[2])
    os.umask(0o077)  # result and spill files: this user's alone
    watch = _Parent(parent)
    # Unbuffered: a buffer could hold a request read with the setup, which `select` cannot see,
    # and the idle warm-up would run ahead of it.
    stdin, stdout = sys.stdin.buffer.raw, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames on the pipe
    setup = read_frame(stdin)
    if setup is None:
        return
    watch.scratch = list(setup.get("scratch", ()))
    try:
        conn = Connection(setup)
    except DatabaseNotOpened as exc:
        write_frame(stdout, {"ready": False, "message": exc.message, "stage": exc.stage})
        return
    import duckdb

    from astro_tui.data.errors import engine_message, one_line

    write_frame(stdout, {"ready": True})

    def interrupter() -> None:
        while os.read(interrupts, 1):
            conn.interrupt()
        watch.gone()  # the parent closed its end: it dismissed this worker, or it died

    threading.Thread(target=interrupter, daemon=True).start()
    while True:
        idle = not conn.warmed and not conn.columns_next  # after an outline, the columns come first
        if idle and not select.select([stdin], [], [], _IDLE_S)[0]:
            with contextlib.suppress(Exception):  # a request will meet the same error, and say it
                conn.warm()  # idle: paid now, not by a statement
        request = read_frame(stdin)
        if request is None:
            break
        try:
            if "meta" in request:
                data = conn.meta(request)
                write_frame(stdout, {"ok": True, "pickled": len(data)})
                stdout.write(data)
                stdout.flush()
                continue
            conn.warm()
            if "warm" in request:
                write_frame(stdout, {"ok": True})
            else:
                _answer_statement(conn, request, stdout)
        except duckdb.Error as exc:
            write_frame(stdout, {"ok": False, "message": engine_message(exc)})
        except Exception as exc:  # one answer, never a crash the parent reads as "out of memory?"
            write_frame(stdout, {"ok": False, "message": one_line(exc)})
        finally:
            conn.idle()


def _answer_statement(conn: Connection, request: dict[str, Any], stdout: IO[bytes]) -> None:
    """The header, then the rows as an Arrow stream on the pipe (in the header's write: at most
    `_PIPE_BYTES`, and astro wakes once for the whole answer), or the result file's path."""
    path = os.path.join(conn.setup["results"], f"{os.getpid()}-{next(_RESULTS)}.arrow")
    sink = _PipeOrFile(path, stdout)
    header = conn.answer(request, sink)
    if not header["ok"]:
        write_frame(stdout, header)
    elif sink.in_file:
        write_frame(stdout, {**header, "file": sink.path})
    else:
        write_frame(stdout, header, _stream_bytes(sink.schema, sink.held))


def _stream_bytes(schema: Any, batches: list[Any]) -> bytes:
    import pyarrow as pa

    rows = pa.BufferOutputStream()
    with pa.ipc.new_stream(rows, schema) as stream:
        for batch in batches:
            stream.write_batch(batch)
    return rows.getvalue().to_pybytes()


if __name__ == "__main__":
    main()
