"""Issue 12, data side: what a new user met in their first ten minutes with files and errors.

Every test opens real files with real DuckDB, the way `astro FILE…` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from astro_tui.agent.prompts import system_prompt
from astro_tui.catalog.introspect import load_catalog
from astro_tui.catalog.shell import Shell
from astro_tui.cli import main
from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.errors import GuardError, QueryError, TargetError, lock_message
from tests.support.holders import holding_for_writing


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def flights(tmp_path: Path) -> Path:
    return _write(tmp_path / "flights.csv", "carrier,origin,dep_delay\nUA,EWR,2.5\nAA,JFK,-1\nUA,LGA,10\n")


# ---------------------------------------------------------------- errors that help


def test_sql_errors_keep_duckdbs_hints(flights: Path) -> None:
    with Database.open([str(flights)], Settings()) as db:
        with pytest.raises(QueryError) as table_typo:
            db.execute("select * from flight")
        with pytest.raises(QueryError) as column_typo:
            db.execute("select carier from flights")
    assert str(table_typo.value).splitlines() == [
        "Catalog Error: Table with name flight does not exist!",
        'Did you mean "flights"?',
    ]
    lines = str(column_typo.value).splitlines()
    assert len(lines) == 2 and lines[1].startswith("Candidate bindings:") and '"carrier"' in lines[1]
    assert "LINE 1" not in str(column_typo.value)


def test_system_view_suggestions_are_dropped(flights: Path) -> None:
    with Database.open([str(flights)], Settings()) as db, pytest.raises(QueryError) as exc:
        db.execute("select * from no_such_table")
    assert "pg_" not in str(exc.value) and "duckdb_" not in str(exc.value)


def test_cli_sql_shows_the_hint(flights: Path) -> None:
    result = CliRunner().invoke(main, ["sql", "select * from flight", str(flights)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "astro: Catalog Error: Table with name flight does not exist!",
        'Did you mean "flights"?',
    ]


def test_syntax_errors_say_syntax_error_once(flights: Path) -> None:
    from astro_tui.data.engines.postgres import guard as pg_guard

    with Database.open([str(flights)], Settings()) as db:
        for sql in ("selec 1", "select 1 +"):
            with pytest.raises(GuardError) as exc:
                db.execute(sql)
            assert str(exc.value).startswith("syntax error at "), str(exc.value)
            assert str(exc.value).count("syntax error") == 1
    with pytest.raises(GuardError) as pg:
        pg_guard.check("selec 1")
    assert str(pg.value).startswith("syntax error at or near") and str(pg.value).count("syntax error") == 1


@pytest.fixture
def locked_db(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    path = tmp_path / "busy.duckdb"
    duckdb.connect(str(path)).execute("CREATE TABLE t AS SELECT 1 AS a").close()
    with holding_for_writing(path) as pid:
        yield path, pid


def test_a_locked_file_says_who_holds_it_and_what_to_do(locked_db: tuple[Path, int], flights: Path) -> None:
    path, pid = locked_db
    for specs in ([str(path)], [str(path), str(flights)]):
        # The file is opened in the statement worker: the first call that needs it says why not.
        for first_use in ("ready", "load_catalog"):
            with Database.open(specs, Settings()) as db, pytest.raises(TargetError) as exc:
                getattr(db, first_use)()
            message = str(exc.value)
            assert f"PID {pid}" in message and "locked by another program" in message, message
            assert "python" in message.lower()  # the holder's name, from /proc
            assert "Close that program" in message and "IO Error" not in message
    result = CliRunner().invoke(main, ["sql", "select 1", str(path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.startswith(f"astro: {path}: locked by another program")


def test_lock_message_without_proc(tmp_path: Path) -> None:
    raw = (
        'IO Error: Could not set lock on file "/d/x.duckdb": Conflicting lock is held in '
        "/usr/bin/duckdb (PID 4242). See also https://duckdb.org/docs"
    )
    message = lock_message("x.duckdb", raw, proc=tmp_path)
    assert message is not None and "duckdb (PID 4242)" in message
    assert lock_message("x.duckdb", "IO Error: disk full", proc=tmp_path) is None


def test_a_holders_command_line_is_one_line_in_the_lock_message(tmp_path: Path) -> None:
    """A holder started as `python -c "…"` has newlines in its command line; the message keeps
    its two lines (what holds it, what to do) all the same."""
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "cmdline").write_bytes(b"/usr/bin/python3\0-c\0import duckdb\n\tcon = 1\r\n\0")
    raw = 'IO Error: Could not set lock on file "/d/x.duckdb": Conflicting lock is held in /x (PID 4242).'
    message = lock_message("x.duckdb", raw, proc=tmp_path)
    assert message is not None
    first, second = message.split("\n")
    assert first == (
        "x.duckdb: locked by another program, python3 -c import duckdb con = 1 (PID 4242), "
        "which has it open for writing."
    )
    assert second.startswith("Close that program")


# ---------------------------------------------------------------- opening data


def test_a_glob_over_different_tables_becomes_one_table_per_file(tmp_path: Path) -> None:
    _write(tmp_path / "csv" / "airlines.csv", "carrier,name\nUA,United\nAA,American\n")
    _write(tmp_path / "csv" / "planes.csv", "tailnum,year,seats\nN1,2004,55\n")
    with Database.open([str(tmp_path / "csv" / "*.csv")], Settings()) as db:
        tables = {t.name: t for s in db.load_catalog().schemas for t in s.tables}
        assert set(tables) == {"airlines", "planes"}
        assert tables["airlines"].row_count == 2 and tables["planes"].row_count == 1
        assert db.execute("select seats from planes").table.column("seats").to_pylist() == [55]


def test_a_glob_over_the_same_columns_is_one_table_by_name(tmp_path: Path) -> None:
    _write(tmp_path / "months" / "jan.csv", "carrier,flights\nUA,10\n")
    _write(tmp_path / "months" / "feb.csv", "flights,carrier\n20,AA\n")
    with Database.open([str(tmp_path / "months" / "*.csv")], Settings()) as db:
        [table] = [t for s in db.load_catalog().schemas for t in s.tables]
        assert table.name == "months"
        rows = db.execute("select carrier, flights from months order by flights").rows()
        assert rows == [("UA", 10), ("AA", 20)]


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("notes.txt", "These are my notes.\nCheck the flights data.\nAlso weather.\n", "not delimited"),
        ("empty.csv", "", "the file is empty"),
        ("blank.csv", "\n\n  \n", "the file is empty"),
        ("header.csv", "a,b\n", "no rows"),
        ("empty.json", "", "the file is empty"),
        ("list.json", "[]", "no rows: nothing to open"),
    ],
)
def test_what_is_not_data_is_refused_with_one_line(tmp_path: Path, name: str, text: str, says: str) -> None:
    path = _write(tmp_path / name, text)
    with pytest.raises(TargetError) as exc:
        Database.open([str(path)], Settings())
    assert says in str(exc.value) and str(exc.value).startswith(str(path))
    assert "\n" not in str(exc.value)


def test_a_one_column_csv_is_still_data(tmp_path: Path) -> None:
    path = _write(tmp_path / "ids.csv", "id\n1\n2\n")
    with Database.open([str(path)], Settings()) as db:
        assert db.execute("select count(*) from ids").rows() == [(2,)]


def test_parquet_targets_are_tables_with_row_counts(tmp_path: Path) -> None:
    con = duckdb.connect()
    for i, n in enumerate((3, 4)):
        con.execute(f"COPY (SELECT range AS x FROM range({n})) TO '{tmp_path / f'p{i}.parquet'}'")
    con.close()
    with Database.open([str(tmp_path / "p0.parquet"), str(tmp_path / "p*.parquet")], Settings()) as db:
        tables = {t.name: t for s in db.load_catalog().schemas for t in s.tables}
        catalog = db.load_catalog()
        shell = Shell(load_catalog(db), db)
        assert shell.run("cat p0").exit_code == 0 and shell.run("sample -n 2 p").exit_code == 0
    assert {n: (t.kind, t.row_count) for n, t in tables.items()} == {"p0": ("table", 3), "p": ("table", 7)}
    assert catalog.find_table("p0") is not None and catalog.find_table("main.p") is not None


def test_bare_names_work_in_the_shell_when_there_is_one_schema(flights: Path) -> None:
    with Database.open([str(flights)], Settings()) as db:
        shell = Shell(load_catalog(db), db)
        card = shell.run("cat flights")
        assert card.exit_code == 0 and "dep_delay" in card.output
        sample = shell.run("sample -c carrier flights")
        assert sample.exit_code == 0 and "UA" in sample.output, sample.output
        assert shell.run("head flights.table").exit_code == 0
        assert shell.run("cat nope").exit_code != 0


def test_the_model_is_told_bare_names_work(flights: Path, sample_db: Database) -> None:
    with Database.open([str(flights)], Settings()) as db:
        prompt = system_prompt(db.load_catalog(), db_label="flights.csv", notes="", dialect="DuckDB")
    assert "bare names work" in prompt and "`cat flights`" in prompt and "Tables: flights." in prompt
    several = system_prompt(sample_db.load_catalog(), db_label="sample", notes="", dialect="DuckDB")
    assert "bare names work" not in several


# ---------------------------------------------------------------- numbers


@pytest.fixture
def noisy(tmp_path: Path) -> Path:
    path = tmp_path / "noisy.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE m AS SELECT range AS order_id, 1994 + range % 3 AS year, "
        "(10.35702 + range * 0.0)::DOUBLE * 3 / 3 + 0.1 + 0.2 - 0.3 AS temp, range * 1234567 AS big "
        "FROM range(2500)"
    )
    con.execute("CREATE TABLE 航空会社 (名前 VARCHAR, n INTEGER)")
    con.execute("INSERT INTO 航空会社 VALUES ('日本航空', 1), ('ANA', 22)")
    con.close()
    return path


def test_numbers_read_without_noise_and_with_separators(noisy: Path) -> None:
    from astro_tui.data.text_table import format_table
    from astro_tui.display import groups_digits, number_text

    assert number_text(10.357019999999999) == "10.35702"
    assert number_text(0.1 + 0.2) == "0.3" and number_text(1234567.0) == "1,234,567.0"
    assert number_text(1234567) == "1,234,567" and number_text(1234567, grouping=False) == "1234567"

    assert [groups_digits(n) for n in ("order_id", "orderId", "fiscal_year", "zip", "amount_paid", "n")] == [
        False,
        False,
        False,
        False,
        True,
        True,
    ]
    with Database.open([str(noisy)], Settings()) as db:
        result = db.execute("select order_id, year, temp, big from m where order_id = 2000")
        text = format_table(result)
        assert "10.35702" in text and "10.357019999" not in text
        assert "2,469,134,000" in text  # big is grouped
        assert " 2000 " in f" {text.split()[8]} " and "1996" in text  # ids and years are not
        shell = Shell(load_catalog(db), db)
        sample = shell.run("sample -c temp m").output
        assert sample.strip() == "2,500  10.35702", sample
        rows = shell.run("sample -n 3 m").output
        assert "10.35702" in rows and "999999" not in rows


def test_text_tables_align_wide_characters(noisy: Path) -> None:
    from rich.cells import cell_len

    from astro_tui.data.text_table import format_table

    with Database.open([str(noisy)], Settings()) as db:
        lines = format_table(db.execute("select 名前, n from 航空会社 order by n")).splitlines()
        shell_lines = Shell(load_catalog(db), db).run("sample 航空会社").output.splitlines()
    table = lines[:-1]
    assert len({cell_len(line) for line in table}) == 1, table  # right-aligned n: all rows end together
    rows = [line for line in shell_lines if " | " in line]
    dashes = next(line for line in shell_lines if "-+-" in line)
    assert len(rows) == 3 and {cell_len(r.split(" | ")[0]) for r in rows} == {len(dashes.split("-+-")[0])}


def test_truncation_gives_the_total_when_it_is_a_plain_scan(noisy: Path, tmp_path: Path) -> None:
    con = duckdb.connect()
    con.execute(f"COPY (SELECT range AS x FROM range(3000)) TO '{tmp_path / 'p.parquet'}'")
    con.close()
    with Database.open([str(noisy)], Settings()) as db:
        scan = db.execute("select order_id, temp from m order by temp", row_cap=100)
        assert scan.truncated and scan.total_rows == 2500
        assert scan.count_text() == "100 of 2,500 rows"
        others = (
            "select * from m where year > 1994",
            "select a.* from m a, m b",
            "select order_id + 1 from m",
        )
        for sql in others:
            other = db.execute(sql, row_cap=100)
            assert other.truncated and other.total_rows is None
            assert other.count_text() == "100 of more than 100 rows"
    with Database.open([str(tmp_path / "p.parquet")], Settings()) as db:
        assert db.execute("select * from p", row_cap=10).count_text() == "10 of 3,000 rows"


# ---------------------------------------------------------------- charts


def _result(sql: str):  # type: ignore[no-untyped-def]
    from astro_tui.data.results import QueryResult

    con = duckdb.connect()
    try:
        return QueryResult(sql, con.sql(sql).to_arrow_table(), False, 1.0)
    finally:
        con.close()


def _chart(sql: str, kind: str, x: str, y: tuple[str, ...] = (), width: int = 80) -> str:
    from astro_tui.agent.chart_draw import render_chart_text
    from astro_tui.agent.charts import build_chart_spec

    return render_chart_text(build_chart_spec(_result(sql), kind, x, list(y), "t"), width=width, height=12)  # type: ignore[arg-type]


def test_the_app_and_ask_share_one_chart_pipeline() -> None:
    from astro_tui.agent import chart_draw, charts
    from astro_tui.ui import charting
    from astro_tui.ui.widgets import chart_plot

    assert charting.prepare is charts.prepare and chart_plot.draw is chart_draw.draw
    assert charting.default_choice is charts.default_choice


def test_nulls_are_left_out_and_counted_not_drawn_as_zero() -> None:
    from astro_tui.agent.charts import ChartChoice, prepare

    table = _result("select * from (values ('UA', 5), ('AA', NULL), ('DL', 3)) t(c, n)").table
    series = prepare(table, ChartChoice("bar", "c", ["n"]))
    assert series.tick_labels == ["UA", "DL"] and series.ys == {"n": [5.0, 3.0]}
    assert "1 row with NULL left out" in series.note
    text = _chart("select * from (values ('UA', 5), ('AA', NULL), ('DL', 3)) t(c, n)", "bar", "c", ("n",))
    assert "1 row with NULL left out" in text and "AA" not in text


def test_a_histogram_of_one_value_is_refused() -> None:
    from astro_tui.agent.charts import ChartChoice, ChartError, build_chart_spec, default_choice, prepare

    scalar = _result("select 42 as answer")
    with pytest.raises(ChartError, match="one bar"):
        build_chart_spec(scalar, "hist", "answer", [], "t")
    choice = default_choice(scalar.table)
    assert choice is not None
    with pytest.raises(ValueError, match="nothing to chart"):
        prepare(scalar.table, choice)
    with pytest.raises(ValueError, match="one value"):
        prepare(_result("select 5 as v from range(10)").table, ChartChoice("hist", None, ["v"]))


@pytest.mark.parametrize("kind", ["line", "scatter"])
def test_one_x_value_is_drawn_not_a_crash(kind: str) -> None:
    """plotext divides by the x axis' span; a result with one x value (or one row) drew
    nothing but a ZeroDivisionError, raised while the app painted the chart tab."""
    for sql in ("select 1 as x, 5 as y", "select 1 as x, range as y from range(3)"):
        text = _chart(sql, kind, "x", ("y",))
        assert text.splitlines()[-2].split() == ["1"], text


def test_histograms_use_sqrt_n_bins_and_start_at_the_data() -> None:
    from astro_tui.agent.charts import ChartChoice, prepare

    series = prepare(_result("select range + 10 as v from range(91)").table, ChartChoice("hist", None, ["v"]))
    assert series.edges is not None and len(series.edges) == 10 + 1  # ceil(sqrt(91)) bins
    assert series.edges[0] == 10 and series.edges[-1] == 100 and sum(series.ys["v"]) == 91
    axis = _chart("select range + 10 as v from range(91)", "hist", "v").splitlines()[-2]
    assert axis.split()[0] == "10" and axis.split()[-1] == "100", axis


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_bars_never_touch(width: int) -> None:
    import re

    for n in range(2, (width - 10) // 3 + 1):
        sql = f"select 'c' || range as c, 5 as v from range({n})"
        text = _chart(sql, "bar", "c", ("v",), width=width)
        bottom = next(line for line in reversed(text.splitlines()) if "█" in line)
        assert len(re.findall("█+", bottom)) == n, (n, width, bottom)


def test_year_axes_read_as_years() -> None:
    text = _chart("select range + 2013 as year, range % 3 as n from range(6)", "line", "year", ("n",))
    axis = text.splitlines()[-2]
    assert "2013" in axis and "2013.75" not in axis and "2,013" not in axis, axis


def test_listings_and_cards_align_wide_names(noisy: Path) -> None:
    from rich.cells import cell_len

    with Database.open([str(noisy)], Settings()) as db:
        shell = Shell(load_catalog(db), db)
        listing = shell.run("ls -l main").output.splitlines()
        card = shell.run("cat 航空会社").output.splitlines()
    kinds = [cell_len(line[: line.rindex("table  ")]) for line in listing if "table  " in line]
    assert len(kinds) == 2 and len(set(kinds)) == 1, listing
    columns = [line for line in card if line.startswith("  ") and ("VARCHAR" in line or "INTEGER" in line)]
    types = [cell_len(line[: line.index("VARCHAR" if "VARCHAR" in line else "INTEGER")]) for line in columns]
    assert len(types) == 2 and len(set(types)) == 1, card
