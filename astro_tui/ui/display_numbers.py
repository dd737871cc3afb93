"""The results table's numbers and times as `astro_tui.display` writes them, and their widths.

The table shows a cell as the rest of astro does (`display.value_text`): a row's
cells are formatted when the row is drawn, so scrolling a million rows formats
only what is on screen. A column's width must be known before the first frame,
without formatting a million values in Python (about a second): integers and
DECIMALs are as wide as their extremes (a DECIMAL column has one scale), times
as their longest fraction of a second, and doubles are measured by NumPy from
their decimal exponent and the significant digits left once rounded to 15; a value
whose rounding that arithmetic cannot settle (its digits after the 15th read about
half) is formatted by Python when it could be the widest.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat

from astro_tui.display import POSITIONAL, SIGNIFICANT, float_text, groups_digits, value_text

if TYPE_CHECKING:
    import numpy as np


def formatted(kind: pa.DataType) -> bool:
    """Whether the table shows this type's values through `display.value_text`."""
    return (
        pat.is_integer(kind)
        or pat.is_floating(kind)
        or pat.is_decimal(kind)
        or pat.is_timestamp(kind)
        or pat.is_date(kind)
        or pat.is_time(kind)
    )


def shown_width(column: pa.ChunkedArray, name: str) -> int:
    """The widest text `display.value_text` makes of a value of `column` (nulls aside)."""
    kind = column.type
    values = column.drop_null() if column.null_count else column
    if len(values) == 0:
        return 0
    grouping = groups_digits(name)
    if pat.is_floating(kind):
        return _float_width(values, grouping)
    if pat.is_integer(kind) or pat.is_decimal(kind):
        found = pc.min_max(values)
        return max(len(value_text(found[k].as_py(), grouping=grouping) or "") for k in ("min", "max"))
    return _temporal_width(values)


def _float_width(values: pa.ChunkedArray, grouping: bool) -> int:
    import numpy as np

    a = values.to_numpy().astype(np.float64, copy=False)
    widest = 0
    if np.isnan(a).any():
        widest = 3  # NaN
    infinite = np.isinf(a)
    if infinite.any():
        widest = max(widest, 9 if (a[infinite] < 0).any() else 8)  # -Infinity
    finite = a[np.isfinite(a)] if widest else a
    zero = finite == 0
    if zero.any():
        widest = max(widest, 4 if np.signbit(finite[zero]).any() else 3)  # -0.0
        finite = finite[~zero]
    if len(finite) == 0:
        return widest
    negative = np.signbit(finite)
    x = np.abs(finite)
    exponent = np.floor(np.log10(x)).astype(np.int64)
    mantissa = _scaled(x, exponent)
    off = np.flatnonzero((mantissa < 10 ** (SIGNIFICANT - 1)) | (mantissa >= 10**SIGNIFICANT))
    if len(off):  # log10 a hair off the truth
        exponent[off] += np.where(mantissa[off] < 10 ** (SIGNIFICANT - 1), -1, 1)
        mantissa[off] = _scaled(x[off], exponent[off])
    # The widest any value of each exponent could be (all 15 digits): if one of those values
    # has all 15, that is the width, and the rest need not be counted.
    exponents = np.arange(-_EXPONENTS, _EXPONENTS)
    bound = np.full((2, len(exponents)), -1, dtype=np.int64)
    for sign in (0, 1):
        seen = np.bincount(exponent[negative == sign] + _EXPONENTS, minlength=len(exponents)) > 0
        bound[sign] = np.where(
            seen, sign + _width(np.full(len(exponents), SIGNIFICANT), exponents, grouping), -1
        )
    most = int(bound.max())
    probe = np.flatnonzero(bound[negative.astype(np.int64), exponent + _EXPONENTS] == most)[:_PROBE]
    significant, _, tie = _rounded(mantissa[probe], exponent[probe])
    if ((significant == SIGNIFICANT) & ~tie).any():
        return max(widest, most)
    significant, shifted, tie = _rounded(mantissa, exponent)
    # The widest of each sign and exponent is its value of most significant digits: which
    # digit counts each holds is counted at once, and only those pairs are measured.
    pairs = (negative.astype(np.int64) * (2 * _EXPONENTS) + shifted + _EXPONENTS) * (SIGNIFICANT + 1)
    held = np.bincount((pairs + significant)[~tie], minlength=4 * _EXPONENTS * (SIGNIFICANT + 1)) > 0
    held = held.reshape(2, 2 * _EXPONENTS, SIGNIFICANT + 1)
    most_digits = SIGNIFICANT - np.argmax(held[:, :, ::-1], axis=2)
    seen = held.any(axis=2)
    for sign in (0, 1):
        if seen[sign].any():
            found = _width(most_digits[sign][seen[sign]], exponents[seen[sign]], grouping)
            widest = max(widest, sign + int(found.max()))
    # A near tie may round the other way: by Python's own rounding where that could be wider.
    unsure = np.flatnonzero(tie)
    unsure = unsure[
        negative[unsure] + _width(np.full(len(unsure), SIGNIFICANT), exponent[unsure], grouping) > widest
    ]
    return max([widest, *(len(float_text(float(v), grouping=grouping)) for v in finite[unsure])])


_EXPONENTS = 400
"""Decimal exponents of doubles lie within ±`_EXPONENTS` (-324 to 308)."""
_PROBE = 4096
_EXACT = (-8, 36)
"""Exponents whose 15 digits `_scaled` finds with one rounding (a power of ten to 10**22 is
exact): off by at most half the last bit, 1/16 of a unit of the 15th digit."""


