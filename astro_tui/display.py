"""How a database value reads as text: one formatter for the app, `astro sql`, MCP and replay.

A shown value may be rounded, never turned into another number: a double shows
its first 15 significant digits (every digit it really holds, without the last
digits' arithmetic noise: `0.1 + 0.2` reads `0.3`), as few as say the same
number, and its sign always (`-0.0000001`, `-0.0`); a DECIMAL shows the digits the
database stored, its scale included (`0.000000400`); a double too small or too
large to read in place is written in exponent form (`-1.5e-12`), never rounded
to zero. Integers and the integer part of decimals group their thousands with
`,` (the same in every front end, whatever the locale), unless the column is an
id, code or year (`groups_digits`). Timestamps read `2024-05-01 13:45:00.25+02:00`:
a space, the fraction of a second only as long as it needs to be (milliseconds,
microseconds or nanoseconds), the offset when the value has one.

Every shown text parses back (`float`, `decimal.Decimal`, `datetime.fromisoformat`
once the separators are removed) to the value at its shown precision
(`tests/test_display.py` draws the values). Nothing here imports Arrow: the
results pane measures its columns with `ui/display_numbers.py`, by these rules.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import Any

SIGNIFICANT = 15
"""Significant digits a double is shown with: all that a double holds for every value."""
POSITIONAL = (-7, 15)
"""Decimal exponents shown in place (`0.0000001` up to `999,999,999,999,999.0`); others in
exponent form."""
DECIMAL_DIGITS = 40
"""A DECIMAL is shown in place unless it has more integer digits or decimal places than this
(a DECIMAL(38, s) never has: only a PostgreSQL `numeric` may)."""


def number_text(value: float | int | decimal.Decimal, *, grouping: bool = True) -> str:
    """A number as every front end shows it."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return float_text(value, grouping=grouping)
    if isinstance(value, decimal.Decimal):
        return decimal_text(value, grouping=grouping)
    return f"{value:,}" if grouping else str(value)


def float_text(value: float, *, grouping: bool = True) -> str:
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0.0"
    shown = f"{abs(value):.{SIGNIFICANT - 1}e}"  # d.dddddddddddddde±XX, correctly rounded
    digits = (shown[0] + shown[2 : SIGNIFICANT + 1]).rstrip("0")
    exponent = int(shown[SIGNIFICANT + 2 :])
    if not POSITIONAL[0] <= exponent < POSITIONAL[1]:
        return sign + _exponent_form(digits, exponent)
    if exponent >= 0:
        whole, fraction = digits[: exponent + 1].ljust(exponent + 1, "0"), digits[exponent + 1 :]
    else:
        whole, fraction = "0", "0" * (-exponent - 1) + digits
    if not fraction and exponent == SIGNIFICANT - 1:  # a `.0` would claim a digit it has not
        return sign + _grouped(whole, grouping)
    return f"{sign}{_grouped(whole, grouping)}.{fraction or '0'}"


def decimal_text(value: decimal.Decimal, *, grouping: bool = True) -> str:
    if value.is_nan():
        return "NaN"
    if value.is_infinite():
        return "Infinity" if value > 0 else "-Infinity"
    sign, numerals, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, numerals))
    minus = "-" if sign else ""
    adjusted = value.adjusted() if digits.strip("0") else 0
    if adjusted >= DECIMAL_DIGITS or -exponent > DECIMAL_DIGITS:
        return minus + _exponent_form(digits.rstrip("0"), adjusted)
    if exponent >= 0:
        return minus + _grouped(digits.lstrip("0") + "0" * exponent or "0", grouping)
    places = -exponent
    digits = digits.rjust(places + 1, "0")
    return f"{minus}{_grouped(digits[:-places], grouping)}.{digits[-places:]}"


def _exponent_form(digits: str, exponent: int) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent)}"


def _grouped(whole: str, grouping: bool) -> str:
    if not grouping or len(whole) <= 3:
        return whole
    head = len(whole) % 3 or 3
    return ",".join([whole[:head], *(whole[i : i + 3] for i in range(head, len(whole), 3))])


def temporal_text(value: dt.date | dt.time | dt.timedelta) -> str:
    """Dates as ISO dates; timestamps and times with a space, the fraction of a second only
    as long as it needs to be, and the offset when they have one."""
    if isinstance(value, dt.datetime):
        return f"{value.date().isoformat()} {_clock(value)}{_offset(value.utcoffset())}"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return f"{_clock(value)}{_offset(value.utcoffset())}"
    return str(value)


def _clock(value: dt.datetime | dt.time) -> str:
    nanos = value.microsecond * 1000 + int(getattr(value, "nanosecond", 0) or 0)
    text = f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if nanos == 0:
        return text
    if nanos % 1_000_000 == 0:
        return f"{text}.{nanos // 1_000_000:03d}"
    if nanos % 1000 == 0:
        return f"{text}.{nanos // 1000:06d}"
    return f"{text}.{nanos:09d}"


def _offset(offset: dt.timedelta | None) -> str:
    if offset is None:
        return ""
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")


def value_text(value: Any, *, grouping: bool = True) -> str | None:
    """A number or a date/time as shown; None for any other value (text, lists, bytes…)."""
    if isinstance(value, float | int | decimal.Decimal) and not isinstance(value, bool):
        return number_text(value, grouping=grouping)
    if isinstance(value, dt.date | dt.time | dt.timedelta):
        return temporal_text(value)
    return None


_PLAIN_WORDS = {"id", "year", "yr", "code", "zip", "no", "nr", "key", "number", "num"}


def groups_digits(column: str) -> bool:
    """Ids, codes and years read wrong with separators (`order_id 1,056`, `year 2,004`);
    the column name's last word says which (`order_id`, `orderId`, `fiscal_year`), so
    `amount_paid` is still grouped."""
    words = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", column)
    last = words[-1].lower() if words else ""
    return last not in _PLAIN_WORDS and "year" not in (w.lower() for w in words)
