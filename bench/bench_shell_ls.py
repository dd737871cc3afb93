"""`astro shell "ls /"` on the 10,000-table file, whole processes, interleaved (issue 27).

Per round: astro with an empty catalog cache (*first open*: its worker opens the file
and reads the schemas and tables), astro again with that cache (*opened before*), and
DuckDB's own floor, `python -c` opening the file and running `SELECT 1`. Wall time and
the peak resident memory `/usr/bin/time` reports (the largest of the process and its
children: astro's worker).

`--stages`: where a first open's time goes, each stage timed in fresh processes with
astro's own code (medians over the runs): the interpreter, the command's imports, the
statement worker's imports (its package, then DuckDB), DuckDB's open of the file (and
the engine's setup statements after it), the outline query, its pickle, and in astro's
process the unpickle, the shell's import, `ls /`, and the end (the worker killed, reaped).

    uv run python bench/bench_shell_ls.py [--runs 5] [--tables 10000] [--columns 30] [--stages]
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


_IMPORTS = (
    "import astro_tui.cli, astro_tui.session, astro_tui.data.database, astro_tui.catalog.shell,"
    " astro_tui.data.engines.duckdb.engine, astro_tui.data.catalog_cache"
)
_WORKER_STAGES = """
import json, os, sys, time
began = time.time()
marks = [("start", time.perf_counter())]
def mark(name): marks.append((name, time.perf_counter()))
from astro_tui.data.engines.duckdb import worker
mark("worker's package imports")
import duckdb
mark("import duckdb")
setup = json.loads(sys.argv[1])
con = duckdb.connect(setup["path"], read_only=True, config=setup["config"])
mark("DuckDB opens the file")
for statement in setup["statements"]:
    con.execute(statement)
mark("setup statements")
conn = worker.Connection.__new__(worker.Connection)
conn._con, conn.setup, conn._running, conn.columns_next = con, setup, None, False
from astro_tui.data.engines.duckdb.resolved import builtins_first
conn._path = builtins_first(con)
mark("built-ins first")
from astro_tui.data.engines.duckdb import catalog
from astro_tui.data.catalog_cache import dumps
def rows(sql):
    cursor = conn.trusted()
    try:
        return cursor.execute(sql).fetchall()
    finally:
        cursor.close()
outline = catalog.load_outline(rows)
mark("outline query")
data = dumps(outline)
mark("pickle")
sys.stdout.buffer.write(data)
sys.stdout.flush()
sys.stderr.write(json.dumps([began, [(b[0], b[1] - a[1]) for a, b in zip(marks, marks[1:])]]))
sys.stderr.flush()
os._exit(0)  # as a killed worker: DuckDB's own close is no stage of astro's
"""


def _stages(db: Path, runs: int) -> None:
    """Each stage of a first `ls /`, as the module docstring says."""
    import json
    import time

    from astro_tui.catalog.shell import Shell
    from astro_tui.config import load_settings
    from astro_tui.data.catalog_cache import loads
    from astro_tui.data.database import Database

    settings = load_settings({})
    found: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        found.setdefault(name, []).append(seconds)

    for _ in range(runs):
        for name, code in (("interpreter", "pass"), ("astro's command imports", _IMPORTS)):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            add(name, time.perf_counter() - started)
        found["astro's command imports"][-1] -= found["interpreter"][-1]
        database = Database.open([str(db)], settings)
        setup = database.engine._pool._setup  # type: ignore[attr-defined]
        spawned = time.time()
        done = subprocess.run(
            [sys.executable, "-c", _WORKER_STAGES, json.dumps(setup)], capture_output=True, check=True
        )
        began, stages = json.loads(done.stderr)
        add("worker: interpreter start", began - spawned)
        for name, seconds in stages:
            add(f"worker: {name}", seconds)
        marks = [time.perf_counter()]
        outline = loads(done.stdout)
        marks.append(time.perf_counter())
        shell = Shell(outline, database)
        with open(os.devnull, "w") as sink:
            sink.write(shell.run("ls /").output)
        marks.append(time.perf_counter())
        database.engine._pool.ready()  # type: ignore[attr-defined]  # a worker, to end as astro does
        marks.append(time.perf_counter())
        database.close()
        marks.append(time.perf_counter())
        add("astro: unpickle", marks[1] - marks[0])
        add("astro: shell and ls /", marks[2] - marks[1])
        add("astro: the worker ended", marks[4] - marks[3])
    print(f"stages of a first `ls /` ({runs} runs, medians; load {os.getloadavg()[0]:.2f} after):")
    total = 0.0
    for name, seconds in found.items():
        median = statistics.median(seconds)
        total += median
        print(f"  {name:34} {median:6.3f} s  ({min(seconds):.3f}–{max(seconds):.3f})")
    print(f"  {'sum':34} {total:6.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--columns", type=int, default=30)
    parser.add_argument("--stages", action="store_true", help="time each stage of a first open")
    args = parser.parse_args()
    db = synthetic_catalog_db(
        CACHE / f"catalog-{args.tables}x{args.columns}.duckdb", args.tables, args.columns
    )
    if args.stages:
        _stages(db, args.runs)
        return
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
