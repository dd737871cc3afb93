"""Prepared chart series drawn on a plotext figure, laid out for the cells it will fill.

Bars stand up with every label under its bar when the labels fit, lie down with the
labels beside them when there are rows for them, or stand up numbered with a legend
below. Each bar is placed on whole cells (the axes map one unit to one cell), so
neighbours always keep a gap. When nothing readable fits — bars and their labels, or
a line's axis — nothing is drawn and `Drawn.too_small` says what size would do.

The app's Chart tab calls `draw` at every repaint, so a resized or zoomed pane is laid
out again; `astro ask` calls it once, through `render_text`.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len

from astro_tui.agent.charts import Series, choice_of, label, prepare, rows_of
from astro_tui.agent.events import ChartSpec
from astro_tui.data.text_table import clip, groups_digits

_OVERHEAD_ROWS = 4
"""The frame's top and bottom, the x tick labels, the axis names; a title takes one more."""
_FRAME_COLUMNS = 2
_MIN_ROWS = 4
_MIN_COLUMNS = 10
_MAX_THICKNESS = 2
_MIN_BAR_CELLS = 12
"""Cells a lying bar chart keeps for its longest bar."""
_NAMES = {"line": "a line chart needs", "scatter": "a scatter plot needs", "hist": "a histogram needs"}
_PALETTE = ("blue+", "green+", "red+", "cyan+", "magenta+", "yellow", "gray", "blue")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PLOT_LOCK = threading.Lock()


@dataclass(frozen=True)
class Drawn:
    """What `draw` did: lines to show under the plot (the legend of numbered bars), or,
    when nothing readable fits, why and the size that would do (`needs`, columns × rows)."""

    below: tuple[str, ...] = ()
    too_small: str = ""
    needs: tuple[int, int] = (0, 0)


def draw(plt: Any, series: Series, width: int, height: int) -> Drawn:
    """Lay the series out for `width` × `height` cells and draw it on `plt` (plotext, or a
    `PlotextPlot.plt`), sized to the rows it takes; `Drawn.below` takes the rest."""
    plt.clear_figure()
    if series.kind == "bar":
        return _bars(plt, series, width, height)
    hist = series.kind == "hist"
    rows = height - _overhead(series)
    axis = _Axis.of(_all_values(series, zero=hist), rows)
    canvas = width - _FRAME_COLUMNS - axis.cells
    least = max(_MIN_COLUMNS, len(series.xs) if hist else 0)
    if rows < _MIN_ROWS + 1 or canvas < least:
        need = (_FRAME_COLUMNS + axis.cells + least, _overhead(series) + _MIN_ROWS + 1)
        return _too_small(_NAMES[series.kind], width, height, need)
    _frame(plt, series, width, height)
    axis.on_y(plt)
    names = list(series.ys)
    if hist:
        _histogram(plt, series, canvas)
        return Drawn()
    for name in names:
        draw_points = plt.scatter if series.kind == "scatter" else plt.plot
        legend = label(name) if len(names) > 1 else None
        draw_points(series.xs, series.ys[name], marker="braille", label=legend)
    if series.tick_labels:
        _thinned(plt, series.xs, series.tick_labels, canvas)
    elif series.xs:
        low, high = min(series.xs), max(series.xs)
        # plotext divides by the axis' span: one x value gets a unit-wide axis around it
        plt.xlim(low, high) if high > low else plt.xlim(low - 0.5, high + 0.5)
        whole = sorted({int(x) for x in series.xs if x.is_integer()})
        if len(whole) == len(set(series.xs)):
            grouping = groups_digits(series.x_name)
            _thinned(plt, [float(x) for x in whole], [label(x, grouping=grouping) for x in whole], canvas)
    return Drawn()


