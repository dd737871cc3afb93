"""Scopes on DuckDB (issue 26): what `--hide` keeps from the model stays out of every route.

A real DuckDB file with a hidden column (`hr.people.salary`, and the generated `bonus`
computed from it) and a hidden table (`hr.reviews`). Every leak attempt of the corpus is
refused or runs with none of the hidden VALUES in its output; the visible rest still
answers; the metadata shell, search, the system prompt and MCP show no hidden name or
value. PostgreSQL: `test_scopes_postgres.py`; Spark: `test_scopes_spark.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from astro_tui.agent.prompts import system_prompt
from astro_tui.config import ConfigError, Settings, load_settings
from astro_tui.data.scope import Scope, ScopeError
from astro_tui.session import Session
from tests.support import ROOT
from tests.support.scopes import (
    HIDE,
    assert_rows,
    assert_same_refusal,
    astro_sql_scoped,
    build,
    mcp_shows_nothing_hidden,
    outcome,
)

HIDDEN_VALUES = ("987654", "876543", "98765", "87654", "TOPSECRETNOTE")
"""The salaries, the bonuses computed from them, the hidden table's note."""
HIDDEN_NAMES = ("salary", "bonus", "reviews", "topsecretnote", "pay")
SECURITY_MD = ROOT / "SECURITY.md"

