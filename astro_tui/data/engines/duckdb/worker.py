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
  never held whole here;
- the engine's own catalog request (`{"meta": "catalog"}`) → `pickled`, the length
  of the pickle (the catalog model) that follows.
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
from typing import IO, Any

_LENGTH = struct.Struct(">Q")
_IDLE_S = 0.05
"""No request this long after the last answer: the worker is idle and imports Arrow."""
_CATALOG_BATCH = 8192
_PIPE_BYTES = 1 << 20
"""Larger results go through a file in memory (/dev/shm) that the parent maps, not the pipe."""
_PR_SET_PDEATHSIG = 1
_REPARENT_S = 2.0
_RESULTS = itertools.count(1)


def write_frame(stream: IO[bytes], body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> dict[str, Any] | None:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    return json.loads(stream.read(length))


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


def main() -> None:
    interrupts, parent = int(sys.argv[1]), int(sys.argv[2])
    os.umask(0o077)  # result and spill files: this user's alone
    watch = _Parent(parent)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames on the pipe
    setup = read_frame(stdin)
    if setup is None:
        return
    watch.scratch = list(setup.get("scratch", ()))
    import duckdb

    from astro_tui.data.errors import engine_message, one_line

    stage = "open"  # the file itself, then the statements that attach and lock it down
    try:
        con = duckdb.connect(setup["path"], read_only=True, config=setup["config"])
        stage = "setup"
        for statement in setup["statements"]:
            con.execute(statement)
    except duckdb.Error as exc:
        write_frame(stdout, {"ready": False, "message": one_line(exc), "stage": stage})
        return
    from astro_tui.data.engines.duckdb.resolved import builtins_first, with_builtins_first

    write_frame(stdout, {"ready": True})
    running: list[Any] = [None]

    def interrupter() -> None:
        while os.read(interrupts, 1):
            cursor = running[0]
            if cursor is not None:
                with contextlib.suppress(duckdb.Error):
                    cursor.interrupt()
        watch.gone()  # the parent closed its end: it dismissed this worker, or it died

    threading.Thread(target=interrupter, daemon=True).start()

    def cursor() -> Any:
        made = con.cursor()
        running[0] = made
        return made

    def trusted() -> Any:
        """For astro's own queries: the built-ins first, whatever the file defines."""
        return with_builtins_first(cursor(), path)

    path = builtins_first(con)
    definitions: Any = None
    while True:
        if definitions is None and not select.select([stdin], [], [], _IDLE_S)[0]:
            with contextlib.suppress(Exception):  # a request will meet the same error, and say it
                definitions = _warm(cursor, trusted, setup)  # idle: paid now, not by a statement
        request = read_frame(stdin)
        if request is None:
            break
        try:
            if "meta" in request:
                _answer_meta(trusted, stdout)
                continue
            if definitions is None:
                definitions = _warm(cursor, trusted, setup)
            if "warm" in request:
                write_frame(stdout, {"ok": True})
            else:
                _answer_statement(cursor, trusted, request, setup, definitions, stdout)
        except duckdb.Error as exc:
            write_frame(stdout, {"ok": False, "message": engine_message(exc)})
        except Exception as exc:  # one answer, never a crash the parent reads as "out of memory?"
            write_frame(stdout, {"ok": False, "message": one_line(exc)})
        finally:
            running[0] = None


def _warm(cursor: Any, trusted: Any, setup: dict[str, Any]) -> Any:
    """Arrow, the guard and what the file defines, loaded after `ready`: the engine's first
    request is often the catalog, which needs none of it, and a catalog shown sooner is
    worth more than a warm import. None of this is a statement's work, so the pool asks for
    it (untimed) before a worker's first statement, if idleness has not paid for it already."""
    import pyarrow as pa

    from astro_tui.data.engines.duckdb import fetch, guard
    from astro_tui.data.engines.duckdb.resolved import FileDefinitions

    made = cursor()
    try:  # the first trip through DuckDB's Arrow export and Arrow's IPC writer costs ~0.5 s
        rows = fetch.Capped(made, "SELECT 1 AS warm", 1)
        with pa.ipc.new_stream(pa.BufferOutputStream(), rows.schema) as stream:
            for batch in rows:
                stream.write_batch(batch)
    finally:
        made.close()
    guard.check("SELECT 1")
    definitions = FileDefinitions(cursor, trusted, trusted_views=setup.get("trusted_views", ()))
    definitions.mentioned("")
    return definitions


def _answer_statement(
    cursor: Any,
    trusted: Any,
    request: dict[str, Any],
    setup: dict[str, Any],
    definitions: Any,
    stdout: IO[bytes],
) -> None:
    """Check the statement (unless told not to: tests of the engine lock alone), then stream
    its rows to the pipe while they are small, else into a result file, so only one batch at
    a time is held here; an error at any point (an interrupt lands as DuckDB's error, or as
    Arrow's OSError while batches are read) is one answer, never a crash."""
    import pyarrow as pa

    from astro_tui.data.engines.duckdb import fetch, guard
    from astro_tui.data.errors import GuardError, QueryError, engine_message, one_line, syntax_message

    statement = request["sql"]
    if request.get("guard", True):
        try:
            statement = guard.check(statement, database=definitions)
        except GuardError as exc:
            write_frame(stdout, {"ok": False, "refused": True, "message": str(exc)})
            return
        except QueryError as exc:
            write_frame(stdout, {"ok": False, "message": str(exc)})
            return
        except Exception as exc:  # an interrupt while binding, or what no one planned for
            message = f"the statement could not be checked: {one_line(exc)}"
            write_frame(stdout, {"ok": False, "message": message})
            return
    made = cursor()
    path = os.path.join(setup["results"], f"{os.getpid()}-{next(_RESULTS)}.arrow")
    sink: Any = None
    writer: Any = None
    try:
        rows = fetch.Capped(made, statement, request["cap"])
        held: list[pa.RecordBatch] = []
        size = 0
        for batch in rows:
            if writer is not None:
                writer.write_batch(batch)
                continue
            held.append(batch)
            size += batch.nbytes
            if size > _PIPE_BYTES:
                sink = pa.OSFile(path, "wb")
                writer = pa.ipc.new_file(sink, rows.schema)
                for kept in held:
                    writer.write_batch(kept)
                held = []
        total = _total(trusted, statement, setup) if rows.truncated else None
        if writer is not None:
            writer.close()
            sink.close()
    except Exception as exc:  # DuckDB's errors, Arrow's OSError on an interrupt, a full /dev/shm
        for closing in (writer, sink):
            with contextlib.suppress(Exception):
                if closing is not None:
                    closing.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
        import duckdb

        parser = isinstance(exc, duckdb.ParserException)
        message = syntax_message(one_line(exc)) if parser else engine_message(exc)
        write_frame(stdout, {"ok": False, "message": message})
        return
    finally:
        made.close()
    header = {"ok": True, "truncated": rows.truncated, "total": total, "statement": statement}
    if writer is not None:
        write_frame(stdout, {**header, "file": path})
        return
    write_frame(stdout, header)
    with pa.ipc.new_stream(stdout, rows.schema) as stream:
        for batch in held:
            stream.write_batch(batch)
    stdout.flush()


def _total(trusted: Any, statement: str, setup: dict[str, Any]) -> int | None:
    """On a cursor of its own (the statement's is still open on its reader), the built-ins
    first: the file's `count_star` macro must not answer for `count(*)`."""
    from astro_tui.data.engines.duckdb import fetch

    counting = trusted()
    try:
        return fetch.total_rows(counting, statement, setup.get("view_rows", {}))
    finally:
        counting.close()


def _answer_meta(trusted: Any, stdout: IO[bytes]) -> None:
    """The engine's own catalog request (never user or model SQL), the built-ins first: the
    file's `main.duckdb_tables()` must not write the catalog the model reads."""
    from astro_tui.data.catalog_cache import dumps
    from astro_tui.data.engines.duckdb import catalog

    def rows(sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        cursor = trusted()
        try:
            return cursor.execute(sql, params or []).fetchall()
        finally:
            cursor.close()

    def streamed(sql: str) -> Iterator[tuple[Any, ...]]:
        """The query runs now; its rows become Python objects a batch at a time, so 300,000
        columns are never all held as tuples at once."""
        cursor = trusted()
        cursor.execute(sql)

        def batches() -> Iterator[tuple[Any, ...]]:
            try:
                while batch := cursor.fetchmany(_CATALOG_BATCH):
                    yield from batch
            finally:
                cursor.close()

        return batches()

    data = dumps(catalog.load_catalog(rows, streamed))
    write_frame(stdout, {"ok": True, "pickled": len(data)})
    stdout.write(data)
    stdout.flush()


if __name__ == "__main__":
    main()
