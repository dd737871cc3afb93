"""Scopes on Spark Connect (issue 26): what `--hide` keeps from the model stays out of every route.

On the session's real Spark Connect server, a database `hr` made for this module (dropped
after it): a hidden column (`hr.people.salary`) and a hidden table (`hr.reviews`), a view
reading the hidden column (`hr.pay`), one filtering on it (`hr.rich`) and one that does not
(`hr.names`). Every leak attempt of the corpus is refused or runs with none of the hidden
VALUES in its output; the visible rest still answers; the metadata shell, search, the
system prompt and MCP show no hidden name or value; `astro sql` refuses with one line.
The server is slow, so the module sets up once and the corpus runs in one test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from astro_tui.agent.prompts import system_prompt
from astro_tui.catalog.values import ValueScanner
from astro_tui.config import Settings
from astro_tui.mcp.server import AstroServer
from astro_tui.session import Session
from tests.support import ROOT
from tests.support.mcp import call, text
from tests.support.scopes import outcome
from tests.support.spark_server import SparkServer

HIDE = ("hr.people.salary", "hr.reviews", "hr.people.bonus")
"""`hr.people.bonus` does not exist: a name the scope covers is refused alike whether or not it does."""
HIDDEN_VALUES = ("987654", "876543", "TOPSECRETNOTE")
"""The salaries and the hidden table's note."""
HIDDEN_NAMES = ("salary", "reviews", "topsecretnote", "pay", "rich", "note", "person_id")
SECURITY_MD = ROOT / "SECURITY.md"

SETUP = [
    "CREATE DATABASE hr",
    "CREATE TABLE hr.people (id INT, full_name STRING, dept STRING, salary INT) USING parquet",
    "INSERT INTO hr.people VALUES (1, 'Ada Lovelace', 'eng', 987654), (2, 'Alan Turing', 'eng', 876543)",
    "CREATE TABLE hr.reviews (person_id INT, note STRING) USING parquet",
    "INSERT INTO hr.reviews VALUES (1, 'TOPSECRETNOTE')",
    "CREATE VIEW hr.pay AS SELECT full_name, salary FROM hr.people",
    "CREATE VIEW hr.rich AS SELECT full_name FROM hr.people WHERE salary > 900000",
    "CREATE VIEW hr.names AS SELECT id, full_name FROM hr.people",
]

