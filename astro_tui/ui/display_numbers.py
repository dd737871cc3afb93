"""Floats shown whole in the results table: `5271503.8`, never `5.2715e+06`.

The table widget prints a float with Python's `n` format, which keeps six
significant digits; a Decimal it prints digit for digit. So the display copy of
a float column becomes a decimal column at the smallest scale that loses
nothing a person would read: 15 significant digits (what a double holds), at
most 6 decimals (past that Python writes a Decimal in exponent form). Columns
holding NaN or infinities, or values too large for a decimal, stay floats.
Thousands separators follow the user's locale (LC_NUMERIC), as `n` does.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

_SIGNIFICANT = 15
_MAX_SCALE = 6
_MAX_ABS = 1e27


def exact_floats(table: pa.Table) -> pa.Table:
    columns = [_as_decimal(c) if pat.is_floating(c.type) else c for c in table.columns]
    return pa.Table.from_arrays(columns, names=table.column_names) if columns else table


def _as_decimal(column: pa.ChunkedArray) -> pa.ChunkedArray:
    values = pc.drop_null(column)
    if len(values) == 0 or not pc.all(pc.is_finite(values)).as_py():
        return column
    largest = pc.max(pc.abs(values)).as_py()
    if largest >= _MAX_ABS:
        return column
    digits = math.floor(math.log10(largest)) + 1 if largest >= 1 else 1
    cap = max(0, min(_MAX_SCALE, _SIGNIFICANT - digits))
    reference = pc.round(values, cap)
    scale = next(s for s in range(cap + 1) if pc.all(pc.equal(pc.round(values, s), reference)).as_py())
    rounded = pc.round(column, scale)
    return rounded.cast(pa.decimal128(min(38, digits + scale + 1), scale))
