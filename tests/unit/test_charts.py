"""Charts as drawn, read back from the text plotext draws: every bar labelled, a gap between
bars, y labels in order, and a hint instead of an unreadable chart — at the sizes the
app's Chart tab has at 80×24, 100×30 and 160×48 (zoomed and not), and in `astro ask`.

The data: the sample warehouse's revenue by region (the 9-bar chart of issue 28) and the
tz database's countries by number of time zones (long names nobody here chose)."""

from __future__ import annotations

import csv
import importlib.metadata as md
import re
from pathlib import Path

import pyarrow as pa
import pytest

from astro_tui.agent.chart_draw import draw, render_text
from astro_tui.agent.charts import (
    ChartChoice,
    ChartError,
    Series,
    build_chart_spec,
    default_choice,
    id_like,
    prepare,
    rows_of,
)
from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.results import QueryResult
from tests.support.ui import make_app, plain, ready, submit, wait_until

REGIONS = (
    "select region_name, sum(net_revenue) as revenue from sales.daily_revenue group by 1 order by 2 desc"
)
MONTHS = (
    "select date_trunc('month', order_date) as month, sum(net_revenue) as revenue "
    "from sales.daily_revenue group by 1 order by 1"
)
PANES = [(60, 37), (48, 18), (98, 20), (78, 5), (78, 16), (30, 12)]
"""The Chart tab's plot at 160×48, 100×30 (and zoomed), 80×24 (and zoomed), and a narrow one."""
TOO_SMALL = {(78, 5), (30, 12)}


def _countries(tmp_path: Path) -> Path:
    base = Path(str(md.distribution("tzdata").locate_file("tzdata/zoneinfo")))
    names = {}
    for line in (base / "iso3166.tab").read_text().splitlines():
        if line[:1] != "#":
            code, name = line.split("\t")[:2]
            names[code] = name.strip()
    zones: dict[str, int] = {}
    for line in (base / "zone1970.tab").read_text().splitlines():
        if line[:1] != "#":
            for code in line.split("\t")[0].split(","):
                zones[code] = zones.get(code, 0) + 1
    path = tmp_path / "countries.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["country_code", "country_name", "time_zones"])
        writer.writerows((code, names.get(code, code), n) for code, n in sorted(zones.items()))
    return path


@pytest.fixture(scope="module")
def regions(sample_db: Database) -> pa.Table:
    return sample_db.execute(REGIONS).table


