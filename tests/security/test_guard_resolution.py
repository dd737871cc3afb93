"""A hostile database file (issue 21, class 5): the name in the text is not the function that runs.

`tests/data/hostile_duckdb_file.json` holds a file's definitions — macros under
built-in names in a schema off the search path (the outside test's
`s.duckdb_settings()`) and in `main` (where DuckDB runs them in the built-ins'
place: `sum`, `count_star`, `range`, the `list_aggr` that `list_sum` calls),
views, chains of views and table macros over settings, paths, files, logs and
SQL in strings, generated columns and hidden macro defaults that read settings,
names in odd Unicode — and the statements that reach them. Every statement is
refused through the engine the person and the model use, nothing the worker
could show of the machine (the database's path, its private directories, the
home directory) appears in any answer, and the file is unchanged. The file's
clean objects still work, with the right values.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from astro_tui.cli import main
from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.duckdb import guard
from astro_tui.data.engines.duckdb.resolved import FileDefinitions
from astro_tui.data.errors import DataError, GuardError
from tests.support import ROOT
from tests.support.hostile_file import ATTACKS, HOSTILE, build_hostile
from tests.support.legit_duckdb import LEGIT
from tests.support.sql_corpus import snapshot

KINDS = {"named_elsewhere", "shadow", "view", "generated", "hidden_default", "table_macro", "odd_name"}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_hostile(tmp_path_factory.mktemp("hostile"))


def secrets_of(db: Database, path: Path) -> list[str]:
    """What must never reach an answer: the database's path and folder, the worker's private
    directories, the home directory, and the user's own secret and extension folders."""
    home = str(Path.home())
    values = [str(path), str(path.parent), str(db.engine._spill_dir), home, "stored_secrets", "astro-spill-"]
    values += ["astro-results-", os.path.join(home, ".duckdb")]
    return values


def test_the_corpus_is_large_and_covers_every_kind() -> None:
    assert len(ATTACKS) >= 100
    assert {a["kind"] for a in ATTACKS} == KINDS
    assert len({a["sql"] for a in ATTACKS}) == len(ATTACKS), "duplicate statements"


def test_every_attack_on_a_hostile_file_is_refused_and_shows_nothing(hostile: Path) -> None:
    before = snapshot(hostile.parent)
    ran, leaked = [], []
    with Database.open([str(hostile)], Settings()) as db:
        hidden = secrets_of(db, hostile)
        for attack in ATTACKS:
            try:
                result = db.execute(attack["sql"], timeout=30)
            except DataError as exc:
                message = str(exc)
                if not isinstance(exc, GuardError) or not message.startswith("refused: "):
                    ran.append((attack["sql"], type(exc).__name__, message))
                leaked += [(attack["sql"], h) for h in hidden if h in message]
                continue
            ran.append((attack["sql"], "ran", str(result.rows(5))))
        for legit in HOSTILE["legitimate"]:  # the same worker still answers, and rightly
            rows = db.execute(legit["sql"]).rows()
            assert [[_plain(v) for v in row] for row in rows] == legit["rows"], legit["sql"]
    assert ran == []
    assert leaked == []
    assert snapshot(hostile.parent) == before


def _plain(value: object) -> object:
    return value if isinstance(value, int | str) or value is None else str(value)


def test_astro_sql_refuses_each_kind_in_one_line_showing_nothing(hostile: Path) -> None:
    """The command line, one attack of each kind (each a new process and worker)."""
    runner = CliRunner()
    with Database.open([str(hostile)], Settings()) as db:
        hidden = secrets_of(db, hostile)
    first = {a["kind"]: a["sql"] for a in reversed(ATTACKS)}
    for kind, sql in sorted(first.items()):
        result = runner.invoke(main, ["sql", sql, str(hostile)])
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 1 and result.stdout == "", (kind, result.stdout)
        assert len(lines) == 1 and lines[0].removeprefix("astro: ").startswith("refused: "), (kind, lines)
        assert not [h for h in hidden if h in result.stderr], (kind, result.stderr)


def test_the_refusals_name_what_the_statement_reached(hostile: Path) -> None:
    with Database.open([str(hostile)], Settings()) as db:
        for sql, reason in (
            ("SELECT * FROM v_settings", "view hostile.main.v_settings"),
            ("SELECT * FROM v_chain2", "duckdb_settings()"),
            ("SELECT * FROM gen", "generated columns of table hostile.main.gen"),
            ("SELECT dflt2('a')", "declares 2 parameters; give all of them"),
            ("SELECT count(*) FROM orders", "under the name of a DuckDB built-in"),
            ("SELECT * FROM duckdb_settings()", "duckdb_settings()"),
        ):
            with pytest.raises(GuardError, match="refused: ") as refused:
                db.execute(sql)
            assert reason in str(refused.value), (sql, str(refused.value))
        assert db.execute("SELECT dflt2('a', 'b') AS ab").rows() == [("ab",)]  # every argument given


def test_a_macro_named_like_a_built_in_in_another_schema_changes_nothing(tmp_path: Path) -> None:
    """The outside test's file: `s.duckdb_settings()` made the guard trust the built-in's name."""
    path = tmp_path / "issue.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA s; CREATE MACRO s.duckdb_settings() AS TABLE SELECT 1 AS x")
    con.execute("CREATE MACRO s.destroy_external_resource(a, b) AS TABLE SELECT 1 AS x")
    con.execute("CREATE TABLE t AS SELECT 1 AS one")
    con.close()
    with Database.open([str(path)], Settings()) as db:
        for sql in (
            "SELECT name, value FROM duckdb_settings()",
            "SELECT * FROM destroy_external_resource('query', 'SELECT 42')",
        ):
            with pytest.raises(GuardError, match="refused: "):
                db.execute(sql)
        assert db.execute("SELECT sum(one) FROM t").rows() == [(1,)]  # nothing else is affected


