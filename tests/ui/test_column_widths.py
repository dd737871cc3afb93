"""The results table's column widths from a column's deciding values are the widget's own.

`DisplayBackend` measures a number column from its extremes, a date or time column from
its first value and a printable-ASCII text column from its byte lengths; the widget
(`ArrowBackend`) measures the same columns its own way. Both are asked about the same
columns here, over every type a result can hold and values chosen to break the shortcuts.
Numbers and times are drawn as `astro_tui.display` writes them: their width is that of
the widest cell the backend hands the widget, measured by the widget.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual_fastdatatable import ArrowBackend
from textual_fastdatatable.format import measure_width

from astro_tui.display import value_text
from astro_tui.ui.column_widths import DisplayBackend
from astro_tui.ui.display_numbers import formatted
from astro_tui.ui.inert import inert_table, printable_ascii


def _widths(kind: type[ArrowBackend], table: pa.Table) -> list[int]:
    backend = kind(table)
    backend.render_markup = False  # as the results pane shows text: literally
    return list(backend.column_content_widths)


def _same(table: pa.Table) -> None:
    shown = inert_table(table)
    display = DisplayBackend(shown)
    display.render_markup = False
    widget = _widths(ArrowBackend, shown)
    expected = [
        _drawn_width(display, i) if formatted(field.type) else widget[i]
        for i, field in enumerate(shown.schema)
    ]
    assert list(display.column_content_widths) == expected, shown.schema


def _drawn_width(display: DisplayBackend, column: int) -> int:
    """The widest cell the backend hands the widget, as the widget measures it; over many rows,
    the length of each value's text (numbers and times are ASCII), which is quicker."""
    if display.row_count > 10_000:
        group = bool(display.grouping[column])
        values = display.data.column(column).to_pylist()
        return max((len(value_text(v, grouping=group) or "") for v in values if v is not None), default=0)
    cells = (display.get_cell_at(row, column) for row in range(display.row_count))
    return max((measure_width(c, render_markup=False) for c in cells if c is not None), default=0)


def _column(values: list[Any], kind: pa.DataType) -> pa.Table:
    return pa.table({"c": pa.array(values, type=kind)})


