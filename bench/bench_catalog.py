"""Catalog, shell and search timings on a 10,000-table × 30-column DuckDB file.

    uv run python bench/bench_catalog.py [--tables N] [--columns N] [--repeat N]

The file is built once under bench/.cache/ (a couple of minutes; see
bench/synthetic.py) and reused. Prints the median of several runs per step,
next to the target from the issue; first-use costs (cards rendered, index
built) are printed separately since they are paid once per session.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from astro_tui.catalog.introspect import load_catalog
from astro_tui.catalog.search import MetadataIndex, search_metadata
from astro_tui.catalog.shell import Shell
from astro_tui.config import Settings
from astro_tui.data.database import Database
from bench.synthetic import synthetic_catalog_db

CACHE = Path(__file__).resolve().parent / ".cache"


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    return statistics.median(timed(fn) for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--columns", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    path = CACHE / f"catalog-{args.tables}x{args.columns}.duckdb"  # shared with bench_vs_harlequin
    started = time.perf_counter()
    synthetic_catalog_db(path, args.tables, args.columns)
    print(f"synthetic file: {path} (ready in {time.perf_counter() - started:.1f} s)")

    rows: list[tuple[str, float, str]] = []
    loads = max(3, args.repeat // 2)
    cache = Path(tempfile.mkdtemp(prefix="bench-catalog-"))

    def first_read(n: int) -> float:
        """Open, read the catalog with an empty cache (the worker opens the file and reads it)."""
        os.environ["ASTRO_CACHE_DIR"] = str(cache / f"first-{n}")
        with Database.open([str(path)], Settings()) as fresh:
            return timed(lambda: load_catalog(fresh))

    def first_outline(n: int) -> tuple[float, float]:
        """The same, in two phases: the outline (schemas and tables), then the columns."""
        os.environ["ASTRO_CACHE_DIR"] = str(cache / f"outline-{n}")
        with Database.open([str(path)], Settings()) as fresh:
            return timed(fresh.load_outline), timed(lambda: load_catalog(fresh))

    rows.append(
        (
            "catalog, first open (worker opens the file, reads it)",
            statistics.median(first_read(n) for n in range(loads)),
            "2000",
        )
    )
    phases = [first_outline(n) for n in range(loads)]
    rows.append(
        ("  outline first (opens the file, reads tables)", statistics.median(p[0] for p in phases), "-")
    )
    rows.append(("  then the columns", statistics.median(p[1] for p in phases), "-"))
    os.environ["ASTRO_CACHE_DIR"] = str(cache / "kept")
    db = Database.open([str(path)], Settings())
    catalog = load_catalog(db)  # writes the cache
    rows.append(("catalog, opened before (from the cache)", median_ms(lambda: load_catalog(db), loads), "-"))
    print(f"catalog: {len(catalog.schemas)} schemas, {len(catalog.tables):,} tables")
    repeat = args.repeat

    rows.append(
        ("shell construction (tree of all files)", median_ms(lambda: Shell(catalog, db), repeat), "-")
    )
    shell = Shell(catalog, db)
    schema = catalog.schemas[0]
    some = schema.tables[len(schema.tables) // 2]
    card = f"'/{schema.name}/{some.name}.{some.kind}'"
    fresh = Shell(catalog, db)
    rows.append(("cat one card, first time", timed(lambda: fresh.run(f"cat {card}")), "10"))
    first_grep = timed(lambda: shell.run("grep -ri email /"))
    rows.append(("grep -ri email / (first: renders every card)", first_grep, "-"))
    commands = [
        ("ls /", "10"),
        (f"ls -l /{schema.name}", "10"),
        (f"cat {card}", "10"),
        ("grep -ri email /", "200"),
        ("grep -ril revenue /", "200"),
        ("grep -rE 'region_(id|name)' /", "200"),
        ("grep -rc status /", "200"),
        ("grep -ri email / | wc -l", "200"),
        ("find / -name '*invoice*'", "-"),
        ("find / -type f | wc -l", "-"),
        ("tree -L 1 /", "-"),
    ]
    for command, target in commands:
        rows.append((command, median_ms(lambda c=command: shell.run(c), repeat), target))

    index_ms = timed(lambda: MetadataIndex(catalog))
    rows.append(("search index build (once per session)", index_ms, "-"))
    index = MetadataIndex(catalog)
    queries = [
        ["customer email address"],
        ["revenue by region per month"],
        ["shipment delivery carrier route"],
        ["refund amount for orders", "returned items"],
        ["custmer segmnet"],
    ]
    for query in queries:
        rows.append(
            (
                f"search_metadata {query}",
                median_ms(lambda q=query: search_metadata(index, None, q), repeat),
                "100",
            )
        )
    rows.append(
        (
            "search_metadata + keyword 'East China' (scans data, 2 s budget)",
            median_ms(lambda: search_metadata(index, db, ["region"], ["East China"]), 3),
            "-",
        )
    )
    db.close()
    shutil.rmtree(cache, ignore_errors=True)

    width = max(len(r[0]) for r in rows)
    print(f"\n{'step':<{width}}  {'median ms':>10}  {'target ms':>9}")
    for name, ms, target in rows:
        print(f"{name:<{width}}  {ms:>10.1f}  {target:>9}")


if __name__ == "__main__":
    main()
