"""`astro mcp` beside `mcp-server-motherduck`: run_sql per-call latency over stdio, and the tool lists.

Both servers are started over stdio by the same client (the `mcp` SDK's), on the
same DuckDB file, and the calls are interleaved: each round runs every query on
every server, in a shuffled order, one call at a time. The figure per query is
the median wall time of `call_tool` as the client sees it (request written,
result parsed), and the ratio astro / the other server (≤ 1.0 means astro is
as fast). mcp-server-motherduck runs twice: as installed (a new DuckDB
connection per query, its default for read-only files) and with
`--no-ephemeral-connections` (one connection kept open, its fastest).

mcp-server-motherduck is not a project dependency: the script installs it into
bench/.cache/motherduck-env (uv venv + uv pip install) on first use. It pins an
older DuckDB, so the file is built with that DuckDB, which astro's reads too.

    uv run python bench/bench_mcp.py [--rounds 30] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

CACHE = Path(__file__).resolve().parent / ".cache"
MOTHERDUCK_VERSION = "1.1.*"
QUERIES = {
    "count": "SELECT count(*) AS n FROM orders",
    "group by": "SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY 1 ORDER BY 1",
    "500 rows": "SELECT * FROM orders ORDER BY id LIMIT 500",
}


def _motherduck() -> Path:
    env = CACHE / "motherduck-env"
    exe = env / "bin" / "mcp-server-motherduck"
    if not exe.exists():
        subprocess.run(["uv", "venv", "-q", "--python", "3.11", str(env)], check=True)
        subprocess.run(
            [
                "uv",
                "pip",
                "install",
                "-q",
                "--compile-bytecode",
                "--python",
                str(env / "bin" / "python"),
                f"mcp-server-motherduck=={MOTHERDUCK_VERSION}",
            ],
            check=True,
        )
    return exe


def _build(path: Path, rows: int, python: Path) -> None:
    """With the other server's (older) DuckDB, so both can open the file."""
    if path.exists():
        return
    script = f"""
import duckdb
con = duckdb.connect({str(path)!r})
con.execute('''CREATE TABLE orders AS SELECT range AS id,
    ['north', 'south', 'east', 'west', 'centre'][1 + range % 5] AS region,
    round(random() * 500, 2)::DECIMAL(10, 2) AS amount,
    DATE '2024-01-01' + (range % 730)::INTEGER AS placed_on
    FROM range({rows})''')
con.execute('CHECKPOINT')
con.close()
"""
    subprocess.run([str(python), "-c", script], check=True)


def _servers(db: Path, state: Path) -> dict[str, StdioServerParameters]:
    exe = _motherduck()
    env = {**os.environ, "ASTRO_STATE_DIR": str(state)}
    root = Path(__file__).resolve().parent.parent
    return {
        "astro": StdioServerParameters(
            command=sys.executable, args=["-m", "astro_tui.cli", "mcp", str(db)], env=env, cwd=str(root)
        ),
        "motherduck": StdioServerParameters(command=str(exe), args=["--db-path", str(db)]),
        "motherduck (persistent)": StdioServerParameters(
            command=str(exe), args=["--db-path", str(db), "--no-ephemeral-connections"]
        ),
    }


TOOL = {"astro": ("run_sql", "sql"), "motherduck": ("execute_query", "sql")}


def _tool(server: str) -> tuple[str, str]:
    return TOOL["astro" if server == "astro" else "motherduck"]


async def _run(rounds: int, db: Path, state: Path) -> None:
    from contextlib import AsyncExitStack

    servers = _servers(db, state)
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        for name, params in servers.items():
            clients[name] = await stack.enter_async_context(Client(params))
        print("tool lists (characters of JSON, as listed to the client):")
        for name, client in clients.items():
            listed = (await client.list_tools()).tools
            tools = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed]
            names = ", ".join(t["name"] for t in tools)
            print(f"  {name:<24} {len(tools)} tools  {len(json.dumps(tools)):>6,} chars  ({names})")
        times: dict[tuple[str, str], list[float]] = {}
        for _warm in range(3):
            for name, client in clients.items():
                tool, arg = _tool(name)
                for sql in QUERIES.values():
                    result = await client.call_tool(tool, {arg: sql})
                    assert not result.is_error, (name, result)
        order = list(clients)
        for _ in range(rounds):
            for label, sql in QUERIES.items():
                random.shuffle(order)
                for name in order:
                    tool, arg = _tool(name)
                    started = time.perf_counter()
                    await clients[name].call_tool(tool, {arg: sql})
                    times.setdefault((label, name), []).append((time.perf_counter() - started) * 1000)
        print(f"\nrun_sql per call over stdio, median of {rounds} interleaved rounds (ms):")
        others = [n for n in clients if n != "astro"]
        header = f"  {'query':<10} {'astro':>8}" + "".join(f" {n:>24}" for n in others)
        print(header + "".join(f"  {'astro / ' + n:>34}" for n in others))
        for label in QUERIES:
            astro = statistics.median(times[(label, "astro")])
            row = f"  {label:<10} {astro:>8.2f}"
            ratios = ""
            for name in others:
                other = statistics.median(times[(label, name)])
                row += f" {other:>24.2f}"
                ratios += f"  {astro / other:>33.2f}×"
            print(row + ratios)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    exe = _motherduck()
    db = CACHE / f"mcp-bench-{args.rows}.duckdb"
    _build(db, args.rows, exe.parent / "python")
    print(f"file: {db.name}, orders {args.rows:,} rows; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as state:
        anyio.run(_run, args.rounds, db, Path(state))


if __name__ == "__main__":
    main()
