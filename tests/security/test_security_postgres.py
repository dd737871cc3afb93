"""PostgreSQL's read-only promise in both layers, limits that stop the query on the server, bad input.

Every test connects as the tables' OWNER, who could write: what keeps the data
unchanged is astro, not the role. The data's fingerprint (rows of every table,
sequences, the relation list, comments, roles, large objects) is read over the
superuser's socket before and after, in the shop database and in the hostile one
(`data/hostile_postgres_db.sql`), beside what outlives a transaction: another
session of the same role (the sentinel), advisory locks, settings.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from astro_tui.config import Settings
from astro_tui.data.cancel import CancelToken
from astro_tui.data.database import Database
from astro_tui.data.errors import DataError, GuardError, QueryCancelled, QueryError, QueryTimeout, TargetError
from astro_tui.text import redact_url
from tests.support import ROOT
from tests.support.pg_server import DATABASE, OWNER_PASSWORD, PgServer
from tests.support.postgres_attacks import (
    CORPUS,
    STOLEN,
    active_queries,
    fingerprint,
    leaked_values,
    sentinel,
    server_state,
)
from tests.support.waiting import wait_for

ENGINE_WRITES = (
    "INSERT INTO sales.customers VALUES (9001, 'Mallory', 'Nowhere', 'gold')",
    "UPDATE sales.orders SET amount = 0",
    "DELETE FROM sales.orders",
    "WITH gone AS (DELETE FROM sales.orders RETURNING *) SELECT count(*) FROM gone",
    "SELECT nextval('sales.invoice_no')",
    "SELECT setval('sales.invoice_no', 1)",
    "CREATE TABLE sales.loot (x int)",
    "DROP TABLE sales.orders",
    "SELECT * INTO sales.copy FROM sales.orders",
    "SELECT * FROM sales.orders FOR UPDATE",
    "TRUNCATE sales.orders",
    "REFRESH MATERIALIZED VIEW sales.revenue_by_country",
    "DO $$ BEGIN DELETE FROM sales.orders; END $$",
)
CAPS = (None, 100)
PRIVILEGES = re.compile(r"permission denied|must be (a )?superuser|privileges of")
SECURITY_MD = ROOT / "SECURITY.md"


@pytest.fixture
def pg(pg_server: PgServer) -> Iterator[Database]:
    db = Database.open([pg_server.url()], Settings())
    yield db
    db.close()


# layer 1: PostgreSQL's parser -------------------------------------------------------------------------


def test_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 250
    kinds = {entry["kind"] for entry in CORPUS}
    assert {"write", "ddl", "copy-do-call", "transaction-control", "settings", "maintenance"} <= kinds
    assert {"listen-notify", "side-effect-functions", "multi-statement", "comment-and-quote-tricks"} <= kinds
    assert {
        "field-notation-calls",
        "server-state",
        "settings-and-paths",
        "secrets-and-large-objects",
    } <= kinds
    assert {"sql-from-text", "hostile-database"} <= kinds
    assert len([e for e in CORPUS if e["kind"] == "field-notation-calls"]) >= 27


def test_guard_refuses_the_whole_corpus_and_nothing_changes(pg_server: PgServer, pg_hostile: str) -> None:
    databases = {name: Database.open([pg_server.url(db=name)], Settings()) for name in (DATABASE, pg_hostile)}
    try:
        with sentinel(pg_server) as pid:
            before = server_state(pg_server, pg_hostile)
            passed, messages = [], []
            for entry in CORPUS:
                try:
                    databases[entry.get("db", DATABASE)].execute(entry["sql"], timeout=10)
                except GuardError as exc:
                    message = str(exc)
                    assert "\n" not in message and message
                    messages.append(message)
                    continue
                passed.append(entry["sql"])
            assert passed == []
            assert server_state(pg_server, pg_hostile) == before
            assert pg_server.psql(f"SELECT count(*) FROM pg_stat_activity WHERE pid = {pid}") == "1"
    finally:
        for db in databases.values():
            db.close()
    assert not [p for p in STOLEN if os.path.exists(p)]
    printed = "\n".join(messages)
    assert not [value for value in leaked_values(pg_server) if value and value in printed]


# layer 2: the READ ONLY transaction, with the guard bypassed ----------------------------------------------


def test_engine_lock_alone_refuses_writes(pg: Database, pg_server: PgServer) -> None:
    before = fingerprint(pg_server)
    for sql in ENGINE_WRITES:
        with pytest.raises(QueryError, match="read-only transaction"):
            pg.engine.run(sql, cap=None, timeout=10, cancel=None)  # no cap: the statement exactly as given
    assert fingerprint(pg_server) == before


def test_whole_corpus_through_the_engine_alone_changes_nothing(pg_server: PgServer, pg_hostile: str) -> None:
    """Whatever a statement the parser missed does, it runs in a READ ONLY transaction that is rolled
    back, and what outlives a rollback is reset. Each entry's `engine` mark says what stops it with
    the guard bypassed: nothing (`runs`: the guard is its only layer), the role's privileges
    (`role`), or, unmarked, the transaction, the protocol or the server (SECURITY.md counts them)."""
    databases = {name: Database.open([pg_server.url(db=name)], Settings()) for name in (DATABASE, pg_hostile)}
    before = server_state(pg_server, pg_hostile)
    outcome = {}
    try:
        for entry in CORPUS:
            if not entry["sql"].strip(" ;"):
                continue
            engine = databases[entry.get("db", DATABASE)].engine
            for cap in CAPS:  # as given, and wrapped in the row cap's LIMIT
                try:
                    engine.run(entry["sql"], cap=cap, timeout=10, cancel=None)
                    seen = "runs"
                except DataError as exc:
                    assert "\n" not in str(exc)
                    seen = "role" if PRIVILEGES.search(str(exc)) else None
                outcome.setdefault(entry["sql"], seen)  # as given
        assert server_state(pg_server, pg_hostile) == before
        assert databases[DATABASE].execute("SHOW default_transaction_read_only").rows() == [("on",)]
        assert databases[DATABASE].execute("SELECT count(*) FROM sales.orders").rows() == [(1500,)]
    finally:
        for db in databases.values():
            db.close()
    assert outcome == {e["sql"]: e.get("engine") for e in CORPUS if e["sql"].strip(" ;")}


def test_a_bypassed_set_does_not_outlive_its_statement(pg: Database) -> None:
    pg.engine.run("SET default_transaction_read_only = off", cap=None, timeout=10, cancel=None)
    pg.engine.run("SET statement_timeout = 0", cap=None, timeout=10, cancel=None)
    with pytest.raises(QueryError, match="read-only transaction"):
        pg.engine.run("DELETE FROM sales.orders", cap=None, timeout=10, cancel=None)
    assert pg.execute("SHOW default_transaction_read_only").rows() == [("on",)]


LEFT_BEHIND = {
    "advisory locks": "SELECT pg_advisory_lock(4242), pg_advisory_lock_shared(4243)",
    "the random seed": "SELECT setseed(0.5)",
    "prepared statements": "PREPARE astro_left_behind AS SELECT 1",
    "cursors": "DECLARE astro_cursor CURSOR WITH HOLD FOR SELECT 1",
    "LISTEN": "LISTEN astro_channel",
    "settings": "SELECT set_config('search_path', 'evil', false), set_config('work_mem', '64kB', false)",
}
"""Session state a statement can leave on its connection past ROLLBACK, and how."""


def test_session_state_does_not_outlive_a_statement(pg_server: PgServer) -> None:
    """With the guard bypassed, what a statement leaves on its pooled connection past ROLLBACK is
    gone before the next statement on that same connection."""
    seeded = float(pg_server.psql("SELECT setseed(0.5); SELECT random()").splitlines()[-1])
    with Database.open([pg_server.url()], Settings()) as db:

        def run(sql: str) -> list[tuple[object, ...]]:
            return db.engine.run(sql, cap=None, timeout=10, cancel=None).rows()

        ((pid,),) = run("SELECT pg_backend_pid()")
        ((path,),) = run("SHOW search_path")
        locks = f"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = {pid}"
        gone: dict[str, Callable[[], bool]] = {
            "advisory locks": lambda: pg_server.psql(locks) == "0",
            "the random seed": lambda: run("SELECT random()") != [(seeded,)],
            "prepared statements": lambda: run("SELECT count(*) FROM pg_prepared_statements") == [(0,)],
            "cursors": lambda: (
                run("SELECT count(*) FROM pg_cursors WHERE name <> ''") == [(0,)]
            ),  # '': this one
            "LISTEN": lambda: run("SELECT count(*) FROM pg_listening_channels()") == [(0,)],
            "settings": lambda: run("SHOW search_path") == [(path,)],
        }
        assert set(gone) == set(LEFT_BEHIND)
        for what, leave in LEFT_BEHIND.items():
            run(leave)
            assert gone[what](), what
        assert run("SELECT pg_backend_pid()") == [(pid,)]  # all of it on one connection


# limits stop the statement on the server -------------------------------------------------------------


def test_time_limit_stops_the_query_on_the_server(pg: Database, pg_server: PgServer) -> None:
    with pytest.raises(QueryTimeout, match="time limit"):
        pg.execute("SELECT pg_sleep(60) /* astro-runaway-1 */", timeout=1)
    wait_for(lambda: active_queries(pg_server, "astro-runaway-1") == 0)
    assert pg.execute("SELECT 1 AS ok").rows() == [(1,)]


def test_cancel_token_stops_the_query_on_the_server(pg: Database, pg_server: PgServer) -> None:
    token = CancelToken()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            pg.execute("SELECT pg_sleep(60) /* astro-runaway-2 */", cancel=token, timeout=120)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    wait_for(lambda: active_queries(pg_server, "astro-runaway-2") == 1)
    token.cancel()
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], QueryCancelled)
    wait_for(lambda: active_queries(pg_server, "astro-runaway-2") == 0)
    assert pg.execute("SELECT 2 AS ok").rows() == [(2,)]


def test_a_token_cancelled_before_the_query_stops_it_at_once(pg: Database) -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(QueryCancelled):
        pg.execute("SELECT pg_sleep(60)", cancel=token, timeout=120)
    assert pg.execute("SELECT 3 AS ok").rows() == [(3,)]


def test_server_gone_mid_query_is_one_line_and_the_next_query_reconnects(
    pg: Database, pg_server: PgServer
) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            pg.execute("SELECT pg_sleep(60) /* astro-killed */", timeout=120)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    wait_for(lambda: active_queries(pg_server, "astro-killed") == 1)
    pg_server.psql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%astro-killed%' "
        "AND pid <> pg_backend_pid()"
    )
    worker.join(timeout=60)
    assert len(errors) == 1 and isinstance(errors[0], QueryError)
    message = str(errors[0])
    assert "\n" not in message and "lost" in message
    assert pg.execute("SELECT 4 AS ok").rows() == [(4,)]


# bad input: one line, no traceback, no password -------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bad_targets(server: PgServer) -> dict[str, tuple[str, str]]:
    base = f"127.0.0.1:{server.port}"
    return {
        "refused": (
            f"postgresql://owner:{OWNER_PASSWORD}@127.0.0.1:{_free_port()}/shop",
            "Connection refused",
        ),
        "wrong password": (
            f"postgresql://owner:not-the-{OWNER_PASSWORD}@{base}/shop",
            "password authentication",
        ),
        "unknown database": (
            f"postgresql://owner:{OWNER_PASSWORD}@{base}/nosuch",
            'database "nosuch" does not',
        ),
        "ssl required": (f"postgresql://owner:{OWNER_PASSWORD}@{base}/shop?sslmode=require", "SSL"),
        "no password": (f"postgresql://owner@{base}/shop", "set PGPASSWORD or add it to ~/.pgpass"),
        "unknown host": (
            f"postgresql://owner:{OWNER_PASSWORD}@no-such-host.invalid/shop",
            "no-such-host.invalid",
        ),
    }


def test_bad_targets_fail_with_one_line(pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", "/nonexistent/pgpass")
    for name, (url, expected) in bad_targets(pg_server).items():
        with pytest.raises(TargetError) as caught:
            Database.open([url], Settings())
        message = str(caught.value)
        assert "\n" not in message, name
        assert expected in message, (name, message)
        assert OWNER_PASSWORD not in message, name
        assert message.startswith(redact_url(url) + ": "), name


def test_cli_bad_targets_exit_non_zero_with_one_line(pg_server: PgServer) -> None:
    targets = bad_targets(pg_server)
    for name in ("refused", "wrong password", "unknown database"):
        url, expected = targets[name]
        out = subprocess.run(
            [sys.executable, "-m", "astro_tui.cli", "sql", "SELECT 1", url],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert out.returncode != 0, name
        assert out.stderr.strip().count("\n") == 0, (name, out.stderr)
        assert expected in out.stderr and "Traceback" not in out.stderr, name
        assert OWNER_PASSWORD not in out.stdout + out.stderr, name


def test_query_errors_are_one_line_with_hints(pg: Database) -> None:
    with pytest.raises(QueryError) as caught:
        pg.execute("SELECT nme FROM sales.customers")
    message = str(caught.value)
    assert "\n" not in message and 'column "nme" does not exist' in message
    assert "HINT" in message and "name" in message


# SECURITY.md ------------------------------------------------------------------------------------------


def test_security_md_postgres_figures_match_the_suite(pg_server: PgServer) -> None:
    """The PostgreSQL section's table is what the PostgreSQL security tests iterate over, row for row."""
    from tests.support.postgres_attacks import LEGIT, MEMORY_LIMIT, OVER_THE_LIMIT

    n = len(CORPUS)
    runnable = len([e for e in CORPUS if e["sql"].strip(" ;")])
    marked = Counter(e.get("engine") for e in CORPUS)
    expected = {
        "Hostile PostgreSQL statements in the corpus": str(n),
        "… calls written as field selection (`(x).f`)": str(
            len([e for e in CORPUS if e["kind"] == "field-notation-calls"])
        ),
        "… run on the hostile database (`tests/data/hostile_postgres_db.sql`)": str(
            len([e for e in CORPUS if "db" in e])
        ),
        "Refused by the guard (pglast, then the server's catalog)": f"{n} / {n}",
        "Run by the READ ONLY transaction alone (guard bypassed): the guard is their only layer": str(
            marked["runs"]
        ),
        "Refused by the role's privileges alone (guard bypassed)": str(marked["role"]),
        "Writes refused by the READ ONLY transaction alone (guard bypassed)": (
            f"{len(ENGINE_WRITES)} / {len(ENGINE_WRITES)}"
        ),
        "Corpus statements run by the engine alone (as given, and under the row cap)": str(
            runnable * len(CAPS)
        ),
        "Changes to rows, sequences, relations, comments, roles, large objects, settings, "
        "advisory locks, other sessions": "0",
        "Values leaked (data directory, socket path, a large object, password hashes, pg_hba.conf)": "0",
        "Kinds of session state checked not to outlive a statement (guard bypassed)": str(len(LEFT_BEHIND)),
        'Legitimate statements run (`EXPLAIN (FORMAT json)`, CTEs named `"report.csv"` and '
        "`pg_settings`, windows, `LATERAL` …)": f"{len(LEGIT)} / {len(LEGIT)}",
        f"Results over a {MEMORY_LIMIT[:-2]} MB memory limit stopped inside it (peak read from the kernel)": (
            f"{len(OVER_THE_LIMIT)} / {len(OVER_THE_LIMIT)}"
        ),
        "Bad targets tested, each one line without the password": str(len(bad_targets(pg_server))),
    }
    text = SECURITY_MD.read_text(encoding="utf-8")
    section = text.split("## PostgreSQL", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2 and cells[0] not in ("What", "") and not cells[0].startswith("-"):
            rows[cells[0]] = cells[1]
    assert rows == expected


def test_idle_connections_dropped_by_the_server_are_replaced(pg: Database, pg_server: PgServer) -> None:
    assert pg.execute("SELECT 5 AS ok").rows() == [(5,)]
    pg_server.psql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE usename = 'owner' AND pid <> pg_backend_pid()"
    )
    assert pg.execute("SELECT 6 AS ok").rows() == [(6,)]
