"""Charts: specs checked against the result they draw, and the one pipeline that draws them.

The model may only say *which* columns to draw and how; the values come from the
query. A spec that names a missing column or a non-numeric measure is refused
with the reason, so the model can fix it instead of the person seeing a blank chart.

`prepare` turns a result into bounded series (off the UI loop) and `draw` puts
them on a plotext figure; `astro ask` draws on plotext's own figure
(`render_chart_text`), the app on its textual-plotext widget, so both show the
same chart: NULLs left out and counted, √n bins, bars with gaps, axes from the data.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.types as pat

from astro_tui.agent.events import ChartKind, ChartSpec
from astro_tui.agent.registry import ToolError
from astro_tui.data.results import QueryResult
from astro_tui.data.text_table import clip
from astro_tui.display import groups_digits, number_text
from astro_tui.text import inert

KINDS: tuple[ChartKind, ...] = ("bar", "line", "scatter", "hist")
MAX_BARS = 60
MAX_POINTS = 2_000
MAX_SPEC_ROWS = 20_000
MAX_HIST_VALUES = 200_000
MAX_BINS = 40
MAX_SERIES = 8
_LABEL_CELLS = 40


class ChartError(ToolError):
    """The spec does not fit the data; the message says what to change."""


def _numeric(kind: pa.DataType) -> bool:
    return pat.is_integer(kind) or pat.is_floating(kind) or pat.is_decimal(kind)


def _resolve(result: QueryResult, name: str, role: str) -> str:
    for column in result.columns:
        if column == name:
            return column
    lowered = name.lower()
    for column in result.columns:
        if column.lower() == lowered:
            return column
    raise ChartError(f"{role} column '{name}' is not in the query's columns: {', '.join(result.columns)}")


def build_chart_spec(
    result: QueryResult, kind: ChartKind, x: str, y: str | list[str], title: str
) -> ChartSpec:
    """Validate a spec against the columns and size of the result it will draw."""
    if result.row_count == 0:
        raise ChartError("the query returned no rows, so there is nothing to draw")
    if result.truncated:
        raise ChartError(
            f"the query returned more than {result.row_count:,} rows; aggregate in SQL before charting"
        )
    schema = result.table.schema
    x_name = _resolve(result, x, "x")
    wanted = [y] if isinstance(y, str) else list(y)
    if kind == "hist":
        if not _numeric(schema.field(x_name).type):
            raise ChartError(f"hist bins the x column, which must be numeric; '{x_name}' is not")
        distinct = _distinct_count(result.table.column(x_name))
        if distinct < 2:
            raise ChartError(
                f"a histogram of '{x_name}' would be one bar: it holds {distinct} distinct value(s); "
                "show a single value with submit_result, or chart a column that varies"
            )
        ys = tuple(c for c in (_maybe(result, n) for n in wanted) if c is not None)
    else:
        if not wanted:
            raise ChartError("y must name at least one numeric column")
        ys = tuple(_resolve(result, name, "y") for name in wanted)
        for name in ys:
            if not _numeric(schema.field(name).type):
                raise ChartError(
                    f"y column '{name}' is {schema.field(name).type}, not a number; "
                    "y columns must be numeric (cast or aggregate in SQL)"
                )
    if kind != "hist" and x_name in ys:
        raise ChartError(
            f"x and y are both '{x_name}', which draws a diagonal; put a label column "
            "(a name, a date) on x and a measure on y"
        )
    if len(ys) > MAX_SERIES:
        raise ChartError(f"at most {MAX_SERIES} y columns fit in one chart")
    if kind == "bar" and result.row_count > MAX_BARS:
        raise ChartError(
            f"a bar chart of {result.row_count:,} bars is unreadable; keep at most {MAX_BARS} "
            "(ORDER BY … LIMIT, or group into fewer categories)"
        )
    if result.row_count > MAX_SPEC_ROWS:
        raise ChartError(f"at most {MAX_SPEC_ROWS:,} rows can be drawn; aggregate or sample in SQL")
    return ChartSpec(kind=kind, x=x_name, y=ys, title=title.strip() or "chart", result=result)


def _maybe(result: QueryResult, name: str) -> str | None:
    try:
        return _resolve(result, name, "y")
    except ChartError:
        return None


def _distinct_count(column: pa.ChunkedArray) -> int:
    import pyarrow.compute as pc

    return int(pc.count_distinct(column, mode="only_valid").as_py())


@dataclass
class ChartChoice:
    """What to draw: hist bins `y[0]` (x is None); the other kinds draw `y` over `x`."""

    kind: str
    x: str | None
    y: list[str] = field(default_factory=list)
    title: str = ""


@dataclass(frozen=True)
class Series:
    """Bounded, NULL-free points ready for plotext; `note` says what was left out."""

    kind: str
    title: str
    x_name: str
    xs: list[float]
    tick_labels: list[str] | None
    ys: dict[str, list[float]]
    note: str = ""
    edges: list[float] | None = None


def is_numeric(kind: pa.DataType) -> bool:
    return _numeric(kind)


def numeric_columns(table: pa.Table) -> list[str]:
    return [f.name for f in table.schema if is_numeric(f.type)]


def choice_of(spec: ChartSpec) -> ChartChoice:
    """The model's spec as a choice: a hist spec names the binned column as x."""
    if spec.kind == "hist":
        return ChartChoice("hist", None, [spec.x], spec.title)
    return ChartChoice(spec.kind, spec.x, list(spec.y), spec.title)


