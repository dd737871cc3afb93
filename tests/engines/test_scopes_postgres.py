"""Scopes on PostgreSQL (issue 26): what `--hide` keeps from the model stays out of every route.

A database on the suite's real server, made by a role that is not a superuser, with a hidden
column (`hr.people.salary`, the generated `bonus` computed from it, and the same column in
`contractors`, which inherits from `hr.people`) and a hidden table (`hr.reviews`, partitioned
into `reviews_one`/`reviews_rest` of another schema). Every leak attempt of the corpus is refused
or runs with none of the hidden VALUES in its output; the visible rest still answers; the
catalog, the metadata shell, search, the system prompt and MCP show no hidden name or value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from astro_tui.agent.prompts import system_prompt
from astro_tui.catalog.values import ValueScanner
from astro_tui.config import Settings
from astro_tui.errors import AstroError
from astro_tui.session import Session
from tests.support import ROOT
from tests.support.pg_server import OWNER, PgServer
from tests.support.scopes import astro_sql_scoped, mcp_shows_nothing_hidden, outcome

DATABASE = "scopes"
HIDE = ("hr.people.salary", "hr.reviews")
HIDDEN_VALUES = ("987654", "876543", "765432", "98765", "87654", "76543", "TOPSECRETNOTE", "TOPSECRETCOMMENT")
"""The salaries (a contractor's too), the bonuses computed from them, the hidden table's notes,
the hidden column's comment."""
HIDDEN_NAMES = (
    "salary",
    "bonus",
    "reviews",
    "reviews_one",
    "topsecretnote",
    "pay",
    "pay_by_dept",
    "whole",
    "rich",
    "secured",
)
SECURITY_MD = ROOT / "SECURITY.md"

SETUP = """
CREATE SCHEMA hr;
CREATE TABLE hr.people (id int PRIMARY KEY, full_name text, dept text, salary int,
                        bonus int GENERATED ALWAYS AS (salary / 10) STORED);
COMMENT ON COLUMN hr.people.salary IS 'gross pay TOPSECRETCOMMENT';
COMMENT ON COLUMN hr.people.full_name IS 'legal name';
INSERT INTO hr.people (id, full_name, dept, salary)
  VALUES (1, 'Ada Lovelace', 'eng', 987654), (2, 'Alan Turing', 'eng', 876543);
CREATE INDEX people_salary_idx ON hr.people (salary);
CREATE TABLE hr.reviews (person_id int, note text) PARTITION BY LIST (person_id);
CREATE TABLE public.reviews_one PARTITION OF hr.reviews FOR VALUES IN (1);
CREATE TABLE public.reviews_rest PARTITION OF hr.reviews DEFAULT;
INSERT INTO hr.reviews VALUES (1, 'TOPSECRETNOTE'), (2, 'TOPSECRETNOTE two');
CREATE TABLE public.contractors (agency text) INHERITS (hr.people);
INSERT INTO public.contractors (id, full_name, dept, salary, agency)
  VALUES (3, 'Grace Hopper', 'ops', 765432, 'navy');
CREATE TABLE public.orders (id int, person_id int, amount int);
INSERT INTO public.orders VALUES (10, 1, 5), (11, 2, 7);
CREATE VIEW public.pay AS SELECT full_name, salary FROM hr.people;
CREATE VIEW public.names AS SELECT id, full_name FROM hr.people;
CREATE VIEW public.whole AS SELECT p AS r FROM hr.people p;
CREATE VIEW public.review_count AS SELECT count(*) AS n FROM hr.reviews;
CREATE VIEW public.over_pay AS SELECT full_name FROM public.pay;
CREATE VIEW public.rich AS SELECT full_name FROM hr.people WHERE salary > 900000;
CREATE MATERIALIZED VIEW public.pay_by_dept AS SELECT dept, sum(salary) AS total FROM hr.people GROUP BY dept;
CREATE MATERIALIZED VIEW public.heads AS SELECT dept, count(*) AS n FROM hr.people GROUP BY dept;
CREATE FUNCTION public.top_salary() RETURNS int LANGUAGE sql STABLE
  BEGIN ATOMIC SELECT max(salary) FROM hr.people; END;
CREATE FUNCTION public.salary_of(p hr.people) RETURNS int LANGUAGE sql IMMUTABLE
  BEGIN ATOMIC SELECT p.salary; END;
CREATE FUNCTION public.peek(a int, b int) RETURNS int LANGUAGE sql STABLE
  BEGIN ATOMIC SELECT max(salary) FROM hr.people; END;
CREATE OPERATOR public.### (LEFTARG = int, RIGHTARG = int, FUNCTION = public.peek);
CREATE TABLE public.secured (person_id int, seen bool);
CREATE POLICY own ON public.secured USING (person_id IN (SELECT id FROM hr.people WHERE salary > 900000));
INSERT INTO public.secured VALUES (1, true), (2, true);
ALTER TABLE public.secured ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.secured FORCE ROW LEVEL SECURITY;
CREATE FUNCTION public.leak(o public.orders) RETURNS int LANGUAGE sql STABLE
  BEGIN ATOMIC SELECT max(salary) FROM hr.people; END;
ANALYZE hr.people, hr.reviews, public.orders, public.contractors;
"""

LEAKS = [
    # the column, named
    "SELECT salary FROM hr.people",
    "SELECT p.salary FROM hr.people p",
    'SELECT "salary" FROM hr.people',
    "SELECT hr.people.salary FROM hr.people",
    "SELECT people.salary FROM hr.people",
    "SELECT id FROM hr.people WHERE salary > 900000",
    "SELECT id FROM hr.people ORDER BY salary",
    "SELECT dept, max(salary) FROM hr.people GROUP BY dept",
    "SELECT dept FROM hr.people GROUP BY dept HAVING sum(salary) > 0",
    "SELECT id, rank() OVER (ORDER BY salary) FROM hr.people",
    "SELECT id, sum(salary) OVER (PARTITION BY dept) FROM hr.people",
    "SELECT id, count(*) OVER w FROM hr.people WINDOW w AS (ORDER BY salary)",
    "SELECT (SELECT max(salary) FROM hr.people)",
    "SELECT id FROM hr.people WHERE id IN (SELECT id FROM hr.people WHERE salary > 1)",
    "SELECT o.id FROM orders o WHERE EXISTS "
    "(SELECT 1 FROM hr.people p WHERE p.id = o.person_id AND salary > 1)",
    "SELECT (SELECT salary FROM orders LIMIT 1) FROM hr.people",
    "WITH s AS (SELECT salary AS x FROM hr.people) SELECT x FROM s",
    "WITH s AS MATERIALIZED (SELECT * FROM hr.people) SELECT id FROM s",
    "WITH RECURSIVE r(n, s) AS (SELECT 1, salary FROM hr.people WHERE id = 1 UNION ALL "
    "SELECT n + 1, s FROM r WHERE n < 2) SELECT s FROM r",
    "SELECT o.id, l.s FROM orders o, "
    "LATERAL (SELECT salary AS s FROM hr.people p WHERE p.id = o.person_id) l",
    "SELECT o.id, l.s FROM orders o JOIN LATERAL (SELECT salary AS s FROM hr.people p) l ON true",
    "SELECT o.amount FROM orders o JOIN hr.people p ON p.salary > o.amount",
    "SELECT o.amount FROM orders o JOIN hr.people p ON p.id = o.person_id WHERE p.salary IS NOT NULL",
    "SELECT CASE WHEN salary > 900000 THEN 'high' ELSE 'low' END FROM hr.people",
    "SELECT length(salary::text) FROM hr.people",
    "SELECT DISTINCT ON (salary) id FROM hr.people",
    "SELECT id, full_name, dept, salary FROM hr.people ORDER BY 4",
    "SELECT salary, count(*) FROM hr.people GROUP BY 1",
    "SELECT id AS salary FROM hr.people GROUP BY salary, id",
    "SELECT salary FROM hr.people UNION SELECT 1",
    "SELECT 1 UNION SELECT salary FROM hr.people",
    "SELECT id FROM hr.people EXCEPT SELECT id FROM hr.people WHERE salary > 900000",
    "SELECT x FROM generate_series(1, 1) g(x), hr.people p WHERE x < p.salary",
    "SELECT * FROM hr.people p, generate_series(1, p.salary / 100000) g",
    "SELECT g FROM hr.people p, ROWS FROM (generate_series(1, p.salary / 100000)) g",
    "SELECT a.salary FROM hr.people AS a(i, n, d, salary)",
    "SELECT d FROM hr.people AS x(a, b, c, d)",
    "SELECT bonus FROM hr.people",
    "SELECT bonus * 10 FROM hr.people",
    "SELECT salary FROM contractors",
    "SELECT bonus FROM contractors",
    "SELECT salary FROM ONLY hr.people",
    "SELECT (SELECT salary) FROM hr.people",
    "SELECT (SELECT x FROM (SELECT 1 AS x) s WHERE salary > 0) FROM hr.people",
    "SELECT x FROM hr.people, LATERAL (SELECT salary) s(x)",
    "SELECT count(*) FILTER (WHERE salary > 1) FROM hr.people",
    "SELECT id FROM hr.people LIMIT (SELECT min(salary) FROM hr.people)",
    "VALUES ((SELECT max(salary) FROM hr.people))",
    "VALUES (1), (2) ORDER BY (SELECT max(salary) FROM hr.people)",
    "VALUES (1) LIMIT (SELECT min(salary) FROM hr.people) / 100000",
    "SELECT 1 UNION SELECT 2 ORDER BY 1 LIMIT (SELECT min(salary) FROM hr.people)",
    "SELECT id FROM hr.people WHERE (id, salary) = (1, 987654)",
    "SELECT dept FROM hr.people GROUP BY ROLLUP (dept, salary)",
    "SELECT salary(p) FROM hr.people p",
    "SELECT 1 ### 2",
    "SELECT peek(1, 2)",
    "SELECT (o).leak FROM orders o",
    "SELECT o.leak FROM orders o",
    "SELECT leak(o) FROM orders o",
    "SELECT count(*) FROM secured",
    # red team (issue 26): an output name the judge gave and PostgreSQL does not (FigureColname)
    "SELECT (SELECT salary FROM (SELECT (s.salary).value['k'] FROM "
    '(SELECT jsonb_each(\'{"a":{"k":1}}\') AS salary) s) q LIMIT 1) FROM hr.people',
    "SELECT (SELECT salary FROM (SELECT (salary).value['k'] COLLATE \"C\" FROM "
    '(SELECT jsonb_each(\'{"a":{"k":1}}\') AS salary) s) q LIMIT 1) FROM hr.people',
    "SELECT q.salary FROM (SELECT (s.salary).value['k'] FROM "
    '(SELECT jsonb_each(\'{"a":{"k":1}}\') AS salary) s) q',
    "SELECT (SELECT salary FROM (SELECT CASE WHEN true THEN 1 ELSE s.x END FROM (SELECT 1 AS x) s) q) "
    "FROM hr.people",
    "SELECT (SELECT salary FROM (SELECT (SELECT 1 AS x)::int) q) FROM hr.people",
    "SELECT (SELECT salary FROM (SELECT NULLIF(1, 2)) q) FROM hr.people",
    # red team: where the hidden columns are, and whether a hidden schema exists
    "SELECT a FROM hr.people AS p(a, b, c, d, e)",
    "SELECT a FROM hr.people AS p(a, b, c, d, e, f)",
    "SELECT salar FROM hr.people p, generate_series(1, 2) g",
    "SELECT 'a' COLLATE hr.x",
    "SELECT * FROM jsonb_to_record('{}') AS r(a text COLLATE hr.x)",
    "SELECT 1 OPERATOR(hr.+) 1",
    "SELECT 1 OPERATOR(hr.=) ANY (ARRAY[1])",
    "SELECT 1 ORDER BY 1 USING OPERATOR(hr.<)",
    "SELECT 'hr.x'::regconfig",
    "SELECT to_tsvector('hr.nosuch', 'a')",
    "SELECT ts_lexize('hr.x', 'a')",
    # red team: names and whole rows by other spellings
    'SELECT "HR"."People"."salary" FROM "HR"."People"',
    'SELECT id FROM U&"h\\0072".people WHERE U&"sal\\0061ry" > 0',
    "WITH people AS (SELECT id FROM hr.people) SELECT people.salary FROM people",
    "SELECT j.salary FROM hr.people JOIN contractors USING (id) AS j",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY salary) FROM hr.people",
    "SELECT id FROM hr.people TABLESAMPLE BERNOULLI (100) WHERE salary > 0",
    "SELECT dept FROM hr.people GROUP BY GROUPING SETS ((dept), (salary))",
    "SELECT GROUPING(salary) FROM hr.people GROUP BY salary",
    "SELECT (SELECT max(o.amount) FILTER (WHERE salary > 0) FROM orders o) FROM hr.people",
    "SELECT id FROM hr.people WHERE (salary::text)::date IS NULL",
    "SELECT x FROM hr.people p, "
    "xmltable('/a' PASSING xmlelement(name a, p.salary) COLUMNS x text PATH '.') t",
    "SELECT count(p) FROM hr.people p",
    "SELECT pg_typeof(p) FROM hr.people p",
    "SELECT pg_column_size(p) FROM hr.people p",
    "SELECT num_nonnulls(p.*) FROM hr.people p",
    "SELECT hashtext(p::text) FROM hr.people p",
    "SELECT (p.*) = (p.*) FROM hr.people p",
    "SELECT tableoid::regclass FROM hr.people",
    # whole rows
    "SELECT * FROM hr.people",
    "SELECT p.* FROM hr.people p",
    "TABLE hr.people",
    "SELECT p FROM hr.people p",
    "SELECT people FROM hr.people",
    "SELECT row_to_json(p) FROM hr.people p",
    "SELECT to_jsonb(p) FROM hr.people p",
    "SELECT to_json(p.*) FROM hr.people p",
    "SELECT p::text FROM hr.people p",
    "SELECT (p.*)::text FROM hr.people p",
    "SELECT ROW(p.*) FROM hr.people p",
    "SELECT json_agg(p) FROM hr.people p",
    "SELECT array_agg(p) FROM hr.people p",
    "SELECT (p).salary FROM hr.people p",
    "SELECT (p).* FROM hr.people p",
    "SELECT p.salary_of FROM hr.people p",
    "SELECT salary_of(p) FROM hr.people p",
    "SELECT top_salary()",
    "SELECT public.top_salary()",
    "SELECT hstore(p) FROM hr.people p",
    "SELECT * FROM json_populate_record(NULL::hr.people, '{}')",
    "SELECT (NULL::hr.people).*",
    "SELECT p = p FROM hr.people p",
    "SELECT id FROM hr.people p WHERE p IS NOT NULL",
    "SELECT id FROM hr.people ORDER BY people",
    "SELECT (SELECT p) FROM hr.people p",
    "SELECT xmlelement(name x, p) FROM hr.people p",
    "SELECT to_json(ARRAY(SELECT p FROM hr.people p))",
    "SELECT jsonb_agg(p.*) FROM hr.people p",
    "SELECT j FROM hr.people p, LATERAL row_to_json(p) j",
    "SELECT count(DISTINCT p) FROM hr.people p",
    "SELECT * FROM hr.people NATURAL JOIN contractors",
    "SELECT id FROM hr.people NATURAL JOIN (SELECT 1 AS id, 876543 AS salary) s",
    "SELECT id FROM hr.people JOIN (SELECT 876543 AS salary) s USING (salary)",
    "SELECT j.* FROM (hr.people JOIN orders ON true) AS j",
    "SELECT j FROM (hr.people p JOIN orders o ON true) AS j",
    "SELECT * FROM hr.people UNION ALL SELECT * FROM hr.people",
    "SELECT * FROM (SELECT * FROM hr.people) s",
    "SELECT * FROM whole",
    "SELECT r FROM whole",
    # the hidden table, its partitions
    "SELECT * FROM hr.reviews",
    "SELECT note FROM hr.reviews",
    "SELECT count(*) FROM hr.reviews",
    "TABLE hr.reviews",
    'SELECT * FROM "hr"."reviews"',
    "SELECT 1 WHERE EXISTS (SELECT 1 FROM hr.reviews WHERE note LIKE 'T%')",
    "SELECT * FROM orders o JOIN hr.reviews r ON r.person_id = o.person_id",
    "SELECT note FROM reviews_one",
    "SELECT count(*) FROM public.reviews_rest",
    "SELECT row_to_json(r) FROM hr.reviews r",
    "SELECT NULL::hr.reviews",
    # views reading hidden things
    "SELECT * FROM pay",
    "SELECT full_name FROM pay",
    "SELECT salary FROM public.pay",
    "SELECT full_name FROM over_pay",
    "SELECT full_name FROM rich",
    "SELECT * FROM review_count",
    "SELECT * FROM pay_by_dept",
    "SELECT total FROM pay_by_dept",
    # catalog views and functions
    "SELECT * FROM information_schema.columns",
    "SELECT column_name FROM information_schema.columns WHERE table_name = 'people'",
    "SELECT * FROM information_schema.tables",
    "SELECT view_definition FROM information_schema.views",
    "SELECT * FROM pg_catalog.pg_attribute",
    "SELECT attname FROM pg_attribute WHERE attrelid = 'hr.people'::regclass",
    "SELECT * FROM pg_stats",
    "SELECT most_common_vals::text FROM pg_stats WHERE tablename = 'people'",
    "SELECT * FROM pg_stats_ext",
    "SELECT * FROM pg_class",
    "SELECT * FROM pg_tables",
    "SELECT definition FROM pg_views",
    "SELECT definition FROM pg_matviews",
    "SELECT * FROM pg_description",
    "SELECT pg_get_viewdef('pay')",
    "SELECT pg_get_viewdef('pay'::regclass)",
    "SELECT pg_get_functiondef('top_salary'::regproc)",
    "SELECT col_description('hr.people'::regclass, 4)",
    "SELECT obj_description(16384)",
    "SELECT has_column_privilege('hr.people', 'salary', 'SELECT')",
    "SELECT has_table_privilege('hr.reviews', 'SELECT')",
    "SELECT to_regclass('hr.reviews')",
    "SELECT 'hr.reviews'::regclass",
    "SELECT regclass('hr.reviews')",
    "SELECT pg_relation_size('hr.reviews')",
    "SELECT format_type(23, -1)",
    "SELECT current_schemas(true)",
    "SELECT current_schema",
    "SELECT current_setting('search_path')",
    "SHOW search_path",
    "SELECT * FROM pg_stat_user_tables",
    "SELECT * FROM pg_indexes",
    "EXPLAIN SELECT id FROM hr.people WHERE id = 1",
    "EXPLAIN (VERBOSE) SELECT id FROM hr.people",
    "EXPLAIN (VERBOSE) SELECT * FROM names",
    # commands the guard refuses anyway
    "COPY hr.people TO STDOUT",
    "SELECT ctid, xmin FROM hr.reviews",
    # probing names: a hidden one and one that does not exist get the same answer
    "SELECT salar FROM hr.people",
    "SELECT nosuch FROM hr.people",
    "SELECT * FROM hr.nosuch",
    "SELECT p.nosuch FROM hr.people p",
]
VISIBLE = {
    "SELECT id, full_name, dept FROM hr.people ORDER BY id": [
        (1, "Ada Lovelace", "eng"),
        (2, "Alan Turing", "eng"),
        (3, "Grace Hopper", "ops"),
    ],
    "SELECT count(*) FROM ONLY hr.people": [(2,)],
    "SELECT * FROM orders ORDER BY amount": [(10, 1, 5), (11, 2, 7)],
    "SELECT * FROM names ORDER BY id": [(1, "Ada Lovelace"), (2, "Alan Turing"), (3, "Grace Hopper")],
    "SELECT p.full_name, sum(o.amount) FROM orders o JOIN hr.people p ON p.id = o.person_id "
    "GROUP BY 1 ORDER BY 1": [("Ada Lovelace", 5), ("Alan Turing", 7)],
    "SELECT full_name, amount FROM hr.people JOIN orders ON orders.person_id = people.id ORDER BY 2": [
        ("Ada Lovelace", 5),
        ("Alan Turing", 7),
    ],
    "WITH t AS (SELECT id FROM hr.people) SELECT count(*) FROM t, generate_series(1, 3)": [(9,)],
    "SELECT row_to_json(o)::text FROM orders o ORDER BY id LIMIT 1": [
        ('{"id":10,"person_id":1,"amount":5}',)
    ],
    "SELECT s.* FROM (SELECT id, dept FROM hr.people) s ORDER BY id LIMIT 1": [(1, "eng")],
    "SELECT id, agency FROM contractors": [(3, "navy")],
    "SELECT dept, n FROM heads ORDER BY dept": [("eng", 2), ("ops", 1)],
    "SELECT id FROM hr.people p WHERE EXISTS (SELECT 1 FROM orders o WHERE o.person_id = p.id) ORDER BY 1": [
        (1,),
        (2,),
    ],
    "SELECT dept, count(*) FROM hr.people GROUP BY dept ORDER BY dept": [("eng", 2), ("ops", 1)],
    "SELECT count(*) FROM hr.people p JOIN hr.people q USING (id)": [(3,)],
    "SELECT upper(full_name) AS n FROM hr.people ORDER BY n LIMIT 1": [("ADA LOVELACE",)],
    "SELECT x.i FROM hr.people AS x(i) ORDER BY 1 LIMIT 1": [(1,)],
    "VALUES (1), (2)": [(1,), (2,)],
    "SELECT count(ctid) AS n, count(DISTINCT tableoid) AS t FROM hr.people": [(3, 2)],
    "SELECT (o).amount FROM orders o ORDER BY 1": [(5,), (7,)],
    "SELECT q.x FROM (SELECT CASE WHEN false THEN 0 ELSE s.x END FROM (SELECT 7 AS x) s) q": [(7,)],
    "SELECT x.i FROM hr.people AS x(i, n, d) ORDER BY 1 DESC LIMIT 1": [(3,)],
    "SELECT 'b' COLLATE pg_catalog.\"C\" AS c": [("b",)],
}


