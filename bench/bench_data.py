"""Sample warehouse build time and the guarded path's overhead against a raw DuckDB call.

Run: uv run python bench/bench_data.py
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.sample import build_sample

AGGREGATE = "SELECT k % 97 AS bucket, sum(v) AS total, avg(v) AS mean FROM facts GROUP BY 1 ORDER BY 1"
REPEATS = 30


def _median_ms(fn, repeats: int = REPEATS) -> float:  # type: ignore[no-untyped-def]
    fn()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        builds = [build_sample(Path(tmp) / f"w{i}.duckdb") for i in range(2)]
        each = ", ".join(f"{b:.2f}" for b in builds)
        print(f"sample warehouse build: {min(builds):.2f} s (best of 2; {each})")

        path = Path(tmp) / "facts.duckdb"
        con = duckdb.connect(str(path))
        con.execute("CREATE TABLE facts AS SELECT range AS k, (range * 7919) % 1000 AS v FROM range(1000000)")
        con.close()

        settings = Settings(threads=2)
        raw = duckdb.connect(str(path), read_only=True, config={"threads": 2})
        raw_ms = _median_ms(lambda: raw.execute(AGGREGATE).to_arrow_table())
        with Database.open([str(path)], settings) as db:
            guarded_ms = _median_ms(lambda: db.execute(AGGREGATE))
            tiny_raw = _median_ms(lambda: raw.execute("SELECT 1").fetchall(), 200)
            tiny_guarded = _median_ms(lambda: db.execute("SELECT 1"), 200)
        raw.close()
    print(
        f"aggregate over 1,000,000 rows: raw {raw_ms:.2f} ms, guarded {guarded_ms:.2f} ms, "
        f"ratio {guarded_ms / raw_ms:.3f}x (target <= 1.1x)"
    )
    print(f"fixed cost per statement (SELECT 1): raw {tiny_raw:.3f} ms, guarded {tiny_guarded:.3f} ms")


if __name__ == "__main__":
    main()
