"""Nothing outlives astro (issue 21, class 7): its statement worker, its private directories and
its result files go with it, however it ends.

The outside test killed `astro sql` with SIGTERM and SIGHUP mid-query: the worker ran on with no
time limit, re-parented to init, beside the temp directories and a 677 MB result file (mode 0644)
in /dev/shm. Here a process that holds a database as the app does (statements in a worker) runs
a runaway statement, or one that is writing its result file; it is killed with each signal; the
test waits for the worker to be gone and for every directory astro made to be removed. When
astro and its worker die at once (both SIGKILLed), the next astro to start removes what they
left. (`astro sql` has no worker since issue 27: `test_one_shot_sql.py`.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.duckdb import scratch
from tests.support.waiting import wait_for

if not Path("/proc/self/stat").exists():
    pytest.skip("needs Linux /proc to see processes", allow_module_level=True)

RUNAWAY = "SELECT count(*) FROM range(1000000000000) a"
BIG_RESULT = "SELECT repeat('x', 200) || i AS s FROM range(100000000) t(i)"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A database, a CSV target (so a private database file is made too), a private TMPDIR
    and a config with small limits, for astro processes started by the test."""
    db = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT range AS i FROM range(10)")
    con.close()
    csv_file = tmp_path / "extra.csv"
    csv_file.write_text("a,b\n1,2\n")
    temp = tmp_path / "tmp"
    temp.mkdir()
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text('memory_limit = "256MB"\nthreads = 1\n')
    return {"db": db, "csv": csv_file, "tmp": temp, "config": config}


_HOLDER = """
import sys
from astro_tui.config import load_settings
from astro_tui.data.database import Database
db = Database.open(sys.argv[2:], load_settings({}))
db.execute(sys.argv[1], row_cap=None, timeout=600)
"""
"""A process that holds a database as the app does: its statements run in a worker."""


def _start(world: dict[str, Path], sql: str, *, cli: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(world["tmp"]), "ASTRO_CONFIG_DIR": str(world["config"])}
    argv = [sys.executable, *(["-m", "astro_tui.cli", "sql"] if cli else ["-c", _HOLDER]), sql]
    argv += [str(world["db"]), str(world["csv"])]
    return subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_signals,
    )


