"""A few rows as Python values, read and printed the way an Arrow table of them would be.

A one-shot `astro sql` whose result is a handful of rows (`fetch.few_rows`) need not
load Arrow (~55 ms of shared libraries) to print them. Only types whose Python values
are the very ones Arrow's `to_pylist` gives for DuckDB's rows qualify (`PLAIN_TYPES`, a
HUGEINT made Arrow's decimal); dates, times and timestamps do not (DuckDB's infinities
read differently), nor does any nested type. `text_table` prints a `RowTable` as it
prints an Arrow table: the same cells, the same cut of long values, the same alignment.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Sequence
from typing import Any

_NUMERIC = frozenset({
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
    "UBIGINT", "FLOAT", "DOUBLE",
})  # fmt: skip
_AS_DECIMAL = "HUGEINT"
"""Arrow reads DuckDB's HUGEINT (a `sum` of integers) as a decimal of scale 0, so a `Decimal`."""
PLAIN_TYPES = _NUMERIC | {"BOOLEAN", "VARCHAR", "BLOB"}
"""DuckDB types whose Python values equal Arrow's (checked for every one by the tests)."""
_DECIMAL = re.compile(r"DECIMAL\(\d+,\d+\)")


def plain(type_name: str) -> bool:
    return type_name in PLAIN_TYPES or bool(_DECIMAL.fullmatch(type_name))


def _as_decimals(row: tuple[Any, ...], indexes: list[int]) -> tuple[Any, ...]:
    values = list(row)
    for i in indexes:
        if values[i] is not None:
            values[i] = decimal.Decimal(values[i])
    return tuple(values)


class RowColumn:
    """One column's values; what `text_table` asks of an Arrow array."""

    def __init__(self, values: list[Any]) -> None:
        self.values = values

    def to_pylist(self) -> list[Any]:
        return list(self.values)

    def cut(self, limit: int) -> RowColumn:
        """Text and bytes cut to `limit` characters or bytes, as Arrow cuts them for a cell."""
        return RowColumn([v[:limit] if isinstance(v, str | bytes) else v for v in self.values])


class RowTable:
    """Rows of plain types (`plain`) under their column names and DuckDB type names."""

    def __init__(self, names: Sequence[str], types: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
        self.column_names = list(names)
        self.types = list(types)
        self._rows = list(rows)
        wide = [i for i, kind in enumerate(self.types) if kind == _AS_DECIMAL]
        if wide:
            self._rows = [_as_decimals(row, wide) for row in self._rows]

    @property
    def num_rows(self) -> int:
        return len(self._rows)

    @property
    def columns(self) -> list[RowColumn]:
        return [RowColumn([row[i] for row in self._rows]) for i in range(len(self.column_names))]

    def slice(self, offset: int = 0, length: int | None = None) -> RowTable:
        end = None if length is None else offset + length
        return RowTable(self.column_names, self.types, self._rows[offset:end])

    def to_pylist(self) -> list[dict[str, Any]]:
        return [dict(zip(self.column_names, row, strict=True)) for row in self._rows]

    def numeric(self, index: int) -> bool:
        """Right-aligned in a table, as Arrow's integer, floating and decimal columns are."""
        kind = self.types[index]
        return kind in _NUMERIC or kind.startswith("DECIMAL(")