def default_choice(table: pa.Table) -> ChartChoice | None:
    """A label on x and a measure on y, never one column on both: a long series goes over
    its dates as a line, anything else as bars over its first name-like column; y is the
    first number that is not an id, code or year (`store_id` is no measure). Rows with only an
    id or a hash to label them are more than bars can show once there are more than
    `MAX_BARS`: their measure's distribution is drawn instead."""
    if table.num_columns == 0:
        return None
    numeric = numeric_columns(table)
    if not numeric:
        return None
    if table.num_columns == 1:
        return ChartChoice("hist", None, [table.column_names[0]])
    x = x_column(table)
    ys = [n for n in numeric if n != x and groups_digits(n)][:1] or [n for n in numeric if n != x][:1]
    if not ys:
        return ChartChoice("hist", None, [x])
    if table.num_rows > MAX_BARS and id_like(table, x):
        return ChartChoice("hist", None, ys)
    x_type = table.schema.field(x).type
    long = (pat.is_temporal(x_type) or is_numeric(x_type)) and table.num_rows > MAX_BARS
    return ChartChoice("line" if long else "bar", x, ys)


def x_column(table: pa.Table) -> str:
    """The column that best labels the rows: a date for a long series, else a name (text that
    is not an id, code or hash), a date, any other text, then ids and hashes, in that order."""
    fields = list(table.schema)
    dates = [f.name for f in fields if pat.is_temporal(f.type)]
    if dates and table.num_rows > MAX_BARS:
        return dates[0]
    texts = [f.name for f in fields if pat.is_string(f.type) or pat.is_large_string(f.type)]
    ids = [n for n in texts if id_like(table, n)]
    named = [n for n in texts if groups_digits(n) and n not in ids]
    others = [n for n in texts if n not in named and n not in ids]
    numbers = [f.name for f in fields if is_numeric(f.type) and not groups_digits(f.name)]
    return next(iter(named + dates + others + numbers + ids), table.column_names[0])


_ID_WORDS = {"id", "ids", "key", "uuid", "guid", "hash", "md5", "sha", "sha1", "sha256", "checksum", "digest"}
_TOKEN = re.compile(r"[0-9A-Fa-f-]{8,}|[0-9A-Za-z_+/=-]{20,}")
_ID_SAMPLE = 200


def id_like(table: pa.Table, name: str) -> bool:
    """A column that names rows rather than grouping them: its name says id, key or hash, or
    its text is long unspaced tokens that are nearly all different (md5s, uuids)."""
    words = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)
    if words and words[-1].lower() in _ID_WORDS:
        return True
    kind = table.schema.field(name).type
    if not (pat.is_string(kind) or pat.is_large_string(kind)):
        return False
    sample = [v for v in table.column(name).slice(0, _ID_SAMPLE).to_pylist() if v is not None]
    if len(sample) < 2:
        return False
    tokens = sum(1 for v in sample if _TOKEN.fullmatch(v))
    return tokens >= 0.9 * len(sample) and len(set(sample)) >= 0.9 * len(sample)


def _flat(text: object) -> str:
    return " ".join(inert(str(text)).split())


def label(value: Any, *, grouping: bool = True) -> str:
    """A category or axis label: inert, one line, at most 40 cells (a layout may cut it further)."""
    if value is None:
        return "NULL"
    if isinstance(value, dt.datetime):
        value = value.strftime("%Y-%m-%d %H:%M") if value.time() != dt.time() else value.strftime("%Y-%m-%d")
    elif isinstance(value, float | int) and not isinstance(value, bool):
        value = number_text(value, grouping=grouping)
    return clip(_flat(value), _LABEL_CELLS)


def _floats(values: list[Any]) -> list[float | None]:
    out: list[float | None] = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            f = None
        out.append(f if f is not None and math.isfinite(f) else None)
    return out


