"""`astro shell "ls /"` on the 10,000-table file, whole processes, interleaved (issue 27).

Per round: astro with an empty catalog cache (*first open*: its worker opens the file
and reads the schemas and tables), astro again with that cache (*opened before*), and
DuckDB's own floor, `python -c` opening the file and running `SELECT 1`. Wall time and
the peak resident memory `/usr/bin/time` reports (the largest of the process and its
children: astro's worker).

    uv run python bench/bench_shell_ls.py [--runs 5] [--tables 10000] [--columns 30]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synthetic import synthetic_catalog_db

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
FLOOR = "import duckdb, sys; duckdb.connect(sys.argv[1], read_only=True).execute('SELECT 1').fetchall()"


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, int]:
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", *command], env=env, capture_output=True, text=True, check=True
    )
    seconds, kb = re.findall(r"^([\d.]+) (\d+)$", done.stderr, re.M)[-1]
    return float(seconds), int(kb) * 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--columns", type=int, default=30)
    args = parser.parse_args()
    db = synthetic_catalog_db(
        CACHE / f"catalog-{args.tables}x{args.columns}.duckdb", args.tables, args.columns
    )
    astro = [str(ROOT / ".venv" / "bin" / "astro"), "shell", "ls /", str(db)]
    floor = [sys.executable, "-c", FLOOR, str(db)]
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    runs: dict[str, list[tuple[float, int]]] = {"first open": [], "opened before": [], "DuckDB open": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "ASTRO_CACHE_DIR": home, "ASTRO_STATE_DIR": f"{home}/state"}
            env["ASTRO_CONFIG_DIR"] = f"{home}/config"
            runs["first open"].append(_timed(astro, env))
            runs["opened before"].append(_timed(astro, env))
            runs["DuckDB open"].append(_timed(floor, env))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    theirs = statistics.median(r[0] for r in runs["DuckDB open"])
    for name, measured in runs.items():
        wall = statistics.median(r[0] for r in measured)
        peak = statistics.median(r[1] for r in measured)
        spread = f"{min(r[0] for r in measured):.2f}–{max(r[0] for r in measured):.2f}"
        print(
            f"{name:14} median {wall:5.2f} s ({spread}), {wall / theirs:4.2f}× DuckDB's open,"
            f" {peak / 2**20:4.0f} MB"
        )


if __name__ == "__main__":
    main()