LEAKS = [
    # the column, named
    "SELECT salary FROM hr.people",
    "SELECT p.salary FROM hr.people p",
    "SELECT `SALARY` FROM hr.people",
    "SELECT hr.people.salary FROM hr.people",
    "SELECT id FROM hr.people WHERE salary > 900000",
    "SELECT id FROM hr.people ORDER BY salary",
    "SELECT dept, max(salary) FROM hr.people GROUP BY dept",
    "SELECT dept FROM hr.people GROUP BY dept HAVING sum(salary) > 0",
    "SELECT id, rank() OVER (ORDER BY salary) FROM hr.people",
    "SELECT id, sum(salary) OVER () FROM hr.people",
    "SELECT (SELECT max(salary) FROM hr.people)",
    "SELECT id FROM hr.people WHERE id IN (SELECT id FROM hr.people WHERE salary > 1)",
    "SELECT id FROM hr.people p WHERE EXISTS (SELECT 1 FROM hr.people q WHERE q.id = p.id AND q.salary > 9)",
    "WITH s AS (SELECT salary AS x FROM hr.people) SELECT x FROM s",
    "WITH s AS (SELECT * FROM hr.people) SELECT id FROM s",
    "SELECT c.id, l.s FROM sales.customers c, "
    "LATERAL (SELECT salary AS s FROM hr.people p WHERE p.id = c.id) l",
    "SELECT c.name FROM sales.customers c JOIN hr.people p ON p.salary > c.id",
    "SELECT c.name FROM sales.customers c JOIN hr.people p USING (id) WHERE p.salary IS NOT NULL",
    "SELECT CASE WHEN salary > 900000 THEN 'high' ELSE 'low' END FROM hr.people",
    "SELECT length(CAST(salary AS STRING)) FROM hr.people",
    "SELECT named_struct('a', salary) FROM hr.people",
    "SELECT to_json(named_struct('a', salary)) FROM hr.people",
    "SELECT transform(array(salary), x -> x + 1) FROM hr.people",
    "SELECT id, e FROM hr.people LATERAL VIEW explode(array(salary)) t AS e",
    "SELECT * FROM hr.people PIVOT (sum(salary) FOR dept IN ('eng'))",
    "SELECT * FROM hr.people UNPIVOT (v FOR k IN (salary))",
    "SELECT dept, sum(salary) FROM hr.people GROUP BY GROUPING SETS ((dept), ())",
    "SELECT id, salary FROM hr.people ORDER BY 2",
    "SELECT dept, salary FROM hr.people GROUP BY ALL",
    "SELECT id FROM hr.people TABLESAMPLE (100 PERCENT) WHERE salary > 0",
    "SELECT v.x, p.salary FROM (VALUES (1), (2)) AS v(x) JOIN hr.people p ON p.id = v.x",
    "SELECT id FROM hr.people UNION ALL SELECT salary FROM hr.people",
    "SELECT salary FROM hr.people INTERSECT SELECT 987654",
    "SELECT hash(salary) FROM hr.people",
    "SELECT max_by(full_name, salary) FROM hr.people",
    "SELECT percentile(salary, 0.5) FROM hr.people",
    "SELECT x.d FROM hr.people AS x(a, b, c, d)",
    "SELECT input_file_name(), salary FROM hr.people",
    "SELECT _metadata FROM hr.people",
    # whole rows
    "SELECT * FROM hr.people",
    "SELECT p.* FROM hr.people p",
    "SELECT struct(*) FROM hr.people",
    "SELECT to_json(struct(*)) FROM hr.people",
    "SELECT to_json(struct(p.*)) FROM hr.people p",
    "SELECT hash(*) FROM hr.people",
    "SELECT count(DISTINCT *) FROM hr.people",
    "SELECT * EXCEPT (id) FROM hr.people",
    "SELECT * EXCEPT (salary) FROM hr.people",
    "SELECT * FROM hr.people NATURAL JOIN hr.names",
    "SELECT * FROM hr.people p JOIN sales.customers c ON p.id = c.id",
    "TABLE hr.people",
    "FROM hr.people SELECT *",
    "SELECT * FROM hr.people UNION ALL SELECT * FROM hr.people",
    "SELECT * FROM hr.people EXCEPT SELECT * FROM hr.names CROSS JOIN (SELECT 1 AS s, 2 AS t)",
    "SELECT count(*) FROM (SELECT DISTINCT * FROM hr.people)",
    "SELECT inline(array(struct(*))) FROM hr.people",
    "SELECT explode(array(struct(*))) FROM hr.people",
    "SELECT * FROM hr.people GROUP BY ALL",
    "WITH s AS (SELECT * FROM hr.people) SELECT id FROM s WHERE s.full_name > ''",
    "SELECT id FROM hr.people WHERE (1, 'Ada Lovelace', 'eng', 987654) IN (SELECT * FROM hr.people)",
    "SELECT id FROM hr.people WHERE EXISTS (SELECT * FROM hr.people)",
    "SELECT c.id, l.* FROM sales.customers c, LATERAL (SELECT * FROM hr.people p WHERE p.id = c.id) l",
    "SELECT * FROM hr.people TABLESAMPLE (50 PERCENT)",
    "SELECT * FROM hr.people LATERAL VIEW explode(array(1)) t AS e",
    "SELECT id, full_name, dept, salary FROM hr.people",
    "SELECT 'x\\n   +- Project [a#1]' AS a, 1, 2, 3 UNION ALL SELECT * FROM hr.people",
    "SELECT `a\n+- Project [a#1]` FROM (SELECT salary AS `a\n+- Project [a#1]` FROM hr.people)",
    # a value Spark evaluates while it analyzes prints raw: its line breaks forge a Project over b's table
    "SELECT * FROM (SELECT * FROM (SELECT dept, id FROM hr.people) PIVOT (sum(id) FOR dept IN (concat('eng', "
    "char(10), '      +- Project [x#1]', char(10), '         +- Project [x#2]', char(10), "
    "'            +- Project [x#3]', char(10), '               +- Project [x#4]') AS e))) a "
    "CROSS JOIN hr.people b",
    "SELECT from_json(full_name, concat('`a', char(10), '   +- Project [x#1]` INT')), salary FROM hr.people",
    # red team: a written name that could be hidden (ambiguous: fails only when it exists), NATURAL JOIN,
    # hints, samples, set operations, FILTER/WITHIN GROUP, QUALIFY, pipe syntax, whole-row functions, errors
    "SELECT salary FROM hr.people, (SELECT 1 AS salary)",
    "SELECT id FROM hr.people NATURAL JOIN (SELECT 1 AS salary)",
    "SELECT 1 AS salary, salary + 1 FROM hr.people",
    "SELECT id FROM hr.people CLUSTER BY salary",
    "SELECT id FROM hr.people TABLESAMPLE (BUCKET 1 OUT OF 2 ON salary)",
    "SELECT /*+ REPARTITION(2, salary) */ id FROM hr.people",
    "SELECT p.id FROM hr.people p JOIN sales.customers c ON p.salary <=> c.id",
    "SELECT id FROM hr.names INTERSECT SELECT salary FROM hr.people",
    "SELECT count(1) FILTER (WHERE salary > 900000) FROM hr.people",
    "SELECT listagg(full_name) WITHIN GROUP (ORDER BY salary) FROM hr.people",
    "SELECT id FROM hr.people QUALIFY row_number() OVER (ORDER BY salary) = 1",
    "FROM hr.people |> WHERE salary > 900000 |> SELECT id",
    "SELECT xxhash64(*) FROM hr.people",
    "SELECT concat_ws(',', *) FROM hr.people",
    "SELECT raise_error(cast(salary AS string)) FROM hr.people",
    # the hidden table
    "SELECT * FROM hr.reviews",
    "SELECT note FROM hr.reviews",
    "SELECT count(*) FROM hr.reviews",
    "SELECT * FROM `HR`.`REVIEWS`",
    "SELECT * FROM spark_catalog.hr.reviews",
    "TABLE hr.reviews",
    "SELECT 1 WHERE EXISTS (SELECT 1 FROM hr.reviews WHERE note LIKE 'T%')",
    "SELECT * FROM sales.customers c JOIN hr.reviews r ON r.person_id = c.id",
    "SELECT to_json(struct(*)) FROM hr.reviews",
    # views reading hidden things
    "SELECT * FROM hr.pay",
    "SELECT full_name FROM hr.pay",
    "SELECT salary FROM hr.pay",
    "SELECT full_name FROM hr.rich",
    # catalog listings and commands that describe
    "DESCRIBE hr.people",
    "DESCRIBE hr.people salary",
    "DESCRIBE TABLE hr.reviews",
    "DESCRIBE QUERY SELECT * FROM hr.people",
    "SHOW COLUMNS IN hr.people",
    "SHOW CREATE TABLE hr.people",
    "SHOW TBLPROPERTIES hr.people",
    "SHOW TABLES IN hr",
    "SHOW VIEWS IN hr",
    "SHOW DATABASES",
    "SHOW TABLE EXTENDED IN hr LIKE '*'",
    "EXPLAIN SELECT id FROM hr.people",
    "EXPLAIN EXTENDED SELECT id FROM hr.people",
    "SELECT * FROM information_schema.columns",
    "SELECT * FROM system.information_schema.columns",
    "CREATE TEMPORARY VIEW leak AS SELECT salary FROM hr.people",
    "CACHE TABLE hr.people",
    # probing names: a hidden one and one that does not exist get the same answer
    "SELECT salar FROM hr.people",
    "SELECT nosuch FROM hr.people",
    "SELECT * FROM hr.nosuch",
    "SELECT * EXCEPT (nosuch) FROM hr.people",
]
VISIBLE = {
    "SELECT id, full_name, dept FROM hr.people ORDER BY id": [
        (1, "Ada Lovelace", "eng"),
        (2, "Alan Turing", "eng"),
    ],
    "SELECT count(*) FROM hr.people": [(2,)],
    "SELECT * FROM hr.names ORDER BY id": [(1, "Ada Lovelace"), (2, "Alan Turing")],
    "SELECT p.full_name, c.name FROM hr.people p JOIN sales.customers c USING (id) ORDER BY p.id": [
        ("Ada Lovelace", "Customer 1"),
        ("Alan Turing", "Customer 2"),
    ],
    "WITH t AS (SELECT id FROM hr.people) SELECT count(*) FROM t, range(3)": [(6,)],
    "SELECT to_json(struct(id, full_name)) FROM hr.people ORDER BY id LIMIT 1": [
        ('{"id":1,"full_name":"Ada Lovelace"}',)
    ],
    "SELECT DISTINCT dept FROM hr.people": [("eng",)],
    "SELECT dept, count(*) FROM (SELECT dept FROM hr.people) GROUP BY ROLLUP(dept) "
    "ORDER BY dept NULLS LAST": [
        ("eng", 2),
        (None, 2),
    ],
    "VALUES (1), (2)": [(1,), (2,)],
    "SELECT count(*) FROM (SELECT id, rand() AS r FROM hr.people)": [(2,)],
    "SELECT count(*) <= 2 FROM hr.people TABLESAMPLE (50 PERCENT)": [(True,)],
    "SELECT id FROM hr.people p WHERE EXISTS (SELECT 1 FROM sales.customers c WHERE c.id = p.id) "
    "ORDER BY id": [
        (1,),
        (2,),
    ],
    "SELECT c.id, l.n FROM sales.customers c, "
    "LATERAL (SELECT full_name AS n FROM hr.people p WHERE p.id = c.id) l ORDER BY 1": [
        (1, "Ada Lovelace"),
        (2, "Alan Turing"),
    ],
}


