"""A result's column widths from the few values that decide them, not from every row.

The table widget (`textual_fastdatatable.ArrowBackend`) sizes a number column by its
smallest and largest values, a date or time column by its first value, and a text column
by the text of every row. It finds those values by scanning every row, several times: on a
million rows, 20–40 ms for a decimal column and 30–110 ms for a text column under load,
all before the first frame. Here the same rules get smaller inputs: a number column is
handed over as its two extremes (and a null, if it has one), a date or time column as
its first value, and a text column whose bytes are all printable ASCII is as wide as its
longest value in bytes (one cell each, no line to cut, no markup: the results table shows
text literally). Anything else is measured by the widget as before, and the widths are
the widget's own (`tests/test_column_widths.py` compares them).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat
from textual_fastdatatable import ArrowBackend

from astro_tui.ui.inert import printable_ascii


class DisplayBackend(ArrowBackend):
    """`ArrowBackend` whose columns are measured from their deciding values."""

    def _measure(self, arr: Any) -> int:
        kind = arr.type
        if len(arr) == 0 or isinstance(kind, pa.BaseExtensionType):
            return super()._measure(arr)
        if pat.is_integer(kind) or pat.is_decimal(kind):
            return super()._measure(_extremes(arr))
        if pat.is_temporal(kind):
            return super()._measure(_first_present(arr))
        if (
            (pat.is_string(kind) or pat.is_large_string(kind))
            and not self.render_markup
            and printable_ascii(arr)
        ):
            widest = pc.max(pc.binary_length(arr)).as_py()
            return int(widest or 0)
        return super()._measure(arr)


def _extremes(arr: Any) -> pa.Array:
    """The column's least and greatest values, and a null if it has one: the widget's
    min and max over it (nulls read as 0) are those over the whole column. Integers and
    decimals only: they have no NaN and no negative zero to order differently."""
    found = pc.min_max(arr)
    values = [found["min"], found["max"]] if found["min"].is_valid else []
    return pa.array([*values, *([None] if arr.null_count else [])], type=arr.type)


def _first_present(arr: Any) -> Any:
    """The first value that is not null, as a one-value array (none: an empty one)."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    for chunk in chunks:
        if chunk.null_count < len(chunk):
            return (chunk if chunk.null_count == 0 else chunk.drop_null()).slice(0, 1)
    return arr.slice(0, 0)