I64 = 2**63 - 1
COLUMNS: list[tuple[list[Any], pa.DataType]] = [
    ([1, -5, None, 0], pa.int64()),
    ([-(2**63), I64, None], pa.int64()),
    ([2**64 - 1, 0], pa.uint64()),
    ([-128, 127, None], pa.int8()),
    ([None, None], pa.int32()),
    ([None, 7], pa.int16()),
    ([], pa.int64()),
    ([1234567, -7654321], pa.int32()),
    ([Decimal("-12345.67"), Decimal("0.01"), None], pa.decimal128(12, 2)),
    ([Decimal("99999999999999999999.9"), Decimal("-0.5")], pa.decimal128(21, 1)),
    ([Decimal("1" * 38), Decimal("-" + "9" * 38)], pa.decimal128(38, 0)),
    ([None, Decimal("-0.000001")], pa.decimal128(10, 6)),
    ([None], pa.decimal128(10, 3)),
    ([Decimal("1" * 60), Decimal("-2.5")], pa.decimal256(70, 1)),
    ([1.5, -2.25, None], pa.float64()),
    ([1e-300, -1.5e300, 3.0], pa.float64()),
    ([math.nan, 1.0, None], pa.float64()),
    ([math.nan, None], pa.float64()),
    ([math.inf, -math.inf, 2.5], pa.float64()),
    ([-0.0, None, 0.0], pa.float64()),
    ([1e27, 12.5], pa.float64()),
    ([0.1, 123456.789], pa.float32()),
    ([True, None, False], pa.bool_()),
    ([dt.date(2025, 1, 2), None], pa.date32()),
    ([None, None, dt.date(1, 1, 1)], pa.date32()),
    ([None, None], pa.date32()),
    ([dt.datetime(2025, 1, 2, 3, 4, 5, 6789)], pa.timestamp("us")),
    ([None, dt.datetime(2025, 1, 2, 3, 4, 5)], pa.timestamp("ns", tz="UTC")),
    ([None, dt.datetime(2025, 1, 2, 3, 4, 5)], pa.timestamp("s", tz="Europe/Paris")),
    ([dt.time(1, 2, 3), None], pa.time64("us")),
    ([dt.timedelta(days=3, seconds=5), dt.timedelta(days=-400)], pa.duration("us")),
    (["abc", "", None, "a longer value"], pa.string()),
    ([None, None], pa.string()),
    (["", ""], pa.string()),
    (["tab\there", "x"], pa.string()),
    (["two\nlines and more", "x"], pa.string()),
    (["carriage\rreturn", "y"], pa.string()),
    (["表格", "ab"], pa.string()),
    (["e\u0301", "ab"], pa.string()),
    (["🙂🙂🙂", "ab"], pa.string()),
    (["[bold]markup[/]", "\\[x]", "[[red]]"], pa.string()),
    (["\x1b[31mred", "bell\x07"], pa.string()),
    (["del\x7f", "ab"], pa.string()),
    (["\u202eevil", "ab"], pa.string()),
    (["plain", "ascii"], pa.large_string()),
    (["Zürich", "ascii"], pa.large_string()),
    (["Zürich", "a longer ascii value", "Ἀθῆναι", "Москва"], pa.string()),
    (["é" * 300, "a" * 250, None], pa.string()),
    (["a" * 300, "é" * 250], pa.large_string()),
    (["é" * 40, "表格", "e\u0301" * 30, None], pa.string()),
    (["naïve\tcafé", "é\nxyz", "Zürich"], pa.string()),
    (["\u0483x", "\u0300", "é"], pa.string()),
    (["é\\\\", "back\\slash", "éé"], pa.string()),
    (["東" * 200, "a" * 300, "東京 Zürich"], pa.string()),
    (["東京" * 3, "Zürich" * 2, "한국어", "ｶﾀｶﾅ", "ｆｕｌｌ"], pa.large_string()),
    ([b"\x00\x01", None], pa.binary()),
    ([[1, 2], None], pa.list_(pa.int64())),
    ([{"a": 1}], pa.struct([("a", pa.int64())])),
]


@pytest.mark.parametrize(("values", "kind"), COLUMNS, ids=[f"{c[1]}-{i}" for i, c in enumerate(COLUMNS)])
def test_each_type_measures_as_the_widget_does(values: list[Any], kind: pa.DataType) -> None:
    _same(_column(values, kind))


def test_chunked_and_sliced_columns() -> None:
    """Nulls only in a first chunk, slices whose neighbours hold wide or non-ASCII values."""
    ints = pa.chunked_array([pa.array([None, None], pa.int64()), pa.array([-40, 3], pa.int64())])
    wide = pa.array(["a" * 50, "bb", "表格表格表格表格", "c"])
    text = pa.chunked_array([wide.slice(1, 2), wide.slice(3, 1), wide.slice(0, 1)])
    dates = pa.chunked_array(
        [pa.array([None], pa.date32()), pa.array([None, None, dt.date(2020, 5, 6)], pa.date32())]
    )
    decimals = pa.chunked_array(
        [
            pa.array([Decimal("-1.5")], pa.decimal128(5, 1)),
            pa.array([None, Decimal("999.9"), None], pa.decimal128(5, 1)),
        ]
    )
    _same(pa.table({"i": ints, "t": text, "d": dates, "m": decimals}))
    _same(pa.table({"t": pa.chunked_array([], pa.string())}))


