"""Sample warehouse build time, the guarded path's overhead against a raw DuckDB call, and the
guard's own time over the legitimate corpus.

Run: uv run python bench/bench_data.py

Raw and guarded runs are interleaved over two copies of the same file (DuckDB will
not open one file twice with different settings), so machine noise hits both alike.
The guard runs twice per statement: a first pass in astro's process (statements up to
2,000 characters) and the verdict in the worker, against the open file.
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
from astro_tui.data.engines.duckdb.resolved import FileDefinitions
from astro_tui.data.engines.duckdb.sample import build_sample
from tests.support.legit_duckdb import TPCH_DDL, legit_queries

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


def _guard_over_the_corpus(folder: Path) -> None:
    """Per statement, over the 69 legitimate statements (22 TPC-H, everyday analytics): the first
    pass, the worker's verdict on a plain file (a word lookup, no binding), and the verdict on a
    file that defines a macro under a built-in's name (every statement bound twice)."""
    queries = list(legit_queries().values())
    plain = folder / "tpch.duckdb"
    con = duckdb.connect(str(plain))
    con.execute(TPCH_DDL)
    con.close()
    shadowed = folder / "tpch_shadowed.duckdb"
    shutil.copy(plain, shadowed)
    con = duckdb.connect(str(shadowed))
    con.execute("CREATE SCHEMA elsewhere; CREATE MACRO elsewhere.sum(x) AS 42")
    con.close()
    config = {"enable_external_access": False}
    plain_con = duckdb.connect(str(plain), read_only=True, config=config)
    shadowed_con = duckdb.connect(str(shadowed), read_only=True, config=config)
    on_plain, on_shadowed = FileDefinitions.of(plain_con), FileDefinitions.of(shadowed_con)
    passes = {
        "first pass (astro's process)": lambda q: guard.check(q, database=guard.LATER),
        "verdict in the worker, plain file": lambda q: guard.check(q, database=on_plain),
        "verdict in the worker, a built-in shadowed": lambda q: guard.check(q, database=on_shadowed),
    }
    corpus = _interleaved_ms({name: lambda p=p: [p(q) for q in queries] for name, p in passes.items()}, 15)
    plain_con.close()
    shadowed_con.close()
    for name, total in corpus.items():
        print(f"guard over the legitimate corpus, {name}: {total / len(queries):.3f} ms per statement")


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
                    "guard only": lambda: guard.check(AGGREGATE, database=guard.LATER),
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
        f"the guard's first pass on the aggregate {tiny['guard only']:.3f} ms"
    )
    with tempfile.TemporaryDirectory() as tmp:
        _guard_over_the_corpus(Path(tmp))


if __name__ == "__main__":
    main()
