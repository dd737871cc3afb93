"""Execution accuracy: does an answer's result hold the same rows as the gold SQL's result?

The rules, chosen to be cheap and to forgive what does not change the answer:

- **Column order and names are ignored.** Each row becomes the sorted tuple of its
  normalised values, so `(region, revenue)` matches `(revenue, region)` without
  trying column permutations (factorial in the width). The cost is that two rows
  with values swapped between columns also match; for question answering that is
  a rare and harmless blind spot. The number of columns must agree.
- **Rows are a multiset** (duplicates count) unless the gold SQL has a top-level
  ORDER BY; then the order must agree too.
- **Numbers** (integers, decimals, floats) compare as floats with
  `math.isclose(rel_tol=1e-6, abs_tol=1e-9)`, and rounding-aware: a value written
  with 1–4 decimals matches a value with more decimals that rounds to it
  (`0.12` matches `0.123456`, but `10.5` does not match `10.46`).
- Dates and times compare as their text (`2025-01-31`, `2025-01-31 10:00:00`), so a
  date and the same date formatted as text match. NULL matches only NULL.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from astro_tui.data.results import QueryResult
from astro_tui.data.sql_shape import orders_its_rows

REL_TOL = 1e-6
ABS_TOL = 1e-9
MAX_ROUNDED_DECIMALS = 4
GREEDY_LIMIT = 500
"""Up to this many rows, a sorted comparison that fails is retried pairing rows one by one, which
catches rows that sort apart only because one side rounded."""

_NULL, _BOOL, _NUMBER, _TEXT = 0, 1, 2, 3
Value = tuple[int, Any]
Row = tuple[Value, ...]


def gold_is_ordered(sql: str, dialect: str = "DuckDB") -> bool:
    """Whether order counts: the gold SQL has an ORDER BY at its top level."""
    return orders_its_rows(sql, dialect)


def normalise_value(value: Any) -> Value:
    """A (kind, value) pair that sorts across kinds and compares the way the rules say."""
    if value is None:
        return (_NULL, "")
    if isinstance(value, bool):
        return (_BOOL, value)
    if isinstance(value, int | Decimal) or (isinstance(value, float) and math.isfinite(value)):
        return (_NUMBER, float(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return (_TEXT, str(value))
    if isinstance(value, bytes):
        return (_TEXT, value.hex())
    return (_TEXT, str(value))


def normalise_row(row: Sequence[Any]) -> Row:
    return tuple(sorted(normalise_value(v) for v in row))


def _decimals(x: float) -> int | None:
    """The fewest decimals (0–4) that write `x` exactly, or None when it needs more."""
    for places in range(MAX_ROUNDED_DECIMALS + 1):
        if abs(round(x, places) - x) <= ABS_TOL * max(1.0, abs(x)):
            return places
    return None


def numbers_match(a: float, b: float) -> bool:
    if math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL):
        return True
    da, db = _decimals(a), _decimals(b)
    if da is not None and da >= 1 and db is None:
        return math.isclose(round(b, da), a, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if db is not None and db >= 1 and da is None:
        return math.isclose(round(a, db), b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return False


def values_match(a: Value, b: Value) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == _NUMBER:
        return numbers_match(a[1], b[1])
    return bool(a[1] == b[1])


def rows_match(a: Row, b: Row) -> bool:
    return len(a) == len(b) and all(values_match(x, y) for x, y in zip(a, b, strict=True))


def _greedy(gold: list[Row], answer: list[Row]) -> bool:
    unused = list(answer)
    for row in gold:
        for i, candidate in enumerate(unused):
            if rows_match(row, candidate):
                del unused[i]
                break
        else:
            return False
    return True


def rows_equal(gold: Sequence[Sequence[Any]], answer: Sequence[Sequence[Any]], *, ordered: bool) -> bool:
    """The comparison itself, on plain rows (tuples of Python values)."""
    if len(gold) != len(answer):
        return False
    g = [normalise_row(r) for r in gold]
    a = [normalise_row(r) for r in answer]
    if ordered:
        return all(rows_match(x, y) for x, y in zip(g, a, strict=True))
    g.sort()
    a.sort()
    if all(rows_match(x, y) for x, y in zip(g, a, strict=True)):
        return True
    return len(g) <= GREEDY_LIMIT and _greedy(g, a)


def results_match(gold: QueryResult, answer: QueryResult, *, ordered: bool) -> bool:
    """Same rows (see the module rules) and the same number of columns."""
    if len(gold.columns) != len(answer.columns) or gold.row_count != answer.row_count:
        return False
    return rows_equal(gold.rows(), answer.rows(), ordered=ordered)
