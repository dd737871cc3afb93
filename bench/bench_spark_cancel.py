"""Spark: does a stop requested early leave the query's job running on the server?

Run: uv run python bench/bench_spark_cancel.py [--rounds N]

With adaptive query execution (Spark's default, on in this script's server) a
stage is launched on another thread; an interrupt that lands before that stage's
job is submitted ends the operation, yet the job still starts and runs to its end.
The engine therefore never sends the interrupt in a query's first `_SETTLE_S`.
This script cancels a ~10 s query at several moments after it was sent, with the
engine as it is and with the wait set to 0, interleaved, and counts the stops after
which the server was still busy: the next one-row query waited behind the old job.
It also prints how long the stop took to return, which the wait lengthens.

Starts its own Spark Connect server (`tests/support/spark_server.py`), so Java 17 and the
full pyspark must be installed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from astro_tui.config import Settings
from astro_tui.data.cancel import CancelToken
from astro_tui.data.database import Database
from astro_tui.data.engines.spark import engine as spark_engine
from astro_tui.data.errors import QueryCancelled
from tests.support.spark_server import running_server

QUERY = "SELECT count(*) AS n FROM range(2000000000) AS a WHERE a.id % 7 = 3"
NEXT = "SELECT count(*) FROM sales.customers"
AGES_S = (0.0, 0.05, 0.1, 0.3)
BUSY_S = 2.0


def stop_at(db: Database, age: float) -> tuple[float, float]:
    """Cancel QUERY `age` s after it is under the token: (seconds the stop took, seconds NEXT took)."""
    token = CancelToken()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            db.execute(QUERY, timeout=300, cancel=token)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    while not token.running:
        time.sleep(0.001)
    time.sleep(age)
    t0 = time.perf_counter()
    token.cancel()
    worker.join()
    stopped = time.perf_counter() - t0
    assert failure and isinstance(failure[0], QueryCancelled), failure
    t0 = time.perf_counter()
    db.execute(NEXT, timeout=300)
    return stopped, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    settle = spark_engine._SETTLE_S
    with running_server(adaptive=True) as server:
        db = Database.open([server.url], Settings())
        db.execute(NEXT, timeout=300)
        results: dict[tuple[float, float], list[tuple[float, float]]] = {}
        for _ in range(args.rounds):
            for age in AGES_S:
                for wait in (settle, 0.0):
                    spark_engine._SETTLE_S = wait
                    results.setdefault((wait, age), []).append(stop_at(db, age))
        spark_engine._SETTLE_S = settle
        db.close()
    for (wait, age), samples in sorted(results.items()):
        busy = sum(1 for _, after in samples if after > BUSY_S)
        took = statistics.median(s for s, _ in samples)
        print(
            f"wait {wait:.1f} s, stop {age:.2f} s after the start: job left running {busy}/{len(samples)}, "
            f"the stop returned in {took:.2f} s (median)"
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