@pytest.fixture(scope="module")
def scopes_db(pg_server: PgServer) -> str:
    if pg_server.psql(f"SELECT count(*) FROM pg_database WHERE datname = '{DATABASE}'", db="postgres") == "0":
        pg_server.psql(f"CREATE DATABASE {DATABASE} OWNER {OWNER}", db="postgres")
        pg_server.psql(SETUP, db=DATABASE, user=OWNER)
    return pg_server.url(db=DATABASE)


@pytest.fixture(scope="module")
def scoped(scopes_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    with Session([scopes_db], Settings(hide=HIDE), state_dir=tmp_path_factory.mktemp("state")) as session:
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


BESIDE = [
    "SELECT {} FROM hr.people, (SELECT 1 AS {}) s",
    "SELECT (SELECT {} FROM hr.people LIMIT 1) FROM (SELECT 1 AS {}) o",
    'SELECT p.id FROM hr.people p, (SELECT 1 AS "{}") s WHERE {} = 1',
]
"""A written name beside a column of that name: the table's own would be ambiguous (or taken
first) only where it has it, so these tell whether a hidden column exists unless the name is
refused."""


def test_a_name_the_scope_covers_is_refused_whether_or_not_the_table_has_it(
    scopes_db: str, tmp_path: Path
) -> None:
    with Session([scopes_db], Settings(hide=(*HIDE, "hr.people.ghost")), state_dir=tmp_path) as session:
        session.open()
        for shape in BESIDE:
            hidden, covered = (outcome(session, shape.format(n, n)) for n in ("salary", "ghost"))
            assert hidden[0] and hidden == covered, shape
            assert not outcome(session, shape.format("nosuch", "nosuch"))[0], shape


def test_naming_a_hidden_column_and_a_missing_one_get_the_same_answer(scoped: Session) -> None:
    answers = {outcome(scoped, f"SELECT {c} FROM hr.people") for c in ("salary", "nosuch", "salar", "bonus")}
    answers |= {outcome(scoped, "SELECT * FROM hr.reviews"), outcome(scoped, "SELECT * FROM hr.nosuch")}
    answers |= {outcome(scoped, "SELECT p.salary FROM hr.people p"), outcome(scoped, "SELECT * FROM pay")}
    for c in ("salary", "nosuch"):  # left to the server: a function's output might have had it
        answers.add(outcome(scoped, f"SELECT {c} FROM hr.people p, generate_series(1, 2) g"))
    for schema in ("hr", "nosuch"):  # a text search configuration named in a string
        answers.add(outcome(scoped, f"SELECT to_tsvector('{schema}.x', 'a')"))
    answers |= {outcome(scoped, "SELECT a FROM hr.people AS p(a, b, c, d, e)")}
    answers |= {outcome(scoped, "SELECT a FROM hr.people AS p(a, b, c, d, e, f)")}
    assert len(answers) == 1 and next(iter(answers))[0]


def test_star_is_refused_naming_the_visible_columns(scoped: Session) -> None:
    for sql in ("SELECT * FROM hr.people", "TABLE hr.people", "SELECT p.* FROM hr.people p"):
        refused, message = outcome(scoped, sql)
        assert refused and message.endswith("name the columns of people you need: id, full_name, dept"), sql


def test_the_visible_rest_is_still_queryable(scoped: Session) -> None:
    for sql, rows in VISIBLE.items():
        result = scoped.sql(sql).result
        assert [tuple(r.values()) for r in result.table.to_pylist()] == rows, sql


def test_the_catalog_hides_the_table_the_columns_and_the_views_reading_them(scoped: Session) -> None:
    catalog = scoped.catalog
    assert catalog is not None
    assert {t.sql_name for t in catalog.tables} == {
        "hr.people",
        "public.contractors",
        "public.orders",
        "public.names",
        "public.heads",
    }
    people = catalog.find_table("hr.people")
    assert people is not None and [c.name for c in people.columns] == ["id", "full_name", "dept"]
    contractors = catalog.find_table("public.contractors")
    assert contractors is not None and [c.name for c in contractors.columns] == [
        "id",
        "full_name",
        "dept",
        "agency",
    ]
    prompt = system_prompt(catalog, db_label=scoped.label, notes="", dialect=scoped.database().dialect.name)
    assert "public (4 tables)" in prompt and leaked(prompt, "") == []


@pytest.mark.parametrize(
    "command",
    [
        "ls -R /",
        "tree /",
        "cat /hr/people.table",
        "grep -ri sal /",
        "grep -ri secret /",
        "find / -name '*'",
        "wc /hr/*",
    ],
)
def test_the_metadata_shell_shows_nothing_hidden(scoped: Session, command: str) -> None:
    result = scoped.shell(command)
    assert leaked(result.output, "") == [], (command, result.output)


def test_value_search_never_samples_a_hidden_column(scoped: Session) -> None:
    assert scoped.catalog is not None
    lines = ValueScanner(scoped.catalog).find(
        scoped.database(), ["TOPSECRETNOTE", "Lovelace"], time_budget_s=30
    )
    shown = "\n".join(lines)
    assert "people.full_name" in shown and leaked(shown, "TOPSECRETNOTE") == [], shown


async def test_mcp_tools_show_nothing_hidden(scoped: Session) -> None:
    await mcp_shows_nothing_hidden(scoped, leaked, "SELECT row_to_json(p) FROM hr.people p")


def test_astro_sql_refuses_with_one_line(scopes_db: str, tmp_path: Path) -> None:
    hidden, shown = astro_sql_scoped(scopes_db, tmp_path, "SELECT row_to_json(p) FROM hr.people p")
    assert hidden.returncode == 1 and hidden.stdout == ""
    assert hidden.stderr.startswith("astro: refused:") and hidden.stderr.count("\n") == 1
    assert leaked(hidden.stderr, "") == []
    assert shown.returncode == 0 and "Ada Lovelace" in shown.stdout


def test_a_named_connection_carries_its_own_scope_to_the_server(scopes_db: str) -> None:
    from astro_tui.data.database import Database
    from astro_tui.data.engines import check_targets

    named = Settings(connections={"w": {"url": scopes_db, "hide": ["hr.reviews"]}})  # type: ignore[dict-item]
    check_targets(["@w"], named)
    with Database.open(["@w"], named) as db:
        assert str(db.scope.texts) == "['hr.reviews']"
        with pytest.raises(AstroError, match="the scope hides"):
            db.execute("SELECT count(*) FROM hr.reviews")
        assert db.execute("SELECT count(*) FROM hr.people").rows() == [(3,)]


def scope_figures() -> dict[str, str]:
    return {
        "Leak attempts against a hidden column and a hidden table": str(len(LEAKS)),
        "Hidden values or names in any output (refusals included)": "0",
        "Visible statements answering rightly under the scope": f"{len(VISIBLE)} / {len(VISIBLE)}",
    }


def test_security_md_scope_figures_match_the_suite() -> None:
    text = SECURITY_MD.read_text(encoding="utf-8")
    section = text.split("## Scopes on PostgreSQL", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2 and cells[0] not in ("What", "") and not re.fullmatch(r"-+", cells[0]):
            rows[cells[0]] = cells[1]
    assert rows == scope_figures()
