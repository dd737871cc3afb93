"""PostgreSQL results stay inside astro's limits, measured from outside the process (issue 21).

`astro sql` runs as a child with a 500 MB memory limit (from its config file) and a
time limit; the kernel's record of its peak memory (`tests/support/measure.py`) is compared
with the same command's for `SELECT 1`. Before the fix, `SELECT repeat('x', 100000000)
FROM generate_series(1, 10)` ran 70 s under a 30 s limit and took 1.9 GB in astro's
process. The bounds here are conditions, generous on time; `bench/bench_pg_limits.py`
measures the figures (BENCHMARKS.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from astro_tui.data.engines.postgres import fetch
from astro_tui.data.errors import QueryError, QueryTimeout
from astro_tui.data.memory_limit import memory_bytes
from tests.support.measure import Measured, run_measured
from tests.support.pg_server import PgServer
from tests.support.postgres_attacks import MEMORY_LIMIT, OVER_THE_LIMIT

TIMEOUT_S = 30  # the memory limit is under test; a loaded machine must not reach this first
HANG_GUARD_S = 120
"""Far above the time limit: the figure itself is the bench's; this only catches a runaway."""


def astro_sql(server: PgServer, db: str, sql: str, config_dir: Path) -> Measured:
    (config_dir / "config.toml").write_text(f'memory_limit = "{MEMORY_LIMIT}"\n')
    argv = [sys.executable, "-m", "astro_tui.cli", "sql", sql, server.url(db=db), "--timeout", str(TIMEOUT_S)]
    return run_measured(argv, {**os.environ, "ASTRO_CONFIG_DIR": str(config_dir)})


def test_results_over_the_memory_limit_stop_inside_it(
    pg_server: PgServer, pg_hostile: str, tmp_path: Path
) -> None:
    allowed = 1.1 * (memory_bytes(MEMORY_LIMIT) or 0)
    for sql, reason in OVER_THE_LIMIT.items():
        baseline = astro_sql(pg_server, pg_hostile, "SELECT 1", tmp_path)
        assert baseline.returncode == 0, baseline.stderr
        run = astro_sql(pg_server, pg_hostile, sql, tmp_path)
        assert run.returncode == 1 and run.stdout == "", sql
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and reason in lines[0] and f"{MEMORY_LIMIT} memory limit" in lines[0], lines
        assert run.peak_bytes - baseline.peak_bytes <= allowed, (sql, run.peak_bytes, baseline.peak_bytes)
        assert run.elapsed_s <= baseline.elapsed_s + TIMEOUT_S + HANG_GUARD_S, sql


def test_a_result_that_fits_prints_in_bounded_lines(
    pg_server: PgServer, pg_hostile: str, tmp_path: Path
) -> None:
    """Three 30 MB values fit the limit; the text table prints each as its first characters."""
    baseline = astro_sql(pg_server, pg_hostile, "SELECT 1", tmp_path)
    run = astro_sql(
        pg_server,
        pg_hostile,
        "SELECT g, repeat('y', 30000000) AS body FROM generate_series(1, 3) g",
        tmp_path,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 6 and lines[-1] == "3 rows"
    assert max(len(line) for line in lines) < 100 and lines[2].endswith("yyy…")
    assert run.peak_bytes - baseline.peak_bytes <= 1.1 * (memory_bytes(MEMORY_LIMIT) or 0)


def test_reading_stops_at_the_deadline_and_at_the_budget() -> None:
    """The read loop itself, over real Arrow batches: past the deadline, past the byte budget."""
    batch = pa.record_batch({"x": pa.array(["z" * 1000] * 100)})
    late = fetch.Limits("1GB", 10**9, 10**8, deadline=0.0, timeout=5)
    with pytest.raises(QueryTimeout, match="after the 5 s time limit"):
        fetch.read(iter([batch, batch]), late)
    small = fetch.Limits("1MB", 150_000, 10**5, deadline=None, timeout=None)
    with pytest.raises(
        QueryError, match=r"^result stopped after 200 rows: it needs more than 0 MB, half the 1MB"
    ):
        fetch.read(iter([batch, batch, batch]), small)
    assert len(fetch.read(iter([batch]), small)) == 1
