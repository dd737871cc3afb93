"""Reading a statement's rows as Arrow, capped: shared by the engine and its worker process."""

from __future__ import annotations

import duckdb
import pyarrow as pa

_BATCH = 65_536


def fetch(cursor: duckdb.DuckDBPyConnection, statement: str, cap: int | None) -> tuple[pa.Table, bool]:
    """Read at most cap + 1 rows: the extra probe row is how truncation is known."""
    relation = cursor.sql(statement)
    if relation is None:
        return pa.table({}), False
    if cap is None:
        return relation.to_arrow_table(), False
    reader = relation.to_arrow_reader(min(_BATCH, cap + 1))
    batches: list[pa.RecordBatch] = []
    seen = 0
    for batch in reader:
        batches.append(batch)
        seen += batch.num_rows
        if seen > cap:
            break
    table = pa.Table.from_batches(batches, schema=reader.schema)
    if seen > cap:
        return table.slice(0, cap), True
    return table, False
