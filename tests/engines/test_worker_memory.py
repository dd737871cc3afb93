"""What a file costs astro's processes (issue 27): the statement worker lets DuckDB's table blocks
go while the file opens and holds the real memory limit before anything runs; a file whose
write-ahead log needs memory to replay still opens; astro's own process opens a file, reads
its catalog and runs a statement without loading DuckDB; the app's warm-up waits for the
person."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import duckdb
import pytest

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.ui.warmup import WarmUp

BLOCKS = "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"
LIMIT = "SELECT current_setting('memory_limit')"


@pytest.fixture(scope="module")
def many_tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """400 tables of 20 columns: opening it, DuckDB reads ~2 MB of table blocks and keeps them."""
    path = tmp_path_factory.mktemp("many") / "many.duckdb"
    columns = ", ".join(f"range + {j} AS c{j}" for j in range(20))
    con = duckdb.connect(str(path))
    con.execute("BEGIN")
    for i in range(400):
        con.execute(f"CREATE TABLE t{i} AS SELECT {columns} FROM range(3)")
    con.execute("COMMIT")
    con.close()
    return path


def _unguarded(db: Database, sql: str) -> object:
    return db.engine.run(sql, cap=1, timeout=30, cancel=None, guarded=False).rows()[0][0]


def test_the_worker_lets_the_table_blocks_go_and_holds_the_real_limit(many_tables: Path) -> None:
    raw = duckdb.connect(str(many_tables), read_only=True)
    kept = raw.execute(BLOCKS).fetchone()
    raw.execute("SET memory_limit = '2GB'")
    limit = raw.execute(LIMIT).fetchone()
    raw.close()
    assert kept is not None and kept[0] > 2**20  # what a plain open holds
    with Database.open([str(many_tables)], Settings(memory_limit="2GB")) as db:
        assert _unguarded(db, BLOCKS) <= 2**20
        assert _unguarded(db, LIMIT) == limit[0]  # statements run under the user's limit
        assert db.execute("SELECT sum(c19) FROM t399").rows() == [(19 * 3 + 3,)]  # read again


def test_a_file_whose_log_needs_memory_to_replay_opens(tmp_path: Path) -> None:
    """Replaying a write-ahead log takes more than the opening limit: the worker opens the file
    again without it, and spills nothing beside the user's file."""
    path = tmp_path / "logged.duckdb"
    script = f"""
        import duckdb, os
        con = duckdb.connect({str(path)!r})
        con.execute("SET checkpoint_threshold = '10GB'")
        con.execute("CREATE TABLE t AS SELECT range AS i, 'row ' || range AS s FROM range(300000)")
        con.execute("CREATE INDEX t_i ON t (i)")
        os._exit(0)  # no checkpoint: the index is in the log only
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(script)], check=True)
    assert Path(f"{path}.wal").stat().st_size > 2**20
    with pytest.raises(duckdb.OutOfMemoryException):
        duckdb.connect(str(path), read_only=True, config={"memory_limit": "1MB"})
    before = sorted(p.name for p in tmp_path.iterdir())
    with Database.open([str(path)], Settings()) as db:
        assert db.execute("SELECT count(*), max(i) FROM t").rows() == [(300000, 299999)]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no `logged.duckdb.tmp/`


def test_astro_reads_the_catalog_and_runs_a_statement_without_loading_duckdb(
    many_tables: Path, tmp_path: Path
) -> None:
    """The guard's first pass (which would load DuckDB here) is for moments with no worker ready;
    the catalog and the shell's listing need no Arrow either."""
    script = f"""
        import json, sys
        from pathlib import Path
        from astro_tui.config import Settings
        from astro_tui.session import Session

        session = Session([{str(many_tables)!r}], Settings(), state_dir=Path({str(tmp_path)!r}))
        session.open()
        listed = session.shell("ls /main/t399.table").output
        seen = {{"listed": "t399.table" in listed, "duckdb": "duckdb" in sys.modules,
                 "pyarrow": "pyarrow" in sys.modules}}
        rows = session.sql("SELECT count(*) FROM t7").result.rows()
        seen.update(rows=rows, duckdb_after=("duckdb" in sys.modules))
        session.close()
        print(json.dumps(seen))
    """
    env = {**os.environ, "ASTRO_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, env=env, check=True
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"listed": True, "duckdb": False, "pyarrow": False, "rows": [[3]], "duckdb_after": False}


def test_the_warm_up_waits_for_the_catalog_and_the_person() -> None:
    started: list[threading.Event] = []
    painted = threading.Event()
    warm = WarmUp(started.append)
    warm.input_seen()  # a key before the catalog: nothing yet
    assert started == []
    warm.catalog_shown(painted)
    assert started == [painted]
    warm.input_seen()
    warm.catalog_shown(threading.Event())
    assert started == [painted]  # once

    browsing = WarmUp(started.append)
    browsing.catalog_shown(painted)
    assert len(started) == 1  # a catalog on screen alone imports nothing
    browsing.input_seen()
    assert len(started) == 2
