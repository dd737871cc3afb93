"""A long result's first rows, handed over while the rest is read (DuckDB's workers): a prefix
of the very result, only after the guard passed, never for a short or a cut result."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from astro_tui.config import Settings
from astro_tui.data.database import CancelToken, Database
from astro_tui.data.engines.duckdb.fetch import BATCH
from astro_tui.data.engines.duckdb.pool import FIRST_ROWS
from astro_tui.data.errors import GuardError, QueryCancelled
from tests.support.slow import slow_sql
from tests.support.waiting import wait_for


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    import duckdb

    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    opened = Database.open([str(path)], Settings(row_cap=1_000_000))
    yield opened
    opened.close()


def test_the_first_rows_are_the_results_first_rows(db: Database) -> None:
    seen: list[pa.Table] = []
    sql = f"SELECT i, 'row ' || i AS label, i % 3 = 0 AS third FROM range({BATCH * 3 + 17}) t(i)"
    result = db.execute(sql, first=seen.append)
    [first] = seen
    assert first.num_rows == FIRST_ROWS and result.row_count == BATCH * 3 + 17
    assert first.equals(result.table.slice(0, FIRST_ROWS))


def test_no_first_rows_for_a_short_or_cut_result(db: Database) -> None:
    seen: list[pa.Table] = []
    assert db.execute(f"SELECT * FROM range({BATCH - 1})", first=seen.append).row_count == BATCH - 1
    cut = db.execute(f"SELECT * FROM range({BATCH * 2})", row_cap=BATCH - 5, first=seen.append)
    assert cut.truncated and cut.row_count == BATCH - 5
    assert seen == [], "a result that comes whole with its first batch is shown whole"


def test_a_refused_statement_hands_over_nothing(db: Database) -> None:
    seen: list[pa.Table] = []
    for refused in (
        f"SELECT * FROM range({BATCH * 2}); DROP TABLE x",
        f"COPY (SELECT * FROM range({BATCH * 2})) TO '/tmp/astro-first-rows.csv'",
    ):
        with pytest.raises(GuardError):
            db.execute(refused, first=seen.append)
    assert seen == []


def test_first_rows_come_while_the_rest_is_still_read_and_a_cancel_stops_it(db: Database) -> None:
    """Rows past the first batch are slow (a Levenshtein distance every 256th row): the first
    rows come, then the cancel stops the statement, which still ends in its error."""
    import threading

    seen: list[pa.Table] = []
    cancel = CancelToken()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            db.execute(slow_sql(1_000_000), cancel=cancel, first=seen.append)
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    wait_for(lambda: seen or failure, what="the first rows")
    assert not failure and seen[0].column("i").to_pylist() == list(range(FIRST_ROWS))
    cancel.cancel()
    thread.join()
    assert isinstance(failure[0], QueryCancelled)