def _histogram(plt: Any, series: Series, canvas: int) -> None:
    """Bins side by side on whole cells, so no rounding opens a gap between neighbours."""
    counts = next(iter(series.ys.values()))
    bins = len(counts)
    starts = [j * canvas // bins for j in range(bins + 1)]
    plt.xlim(0, canvas - 1)  # one unit a cell
    for j, count in enumerate(counts):
        plt.rectangle([starts[j], starts[j + 1] - 1], [0, count], marker="sd", fill=True, color=_PALETTE[0])
    edges = series.edges or []
    if len(edges) == bins + 1:
        positions = [float(min(c, canvas - 1)) for c in starts]
        _thinned(plt, positions, [label(e) for e in _rounded(edges)], canvas)
    plt.ylabel("rows")


def _heading(series: Series) -> str:
    return series.title + (f"  ({series.note})" if series.note else "")


def _overhead(series: Series) -> int:
    """Rows around the canvas: the frame's top and bottom, the x tick labels, the axis
    names, and the title when there is one (plotext keeps no row for an empty one)."""
    return _OVERHEAD_ROWS + (1 if _heading(series).strip() else 0)


def _frame(plt: Any, series: Series, width: int, height: int) -> None:
    if hasattr(plt, "limit_size"):  # plotext's own figure is cut to the terminal; a widget's is not
        plt.limit_size(False, False)
    plt.plotsize(width, height)
    plt.title(_heading(series))
    plt.xlabel(label(series.x_name))
    names = list(series.ys)
    plt.ylabel(label(names[0]) if len(names) == 1 else "")


def _too_small(what: str, width: int, height: int, need: tuple[int, int]) -> Drawn:
    columns, rows = max(need[0], width), max(need[1], height)
    return Drawn(
        too_small=f"too small to read: {what} {columns}×{rows} cells, this is {width}×{height}",
        needs=(columns, rows),
    )


# ------------------------------------------------------------------ bars


def _bars(plt: Any, series: Series, width: int, height: int) -> Drawn:
    """Standing with labels, lying with labels, standing numbered with a legend: the first
    that fits. Every category keeps a label and every bar a gap to the next category."""
    labels = series.tick_labels or [label(x) for x in series.xs]
    values = _all_values(series, zero=True)
    n, k = len(labels), len(series.ys)
    rows = height - _overhead(series)
    axis = _Axis.of(values, rows)
    slot = (width - _FRAME_COLUMNS - axis.cells) // n
    # plotext gives every character one cell: a label with wide ones (東京) would shift the
    # row it is on, so such labels go to the legend, which is ours
    narrow = all(cell_len(t) == len(t) for t in labels)
    if narrow and rows >= _MIN_ROWS and slot >= k + 1 and max(cell_len(t) for t in labels) <= slot - 1:
        _standing(plt, series, labels, width, height, axis)
        return Drawn()
    lying = _lying_labels(labels, width)
    if narrow and lying is not None and rows >= n * k + n - 1:
        _lying(plt, series, lying, width, height)
        return Drawn()
    numbers = [str(i + 1) for i in range(n)]
    legend = _legend(labels, width)
    rows -= len(legend)
    axis = _Axis.of(values, rows)
    slot = (width - _FRAME_COLUMNS - axis.cells) // n
    if rows >= _MIN_ROWS and slot >= max(k + 1, len(numbers[-1]) + 1):
        _standing(plt, series, numbers, width, height - len(legend), axis)
        return Drawn(below=tuple(legend))
    need_columns = _FRAME_COLUMNS + axis.cells + n * max(k + 1, len(numbers[-1]) + 1)
    need_rows = _overhead(series) + _MIN_ROWS + len(_legend(labels, max(width, need_columns)))
    what = f"{n} bars with their labels need" if n != 1 else "a bar with its label needs"
    return _too_small(what, width, height, (need_columns, need_rows))


def lying_rows(series: Series) -> int:
    """The rows a bar chart takes lying down, one row per bar and one between categories."""
    n, k = len(series.xs), len(series.ys)
    return _overhead(series) + n * k + n - 1


def _standing(plt: Any, series: Series, labels: list[str], width: int, height: int, axis: _Axis) -> None:
    """Upright bars on whole cells: each category a slot, a gap of a quarter slot (at least
    one cell) between categories, and a cell between a category's series where it fits."""
    _frame(plt, series, width, height)
    names = list(series.ys)
    n, k = len(labels), len(names)
    canvas = width - _FRAME_COLUMNS - axis.cells
    slot = canvas // n
    gap = max(1, slot // 4)
    group = slot - gap
    inner = 1 if group >= 2 * k - 1 and k > 1 else 0
    bar = max(1, (group - inner * (k - 1)) // k)
    used = k * bar + inner * (k - 1)
    start = (canvas - slot * n) // 2 + gap // 2 + (group - used) // 2
    plt.xlim(0, canvas - 1)  # one unit a cell: bars begin and end on whole cells
    axis.on_y(plt)
    centres = []
    for i in range(n):
        left = start + i * slot
        centres.append(left + (used - 1) / 2)
        for s, name in enumerate(names):
            a = left + s * (bar + inner)
            plt.rectangle(
                [a, a + bar - 1],
                [0, series.ys[name][i]],
                marker="sd",
                fill=True,
                color=_PALETTE[s % len(_PALETTE)],
                label=label(name) if i == 0 and k > 1 else None,
            )
    plt.xticks(centres, labels)


def _lying_labels(labels: list[str], width: int) -> list[str] | None:
    """The labels beside lying bars, cut to leave the bars room; None when cutting them
    would make two read the same."""
    room = width - _FRAME_COLUMNS - _MIN_BAR_CELLS
    if room < 4:
        return None
    cut = [clip(t, room) for t in labels]
    return cut if len(set(cut)) == len(set(labels)) else None


def _lying(plt: Any, series: Series, labels: list[str], width: int, height: int) -> None:
    """Bars lying on whole rows, the first category on top, a blank row between categories;
    the labels are the y axis, the values the x axis."""
    _frame(plt, series, width, height)
    names = list(series.ys)
    n, k = len(labels), len(names)
    rows = height - _overhead(series)
    canvas = width - _FRAME_COLUMNS - max(cell_len(t) for t in labels)
    values = _all_values(series, zero=True)
    axis = _Axis.of(values, canvas, per=max(cell_len(t) for t in _Axis.of(values, 8).labels) + 4)
    thick = max(1, min(_MAX_THICKNESS, (rows - (n - 1)) // (n * k)))
    plt.ylim(0, rows - 1)  # one unit a row: bars lie on whole rows
    plt.xlim(*axis.span)
    positions = []
    for i in range(n):
        first = rows - 1 - i * (k * thick + 1)
        positions.append(first - (k * thick - 1) / 2)
        for s, name in enumerate(names):
            row = first - s * thick
            plt.rectangle(
                [0, series.ys[name][i]],
                [row - thick + 1, row],
                marker="sd",
                fill=True,
                color=_PALETTE[s % len(_PALETTE)],
                label=label(name) if i == 0 and k > 1 else None,
            )
    plt.yticks(positions, labels)
    plt.xticks(axis.ticks, axis.labels)
    plt.xlabel(label(names[0]) if k == 1 else "")
    plt.ylabel(label(series.x_name))


def _legend(labels: list[str], width: int) -> list[str]:
    """`1 North America  2 Western Europe  …`, wrapped to the width."""
    lines: list[str] = []
    line = ""
    for i, text in enumerate(labels):
        item = f"{i + 1} {clip(text, max(4, width - 4))}"
        if line and cell_len(line) + 2 + cell_len(item) > width:
            lines.append(line)
            line = item
        else:
            line = f"{line}  {item}" if line else item
    return [*lines, line] if line else lines


# ------------------------------------------------------------------ axes


def _all_values(series: Series, *, zero: bool) -> list[float]:
    values = [v for ys in series.ys.values() for v in ys]
    return [*values, 0.0] if zero else values


@dataclass(frozen=True)
class _Axis:
    """A value axis: its ends (the data's, with zero for bars), round ticks inside, their
    labels, and the cells the widest label takes."""

    span: tuple[float, float]
    ticks: list[float]
    labels: list[str]

    @classmethod
    def of(cls, values: list[float], cells: int, *, per: int = 3) -> _Axis:
        """Ticks for an axis `cells` long, one per `per` cells at most; whole numbers only
        when every value is one (counts, sizes)."""
        whole = all(float(v).is_integer() for v in values)
        ticks, step = _value_ticks(values, max(2, cells // per + 1), whole=whole)
        return cls(_span(values), ticks, _value_labels(ticks, step))

    @property
    def cells(self) -> int:
        return max(cell_len(t) for t in self.labels)

    def on_y(self, plt: Any) -> None:
        plt.yticks(self.ticks, self.labels)
        plt.ylim(*self.span)


def _value_ticks(values: list[float], most: int, *, whole: bool = False) -> tuple[list[float], float]:
    """Round ticks (1, 2, 2.5 or 5 × 10ⁿ apart; whole numbers for counts) inside the values'
    span, and their step: as many as fit in `most`, and two even when `most` is smaller."""
    low, high = min(values), max(values)
    if high == low:
        low, high = (low - 1, high + 1) if low == 0 else (low - abs(low) / 2, high + abs(high) / 2)
    magnitude = 10 ** math.floor(math.log10((high - low) / max(2, most)))
    fewest: tuple[list[float], float] | None = None
    while True:
        for m in (1, 2, 2.5, 5):
            step = m * magnitude
            if whole and not float(step).is_integer():
                continue
            first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
            ticks = [round(i * step, 12) for i in range(first, last + 1)]
            if len(ticks) <= most:
                return (ticks, step) if len(ticks) >= 2 or fewest is None else fewest
            if len(ticks) >= 2:
                fewest = (ticks, step)
        magnitude *= 10


def _span(values: list[float]) -> tuple[float, float]:
    """The value axis' ends: the data's, never a zero-wide axis (plotext divides by it)."""
    low, high = min(values), max(values)
    return (low, high) if high > low else (low - 1, high + 1)


def _value_labels(ticks: list[float], step: float) -> list[str]:
    """Short tick labels with the digits the step needs: `2.5M`, `120k`, `0.25`, `1,500`."""
    top = max(abs(t) for t in ticks)
    units = ((1e12, "T", 1e12), (1e9, "B", 1e9), (1e6, "M", 1e6), (1e3, "k", 1e4))
    unit, suffix = next(((u, name) for u, name, start in units if top >= start), (1.0, ""))
    scaled = step / unit
    decimals = next(d for d in range(12) if abs(round(scaled, d) - scaled) < 1e-9 * max(1, scaled))
    return [f"{t / unit:,.{decimals}f}{suffix}" if t else "0" for t in ticks]


def _thinned(plt: Any, positions: list[float], labels: list[str], canvas: int) -> None:
    """Explicit x ticks, no more than fit side by side with a cell between (plotext drops
    overlapping labels in an order that differs from run to run)."""
    widest = max((cell_len(text) for text in labels), default=1)
    most = max(2, canvas // (widest + 2))
    step = max(1, math.ceil(len(labels) / most))
    chosen = list(range(0, len(labels), step))
    plt.xticks([positions[i] for i in chosen], [labels[i] for i in chosen])


def _rounded(edges: list[float]) -> list[float | int]:
    """Bin edges at the fewest digits that still tell neighbours apart."""
    step = abs(edges[1] - edges[0]) if len(edges) > 1 else 1.0
    digits = 0 if step >= 1 else (1 - math.floor(math.log10(step)) if step > 0 else 2)
    return [round(e) if digits == 0 else round(e, digits) for e in edges]


# ------------------------------------------------------------------ text


def render_text(series: Series, width: int = 80, height: int = 20) -> str:
    """The chart as plain text (no colour codes) for terminals that are not the TUI; a
    chart that needs more rows than given takes them (a terminal scrolls)."""
    import plotext

    with _PLOT_LOCK:
        drawn = draw(plotext, series, width, height)
        if drawn.too_small and series.kind == "bar":
            for taller in sorted({lying_rows(series), drawn.needs[1]}):
                if taller > height:
                    drawn = draw(plotext, series, width, taller)
                    if not drawn.too_small:
                        break
        if drawn.too_small:
            plotext.clear_figure()
            return f"(chart not drawn: {drawn.too_small})"
        plotext.theme("clear")
        text = plotext.build()
        plotext.clear_figure()
    lines = [line.rstrip() for line in _ANSI.sub("", text).splitlines()]
    return "\n".join([*lines, *drawn.below]).rstrip()


def render_chart_text(spec: ChartSpec, width: int = 80, height: int = 20) -> str:
    """The chart as plain text (no colour codes) for terminals that are not the TUI."""
    try:
        series = prepare(spec.result.table, choice_of(spec), total=rows_of(spec.result))
    except ValueError as exc:
        return f"(chart not drawn: {exc})"
    return render_text(series, width, height)
