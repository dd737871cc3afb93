"""astro beside Harlequin: fresh launches in a real terminal (tmux), interleaved.

For each database and run, each app is started in its own tmux session at 160×48 and
its screen is read every 20 ms: *first frame* is the first time anything is drawn,
*catalog on screen* the first time the catalog shows what it shows first once it is
read (astro: the first schema with its table count; Harlequin: the database node,
its schemas one keypress away). After that the app runs for one more second, its peak resident memory is read
(VmHWM), and it is killed.

Harlequin is not a project dependency: the script installs it into
bench/.cache/harlequin-env (uv venv + uv pip install harlequin) on first use.

    uv run python bench/bench_vs_harlequin.py [--runs 5] [--sizes small,5000,10000]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb

from bench.synthetic import synthetic_catalog_db

CACHE = Path(__file__).resolve().parent / ".cache"
ROOT = Path(__file__).resolve().parent.parent
HARLEQUIN_VERSION = "2.17.*"
POLL_S = 0.02
GIVE_UP_S = 120.0
SIZES = {"small": (3, 5), "5000": (5_000, 20), "10000": (10_000, 30)}


def _harlequin() -> Path:
    env = CACHE / "harlequin-env"
    exe = env / "bin" / "harlequin"
    if not exe.exists():
        subprocess.run(["uv", "venv", "-q", "--python", "3.11", str(env)], check=True)
        subprocess.run(
            [
                "uv",
                "pip",
                "install",
                "-q",
                "--compile-bytecode",  # as astro's own install does: no launch pays compilation
                "--python",
                str(env / "bin" / "python"),
                f"harlequin=={HARLEQUIN_VERSION}",
            ],
            check=True,
        )
    return exe


def _small(path: Path) -> Path:
    if not path.exists():
        con = duckdb.connect(str(path))
        con.execute("CREATE SCHEMA sales")
        for name in ("customers", "orders", "products"):
            con.execute(
                f"CREATE TABLE sales.{name} AS SELECT range AS id, 'x' || range AS label FROM range(1000)"
            )
        con.close()
    return path


def _database(size: str) -> Path:
    if size == "small":
        return _small(CACHE / "vs-harlequin-small.duckdb")
    tables, columns = SIZES[size]
    return synthetic_catalog_db(CACHE / f"catalog-{tables}x{columns}.duckdb", tables, columns)


def _markers(db: Path) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """What each app's catalog shows first: astro the first schema and its table count,
    Harlequin the database."""
    con = duckdb.connect(str(db), read_only=True)
    (schema,) = con.execute("SELECT min(schema_name) FROM duckdb_tables()").fetchone()
    con.close()
    return re.compile(rf"[▶▼] {re.escape(schema)}  \d"), re.compile(rf"[▶▼] {re.escape(db.stem)}\b")


def _capture(session: str) -> str:
    done = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True)
    return done.stdout


def _peak_rss(session: str) -> int:
    """The largest VmHWM among the pane's process and its children, in bytes."""
    pane = subprocess.run(
        ["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"], capture_output=True, text=True
    ).stdout.split()
    if not pane:
        return 0
    pids = [pane[0]]
    children = subprocess.run(["pgrep", "-P", pane[0]], capture_output=True, text=True).stdout.split()
    pids += children
    best = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        if match:
            best = max(best, int(match.group(1)) * 1024)
    return best


def _launch(command: list[str], marker: re.Pattern[str], env: dict[str, str]) -> tuple[float, float, int]:
    session = f"bench-{os.getpid()}-{time.monotonic_ns()}"
    started = time.perf_counter()
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "160",
            "-y",
            "48",
            "-e",
            f"HOME={env['HOME']}",
            *[f"-e{k}={v}" for k, v in env.items() if k != "HOME"],
            " ".join(command),
        ],
        check=True,
    )
    first = catalog = None
    try:
        while time.perf_counter() - started < GIVE_UP_S:
            screen = _capture(session)
            now = time.perf_counter() - started
            if first is None and screen.strip():
                first = now
            if marker.search(screen):
                catalog = now
                break
            time.sleep(POLL_S)
        time.sleep(1.0)
        rss = _peak_rss(session)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    if first is None or catalog is None:
        raise RuntimeError(f"{command[0]}: {marker.pattern!r} never appeared")
    return first, catalog, rss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="small,5000,10000")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("tmux is needed (apt-get install tmux)")
    harlequin = _harlequin()
    astro = ROOT / ".venv" / "bin" / "astro"
    home = Path(tempfile.mkdtemp(prefix="bench-home-"))
    env = {
        "HOME": str(home),
        "ASTRO_STATE_DIR": str(home / "astro-state"),
        "ASTRO_CONFIG_DIR": str(home / "cfg"),
        "TERM": "xterm-256color",
    }
    print(f"{args.runs} fresh launches per app and database, interleaved; medians")
    print(f"{'database':24} {'first frame':>22} {'catalog on screen':>26} {'ratio':>7} {'peak RSS':>22}")
    for size in args.sizes.split(","):
        db = _database(size)
        schema, node = _markers(db)
        runs: dict[str, list[tuple[float, float, int]]] = {"astro": [], "harlequin": []}
        for _ in range(args.runs):
            runs["astro"].append(_launch([str(astro), str(db)], schema, env))
            runs["harlequin"].append(_launch([str(harlequin), str(db)], node, env))

        def med(app: str, i: int, runs: dict[str, list[tuple[float, float, int]]] = runs) -> float:
            return statistics.median(r[i] for r in runs[app])

        tables, columns = SIZES[size]
        label = f"{tables:,} tables × {columns}"
        print(
            f"{label:24} {med('astro', 0):6.2f} s vs {med('harlequin', 0):5.2f} s"
            f"   {med('astro', 1):8.2f} s vs {med('harlequin', 1):5.2f} s"
            f" {med('astro', 1) / med('harlequin', 1):6.2f}×"
            f"   {med('astro', 2) / 2**20:6.0f} MB vs {med('harlequin', 2) / 2**20:4.0f} MB"
        )
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
