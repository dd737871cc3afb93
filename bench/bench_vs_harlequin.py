"""astro beside Harlequin: fresh launches in a real terminal (tmux), interleaved.

For each database and run, each app is started in its own tmux session at 160×48 and
its screen is read every 20 ms: *first frame* is the first time anything is drawn,
*catalog on screen* the first time the catalog shows what it shows first once it is
read (astro: the first schema with its table count; Harlequin: the database node,
its schemas one keypress away). astro shows an outline first (schemas and tables)
and reads the columns after it, saying "reading the columns…" meanwhile: *columns read*
is when that goes. Once that is done and its memory has stopped growing for a second,
the peak resident memory (VmHWM) of each of its processes is read, and it is killed.

astro runs twice per round: *first open* with an empty cache directory (the catalog
is read from the database), and *opened before*, with the catalog cache a previous
launch wrote (keyed on the file's identity, so the file is the same).

Harlequin is not a project dependency: the script installs it into
bench/.cache/harlequin-env (uv venv + uv pip install harlequin) on first use.

*Enter → rows* (`--query`): in each app, once its catalog is on screen and it has
settled, a 1,000,000-row query is typed and run (astro: `/sql …` and Enter, with
`--max-rows 1000000` so it keeps every row as Harlequin does; Harlequin: the editor
and ctrl+j, no limit); the time is from the key that runs it to the first row
on screen.

    uv run python bench/bench_vs_harlequin.py [--runs 5] [--sizes small,5000,10000] [--query]
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


def _peak_rss(session: str) -> tuple[int, int]:
    """(largest, sum of) VmHWM over the pane's process and all its descendants, in bytes.

    The sum over-counts a little (each process's peak, not their peak together); it is
    the honest figure for astro, whose database is open in its statement worker."""
    peaks = []
    for pid in _pids(session):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        if match:
            peaks.append(int(match.group(1)) * 1024)
    return max(peaks, default=0), sum(peaks)


def _pids(session: str) -> list[str]:
    """The pane's process and all its descendants."""
    pane = subprocess.run(
        ["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"], capture_output=True, text=True
    ).stdout.split()
    pids, todo = [], pane[:1]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo += subprocess.run(["pgrep", "-P", pid], capture_output=True, text=True).stdout.split()
    return pids


def _kill(session: str) -> None:
    """End the app and wait until every process of it is gone: a statement worker still
    holding the file would make the next launch's read-write open (Harlequin's) fail on its
    lock, and a dying process's memory is the next launch's CPU."""
    pids = _pids(session)
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    deadline = time.perf_counter() + 30
    while any(_running(pid) for pid in pids) and time.perf_counter() < deadline:
        time.sleep(POLL_S)


def _running(pid: str) -> bool:
    """Not gone and not a zombie (a zombie holds no memory and no file)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _settle(session: str, quiet_s: float = 1.0, give_up_s: float = 20.0) -> None:
    """Wait until the app's memory stops growing (astro's worker may still be opening the
    file when the tree is drawn), so the peaks below are the app's, not a snapshot."""
    started = time.perf_counter()
    last, steady_since = -1, time.perf_counter()
    while time.perf_counter() - started < give_up_s:
        now = _peak_rss(session)[1]
        if abs(now - last) > 2**20:
            last, steady_since = now, time.perf_counter()
        elif time.perf_counter() - steady_since >= quiet_s:
            return
        time.sleep(0.1)


Launch = tuple[float, float, int, int, float]
"""first frame (s), catalog on screen (s), largest process peak RSS, sum of peaks (bytes), and
astro's whole catalog (its columns read after the outline shown) on screen (s)."""


def _start(command: list[str], env: dict[str, str]) -> str:
    session = f"bench-{os.getpid()}-{time.monotonic_ns()}"
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
    return session


READING = "reading the columns"
"""On astro's screen (above the catalog tree) while the columns of an outline are read."""


def _launch(command: list[str], marker: re.Pattern[str], env: dict[str, str]) -> Launch:
    started = time.perf_counter()
    session = _start(command, env)
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
        whole = catalog
        while READING in _capture(session) and time.perf_counter() - started < GIVE_UP_S:
            time.sleep(POLL_S)
            whole = time.perf_counter() - started
        _settle(session)
        largest, total = _peak_rss(session)
    finally:
        _kill(session)
    if first is None or catalog is None:
        raise RuntimeError(f"{command[0]}: {marker.pattern!r} never appeared")
    return first, catalog, largest, total, whole


QUERY = "SELECT 'r' || (range + 1000003) AS label, range AS n, range * 0.5 AS half FROM range(1000000)"
FIRST_ROW = "r1000003"
"""On screen only once rows are: the SQL spells it `'r' || (range + 1000003)`."""