@pytest.fixture(scope="module")
def long_names(tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    pytest.importorskip("tzdata")
    path = _countries(tmp_path_factory.mktemp("countries"))
    with Database.open([str(path)], Settings()) as db:
        sql = "select country_name, time_zones from countries order by length(country_name) desc, 1 limit 10"
        return db.execute(sql).table


# ------------------------------------------------------------------ reading a drawn chart


def _canvas(text: str) -> list[str]:
    """The rows between the frame's top and bottom, without the y axis and the frame."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if "┌" in line)
    bottom = next(i for i, line in enumerate(lines) if "└" in line)
    left = lines[top].index("┌")
    return [line[left + 1 : left + 1 + lines[top].count("─")] for line in lines[top + 1 : bottom]]


def _bar_groups(text: str) -> tuple[str, int]:
    """How the bars stand and how many separate bars there are: upright bars are counted
    on the bottom row (runs of █ with space between), lying ones as runs of rows with █
    with a blank row between."""
    canvas = _canvas(text)
    lying = any(re.search(r"\S┤", line) for line in text.splitlines()) and not canvas[-1].strip()
    if not lying:
        return "standing", len(re.findall("█+", canvas[-1]))
    runs, previous = 0, False
    for row in canvas:
        filled = "█" in row
        runs += filled and not previous
        previous = filled
    return "lying", runs


def _check_bars(text: str, labels: list[str]) -> str:
    assert "too small" not in text, text
    layout, bars = _bar_groups(text)
    assert bars == len(labels), (layout, bars, text)
    for name in labels:
        assert name in text, (name, text)
    return layout


# ------------------------------------------------------------------ bars


@pytest.mark.parametrize("size", PANES)
def test_every_bar_has_its_label_and_a_gap(regions: pa.Table, size: tuple[int, int]) -> None:
    series = prepare(regions, ChartChoice("bar", "region_name", ["revenue"], "Revenue by region"))
    labels = series.tick_labels or []
    assert len(labels) == 9
    text = _plot_text(series, *size)
    if size in TOO_SMALL:  # the 80×24 layout's results pane: the hint, not a chart
        assert "9 bars with their labels need" in text and f"this is {size[0]}×{size[1]}" in text
        return
    _check_bars(text, labels)


def test_the_layout_follows_the_room(regions: pa.Table) -> None:
    series = prepare(regions, _regions_bar())
    assert _bar_groups(_plot_text(series, 60, 37))[0] == "lying"  # 160×48: labels beside the bars
    numbered = _plot_text(series, 48, 18)  # 100×30: too few rows to lie down: numbered, a legend
    lines = numbered.splitlines()
    ticks = lines[next(i for i, line in enumerate(lines) if "└" in line) + 1]
    assert _bar_groups(numbered)[0] == "standing" and ticks.split() == [str(i) for i in range(1, 10)]
    assert "1 North America" in numbered and "9 " in lines[-1]
    upright = _plot_text(prepare(regions.slice(0, 3), _regions_bar()), 98, 20)  # labels fit under
    lines = upright.splitlines()
    ticks = lines[next(i for i, line in enumerate(lines) if "└" in line) + 1]
    assert _bar_groups(upright) == ("standing", 3) and "North America" in ticks


@pytest.mark.parametrize("size", [(48, 18), (60, 37), (98, 20), (30, 30)])
def test_long_names_from_data_nobody_here_made(long_names: pa.Table, size: tuple[int, int]) -> None:
    series = prepare(long_names, ChartChoice("bar", "country_name", ["time_zones"], ""))
    text = _plot_text(series, *size)
    layout, bars = _bar_groups(text)
    assert bars == 10, text
    for name in series.tick_labels or []:
        shown = name in text or (layout == "lying" and name[:10] in text)  # cut beside narrow bars
        assert shown, (name, text)
    if layout == "lying":  # cut labels still tell the bars apart
        rows = [line.split("┤")[0].strip() for line in text.splitlines() if "┤" in line and "█" in line]
        assert len(set(rows)) == 10, rows


def test_wide_labels_keep_the_rows_straight() -> None:
    """plotext counts a character as one cell: 東京都 beside or under a bar would shift its row."""
    from rich.cells import cell_len

    table = pa.table({"city": ["東京都", "大阪", "Paris", "Zürich"], "n": [10, 7, 6, 3]})
    series = prepare(table, ChartChoice("bar", "city", ["n"], ""))
    for size in ((40, 20), (30, 12), (60, 37)):
        text = _plot_text(series, *size)
        lines = text.splitlines()
        plot = lines[: next(i for i, line in enumerate(lines) if "└" in line) + 3]  # then the legend
        assert {cell_len(line) for line in plot} == {size[0]}, text
        _check_bars(text, ["東京都", "大阪", "Paris", "Zürich"])


def test_counts_get_whole_ticks(long_names: pa.Table) -> None:
    series = prepare(long_names, ChartChoice("bar", "country_name", ["time_zones"], ""))
    axis = _plot_text(series, 60, 37).splitlines()[-2]
    assert "0.5" not in axis and axis.split()[0] == "0", axis


def test_several_series_keep_their_bars_apart() -> None:
    table = pa.table({"c": ["a", "b", "c"], "x": [3, 5, 1], "y": [4, 2, 1]})
    series = prepare(table, ChartChoice("bar", "c", ["x", "y"], ""))
    for size in ((40, 14), (60, 30)):
        canvas = _canvas(_plot_text(series, *size))
        assert len(re.findall("█+", canvas[-1])) == 6, canvas


# ------------------------------------------------------------------ every kind: too small, in order


@pytest.mark.parametrize("kind", ["line", "scatter", "hist", "bar"])
def test_too_small_is_said_for_every_kind(sample_db: Database, regions: pa.Table, kind: str) -> None:
    import plotext

    months = sample_db.execute(MONTHS).table
    choice = ChartChoice(kind, None if kind == "hist" else "month", ["revenue"], "Monthly")
    series = prepare(months if kind != "bar" else regions, choice if kind != "bar" else _regions_bar())
    drawn = draw(plotext, series, 78, 5)
    assert drawn.too_small.startswith("too small to read") and "this is 78×5" in drawn.too_small
    columns, rows = drawn.needs
    assert not draw(plotext, series, columns, rows).too_small
    plotext.clear_figure()


def test_line_y_labels_read_upwards(sample_db: Database) -> None:
    series = prepare(sample_db.execute(MONTHS).table, ChartChoice("line", "month", ["revenue"], "Monthly"))
    for size in ((48, 18), (60, 37), (78, 10), (98, 20)):
        text = _plot_text(series, *size)
        values = [_number(line.split("┤")[0]) for line in text.splitlines() if "┤" in line]
        assert len(values) >= 2 and values == sorted(values, reverse=True), text


def test_ask_takes_the_rows_a_chart_needs(regions: pa.Table) -> None:
    """`astro ask` prints at most 100 columns and asks for 20 rows; a terminal scrolls, so
    a bar chart that needs more rows to show its labels takes them."""
    many = pa.table({"name": [f"category number {i}" for i in range(30)], "n": list(range(1, 31))})
    series = prepare(many, ChartChoice("bar", "name", ["n"], "many"))
    text = render_text(series, 100, 20)
    _check_bars(text, series.tick_labels or [])


# ------------------------------------------------------------------ default axes


def test_default_axes_put_a_label_on_x_and_a_measure_on_y(sample_db: Database) -> None:
    cases = {
        "select * from sales.stores": ("store_name", None),
        "select * from sales.regions": ("region_name", "utc_offset_hours"),
        "select store_id, region_id, count(*) as orders from sales.orders join sales.stores using (store_id) "
        "group by all order by 1": ("store_id", "orders"),
        "select * from sales.daily_revenue": ("order_date", "orders"),
        REGIONS: ("region_name", "revenue"),
    }
    for sql, (x, y) in cases.items():
        choice = default_choice(sample_db.execute(sql).table)
        assert choice is not None and choice.x == x and choice.x not in choice.y, (sql, choice)
        if y is not None:
            assert choice.y == [y], (sql, choice)


def test_ids_and_hashes_are_not_the_default_x(sample_db: Database) -> None:
    """Issue 37: a table with an id, an md5 and a measure drew 60 bars over the md5."""
    sql = (
        "SELECT range AS id, md5(range::VARCHAR) AS fingerprint, (range % 97) * 1.5 AS amount, "
        "['north', 'south'][1 + range % 2] AS region FROM range({n})"
    )
    table = sample_db.execute(sql.format(n=5000)).table
    assert id_like(table, "fingerprint") and id_like(table, "id") and not id_like(table, "region")
    assert default_choice(table) == ChartChoice("bar", "region", ["amount"])
    no_label = table.drop_columns(["region"])
    assert default_choice(no_label) == ChartChoice("hist", None, ["amount"]), "a distribution, not 60 ids"
    few = sample_db.execute(sql.format(n=12)).table.drop_columns(["region"])
    assert default_choice(few) == ChartChoice("bar", "id", ["amount"]), "every row fits: one bar each"


def test_a_chart_says_which_rows_of_how_many_it_draws(sample_db: Database) -> None:
    table = sample_db.execute("SELECT range AS n, range % 7 AS v FROM range(1000)").table
    bars = prepare(table, ChartChoice("bar", "n", ["v"]))
    assert bars.note == "rows 1–60 of 1,000" and len(bars.xs) == 60
    cut = QueryResult("q", table, True, 1.0, total_rows=1_500_000)
    assert rows_of(cut) == "1,500,000"
    assert prepare(table, ChartChoice("bar", "n", ["v"]), total=rows_of(cut)).note == "rows 1–60 of 1,500,000"
    unknown = QueryResult("q", table, True, 1.0)
    assert prepare(table, ChartChoice("hist", None, ["v"]), total=rows_of(unknown)).note == (
        "rows 1–1,000 of more than 1,000"
    )
    assert rows_of(QueryResult("q", table, False, 1.0)) is None
    assert prepare(table, ChartChoice("line", "n", ["v"])).note == ""


def test_a_spec_with_one_column_on_both_axes_is_refused(regions: pa.Table) -> None:
    result = QueryResult(REGIONS, regions, False, 1.0)
    with pytest.raises(ChartError, match="diagonal"):
        build_chart_spec(result, "line", "revenue", "revenue", "t")


# ------------------------------------------------------------------ the app, at its three sizes


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 48)])
async def test_the_chart_tab_at_each_size_and_zoomed(sample_path: Path, size: tuple[int, int]) -> None:
    app = make_app(sample_path)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await submit(pilot, f"/sql {REGIONS}")
        await wait_until(pilot, lambda: app.results.current is not None)
        await pilot.press("f5", "g")
        await wait_until(
            pilot, lambda: bool(app.query("#chart")) and app.query_one("#chart").series is not None
        )
        plot = app.query_one("#chart")
        labels = plot.series.tick_labels
        await pilot.pause()
        text = plot.render().plain
        if size == (80, 24):
            assert "Too small to read" in text and "F10 gives it room" in text, text
        else:
            _check_bars(text, labels)
        await pilot.press("f10")
        await wait_until(pilot, lambda: app.screen.maximized is not None)
        await pilot.pause()
        _check_bars(plot.render().plain, labels)
        note = plain(app.query_one("#chart-note"))
        assert note.startswith("bar · x region_name · y revenue") and note.endswith("change it)"), note
        room = app.query_one("#chart-note").content_size
        assert room.width * room.height >= len(note), "the header wraps; it is not cut (issue 37)"
        entry = app.results.current
        for key in ("x", "y", "x"):  # two columns: neither key may put both axes on one
            await pilot.press(key)
            await pilot.pause()
            assert entry.chart.x == "region_name" and entry.chart.y == ["revenue"], (key, entry.chart)


# ------------------------------------------------------------------ helpers


def _plot_text(series: Series, width: int, height: int) -> str:
    """The chart as the Chart tab shows it in a `width` × `height` plot (the hint if too small)."""
    import plotext

    drawn = draw(plotext, series, width, height)
    if drawn.too_small:
        return drawn.too_small
    plotext.theme("clear")
    text = re.sub(r"\x1b\[[0-9;]*m", "", plotext.build())
    plotext.clear_figure()
    lines = text.splitlines()
    assert len(lines) + len(drawn.below) == height and all(len(line) == width for line in lines)
    return "\n".join([*lines, *drawn.below])


def _regions_bar() -> ChartChoice:
    return ChartChoice("bar", "region_name", ["revenue"], "Revenue by region")


def _number(text: str) -> float:
    text = text.strip().replace(",", "")
    scale = {"k": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}.get(text[-1:], 1)
    return float(text[:-1] if scale != 1 else text) * scale
