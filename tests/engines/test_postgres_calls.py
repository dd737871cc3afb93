"""The PostgreSQL guard judges what the server resolves, not what the text spells (issue 21).

Against the real server the suite starts: the legitimate corpus runs whole, and a
hostile database (`data/hostile_postgres_db.sql`, made by a role that is not a
superuser) has each of its tricks refused with the reason that applies, while
its harmless objects keep working. The parser-side tests read pglast's tree only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.postgres import guard
from astro_tui.data.errors import GuardError
from tests.support.pg_server import OWNER, PgServer
from tests.support.postgres_attacks import LEGIT


@pytest.fixture(scope="module")
def shop(pg_server: PgServer) -> Iterator[Database]:
    with Database.open([pg_server.url()], Settings()) as db:
        yield db


@pytest.fixture
def hostile(pg_server: PgServer, pg_hostile: str) -> Iterator[Database]:
    with Database.open([pg_server.url(db=pg_hostile)], Settings()) as db:
        yield db


# what the text says ----------------------------------------------------------------------------------


def test_field_selection_is_collected_as_a_call() -> None:
    checked = guard.inspect("SELECT (pid).pg_terminate_backend, a.b.to_json FROM pg_stat_activity a")
    assert {(None, "pg_terminate_backend"), (None, "b"), (None, "to_json")} <= checked.functions
    assert (None, "pg_stat_activity") in checked.relations


def test_ctes_shadow_relations_only_where_they_are_in_scope() -> None:
    assert guard.inspect("WITH pg_settings AS (SELECT 1) SELECT * FROM pg_settings").relations == frozenset()
    sibling = guard.inspect("WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a")
    assert sibling.relations == {(None, "b")}  # a plain WITH: `b` inside `a` is a table
    recursive = guard.inspect("WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a")
    assert recursive.relations == frozenset()
    outside = guard.inspect("SELECT (WITH s AS (SELECT 1) SELECT 1), (SELECT count(*) FROM s)")
    assert outside.relations == {(None, "s")}
    assert guard.inspect("WITH pg_settings AS (SELECT 1) SELECT * FROM pg_catalog.pg_settings").relations == {
        ("pg_catalog", "pg_settings")
    }


def test_operators_types_and_methods_are_collected() -> None:
    checked = guard.inspect(
        "SELECT a OPERATOR(s.+) b, x::d, CAST(y AS s.e[]), z BETWEEN 1 AND 2 "
        "FROM t TABLESAMPLE bernoulli (5) ORDER BY a USING OPERATOR(s.<)"
    )
    assert {("s", "+"), ("s", "<"), (None, "<="), (None, "="), (None, "<>")} <= checked.operators
    assert {(None, "d"), ("s", "e")} <= checked.types
    assert (None, "bernoulli") in checked.functions


def test_the_parse_is_bounded_before_pglast_sees_the_text() -> None:
    with pytest.raises(GuardError, match=r"^refused: the SQL is longer than 100,000 characters$"):
        guard.inspect("SELECT '" + "x" * 100_000 + "'")
    with pytest.raises(GuardError, match=r"^refused: the SQL has more than 20,000 words and symbols$"):
        guard.inspect("SELECT " + "1," * 10_000 + "1")
    assert guard.inspect("SELECT " + "1," * 9_990 + "1").query  # just under the caps still parses
    assert guard.inspect("SELECT '" + "x" * 99_000 + "'").query


def test_settings_are_read_only_from_the_allowlist() -> None:
    assert guard.check("SHOW TimeZone") == "SHOW TimeZone"
    assert guard.check("SELECT current_setting('search_path')")
    for sql in ("SHOW data_directory", "SHOW ALL", "SELECT current_setting(x) FROM t"):
        with pytest.raises(GuardError, match=r"^refused: "):
            guard.check(sql)


# legitimate SQL runs ---------------------------------------------------------------------------------


def test_the_legitimate_corpus_runs_whole(shop: Database) -> None:
    assert len(LEGIT) >= 40
    assert {"explain_json", "cte_named_like_a_file", "cte_named_like_a_system_view"} <= set(LEGIT)
    failed = {}
    for name, sql in LEGIT.items():
        try:
            shop.execute(sql, timeout=60)
        except Exception as exc:  # every failure is collected and shown
            failed[name] = str(exc)
    assert failed == {}
    plan = json.loads(shop.execute(LEGIT["explain_json"]).rows()[0][0])
    assert plan[0]["Plan"]["Relation Name"] == "orders"
    assert shop.execute(LEGIT["cte_named_like_a_file"]).row_count == 3


# a hostile database ----------------------------------------------------------------------------------

UNTRUSTED = "is defined in this database by a role that is not a superuser"
REFUSALS = {
    "SELECT lock(1)": f"trojan.lock() {UNTRUSTED}, in plpgsql",
    "SELECT trojan.lock_sql(1)": f"trojan.lock_sql() {UNTRUSTED}, in sql",
    "SELECT (1).lock": "trojan.lock() is defined in this database",
    "SELECT trojan.lock_atomic(1)": "pg_catalog.pg_try_advisory_lock() (called by a view",
    "SELECT * FROM trojan.v_lock": "pg_catalog.pg_try_advisory_lock() (called by a view",
    "SELECT * FROM v_nested": "trojan.lock() (called by a view",
    "SELECT * FROM trojan.v_setting": "pg_catalog.current_setting() (called by a view",
    "SELECT * FROM trojan.v_settings": "pg_catalog.pg_settings shows the server's configuration",
    "SELECT 1 === 2": "trojan.int_eq_lock() (called by a view",
    "SELECT 1::trojan.locked_int": "trojan.lock() (called by a view",
    "SELECT locked_int(5)": "trojan.lock() (called by a view",  # a call that is a conversion
    "SELECT (json_populate_record(b, '{\"v\": 7}')).id FROM boxed b": "trojan.lock() (called by a view",
    "SELECT ROW(1, 2)::trojan.pair::int": "trojan.pair_to_int() is defined in this database",
    "SELECT count(*) FROM trojan.guarded": "trojan.lock() (called by a view",
    "SELECT lock_sum(id) FROM trojan.items": "trojan.lock_sfunc() (called by a view",
    "SELECT length('abc')": "public.length() is defined in this database",
    "SELECT with_default()": "pg_catalog.pg_try_advisory_lock() (called by a view",
}


def test_each_trick_of_a_hostile_database_is_refused_for_its_reason(hostile: Database) -> None:
    for sql, reason in REFUSALS.items():
        with pytest.raises(GuardError) as refused:
            hostile.execute(sql)
        assert str(refused.value).startswith("refused: ") and reason in str(refused.value), sql


def test_what_the_hostile_database_defines_harmlessly_still_runs(hostile: Database) -> None:
    assert hostile.execute("SELECT plus_one(41)").rows() == [(42,)]  # BEGIN ATOMIC: its body is judged
    assert hostile.execute("SELECT next FROM v_ok WHERE id = 3").rows() == [(4,)]
    assert hostile.execute("SELECT count(*) FROM items WHERE id <= 5").rows() == [(5,)]


def test_an_implicit_cast_through_a_trojan_refuses_every_statement(
    hostile: Database, pg_server: PgServer, pg_hostile: str
) -> None:
    """An implicit cast runs with no syntax at all, so while one exists through a function astro
    cannot judge, nothing runs on that database."""
    swap = (
        "DROP CAST (trojan.pair AS int); "
        "CREATE CAST (trojan.pair AS int) WITH FUNCTION trojan.pair_to_int(trojan.pair)"
    )
    pg_server.psql(swap + " AS IMPLICIT", db=pg_hostile, user=OWNER)
    try:
        with pytest.raises(GuardError, match=r"trojan\.pair_to_int\(\) is defined in this database"):
            hostile.execute("SELECT count(*) FROM items")
    finally:
        pg_server.psql(swap, db=pg_hostile, user=OWNER)
    assert hostile.execute("SELECT count(*) FROM items").rows() == [(20,)]


def test_functions_a_superuser_owns_are_judged_like_built_ins(
    hostile: Database, pg_server: PgServer, pg_hostile: str
) -> None:
    body = "RETURNS int LANGUAGE plpgsql AS 'BEGIN RETURN x; END'"
    pg_server.psql(  # as the superuser
        f"CREATE FUNCTION public.su_stable(x int) {body} STABLE; "
        f"CREATE FUNCTION public.su_volatile(x int) {body}",
        db=pg_hostile,
    )
    try:
        assert hostile.execute("SELECT su_stable(7)").rows() == [(7,)]
        with pytest.raises(GuardError, match=r"public\.su_volatile\(\) is volatile"):
            hostile.execute("SELECT su_volatile(7)")
    finally:
        pg_server.psql(
            "DROP FUNCTION public.su_stable(int); DROP FUNCTION public.su_volatile(int)", db=pg_hostile
        )


def test_the_search_path_is_the_one_astro_connected_with(
    hostile: Database, pg_server: PgServer, pg_hostile: str
) -> None:
    """The guard resolved names with the path read at connect time; a later ALTER DATABASE … SET
    search_path does not reach astro's new connections."""
    ((path,),) = hostile.execute("SHOW search_path").rows()
    pg_server.psql(f"ALTER DATABASE {pg_hostile} SET search_path = public", db="postgres")
    try:
        pg_server.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{pg_hostile}' AND pid <> pg_backend_pid()",
            db="postgres",
        )
        assert hostile.execute("SHOW search_path").rows() == [(path,)]  # on a fresh connection
    finally:
        pg_server.psql(f"ALTER DATABASE {pg_hostile} SET search_path = trojan, public", db="postgres")
