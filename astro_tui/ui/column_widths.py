"""A result's column widths from the few values that decide them, not from every row.

The table widget (`textual_fastdatatable.ArrowBackend`) sizes a number column by its
smallest and largest values, a date or time column by its first value, and a text column
by the text of every row. It finds those values by scanning every row, several times: on a
million rows, 20–40 ms for a decimal column and 30–110 ms for a text column under load,
all before the first frame. Here the widget measures smaller columns by the same rules: a
number column's two extremes (and a null, if it has one), a date or time column's first
value; a printable-ASCII text column is as wide as its longest value in bytes (one cell a
byte, no line to cut, no markup: the results table shows text literally, and the widget
itself measures such text so, after registering an Arrow function for it).
Anything else is measured whole, as before. The widths are the widget's own
(`tests/ui/test_column_widths.py` compares them), through its public API only: a backend and
its `column_content_widths`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat
from textual_fastdatatable import ArrowBackend

from astro_tui.display import groups_digits
from astro_tui.ui.display_numbers import formatted, shown_row, shown_width
from astro_tui.ui.inert import printable_ascii


class DisplayBackend(ArrowBackend):
    """`ArrowBackend` whose columns are measured from their deciding values (a results table
    is never edited, so the widths, once measured, hold), and whose numbers and times are
    handed to the widget as astro writes them everywhere (`display_numbers.py`)."""

    _widths: list[int] | None = None
    _grouping: list[bool | None] | None = None

    @property
    def column_content_widths(self) -> list[int]:
        if self._widths is None:
            self._widths = [
                self._width(column, name)
                for column, name in zip(self.data.columns, self.data.column_names, strict=True)
            ]
        return self._widths

    @property
    def grouping(self) -> list[bool | None]:
        """Per column: None if the widget draws its values itself, else whether its digits group."""
        if self._grouping is None:
            self._grouping = [
                groups_digits(field.name) if formatted(field.type) else None for field in self.data.schema
            ]
        return self._grouping

    def get_row_at(self, index: int) -> Sequence[Any]:
        return shown_row(list(super().get_row_at(index)), self.grouping)

    def get_cell_at(self, row_index: int, column_index: int) -> Any:
        value = super().get_cell_at(row_index, column_index)
        group = self.grouping[column_index]
        return value if group is None else shown_row([value], [group])[0]

    def _width(self, column: pa.ChunkedArray, name: str) -> int:
        kind = column.type
        if formatted(kind):
            return shown_width(column, name)
        if (
            (pat.is_string(kind) or pat.is_large_string(kind))
            and not self.render_markup
            and printable_ascii(column)
        ):
            return int(pc.max(pc.binary_length(column)).as_py() or 0)
        deciding = _deciding(column)
        if (pat.is_string(kind) or pat.is_large_string(kind)) and not self.render_markup:
            deciding = _deciding_text(column)
        alone = ArrowBackend(pa.table({"c": deciding}))
        alone.render_markup = self.render_markup
        return alone.column_content_widths[0] or 0


def _deciding(column: pa.ChunkedArray) -> Any:
    """The values of `column` the widget's width of it depends on; the whole column where
    the type does not say."""
    kind = column.type
    if len(column) == 0 or isinstance(kind, pa.BaseExtensionType):
        return column
    if pat.is_integer(kind) or pat.is_decimal(kind):
        return _extremes(column)
    if pat.is_temporal(kind):
        return _first_present(column)
    return column


ONE_CELL = "\\x20-\\x5b\\x5d-\\x7e\\x{a0}-\\x{2ff}\\x{370}-\\x{482}\\x{48a}-\\x{52f}"
"""Characters one cell wide (printable ASCII, Latin, Greek, Cyrillic, without their combining
marks), as an RE2 class. Not the backslash, which the widget's measure of a value counts twice."""
TWO_CELLS = (
    "\\x{3041}-\\x{3096}\\x{30a1}-\\x{30fa}\\x{30fc}-\\x{30fe}\\x{3400}-\\x{4dbf}\\x{4e00}-\\x{9fff}"
    "\\x{ac00}-\\x{d7a3}\\x{ff01}-\\x{ff60}\\x{ffe0}-\\x{ffe6}"
)
"""Characters two cells wide (kana, CJK ideographs, Hangul syllables, full-width forms).
`tests/ui/test_column_widths.py` measures every character of both classes with the widget."""
_COUNTED = f"^[{ONE_CELL}{TWO_CELLS}]*$"
_WIDE = f"[{TWO_CELLS}]"


def _deciding_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """The values of a literal text column the widget's width depends on. A value of only the
    characters above, on one line, is as wide as its length plus its wide characters: of those,
    the widest (the widest ASCII one and the widest other, which the widget measures by
    different means) decide; every other value is measured by the widget. The widget measures
    each value that is not ASCII in Python (~0.1 ms a value): a million accented names took
    over 30 s."""
    lengths = pc.utf8_length(column)
    counted = pc.fill_null(pc.match_substring_regex(column, pattern=_COUNTED), False)
    widths = pc.add(lengths, pc.count_substring_regex(column, pattern=_WIDE))
    ascii = pc.equal(pc.binary_length(column), lengths)
    kept = [column.filter(pc.invert(counted))]
    for part in (pc.and_(counted, ascii), pc.and_(counted, pc.invert(ascii))):
        widest = pc.max(pc.if_else(part, widths, None))
        if widest.is_valid:
            kept.append(column.filter(pc.and_(part, pc.equal(widths, widest))).slice(0, 1))
    return pa.chunked_array([chunk for part in kept for chunk in part.chunks], type=column.type)


def _extremes(column: pa.ChunkedArray) -> pa.Array:
    """The least and greatest values, and a null if there is one: the widget's min and max
    over them (nulls read as 0) are those over the whole column. Integers and decimals only:
    they have no NaN and no negative zero to order differently."""
    found = pc.min_max(column)
    values = [found["min"], found["max"]] if found["min"].is_valid else []
    return pa.array([*values, *([None] if column.null_count else [])], type=column.type)


def _first_present(column: pa.ChunkedArray) -> Any:
    """The first value that is not null, as a one-value array (none: an empty one)."""
    for chunk in column.chunks:
        if chunk.null_count < len(chunk):
            return (chunk if chunk.null_count == 0 else chunk.drop_null()).slice(0, 1)
    return column.slice(0, 0)
