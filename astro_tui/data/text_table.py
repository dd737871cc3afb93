"""Results as plain text for terminals and models: aligned, capped, and inert.

Data is untrusted: a value may hold ANSI or OSC escapes (OSC 52 writes the
clipboard), so every cell goes through `inert` before it is printed.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

from astro_tui.data.inert import inert
from astro_tui.data.results import QueryResult


def cell_text(value: Any, *, max_chars: int | None = None) -> str:
    """How one value reads in a text table; NULL is spelled out, long text is cut."""
    if value is None:
        text = "NULL"
    elif isinstance(value, float):
        text = f"{value:.6g}" if abs(value) < 1e15 else f"{value:.6e}"
    elif isinstance(value, decimal.Decimal | int | dt.date | dt.datetime | dt.time):
        text = str(value)
    else:
        text = str(value)
    text = inert(text, keep_newlines=False).replace("\t", " ")
    if max_chars is not None and len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text


def format_table(result: QueryResult, *, max_rows: int = 50, max_cell: int = 60) -> str:
    """An aligned text table of the first rows, then a line with the count and any cut."""
    columns = [inert(c, keep_newlines=False) for c in result.columns]
    if not columns:
        return "(no columns)"
    rows = [[cell_text(v, max_chars=max_cell) for v in row] for row in result.rows(max_rows)]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    numeric = [_is_numeric(result, i) for i in range(len(columns))]

    def line(cells: list[str]) -> str:
        out = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "  ".join(out).rstrip()

    lines = [line(columns), "  ".join("-" * w for w in widths)]
    lines += [line(r) for r in rows]
    footer = result.count_text()
    if result.row_count > len(rows):
        footer += f" (showing {len(rows):,})"
    lines.append(footer)
    return "\n".join(lines)


def _is_numeric(result: QueryResult, index: int) -> bool:
    import pyarrow.types as pat

    kind = result.table.schema.field(index).type
    return pat.is_integer(kind) or pat.is_floating(kind) or pat.is_decimal(kind)


def json_safe(value: Any) -> Any:
    """Values JSON can hold exactly: decimals and dates become strings, not rounded floats."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, decimal.Decimal | dt.date | dt.datetime | dt.time | dt.timedelta):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    return str(value)
