"""Reading a PostgreSQL result into astro's process within the memory and time limits.

The server's `statement_timeout` bounds the server's time, but the rows are
read, converted to Arrow and kept in astro's own process, where nothing bounded
them: `SELECT repeat('x', 100000000) FROM generate_series(1, 10)` ran 70 s under
a 30 s limit and took 1.9 GB, mostly after the server had finished. So:

- **Bytes, as the batches arrive.** Each Arrow batch is counted as it is read;
  past half the memory limit the read stops (the server is sent a cancel) and
  the statement fails with one line naming the limit. The driver hands a batch
  every 16 MB or so, so the overshoot is one batch.
- **One row, on the server.** The driver reads a whole row before it can count
  it (libpq buffers the message, the driver copies it), and the server does not
  act on a cancel while it is sending one, so one huge row could pass any
  budget counted here and any deadline. The query is therefore wrapped so the
  server measures each row before sending it — `octet_length` of every column
  that can be long (the raw length, compressed or not, without decompressing
  text) — and fails a row over an eighth of the memory limit, 64 MiB at most
  (a fraction of a second to read), with an error astro recognises. Its column
  list comes from describing the statement first (a prepare, which runs nothing).
- **Time, between batches.** Past the deadline the read stops there too.

A read stopped by astro drops its connection rather than draining the rest or
waiting for a cancel; the server ends the statement when its next send fails.

The row cap is the same wrapper's `LIMIT cap + 1`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

from astro_tui.data.errors import QueryError, QueryTimeout
from astro_tui.data.memory_limit import memory_bytes

_DEFAULT_LIMIT = 4 * 10**9
_ROW_CEILING = 64 * 2**20
_DECIMAL_BYTES = 16
"""What `arrow.normalize` adds per numeric value when it turns the text into a decimal."""
_TOO_WIDE = "astro-row-too-wide:"
_TOO_WIDE_SEEN = re.compile(re.escape(_TOO_WIDE) + r"(\d+)")
_FIXED_WIDTH = frozenset(
    {
        "bool", "int2", "int4", "int8", "float4", "float8", "oid", "money", "char", "date", "time",
        "timetz", "timestamp", "timestamptz", "interval", "uuid", "inet", "cidr", "macaddr",
        "macaddr8", "name", "point", "xid", "xid8", "cid", "tid", "pg_lsn", "regclass", "regproc",
        "regprocedure", "regoper", "regoperator", "regtype", "regrole", "regnamespace",
        "regconfig", "regdictionary", "regcollation",
    }
)  # fmt: skip
"""PostgreSQL types whose values are a few bytes at most."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one statement's result may take in astro's process."""

    memory_limit: str
    result_bytes: int
    row_bytes: int
    deadline: float | None
    """time.monotonic() past which reading stops; None for no time limit."""
    timeout: float | None

    @classmethod
    def of(cls, memory_limit: str, timeout: float | None) -> Limits:
        total = memory_bytes(memory_limit) or _DEFAULT_LIMIT
        deadline = time.monotonic() + timeout if timeout else None
        return cls(memory_limit, total // 2, min(total // 8, _ROW_CEILING), deadline, timeout)


def wrapped(statement: str, schema: pa.Schema | None, cap: int | None, row_bytes: int | None) -> str:
    """The statement as sent: under the row cap's LIMIT, each row measured by the server when
    `row_bytes` is given. Columns are renamed positionally (c1, c2, …) so that any output names,
    duplicates included, can be referred to; `restore` gives the names back."""
    limit = f" LIMIT {int(cap) + 1}" if cap is not None else ""
    widths = _widths(schema) if schema is not None and row_bytes is not None else []
    if not widths or schema is None or row_bytes is None:
        return f"SELECT * FROM (\n{statement}\n) AS astro_capped{limit}" if limit else statement
    total = " + ".join(widths)
    columns = ", ".join(f"c{i}" for i in range(1, len(schema) + 1))
    check = (
        f"CASE WHEN {total} > {int(row_bytes)} "
        f"THEN ('{_TOO_WIDE}' || ({total})::pg_catalog.text)::pg_catalog.int4 END"
    )
    # OFFSET 0 keeps the statement a subquery of its own: pulled up, its constants would be folded
    # into the check and copied whole at planning (seconds for one 100 MB literal)
    inner = f"SELECT * FROM (\n{statement}\n) AS astro_statement OFFSET 0"
    # in WHERE, not as a column: an extra column cost the driver more than the check costs the server
    return f"SELECT * FROM ({inner}) AS astro_capped({columns}) WHERE ({check}) IS NULL{limit}"


def restore(table: pa.Table, schema: pa.Schema | None, checked: bool) -> pa.Table:
    """The statement's own column names back (the check renamed them c1, c2, …)."""
    if not checked or schema is None:
        return table
    return table.rename_columns(schema.names)


def measured(schema: pa.Schema | None) -> bool:
    """Whether `wrapped` will add the server's row check for this schema."""
    return schema is not None and bool(_widths(schema))


def read(batches: Iterable[pa.RecordBatch], limits: Limits) -> list[pa.RecordBatch]:
    """The batches, as long as they fit the result budget and the deadline; else the error saying
    which limit stopped them (the caller drops the connection)."""
    kept: list[pa.RecordBatch] = []
    used = rows = 0
    numeric: int | None = None
    for batch in batches:
        if numeric is None:
            numeric = sum(1 for f in batch.schema if getattr(f.type, "type_name", "") == "numeric")
        used += batch.nbytes + _DECIMAL_BYTES * numeric * batch.num_rows
        rows += batch.num_rows
        if used > limits.result_bytes:
            raise QueryError(
                f"result stopped after {rows:,} rows: it needs more than {_mb(limits.result_bytes)}, "
                f"half the {limits.memory_limit} memory limit; select fewer rows or columns"
            )
        if limits.deadline is not None and time.monotonic() > limits.deadline:
            raise QueryTimeout(f"query stopped after the {limits.timeout:g} s time limit")
        kept.append(batch)
    return kept


def too_wide(message: str, limits: Limits) -> QueryError | None:
    """The server's refusal of one row over the row limit, as the one line a user reads."""
    found = _TOO_WIDE_SEEN.search(message)
    if found is None:
        return None
    return QueryError(
        f"result stopped: one row holds {_mb(int(found.group(1)))}, more than the "
        f"{_mb(limits.row_bytes)} a row may take under the {limits.memory_limit} memory limit; "
        "select fewer or shorter columns"
    )


def _widths(schema: pa.Schema) -> list[str]:
    """A width expression per column that can be long; none for the fixed-width types."""
    widths = []
    for index, field in enumerate(schema, start=1):
        metadata = field.metadata or {}
        pg_type = metadata.get(b"POSTGRESQL:type", b"").decode("utf-8", "replace")
        if pg_type in _FIXED_WIDTH:
            continue
        if pg_type == "numeric":  # at most ~131,000 digits: its stored size, without a conversion
            width = f"pg_catalog.pg_column_size(c{index})"
        elif pg_type == "bytea":
            width = f"pg_catalog.octet_length(c{index})"
        else:  # text's length without decompressing it; other types as the text the driver may get
            width = f"pg_catalog.octet_length(c{index}::pg_catalog.text)"
        widths.append(f"coalesce({width}, 0)::pg_catalog.int8")
    return widths


def _mb(size: int) -> str:
    return f"{size / 10**6:,.0f} MB"
