"""`astro sql` as a whole process against a DuckDB Python one-liner on the same file (issue 27).

    uv run python bench/bench_sql_command.py [--runs 15] [--before DIR]

Interleaved: each round runs every command once, in turn, so the machine's load falls on all
of them alike; the figures are medians over the rounds, as ratios against the one-liner. Wall
time is what a script pays; CPU time (user + system, the process and its children) is printed
beside it because it is less disturbed by other work on a shared machine. A third command,
the one-liner importing pyarrow too, shows what Arrow alone costs a process (astro's results
are Arrow, except a few rows its parse shows to be few, as this `count(*)`'s; a fourth,
`astro sql` of ten filtered rows, reads them as Arrow). `--before DIR` adds `astro sql` run
from the `astro_tui` package in DIR (say `git archive COMMIT astro_tui | tar -x -C DIR`), in
the same rounds: older code beside this. The file is timed once it has settled (unchanged
for `identity.SETTLED_S`), as a user's file is, so the warm-up run keeps what it defines for
the guard (`definitions_cache.py`), in a cache folder of the bench's own.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "SELECT count(*) FROM t"
ARROW_QUERY = "SELECT id, k FROM t WHERE id < 10"
"""Ten rows that no parse shows to be few (`fetch.few_rows`): read as Arrow, as most results are."""


def _make(folder: Path) -> Path:
    import duckdb

    path = folder / "small.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 7 AS k FROM range(1000)")
    con.close()
    return path


def _settle(path: Path) -> None:
    """Wait until the new file is as old as a file must be before astro keeps what it defines
    (`identity.SETTLED_S`): a user's file has not just been written, and this one is timed as one."""
    from astro_tui.data.engines.duckdb.identity import SETTLED_S

    while time.time() - max(path.stat().st_ctime, path.stat().st_mtime) <= SETTLED_S:
        time.sleep(0.1)


def _astro() -> list[str]:
    script = Path(sys.executable).with_name("astro")
    return [str(script)] if script.exists() else [sys.executable, "-m", "astro_tui.cli"]


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env, check=False, cwd=env["ASTRO_CONFIG_DIR"])
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed: {done.stderr.decode()[-300:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", metavar="DIR", help="also time astro sql from DIR's astro_tui")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="astro-bench-sql-") as tmp:
        path = _make(Path(tmp))
        env = {
            **os.environ,
            "ASTRO_CONFIG_DIR": str(Path(tmp) / "config"),
            "ASTRO_CACHE_DIR": str(Path(tmp) / "cache"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        Path(env["ASTRO_CONFIG_DIR"]).mkdir()
        opened = f"duckdb.connect({str(path)!r}, read_only=True)"
        one_liner = f"import duckdb; print({opened}.sql({QUERY!r}).fetchall())"
        commands = {
            "duckdb one-liner": ([sys.executable, "-c", one_liner], env),
            "astro sql": ([*_astro(), "sql", QUERY, str(path)], env),
            "astro sql, rows as Arrow": ([*_astro(), "sql", ARROW_QUERY, str(path)], env),
            "one-liner + import pyarrow": ([sys.executable, "-c", "import pyarrow; " + one_liner], env),
        }
        if args.before:
            older = {**env, "PYTHONPATH": str(Path(args.before).resolve())}
            commands["astro sql, --before"] = (
                [sys.executable, "-m", "astro_tui.cli", "sql", QUERY, str(path)],
                older,
            )
        _settle(path)
        for argv, environ in commands.values():  # bytecode written, files in the page cache
            _timed(argv, environ)
        loads = [os.getloadavg()[0]]
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (argv, environ) in commands.items():
                wall, cpu = _timed(argv, environ)
                walls[name].append(wall)
                cpus[name].append(cpu)
            loads.append(os.getloadavg()[0])
    base_wall = statistics.median(walls["duckdb one-liner"])
    base_cpu = statistics.median(cpus["duckdb one-liner"])
    print(f"{args.runs} interleaved rounds, load average {min(loads):.1f}–{max(loads):.1f}")
    print(f"{'':28} {'wall (median)':>14} {'ratio':>6} {'cpu (median)':>13} {'ratio':>6}")
    for name in commands:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        ratios = f"{wall / base_wall:5.2f}× {cpu * 1000:10.0f} ms {cpu / base_cpu:5.2f}×"
        print(f"{name:28} {wall * 1000:11.0f} ms {ratios}")


if __name__ == "__main__":
    main()
