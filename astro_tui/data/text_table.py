"""Results as plain text for terminals and models: aligned, capped, and inert.

Data is untrusted: a value may hold ANSI or OSC escapes (OSC 52 writes the
clipboard), so every cell goes through `inert` before it is printed.

Printing is bounded as well: `write_table`, `write_csv` and `write_json` turn a
result into text a batch of rows at a time, so printing 100,000 rows holds one
batch of Python values, not all of them; and a cell shown cut (tables) is cut
in Arrow first, so a 100 MB text value never becomes a 100 MB Python string to
show 60 characters of it. A few rows a one-shot command read as Python values
(`data/row_table.py`) print the same way, cut the same way.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import itertools
import json
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from rich.cells import cell_len

from astro_tui.data import without_numpy
from astro_tui.data.results import QueryResult, empty_table
from astro_tui.data.row_table import RowColumn, RowTable
from astro_tui.display import groups_digits, value_text
from astro_tui.text import clip, inert, json_inert

if TYPE_CHECKING:
    import pyarrow as pa

BATCH_ROWS = 1000
"""Rows turned into Python values at a time while printing."""
_KEPT_BYTES = 8 * 2**20
"""A table's cell texts are kept from the widths' pass for the lines' up to about this much;
a larger table's are made again, so that printing it never holds more."""
_STR_BYTES = 64
"""What a short Python string (and its place in a row) costs beside its characters."""


def cell_text(value: Any, *, max_chars: int | None = None, grouping: bool = True) -> str:
    """How one value reads in a text table; NULL is spelled out, long text is cut."""
    if value is None:
        text = "NULL"
    else:
        text = value_text(value, grouping=grouping)
        if text is None:
            text = str(value)
    text = inert(text, keep_newlines=False).replace("\t", " ")
    if max_chars is not None and cell_len(text) > max_chars:
        text = clip(text, max_chars)
    return text


def pad(text: str, width: int, *, right: bool = False) -> str:
    """`ljust`/`rjust` in terminal cells, so CJK names line up."""
    gap = " " * max(0, width - cell_len(text))
    return gap + text if right else text + gap


def table_cells(result: QueryResult, *, max_rows: int, max_cell: int) -> tuple[list[str], list[list[str]]]:
    """Header and cells as text: numbers grouped unless the column is an id, code or year."""
    rows = [row for batch in _cell_batches(result, max_rows, max_cell) for row in batch]
    return [inert(c, keep_newlines=False) for c in result.columns], rows


def _cell_batches(result: QueryResult, max_rows: int | None, max_cell: int) -> Iterator[list[list[str]]]:
    """The first `max_rows` rows as cell text, a batch at a time, each value cut in Arrow to
    what can be shown before it becomes a Python value."""
    grouping = [groups_digits(c) for c in result.columns]
    for batch in _batches(result.table, max_rows):
        columns = [_shown(column, max_cell + 1).to_pylist() for column in batch.columns]
        yield [
            [cell_text(v, max_chars=max_cell, grouping=g) for v, g in zip(row, grouping, strict=True)]
            for row in zip(*columns, strict=True)
        ]


def _batches(table: pa.Table, max_rows: int | None) -> Iterator[pa.Table]:
    shown = table if max_rows is None else table.slice(0, max_rows)
    for start in range(0, shown.num_rows, BATCH_ROWS):
        yield shown.slice(start, BATCH_ROWS)


def _shown(column: Any, limit: int) -> Any:
    """A column whose text, bytes and lists (nested too) are cut to `limit`: a cell shows at
    most that much, so converting it never costs more. Types it cannot cut stay whole."""
    if isinstance(column, RowColumn):
        return column.cut(limit)
    import pyarrow as pa
    import pyarrow.types as pat

    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([_shown(chunk, limit) for chunk in column.chunks], type=column.type)
    kind = column.type
    try:
        large = pat.is_large_string(kind) or pat.is_large_binary(kind)
        if (pat.is_string(kind) or pat.is_large_string(kind)) and _longest(column, large) > limit:
            pc = without_numpy.import_module("pyarrow.compute")  # not at import: a short command

            return pc.utf8_slice_codeunits(column, 0, limit)
        if (pat.is_binary(kind) or pat.is_large_binary(kind)) and _longest(column, large) > limit:
            pc = without_numpy.import_module("pyarrow.compute")

            return pc.binary_slice(column, 0, limit)
        if (pat.is_list(kind) or pat.is_large_list(kind)) and not pat.is_map(kind):
            pc = without_numpy.import_module("pyarrow.compute")

            cut = pc.list_slice(column, 0, limit)
            maker = pa.LargeListArray if pat.is_large_list(kind) else pa.ListArray
            return maker.from_arrays(cut.offsets, _shown(cut.values, limit), mask=cut.is_null())
        if pat.is_struct(kind):
            fields = [_shown(child, limit) for child in column.flatten()]
            return pa.StructArray.from_arrays(fields, fields=list(kind), mask=column.is_null())
    except (pa.ArrowException, ValueError, TypeError):
        return column
    return column