def _wait_for(session: str, pattern: str, what: str) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < GIVE_UP_S:
        if re.search(pattern, _capture(session)):
            return time.perf_counter()
        time.sleep(POLL_S / 4)
    raise RuntimeError(f"{what} never appeared")


def _enter_to_rows(
    command: list[str], ready: re.Pattern[str], type_keys: list[list[str]], run: str, env: dict[str, str]
) -> float:
    session = _start(command, env)
    try:
        _wait_for(session, ready.pattern, f"{command[0]}'s catalog")
        time.sleep(2.0)  # settled: warm-up work done, the statement worker open
        for keys in type_keys:
            subprocess.run(["tmux", "send-keys", "-t", session, *keys], check=True)
        time.sleep(0.5)
        pressed = time.perf_counter()
        subprocess.run(["tmux", "send-keys", "-t", session, run], check=True)
        return _wait_for(session, FIRST_ROW, f"{command[0]}'s first row") - pressed
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def _query_runs(astro: Path, harlequin: Path, runs: int, env: dict[str, str]) -> None:
    db = _database("small")
    schema, node = _markers(db)
    times: dict[str, list[float]] = {"astro": [], "Harlequin": []}
    for _ in range(runs):
        times["astro"].append(
            _enter_to_rows(
                [str(astro), "--max-rows", "1000000", str(db)],
                schema,
                [["-l", f"/sql {QUERY}"]],
                "Enter",
                env,
            )
        )
        times["Harlequin"].append(
            _enter_to_rows([str(harlequin), str(db)], node, [["-l", QUERY]], "C-j", env)
        )
    ours, theirs = (statistics.median(times[k]) for k in ("astro", "Harlequin"))
    print(
        f"1,000,000 rows, key → first row on screen: astro {ours:.2f} s vs Harlequin {theirs:.2f} s"
        f" ({ours / theirs:.2f}×; astro {min(times['astro']):.2f}–{max(times['astro']):.2f} s,"
        f" Harlequin {min(times['Harlequin']):.2f}–{max(times['Harlequin']):.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="small,5000,10000")
    parser.add_argument("--query", action="store_true", help="measure Enter → rows instead of launches")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("tmux is needed (apt-get install tmux)")
    harlequin = _harlequin()
    astro = ROOT / ".venv" / "bin" / "astro"
    # tmux's server exits with its last session, and a launch racing that exit fails.
    keepalive = f"bench-keepalive-{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", keepalive, "sleep 86400"], check=True)
    try:
        _measure(args, astro, harlequin)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", keepalive], capture_output=True)


def _measure(args: argparse.Namespace, astro: Path, harlequin: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="bench-home-"))
    env = {
        "HOME": str(home),
        "ASTRO_STATE_DIR": str(home / "astro-state"),
        "ASTRO_CONFIG_DIR": str(home / "cfg"),
        "TERM": "xterm-256color",
    }
    if args.query:
        _query_runs(astro, harlequin, args.runs, env)
        shutil.rmtree(home, ignore_errors=True)
        return
    print(f"{args.runs} fresh launches per app and database, interleaved; medians")
    print(
        f"{'database':22} {'app':22} {'first frame':>11} {'catalog':>8} {'ratio':>6}"
        f" {'largest process':>16} {'all processes':>14} {'columns read':>13}"
    )
    for size in args.sizes.split(","):
        db = _database(size)
        schema, node = _markers(db)
        warm = {**env, "ASTRO_CACHE_DIR": str(home / f"cache-{size}")}
        _launch([str(astro), str(db)], schema, warm)  # writes the catalog cache
        runs: dict[str, list[Launch]] = {"astro, first open": [], "astro, opened before": [], "Harlequin": []}
        for n in range(args.runs):
            cold = {**env, "ASTRO_CACHE_DIR": str(home / f"cold-{size}-{n}")}
            runs["astro, first open"].append(_launch([str(astro), str(db)], schema, cold))
            runs["astro, opened before"].append(_launch([str(astro), str(db)], schema, warm))
            runs["Harlequin"].append(_launch([str(harlequin), str(db)], node, env))
        tables, columns = SIZES[size]
        label = f"{tables:,} tables × {columns}"
        theirs = statistics.median(r[1] for r in runs["Harlequin"])
        for app, launches in runs.items():
            medians = (statistics.median(r[i] for r in launches) for i in range(5))
            first, catalog, largest, total, whole = medians
            print(
                f"{label:22} {app:22} {first:9.2f} s {catalog:6.2f} s {catalog / theirs:5.2f}×"
                f" {largest / 2**20:13.0f} MB {total / 2**20:11.0f} MB"
                + (f" {whole:11.2f} s" if app.startswith("astro") else "")
            )
            label = ""
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
