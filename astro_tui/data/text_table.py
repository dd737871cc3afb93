"""Results as plain text for terminals and models: aligned, capped, and inert.

Data is untrusted: a value may hold ANSI or OSC escapes (OSC 52 writes the
clipboard), so every cell goes through `inert` before it is printed.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

from rich.cells import cell_len

from astro_tui.data.results import QueryResult
from astro_tui.text import clip, inert


def number_text(value: float | int | decimal.Decimal, *, grouping: bool = True, digits: int = 15) -> str:
    """A number as a person reads it: thousands separators, and a float at its shortest
    form once the last digits' arithmetic noise is rounded away (`10.357019999999999`
    reads `10.35702`); 15 significant digits keep every digit a double really holds."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        value = float(f"{value:.{digits}g}")
        if value.is_integer() and abs(value) < 1e15:
            return f"{value:,.1f}" if grouping else f"{value:.1f}"
    return f"{value:,}" if grouping else str(value)


_PLAIN_WORDS = {"id", "year", "yr", "code", "zip", "no", "nr", "key", "number", "num"}


def groups_digits(column: str) -> bool:
    """Ids, codes and years read wrong with separators (`order_id 1,056`, `year 2,004`);
    the column name's last word says which (`order_id`, `orderId`, `fiscal_year`), so
    `amount_paid` is still grouped."""
    words = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", column)
    last = words[-1].lower() if words else ""
    return last not in _PLAIN_WORDS and "year" not in (w.lower() for w in words)


def cell_text(value: Any, *, max_chars: int | None = None, grouping: bool = True) -> str:
    """How one value reads in a text table; NULL is spelled out, long text is cut."""
    if value is None:
        text = "NULL"
    elif isinstance(value, float | int | decimal.Decimal) and not isinstance(value, bool):
        text = number_text(value, grouping=grouping)
    else:
        text = str(value)
    text = inert(text, keep_newlines=False).replace("\t", " ")
    if max_chars is not None and cell_len(text) > max_chars:
        text = clip(text, max_chars)
    return text


def pad(text: str, width: int, *, right: bool = False) -> str:
    """`ljust`/`rjust` in terminal cells, so CJK names line up."""
    gap = " " * max(0, width - cell_len(text))
    return gap + text if right else text + gap


def table_cells(result: QueryResult, *, max_rows: int, max_cell: int) -> tuple[list[str], list[list[str]]]:
    """Header and cells as text: numbers grouped unless the column is an id, code or year."""
    columns = [inert(c, keep_newlines=False) for c in result.columns]
    grouping = [groups_digits(c) for c in result.columns]
    rows = [
        [cell_text(v, max_chars=max_cell, grouping=g) for v, g in zip(row, grouping, strict=True)]
        for row in result.rows(max_rows)
    ]
    return columns, rows


def format_table(result: QueryResult, *, max_rows: int = 50, max_cell: int = 60) -> str:
    """An aligned text table of the first rows, then a line with the count and any cut."""
    columns, rows = table_cells(result, max_rows=max_rows, max_cell=max_cell)
    if not columns:
        return "(no columns)"
    widths = [max([cell_len(c)] + [cell_len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    numeric = [_is_numeric(result, i) for i in range(len(columns))]

    def line(cells: list[str]) -> str:
        out = [pad(c, w, right=num) for c, w, num in zip(cells, widths, numeric, strict=True)]
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
