"""Spark: catalog load at 1,000 tables, and a 1,000,000-row result through astro vs the raw client.

Run: uv run python bench/bench_spark.py [--tables N] [--runs N]

Starts its own Spark Connect server (the test suite's `tests/support/spark_server.py`:
local[2], a free port, a temp dir removed at the end), so Java 17 and the full
pyspark must be installed. The raw side is the Spark Connect client alone
(`spark.sql(q).toArrow()`); astro's side is `Database.execute`: the sqlglot
gate, the server's EXPLAIN and the verdict on it, the operation tag, the row cap
as a LIMIT on the plan, Arrow read batch by batch within the byte budget,
without Spark's field metadata. Runs are interleaved so both sides see the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.spark import guard
from tests.support.spark_server import running_server

BIG = "SELECT * FROM bench.big"
SMALL = "SELECT kind, count(*) AS n FROM bench.small GROUP BY kind ORDER BY kind"
DATASET = [
    "CREATE DATABASE bench",
    """CREATE TABLE bench.big USING parquet AS
       SELECT id, concat('label-', id) AS label, id * 7 AS amount, id / 3.0D AS ratio,
              timestamp_seconds(1704067200 + id) AS at
       FROM range(1000000)""",
    """CREATE TABLE bench.small USING parquet AS
       SELECT id, element_at(array('a', 'b', 'c'), CAST(1 + id % 3 AS INT)) AS kind FROM range(1000)""",
]


def wide_schema(server, tables: int) -> None:  # type: ignore[no-untyped-def]
    """`tables` empty tables of 20 columns over 10 databases; a comment on every tenth table and column."""
    for d in range(10):
        server.sql(f"CREATE DATABASE IF NOT EXISTS w{d}")
    for i in range(tables):
        columns = ", ".join(
            f"c{c} {'STRING' if c % 3 else 'INT'}" + (f" COMMENT 'column {c} of {i}'" if c % 10 == 0 else "")
            for c in range(20)
        )
        comment = f" COMMENT 'table number {i}'" if i % 10 == 0 else ""
        server.sql(f"CREATE TABLE w{i % 10}.t{i} ({columns}) USING parquet{comment}")


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with running_server(DATASET) as server:
        started = time.perf_counter()
        wide_schema(server, args.tables)
        print(f"built {args.tables} tables in {time.perf_counter() - started:.1f} s")
        settings = Settings()

        opens, loads = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            db = Database.open([server.url], settings)
            t1 = time.perf_counter()
            catalog = db.load_catalog()
            t2 = time.perf_counter()
            db.close()
            opens.append(t1 - t0)
            loads.append(t2 - t1)
        n_tables = sum(len(s.tables) for s in catalog.schemas)
        n_columns = sum(len(t.columns) for s in catalog.schemas for t in s.tables)
        commented = sum(1 for s in catalog.schemas for t in s.tables for c in t.columns if c.comment)
        print(
            f"catalog load, {n_tables} tables / {n_columns} columns ({commented} column comments): "
            f"first {loads[0] * 1000:.0f} ms (a cold server), then median {median_ms(loads[1:])} "
            f"(min {min(loads[1:]) * 1000:.0f}, max {max(loads[1:]) * 1000:.0f}); open {median_ms(opens)}"
        )

        db = Database.open([server.url], settings)
        raw = server.session()
        raw.sql(BIG).toArrow()  # warm both paths once
        db.execute(BIG, row_cap=None, timeout=None)
        astro_capped, astro_uncapped, raw_times = [], [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            table = raw.sql(BIG).toArrow()
            raw_times.append(time.perf_counter() - t0)
            assert table.num_rows == 1_000_000
            t0 = time.perf_counter()
            result = db.execute(BIG, row_cap=1_000_000, timeout=None)
            astro_capped.append(time.perf_counter() - t0)
            assert result.row_count == 1_000_000 and not result.truncated
            t0 = time.perf_counter()
            result = db.execute(BIG, row_cap=None, timeout=None)
            astro_uncapped.append(time.perf_counter() - t0)
        ratio = statistics.median(astro_capped) / statistics.median(raw_times)
        ratio_uncapped = statistics.median(astro_uncapped) / statistics.median(raw_times)
        print(
            f"1,000,000 rows x 5 columns: astro (cap 1,000,000) {median_ms(astro_capped)}, "
            f"astro (no cap) {median_ms(astro_uncapped)}, raw toArrow {median_ms(raw_times)}: "
            f"{ratio:.2f}x / {ratio_uncapped:.2f}x ({args.runs} interleaved runs)"
        )

        small_astro, small_raw = [], []
        for _ in range(20):
            t0 = time.perf_counter()
            raw.sql(SMALL).toArrow()
            small_raw.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            db.execute(SMALL)
            small_astro.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(200):
            guard.inspect.cache_clear()  # the engine keeps the last readings: time a fresh one
            guard.check(SMALL)
        guard_ms = (time.perf_counter() - t0) / 200 * 1000
        print(
            f"small query (GROUP BY over 1,000 rows): astro {median_ms(small_astro)} vs raw "
            f"{median_ms(small_raw)}; the guard alone {guard_ms:.2f} ms"
        )
        db.close()
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
