"""Helpers every replay notebook carries, copied into it verbatim: a notebook runs without astro.

`cell` reads a result again by position (a row that is gone reads as `GONE`),
`same` compares what it reads with what the answer quoted (as the conversation
kept it: decimals and dates as text, so no float ever rounds a quoted number),
`fmt` prints a number the way the answer printed it. `astro replay --check` uses
the same three, so the notebook and the check agree on what "moved" means.
"""

import datetime
import decimal
import math
from typing import Any

GONE = "(no such row)"


def cell(frame: Any, row: int | None, column: str | None) -> Any:
    """The value at (row, column) of a DataFrame as plain Python; the row count when row is None."""
    if row is None:
        return len(frame)
    if column not in frame.columns or not 0 <= row < len(frame):
        return GONE
    value = frame[column].iloc[row]
    try:
        if value != value:  # NaN, NaT: pandas' missing values, unless a real NaN
            return None if not isinstance(value, float) else value
    except (TypeError, ValueError):  # pandas.NA refuses to compare
        return None
    if hasattr(value, "to_pydatetime"):
        return value.to_pydatetime()
    if hasattr(value, "item") and not isinstance(value, str | bytes | decimal.Decimal):
        return value.item()
    return value


def as_number(value: object) -> decimal.Decimal | None:
    """A finite number as an exact decimal (a float by its shortest repr); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | decimal.Decimal):
        number = decimal.Decimal(value)
    elif isinstance(value, float):
        number = decimal.Decimal(repr(value))
    elif isinstance(value, str):
        try:
            number = decimal.Decimal(value.strip())
        except decimal.InvalidOperation:
            return None
    else:
        return None
    return number if number.is_finite() else None


def same(actual: object, expected: object) -> bool:
    """Whether a value read again is the value quoted."""
    if actual is None or expected is None:
        return actual is None and expected is None
    if isinstance(actual, bool) or isinstance(expected, bool):
        return str(actual) == str(expected)
    quoted, now = as_number(expected), as_number(actual)
    if quoted is not None and now is not None:
        return now == quoted or math.isclose(float(now), float(quoted), rel_tol=1e-12)
    if isinstance(actual, datetime.datetime) and isinstance(expected, str) and len(expected) == 10:
        return actual.time() == datetime.time() and actual.date().isoformat() == expected
    return str(actual) == str(expected)


def fmt(
    value: object, places: int, grouping: bool = True, prefix: str = "", suffix: str = "", scale: int = 1
) -> str:
    """A number as the answer printed it: `fmt(1234.5, 2, True, "$")` is `$1,234.50`."""
    number = as_number(value)
    if number is None:
        return str(value)
    number *= scale
    text = f"{abs(number):{',' if grouping else ''}.{places}f}"
    sign = "-" if number < 0 and text.strip("0.,") else ""
    return f"{sign}{prefix}{text}{suffix}"