def test_the_legitimate_corpus_passes_the_plan_judge(tpch_db: Path) -> None:
    """Every legitimate statement, made to go through binding and the plan walk (a name of the
    file's in each, or not): none is refused by it."""
    con = duckdb.connect(str(tpch_db), read_only=True, config={"enable_external_access": False})
    try:
        definitions = FileDefinitions.of(con)
        refused = []
        for name, sql in LEGIT.items():
            guard.check(sql, database=definitions)
            subject = guard.statement_of(sql)[1]
            try:
                definitions._check_plan(subject, guard.Rules(resolving=True))
            except GuardError as exc:
                refused.append((name, str(exc)))
    finally:
        con.close()
    assert refused == [], refused


def test_a_file_shadowing_built_ins_elsewhere_still_runs_the_legitimate_corpus(
    tpch_db: Path,
    tmp_path: Path,
) -> None:
    """A macro under a built-in's name in a schema DuckDB does not search makes every statement
    be bound twice (as DuckDB will, and built-ins first) and compared: the legitimate corpus
    binds alike both ways and runs, with the same answers."""
    shadowed = tmp_path / "tpch_shadowed.duckdb"
    shadowed.write_bytes(tpch_db.read_bytes())
    con = duckdb.connect(str(shadowed))
    con.execute("CREATE SCHEMA elsewhere; CREATE MACRO elsewhere.sum(x) AS 42")
    con.execute("CREATE MACRO elsewhere.count_star() AS 43")
    con.close()
    with (
        Database.open([str(tpch_db)], Settings()) as plain,
        Database.open([str(shadowed)], Settings()) as other,
    ):
        for name, sql in LEGIT.items():
            expected = plain.execute(sql, timeout=60)
            got = other.execute(sql, timeout=60)
            assert (got.columns, got.row_count) == (expected.columns, expected.row_count), name
            arbitrary = re.search(r"\bLIMIT\b", sql, re.I) and not re.search(r"\bORDER BY\b", sql, re.I)
            if not arbitrary and not name.startswith(("explain", "summarize")):  # plans name their file
                assert sorted(map(repr, got.rows())) == sorted(map(repr, expected.rows())), name


def test_security_md_gives_this_corpus_as_it_is() -> None:
    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    section = text.split("\n## DuckDB\n", 1)[1].split("\n## ", 1)[0]
    order = ["named_elsewhere", "shadow", "view", "generated", "hidden_default", "table_macro", "odd_name"]
    counts = ", ".join(str(sum(a["kind"] == k for a in ATTACKS)) for k in order)
    assert f"| {len(ATTACKS)}, all refused, in {len(KINDS)} kinds |" in section
    assert f"| {counts} |" in section
    assert f"| {len(HOSTILE['legitimate'])} / {len(HOSTILE['legitimate'])} |" in section
    assert f"| 0 / {len(LEGIT)} |" in section


def test_astro_reads_the_file_with_the_built_ins_first(
    hostile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's `main.duckdb_views()` and friends would hide its views from the guard and write
    the catalog the model reads; astro's own queries put DuckDB's built-ins first."""
    monkeypatch.setenv("ASTRO_CACHE_DIR", str(tmp_path / "cache"))
    con = duckdb.connect(str(hostile), read_only=True)
    try:
        truth = {
            str(name)
            for (name,) in con.execute(
                "SELECT table_name FROM system.main.duckdb_tables() "
                "UNION SELECT view_name FROM system.main.duckdb_views() WHERE NOT internal"
            ).fetchall()
        }
    finally:
        con.close()
    with Database.open([str(hostile)], Settings()) as db:
        catalog = db.load_catalog()
        hidden = secrets_of(db, hostile)
    names = {table.name for schema in catalog.schemas for table in schema.tables}
    assert names == truth and "v_unlisted" in names
    assert not [h for h in hidden if h in repr(catalog)]


def test_the_guard_parses_on_the_open_file_as_on_an_empty_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the file is open, the guard parses on its connection and learns DuckDB's built-ins
    from the same listing as the file's macros (issue 27): a file defining macros named like
    the operators and the very functions those calls use changes neither the list of plain
    built-ins nor a verdict."""
    path = tmp_path / "operators.duckdb"
    con = duckdb.connect(str(path))
    for name in ("=", "and", "lower", "json_serialize_sql", "internal"):
        con.execute(f'CREATE MACRO "{name}"(a, b) AS true')
    con.execute("CREATE TABLE t AS SELECT 1 AS one")
    con.close()
    monkeypatch.setattr(guard, "_plain", None)
    empty = guard._plain_functions()
    monkeypatch.setattr(guard, "_plain", None)
    con = duckdb.connect(str(path), read_only=True, config={"enable_external_access": False})
    try:
        definitions = FileDefinitions.of(con)
        assert guard.check("SELECT count(*) FROM t", database=definitions) == "SELECT count(*) FROM t"
        assert guard._plain == empty
        assert {"=", "and", "lower", "json_serialize_sql", "internal"} <= set(definitions._macros)
        for sql in ("SELECT * FROM read_text('/etc/hostname')", "SELECT lower('A', 'b')"):
            with pytest.raises(GuardError, match="refused: "):
                guard.check(sql, database=definitions)
    finally:
        con.close()
