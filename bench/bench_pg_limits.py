"""PostgreSQL results under astro's limits (issue 21): how long `astro sql` ran and how much memory it
took for results far larger than the memory limit, measured from outside the process.

    uv run python bench/bench_pg_limits.py [--timeout 5] [--memory 4GB] [--runs 3]

Starts a private server (`tests/pg_server.py`). Each case runs the real CLI as a child process
(`astro sql … --timeout T`, the memory limit from a config file) and reads the child's peak
resident memory from the kernel (`wait4`'s rusage, so nothing inside astro measures itself), next
to `SELECT 1` run the same way: the figure is the peak above that baseline, and the wall time
above its wall time (the start-up both pay). Runs are interleaved with the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from astro_tui.data.memory_limit import memory_bytes
from tests.pg_server import running_server

WIDE = """
CREATE TABLE public.wide (id int, body text);
ALTER TABLE public.wide ALTER COLUMN body SET STORAGE EXTENDED;
INSERT INTO public.wide SELECT 1, repeat('x', 200000000);
"""
CASES = {
    "repeat('x', 1e8) × 10 rows (1 GB)": "SELECT repeat('x', 100000000) FROM generate_series(1, 10)",
    "repeat('x', 1e6) × 3,000 rows (3 GB)": "SELECT repeat('x', 1000000) AS x FROM generate_series(1, 3000)",
    "a stored 200 MB value, 2 MB on disk": "SELECT * FROM public.wide",
}


def run_cli(url: str, sql: str, timeout: float, config_dir: Path) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS in MiB, exit code and the last stderr line of one `astro sql`."""
    env = {**os.environ, "ASTRO_CONFIG_DIR": str(config_dir)}
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "astro_tui.cli", "sql", sql, url, "--timeout", str(timeout)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert child.stderr is not None
    err = child.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - started
    last = err.strip().splitlines()[-1] if err.strip() else ""
    return elapsed, usage.ru_maxrss / 1024, child.returncode, last


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
    with running_server() as server, tempfile.TemporaryDirectory() as tmp:
        server.psql(WIDE, user="owner")
        config_dir = Path(tmp)
        (config_dir / "config.toml").write_text(f'memory_limit = "{args.memory}"\n')
        url = server.url()
        for name, sql in CASES.items():
            if args.only and args.only not in name:
                continue
            walls, peaks, outcome = [], [], ""
            for _ in range(args.runs):
                base_wall, base_peak, _, _ = run_cli(url, "SELECT 1", args.timeout, config_dir)
                wall, peak, code, last = run_cli(url, sql, args.timeout, config_dir)
                walls.append(wall - base_wall)
                peaks.append(peak - base_peak)
                outcome = f"exit {code}: {last[:110]}"
            print(
                f"{name:40} +{statistics.median(walls):5.2f} s (max +{max(walls):.2f})  "
                f"peak +{statistics.median(peaks):6.0f} MiB (max +{max(peaks):.0f}, "
                f"{max(peaks) / limit_mib:.0%} of the limit)  {outcome}"
            )


if __name__ == "__main__":
    main()
