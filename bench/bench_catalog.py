"""Catalog, shell and search timings on a 10,000-table × 30-column DuckDB file.

    uv run python bench/bench_catalog.py [--tables N] [--columns N] [--repeat N]

The file is built once under bench/.cache/ (a couple of minutes; see
bench/synthetic.py) and reused. Prints the median of several runs per step,
next to the target from the issue; first-use costs (cards rendered, index
built) are printed separately since they are paid once per session.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from astro_tui.catalog.introspect import load_catalog  # noqa: E402
from astro_tui.catalog.search import MetadataIndex, search_metadata  # noqa: E402
from astro_tui.catalog.shell import Shell  # noqa: E402
from astro_tui.config import Settings  # noqa: E402
from astro_tui.data.database import Database  # noqa: E402
from bench.synthetic import synthetic_catalog_db  # noqa: E402

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

    path = CACHE / f"catalog_{args.tables}x{args.columns}.duckdb"
    started = time.perf_counter()
    synthetic_catalog_db(path, args.tables, args.columns)
    print(f"synthetic file: {path} (ready in {time.perf_counter() - started:.1f} s)")

    rows: list[tuple[str, float, str]] = []
    db_open = [timed(lambda: Database.open([str(path)], Settings()).close()) for _ in range(3)]
    rows.append(("open database (DuckDB reads its catalog)", statistics.median(db_open), "-"))
    db = Database.open([str(path)], Settings())
    catalog = load_catalog(db)
    repeat = args.repeat
    rows.append(("catalog load (load_catalog)", median_ms(lambda: load_catalog(db), max(3, repeat // 2)), "2000"))
    print(f"catalog: {len(catalog.schemas)} schemas, {len(catalog.tables):,} tables")

    shell = Shell(catalog, db)
    first_schema = catalog.schemas[0]
    some = first_schema.tables[len(first_schema.tables) // 2]
    directory = "/" + first_schema.name
    card_path = f"{directory}/{some.name}.{some.kind}"
    rows.append(("shell construction (tree of 10k files)", median_ms(lambda: Shell(catalog, db), repeat), "-"))
    rows.append(("ls /", median_ms(lambda: shell.run("ls /"), repeat), "10"))
    rows.append((f"ls -l {directory} ({len(first_schema.tables)} tables)", median_ms(lambda: shell.run(f"ls -l {directory}"), repeat), "10"))  # fmt: skip
    fresh = Shell(catalog, db)
    rows.append(("cat one card, first time", timed(lambda: fresh.run(f"cat '{card_path}'")), "10"))
    rows.append(("cat one card", median_ms(lambda: shell.run(f"cat '{card_path}'"), repeat), "10"))
    rows.append(("grep -ri email / (first: renders every card)", timed(lambda: shell.run("grep -ri email /")), "-"))
    for command in ("grep -ri email /", "grep -ril revenue /", "grep -rE 'region_(id|name)' /", "grep -rc status /"):
        rows.append((command, median_ms(lambda c=command: shell.run(c), repeat), "200"))
    rows.append(("grep -ri email / | wc -l", median_ms(lambda: shell.run("grep -ri email / | wc -l"), repeat), "200"))
    rows.append(("find / -name '*invoice*'", median_ms(lambda: shell.run("find / -name '*invoice*'"), repeat), "-"))
    rows.append(("find / -type f | wc -l", median_ms(lambda: shell.run("find / -type f | wc -l"), repeat), "-"))
    rows.append(("tree -L 1 /", median_ms(lambda: shell.run("tree -L 1 /"), repeat), "-"))

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
            (f"search_metadata {query}", median_ms(lambda q=query: search_metadata(index, None, q), repeat), "100")
        )
    rows.append(
        (
            "search_metadata + keyword 'East China' (scans data, 2 s budget)",
            median_ms(lambda: search_metadata(index, db, ["region"], ["East China"]), 3),
            "-",
        )
    )
    db.close()

    width = max(len(r[0]) for r in rows)
    print(f"\n{'step':<{width}}  {'median ms':>10}  {'target ms':>9}")
    for name, ms, target in rows:
        print(f"{name:<{width}}  {ms:>10.1f}  {target:>9}")


if __name__ == "__main__":
    main()
