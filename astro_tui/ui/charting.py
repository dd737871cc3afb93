"""Turn a result into a plotext chart: choosing columns, bounding the points, drawing.

The series are computed off the UI loop (`prepare`), so only a bounded number
of points ever reaches plotext, which draws on the loop (`draw`). Labels are
data, so they are made inert and short before plotext sees them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.types as pat

from astro_tui.ui.inert import inert

KINDS = ("bar", "line", "scatter", "hist")
MAX_BARS = 60
MAX_POINTS = 2_000
MAX_HIST_VALUES = 200_000
_LABEL_CHARS = 24


@dataclass
class ChartChoice:
    kind: str
    x: str | None
    y: list[str] = field(default_factory=list)
    title: str = ""


@dataclass(frozen=True)
class Series:
    kind: str
    title: str
    x_name: str
    xs: list[float]
    tick_labels: list[str] | None
    ys: dict[str, list[float]]
    note: str = ""


def is_numeric(kind: pa.DataType) -> bool:
    return pat.is_integer(kind) or pat.is_floating(kind) or pat.is_decimal(kind)


def numeric_columns(table: pa.Table) -> list[str]:
    return [f.name for f in table.schema if is_numeric(f.type)]


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


def _label(value: Any) -> str:
    text = inert("∅" if value is None else value, keep_newlines=False)
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def _floats(values: list[Any]) -> list[float | None]:
    out: list[float | None] = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            f = None
        out.append(f if f is not None and math.isfinite(f) else None)
    return out


def prepare(table: pa.Table, choice: ChartChoice) -> Series:
    """Bounded series for plotext; raises ValueError with a one-line reason when it cannot chart."""
    names = table.column_names
    for name in [*choice.y, *([choice.x] if choice.x else [])]:
        if name not in names:
            raise ValueError(f"no column {inert(name, keep_newlines=False)!r} in this result")
    if not choice.y:
        raise ValueError("pick a numeric column for y (key y)")
    for name in choice.y:
        if not is_numeric(table.schema.field(name).type):
            raise ValueError(f"column {inert(name, keep_newlines=False)!r} is not numeric")
    title = inert(choice.title, keep_newlines=False)
    n = table.num_rows
    if choice.kind == "hist":
        values = [
            v
            for v in _floats(table.column(choice.y[0]).slice(0, MAX_HIST_VALUES).to_pylist())
            if v is not None
        ]
        note = f"first {MAX_HIST_VALUES:,} of {n:,} values" if n > MAX_HIST_VALUES else ""
        return Series("hist", title, choice.y[0], [], None, {choice.y[0]: values}, note)  # type: ignore[dict-item]
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
    keep = [i for i in range(rows.num_rows) if all(y_values[name][i] is not None for name in choice.y)]
    x_numeric = is_numeric(table.schema.field(choice.x).type) and choice.kind != "bar"
    ys = {name: [y_values[name][i] for i in keep] for name in choice.y}
    if x_numeric:
        xs = _floats([x_values[i] for i in keep])
        pairs = [(x, i) for x, i in zip(xs, range(len(keep)), strict=True) if x is not None]
        xs_clean = [p[0] for p in pairs]
        ys = {name: [vals[p[1]] for p in pairs] for name, vals in ys.items()}
        return Series(choice.kind, title, choice.x, xs_clean, None, ys, note)  # type: ignore[arg-type]
    labels = [_label(x_values[i]) for i in keep]
    return Series(choice.kind, title, choice.x, [float(i + 1) for i in range(len(keep))], labels, ys, note)  # type: ignore[arg-type]


def _ticks(plt: Any, positions: list[float], labels: list[str], width: int) -> None:
    """Explicit x ticks, no more than fit side by side: plotext thins overlapping labels
    in an order that differs from run to run."""
    widest = max((len(label) for label in labels), default=1)
    most = max(2, min(8, (width - 12) // (widest + 2)))
    step = max(1, math.ceil(len(labels) / most))
    chosen = list(range(0, len(labels), step))
    plt.xticks([positions[i] for i in chosen], [labels[i] for i in chosen])


def draw(plt: Any, series: Series, width: int = 80) -> None:
    """Draw prepared series on a plotext figure (a `PlotextPlot.plt`)."""
    plt.clear_figure()
    plt.title(series.title + (f"  ({series.note})" if series.note else ""))
    names = list(series.ys)
    if series.kind == "hist":
        plt.hist(series.ys[names[0]], bins=30)
        plt.xlabel(_label(names[0]))
        return
    if series.kind == "bar":
        labels = series.tick_labels or [_label(x) for x in series.xs]
        positions = [float(i + 1) for i in range(len(labels))]
        if len(names) == 1:
            plt.bar(positions, series.ys[names[0]])
        else:
            plt.multiple_bar(positions, [series.ys[n] for n in names], labels=[_label(n) for n in names])
        _ticks(plt, positions, labels, width)
    else:
        marker = "braille"
        for name in names:
            if series.kind == "scatter":
                plt.scatter(
                    series.xs, series.ys[name], marker=marker, label=_label(name) if len(names) > 1 else None
                )
            else:
                plt.plot(
                    series.xs, series.ys[name], marker=marker, label=_label(name) if len(names) > 1 else None
                )
        if series.tick_labels:
            _ticks(plt, series.xs, series.tick_labels, width)
    plt.xlabel(_label(series.x_name))
    if len(names) == 1:
        plt.ylabel(_label(names[0]))
