"""Issue 34: a shown value may be rounded, never turned into another number.

Values are drawn by hypothesis: each shown text parses back (separators removed) to the value
at the precision it shows: a double within half a unit of its last shown digit, with its sign;
a DECIMAL exactly; a timestamp exactly. The same text comes out of `astro sql`'s table, the
results pane and MCP's text, which all call `astro_tui.display`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from astro_tui.data.results import QueryResult
from astro_tui.data.text_table import format_table
from astro_tui.display import decimal_text, float_text, number_text, temporal_text
from astro_tui.ui.display_numbers import shown_width


def _last_unit(text: str) -> decimal.Decimal:
    """One unit of the last digit shown: `1.25` → 0.01, `1.5e-9` → 1e-10."""
    mantissa, _, exponent = text.partition("e")
    places = len(mantissa.partition(".")[2])
    return decimal.Decimal(1).scaleb(-places + (int(exponent) if exponent else 0))


@settings(max_examples=2000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_double_reads_back_at_its_shown_precision(value: float) -> None:
    text = float_text(value)
    shown = decimal.Decimal(text.replace(",", ""))
    assert abs(shown - decimal.Decimal(value)) <= _last_unit(text) / 2, text
    assert text.startswith("-") == (math.copysign(1.0, value) < 0), text  # the sign, -0.0 too
    assert value == 0 or shown != 0, text  # never rounded to nothing
    assert float_text(value, grouping=False) == text.replace(",", "")


@settings(max_examples=1000, deadline=None)
@given(st.decimals(allow_nan=False, allow_infinity=False))
def test_a_decimal_reads_back_exactly(value: decimal.Decimal) -> None:
    text = decimal_text(value)
    assert decimal.Decimal(text.replace(",", "")) == value, text
    assert text.startswith("-") == value.is_signed(), text
    assert "E" not in text


@settings(max_examples=1000, deadline=None)
@given(
    st.datetimes(timezones=st.none() | st.timezones()),
    st.dates(),
    st.times(),
)
def test_times_read_back_exactly(stamp: dt.datetime, day: dt.date, clock: dt.time) -> None:
    read = dt.datetime.fromisoformat(temporal_text(stamp))
    assert read.replace(tzinfo=None) == stamp.replace(tzinfo=None)  # the wall time, and its offset
    assert read.utcoffset() == stamp.utcoffset()
    assert dt.date.fromisoformat(temporal_text(day)) == day
    assert dt.time.fromisoformat(temporal_text(clock)) == clock


def test_the_issue_s_values() -> None:
    assert [number_text(v) for v in (-0.0000001, 0.0000004, -0.0, 0.1 + 0.2, 1e300, 5271503.8)] == [
        "-0.0000001",
        "0.0000004",
        "-0.0",
        "0.3",
        "1e+300",
        "5,271,503.8",
    ]
    assert number_text(decimal.Decimal("4.00E-7")) == "0.000000400"
    assert number_text(float("nan")) == "NaN" and number_text(float("-inf")) == "-Infinity"
    stamp = dt.datetime(2024, 5, 1, 13, 45, 0, 250000, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert temporal_text(stamp) == "2024-05-01 13:45:00.250+02:00"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(), min_size=1, max_size=20), st.sampled_from(["amount", "order_id"]))
def test_the_results_pane_measures_doubles_as_they_are_shown(values: list[float], name: str) -> None:
    """The pane's vectorised width of a double column is the widest text `display` makes."""
    from astro_tui.display import groups_digits

    widest = max(len(float_text(v, grouping=groups_digits(name))) for v in values)
    assert shown_width(pa.chunked_array([pa.array(values, pa.float64())]), name) == widest


def test_astro_sql_s_table_shows_the_same_text() -> None:
    table = pa.table(
        {"d": [-0.0000001], "m": pa.array([decimal.Decimal("0.000000400")], pa.decimal128(10, 9))}
    )
    text = format_table(QueryResult("", table, False, 0.0))
    assert text.splitlines()[2].split() == ["-0.0000001", "0.000000400"]


def test_mcp_and_json_give_a_decimal_as_its_digits() -> None:
    """MCP's structured rows and `astro sql --format json` wrote `4.00E-7` (Arrow's and
    Python's text of a DECIMAL); they write its digits, as every front end shows them."""
    from astro_tui.data.text_table import json_safe
    from astro_tui.mcp.shaping import sql_result

    m = pa.array([decimal.Decimal("0.000000400"), None], pa.decimal128(10, 9))
    payload = sql_result(QueryResult("", pa.table({"m": m}), False, 0.0), 10_000)
    assert payload["rows"] == [["0.000000400"], [None]]
    assert json_safe(decimal.Decimal("4.00E-7")) == "0.000000400"
