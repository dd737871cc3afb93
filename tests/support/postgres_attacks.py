"""The hostile PostgreSQL corpus (tests/data/hostile_postgres.json) and how a test sees that nothing leaked
or ran on the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections.abc import Iterator

from tests.support import DATA
from tests.support.pg_server import DATABASE, OWNER, PgServer
from tests.support.waiting import wait_for

CORPUS = json.loads((DATA / "hostile_postgres.json").read_text())


SENTINEL = "astro-sentinel"


SETTINGS_SQL = "SELECT string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_settings"


LARGE_OBJECT_SECRET = "astro-lo-secret-5b1e"


STOLEN = ("/tmp/astro-stolen.csv", "/tmp/astro-pwned", "/tmp/astro-lo")


FINGERPRINT_SQL = """
SELECT concat_ws(' | ',
  (SELECT count(*) || ':' || md5(string_agg(t::text, ',' ORDER BY t.id)) FROM sales.orders t),
  (SELECT count(*) || ':' || md5(string_agg(t::text, ',' ORDER BY t.id)) FROM sales.customers t),
  (SELECT count(*) || ':' || md5(string_agg(t::text, ',' ORDER BY t.id)) FROM public.events t),
  (SELECT string_agg(schemaname || '.' || sequencename || '=' || coalesce(last_value::text, 'null'), ',')
     FROM pg_sequences),
  (SELECT string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ','
                     ORDER BY n.nspname, c.relname)
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname !~ '^pg_'
       AND n.nspname <> 'information_schema'),
  (SELECT string_agg(description, ',' ORDER BY objoid, objsubid) FROM pg_description
     WHERE objoid >= 16384),
  (SELECT string_agg(rolname || ':' || rolsuper::text, ',' ORDER BY rolname) FROM pg_roles),
  (SELECT count(*) FROM pg_largeobject_metadata),
  (SELECT string_agg(setconfig::text, ',') FROM pg_db_role_setting))
"""


HOSTILE_FINGERPRINT_SQL = """
SELECT concat_ws(' | ',
  (SELECT count(*) || ':' || md5(string_agg(t::text, ',' ORDER BY t.id)) FROM trojan.items t),
  (SELECT count(*) FROM trojan.guarded),
  (SELECT string_agg(lo.oid::text || ':' || md5(lo_get(lo.oid)), ',') FROM pg_largeobject_metadata lo),
  (SELECT string_agg(p.proname, ',' ORDER BY p.proname) FROM pg_proc p
     JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname IN ('trojan', 'public')),
  (SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_class c
     JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname IN ('trojan', 'public')))
"""


def fingerprint(server: PgServer) -> str:
    return server.psql(FINGERPRINT_SQL)


def active_queries(server: PgServer, needle: str) -> int:
    return int(
        server.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
            f"AND query LIKE '%{needle}%' AND pid <> pg_backend_pid()"
        )
    )


@contextlib.contextmanager
def sentinel(server: PgServer) -> Iterator[int]:
    """Another session of the tables' owner, idle in a long query: what `pg_terminate_backend`
    and `pg_cancel_backend` in the corpus aim at. Yields its backend pid."""
    where = f"application_name = '{SENTINEL}'"
    psql = [str(server.bin_dir / "psql"), "-X", "-q", "-h", str(server.socket_dir), "-p", str(server.port)]
    child = subprocess.Popen(
        [*psql, "-U", OWNER, "-d", DATABASE, "-c", "SELECT pg_sleep(3600)"],
        env={**os.environ, "PGAPPNAME": SENTINEL},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        active = f"SELECT count(*) FROM pg_stat_activity WHERE {where} AND state = 'active'"
        wait_for(lambda: server.psql(active) == "1", what="the sentinel session")
        yield int(server.psql(f"SELECT pid FROM pg_stat_activity WHERE {where}"))
    finally:
        child.kill()
        child.wait()
        server.psql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE {where}")


def server_state(server: PgServer, hostile: str) -> dict[str, str]:
    """What must not change: both databases' data, and what outlives a transaction."""
    return {
        "shop": fingerprint(server),
        "hostile": server.psql(HOSTILE_FINGERPRINT_SQL, db=hostile),
        "advisory locks": server.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"),
        "settings": server.psql(SETTINGS_SQL),
    }


def leaked_values(server: PgServer) -> list[str]:
    """Values the corpus tries to read; none may appear in anything astro prints."""
    return [
        server.psql("SHOW data_directory"),  # also the prefix of every path the server would show
        str(server.socket_dir),
        LARGE_OBJECT_SECRET,
        "SCRAM-SHA-256$",  # a password hash
        "scram-sha-256",  # pg_hba.conf
        "postmaster.opts",  # a file of the data directory
    ]


LEGIT_PATH = DATA / "legit_postgres.sql"


def legit_queries() -> dict[str, str]:
    parts = re.split(r"^-- name: (\w+)\n", LEGIT_PATH.read_text(encoding="utf-8"), flags=re.M)[1:]
    return {name: sql.strip() for name, sql in zip(parts[::2], parts[1::2], strict=True)}


LEGIT = legit_queries()


MEMORY_LIMIT = "500MB"


OVER_THE_LIMIT = {
    "SELECT repeat('x', 100000000) FROM generate_series(1, 10)": "one row holds 100 MB",
    "SELECT repeat('x', 1000000) AS x FROM generate_series(1, 3000)": "result stopped after",
    "SELECT * FROM trojan.wide": "one row holds 200 MB",
}
