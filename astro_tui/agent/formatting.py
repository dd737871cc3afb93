"""Query results as text for the model: small, typed, and cheap in tokens.

The person sees results in the UI's table; the model only needs enough to check
its query and to choose the next one, so rows are few and long values are cut.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.types as pat

from astro_tui.data.results import QueryResult
from astro_tui.display import value_text as display_value

MODEL_ROWS = 20
MODEL_CELL_CHARS = 80


def sql_type(kind: pa.DataType) -> str:
    """Arrow types spelled as the SQL types the model wrote against."""
    if pat.is_boolean(kind):
        return "BOOLEAN"
    if pat.is_integer(kind):
        names = {8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT"}
        prefix = "U" if pat.is_unsigned_integer(kind) else ""
        return prefix + names.get(kind.bit_width, "BIGINT")
    if pat.is_float32(kind):
        return "FLOAT"
    if pat.is_floating(kind):
        return "DOUBLE"
    if pat.is_decimal(kind):
        return f"DECIMAL({kind.precision},{kind.scale})"
    if pat.is_string(kind) or pat.is_large_string(kind):
        return "VARCHAR"
    if pat.is_date(kind):
        return "DATE"
    if pat.is_timestamp(kind):
        return "TIMESTAMP WITH TIME ZONE" if kind.tz else "TIMESTAMP"
    if pat.is_time(kind):
        return "TIME"
    if pat.is_duration(kind):
        return "INTERVAL"
    if pat.is_binary(kind) or pat.is_large_binary(kind):
        return "BLOB"
    if pat.is_list(kind) or pat.is_large_list(kind):
        return sql_type(kind.value_type) + "[]"
    return str(kind).upper()


def value_text(value: Any, limit: int = MODEL_CELL_CHARS) -> str:
    """A cell as the model reads it: numbers and times as every front end shows them (without
    separators, which a model might copy into SQL), so what it quotes is what the person sees."""
    text = "NULL" if value is None else display_value(value, grouping=False) or str(value)
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t").replace("|", "¦")
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def shape_text(result: QueryResult) -> str:
    rows = f"{result.row_count:,} row" + ("" if result.row_count == 1 else "s")
    cols = len(result.columns)
    text = f"{rows} × {cols} column" + ("" if cols == 1 else "s")
    if result.truncated and result.total_rows is not None:
        text += f" (CUT by the row cap: the query returns {result.total_rows:,} rows)"
    elif result.truncated:
        text += f" (CUT by the row cap: the query returns more than {result.row_count:,} rows)"
    return text


def summary_line(name: str, result: QueryResult, *, max_columns: int = 6) -> str:
    """`df_3: 12 rows × 4 columns (region, revenue, …)`: how old results appear in later turns."""
    columns = result.columns
    shown = ", ".join(columns[:max_columns]) + (", …" if len(columns) > max_columns else "")
    return f"{name}: {shape_text(result)} ({shown})"


def result_for_model(name: str, result: QueryResult, *, rows: int = MODEL_ROWS) -> str:
    """Id, typed columns, shape and the first rows as a compact `|`-separated table."""
    schema = result.table.schema
    columns = ", ".join(f"{f.name} {sql_type(f.type)}" for f in schema)
    lines = [f"{name}: {shape_text(result)}", f"columns: {columns or '(none)'}"]
    if result.truncated:
        lines.append(
            f"Only the first {result.row_count:,} rows were read: a count, sum or ranking over "
            "them is not the query's. Compute those in SQL; an answer that counts these rows is refused."
        )
    if result.row_count == 0:
        lines.append("(no rows)")
        return "\n".join(lines)
    shown = result.rows(rows)
    if len(shown) < result.row_count:
        lines.append(f"first {len(shown)} rows:")
    lines.append(" | ".join(result.columns))
    lines.extend(" | ".join(value_text(v) for v in row) for row in shown)
    return "\n".join(lines)