@pytest.fixture(scope="module")
def hr(spark_server: SparkServer) -> Iterator[SparkServer]:
    for statement in SETUP:
        spark_server.sql(statement)
    yield spark_server
    spark_server.sql("DROP DATABASE hr CASCADE")


@pytest.fixture(scope="module")
def scoped(hr: SparkServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    settings = Settings(hide=HIDE, query_timeout_s=300)
    with Session([hr.url], settings, state_dir=tmp_path_factory.mktemp("state")) as session:
        yield session.open()


def leaked(shown: str, written: str) -> list[str]:
    """The hidden values (anywhere) and names (as words) shown that the statement did not write."""
    said, wrote = shown.lower(), written.lower()
    found = [v for v in HIDDEN_VALUES if v.lower() in said and v.lower() not in wrote]
    return found + [n for n in HIDDEN_NAMES if n not in wrote and re.search(rf"\b{n}\b", said)]


def test_the_corpus_is_large_enough() -> None:
    assert len(LEAKS) >= 60 and len(set(LEAKS)) == len(LEAKS)


def test_every_leak_attempt_is_refused_or_shows_nothing_hidden(scoped: Session) -> None:
    found, ran = {}, []
    for sql in LEAKS:
        refused, shown = outcome(scoped, sql)
        assert "\n" not in shown or not refused, (sql, shown)
        if not refused:
            ran.append(sql)
        if leaked(shown, sql):
            found[sql] = leaked(shown, sql)
    assert found == {}
    assert ran == [], "each of these runs; if that is right, check its output above and move it"


def test_naming_a_hidden_column_and_a_missing_one_get_the_same_answer(scoped: Session) -> None:
    probes = [
        "SELECT salary FROM hr.people",
        "SELECT nosuch FROM hr.people",
        "SELECT salar FROM hr.people",
        "SELECT * FROM hr.reviews",
        "SELECT * FROM hr.nosuch",
        "SELECT * EXCEPT (salary) FROM hr.people",
        "SELECT * EXCEPT (nosuch) FROM hr.people",
    ]
    answers = {outcome(scoped, sql) for sql in probes}
    assert len(answers) == 1 and next(iter(answers))[0]


def test_a_name_the_scope_covers_is_refused_whether_or_not_it_exists(scoped: Session) -> None:
    """Beside a subquery's column of the same name, Spark fails on an ambiguous `salary` and
    resolves a missing `bonus` to the subquery's: without refusing the written name, running
    or not would tell which of them hr.people has."""
    answers = {outcome(scoped, f"SELECT {n} FROM hr.people, (SELECT 1 AS {n})") for n in ("salary", "bonus")}
    assert len(answers) == 1 and next(iter(answers))[0]
    assert outcome(scoped, "SELECT nosuch FROM hr.people, (SELECT 1 AS nosuch)") == (False, "nosuch 1 1")


def test_star_is_refused_naming_the_visible_columns(scoped: Session) -> None:
    for sql in ("SELECT * FROM hr.people", "SELECT to_json(struct(*)) FROM hr.people", "TABLE hr.people"):
        refused, message = outcome(scoped, sql)
        assert refused and message.endswith("name the columns of people you need: id, full_name, dept")


def test_the_visible_rest_is_still_queryable(scoped: Session) -> None:
    answered = {sql: scoped.sql(sql).result.rows() for sql in VISIBLE}
    assert answered == VISIBLE


def test_the_catalog_hides_the_table_the_column_and_the_views_reading_them(scoped: Session) -> None:
    catalog = scoped.catalog
    assert catalog is not None
    assert {t.sql_name for t in catalog.tables if t.schema == "hr"} == {"hr.people", "hr.names"}
    people = catalog.find_table("hr.people")
    assert people is not None and [c.name for c in people.columns] == ["id", "full_name", "dept"]
    prompt = system_prompt(catalog, db_label=scoped.label, notes="", dialect=scoped.database().dialect.name)
    assert leaked(prompt, "") == []


def test_the_metadata_shell_shows_nothing_hidden(scoped: Session) -> None:
    for command in [
        "ls -R /",
        "tree /",
        "cat /hr/people.table",
        "grep -ri sal /",
        "grep -ri note /",
        "find / -name '*'",
        "wc /hr/*",
    ]:
        result = scoped.shell(command)
        assert leaked(result.output, "") == [], (command, result.output)


def test_the_value_search_scans_the_visible_text_columns_only(scoped: Session) -> None:
    """Given the time Spark needs (the tools' budget is 2 s), it finds Ada in full_name and
    never the hidden table's note."""
    assert scoped.catalog is not None
    found = "\n".join(
        ValueScanner(scoped.catalog).find(scoped.database(), ["Ada", "TOPSECRETNOTE"], time_budget_s=120)
    )
    assert "people.full_name" in found and "stopped" not in found, found
    assert leaked(found, "TOPSECRETNOTE") == [], found


async def test_mcp_tools_show_nothing_hidden(scoped: Session) -> None:
    server = AstroServer(scoped)
    asked = {
        "shell": {"command": "grep -ri salary /"},
        "search_metadata": {"queries": ["salary pay review note"], "keywords": ["TOPSECRETNOTE", "Ada"]},
        "show_table": {"table_names": ["hr.people", "hr.reviews", "hr.pay"]},
        "run_sql": {"sql": "SELECT to_json(struct(*)) FROM hr.people"},
    }
    try:
        said = {name: await call(server, name, arguments) for name, arguments in asked.items()}
        shown = {name: text(r) + str(r.structured_content or "") for name, r in said.items()}
        assert {name: leaked(shown[name], str(asked[name])) for name in asked} == {name: [] for name in asked}
        assert "Ada Lovelace" in shown["show_table"]
        assert said["run_sql"].is_error and "people you need: id, full_name, dept" in shown["run_sql"]
    finally:
        server.close()


def test_astro_sql_refuses_with_one_line(hr: SparkServer, tmp_path: Path) -> None:
    env = {**os.environ, "ASTRO_CONFIG_DIR": str(tmp_path), "ASTRO_CACHE_DIR": str(tmp_path / "c")}
    run = [sys.executable, "-m", "astro_tui.cli", "sql"]
    hidden = subprocess.run(
        [*run, "SELECT to_json(struct(*)) FROM hr.people", hr.url, "--hide", "hr.people.salary"],
        capture_output=True, text=True, env=env, check=False, timeout=240,
    )  # fmt: skip
    assert hidden.returncode == 1 and hidden.stdout == ""
    assert hidden.stderr.startswith("astro: refused:") and hidden.stderr.count("\n") == 1
    assert leaked(hidden.stderr, "") == []


def scope_figures() -> dict[str, str]:
    return {
        "Leak attempts against a hidden column and a hidden table (Spark)": str(len(LEAKS)),
        "Hidden values or names in any output, refusals included (Spark)": "0",
        "Visible statements answering rightly under the scope (Spark)": f"{len(VISIBLE)} / {len(VISIBLE)}",
    }


def test_security_md_spark_scope_figures_match_the_suite() -> None:
    section = SECURITY_MD.read_text(encoding="utf-8").split("## Scopes on Spark Connect", 1)[1]
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \|", section.split("\n## ", 1)[0], re.M)
    assert dict(rows[1:]) == scope_figures() and rows[0] == ("What", "Figure")