LEAKS = [
    # the column, named
    "SELECT salary FROM hr.people",
    "SELECT p.salary FROM hr.people p",
    'SELECT "SALARY" FROM hr.people',
    "SELECT hr.people.salary FROM hr.people",
    "SELECT id FROM hr.people WHERE salary > 900000",
    "SELECT id FROM hr.people ORDER BY salary",
    "SELECT dept, max(salary) FROM hr.people GROUP BY dept",
    "SELECT dept FROM hr.people GROUP BY dept HAVING sum(salary) > 0",
    "SELECT id, rank() OVER (ORDER BY salary) FROM hr.people",
    "SELECT id, sum(salary) OVER () FROM hr.people",
    "SELECT (SELECT max(salary) FROM hr.people)",
    "SELECT id FROM hr.people WHERE id IN (SELECT id FROM hr.people WHERE salary > 1)",
    "WITH s AS (SELECT salary AS x FROM hr.people) SELECT x FROM s",
    "WITH s AS MATERIALIZED (SELECT * FROM hr.people) SELECT * FROM s",
    "SELECT o.id, l.s FROM orders o, LATERAL (SELECT salary AS s FROM hr.people p WHERE p.id = o.id) l",
    "SELECT o.amount FROM orders o JOIN hr.people p ON p.salary > o.amount",
    "SELECT o.amount FROM orders o JOIN hr.people p USING (id) WHERE p.salary IS NOT NULL",
    "SELECT CASE WHEN salary > 900000 THEN 'high' ELSE 'low' END FROM hr.people",
    "SELECT length(CAST(salary AS VARCHAR)) FROM hr.people",
    "SELECT id FROM hr.people QUALIFY row_number() OVER (ORDER BY salary DESC) = 1",
    "SELECT DISTINCT ON (salary) id FROM hr.people",
    "SELECT #4 FROM hr.people",
    "SELECT bonus FROM hr.people",
    "SELECT bonus * 10 FROM hr.people",
    # whole rows
    "SELECT * FROM hr.people",
    "SELECT p.* FROM hr.people p",
    "SELECT COLUMNS(*) FROM hr.people",
    "SELECT COLUMNS('sal.*') FROM hr.people",
    "SELECT COLUMNS(c -> c LIKE 's%') FROM hr.people",
    "SELECT * LIKE 's%' FROM hr.people",
    "SELECT * SIMILAR TO 'sal.*' FROM hr.people",
    "SELECT struct_pack(*) FROM hr.people",
    "SELECT to_json(p) FROM hr.people p",
    "SELECT p FROM hr.people p",
    "SELECT row_to_json(p) FROM hr.people p",
    "SELECT p::VARCHAR FROM hr.people p",
    "SELECT list(p) FROM hr.people p",
    "SELECT * EXCLUDE (id) FROM hr.people",
    "SELECT * EXCLUDE (salary) FROM hr.people",
    "SELECT * REPLACE (0 AS salary) FROM hr.people",
    "SELECT * RENAME (salary AS s) FROM hr.people",
    "SELECT x.d FROM hr.people AS x(a, b, c, d)",
    "SELECT * FROM hr.people NATURAL JOIN orders",
    "FROM hr.people",
    "SELECT * FROM hr.people UNION ALL SELECT * FROM hr.people",
    "UNPIVOT hr.people ON COLUMNS(* EXCLUDE (id, full_name, dept)) INTO NAME k VALUE v",
    "PIVOT hr.people ON dept USING sum(salary)",
    # the hidden table
    "SELECT * FROM hr.reviews",
    "SELECT note FROM hr.reviews",
    "SELECT count(*) FROM hr.reviews",
    'SELECT * FROM "HR"."REVIEWS"',
    "SELECT 1 WHERE EXISTS (SELECT 1 FROM hr.reviews WHERE note LIKE 'T%')",
    "SELECT * FROM orders o JOIN hr.reviews r ON r.person_id = o.person_id",
    "SELECT to_json(r) FROM hr.reviews r",
    # a view reading hidden things
    "SELECT * FROM pay",
    "SELECT full_name FROM pay",
    "SELECT salary FROM main.pay",
    # catalog listings and commands that describe
    "DESCRIBE hr.people",
    "DESCRIBE SELECT * FROM hr.people",
    "SHOW hr.people",
    "SUMMARIZE hr.people",
    "SUMMARIZE SELECT id FROM hr.people",
    "SHOW TABLES",
    "SHOW ALL TABLES",
    "SELECT * FROM duckdb_columns()",
    "SELECT column_name FROM duckdb_columns() WHERE table_name = 'people'",
    "SELECT * FROM duckdb_tables()",
    "SELECT sql FROM duckdb_views()",
    "SELECT * FROM information_schema.columns",
    "SELECT * FROM information_schema.tables",
    "SELECT * FROM pg_catalog.pg_attribute",
    "SELECT * FROM pragma_table_info('hr.people')",
    "PRAGMA table_info('hr.people')",
    "CALL pragma_table_info('hr.people')",
    "SELECT * FROM duckdb_constraints()",
    "SELECT * FROM duckdb_dependencies()",
    "EXPLAIN SELECT salary FROM hr.people",
    "EXPLAIN SELECT id FROM hr.people",
    # probing names: a hidden one and one that does not exist get the same answer
    "SELECT salar FROM hr.people",
    "SELECT nosuch FROM hr.people",
    "SELECT * FROM hr.nosuch",
    "SELECT * EXCLUDE (nosuch) FROM hr.people",
    # red team (issue 26): side channels, whole rows, joins, set operations, subqueries
    "SELECT count(*) FILTER (WHERE salary > 900000) FROM hr.people",
    "SELECT min_by(id, salary) FROM hr.people",
    "SELECT arg_max(full_name, salary) FROM hr.people",
    "SELECT CAST(salary AS DATE) FROM hr.people",
    "SELECT error(salary::VARCHAR) FROM hr.people",
    "SELECT * FROM (FROM hr.people)",
    "SELECT count(*) FROM (SELECT * FROM hr.people)",
    "SELECT id FROM (SELECT * FROM hr.people)",
    "WITH RECURSIVE r(n) AS (SELECT max(salary) FROM hr.people UNION ALL SELECT n + 1 FROM r WHERE n < 0) "
    "SELECT * FROM r",
    "SELECT * FROM hr.people p POSITIONAL JOIN orders",
    "SELECT o.id FROM orders o ASOF JOIN hr.people p ON o.person_id >= p.salary",
    "SELECT id FROM hr.people NATURAL JOIN (SELECT 987654 AS salary)",
    "SELECT * FROM hr.people UNION BY NAME SELECT 1 AS id",
    "UNPIVOT hr.people ON COLUMNS(*) INTO NAME k VALUE v",
    "PIVOT hr.people ON dept IN ('eng') USING count(*)",
    "SELECT unnest(p) FROM hr.people p",
    "SELECT unnest(struct_pack(id, salary)) FROM hr.people",
    "SELECT hash(p) FROM hr.people p",
    "SELECT id FROM hr.people p WHERE p IS NOT NULL",
    "SELECT * FROM unnest((SELECT list(salary) FROM hr.people))",
    "SELECT * FROM range((SELECT max(salary) FROM hr.people) - 987650)",
    "SELECT * FROM hr.people p, unnest([p.salary])",
    "SELECT id FROM hr.people LIMIT (SELECT count(*) FROM hr.people WHERE salary > 900000)",
    "SELECT list(id ORDER BY salary) FROM hr.people",
    "SELECT id FROM hr.people GROUP BY GROUPING SETS ((id), (salary))",
    "SELECT id, dept FROM hr.people PIVOT (sum(salary) FOR dept IN ('eng'))",
    "SELECT * FROM hr.people UNPIVOT (v FOR k IN (salary))",
    "SELECT id FROM hr.people SEMI JOIN (SELECT 987654 AS s) x ON salary = x.s",
    "SELECT list_transform([1], x -> p.salary) FROM hr.people p",
    "SELECT COLUMNS(p.*) FROM hr.people p",
    "SELECT COLUMNS([x FOR x IN (*) IF x <> 'id']) FROM hr.people",
    "SELECT * FROM hr.people TABLESAMPLE 50%",
    "SELECT rowid, note FROM hr.reviews",
    "SELECT * FROM staff.hr.people",
    'SELECT id FROM hr."People" WHERE "SALARY" > 0',
]
VISIBLE = {
    "SELECT id, full_name, dept FROM hr.people ORDER BY id": [
        (1, "Ada Lovelace", "eng"),
        (2, "Alan Turing", "eng"),
    ],
    "SELECT count(*) FROM hr.people": [(2,)],
    "SELECT * EXCLUDE (id) FROM orders ORDER BY amount": [(1, 5), (2, 7)],
    "SELECT * FROM names ORDER BY id": [(1, "Ada Lovelace"), (2, "Alan Turing")],
    "SELECT p.full_name, sum(o.amount) FROM orders o JOIN hr.people p ON p.id = o.person_id GROUP BY 1": [
        ("Ada Lovelace", 5),
        ("Alan Turing", 7),
    ],
    "WITH t AS (SELECT id FROM hr.people) SELECT count(*) FROM t, range(3)": [(6,)],
    "SELECT to_json(o) FROM orders o ORDER BY id LIMIT 1": [('{"id":10,"person_id":1,"amount":5}',)],
    "VALUES (1), (2)": [(1,), (2,)],
    "SELECT id FROM hr.people GROUP BY ALL ORDER BY ALL": [(1,), (2,)],
    "SELECT o.id FROM orders o POSITIONAL JOIN (SELECT id FROM hr.people) p ORDER BY 1": [(10,), (11,)],
    "SELECT id, full_name, dept FROM staff.hr.people USING SAMPLE 100% ORDER BY #1 LIMIT 1": [
        (1, "Ada Lovelace", "eng")
    ],
}