def test_a_result_of_every_duckdb_type() -> None:
    """DuckDB's own results: huge integers, intervals, infinities, enums, UUIDs, nested values."""
    table = duckdb.sql(
        """
        SELECT * FROM (VALUES
            (170141183460469231731687303715884105727::HUGEINT,
             340282366920938463463374607431768211455::UHUGEINT,
             -12.345::DECIMAL(18, 3), 'infinity'::DATE, 'infinity'::TIMESTAMP,
             TIMESTAMPTZ '2025-01-02 03:04:05+02', INTERVAL 3 DAY, TIME '12:34:56',
             'a'::ENUM('a', 'bcd'), uuid(), [1, 2], {'k': 'v'}, 'x', 1e300::DOUBLE),
            (-170141183460469231731687303715884105727::HUGEINT, 0::UHUGEINT, NULL,
             '-infinity'::DATE, '-infinity'::TIMESTAMP, NULL, INTERVAL 14 MONTH, NULL, 'bcd',
             NULL, NULL, NULL, NULL, -2.5e-7::DOUBLE),
            (NULL, NULL, 0.001, DATE '2025-01-01', NULL, NULL, NULL, TIME '00:00:00', NULL,
             NULL, [], NULL, 'yy', 'nan'::DOUBLE)
        ) t(h, u, d, dd, ts, tz, i, tm, e, id, l, s, v, f)
        """
    ).to_arrow_table()
    _same(table)


def test_a_million_rows_like_the_benchmark() -> None:
    table = duckdb.sql(
        "SELECT 'r' || (range + 1000003) AS label, range AS n, range * 0.5 AS half, "
        "CASE WHEN range % 7 = 0 THEN NULL ELSE -range END AS neg, "
        "DATE '2020-01-01' + range::INT % 999 AS day "
        "FROM range(1000000)"
    ).to_arrow_table()
    _same(table)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(-(2**63), I64)), max_size=8),
    st.lists(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)), max_size=8),
    st.lists(st.one_of(st.none(), st.decimals(places=3, min_value=-(10**14), max_value=10**14)), max_size=8),
    st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=8),
)
def test_random_values(ints: list[Any], floats: list[Any], decimals: list[Any], texts: list[Any]) -> None:
    _same(_column(ints, pa.int64()))
    _same(_column(floats, pa.float64()))
    _same(_column(decimals, pa.decimal128(18, 3)))
    _same(_column(texts, pa.string()))


def test_printable_ascii_is_exact_on_its_edges() -> None:
    assert printable_ascii(pa.chunked_array([pa.array([" ~", "abc", None])]))
    for bad in ("\x1f", "\x7f", "é", "\t", "\n"):
        assert not printable_ascii(pa.chunked_array([pa.array(["ok", f"a{bad}"])])), repr(bad)


def test_every_character_counted_is_as_wide_to_the_widget() -> None:
    """Each character of the two classes the widths count, measured by the widget's own measure,
    and the edges left out (a combining mark, a line break, the backslash)."""
    from textual_fastdatatable.format import measure_width

    from astro_tui.ui.column_widths import ONE_CELL, TWO_CELLS

    characters = pa.array([chr(code) for code in range(0x20, 0x10000) if not 0xD800 <= code < 0xE000])
    for kind, cells in ((ONE_CELL, 1), (TWO_CELLS, 2)):
        matched = pc.match_substring_regex(characters, pattern=f"^[{kind}]$").to_pylist()
        taken = [value for value, ok in zip(characters.to_pylist(), matched, strict=True) if ok]
        assert len(taken) > 1000
        assert {measure_width(value, render_markup=False) for value in taken} == {cells}
    left_out = pa.array(["\\", "\x7f", "\x85", "\u0300", "\u036f", "\u0483", "\u0489", "\u2028", "\u302a"])
    for kind in (ONE_CELL, TWO_CELLS):
        assert not any(pc.match_substring_regex(left_out, pattern=f"[{kind}]").to_pylist())


def test_many_accented_and_wide_values_are_not_measured_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns of unique accented and Japanese names (the widget measures each such value in
    Python, ~0.1 ms a value): the same widths, from a handful of values measured."""
    from textual_fastdatatable import backend

    table = duckdb.sql(
        "SELECT 'Zürich ' || range AS city, '東京' || range AS tokyo, "
        "CASE WHEN range % 1000 = 0 THEN 'e' || chr(769) || range END AS combining "
        "FROM range(20000)"
    ).to_arrow_table()
    expected = _widths(ArrowBackend, table)
    measured: list[object] = []
    measure = backend._measure_width
    monkeypatch.setattr(backend, "_measure_width", lambda v, **k: measured.append(v) or measure(v, **k))
    assert _widths(DisplayBackend, table) == expected
    assert len(measured) <= 2 + 20  # the widest of each counted column, the 20 combining ones
