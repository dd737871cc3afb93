"""A query's result as Arrow, with what the user must know about it: cut or not, how long."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pyarrow as pa  # imported by whoever makes a result; opening a database needs none


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of no rows with `schema`'s names: its types where Arrow can make an empty column
    of them (not of a union), else nulls."""
    import pyarrow as pa

    try:
        return schema.empty_table()
    except pa.ArrowNotImplementedError:
        return pa.Table.from_arrays([pa.nulls(0) for _ in schema.names], names=list(schema.names))


class RowSink(Protocol):
    """Where a result's rows go as they are read (`astro sql`'s printing): a batch at a time,
    under the statement's limits, so what the process holds is one batch, not the result."""

    def start(self, schema: pa.Schema) -> None: ...

    def write(self, batch: Any) -> None:
        """A batch of rows: an Arrow `RecordBatch`, or a few rows as Python values (`RowTable`)."""

    def end(self) -> None:
        """Every row is read (still inside the limits); the count and the cut come after."""


@dataclass(frozen=True, slots=True)
class QueryResult:
    """Rows capped at `row_cap`; `truncated` comes from a probe row, so it is never a guess."""

    sql: str
    table: pa.Table
    """Arrow; in a one-shot command's own process, a few rows may be a `RowTable` instead."""
    truncated: bool
    elapsed_ms: float
    row_cap: int | None = None
    description: str | None = field(default=None)
    total_rows: int | None = None
    """The full count of a truncated result, when it was cheap to know (else None): the engine's
    metadata for a plain scan, or a count within a few seconds (`Database.count_rows`)."""
    streamed: int | None = None
    """The rows handed to a `RowSink` as they were read; `table` then holds none of them."""

    @property
    def columns(self) -> list[str]:
        return list(self.table.column_names)

    @property
    def row_count(self) -> int:
        return self.table.num_rows if self.streamed is None else self.streamed

    def rows(self, limit: int | None = None) -> list[tuple[Any, ...]]:
        """Python tuples for the first `limit` rows; the Arrow table stays the source."""
        table = self.table if limit is None else self.table.slice(0, limit)
        columns = [col.to_pylist() for col in table.columns]
        return list(zip(*columns, strict=True)) if columns else []

    def records(self, limit: int | None = None) -> list[dict[str, Any]]:
        table = self.table if limit is None else self.table.slice(0, limit)
        return table.to_pylist()

    def count_text(self) -> str:
        """'12 rows', or '100,000 of 1,234,567 rows' when the cap cut it (or 'of more than
        100,000' when the total was not cheap to know)."""
        n = self.row_count
        if self.truncated and self.total_rows is not None and self.total_rows > n:
            return f"{n:,} of {self.total_rows:,} rows"
        if self.truncated:
            return f"{n:,} of more than {n:,} rows"
        return f"{n:,} row" + ("" if n == 1 else "s")

    def status_text(self) -> str:
        return f"{self.count_text()} · {self.elapsed_ms:,.0f} ms"
