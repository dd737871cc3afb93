"""The process a statement runs in, so that the operating system holds its limits.

DuckDB checks for interrupts between chunks and its memory limit covers its
buffer pool, so one scalar call (`lpad('', 2147483647, 'x')`) or one huge list
(`list_sort(range(300000000))`) ran for a minute past its time limit and took
gigabytes past its memory limit. Here the statement runs in a child process:
the parent (`pool.py`) interrupts it at its time limit, kills it a second later
if it is still running, and kills it at once when it outgrows its memory limit.

Protocol over stdin/stdout, frames of an 8-byte length and a JSON body: the
parent sends the connection's setup, the child answers `ready` (or the error);
then per statement the parent sends `{"sql", "cap"}` and the child answers a
header (`ok`, `truncated` or `message`) followed, when ok, by the rows as an
Arrow IPC stream, or, for a large result, the path of an Arrow file the parent
maps into memory. The engine's own metadata requests (`{"meta": "catalog"}`,
`{"meta": "rows", "sql", "params"}`) are answered with `pickled`, the length of
the pickle that follows: the catalog model, or the rows as tuples. This process
is the only one that opens the user's database, so it is opened (and its
memory held) once, not once here and once in the app. A byte on a second pipe
(its descriptor is the child's only argument) interrupts the running statement;
a signal would do, but threads started while DuckDB and Arrow load would take it
and die.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import struct
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

_LENGTH = struct.Struct(">Q")
_IDLE_S = 0.05
"""No request this long after the last answer: the worker is idle and imports Arrow."""
_CATALOG_BATCH = 8192
_PIPE_BYTES = 1 << 20
"""Larger results go through a file in memory (/dev/shm) that the parent maps, not the pipe."""


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


def main() -> None:
    interrupts = int(sys.argv[1])
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames on the pipe
    setup = read_frame(stdin)
    if setup is None:
        return
    import duckdb

    from astro_tui.data.errors import engine_message, one_line, syntax_message

    stage = "open"  # the file itself, then the statements that attach and lock it down
    try:
        con = duckdb.connect(setup["path"], read_only=True, config=setup["config"])
        stage = "setup"
        for statement in setup["statements"]:
            con.execute(statement)
    except duckdb.Error as exc:
        write_frame(stdout, {"ready": False, "message": one_line(exc), "stage": stage})
        return
    write_frame(stdout, {"ready": True})
    running: list[Any] = [None]

    def interrupter() -> None:
        while os.read(interrupts, 1):
            cursor = running[0]
            if cursor is not None:
                with contextlib.suppress(duckdb.Error):
                    cursor.interrupt()

    threading.Thread(target=interrupter, daemon=True).start()
    count = 0
    arrow: Any = None
    while True:
        if arrow is None and not select.select([stdin], [], [], _IDLE_S)[0]:
            arrow = _import_arrow()  # idle: paid now rather than by the first statement
        request = read_frame(stdin)
        if request is None:
            break
        if "meta" in request:
            _answer_meta(con, request, stdout)
            continue
        if arrow is None:
            arrow = _import_arrow()
        pa, fetch = arrow
        cursor = con.cursor()
        running[0] = cursor
        try:
            table, truncated = fetch(cursor, request["sql"], request["cap"])
        except duckdb.Error as exc:
            parser = isinstance(exc, duckdb.ParserException)
            message = syntax_message(one_line(exc)) if parser else engine_message(exc)
            write_frame(stdout, {"ok": False, "message": message})
            continue
        finally:
            running[0] = None
            cursor.close()
        if table.nbytes > _PIPE_BYTES:
            count += 1
            path = os.path.join(setup["results"], f"{os.getpid()}-{count}.arrow")
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            write_frame(stdout, {"ok": True, "truncated": truncated, "file": path})
            continue
        write_frame(stdout, {"ok": True, "truncated": truncated})
        with pa.ipc.new_stream(stdout, table.schema) as writer:
            writer.write_table(table)
        stdout.flush()


def _import_arrow() -> tuple[Any, Any]:
    """Arrow is imported after `ready`: the engine's first request is often the catalog,
    which needs none of it, and a catalog shown sooner is worth more than a warm import."""
    import pyarrow as pa

    from astro_tui.data.engines.duckdb.fetch import fetch

    return pa, fetch


def _answer_meta(con: Any, request: dict[str, Any], stdout: IO[bytes]) -> None:
    """Trusted queries of the engine's own (never user or model SQL)."""
    import duckdb

    from astro_tui.data.catalog_cache import dumps
    from astro_tui.data.engines.duckdb import catalog
    from astro_tui.data.errors import one_line

    def rows(sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        cursor = con.cursor()
        try:
            return cursor.execute(sql, params or []).fetchall()
        finally:
            cursor.close()

    def streamed(sql: str) -> Iterator[tuple[Any, ...]]:
        """The query runs now; its rows become Python objects a batch at a time, so 300,000
        columns are never all held as tuples at once."""
        cursor = con.cursor()
        cursor.execute(sql)

        def batches() -> Iterator[tuple[Any, ...]]:
            try:
                while batch := cursor.fetchmany(_CATALOG_BATCH):
                    yield from batch
            finally:
                cursor.close()

        return batches()

    try:
        if request["meta"] == "catalog":
            data = dumps(catalog.load_catalog(rows, streamed))
        else:
            data = dumps(rows(request["sql"], request.get("params")))
    except duckdb.Error as exc:
        write_frame(stdout, {"ok": False, "message": one_line(exc)})
        return
    write_frame(stdout, {"ok": True, "pickled": len(data)})
    stdout.write(data)
    stdout.flush()


if __name__ == "__main__":
    main()