def _left_out(n: int) -> str:
    return f"{n:,} row{'' if n == 1 else 's'} with NULL left out" if n else ""


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def bins_for(values: list[float]) -> int:
    """√n bins, between 1 and 40, never more than there are distinct values."""
    distinct = len(set(values))
    return max(1, min(MAX_BINS, math.ceil(math.sqrt(len(values))), distinct))


def rows_of(result: QueryResult) -> str | None:
    """How many rows the whole result has when the row cap cut it (`1,500,000`, `more than
    100,000`), for a chart's note; None when the table is the whole result."""
    if not result.truncated:
        return None
    n = result.row_count
    if result.total_rows is not None and result.total_rows > n:
        return f"{result.total_rows:,}"
    return f"more than {n:,}"


def prepare(table: pa.Table, choice: ChartChoice, *, total: str | None = None) -> Series:
    """Bounded series for plotext; raises ValueError with a one-line reason when it cannot chart.
    `total` is the whole result's row count when `table` was cut (`rows_of`), so the note says
    which rows of how many are drawn."""
    names = table.column_names
    for name in [*choice.y, *([choice.x] if choice.x else [])]:
        if name not in names:
            raise ValueError(f"no column {_flat(name)!r} in this result")
    if not choice.y:
        raise ValueError("pick a numeric column for y (key y)")
    for name in choice.y:
        if not is_numeric(table.schema.field(name).type):
            raise ValueError(f"column {_flat(name)!r} is not numeric")
    title = _flat(choice.title)
    n = table.num_rows
    if choice.kind == "hist":
        return _histogram(table, choice.y[0], title, total)
    if choice.x is None:
        raise ValueError("pick a column for x (key x)")
    note = ""
    if choice.kind == "bar":
        rows = table.slice(0, MAX_BARS)
        if n > MAX_BARS or total:
            note = f"rows 1–{min(n, MAX_BARS)} of {total or f'{n:,}'}"
    elif n > MAX_POINTS:
        step = math.ceil(n / MAX_POINTS)
        import pyarrow.compute as pc

        rows = table.take(pc.multiply(pa.array(range(math.ceil(n / step)), pa.int64()), step))
        note = f"every {step}th of rows 1–{n:,} of {total}" if total else f"every {step}th of {n:,} rows"
    else:
        rows = table
        note = f"rows 1–{n:,} of {total}" if total else ""
    x_values = rows.column(choice.x).to_pylist()
    y_values = {name: _floats(rows.column(name).to_pylist()) for name in choice.y}
    x_numeric = is_numeric(table.schema.field(choice.x).type) and choice.kind != "bar"
    x_floats = _floats(x_values) if x_numeric else [0.0] * rows.num_rows
    keep = [
        i
        for i in range(rows.num_rows)
        if x_floats[i] is not None and all(y_values[name][i] is not None for name in choice.y)
    ]
    note = _join(note, _left_out(rows.num_rows - len(keep)))
    if not keep:
        raise ValueError("every row has a NULL to draw: nothing to chart")
    ys: dict[str, list[float]] = {name: [y_values[name][i] for i in keep] for name in choice.y}  # type: ignore[misc]
    if x_numeric:
        xs: list[float] = [x_floats[i] for i in keep]  # type: ignore[misc]
        return Series(choice.kind, title, choice.x, xs, None, ys, note)
    labels = [label(x_values[i]) for i in keep]
    return Series(choice.kind, title, choice.x, [float(i + 1) for i in range(len(keep))], labels, ys, note)


def _histogram(table: pa.Table, column: str, title: str, total: str | None) -> Series:
    import numpy as np

    n = table.num_rows
    raw = _floats(table.column(column).slice(0, MAX_HIST_VALUES).to_pylist())
    values = [v for v in raw if v is not None]
    shown = min(n, MAX_HIST_VALUES)
    note = _join(
        f"rows 1–{shown:,} of {total or f'{n:,}'}" if n > MAX_HIST_VALUES or total else "",
        _left_out(len(raw) - len(values)),
    )
    if len(set(values)) < 2:
        one = f"one value ({label(values[0])})" if values else "no values"
        raise ValueError(f"nothing to chart: {_flat(column)!r} holds {one}; a histogram needs two or more")
    counts, edges = np.histogram(np.asarray(values), bins=bins_for(values))
    centres = [float(a + b) / 2 for a, b in itertools.pairwise(edges)]
    return Series(
        "hist",
        title,
        column,
        centres,
        None,
        {column: [float(c) for c in counts]},
        note,
        [float(e) for e in edges],
    )