def _default_signals() -> None:
    """A hang-up ends a process unless it was told to ignore it: as in a terminal, not as under
    `nohup` (which a test run may be started with, and its children would inherit)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _stat_fields(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] != "Z"


def _workers_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = _stat_fields(int(entry.name))
            if fields and int(fields[1]) == pid and b"duckdb.worker" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


def _cpu(pid: int) -> float:
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else 0.0


def _scratch_of(world: dict[str, Path], pid: int) -> list[Path]:
    """Every directory astro process `pid` made: in its TMPDIR and in /dev/shm."""
    roots = [world["tmp"], *([scratch.SHARED_MEMORY] if scratch.SHARED_MEMORY.is_dir() else [])]
    return [p for root in roots for p in root.glob(f"astro-*-{pid}.*")]


def _running_query(world: dict[str, Path], sql: str) -> tuple[subprocess.Popen[str], int]:
    """The holder with its worker well into the statement: past the CPU that starting,
    opening and warming up cost (~1 s), the statement itself is running."""
    proc = _start(world, sql)
    wait_for(lambda: proc.poll() is not None or len(_workers_of(proc.pid)) == 1, what="the worker")
    assert proc.poll() is None, proc.communicate()
    [worker] = _workers_of(proc.pid)
    wait_for(lambda: proc.poll() is not None or _cpu(worker) >= 2.5, what="the statement running")
    assert proc.poll() is None, proc.communicate()
    return proc, worker


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_a_worker_dies_with_astro_and_removes_its_scratch(world: dict[str, Path], signum: int) -> None:
    proc, worker = _running_query(world, RUNAWAY)
    made = _scratch_of(world, proc.pid)
    assert {p.name.split("-")[1] for p in made} >= {"spill", "files", "results"}, made
    proc.send_signal(signum)
    proc.wait(timeout=60)
    wait_for(lambda: not _alive(worker), what="the worker to end")
    wait_for(lambda: not _scratch_of(world, proc.pid), what="astro's directories to be removed")
    assert list(world["tmp"].iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_result_file_is_private_and_goes_with_astro(world: dict[str, Path], signum: int) -> None:
    proc = _start(world, BIG_RESULT)
    files: list[Path] = []

    def result_file() -> bool:
        files[:] = [f for d in _scratch_of(world, proc.pid) for f in d.glob("*.arrow")]
        return proc.poll() is not None or bool(files)

    wait_for(result_file, what="a result file being written")
    assert proc.poll() is None, proc.communicate()
    [worker] = _workers_of(proc.pid)
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(files[0].parent.stat().st_mode) == 0o700
    proc.send_signal(signum)
    proc.wait(timeout=60)
    wait_for(lambda: not _alive(worker), what="the worker to end")
    wait_for(lambda: not _scratch_of(world, proc.pid), what="the result file and directories to go")


def test_the_next_astro_removes_what_a_killed_pair_left(world: dict[str, Path]) -> None:
    """Astro and its worker SIGKILLed together (the worker frozen first, so it cannot clean
    up): their directories stay, until the next astro starts."""
    proc, worker = _running_query(world, RUNAWAY)
    os.kill(worker, signal.SIGSTOP)
    proc.kill()
    proc.wait(timeout=60)
    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: not _alive(worker), what="the worker to end")
    left = _scratch_of(world, proc.pid)
    assert left, "nothing was left to clean up"
    again = _start(world, "SELECT 42", cli=True)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert not any(p.exists() for p in left)
    assert list(world["tmp"].iterdir()) == []


def test_the_sweep_spares_live_owners_and_other_users(tmp_path: Path) -> None:
    mine = scratch.make("spill", tmp_path)  # this process is alive
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = tmp_path / f"astro-spill-{dead.pid}.1-x"
    gone.mkdir()
    reused = tmp_path / f"astro-results-{os.getpid()}.1-y"  # our PID, another start time
    reused.mkdir()
    theirs = tmp_path / f"astro-files-{dead.pid}.1-z"
    theirs.mkdir()
    not_dir = tmp_path / f"astro-spill-{dead.pid}.1-f"
    not_dir.write_text("")
    if os.geteuid() == 0:
        os.chown(theirs, 65534, 65534)
    removed = scratch.sweep((tmp_path,))
    assert sorted(removed) == sorted([gone, reused] + ([] if os.geteuid() == 0 else [theirs]))
    assert mine.is_dir() and not_dir.exists()


def test_closing_a_database_removes_every_directory_it_made(world: dict[str, Path]) -> None:
    here = world | {"tmp": Path(tempfile.gettempdir())}
    before = set(_scratch_of(here, os.getpid()))
    db = Database.open([str(world["db"]), str(world["csv"])], Settings())
    db.execute("SELECT repeat('x', 100) AS s FROM range(100000)")  # a result file, mapped and unlinked
    made = set(_scratch_of(here, os.getpid())) - before
    assert {p.name.split("-")[1] for p in made} == {"spill", "files", "results"}
    db.close()
    assert not any(p.exists() for p in made)


def test_the_worker_imports_nothing_from_the_directory_astro_started_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder of downloaded files may hold a `duckdb.py`: `python -m` put the working directory
    first on the worker's path, so the worker imported it (run before any guard)."""
    db = tmp_path / "data.duckdb"
    duckdb.connect(str(db)).close()
    folder = tmp_path / "downloads"
    folder.mkdir()
    marker = tmp_path / "planted-ran"
    for name in ("duckdb", "platformdirs", "pyarrow"):
        (folder / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('{name} ')\n")
    monkeypatch.chdir(folder)
    with Database.open([str(db)], Settings()) as opened:
        assert opened.execute("SELECT 42 AS n").table.column(0).to_pylist() == [42]
    assert not marker.exists()
