"""How the hard limits hold (issues 11 and 21): each runaway statement, how long until it ended
and how much memory its worker process reached, under a 3 s time limit and a 1 GB memory limit;
a statement that is costly only to parse, and what astro's own process held meanwhile; what
printing a large result holds; how soon a killed astro's worker and directories are gone.

    uv run python bench/bench_limits.py
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import duckdb

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.errors import DataError
from astro_tui.data.text_table import write_csv, write_json, write_table

RUNAWAY = {
    "length(lpad('', 2147483647, 'x'))": "SELECT length(lpad('', 2147483647, 'x'))",
    "len(list_sort(range(300000000)))": "SELECT len(list_sort(range(300000000)))",
    "count(*) of unnest(range(200000000))": "SELECT count(*) FROM (SELECT unnest(range(200000000)))",
    "6,500-term UNION ALL": "SELECT 1 AS x" + " UNION ALL SELECT 1" * 6500,
    "990,000 characters, 329,990 columns": "SELECT " + ", ".join(["a"] * 329_990) + " FROM (SELECT 1 AS a)",
}


def _rss(field: str, pid: int | str = "self") -> int:
    match = re.search(rf"^{field}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(match.group(1)) * 1024 if match else 0


def _limits(path: Path) -> None:
    settings = dataclasses.replace(Settings(), memory_limit="1GB", query_timeout_s=3)
    with Database.open([str(path)], settings) as db:
        for name, sql in RUNAWAY.items():
            db.execute("SELECT 1")  # a worker ready and warm (the last one may have been killed)
            db.engine._pool.peak_rss = 0
            Path("/proc/self/clear_refs").write_text("5")
            before = _rss("VmRSS")
            started = time.perf_counter()
            try:
                db.execute(sql)
                outcome = "finished"
            except DataError as exc:
                outcome = str(exc)
            elapsed = time.perf_counter() - started
            peak = db.engine._pool.peak_rss / 2**20
            astro = (_rss("VmHWM") - before) / 2**20
            print(f"{name:38} {elapsed:5.2f} s  worker +{peak:5.0f} MiB  astro +{astro:4.0f} MiB  {outcome}")


def _printing(path: Path) -> None:
    settings = dataclasses.replace(Settings(), memory_limit="2GB", query_timeout_s=120)
    with Database.open([str(path)], settings) as db:
        result = db.execute("SELECT i, repeat('x', 1000) || i AS s FROM range(200000) t(i)", row_cap=None)
    size = result.table.nbytes / 2**20
    with open(os.devnull, "w") as sink:
        for name, printer in (
            ("table", lambda: write_table(result, sink, max_rows=None)),
            ("csv", lambda: write_csv(result, sink)),
            ("json", lambda: write_json(result, sink)),
        ):
            tracemalloc.start()
            started = time.perf_counter()
            printer()
            elapsed = time.perf_counter() - started
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            shown = f"print 200,000 rows ({size:.0f} MiB) as {name:5}"
            print(f"{shown}: {elapsed:5.2f} s, Python peak {peak:5.1f} MiB")


def _workers_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and b"duckdb.worker" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _lifecycle(path: Path, tmp: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp)}
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGKILL):
        argv = [sys.executable, "-m", "astro_tui.cli", "sql", "SELECT count(*) FROM range(1000000000000) a"]
        proc = subprocess.Popen([*argv, str(path), "--timeout", "600"], env=env, stderr=subprocess.DEVNULL)
        while not (workers := _workers_of(proc.pid)):
            time.sleep(0.01)
        time.sleep(3)  # well into the statement
        proc.send_signal(signum)
        started = time.perf_counter()
        proc.wait()
        while not _gone(workers[0]):
            time.sleep(0.001)
        worker = time.perf_counter() - started
        shm = Path("/dev/shm")
        while list(tmp.iterdir()) or list(shm.glob(f"astro-*-{proc.pid}.*")):
            time.sleep(0.001)
        dirs = time.perf_counter() - started
        name = signal.Signals(signum).name
        shown = f"its worker gone after {worker * 1000:6.1f} ms, its dirs after {dirs * 1000:6.1f} ms"
        print(f"astro killed by {name:7}: {shown}")


def main() -> None:
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.duckdb"
        duckdb.connect(str(path)).close()
        _limits(path)
        _printing(path)
        scratch = Path(folder) / "tmp"
        scratch.mkdir()
        _lifecycle(path, scratch)


if __name__ == "__main__":
    main()
