"""How the hard limits hold (issue 11): each runaway statement, how long until it ended and how
much memory its worker process reached, under a 3 s time limit and a 1 GB memory limit.

    uv run python bench/bench_limits.py
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from pathlib import Path

import duckdb

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.errors import DataError

RUNAWAY = {
    "length(lpad('', 2147483647, 'x'))": "SELECT length(lpad('', 2147483647, 'x'))",
    "len(list_sort(range(300000000)))": "SELECT len(list_sort(range(300000000)))",
    "count(*) of unnest(range(200000000))": "SELECT count(*) FROM (SELECT unnest(range(200000000)))",
    "6,500-term UNION ALL": "SELECT 1 AS x" + " UNION ALL SELECT 1" * 6500,
}


def main() -> None:
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    settings = dataclasses.replace(Settings(), memory_limit="1GB", query_timeout_s=3)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.duckdb"
        duckdb.connect(str(path)).close()
        with Database.open([str(path)], settings) as db:
            db.execute("SELECT 1")
            for name, sql in RUNAWAY.items():
                db.engine._pool.peak_rss = 0
                started = time.perf_counter()
                try:
                    db.execute(sql)
                    outcome = "finished"
                except DataError as exc:
                    outcome = str(exc)
                elapsed = time.perf_counter() - started
                peak = db.engine._pool.peak_rss / 2**20
                print(f"{name:40} {elapsed:5.2f} s  worker peak +{peak:6.0f} MB  {outcome}")


if __name__ == "__main__":
    main()
