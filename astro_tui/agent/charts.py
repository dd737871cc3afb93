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
import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.types as pat

from astro_tui.agent.events import ChartKind, ChartSpec
from astro_tui.agent.registry import ToolError
from astro_tui.data.results import QueryResult
from astro_tui.data.text_table import clip, groups_digits, number_text
from astro_tui.text import inert

KINDS: tuple[ChartKind, ...] = ("bar", "line", "scatter", "hist")
MAX_BARS = 60
MAX_POINTS = 2_000
MAX_SPEC_ROWS = 20_000
MAX_HIST_VALUES = 200_000
MAX_BINS = 40
MAX_SERIES = 8
_LABEL_CELLS = 24
_BAR_GAP_CELLS = 2
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PLOT_LOCK = threading.Lock()


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
    """First column on x, the first other numeric column on y; bars for categories, lines for series."""
    if table.num_columns == 0:
        return None
    names = table.column_names
    numeric = numeric_columns(table)
    if not numeric:
        return None
    if len(names) == 1:
        return ChartChoice("hist", None, [names[0]])
    x = names[0]
    ys = [n for n in numeric if n != x][:1] or [numeric[0]]
    x_type = table.schema.field(x).type
    kind = "line" if (pat.is_temporal(x_type) or is_numeric(x_type)) and table.num_rows > MAX_BARS else "bar"
    if ys == [x]:
        return ChartChoice("hist", None, ys)
    return ChartChoice(kind, x, ys)


def _flat(text: object) -> str:
    return " ".join(inert(str(text)).split())


def label(value: Any, *, grouping: bool = True) -> str:
    """A category or axis label: inert, one line, at most 24 cells."""
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


def prepare(table: pa.Table, choice: ChartChoice) -> Series:
    """Bounded series for plotext; raises ValueError with a one-line reason when it cannot chart."""
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
        return _histogram(table, choice.y[0], title)
    if choice.x is None:
        raise ValueError("pick a column for x (key x)")
    note = ""
    if choice.kind == "bar":
        rows = table.slice(0, MAX_BARS)
        if n > MAX_BARS:
            note = f"first {MAX_BARS} of {n:,} rows"
    elif n > MAX_POINTS:
        step = math.ceil(n / MAX_POINTS)
        import pyarrow.compute as pc

        rows = table.take(pc.multiply(pa.array(range(math.ceil(n / step)), pa.int64()), step))
        note = f"every {step}th of {n:,} rows"
    else:
        rows = table
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


def _histogram(table: pa.Table, column: str, title: str) -> Series:
    import numpy as np

    n = table.num_rows
    raw = _floats(table.column(column).slice(0, MAX_HIST_VALUES).to_pylist())
    values = [v for v in raw if v is not None]
    note = _join(
        f"first {MAX_HIST_VALUES:,} of {n:,} values" if n > MAX_HIST_VALUES else "",
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


def _ticks(plt: Any, positions: list[float], labels: list[str], width: int) -> None:
    """Explicit x ticks, no more than fit side by side: plotext thins overlapping labels
    in an order that differs from run to run."""
    widest = max((len(text) for text in labels), default=1)
    most = max(2, min(8, (width - 12) // (widest + 2)))
    step = max(1, math.ceil(len(labels) / most))
    chosen = list(range(0, len(labels), step))
    plt.xticks([positions[i] for i in chosen], [labels[i] for i in chosen])


def bar_width(count: int, width: int) -> float:
    """The bar width (a fraction of a slot) that leaves two empty cells between bars, so
    neighbours never merge when plotext rounds their edges; 0.8 when there is room."""
    plot_cells = max(10, width - 10)
    return min(0.8, max(0.2, 1 - _BAR_GAP_CELLS * count / plot_cells))


def draw(plt: Any, series: Series, width: int = 80) -> None:
    """Draw prepared series on a plotext figure (plotext itself, or a `PlotextPlot.plt`)."""
    plt.clear_figure()
    plt.title(series.title + (f"  ({series.note})" if series.note else ""))
    names = list(series.ys)
    if series.kind == "hist":
        edges = series.edges or []
        plt.bar(series.xs, series.ys[names[0]], width=1.0)
        if edges:
            plt.xlim(edges[0], edges[-1])
            _ticks(plt, edges, [label(e) for e in _rounded(edges)], width)
        plt.xlabel(label(names[0]))
        plt.ylabel("rows")
        return
    if series.kind == "bar":
        labels = series.tick_labels or [label(x) for x in series.xs]
        positions = [float(i + 1) for i in range(len(labels))]
        gap = bar_width(len(labels), width)
        if len(names) == 1:
            plt.bar(positions, series.ys[names[0]], width=gap)
        else:
            plt.multiple_bar(
                positions, [series.ys[n] for n in names], labels=[label(n) for n in names], width=gap
            )
        plt.xlim(0.5, len(labels) + 0.5)
        _ticks(plt, positions, labels, width)
    else:
        for name in names:
            draw_points = plt.scatter if series.kind == "scatter" else plt.plot
            draw_points(
                series.xs, series.ys[name], marker="braille", label=label(name) if len(names) > 1 else None
            )
        if series.tick_labels:
            _ticks(plt, series.xs, series.tick_labels, width)
        elif series.xs:
            low, high = min(series.xs), max(series.xs)
            # plotext divides by the axis' span: one x value gets a unit-wide axis around it
            plt.xlim(low, high) if high > low else plt.xlim(low - 0.5, high + 0.5)
            whole = sorted({int(x) for x in series.xs if x.is_integer()})
            if len(whole) == len(set(series.xs)):
                grouping = groups_digits(series.x_name)
                _ticks(plt, [float(x) for x in whole], [label(x, grouping=grouping) for x in whole], width)
    plt.xlabel(label(series.x_name))
    if len(names) == 1:
        plt.ylabel(label(names[0]))


def _rounded(edges: list[float]) -> list[float | int]:
    """Bin edges at the fewest digits that still tell neighbours apart."""
    step = abs(edges[1] - edges[0]) if len(edges) > 1 else 1.0
    digits = 0 if step >= 1 else (1 - math.floor(math.log10(step)) if step > 0 else 2)
    return [round(e) if digits == 0 else round(e, digits) for e in edges]


def render_chart_text(spec: ChartSpec, width: int = 80, height: int = 20) -> str:
    """The chart as plain text (no colour codes) for terminals that are not the TUI."""
    import plotext as plt

    try:
        series = prepare(spec.result.table, choice_of(spec))
    except ValueError as exc:
        return f"(chart not drawn: {exc})"
    with _PLOT_LOCK:
        draw(plt, series, width=width)
        plt.limit_size(False, False)
        plt.plotsize(max(20, width), max(8, height))
        plt.theme("clear")
        text = plt.build()
        plt.clear_figure()
    return _ANSI.sub("", text).rstrip()
