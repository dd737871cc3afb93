"""Scopes attacked from a hostile database file (issue 26's red team, on DuckDB).

The file of `test_scopes.py`, plus what its author could add to carry a hidden value out
where DuckDB's bound plan does not name it: a hidden schema holding a view and a table
macro of constants, a macro, an ENUM type; visible views, macros and a generated column
that reach them; a hidden column of a named ENUM type; a table hidden by `s.t.*`; comments
on visible objects naming hidden ones; a schema named like a pattern (`"hr.people"`). Each
attempt is refused or shows none of the hidden values; a hidden name and a missing one get
one answer; what these objects do not touch still answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from astro_tui.agent.prompts import system_prompt
from astro_tui.config import Settings
from astro_tui.data.scope import Scope
from astro_tui.session import Session
from tests.support.scopes import HIDE, REDTEAM, assert_rows, assert_same_refusal, build, outcome

HIDE_MORE = (*HIDE, "hr.levels.level", "sec", "hr.allhidden.*", "main.people_names.full_name", "x.vk")
SECRETS = (
    "TOPSECRETX",
    "TOPSECRETV",
    "TOPSECRETK",
    "4242421",
    "TOPSECRETLEVEL",
    "TOPSECRETE2",
    "66601",
    "987654",
    "876543",
)
"""Constants of the hidden schema's view, table macro and macro; the hidden column's ENUM
labels and the hidden schema's ENUM; the hidden table's value; the salaries."""
SECRET_NAMES = ("sec", "allhidden", "lvl2", "vk", "tk", "bonus")
"""(`salary` is also the name of a visible table, `"hr.people".salary`.)"""

CRAFTED = """
CREATE SCHEMA sec;
CREATE VIEW sec.vk AS SELECT 'TOPSECRETV' AS k;
CREATE MACRO sec.tk() AS TABLE SELECT 'TOPSECRETK' AS k;
CREATE MACRO sec.k() AS 4242421;
CREATE MACRO sec.mm(a, b := 1) AS a + b;
CREATE SEQUENCE sec.sq;
CREATE VIEW sec.badview AS SELECT current_setting('threads') AS t;
CREATE MACRO sec.badm() AS current_setting('threads');
CREATE TYPE sec.lvl2 AS ENUM ('TOPSECRETE2', 'other');
CREATE MACRO kk() AS sec.k() + 1;
CREATE VIEW vk2 AS SELECT * FROM sec.vk;
CREATE VIEW vk3 AS SELECT k FROM vk2;
CREATE MACRO tk2() AS TABLE SELECT * FROM sec.tk();
CREATE TABLE g(a INT, b INT GENERATED ALWAYS AS (sec.k() + a));
INSERT INTO g VALUES (1);
CREATE TYPE lvl AS ENUM ('TOPSECRETLEVEL', 'intern');
CREATE TABLE hr.levels(id INT, level lvl, code TEXT);
INSERT INTO hr.levels VALUES (1, 'TOPSECRETLEVEL', 'c1');
CREATE TABLE hr.allhidden(x INT);
INSERT INTO hr.allhidden VALUES (66601);
CREATE VIEW people_names AS SELECT id, full_name FROM hr.people;
CREATE VIEW v_ex AS SELECT * EXCLUDE (salary, bonus) FROM hr.people;
CREATE MACRO plus(a, b := 5) AS a + b;
CREATE SCHEMA "hr.people";
CREATE TABLE "hr.people".salary(v INT);
INSERT INTO "hr.people".salary VALUES (5);
CREATE SCHEMA x;
CREATE VIEW x.vk AS SELECT 'TOPSECRETX' AS k;
SET search_path = 'x';
CREATE VIEW x.v9 AS SELECT * FROM vk;
RESET search_path;
CREATE TYPE mood AS ENUM ('ok', 'meh');
CREATE TABLE moods(m mood);
INSERT INTO moods VALUES ('ok');
COMMENT ON TABLE orders IS 'joins hr.people; see salary';
COMMENT ON COLUMN orders.amount IS 'like sec.vk';
COMMENT ON TABLE hr.levels IS 'levels of staff';
"""


PAIRS = [
    ("SELECT mm(1)", "SELECT nosuchmacro(1)"),
    ("SELECT * FROM sec.vk", "SELECT * FROM sec.nosuch"),
    ("SELECT * FROM sec.tk()", "SELECT * FROM sec.nosuch()"),
    ("SELECT sec.k()", "SELECT sec.nosuch()"),
    ("SELECT enum_range(NULL::sec.lvl2)", "SELECT enum_range(NULL::sec.nosuch)"),
    ("SELECT count(*) FROM hr.allhidden", "SELECT count(*) FROM hr.nosuch"),
    ("SELECT *, bonus FROM hr.people", "SELECT *, nosuch FROM hr.people"),
    ("SELECT * FROM pragma_table_info('hr.allhidden')", "SELECT * FROM pragma_table_info('hr.nosuch')"),
    ("PRAGMA table_info('hr.reviews')", "PRAGMA table_info('hr.nosuch')"),
    ("SELECT * FROM pragma_storage_info('sec.vk')", "SELECT * FROM pragma_storage_info('sec.nosuch')"),
    ("SELECT currval('sec.sq')", "SELECT currval('sec.nosuch')"),
    ("SELECT * FROM tk()", "SELECT * FROM nosuch()"),
    ("SELECT * FROM sec.badview", "SELECT * FROM sec.nosuch"),
    ("SELECT 'sec' FROM badview", "SELECT 'sec' FROM nosuchview"),
    ("SELECT sec.badm()", "SELECT sec.nosuch()"),
    ("SELECT * EXCLUDE (salary) FROM hr.people", "SELECT * EXCLUDE (nosuch) FROM hr.people"),
]

STILL_VISIBLE = {
    "SELECT id, code FROM hr.levels": [(1, "c1")],
    "SELECT * FROM v_ex ORDER BY id": [(1, "Ada Lovelace", "eng"), (2, "Alan Turing", "eng")],
    "SELECT plus(1, 2)": [(3,)],
    'SELECT v FROM "hr.people".salary': [(5,)],
    "WITH vk AS (SELECT 1 AS k) SELECT k FROM vk": [(1,)],
    "SELECT count(*) FROM range(3), unnest([1, 2])": [(6,)],
    "SELECT count(*) FROM hr.people": [(2,)],
    "SELECT enum_range(NULL::mood), m FROM moods": [(["ok", "meh"], "ok")],
}


@pytest.fixture(scope="module")
def crafted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    path = build(tmp_path_factory.mktemp("redteam") / "crafted.duckdb")
    con = duckdb.connect(str(path))
    con.execute(CRAFTED)
    con.close()
    settings = Settings(hide=HIDE_MORE)
    with Session([str(path)], settings, state_dir=tmp_path_factory.mktemp("state")) as session:
        yield session.open()


def secrets_in(shown: str, written: str) -> list[str]:
    values = [v for v in SECRETS if v.lower() in shown.lower() and v.lower() not in written.lower()]
    names = [n for n in SECRET_NAMES if re.search(rf"\b{n}\b", shown, re.I) and n not in written.lower()]
    return values + names


def test_every_crafted_attempt_is_refused_naming_nothing_hidden(crafted: Session) -> None:
    found = {}
    for sql in REDTEAM:
        refused, shown = outcome(crafted, sql)
        if not refused or secrets_in(shown, sql):
            found[sql] = shown
    assert found == {}


@pytest.mark.parametrize(("hidden", "missing"), PAIRS)
def test_a_hidden_definition_and_a_missing_one_get_the_same_answer(
    crafted: Session, hidden: str, missing: str
) -> None:
    assert_same_refusal(crafted, hidden, missing)


def test_what_the_crafted_objects_do_not_touch_still_answers(crafted: Session) -> None:
    assert_rows(crafted, STILL_VISIBLE)


def test_the_catalog_drops_what_reaches_hidden_things_and_comments_naming_them(crafted: Session) -> None:
    catalog = crafted.catalog
    assert catalog is not None
    names = {t.sql_name for t in catalog.tables}
    assert {"main.vk2", "main.vk3", "main.g", "hr.allhidden", "main.people_names"}.isdisjoint(names)
    assert {"hr.levels", "main.v_ex", '"hr.people".salary', "main.orders"} <= names
    orders, levels = catalog.find_table("main.orders"), catalog.find_table("hr.levels")
    assert orders is not None and levels is not None
    assert orders.comment is None and all(c.comment is None for c in orders.columns)
    assert levels.comment == "levels of staff" and [c.name for c in levels.columns] == ["id", "code"]
    prompt = system_prompt(catalog, db_label=crafted.label, notes="", dialect="DuckDB")
    for command in ("grep -ri sec /", "grep -ri salary /main", "ls -R /", "grep -ri lvl /"):
        shown = crafted.shell(command).output
        assert secrets_in(shown, "") == [], (command, shown)
    assert secrets_in(prompt, "") == []


def test_patterns_fold_names_and_hide_tables_whole() -> None:
    scope = Scope.parse(["hr.people.*", "Ｓales", "café.t"])
    assert scope.hides_table("HR", "People") and scope.hides_column("hr", "people", "x")
    assert scope.hides_schema("SALES") and scope.hides_table("sales", "t")
    assert scope.hides_table("cafe\u0301", "T")  # composed and decomposed alike
    assert not scope.hides_table("hr", "peoples") and not scope.hides_schema("sale")
    assert scope.mentions_hidden("see the sales schema", "") and not scope.mentions_hidden("salesman", "")
    assert not scope.mentions_hidden("see the sales schema", "SELECT * FROM sales.t")
    dotted = Scope.parse(['"odd.schema"'])
    assert dotted.mentions_hidden('from "odd.schema".t', "") and not dotted.mentions_hidden("odd schema", "")


def test_the_corpus_is_distinct() -> None:
    assert len(set(REDTEAM)) == len(REDTEAM) >= 35


def test_a_whole_hidden_schema_takes_its_tables_and_the_views_over_them(tmp_path: Path) -> None:
    path = build(tmp_path / "staff.duckdb")
    with Session([str(path)], Settings(hide=("HR",)), state_dir=tmp_path / "state") as session:
        session.open()
        catalog = session.catalog
        assert catalog is not None and {t.sql_name for t in catalog.tables} == {"main.orders"}
        for sql in ("SELECT id FROM hr.people", "SELECT * FROM names", "SELECT count(*) FROM hr.reviews"):
            refused, shown = outcome(session, sql)
            assert refused and "people" not in shown, sql
        assert_rows(session, {"SELECT amount FROM orders ORDER BY id": [(5,), (7,)]})
        assert "hr" not in session.shell("ls -R /").output.split()
