"""Sample warehouse build time and the guarded path's overhead against a raw DuckDB call.

Run: uv run python bench/bench_data.py

Raw and guarded runs are interleaved over two copies of the same file (DuckDB will
not open one file twice with different settings), so machine noise hits both alike.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.duckdb import guard
from astro_tui.data.engines.duckdb.sample import build_sample

AGGREGATE = "SELECT k % 97 AS bucket, sum(v) AS total, avg(v) AS mean FROM facts GROUP BY 1 ORDER BY 1"
REPEATS = 40


def _interleaved_ms(fns: dict[str, Callable[[], object]], repeats: int = REPEATS) -> dict[str, float]:
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            started = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        builds = [build_sample(Path(tmp) / f"w{i}.duckdb") for i in range(2)]
        each = ", ".join(f"{b:.2f}" for b in builds)
        print(f"sample warehouse build: {min(builds):.2f} s (best of 2; {each})")

        path = Path(tmp) / "facts.duckdb"
        con = duckdb.connect(str(path))
        con.execute("CREATE TABLE facts AS SELECT range AS k, (range * 7919) % 1000 AS v FROM range(1000000)")
        con.close()
        copy = Path(tmp) / "facts-raw.duckdb"
        shutil.copy(path, copy)

        settings = Settings(threads=2)
        raw = duckdb.connect(str(copy), read_only=True, config={"threads": 2, "memory_limit": "4GB"})
        with Database.open([str(path)], settings) as db:
            big = _interleaved_ms(
                {
                    "raw": lambda: raw.sql(AGGREGATE).to_arrow_table(),
                    "guarded": lambda: db.execute(AGGREGATE),
                }
            )
            tiny = _interleaved_ms(
                {
                    "raw": lambda: raw.sql("SELECT 1").to_arrow_table(),
                    "guarded": lambda: db.execute("SELECT 1"),
                    "guard only": lambda: guard.check(AGGREGATE),
                },
                repeats=300,
            )
        raw.close()
    ratio = big["guarded"] / big["raw"]
    print(
        f"aggregate over 1,000,000 rows: raw {big['raw']:.2f} ms, guarded {big['guarded']:.2f} ms, "
        f"ratio {ratio:.3f}x (target <= 1.1x)"
    )
    print(
        f"fixed cost per statement: SELECT 1 raw {tiny['raw']:.3f} ms, guarded {tiny['guarded']:.3f} ms; "
        f"the guard's parse + AST walk alone {tiny['guard only']:.3f} ms"
    )


if __name__ == "__main__":
    main()
