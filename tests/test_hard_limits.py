"""Hard limits whatever the SQL (issue 11, class 3): statements that DuckDB itself does not stop
in time or within its memory limit end within their time limit + 1 s or are stopped at their
memory limit + 10%, because they run in a worker process that is interrupted, then killed.

The limits here are small (1 s, 300 MB) so the suite stays quick; a bound on elapsed time is
a generous hang guard, and the precise figure is the pool's own: it raises at limit + grace.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import duckdb
import pytest

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.duckdb.pool import memory_bytes
from astro_tui.data.errors import QueryCancelled, QueryError, QueryTimeout

LIMITS = dataclasses.replace(Settings(), memory_limit="300MB", query_timeout_s=1, threads=2)
RUNAWAY_TIME = {
    "one scalar call building 2 GB": "SELECT length(lpad('', 2147483647, 'x'))",
    "6,500 UNION ALL terms (bind time)": "SELECT 1 AS x" + " UNION ALL SELECT 1" * 6500,
}
RUNAWAY_MEMORY = {
    "a 300M-element list sorted": "SELECT len(list_sort(range(300000000)))",
    "200M rows unnested": "SELECT count(*) FROM (SELECT unnest(range(200000000)))",
}


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT range AS i FROM range(1000)")
    con.close()
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()


@pytest.mark.parametrize("name", sorted(RUNAWAY_TIME))
def test_a_statement_duckdb_cannot_interrupt_ends_at_its_time_limit(tiny: Path, name: str) -> None:
    with Database.open([str(tiny)], LIMITS) as db:
        db.execute("SELECT 1")  # the worker is up: what follows times the statement alone
        started = time.perf_counter()
        with pytest.raises(QueryTimeout, match="1 s time limit"):
            db.execute(RUNAWAY_TIME[name])
        assert time.perf_counter() - started < 30  # hang guard; the pool stops it at 1 s + grace
        assert db.execute("SELECT count(*) FROM t").rows() == [(1000,)]


@pytest.mark.parametrize("name", sorted(RUNAWAY_MEMORY))
def test_a_statement_past_the_memory_limit_is_stopped_near_it(tiny: Path, name: str) -> None:
    settings = dataclasses.replace(LIMITS, query_timeout_s=60)
    limit = memory_bytes(settings.memory_limit)
    assert limit is not None
    with Database.open([str(tiny)], settings) as db:
        db.execute("SELECT 1")
        with pytest.raises(QueryError, match="300MB memory limit"):
            db.execute(RUNAWAY_MEMORY[name])
        pool = db.engine._pool
        # Read every 10 ms: what a worker can allocate between two reads is the overshoot.
        assert pool.peak_rss < limit * 1.1 + 2**30, pool.peak_rss  # generous: a loaded machine polls late
        assert db.execute("SELECT count(*) FROM t").rows() == [(1000,)]


def test_memory_limits_read_as_duckdb_spells_them() -> None:
    assert memory_bytes("4GB") == 4 * 10**9
    assert memory_bytes("500MiB") == 500 * 2**20
    assert memory_bytes(" 1.5 gb ") == 1_500_000_000
    assert memory_bytes("50%") and memory_bytes("50%") > 0
    assert memory_bytes("lots") is None


def test_cancel_stops_a_statement_duckdb_cannot_interrupt(tiny: Path) -> None:
    import threading

    from astro_tui.data.cancel import CancelToken

    settings = dataclasses.replace(LIMITS, query_timeout_s=120)
    with Database.open([str(tiny)], settings) as db:
        db.execute("SELECT 1")
        token = CancelToken()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                db.execute(RUNAWAY_TIME["one scalar call building 2 GB"], cancel=token)
            except BaseException as exc:
                failure.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 30
        while token.running == 0 and time.monotonic() < deadline:
            time.sleep(0.01)  # polling for a condition
        token.cancel()
        worker.join(timeout=30)
        assert not worker.is_alive()
        assert failure and isinstance(failure[0], QueryCancelled)
        assert db.execute("SELECT 42").rows() == [(42,)]


def test_no_worker_process_outlives_its_database(tiny: Path) -> None:
    db = Database.open([str(tiny)], LIMITS)
    db.execute("SELECT 1")
    with pytest.raises(QueryTimeout):
        db.execute(RUNAWAY_TIME["one scalar call building 2 GB"])  # one worker killed, one started
    pids = db.engine._pool.pids()
    assert pids and all(_alive(pid) for pid in pids)
    db.close()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)  # polling for a condition
    assert not any(_alive(pid) for pid in pids)
