"""PostgreSQL results under astro's limits (issue 21): how long a statement ran and how much memory
astro took for results far larger than the memory limit, measured from outside the process.

    uv run python bench/bench_pg_limits.py [--timeout 5] [--memory 4GB] [--runs 3] [--only TEXT]

Starts a private server (`tests/support/pg_server.py`) with its hostile database. Each case runs:
- the real CLI as a child process (`astro sql … --timeout T`, the memory limit from a config
  file), its peak resident memory read from the kernel (`wait4`, `tests/support/measure.py`), next to
  `SELECT 1` run the same way: the figures are the peak and the wall time above that baseline
  (start-up, connecting, printing and exit included);
- `Database.execute` in this process, timed: the statement's own duration against the limit.
Runs are interleaved with the baseline. Last, the guard's own parse at its size cap (20,000
tokens, the densest statement: `SELECT 1,1,…`), in a child process, timed and measured.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.errors import DataError
from astro_tui.data.memory_limit import memory_bytes
from tests.support.measure import Measured, run_measured
from tests.support.pg_server import hostile_database, running_server

CASES = {
    "repeat('x', 1e8) × 10 rows (1 GB)": "SELECT repeat('x', 100000000) FROM generate_series(1, 10)",
    "repeat('x', 1e6) × 3,000 rows (3 GB)": "SELECT repeat('x', 1000000) AS x FROM generate_series(1, 3000)",
    "a stored 200 MB value, 2 MB on disk": "SELECT * FROM trojan.wide",
}
PARSE_AT_THE_CAP = (
    "import time; from astro_tui.data.engines.postgres import guard; "
    "sql = 'SELECT ' + '1,' * 9995 + '1'; t = time.perf_counter(); guard.inspect(sql); "
    "print(len(sql), time.perf_counter() - t)"
)


def cli(url: str, sql: str, timeout: float, config_dir: Path) -> Measured:
    argv = [sys.executable, "-m", "astro_tui.cli", "sql", sql, url, "--timeout", str(timeout)]
    return run_measured(argv, {**os.environ, "ASTRO_CONFIG_DIR": str(config_dir)})


def in_process(db: Database, sql: str) -> float:
    started = time.perf_counter()
    with contextlib.suppress(DataError):
        db.execute(sql)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--memory", default="4GB", help="astro's memory_limit for the run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", help="run only the cases whose name holds this text")
    args = parser.parse_args()
    limit_mib = (memory_bytes(args.memory) or 0) / 2**20
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"time limit {args.timeout:g} s, memory limit {args.memory} ({limit_mib:,.0f} MiB)")
    settings = dataclasses.replace(Settings(), memory_limit=args.memory, query_timeout_s=args.timeout)
    with running_server() as server, tempfile.TemporaryDirectory() as tmp:
        url = server.url(db=hostile_database(server))
        config_dir = Path(tmp)
        (config_dir / "config.toml").write_text(f'memory_limit = "{args.memory}"\n')
        with Database.open([url], settings) as db:
            for name, sql in CASES.items():
                if args.only and args.only not in name:
                    continue
                walls, peaks, own, outcome = [], [], [], ""
                for _ in range(args.runs):
                    base = cli(url, "SELECT 1", args.timeout, config_dir)
                    run = cli(url, sql, args.timeout, config_dir)
                    own.append(in_process(db, sql))
                    walls.append(run.elapsed_s - base.elapsed_s)
                    peaks.append((run.peak_bytes - base.peak_bytes) / 2**20)
                    last = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
                    outcome = f"exit {run.returncode}: {last[:100]}"
                print(
                    f"{name:38} statement {statistics.median(own):5.2f} s (max {max(own):.2f})  "
                    f"CLI +{statistics.median(walls):5.2f} s (max +{max(walls):.2f})  "
                    f"peak +{statistics.median(peaks):5.0f} MiB (max +{max(peaks):.0f}, "
                    f"{max(peaks) / limit_mib:.0%} of the limit)  {outcome}"
                )
        parse = run_measured([sys.executable, "-c", PARSE_AT_THE_CAP], dict(os.environ))
        size, seconds = parse.stdout.split()
        empty = run_measured(
            [sys.executable, "-c", "import astro_tui.data.engines.postgres.guard"], dict(os.environ)
        )
        print(
            f"the guard's parse at its cap (20,000 tokens, {int(size):,} characters): "
            f"{float(seconds):.2f} s, "
            f"peak +{(parse.peak_bytes - empty.peak_bytes) / 2**20:.0f} MiB over importing the guard"
        )


if __name__ == "__main__":
    main()
