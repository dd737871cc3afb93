"""Hard limits whatever the SQL (issue 11, class 3): statements that DuckDB itself does not stop
in time or within its memory limit end within their time limit + 1 s or are stopped at their
memory limit + 10%, because they run in a worker process that is interrupted, then killed.

The limits here are small (1 s, 300 MB) so the suite stays quick; a bound on elapsed time is
a generous hang guard, and the precise figure is the pool's own: it raises at limit + grace.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
import tracemalloc
from pathlib import Path

import duckdb
import pytest

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.duckdb.pool import memory_bytes
from astro_tui.data.errors import QueryCancelled, QueryError, QueryTimeout
from astro_tui.data.text_table import write_csv, write_json, write_table

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


# Issue 21, class 6: limits outside the limits.

HUGE = "SELECT " + ", ".join(["a"] * 329_990) + " FROM (SELECT 1 AS a)"
"""990,000 characters that took astro's own process 4.7–6.2 s and 1.4–1.7 GB to parse."""


def _reset_peak() -> int:
    """Reset this process's peak memory (Linux) and return what it holds now, in bytes."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_bytes("VmRSS")


def _status_bytes(field: str) -> int:
    match = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    assert match is not None
    return int(match.group(1)) * 1024


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
def test_a_huge_statement_is_parsed_within_its_limits(tiny: Path) -> None:
    """The guard parses in the worker, so a statement that is costly to parse is stopped at its
    time or memory limit like any other, and astro's own process never holds the parse."""
    assert 980_000 < len(HUGE) < 1_000_000
    with Database.open([str(tiny)], LIMITS) as db:
        db.execute("SELECT 1")
        before = _reset_peak()
        with pytest.raises(QueryError, match=r"1 s time limit|300MB memory limit"):
            db.execute(HUGE)
        grew = _status_bytes("VmHWM") - before
        assert grew < 64 * 2**20, grew
        assert db.execute("SELECT count(*) FROM t").rows() == [(1000,)]
    # `astro sql` runs it in its own process (issue 27): `test_one_shot_sql.py`.


def test_a_time_limit_while_rows_are_read_is_a_time_limit(tiny: Path) -> None:
    """It used to land as Arrow's OSError in the worker, which died: "out of memory?"."""
    settings = dataclasses.replace(LIMITS, memory_limit="4GB")
    with Database.open([str(tiny)], settings) as db:
        db.execute("SELECT 1")
        with pytest.raises(QueryTimeout, match="1 s time limit"):
            db.execute("SELECT i, md5(i::VARCHAR) FROM range(300000000) t(i)", row_cap=400_000_000)
        assert db.execute("SELECT 42").rows() == [(42,)]


def test_the_memory_baseline_is_taken_once_idle_and_clean(tiny: Path) -> None:
    """An internal request (the catalog) used to take the worker's memory as its new baseline,
    so what an earlier result left stopped counting (1,190 MB under a 500 MB limit)."""
    with Database.open(
        [str(tiny)], dataclasses.replace(LIMITS, memory_limit="2GB", query_timeout_s=120)
    ) as db:
        db.execute("SELECT 1")
        pool = db.engine._pool
        [worker] = pool._idle
        baseline = worker.baseline
        assert baseline > 0 and not worker.pristine
        db.execute("SELECT repeat('x', 200) || i AS s FROM range(1000000) t(i)", row_cap=None)
        pool.meta({"meta": "catalog"})
        assert pool._idle == [worker] and worker.baseline == baseline


class _Counting:
    """A stream that keeps nothing: what printing holds is then its own working memory."""

    def __init__(self) -> None:
        self.chars = 0

    def write(self, text: str) -> int:
        self.chars += len(text)
        return len(text)


def test_printing_a_large_result_holds_one_batch_at_a_time(tiny: Path) -> None:
    """200,000 rows of 1 KB: astro sql's table, CSV and JSON printing each hold a batch of rows
    as Python values (and a table's cells only as much as is shown), never the whole result."""
    settings = dataclasses.replace(LIMITS, memory_limit="2GB", query_timeout_s=120)
    with Database.open([str(tiny)], settings) as db:
        result = db.execute("SELECT i, repeat('x', 1000) || i AS s FROM range(200000) t(i)", row_cap=None)
    assert result.row_count == 200_000
    printers = {
        "table": lambda out: write_table(result, out, max_rows=None),
        "csv": lambda out: write_csv(result, out),
        "json": lambda out: write_json(result, out),
    }
    for name, printer in printers.items():
        out = _Counting()
        tracemalloc.start()
        try:
            printer(out)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert out.chars > (1_000 if name != "table" else 50) * 200_000, name
        assert peak < 32 * 2**20, (name, peak)