@pytest.fixture(scope="module")
def db_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("scopes") / "staff.duckdb")


@pytest.fixture(scope="module")
def scoped(db_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    with Session([str(db_file)], Settings(hide=HIDE), state_dir=tmp_path_factory.mktemp("state")) as session:
        yield session.open()


def leaked(shown: str, written: str) -> list[str]:
    values = [v for v in HIDDEN_VALUES if v.lower() in shown.lower() and v.lower() not in written.lower()]
    names = [n for n in HIDDEN_NAMES if re.search(rf"\b{n}\b", shown, re.I) and n not in written.lower()]
    return values + names


def test_the_corpus_is_large_enough() -> None:
    assert len(LEAKS) >= 60 and len(set(LEAKS)) == len(LEAKS)


def test_every_leak_attempt_is_refused_or_shows_nothing_hidden(scoped: Session) -> None:
    found = {}
    for sql in LEAKS:
        refused, shown = outcome(scoped, sql)
        assert "\n" not in shown or not refused, (sql, shown)
        if leaked(shown, sql):
            found[sql] = leaked(shown, sql)
    assert found == {}


NAMED_PAIRS = [
    ("SELECT salary FROM hr.people", "SELECT nosuch FROM hr.people"),
    ("SELECT * FROM hr.reviews", "SELECT * FROM hr.nosuch"),
    ("SELECT * EXCLUDE (salary) FROM hr.people", "SELECT * EXCLUDE (nosuch) FROM hr.people"),
    ("SELECT *, salary FROM hr.people", "SELECT *, nosuch FROM hr.people"),
    ("SELECT o.* FROM orders o JOIN hr.people p ON p.salary = o.amount",
     "SELECT o.* FROM orders o JOIN hr.people p ON p.nosuch = o.amount"),
    ("SELECT * FROM hr.people, hr.reviews", "SELECT * FROM hr.people, hr.nosuch"),
]  # fmt: skip
"""A hidden name and a missing one, written the same way: one answer for both."""


@pytest.mark.parametrize(("hidden", "missing"), NAMED_PAIRS)
def test_naming_a_hidden_thing_and_a_missing_one_get_the_same_answer(
    scoped: Session, hidden: str, missing: str
) -> None:
    assert_same_refusal(scoped, hidden, missing)


BESIDE = [
    "SELECT {} FROM hr.people, (SELECT 1 AS {})",
    "SELECT id FROM hr.people NATURAL JOIN (SELECT 1 AS id, 1 AS {})",
    "SELECT id FROM hr.people NATURAL JOIN (SELECT 1 AS id, 1 AS '{}')",
    "SELECT p.id FROM hr.people p, (SELECT 1 AS {}) q WHERE {} = 1",
]
"""A written name beside a column of that name: DuckDB's binding fails (ambiguous) only where
the table has it, so these tell whether a hidden column exists unless the name is refused."""


def test_a_name_the_scope_covers_is_refused_whether_or_not_the_table_has_it(
    db_file: Path, tmp_path: Path
) -> None:
    settings = Settings(hide=(*HIDE, "hr.people.ghost"))
    with Session([str(db_file)], settings, state_dir=tmp_path) as session:
        session.open()
        for shape in BESIDE:
            hidden, covered = (outcome(session, shape.format(n, n)) for n in ("salary", "ghost"))
            assert hidden[0] and hidden == covered, shape
            assert not outcome(session, shape.format("nosuch", "nosuch"))[0], shape


def test_star_is_refused_naming_the_visible_columns(scoped: Session) -> None:
    refused, message = outcome(scoped, "SELECT * FROM hr.people")
    assert refused and message.endswith("name the columns of people you need: id, full_name, dept")


def test_the_visible_rest_is_still_queryable(scoped: Session) -> None:
    assert_rows(scoped, VISIBLE)


def test_the_catalog_hides_the_table_the_column_the_derived_column_and_the_view(scoped: Session) -> None:
    catalog = scoped.catalog
    assert catalog is not None
    assert {t.sql_name for t in catalog.tables} == {"hr.people", "main.orders", "main.names"}
    people = catalog.find_table("hr.people")
    assert people is not None and [c.name for c in people.columns] == ["id", "full_name", "dept"]
    prompt = system_prompt(catalog, db_label=scoped.label, notes="", dialect="DuckDB")
    assert leaked(prompt, "") == []


@pytest.mark.parametrize(
    "command",
    [
        "ls -R /",
        "tree /",
        "cat /hr/people.table",
        "grep -ri sal /",
        "grep -ri note /",
        "find / -name '*'",
        "wc /hr/*",
    ],
)
def test_the_metadata_shell_shows_nothing_hidden(scoped: Session, command: str) -> None:
    result = scoped.shell(command)
    assert leaked(result.output, "") == [], (command, result.output)


async def test_mcp_tools_show_nothing_hidden(scoped: Session) -> None:
    await mcp_shows_nothing_hidden(scoped, leaked, "SELECT to_json(p) FROM hr.people p")


def test_astro_sql_refuses_with_one_line(db_file: Path, tmp_path: Path) -> None:
    hidden, shown = astro_sql_scoped(str(db_file), tmp_path, "SELECT to_json(p) FROM hr.people p")
    assert hidden.returncode == 1 and hidden.stdout == ""
    assert hidden.stderr.startswith("astro: refused:") and leaked(hidden.stderr, "") == []
    assert shown.returncode == 0 and "Ada Lovelace" in shown.stdout


def test_patterns() -> None:
    scope = Scope.parse(["HR.*.sal*", '"odd.schema".t', "*.*.email"])
    assert scope.hides_column("hr", "people", "Salary") and not scope.hides_column("hr", "people", "id")
    assert scope.hides_table("odd.schema", "T") and not scope.hides_table("odd", "t")
    assert scope.hides_column("x", "y", "EMAIL") and not scope.hides_schema("hr")
    for bad in ["", "a..b", "a.b.c.d", "a.", '"a', ".a"]:
        with pytest.raises(ScopeError):
            Scope.parse([bad])


def test_settings_carry_the_scope_from_the_file_the_connection_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        'hide = ["hr"]\n[connections.w]\nurl = "w.duckdb"\nhide = ["a.b.c"]\n', encoding="utf-8"
    )
    settings = load_settings({"hide": ("x.y",)}, environ={}, path=config)
    assert settings.hide == ("hr", "x.y") and settings.connection_hide == {"w": ("a.b.c",)}
    config.write_text('hide = ["a..b"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape("hide pattern 'a..b'")):
        load_settings({}, environ={}, path=config)


@pytest.mark.parametrize("url", ["postgresql://ann@127.0.0.1:1/shop", "sc://127.0.0.1:1"])
def test_every_server_engine_takes_a_scope(url: str) -> None:
    """Each engine module says it enforces scopes; one that did not would be refused at open."""
    from astro_tui.data.engines import _enforces_scopes, check_targets

    assert _enforces_scopes(url)
    check_targets([url], Settings(hide=("hr",)))
    check_targets(["@w"], Settings(connections={"w": {"url": url, "hide": ["hr"]}}))  # type: ignore[dict-item]


def scope_figures() -> dict[str, str]:
    from tests.support.scopes import redteam_figures

    return {
        "Leak attempts against a hidden column and a hidden table": str(len(LEAKS)),
        **redteam_figures(),
        "Hidden values or names in any output (refusals included)": "0",
        "Visible statements answering rightly under the scope": f"{len(VISIBLE)} / {len(VISIBLE)}",
    }


def test_security_md_scope_figures_match_the_suite() -> None:
    section = SECURITY_MD.read_text(encoding="utf-8").split("## Scopes", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2 and cells[0] not in ("What", "") and not re.fullmatch(r"-+", cells[0]):
            rows[cells[0]] = cells[1]
    assert rows == scope_figures()
