"""PostgreSQL: catalog load at 10,000 tables × 20 columns, a 1,000,000-row fetch vs the raw driver,
and the guarded overhead on a small query.

Run: uv run python bench/bench_postgres.py [--tables N] [--runs N]

Starts its own private server (the test suite's `tests/support/pg_server.py`: initdb into a
temp dir, a free port, removed at the end), so PostgreSQL must be installed.
The raw side is the ADBC driver itself (`adbc_driver_postgresql.dbapi`, autocommit,
`fetch_arrow_table`); astro's side is `Database.execute`, i.e. the guard (the text, then
the server's catalog), the READ ONLY transaction with its limits, the row cap pushed
down as a LIMIT with the server's row-width check, the session reset, and Arrow
normalisation. Runs are interleaved so both sides see the same load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import adbc_driver_postgresql.dbapi as raw_driver

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.postgres import guard
from tests.support.pg_server import running_server

BIG = """
CREATE TABLE public.big AS
SELECT g AS id, md5(g::text) AS label, g * 7 AS amount, g / 3.0::float8 AS ratio,
       timestamptz '2024-01-01' + g * interval '1 second' AS at
FROM generate_series(1, 1000000) AS g;
ANALYZE public.big;
CREATE TABLE public.small AS
SELECT g AS id, (ARRAY['a','b','c'])[1 + g % 3] AS kind FROM generate_series(1, 1000) AS g;
ANALYZE public.small;
"""
SMALL_QUERY = "SELECT kind, count(*) AS n FROM public.small GROUP BY kind ORDER BY kind"
SCOPE = "public.big.label"
WIDE_SCOPE = "w7.t7.c2"


def wide_schema(tables: int) -> str:
    """`tables` tables of 20 columns over 20 schemas, a comment on every tenth, built server-side."""
    columns = ", ".join(f"c{i} {'text' if i % 3 else 'integer'}" for i in range(1, 21))
    return f"""
    DO $$ BEGIN
      FOR s IN 0..19 LOOP EXECUTE format('CREATE SCHEMA w%s', s); END LOOP;
      FOR i IN 1..{tables} LOOP
        EXECUTE format('CREATE TABLE w%s.t%s (id integer PRIMARY KEY, {columns})', i % 20, i);
        IF i % 10 = 0 THEN
          EXECUTE format('COMMENT ON TABLE w%s.t%s IS %L', i % 20, i, 'table number ' || i);
        END IF;
        IF i % 500 = 0 THEN COMMIT; END IF;  -- each table takes locks until its transaction ends
      END LOOP;
    END $$;
    """


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--skip-catalog", action="store_true", help="only the fetch and overhead figures")
    args = parser.parse_args()

    print("starting a private PostgreSQL and loading 1,000,000 rows …", flush=True)
    with running_server(BIG) as server:
        url = server.url()
        settings = Settings(row_cap=1_000_000, query_timeout_s=300)
        db = Database.open([url], settings)
        raw = raw_driver.connect(url, autocommit=True)
        cursor = raw.cursor()

        def raw_fetch(sql: str) -> None:
            cursor.execute(sql)
            cursor.fetch_arrow_table()

        # 1,000,000 rows × 5 columns
        big = "SELECT * FROM public.big"
        assert db.execute(big).row_count == 1_000_000
        raw_fetch(big)
        ours, uncapped, theirs = [], [], []
        for _ in range(args.runs):
            ours.append(timed(lambda: db.execute(big)))
            theirs.append(timed(lambda: raw_fetch(big)))
            uncapped.append(timed(lambda: db.execute(big, row_cap=None)))
        a, u, r = statistics.median(ours), statistics.median(uncapped), statistics.median(theirs)
        print(f"1,000,000 × 5 fetch: astro {a * 1000:.0f} ms vs raw ADBC {r * 1000:.0f} ms: {a / r:.2f}×")
        print(f"  astro without a row cap (no LIMIT wrapper): {u * 1000:.0f} ms: {u / r:.2f}×")

        # a small query: the fixed cost of the guard and the READ ONLY transaction
        ours, theirs = [], []
        for _ in range(60):
            ours.append(timed(lambda: db.execute(SMALL_QUERY)))
            theirs.append(timed(lambda: raw_fetch(SMALL_QUERY)))
        a, r = statistics.median(ours), statistics.median(theirs)
        print(f"small query: astro {a * 1000:.2f} ms vs raw {r * 1000:.2f} ms (+{(a - r) * 1000:.2f} ms)")
        checks = [timed(lambda: guard.check(SMALL_QUERY)) for _ in range(200)]
        print(f"the guard's text half (pglast parse + walk): {statistics.median(checks) * 1000:.3f} ms")
        resolved = [timed(lambda: db.engine.check(SMALL_QUERY)) for _ in range(60)]
        print(f"the whole guard (text + the catalog query): {statistics.median(resolved) * 1000:.2f} ms")
        scoped = Database.open([url], Settings(row_cap=1_000_000, query_timeout_s=300, hide=(SCOPE,)))
        plain_checks, scoped_checks = [], []
        for _ in range(60):
            plain_checks.append(timed(lambda: db.engine.check(SMALL_QUERY)))
            scoped_checks.append(timed(lambda: scoped.engine.check(SMALL_QUERY)))
        p, q = statistics.median(plain_checks), statistics.median(scoped_checks)
        print(f"the whole guard under a scope (--hide {SCOPE}): {q * 1000:.2f} ms, {q / p:.2f}× unscoped")
        scoped.close()
        open_times = [timed(lambda: Database.open([url], settings).close()) for _ in range(5)]
        print(f"open (ADBC database + first session): {statistics.median(open_times) * 1000:.0f} ms")
        cursor.close()
        raw.close()
        db.close()
        if args.skip_catalog:
            return

        # catalog at scale
        print(f"creating {args.tables:,} tables × 20 columns …", flush=True)
        started = time.perf_counter()
        server.psql(wide_schema(args.tables), user="owner")
        server.psql("ANALYZE")
        print(f"  (built in {time.perf_counter() - started:.0f} s)")
        db = Database.open([url], settings)
        loads = []
        for _ in range(5):
            loads.append(timed(db.load_catalog))
        catalog = db.load_catalog()
        columns = sum(len(t.columns) for t in catalog.tables)
        print(
            f"catalog load, {len(catalog.tables):,} tables / {columns:,} columns: "
            f"median {statistics.median(loads):.2f} s (min {min(loads):.2f}, max {max(loads):.2f})"
        )
        open_times = [timed(lambda: Database.open([url], settings).close()) for _ in range(3)]
        print(f"open at that size: {statistics.median(open_times) * 1000:.0f} ms")
        scoped = Database.open([url], Settings(row_cap=1_000_000, query_timeout_s=300, hide=(WIDE_SCOPE,)))
        plain_loads, scoped_loads = [], []
        for _ in range(3):
            plain_loads.append(timed(db.load_catalog))
            scoped_loads.append(timed(scoped.load_catalog))
        p, q = statistics.median(plain_loads), statistics.median(scoped_loads)
        print(f"catalog load under a scope (--hide {WIDE_SCOPE}): {q:.2f} s vs {p:.2f} s: {q / p:.2f}×")
        scoped.close()
        wide = "SELECT count(*) FROM w7.t7 a JOIN w8.t8 b ON b.id = a.id WHERE a.c2 LIKE 'x%'"
        resolved = [timed(lambda: db.engine.check(wide)) for _ in range(30)]
        print(f"the whole guard at that size: {statistics.median(resolved) * 1000:.2f} ms")
        db.close()


if __name__ == "__main__":
    main()