def _rounded(mantissa: np.ndarray, exponent: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Significant digits and exponent of each value rounded to 15 digits, and where the
    rounding is too near a tie to trust (the rest of the value reads half a unit, give or
    take what `_scaled` may be off by)."""
    import numpy as np

    nearest = np.rint(mantissa)
    exact = (exponent >= _EXACT[0]) & (exponent <= _EXACT[1])
    tie = np.abs(np.abs(mantissa - nearest) - 0.5) < np.where(exact, 0.07, 0.3)
    digits = nearest.astype(np.int64)
    carried = digits >= 10**SIGNIFICANT  # 9.99…95 rounds up to 10
    digits = np.where(carried, 10 ** (SIGNIFICANT - 1), digits)
    return SIGNIFICANT - _trailing_zeros(digits), exponent + carried, tie


def _scaled(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """`x * 10**(14 - exponent)`: `x`'s first 15 digits before the point, the rest after it.
    Multiplied or divided by a power of ten from a table; in two steps for the few values so
    small that one factor would overflow."""
    import numpy as np

    global _FACTORS
    if _FACTORS is None:
        _FACTORS = np.array(
            [10.0 ** min(abs(SIGNIFICANT - 1 - e), 300) for e in range(-_EXPONENTS, _EXPONENTS)]
        )
    factor = _FACTORS[exponent + _EXPONENTS]
    large = np.flatnonzero(exponent > SIGNIFICANT - 1)
    if len(large):
        factor = factor.copy()
        factor[large] = 1 / factor[large]  # divided below: x / 10**k, rounded once
    out = x * factor
    if len(large):
        out[large] = x[large] / _FACTORS[exponent[large] + _EXPONENTS]
    tiny = np.flatnonzero(exponent < SIGNIFICANT - 1 - 300)
    if len(tiny):
        out[tiny] = x[tiny] * 1e300 * np.power(10.0, SIGNIFICANT - 1 - 300 - exponent[tiny])
    return out


_FACTORS: np.ndarray | None = None


def _trailing_zeros(digits: np.ndarray) -> np.ndarray:
    """Trailing zeros of each 15-digit integer (at most 14), by 8, 4, 2 and 1 of them."""
    import numpy as np

    zeros = np.zeros(len(digits), dtype=np.int64)
    for count in (8, 4, 2, 1):
        power = 10**count
        divides = digits % power == 0
        zeros += count * divides
        digits = np.where(divides, digits // power, digits)
    return zeros


def _width(significant: np.ndarray, exponent: np.ndarray, grouping: bool) -> np.ndarray:
    """Characters of `display.float_text` (without the sign) for these digits and exponents."""
    import numpy as np

    whole = np.where(exponent >= 0, exponent + 1, 1)
    commas = (whole - 1) // 3 if grouping else 0
    fraction = np.where(exponent >= 0, np.maximum(1, significant - exponent - 1), significant - exponent - 1)
    fraction = np.where(exponent == SIGNIFICANT - 1, 0, fraction)  # 15 whole digits: no `.0`
    positional = whole + commas + np.where(fraction > 0, 1 + fraction, 0)
    power = np.abs(exponent)
    powers = 1 + (power >= 10) + (power >= 100)
    scientific = 1 + np.where(significant > 1, significant, 0) + 2 + powers
    inside = (exponent >= POSITIONAL[0]) & (exponent < POSITIONAL[1])
    return np.where(inside, positional, scientific)


_PER_SECOND = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}
_FRACTION = re.compile(r"\.\d+")


def _temporal_width(values: pa.ChunkedArray) -> int:
    """A date is as wide as its first value; a time or timestamp as its first value (the same
    offset throughout: Arrow keeps one time zone a column) with the longest fraction of a
    second any of them needs (`display._clock`). The widget reads nanoseconds as
    microseconds, so six places at most."""
    kind = values.type
    if pat.is_date(kind):
        return 10
    us = pa.timestamp("us", tz=kind.tz) if pat.is_timestamp(kind) else pa.time64("us")
    if kind.unit == "ns":
        values = values.cast(us, safe=False)
    try:
        text = value_text(values[0].as_py()) or ""
    except (OverflowError, ValueError):  # DuckDB's infinities, read by the widget as the last time
        text = value_text(dt.datetime.max) or ""
    ticks = values.cast(pa.int64())
    per_second = _PER_SECOND[values.type.unit]
    fraction = pc.multiply(
        pc.subtract(ticks, pc.multiply(pc.divide(ticks, per_second), per_second)), 10**6 // per_second
    )
    places = 0
    for digits, step in ((6, 1000), (3, 10**6)):
        if pc.any(
            pc.not_equal(pc.subtract(fraction, pc.multiply(pc.divide(fraction, step), step)), 0)
        ).as_py():
            places = digits
            break
    width = len(_FRACTION.sub("", text, count=1)) + (places + 1 if places else 0)
    if pat.is_timestamp(kind) and pc.max(ticks).as_py() > _LAST_TICK[values.type.unit]:
        width = max(width, len(value_text(dt.datetime.max) or ""))
    return width


_LAST_TICK = {
    unit: int((dt.datetime.max - dt.datetime(1970, 1, 1)).total_seconds()) * n
    for unit, n in _PER_SECOND.items()
}


def shown_row(row: list[Any], grouping: list[bool | None]) -> list[Any]:
    """A row's values as the table draws them: numbers and times as right-aligned text."""
    from rich.text import Text

    out = list(row)
    for i, group in enumerate(grouping):
        value = out[i]
        if group is not None and value is not None:
            text = value_text(value, grouping=group)
            if text is not None:
                out[i] = Text(text, justify="right")
    return out
