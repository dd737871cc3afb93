"""Scopes on a small shop: the rules, what each front end shows under them, and the comparisons the scope
tests make on every engine.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb

from astro_tui.errors import AstroError
from astro_tui.mcp.server import AstroServer
from astro_tui.session import Session
from tests.support.mcp import call, text

REDTEAM = [
    # a hidden schema's view, table macro, macro and type: no hidden scan in the plan
    "SELECT * FROM sec.vk",
    "SELECT k FROM sec.vk",
    'SELECT k FROM "SEC"."VK"',
    "SELECT * FROM sec.tk()",
    "SELECT sec.k()",
    "SELECT sec.mm(1, 2)",
    "SELECT enum_range(NULL::sec.lvl2)",
    "SELECT 'TOPSECRETE2'::sec.lvl2",
    # visible objects that reach them
    "SELECT kk()",
    "SELECT * FROM vk2",
    "SELECT k FROM vk3",
    "SELECT * FROM tk2()",
    "SELECT b FROM g",
    "SELECT g FROM g",
    "SELECT * FROM g",
    "SELECT a FROM g",
    "SELECT count(*) FROM (SELECT * FROM vk2)",
    "SELECT * FROM x.v9",  # bound in its own schema: `vk` is x.vk there
    "WITH x AS (SELECT * FROM vk3) SELECT * FROM x",
    # a hidden column's named ENUM: its labels are its values' domain
    "SELECT enum_range(NULL::lvl)",
    "SELECT enum_first(NULL::lvl)",
    "SELECT 'TOPSECRETLEVEL'::lvl",
    "SELECT typeof(NULL::lvl)",
    "SELECT CAST(NULL AS lvl)::VARCHAR",
    "SELECT level FROM hr.levels",
    "SELECT * FROM hr.levels",
    "SELECT enum_range(level) FROM hr.levels",
    # `s.t.*`: the table is hidden whole, its row count too
    "SELECT count(*) FROM hr.allhidden",
    "SELECT x FROM hr.allhidden",
    "SELECT rowid FROM hr.allhidden",
    "SELECT 1 FROM hr.allhidden LIMIT 1",
    # a hidden column of a view: the view is hidden whole
    "SELECT full_name FROM people_names",
    "SELECT id FROM people_names",
    "SELECT * FROM people_names",
    # refusals that would name a hidden schema's object, or tell what its body calls
    "SELECT * FROM sec.badview",
    "SELECT sec.badm()",
    "SELECT mm(1)",
    "SELECT * FROM tk()",
    "SELECT currval('sec.sq')",
    "SELECT * FROM pragma_table_info('hr.allhidden')",
    # the hidden-name oracle of a `*`
    "SELECT *, salary FROM hr.people",
    "SELECT *, bonus FROM hr.people",
    "SELECT * FROM hr.people, hr.reviews",
    # patterns written in another case
    'SELECT "Salary" FROM "HR"."People"',
]


def redteam_figures() -> dict[str, str]:
    return {"Attempts from a crafted file (views, macros, types, comments, patterns)": str(len(REDTEAM))}


HIDE = ("hr.people.salary", "hr.reviews")


def build(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute(
        """
        CREATE SCHEMA hr;
        CREATE TABLE hr.people(id INT PRIMARY KEY, full_name TEXT, dept TEXT, salary INT,
                               bonus INT GENERATED ALWAYS AS (salary // 10));
        INSERT INTO hr.people VALUES (1, 'Ada Lovelace', 'eng', 987654), (2, 'Alan Turing', 'eng', 876543);
        CREATE TABLE hr.reviews(person_id INT, note TEXT);
        INSERT INTO hr.reviews VALUES (1, 'TOPSECRETNOTE');
        CREATE TABLE orders(id INT, person_id INT, amount INT);
        INSERT INTO orders VALUES (10, 1, 5), (11, 2, 7);
        CREATE VIEW pay AS SELECT full_name, salary FROM hr.people;
        CREATE VIEW names AS SELECT id, full_name FROM hr.people;
        """
    )
    con.close()
    return path


def outcome(session: Session, sql: str) -> tuple[bool, str]:
    """(refused, everything shown): the error's line, or every cell and column name."""
    try:
        result = session.sql(sql).result
    except AstroError as exc:
        return True, str(exc)
    shown = " ".join(result.table.column_names)
    for column in result.table.columns:
        shown += " " + " ".join(str(v) for v in column.to_pylist())
    return False, shown


def assert_same_refusal(session: Session, hidden: str, missing: str) -> None:
    shown = outcome(session, hidden)
    assert shown[0] and shown == outcome(session, missing)


def assert_rows(session: Session, expected: dict[str, list[tuple[object, ...]]]) -> None:
    for sql, rows in expected.items():
        result = session.sql(sql).result
        assert [tuple(r.values()) for r in result.table.to_pylist()] == rows, sql


async def mcp_shows_nothing_hidden(
    scoped: Session, leaked: Callable[[str, str], list[str]], whole_row: str
) -> None:
    """The MCP tools, asked for the hidden column, table and values, show none of them."""
    server = AstroServer(scoped)
    try:
        calls = [
            ("shell", {"command": "grep -ri salary /"}),
            (
                "search_metadata",
                {"queries": ["salary pay review note"], "keywords": ["TOPSECRETNOTE", "987654"]},
            ),
            ("show_table", {"table_names": ["hr.people"]}),
            ("run_sql", {"sql": "SELECT salary FROM hr.people"}),
            ("run_sql", {"sql": whole_row}),
            ("run_sql", {"sql": "SELECT * FROM information_schema.columns"}),
        ]
        for name, arguments in calls:
            result = await call(server, name, arguments)
            shown = text(result) + str(result.structured_content or "")
            assert leaked(shown, str(arguments)) == [], (name, shown)
        shown = text(await call(server, "show_table", {"table_names": ["hr.people"]}))
        assert "Ada Lovelace" in shown
    finally:
        server.close()


def astro_sql_scoped(target: str, tmp_path: Path, whole_row: str) -> list[subprocess.CompletedProcess[str]]:
    """`astro sql --hide hr.people.salary`: a whole row of `hr.people`, then a visible column."""
    env = {"ASTRO_CONFIG_DIR": str(tmp_path), "ASTRO_CACHE_DIR": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"}
    return [
        subprocess.run(
            [sys.executable, "-m", "astro_tui.cli", "sql", sql, target, "--hide", "hr.people.salary"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        for sql in (whole_row, "SELECT full_name FROM hr.people ORDER BY id")
    ]