def _longest(column: Any, large: bool) -> int:
    """The longest value of a text or bytes array, in bytes, read from its offsets."""
    offsets = column.buffers()[1]
    if offsets is None or len(column) == 0:
        return 0
    view = memoryview(offsets).cast("q" if large else "i")[column.offset : column.offset + len(column) + 1]
    return max(end - start for start, end in itertools.pairwise(view))


def format_table(result: QueryResult, *, max_rows: int = 50, max_cell: int = 60) -> str:
    """An aligned text table of the first rows, then a line with the count and any cut."""
    return "\n".join(table_lines(result, max_rows=max_rows, max_cell=max_cell))


def table_lines(result: QueryResult, *, max_rows: int | None, max_cell: int = 60) -> Iterator[str]:
    """`format_table`'s lines, made in two passes over the rows (the widths, then the lines),
    a batch at a time: what printing holds is one batch, whatever the result's size."""
    columns = [inert(c, keep_newlines=False) for c in result.columns]
    if not columns:
        yield "(no columns)"
        return
    widths = [cell_len(c) for c in columns]
    shown = held = 0
    kept: list[list[list[str]]] | None = []
    for batch in _cell_batches(result, max_rows, max_cell):
        shown += len(batch)
        for row in batch:
            widths = [max(w, cell_len(c)) for w, c in zip(widths, row, strict=True)]
        if kept is not None:
            held += sum(_STR_BYTES + len(c) for row in batch for c in row)
            if held <= _KEPT_BYTES:
                kept.append(batch)
            else:
                kept = None
    numeric = [_is_numeric(result, i) for i in range(len(columns))]

    def line(cells: list[str]) -> str:
        out = [pad(c, w, right=num) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "  ".join(out).rstrip()

    yield line(columns)
    yield "  ".join("-" * w for w in widths)
    for batch in kept if kept is not None else _cell_batches(result, max_rows, max_cell):
        yield from (line(r) for r in batch)
    footer = result.count_text()
    if result.row_count > shown:
        footer += f" (showing {shown:,})"
    yield footer


def write_table(result: QueryResult, out: IO[str], *, max_rows: int | None, max_cell: int = 60) -> None:
    for text in table_lines(result, max_rows=max_rows, max_cell=max_cell):
        out.write(text + "\n")


def write_csv(result: QueryResult, out: IO[str]) -> None:
    """Every value whole (CSV is the data), inert, streamed a batch of rows at a time."""
    _print_whole(CsvPrinter(out), result)


def write_json(result: QueryResult, out: IO[str]) -> None:
    """One JSON object, the same text `json.dumps` makes of it whole, streamed a batch of rows
    at a time: UTF-8, with every control, bidi and surrogate character escaped."""
    _print_whole(JsonPrinter(out), result)


def _print_whole(printer: CsvPrinter | JsonPrinter, result: QueryResult) -> None:
    printer.begin(result.columns)
    for batch in _batches(result.table, None):
        printer.write(batch)
    printer.finish(result)


class CsvPrinter:
    """CSV printed as the rows are read (a `RowSink`): a header, then each batch's rows."""

    def __init__(self, out: IO[str]) -> None:
        self._writer = csv.writer(out, lineterminator="\n")

    def start(self, schema: pa.Schema) -> None:
        self.begin(list(schema.names))

    def begin(self, columns: list[str]) -> None:
        self._writer.writerow([inert(c, keep_newlines=False) for c in columns])

    def write(self, batch: Any) -> None:
        for part in _batches(batch, None):
            columns = [column.to_pylist() for column in part.columns]
            for row in zip(*columns, strict=True):
                self._writer.writerow(["" if v is None else inert(_data_text(v)) for v in row])

    def end(self) -> None:
        return None

    def finish(self, result: QueryResult) -> None:
        return None


class JsonPrinter:
    """JSON printed as the rows are read (a `RowSink`); the count, cut and time at the end."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._first = True
        self._encode = json.JSONEncoder(ensure_ascii=False).encode

    def _dump(self, value: object) -> str:
        return json_inert(self._encode(value))

    def start(self, schema: pa.Schema) -> None:
        self.begin(list(schema.names))

    def begin(self, columns: list[str]) -> None:
        self._out.write('{"columns": ' + self._dump(columns) + ', "rows": [')

    def write(self, batch: Any) -> None:
        for part in _batches(batch, None):
            columns = [column.to_pylist() for column in part.columns]
            for row in zip(*columns, strict=True):
                self._out.write(("" if self._first else ", ") + self._dump([json_safe(v) for v in row]))
                self._first = False

    def end(self) -> None:
        return None

    def finish(self, result: QueryResult) -> None:
        tail = {
            "row_count": result.row_count,
            "truncated": result.truncated,
            "elapsed_ms": round(result.elapsed_ms, 3),
            "sql": result.sql,
        }
        self._out.write("], " + self._dump(tail)[1:] + "\n")


class TablePrinter:
    """A text table from rows as they are read (a `RowSink`): its widths need every row, so
    each batch is kept with its cells cut in Arrow to what a cell shows (`max_cell`), up to
    `max_rows` rows; the lines are printed from those once every row is read (`end`), the
    count below them once it is known (`finish`)."""

    def __init__(self, out: IO[str], *, max_rows: int | None, max_cell: int = 60) -> None:
        self._out = out
        self._max_rows = max_rows
        self._max_cell = max_cell
        self._schema: Any = None
        self._kept: list[Any] = []
        self._rows = 0

    def start(self, schema: pa.Schema) -> None:
        self._schema = schema

    def write(self, batch: Any) -> None:
        import pyarrow as pa

        room = None if self._max_rows is None else self._max_rows - self._rows
        if room is not None and room <= 0:
            return
        if room is not None and batch.num_rows > room:
            batch = batch.slice(0, room)
        columns = [_compact(_shown(column, self._max_cell + 1)) for column in batch.columns]
        self._kept.append(pa.RecordBatch.from_arrays(columns, names=list(self._schema.names)))
        self._rows += batch.num_rows

    def end(self) -> None:
        """Every row is read: the header and the rows are printed (still inside the limits)."""
        import pyarrow as pa

        table = pa.Table.from_batches(self._kept) if self._kept else empty_table(self._schema)
        self._kept = []
        shown = QueryResult("", table, False, 0.0)
        *body, _ = table_lines(shown, max_rows=self._max_rows, max_cell=self._max_cell)
        for text in body:  # the footer waits for the count, the cut and the total
            self._out.write(text + "\n")

    def finish(self, result: QueryResult) -> None:
        footer = result.count_text()
        if result.row_count > self._rows:
            footer += f" (showing {self._rows:,})"
        self._out.write(footer + "\n")


def _compact(cut: Any) -> Any:
    """A column copied into buffers of its own size: a batch read from an engine lives while
    any of its columns does (its buffers are released together), and Arrow sizes a cut
    text's buffer as the whole text's; kept batch after batch, either held the whole result."""
    import pyarrow as pa

    try:
        return pa.concat_arrays([cut, cut.slice(0, 0)])
    except pa.ArrowNotImplementedError:  # a union: kept as it is
        return cut


def _is_numeric(result: QueryResult, index: int) -> bool:
    if isinstance(result.table, RowTable):
        return result.table.numeric(index)
    import pyarrow.types as pat

    kind = result.table.schema.field(index).type
    return pat.is_integer(kind) or pat.is_floating(kind) or pat.is_decimal(kind)


def _data_text(value: Any) -> str:
    """A value in CSV or JSON text: a double whole (`repr`, which reads back exactly), other
    numbers and times as every front end shows them, without separators (`str` of a
    DECIMAL could read `4.00E-7`)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    shown = value_text(value, grouping=False)
    return str(value) if shown is None else shown


def json_safe(value: Any) -> Any:
    """Values JSON can hold exactly: decimals and dates become strings, not rounded floats."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, decimal.Decimal | dt.date | dt.time | dt.timedelta):
        return _data_text(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    return str(value)
