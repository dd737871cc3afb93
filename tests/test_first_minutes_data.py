"""Issue 12, data side: what a new user met in their first ten minutes with files and errors.

Every test opens real files with real DuckDB, the way `astro FILE…` does.
"""

from __future__ import annotations

import subprocess
import sys
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
            assert str(exc.value).startswith("syntax error at or near"), str(exc.value)
    with pytest.raises(GuardError) as pg:
        pg_guard.check("selec 1")
    assert str(pg.value).startswith("syntax error at or near") and str(pg.value).count("syntax error") == 1


@pytest.fixture
def locked_db(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    path = tmp_path / "busy.duckdb"
    duckdb.connect(str(path)).execute("CREATE TABLE t AS SELECT 1 AS a").close()
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb; c = duckdb.connect({str(path)!r}); print('ok'); input()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        yield path, holder.pid
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_locked_file_says_who_holds_it_and_what_to_do(locked_db: tuple[Path, int], flights: Path) -> None:
    path, pid = locked_db
    for specs in ([str(path)], [str(path), str(flights)]):
        with pytest.raises(TargetError) as exc:
            Database.open(specs, Settings())
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
    assert {n: (t.kind, t.row_count) for n, t in tables.items()} == {"p0": ("table", 3), "p": ("table", 7)}


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
        prompt = system_prompt(db.load_catalog(), db_label="flights.csv", notes="")
    assert "bare names work" in prompt and "`cat flights`" in prompt and "Tables: flights." in prompt
    several = system_prompt(sample_db.load_catalog(), db_label="sample", notes="")
    assert "bare names work" not in several
