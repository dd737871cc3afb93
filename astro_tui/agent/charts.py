"""Chart specs checked against the result they draw, and drawn as text with plotext.

The model may only say *which* columns to draw and how; the values come from the
query. A spec that names a missing column or a non-numeric measure is refused
with the reason, so the model can fix it instead of the person seeing a blank chart.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import threading
from typing import Any

import pyarrow as pa
import pyarrow.types as pat

from astro_tui.agent.events import ChartKind, ChartSpec
from astro_tui.agent.registry import ToolError
from astro_tui.data.results import QueryResult

MAX_BARS = 100
MAX_POINTS = 20_000
MAX_SERIES = 8
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
    if result.row_count > MAX_POINTS:
        raise ChartError(f"at most {MAX_POINTS:,} rows can be drawn; aggregate or sample in SQL")
    return ChartSpec(kind=kind, x=x_name, y=ys, title=title.strip() or "chart", result=result)


def _maybe(result: QueryResult, name: str) -> str | None:
    try:
        return _resolve(result, name, "y")
    except ChartError:
        return None


def _as_float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float | decimal.Decimal):
        return float(value)
    return None


def _label(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M") if value.time() != dt.time() else value.strftime("%Y-%m-%d")
    text = str(value)
    return text if len(text) <= 24 else text[:23] + "…"


def _ticks(labels: list[str], width: int) -> tuple[list[int], list[str]]:
    """A readable subset of category labels for the x axis."""
    room = max(2, width // 12)
    step = max(1, -(-len(labels) // room))
    positions = list(range(1, len(labels) + 1, step))
    return positions, [labels[p - 1] for p in positions]


def render_chart_text(spec: ChartSpec, width: int = 80, height: int = 20) -> str:
    """The chart as plain text (no colour codes) for terminals that are not the TUI."""
    import plotext as plt

    table = spec.result.table
    xs = table.column(spec.x).to_pylist()
    x_numeric = _numeric(table.schema.field(spec.x).type)
    with _PLOT_LOCK:
        plt.clear_figure()
        plt.plotsize(max(20, width), max(8, height))
        plt.theme("clear")
        if spec.kind == "hist":
            values = [v for v in (_as_float(x) for x in xs) if v is not None]
            plt.hist(values, bins=min(40, max(5, int(len(values) ** 0.5))))
            plt.xlabel(spec.x)
        elif spec.kind == "bar":
            labels = [_label(x) for x in xs]
            if len(spec.y) == 1:
                plt.bar(labels, [_as_float(v) or 0.0 for v in table.column(spec.y[0]).to_pylist()])
            else:
                series = [[_as_float(v) or 0.0 for v in table.column(n).to_pylist()] for n in spec.y]
                plt.multiple_bar(labels, series, labels=list(spec.y))
        else:
            draw = plt.scatter if spec.kind == "scatter" else plt.plot
            if x_numeric:
                positions: list[float] = [_as_float(x) or 0.0 for x in xs]
            else:
                positions = list(range(1, len(xs) + 1))
                ticks, labels = _ticks([_label(x) for x in xs], width)
                plt.xticks(ticks, labels)
            for name in spec.y:
                points = [
                    (p, f)
                    for p, f in zip(
                        positions, (_as_float(v) for v in table.column(name).to_pylist()), strict=True
                    )
                    if f is not None
                ]
                draw([p for p, _ in points], [f for _, f in points], label=name if len(spec.y) > 1 else None)
            plt.xlabel(spec.x)
        plt.title(spec.title)
        text = plt.build()
        plt.clear_figure()
    return _ANSI.sub("", text).rstrip()
