"""What an outside attack on the DuckDB guard found (after issue 21), each pinned through the
public paths: `Database.execute`, the engine's first pass and `astro sql`.

- `SHOW temp_directory` (any spelling, in a subquery, a CTE, a view or a table macro of the
  file) showed a setting: astro's private directories. No listing names every setting DuckDB
  would show, so the bare `SHOW name` is refused and DESCRIBE offered.
- The first pass in astro's process was bounded by length, not by cost: DuckDB's transformer
  copies a CASE's operand into every WHEN, so 742 characters of nested CASE took 51 s and
  1.6 GB in astro's process at `--timeout 1`; grouping sets and many statements alike.
- A truncated scan of the file's table `pg_class` was counted with the built-ins first, so
  5,000 rows were reported as 49 (the built-in view's rows).
- A Parquet or CSV target's path is in the catalog the model reads (a known gap).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from astro_tui.cli import main
from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.errors import DataError, GuardError, QueryTimeout
from tests.support.sql_corpus import build_watched

SHOWN_SETTINGS = [
    "SHOW temp_directory",
    "SHOW secret_directory",
    'SHOW "Extension_Directory"',
    "SHOW extension_directory",  # in no listing of settings, yet shown
    "SHOW home_directory",
    "SELECT * FROM (SHOW temp_directory)",
    "WITH x AS (SHOW secret_directory) SELECT * FROM x",
    "DESCRIBE SHOW temp_directory",
    "SELECT 1 UNION ALL SELECT * FROM (SHOW temp_directory)",
]


def _nested_case(depth: int) -> str:
    """Each level's operand is copied into both of its WHENs while DuckDB parses: 2**depth."""
    return "SELECT " + "CASE " * depth + "1" + " WHEN 1 THEN 1 WHEN 2 THEN 2 END" * depth


_CUBE = "SELECT 1 GROUP BY CUBE(" + ", ".join(f"c{i}" for i in range(15)) + ")"
EXPANDING = {
    "nested CASE, 2**40 copies": _nested_case(40),
    "24 statements of 32,768 grouping sets": ";".join([_CUBE] * 24),
    "grouping sets of 120 columns each": "SELECT 1 FROM t GROUP BY "
    + ", ".join(f"x{i}" for i in range(120))
    + ", CUBE("
    + ", ".join(f"c{i}" for i in range(15))
    + ")",
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_watched(tmp_path_factory.mktemp("redteam"))


def test_show_of_a_setting_is_refused_and_describe_still_describes(shop: Path) -> None:
    with Database.open([str(shop)], Settings()) as db:
        private = str(db.engine._spill_dir)
        for sql in SHOWN_SETTINGS:
            with pytest.raises(GuardError, match=r"^refused: ") as refused:
                db.execute(sql)
            assert private not in str(refused.value), sql
        assert "DESCRIBE" in str(refused.value)
        described = db.execute("DESCRIBE sales.orders").rows()
        assert [row[0] for row in described] == ["id", "region", "amount"]
        assert db.execute("SHOW sales.orders").rows() == described  # qualified: a table only
        assert "orders" in {row[2] for row in db.execute("SHOW ALL TABLES").rows()}


def test_the_engine_alone_shows_the_settings_the_guard_refuses(shop: Path) -> None:
    """Why the refusal matters: with the guard bypassed, DuckDB shows the private directory."""
    with Database.open([str(shop)], Settings()) as db:
        shown = db.engine.run("SHOW temp_directory", cap=1, timeout=10, cancel=None, guarded=False)
        assert shown.rows() == [(str(db.engine._spill_dir),)]


def test_astro_sql_refuses_a_setting_in_one_line(shop: Path) -> None:
    result = CliRunner().invoke(main, ["sql", "SHOW secret_directory", str(shop)])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip().startswith("astro: refused: SHOW secret_directory may show a setting")
    assert "astro-spill-" not in result.stderr


@pytest.mark.parametrize("name", sorted(EXPANDING))
def test_the_first_pass_never_parses_what_duckdb_multiplies(
    shop: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In astro's process, with no worker ready, these are handed on unparsed (any of them
    parsed here would take minutes and gigabytes, outside every limit); a short plain
    statement is still refused here, without starting a worker."""
    parsed: list[str] = []
    real = duckdb.extract_statements

    def watched(text: str) -> object:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(duckdb, "extract_statements", watched)
    with Database.open([str(shop)], Settings()) as db:
        sql = EXPANDING[name]
        assert db.engine.check(sql) == sql
        assert parsed == []
        with pytest.raises(GuardError, match="read_text"):
            db.engine.check("SELECT * FROM read_text('/etc/hostname')")
        assert parsed and db.engine._pool.pids() == []


def test_the_worker_bounds_what_the_first_pass_hands_on(shop: Path) -> None:
    """The parse that would run away runs under the statement's limits, in the worker."""
    with Database.open([str(shop)], Settings()) as db:
        with pytest.raises(QueryTimeout):
            db.execute(_nested_case(26), timeout=1)
        with pytest.raises(GuardError, match="exactly one statement"):
            db.execute(";".join(["SELECT 1 GROUP BY CUBE(a, b)"] * 3))
        assert db.execute("SELECT CASE 1 WHEN 1 THEN 'one' END AS x").rows() == [("one",)]


def test_a_truncated_scan_counts_the_table_the_statement_read(tmp_path: Path) -> None:
    path = tmp_path / "named.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE pg_class AS SELECT range AS x FROM range(5000)")
    con.execute("CREATE TABLE duckdb_columns AS SELECT range AS x FROM range(7000)")
    con.close()
    with Database.open([str(path)], Settings()) as db:
        for sql, rows in (
            ("SELECT * FROM pg_class", 5000),
            ("SELECT x FROM duckdb_columns", 7000),
            ("SELECT * FROM main.pg_class", 5000),
        ):
            result = db.execute(sql, row_cap=10)
            assert (result.row_count, result.truncated, result.total_rows) == (10, True, rows), sql


@pytest.mark.xfail(
    strict=True,
    reason="a Parquet target is a view over its absolute path and a CSV target's table keeps "
    "`from <path>` as its comment; both are in the catalog (duckdb_views(), duckdb_tables()) "
    "the model may read (SECURITY.md, known gaps)",
)
def test_a_file_targets_path_is_not_shown(tmp_path: Path) -> None:
    data = tmp_path / "private-folder"
    data.mkdir()
    con = duckdb.connect()
    con.execute(f"COPY (SELECT 1 AS a) TO '{data / 'p.parquet'}'")
    con.close()
    (data / "c.csv").write_text("x,y\n1,2\n")
    shown: list[str] = []
    with Database.open([str(data / "p.parquet"), str(data / "c.csv")], Settings()) as db:
        for sql in (
            "SELECT sql FROM duckdb_views() WHERE NOT internal",
            "SELECT sql FROM sqlite_master",
            "SELECT view_definition FROM information_schema.views",
            "SELECT comment FROM duckdb_tables()",
        ):
            try:
                shown += [str(row) for row in db.execute(sql).rows()]
            except DataError:
                continue
    assert not [row for row in shown if str(data) in row]
