"""Spark: what the two gates add to a statement, interleaved against the raw query; the first gate's bound.

Run: uv run python bench/bench_spark_guard.py [--runs N]

Starts its own Spark Connect server (`tests/support/spark_server.py`, the suite's small
dataset). Per query, interleaved: the raw Spark Connect client alone (the text
as a relation, `limit(cap + 1)`, `toArrow`), and astro's `Database.execute`
(sqlglot's gate, the server's EXPLAIN and the verdict on it, then the same
fetch, batch by batch). Also timed alone: the first gate (`guard.check`) and
the verdict's round trip (`engine.judge`). Then 1,000,000 rows × 5 columns with no row
cap, astro (batches within the byte budget) against the raw `toArrow`. Last,
the first gate on the largest input it accepts, for time and peak memory in
astro's process.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.spark import guard, remote
from astro_tui.data.engines.spark.engine import SparkEngine
from astro_tui.data.errors import GuardError
from tests.support.spark_server import running_server

QUERIES = {
    "GROUP BY over 1,500 rows": "SELECT status, count(*) AS n, sum(amount) FROM sales.orders GROUP BY status",
    "join + window, 50 rows": (
        "SELECT c.country, o.id, rank() OVER (PARTITION BY c.country ORDER BY o.amount DESC) AS r "
        "FROM sales.orders o JOIN sales.customers c ON o.customer_id = c.id ORDER BY o.id LIMIT 50"
    ),
    "SHOW TABLES": "SHOW TABLES IN sales",
}
CAP = 100_000
BIG = "SELECT * FROM bench.big"
DATASET = [
    "CREATE DATABASE bench",
    """CREATE TABLE bench.big USING parquet AS
       SELECT id, concat('label-', id) AS label, id * 7 AS amount, id / 3.0D AS ratio,
              timestamp_seconds(1704067200 + id) AS at
       FROM range(1000000)""",
]


def ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    from tests.support.spark_server import _DATASET

    with running_server([*_DATASET, *DATASET]) as server:
        raw = server.session()
        with Database.open([server.url], Settings()) as db:
            engine = db.engine
            assert isinstance(engine, SparkEngine)
            print(f"Spark {engine.version}; {args.runs} interleaved runs per side, medians")
            print("| query | raw | astro | astro − raw | first gate | verdict (EXPLAIN + walk) |")
            print("|---|---|---|---|---|---|")
            for name, sql in QUERIES.items():
                times: dict[str, list[float]] = {"raw": [], "astro": [], "gate": [], "verdict": []}
                for run in range(args.runs + 1):
                    t0 = time.perf_counter()
                    remote.relation(raw, sql).limit(CAP + 1).toArrow()
                    t1 = time.perf_counter()
                    db.execute(sql, row_cap=CAP)
                    guard.inspect.cache_clear()  # `execute` keeps its reading: time a fresh one
                    t2 = time.perf_counter()
                    expected = guard.inspect(sql, frozenset(engine.user_functions), engine.substitution_off)
                    t3 = time.perf_counter()
                    engine.judge(sql, expected, lambda f: f.result(timeout=120))
                    t4 = time.perf_counter()
                    guard.inspect.cache_clear()
                    if run:  # the first pair warms both sides
                        times["raw"].append(t1 - t0)
                        times["astro"].append(t2 - t1)
                        times["gate"].append(t3 - t2)
                        times["verdict"].append(t4 - t3)
                r, a = ms(times["raw"]), ms(times["astro"])
                print(
                    f"| {name} | {r:.0f} ms | {a:.0f} ms ({a / r:.2f}×) | {a - r:+.0f} ms "
                    f"| {ms(times['gate']):.2f} ms | {ms(times['verdict']):.0f} ms |"
                )
            big_raw, big_astro = [], []
            raw.sql(BIG).toArrow()
            db.execute(BIG, row_cap=None, timeout=None)
            for _ in range(5):
                t0 = time.perf_counter()
                assert raw.sql(BIG).toArrow().num_rows == 1_000_000
                t1 = time.perf_counter()
                assert db.execute(BIG, row_cap=None, timeout=None).row_count == 1_000_000
                big_raw.append(t1 - t0)
                big_astro.append(time.perf_counter() - t1)
            r, a = ms(big_raw), ms(big_astro)
            print(
                f"1,000,000 rows x 5 columns, no row cap, 5 interleaved runs: raw toArrow {r:.0f} ms, "
                f"astro {a:.0f} ms ({a / r:.2f}x)"
            )
    largest = "SELECT " + " + ".join(["1"] * 2_490)
    for label, sql in (("4,979 tokens", largest), ("5,001 tokens (refused)", largest + " + 1" * 11)):
        guard.inspect.cache_clear()
        t0 = time.perf_counter()
        try:
            guard.check(sql)
            outcome = "passed"
        except GuardError as exc:
            outcome = str(exc)
        elapsed = time.perf_counter() - t0
        guard.inspect.cache_clear()
        tracemalloc.start()
        with contextlib.suppress(GuardError):
            guard.check(sql)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"first gate on {len(sql):,} characters, {label}: {elapsed * 1000:.0f} ms, "
            f"peak {peak / 2**20:.0f} MiB (traced), {outcome[:60]}"
        )


if __name__ == "__main__":
    main()
